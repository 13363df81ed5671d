/* A small profiler header in corprof.h's MIDL shape, written for the check-vs-build test (not
 * from the runtime). The other cases include it and change one thing. */
#include "rpc.h"
#include "rpcndr.h"
#include "unknwn.h"

typedef UINT_PTR ClassID;
typedef UINT_PTR FunctionID;

typedef /* [public] */
enum __MIDL___MIDL_itf_check_0001
    {
        CHK_KIND_A = 0,
        CHK_KIND_B = 0x1
    }   CHK_KIND;

#ifdef __cplusplus
extern "C"{
#endif

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("E5E5E5E5-0000-4000-8000-000000000001")
    ICorProfilerCallback : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE Seen(
            /* [in] */ const ULONG *pCount,
            /* [in] */ CHK_KIND kind,
            /* [in] */ ULONG cValues,
            /* [size_is][in] */ ULONG values[  ]) = 0;
    };

    MIDL_INTERFACE("E5E5E5E5-0000-4000-8000-000000000002")
    ICheckInfo : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE GetFunctionInfo(
            /* [in] */ FunctionID functionId,
            /* [out] */ ClassID *pClassId) = 0;
    };

#endif

#ifdef __cplusplus
}
#endif
