/* A header in corprof.h's MIDL shape with an ID next to a counted array, written for the
 * check-vs-build test (not from the runtime): `ClassID` is a `UINT_PTR`, an integer to C, but an
 * ID cannot count elements. */
#include "rpc.h"
#include "rpcndr.h"
#include "unknwn.h"

typedef UINT_PTR ObjectID;
typedef UINT_PTR ClassID;

#ifdef __cplusplus
extern "C"{
#endif

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("E5E5E5E5-0000-4000-8000-000000000011")
    ICorProfilerCallback : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE ObjectReferences(
            /* [in] */ ObjectID objectId,
            /* [in] */ ClassID classId,
            /* [in] */ ULONG cObjectRefs,
            /* [size_is][in] */ ObjectID objectRefIds[  ]) = 0;
    };

#endif

#ifdef __cplusplus
}
#endif
