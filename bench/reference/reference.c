/* reference.c: a CoreCLR profiler in plain C, the yardstick of corprof's benchmarks
 * (scripts/bench, BENCHMARKS.md) and of its reliability tests (tests/runtime/reliability.rs).
 *
 * It does exactly what the Rust examples/callback-counter does, written the way a C programmer
 * would: one COM object implementing ICorProfilerCallback 1-11 through one static vtable, an
 * atomic reference count, a class factory and DllGetClassObject. Every callback does one
 * relaxed atomic increment of its own counter and returns S_OK; Initialize also sets the event
 * mask (CORPROF_EVENT_MASK, decimal or 0x hex; by default the counter's DEFAULT_MASK) and
 * Shutdown writes `<CallbackName> <count>` for every callback that fired, in vtable order, to
 * the file named by CORPROF_COUNTS_OUT (else stderr).
 *
 * CLSID: {E3A1C6B2-4D7F-4A58-9B2C-5F0E8D7A6C31}. Built by bench/reference/build.sh against the
 * runtime's own corprof.h, compiled in C mode through corprof-gen/prelude. */

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "com.h"

static const CLSID PROFILER_CLSID = {0xE3A1C6B2, 0x4D7F, 0x4A58, {0x9B, 0x2C, 0x5F, 0x0E, 0x8D, 0x7A, 0x6C, 0x31}};
static const IID IID_ICorProfilerInfo_ = {0x28B5557D, 0x3F3F, 0x48B4, {0x90, 0xB2, 0x5F, 0x9E, 0xEA, 0x2F, 0x6C, 0x48}};

/* ------------------------------------------------------------------------------------------ */
/* The callbacks, in vtable order, with their parameters as corprof.h declares them (after the
 * `This` pointer). X: counts and returns S_OK. SPECIAL: counts, then does a little more
 * (Initialize, Shutdown), defined by hand below. */

#define CALLBACKS(X, SPECIAL)                                                                    \
    /* ICorProfilerCallback */                                                                   \
    SPECIAL(Initialize, IUnknown *pICorProfilerInfoUnk)                                          \
    SPECIAL(Shutdown)                                                                            \
    X(AppDomainCreationStarted, AppDomainID appDomainId)                                         \
    X(AppDomainCreationFinished, AppDomainID appDomainId, HRESULT hrStatus)                      \
    X(AppDomainShutdownStarted, AppDomainID appDomainId)                                         \
    X(AppDomainShutdownFinished, AppDomainID appDomainId, HRESULT hrStatus)                      \
    X(AssemblyLoadStarted, AssemblyID assemblyId)                                                \
    X(AssemblyLoadFinished, AssemblyID assemblyId, HRESULT hrStatus)                             \
    X(AssemblyUnloadStarted, AssemblyID assemblyId)                                              \
    X(AssemblyUnloadFinished, AssemblyID assemblyId, HRESULT hrStatus)                           \
    X(ModuleLoadStarted, ModuleID moduleId)                                                      \
    X(ModuleLoadFinished, ModuleID moduleId, HRESULT hrStatus)                                   \
    X(ModuleUnloadStarted, ModuleID moduleId)                                                    \
    X(ModuleUnloadFinished, ModuleID moduleId, HRESULT hrStatus)                                 \
    X(ModuleAttachedToAssembly, ModuleID moduleId, AssemblyID AssemblyId)                        \
    X(ClassLoadStarted, ClassID classId)                                                         \
    X(ClassLoadFinished, ClassID classId, HRESULT hrStatus)                                      \
    X(ClassUnloadStarted, ClassID classId)                                                       \
    X(ClassUnloadFinished, ClassID classId, HRESULT hrStatus)                                    \
    X(FunctionUnloadStarted, FunctionID functionId)                                              \
    X(JITCompilationStarted, FunctionID functionId, BOOL fIsSafeToBlock)                         \
    X(JITCompilationFinished, FunctionID functionId, HRESULT hrStatus, BOOL fIsSafeToBlock)      \
    X(JITCachedFunctionSearchStarted, FunctionID functionId, BOOL *pbUseCachedFunction)          \
    X(JITCachedFunctionSearchFinished, FunctionID functionId, COR_PRF_JIT_CACHE result)          \
    X(JITFunctionPitched, FunctionID functionId)                                                 \
    X(JITInlining, FunctionID callerId, FunctionID calleeId, BOOL *pfShouldInline)               \
    X(ThreadCreated, ThreadID threadId)                                                          \
    X(ThreadDestroyed, ThreadID threadId)                                                        \
    X(ThreadAssignedToOSThread, ThreadID managedThreadId, DWORD osThreadId)                      \
    X(RemotingClientInvocationStarted)                                                           \
    X(RemotingClientSendingMessage, GUID *pCookie, BOOL fIsAsync)                                \
    X(RemotingClientReceivingReply, GUID *pCookie, BOOL fIsAsync)                                \
    X(RemotingClientInvocationFinished)                                                          \
    X(RemotingServerReceivingMessage, GUID *pCookie, BOOL fIsAsync)                              \
    X(RemotingServerInvocationStarted)                                                           \
    X(RemotingServerInvocationReturned)                                                          \
    X(RemotingServerSendingReply, GUID *pCookie, BOOL fIsAsync)                                  \
    X(UnmanagedToManagedTransition, FunctionID functionId, COR_PRF_TRANSITION_REASON reason)     \
    X(ManagedToUnmanagedTransition, FunctionID functionId, COR_PRF_TRANSITION_REASON reason)     \
    X(RuntimeSuspendStarted, COR_PRF_SUSPEND_REASON suspendReason)                               \
    X(RuntimeSuspendFinished)                                                                    \
    X(RuntimeSuspendAborted)                                                                     \
    X(RuntimeResumeStarted)                                                                      \
    X(RuntimeResumeFinished)                                                                     \
    X(RuntimeThreadSuspended, ThreadID threadId)                                                 \
    X(RuntimeThreadResumed, ThreadID threadId)                                                   \
    X(MovedReferences, ULONG cMovedObjectIDRanges, ObjectID oldObjectIDRangeStart[],             \
       ObjectID newObjectIDRangeStart[], ULONG cObjectIDRangeLength[])                           \
    X(ObjectAllocated, ObjectID objectId, ClassID classId)                                       \
    X(ObjectsAllocatedByClass, ULONG cClassCount, ClassID classIds[], ULONG cObjects[])          \
    X(ObjectReferences, ObjectID objectId, ClassID classId, ULONG cObjectRefs,                   \
       ObjectID objectRefIds[])                                                                  \
    X(RootReferences, ULONG cRootRefs, ObjectID rootRefIds[])                                    \
    X(ExceptionThrown, ObjectID thrownObjectId)                                                  \
    X(ExceptionSearchFunctionEnter, FunctionID functionId)                                       \
    X(ExceptionSearchFunctionLeave)                                                              \
    X(ExceptionSearchFilterEnter, FunctionID functionId)                                         \
    X(ExceptionSearchFilterLeave)                                                                \
    X(ExceptionSearchCatcherFound, FunctionID functionId)                                        \
    X(ExceptionOSHandlerEnter, UINT_PTR reserved)                                                \
    X(ExceptionOSHandlerLeave, UINT_PTR reserved)                                                \
    X(ExceptionUnwindFunctionEnter, FunctionID functionId)                                       \
    X(ExceptionUnwindFunctionLeave)                                                              \
    X(ExceptionUnwindFinallyEnter, FunctionID functionId)                                        \
    X(ExceptionUnwindFinallyLeave)                                                               \
    X(ExceptionCatcherEnter, FunctionID functionId, ObjectID objectId)                           \
    X(ExceptionCatcherLeave)                                                                     \
    X(COMClassicVTableCreated, ClassID wrappedClassId, REFGUID implementedIID, void *pVTable,    \
       ULONG cSlots)                                                                             \
    X(COMClassicVTableDestroyed, ClassID wrappedClassId, REFGUID implementedIID, void *pVTable)  \
    X(ExceptionCLRCatcherFound)                                                                  \
    X(ExceptionCLRCatcherExecute)                                                                \
    /* ICorProfilerCallback2 */                                                                  \
    X(ThreadNameChanged, ThreadID threadId, ULONG cchName, WCHAR name[])                         \
    X(GarbageCollectionStarted, int cGenerations, BOOL generationCollected[],                    \
       COR_PRF_GC_REASON reason)                                                                 \
    X(SurvivingReferences, ULONG cSurvivingObjectIDRanges, ObjectID objectIDRangeStart[],        \
       ULONG cObjectIDRangeLength[])                                                             \
    X(GarbageCollectionFinished)                                                                 \
    X(FinalizeableObjectQueued, DWORD finalizerFlags, ObjectID objectID)                         \
    X(RootReferences2, ULONG cRootRefs, ObjectID rootRefIds[],                                   \
       COR_PRF_GC_ROOT_KIND rootKinds[], COR_PRF_GC_ROOT_FLAGS rootFlags[], UINT_PTR rootIds[])  \
    X(HandleCreated, GCHandleID handleId, ObjectID initialObjectId)                              \
    X(HandleDestroyed, GCHandleID handleId)                                                      \
    /* ICorProfilerCallback3 */                                                                  \
    X(InitializeForAttach, IUnknown *pCorProfilerInfoUnk, void *pvClientData,                    \
       UINT cbClientData)                                                                        \
    X(ProfilerAttachComplete)                                                                    \
    X(ProfilerDetachSucceeded)                                                                   \
    /* ICorProfilerCallback4 */                                                                  \
    X(ReJITCompilationStarted, FunctionID functionId, ReJITID rejitId, BOOL fIsSafeToBlock)      \
    X(GetReJITParameters, ModuleID moduleId, mdMethodDef methodId,                               \
       ICorProfilerFunctionControl *pFunctionControl)                                            \
    X(ReJITCompilationFinished, FunctionID functionId, ReJITID rejitId, HRESULT hrStatus,        \
       BOOL fIsSafeToBlock)                                                                      \
    X(ReJITError, ModuleID moduleId, mdMethodDef methodId, FunctionID functionId,                \
       HRESULT hrStatus)                                                                         \
    X(MovedReferences2, ULONG cMovedObjectIDRanges, ObjectID oldObjectIDRangeStart[],            \
       ObjectID newObjectIDRangeStart[], SIZE_T cObjectIDRangeLength[])                          \
    X(SurvivingReferences2, ULONG cSurvivingObjectIDRanges, ObjectID objectIDRangeStart[],       \
       SIZE_T cObjectIDRangeLength[])                                                            \
    /* ICorProfilerCallback5 */                                                                  \
    X(ConditionalWeakTableElementReferences, ULONG cRootRefs, ObjectID keyRefIds[],              \
       ObjectID valueRefIds[], GCHandleID rootIds[])                                             \
    /* ICorProfilerCallback6 */                                                                  \
    X(GetAssemblyReferences, const WCHAR *wszAssemblyPath,                                       \
       ICorProfilerAssemblyReferenceProvider *pAsmRefProvider)                                   \
    /* ICorProfilerCallback7 */                                                                  \
    X(ModuleInMemorySymbolsUpdated, ModuleID moduleId)                                           \
    /* ICorProfilerCallback8 */                                                                  \
    X(DynamicMethodJITCompilationStarted, FunctionID functionId, BOOL fIsSafeToBlock,            \
       LPCBYTE pILHeader, ULONG cbILHeader)                                                      \
    X(DynamicMethodJITCompilationFinished, FunctionID functionId, HRESULT hrStatus,              \
       BOOL fIsSafeToBlock)                                                                      \
    /* ICorProfilerCallback9 */                                                                  \
    X(DynamicMethodUnloaded, FunctionID functionId)                                              \
    /* ICorProfilerCallback10 */                                                                 \
    X(EventPipeEventDelivered, EVENTPIPE_PROVIDER provider, DWORD eventId, DWORD eventVersion,   \
       ULONG cbMetadataBlob, LPCBYTE metadataBlob, ULONG cbEventData, LPCBYTE eventData,         \
       LPCGUID pActivityId, LPCGUID pRelatedActivityId, ThreadID eventThread,                    \
       ULONG numStackFrames, UINT_PTR stackFrames[])                                             \
    X(EventPipeProviderCreated, EVENTPIPE_PROVIDER provider)                                     \
    /* ICorProfilerCallback11 */                                                                 \
    X(LoadAsNotficationOnly, BOOL *pbNotificationOnly)

/* One index per callback: CB_Initialize = 0, ... */
#define INDEX(name, ...) CB_##name,
enum { CALLBACKS(INDEX, INDEX) CALLBACK_COUNT };

/* Their names, as the header spells them. */
#define NAME(name, ...) #name,
static const char *const CALLBACK_NAMES[CALLBACK_COUNT] = {CALLBACKS(NAME, NAME)};

/* The profiler object. The vtable pointer comes first, as COM requires. */
typedef struct Profiler {
    const ICorProfilerCallback11Vtbl *lpVtbl;
    atomic_uint refs;
    _Atomic uint64_t counts[CALLBACK_COUNT];
} Profiler;

static Profiler *profiler_of(ICorProfilerCallback11 *This)
{
    return (Profiler *)(void *)This;
}

/* The per-callback work: exactly the Rust counter's `fetch_add(1, Ordering::Relaxed)`. */
#define COUNT_AT(index) atomic_fetch_add_explicit(&profiler_of(This)->counts[index], 1, memory_order_relaxed)
#define COUNT(name) COUNT_AT(CB_##name)

/* Every ordinary callback: `static HRESULT cb_<Name>(ICorProfilerCallback11 *This, <params>)`. */
#define DEFINE_COUNTING_CALLBACK(name, ...)                                                      \
    static HRESULT STDMETHODCALLTYPE cb_##name(ICorProfilerCallback11 *This, ##__VA_ARGS__)      \
    {                                                                                            \
        COUNT_AT(CB_##name); /* `name` unexpanded: see the renamed slot in build.sh */           \
        return S_OK;                                                                             \
    }
#define DEFINED_BY_HAND(name, ...)
CALLBACKS(DEFINE_COUNTING_CALLBACK, DEFINED_BY_HAND)

/* ------------------------------------------------------------------------------------------ */
/* Initialize and Shutdown */

/* Loads, JIT, exceptions, GC, threads and runtime suspensions: callback-counter's DEFAULT_MASK. */
static const DWORD DEFAULT_MASK = COR_PRF_MONITOR_CLASS_LOADS | COR_PRF_MONITOR_MODULE_LOADS |
                                  COR_PRF_MONITOR_ASSEMBLY_LOADS | COR_PRF_MONITOR_APPDOMAIN_LOADS |
                                  COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_EXCEPTIONS |
                                  COR_PRF_MONITOR_GC | COR_PRF_MONITOR_THREADS | COR_PRF_MONITOR_SUSPENDS;

/* `123` or `0x7b` (surrounding blanks allowed), as callback-counter's parse_mask. */
static int parse_mask(const char *text, DWORD *mask)
{
    while (*text == ' ' || *text == '\t' || *text == '\n')
        text++;
    int base = 10;
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text += 2;
    }
    if (*text == '\0' || *text == '-' || *text == '+' || *text == ' ')
        return 0;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, base);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (errno != 0 || *end != '\0' || value > 0xFFFFFFFFull)
        return 0;
    *mask = (DWORD)value;
    return 1;
}

static HRESULT STDMETHODCALLTYPE cb_Initialize(ICorProfilerCallback11 *This, IUnknown *pICorProfilerInfoUnk)
{
    COUNT(Initialize);
    DWORD mask = DEFAULT_MASK;
    const char *text = getenv("CORPROF_EVENT_MASK");
    if (text != NULL && !parse_mask(text, &mask)) {
        fprintf(stderr, "reference-profiler: CORPROF_EVENT_MASK=\"%s\" is not a number; using the default\n",
                text);
        mask = DEFAULT_MASK;
    }
    if (pICorProfilerInfoUnk == NULL)
        return E_POINTER;
    ICorProfilerInfo *info = NULL;
    HRESULT hr = pICorProfilerInfoUnk->lpVtbl->QueryInterface(pICorProfilerInfoUnk, &IID_ICorProfilerInfo_,
                                                              (void **)&info);
    if (FAILED(hr))
        return hr;
    if (info == NULL)
        return E_POINTER;
    hr = info->lpVtbl->SetEventMask(info, mask);
    info->lpVtbl->Release(info);
    return hr;
}

static HRESULT STDMETHODCALLTYPE cb_Shutdown(ICorProfilerCallback11 *This)
{
    COUNT(Shutdown);
    const Profiler *self = profiler_of(This);
    const char *path = getenv("CORPROF_COUNTS_OUT");
    FILE *out = path != NULL ? fopen(path, "w") : stderr;
    if (out == NULL) {
        fprintf(stderr, "reference-profiler: cannot write the counts: %s: %s\n", path, strerror(errno));
        return E_FAIL;
    }
    for (int i = 0; i < CALLBACK_COUNT; i++) {
        uint64_t n = atomic_load_explicit(&self->counts[i], memory_order_relaxed);
        if (n > 0)
            fprintf(out, "%s %llu\n", CALLBACK_NAMES[i], (unsigned long long)n);
    }
    int failed = ferror(out);
    failed |= path != NULL ? fclose(out) : fflush(out);
    if (failed) {
        fprintf(stderr, "reference-profiler: cannot write the counts to %s\n", path ? path : "stderr");
        return E_FAIL;
    }
    return S_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* IUnknown of the profiler */

static ULONG STDMETHODCALLTYPE profiler_add_ref(ICorProfilerCallback11 *This)
{
    return atomic_fetch_add_explicit(&profiler_of(This)->refs, 1, memory_order_relaxed) + 1;
}

static ULONG STDMETHODCALLTYPE profiler_release(ICorProfilerCallback11 *This)
{
    Profiler *self = profiler_of(This);
    ULONG left = atomic_fetch_sub_explicit(&self->refs, 1, memory_order_release) - 1;
    if (left == 0) {
        /* Pairs with the releases of other threads: their uses happen before the free. */
        atomic_thread_fence(memory_order_acquire);
        free(self);
    }
    return left;
}

static HRESULT STDMETHODCALLTYPE profiler_query_interface(ICorProfilerCallback11 *This, REFIID riid, void **ppv)
{
    if (ppv == NULL)
        return E_POINTER;
    *ppv = NULL;
    if (riid == NULL)
        return E_INVALIDARG;
    if (!is_profiler_iid(riid))
        return E_NOINTERFACE;
    profiler_add_ref(This);
    *ppv = This;
    return S_OK;
}

/* The one vtable: every slot named, so the compiler checks each function against its slot. */
#define SLOT(name, ...) .name = cb_##name,
static const ICorProfilerCallback11Vtbl PROFILER_VTBL = {
    .QueryInterface = profiler_query_interface,
    .AddRef = profiler_add_ref,
    .Release = profiler_release,
    CALLBACKS(SLOT, SLOT)};

_Static_assert(sizeof(ICorProfilerCallback11Vtbl) == (3 + CALLBACK_COUNT) * sizeof(void (*)(void)),
               "every slot of ICorProfilerCallback11Vtbl has a callback in CALLBACKS");

/* ------------------------------------------------------------------------------------------ */
/* A new object for the class factory (com.h) */

static HRESULT create_profiler(REFIID riid, void **ppv)
{
    Profiler *self = calloc(1, sizeof *self);
    if (self == NULL)
        return E_FAIL;
    self->lpVtbl = &PROFILER_VTBL;
    atomic_init(&self->refs, 1);
    for (int i = 0; i < CALLBACK_COUNT; i++)
        atomic_init(&self->counts[i], 0);
    /* The QueryInterface takes the caller's reference; releasing ours leaves exactly that one. */
    ICorProfilerCallback11 *obj = (ICorProfilerCallback11 *)(void *)self;
    HRESULT hr = profiler_query_interface(obj, riid, ppv);
    profiler_release(obj);
    return hr;
}
