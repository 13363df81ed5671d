/* The ok case's header plus an interface whose base has no IID. */
#include "../ok/corprof.h"

struct ICheckNoIid : public IUnknown
{
    virtual HRESULT STDMETHODCALLTYPE Get( /* [in] */ ULONG value) = 0;
};

MIDL_INTERFACE("E5E5E5E5-0000-4000-8000-000000000004")
ICheckDerived : public ICheckNoIid
{
    virtual HRESULT STDMETHODCALLTYPE More( /* [in] */ ULONG value) = 0;
};
