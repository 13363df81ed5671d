/* Interfaces but no ICorProfilerCallback: not a profiler header. */
#include "rpc.h"
#include "rpcndr.h"
#include "unknwn.h"

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("E5E5E5E5-0000-4000-8000-000000000003")
    ICheckOnly : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE Ping( void) = 0;
    };

#endif
