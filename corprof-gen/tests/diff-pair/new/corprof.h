/* The newer of a small header pair for `corprof-gen diff` (tests/cli.rs): one change of each
 * kind the diff reports. Written for the tests; not from the runtime. */
#include "rpc.h"
#include "rpcndr.h"
#include "unknwn.h"

typedef UINT_PTR ObjectID;

typedef /* [public] */
enum __MIDL___MIDL_itf_fix_0000_0000_0001
    {
        FIX_MONITOR_NONE = 0,
        FIX_MONITOR_GC = 0x1,
        FIX_MONITOR_JIT = 0x2,
        FIX_MONITOR_NEW = 0x8,
        FIX_MONITOR_IMMUTABLE = FIX_MONITOR_GC
    } FIX_MONITOR;

typedef enum FixKind
    {
        FixKindOne = 1,
        FixKindTwo = 3
    } FixKind;

typedef struct FIX_RANGE
    {
    UINT_PTR start;
    UINT_PTR length;
    ULONG flags;
    } FIX_RANGE;

typedef struct FIX_RETYPED
    {
    UINT64 a;
    } FIX_RETYPED;

typedef struct FIX_FILTER_DATA
    {
    UINT64 Ptr;
    UINT32 Size;
    UINT32 Type;
    } FIX_FILTER_DATA;

typedef void FixProviderCallback(
    const UINT8 *source_id,
    FIX_FILTER_DATA *filter_data,
    void *callback_data);

typedef BOOL ( *FixObjectCallback )(
    ObjectID object,
    void *callbackState);

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("A1A1A1A1-0000-4000-8000-0000000000D1")
    IFixInfo : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE GetValue(
            /* [out] */ ULONG64 *pValue) = 0;

        virtual HRESULT STDMETHODCALLTYPE CreateProvider(
            /* [in] */ FixProviderCallback *pCallback) = 0;
    };

    MIDL_INTERFACE("A1A1A1A1-0000-4000-8000-0000000000D2")
    IFixInfo2 : public IFixInfo
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE EnumerateObjects(
            /* [in] */ FixObjectCallback callback,
            /* [in] */ void *callbackState) = 0;
    };

#endif
