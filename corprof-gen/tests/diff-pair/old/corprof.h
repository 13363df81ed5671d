/* The older of a small header pair for `corprof-gen diff` (tests/cli.rs): one change of each
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
        FIX_MONITOR_OLD = 0x4,
        FIX_MONITOR_IMMUTABLE = ( FIX_MONITOR_GC | FIX_MONITOR_JIT )
    } FIX_MONITOR;

typedef enum FixKind
    {
        FixKindOne = 1,
        FixKindTwo = 2
    } FixKind;

typedef struct FIX_RANGE
    {
    UINT_PTR start;
    UINT_PTR length;
    } FIX_RANGE;

typedef struct FIX_GONE
    {
    ULONG a;
    } FIX_GONE;

typedef struct FIX_RETYPED
    {
    ULONG a;
    } FIX_RETYPED;

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("A1A1A1A1-0000-4000-8000-0000000000D1")
    IFixInfo : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE GetValue(
            /* [out] */ ULONG *pValue) = 0;

        virtual HRESULT STDMETHODCALLTYPE Retired( void) = 0;
    };

    MIDL_INTERFACE("A1A1A1A1-0000-4000-8000-0000000000D9")
    IFixOld : public IUnknown
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE Nothing( void) = 0;
    };

#endif
