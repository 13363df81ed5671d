/* corprof prelude stand-in for poppack.h. */
#pragma pack(pop)
