/* A header in corprof.h's MIDL shape whose counted arrays say `[size_is]` without the count,
 * as MIDL's C output does; corprof.idl beside it has the count. Written for the check-vs-build
 * test (not from the runtime). */
#include "rpc.h"
#include "rpcndr.h"
#include "unknwn.h"

#ifdef __cplusplus
extern "C"{
#endif

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("E5E5E5E5-0000-4000-8000-000000000021")
    ICorProfilerCallback : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE EventDelivered(
            /* [in] */ ULONG cbMetadataBlob,
            /* [size_is][in] */ const BYTE *metadataBlob,
            /* [in] */ ULONG cbEventData,
            /* [size_is][in] */ const BYTE *eventData) = 0;
    };

#endif

#ifdef __cplusplus
}
#endif
