/* A future corprof.h, written for corprof's tests (not the runtime's file): it includes the real
 * header (the next corprof.h on the search path, runtime-info15: Info16 extends its Info15) and declares ICorProfilerCallback12,
 * ICorProfilerCallback13 and ICorProfilerInfo16 in the shape MIDL gives corprof.h: forward
 * declarations, IIDs, a C++ form with MIDL parameter comments and SAL, and a C vtable form. */
#include_next <corprof.h>

#ifndef __corprof_future_h__
#define __corprof_future_h__

/* A pointer-sized opaque handle ID of this future header (.NET 8 has `void **ObjectHandleID`). */
typedef void *FutureHandleID;

#ifndef __ICorProfilerCallback12_FWD_DEFINED__
#define __ICorProfilerCallback12_FWD_DEFINED__
typedef interface ICorProfilerCallback12 ICorProfilerCallback12;
#endif

#ifndef __ICorProfilerCallback13_FWD_DEFINED__
#define __ICorProfilerCallback13_FWD_DEFINED__
typedef interface ICorProfilerCallback13 ICorProfilerCallback13;
#endif

#ifndef __ICorProfilerInfo16_FWD_DEFINED__
#define __ICorProfilerInfo16_FWD_DEFINED__
typedef interface ICorProfilerInfo16 ICorProfilerInfo16;
#endif

#ifdef __cplusplus
extern "C"{
#endif

/* interface ICorProfilerCallback12 */
/* [local][unique][uuid][object] */

EXTERN_C const IID IID_ICorProfilerCallback12;

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("C0FFEE12-0000-4C12-9A12-000000000012")
    ICorProfilerCallback12 : public ICorProfilerCallback11
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE ThreadRenamed(
            /* [in] */ ThreadID threadId,
            /* [in] */ ULONG cchName,
            /* [annotation][in] */
            _In_reads_(cchName)  WCHAR name[  ]) = 0;

    };

#else   /* C style interface */

    /* Shortened C form: the inherited slots are those of ICorProfilerCallback11Vtbl. */
    typedef struct ICorProfilerCallback12Vtbl
    {
        ICorProfilerCallback11Vtbl base;
        HRESULT ( STDMETHODCALLTYPE *ThreadRenamed )(
            ICorProfilerCallback12 * This,
            /* [in] */ ThreadID threadId,
            /* [in] */ ULONG cchName,
            /* [annotation][in] */
            _In_reads_(cchName)  WCHAR name[  ]);
    } ICorProfilerCallback12Vtbl;

#endif

/* interface ICorProfilerCallback13 */
/* [local][unique][uuid][object] */

EXTERN_C const IID IID_ICorProfilerCallback13;

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("C0FFEE13-0000-4C13-9A13-000000000013")
    ICorProfilerCallback13 : public ICorProfilerCallback12
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE ObjectPinned(
            /* [in] */ ObjectID objectId,
            /* [out] */ BOOL *pbKeepPinned) = 0;

        virtual HRESULT STDMETHODCALLTYPE FunctionsBatched(
            /* [in] */ ULONG cFunctionIds,
            /* [size_is][in] */ FunctionID functionIds[  ]) = 0;

    };

#else   /* C style interface */

    typedef struct ICorProfilerCallback13Vtbl
    {
        ICorProfilerCallback12Vtbl base;
        HRESULT ( STDMETHODCALLTYPE *ObjectPinned )(
            ICorProfilerCallback13 * This,
            /* [in] */ ObjectID objectId,
            /* [out] */ BOOL *pbKeepPinned);
        HRESULT ( STDMETHODCALLTYPE *FunctionsBatched )(
            ICorProfilerCallback13 * This,
            /* [in] */ ULONG cFunctionIds,
            /* [size_is][in] */ FunctionID functionIds[  ]);
    } ICorProfilerCallback13Vtbl;

#endif

/* interface ICorProfilerInfo16 */
/* [local][unique][uuid][object] */

EXTERN_C const IID IID_ICorProfilerInfo16;

#if defined(__cplusplus) && !defined(CINTERFACE)

    MIDL_INTERFACE("C0FFEE16-0000-4C16-9A16-000000000016")
    ICorProfilerInfo16 : public ICorProfilerInfo15
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE GetFunctionTier(
            /* [in] */ FunctionID functionId,
            /* [out] */ ULONG *pTier,
            /* [in] */ ULONG cchName,
            /* [out] */ ULONG *pcchName,
            /* [annotation][out] */
            _Out_writes_to_(cchName, *pcchName)  WCHAR szName[  ]) = 0;

    };

#else   /* C style interface */

    typedef struct ICorProfilerInfo16Vtbl
    {
        ICorProfilerInfo15Vtbl base;
        HRESULT ( STDMETHODCALLTYPE *GetFunctionTier )(
            ICorProfilerInfo16 * This,
            /* [in] */ FunctionID functionId,
            /* [out] */ ULONG *pTier,
            /* [in] */ ULONG cchName,
            /* [out] */ ULONG *pcchName,
            /* [annotation][out] */
            _Out_writes_to_(cchName, *pcchName)  WCHAR szName[  ]);
    } ICorProfilerInfo16Vtbl;

#endif

#ifdef __cplusplus
}
#endif

#endif /* __corprof_future_h__ */
