/* com.h: the COM plumbing the C reference profilers share (bench/reference/reference.c,
 * bench/reference-elt/elt.c): HRESULTs, the IIDs a profiler answers to, and a static class
 * factory with DllGetClassObject.
 *
 * The including file defines, after including this:
 *   static const CLSID PROFILER_CLSID = {...};          the CLSID DllGetClassObject answers to
 *   static HRESULT create_profiler(REFIID riid, void **ppv);
 *       a new (or the static) profiler object, as riid, for IClassFactory::CreateInstance
 *       (ppv is not null and already nulled; aggregation is refused here). */

#ifndef CORPROF_BENCH_COM_H
#define CORPROF_BENCH_COM_H

#include <stddef.h>
#include <string.h>

#include "corprof.h"

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))

#ifndef S_OK
#define S_OK ((HRESULT)0)
#endif
#ifndef FAILED
#define FAILED(hr) (((HRESULT)(hr)) < 0)
#endif
#define E_NOINTERFACE ((HRESULT)0x80004002)
#define E_POINTER ((HRESULT)0x80004003)
#define E_FAIL ((HRESULT)0x80004005)
#define E_INVALIDARG ((HRESULT)0x80070057)
#define CLASS_E_NOAGGREGATION ((HRESULT)0x80040110)
#define CLASS_E_CLASSNOTAVAILABLE ((HRESULT)0x80040111)

static const CLSID PROFILER_CLSID;
static HRESULT create_profiler(REFIID riid, void **ppv);

static const IID IID_IUnknown_ = {0x00000000, 0x0000, 0x0000, {0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}};
static const IID IID_IClassFactory_ = {0x00000001, 0x0000, 0x0000, {0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}};

/* ICorProfilerCallback, then 2 to 11. */
static const IID CALLBACK_IIDS[] = {
    {0x176FBED1, 0xA55C, 0x4796, {0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7}},
    {0x8A8CC829, 0xCCF2, 0x49FE, {0xBB, 0xAE, 0x0F, 0x02, 0x22, 0x28, 0x07, 0x1A}},
    {0x4FD2ED52, 0x7731, 0x4B8D, {0x94, 0x69, 0x03, 0xD2, 0xCC, 0x30, 0x86, 0xC5}},
    {0x7B63B2E3, 0x107D, 0x4D48, {0xB2, 0xF6, 0xF6, 0x1E, 0x22, 0x94, 0x70, 0xD2}},
    {0x8DFBA405, 0x8C9F, 0x45F8, {0xBF, 0xFA, 0x83, 0xB1, 0x4C, 0xEF, 0x78, 0xB5}},
    {0xFC13DF4B, 0x4448, 0x4F4F, {0x95, 0x0C, 0xBA, 0x8D, 0x19, 0xD0, 0x0C, 0x36}},
    {0xF76A2DBA, 0x1D52, 0x4539, {0x86, 0x6C, 0x2A, 0xA5, 0x18, 0xF9, 0xEF, 0xC3}},
    {0x5BED9B15, 0xC079, 0x4D47, {0xBF, 0xE2, 0x21, 0x5A, 0x14, 0x0C, 0x07, 0xE0}},
    {0x27583EC3, 0xC8F5, 0x482F, {0x80, 0x52, 0x19, 0x4B, 0x8C, 0xE4, 0x70, 0x5A}},
    {0xCEC5B60E, 0xC69C, 0x495F, {0x87, 0xF6, 0x84, 0xD2, 0x8E, 0xE1, 0x6F, 0xFB}},
    {0x42350846, 0xAAED, 0x47F7, {0xB1, 0x28, 0xFD, 0x0C, 0x98, 0x88, 0x1C, 0xDE}},
};

static int guid_eq(const GUID *a, const GUID *b)
{
    return memcmp(a, b, sizeof(GUID)) == 0;
}

/* Whether a profiler object answers QueryInterface for riid: IUnknown or a callback interface.
 * Null riid and ppv are the caller's to refuse. */
static int is_profiler_iid(REFIID riid)
{
    if (guid_eq(riid, &IID_IUnknown_))
        return 1;
    for (size_t i = 0; i < sizeof CALLBACK_IIDS / sizeof CALLBACK_IIDS[0]; i++)
        if (guid_eq(riid, &CALLBACK_IIDS[i]))
            return 1;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The class factory (a static object, as usual in C) and DllGetClassObject */

typedef struct IClassFactory IClassFactory;
typedef struct IClassFactoryVtbl {
    HRESULT(STDMETHODCALLTYPE *QueryInterface)(IClassFactory *This, REFIID riid, void **ppv);
    ULONG(STDMETHODCALLTYPE *AddRef)(IClassFactory *This);
    ULONG(STDMETHODCALLTYPE *Release)(IClassFactory *This);
    HRESULT(STDMETHODCALLTYPE *CreateInstance)(IClassFactory *This, IUnknown *outer, REFIID riid, void **ppv);
    HRESULT(STDMETHODCALLTYPE *LockServer)(IClassFactory *This, BOOL lock);
} IClassFactoryVtbl;
struct IClassFactory {
    const IClassFactoryVtbl *lpVtbl;
};

static ULONG STDMETHODCALLTYPE factory_add_ref(IClassFactory *This)
{
    (void)This;
    return 1;
}

static ULONG STDMETHODCALLTYPE factory_release(IClassFactory *This)
{
    (void)This;
    return 1;
}

static HRESULT STDMETHODCALLTYPE factory_query_interface(IClassFactory *This, REFIID riid, void **ppv)
{
    if (ppv == NULL)
        return E_POINTER;
    *ppv = NULL;
    if (riid == NULL)
        return E_INVALIDARG;
    if (!guid_eq(riid, &IID_IUnknown_) && !guid_eq(riid, &IID_IClassFactory_))
        return E_NOINTERFACE;
    *ppv = This;
    return S_OK;
}

static HRESULT STDMETHODCALLTYPE factory_create_instance(IClassFactory *This, IUnknown *outer, REFIID riid,
                                                         void **ppv)
{
    (void)This;
    if (ppv == NULL)
        return E_POINTER;
    *ppv = NULL;
    if (outer != NULL)
        return CLASS_E_NOAGGREGATION;
    return create_profiler(riid, ppv);
}

static HRESULT STDMETHODCALLTYPE factory_lock_server(IClassFactory *This, BOOL lock)
{
    (void)This;
    (void)lock;
    return S_OK;
}

static const IClassFactoryVtbl FACTORY_VTBL = {
    .QueryInterface = factory_query_interface,
    .AddRef = factory_add_ref,
    .Release = factory_release,
    .CreateInstance = factory_create_instance,
    .LockServer = factory_lock_server,
};
static IClassFactory FACTORY = {&FACTORY_VTBL};

EXPORT HRESULT STDAPICALLTYPE DllGetClassObject(REFCLSID rclsid, REFIID riid, void **ppv)
{
    if (ppv == NULL || rclsid == NULL)
        return E_POINTER;
    *ppv = NULL;
    if (!guid_eq(rclsid, &PROFILER_CLSID))
        return CLASS_E_CLASSNOTAVAILABLE;
    return factory_query_interface(&FACTORY, riid, ppv);
}

#endif
