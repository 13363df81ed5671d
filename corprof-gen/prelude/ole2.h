/* corprof prelude stand-in: everything lives in corprof_prelude.h. */
#include "unknwn.h"
