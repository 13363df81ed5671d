/* corprof prelude stand-in for pshpack1.h. */
#pragma pack(push, 1)
