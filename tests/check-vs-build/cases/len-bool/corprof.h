/* A header in corprof.h's MIDL shape with a BOOL next to a counted array, written for the
 * check-vs-build test (not from the runtime): `BOOL` is an `int` to C, but it counts nothing (the
 * attack's `rgILMapEntries: { dir: in, len: fStartJit }`). */
#include "rpc.h"
#include "rpcndr.h"
#include "unknwn.h"

typedef UINT_PTR FunctionID;

#ifdef __cplusplus
extern "C"{
#endif

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("E5E5E5E5-0000-4000-8000-000000000021")
    ICorProfilerCallback : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE JITCompilationFinished(
            /* [in] */ FunctionID functionId,
            /* [in] */ BOOL fIsSafeToBlock,
            /* [in] */ ULONG cbCode,
            /* [size_is][in] */ BYTE pbCode[  ]) = 0;
    };

#endif

#ifdef __cplusplus
}
#endif
