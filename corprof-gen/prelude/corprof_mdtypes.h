/* corprof prelude: the metadata vocabulary corprof.h keeps under `#if 0` because it normally
 * comes from cor.h. Included by the umbrella header only when cor.h is not parsed. */
#ifndef CORPROF_MDTYPES_H
#define CORPROF_MDTYPES_H
typedef LONG32 mdToken;
typedef mdToken mdModule;
typedef mdToken mdTypeDef;
typedef mdToken mdMethodDef;
typedef mdToken mdFieldDef;
typedef ULONG CorElementType;
typedef struct {
    DWORD dwOSPlatformId;
    DWORD dwOSMajorVersion;
    DWORD dwOSMinorVersion;
} OSINFO;
typedef struct {
    USHORT usMajorVersion;
    USHORT usMinorVersion;
    USHORT usBuildNumber;
    USHORT usRevisionNumber;
    LPWSTR szLocale;
    ULONG cbLocale;
    DWORD *rProcessor;
    ULONG ulProcessor;
    OSINFO *rOS;
    ULONG ulOS;
} ASSEMBLYMETADATA;
#endif
