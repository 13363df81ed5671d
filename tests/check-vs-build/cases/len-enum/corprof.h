/* The ok case's header; only the annotations differ. */
#include "../ok/corprof.h"
