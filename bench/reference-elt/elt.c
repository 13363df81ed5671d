/* elt.c: the C reference of the enter/leave/tailcall (ELT) benchmark (scripts/bench-elt).
 *
 * Per hooked call it does what a Rust profiler's fast hooks must match: the JIT calls an asm stub
 * that saves every caller-saved register (rax, rcx, rdx, rsi, rdi, r8-r11, xmm0-15), aligns the
 * stack, moves the JIT's argument into rdi and calls a C function doing one relaxed atomic
 * increment of that function's counter. The argument is the client data the FunctionIDMapper2
 * returned for the function: an index into a table of counters.
 *
 * Where the JIT puts that argument on Linux x64 (dotnet/runtime): the enter hook gets it in r14
 * (REG_PROFILER_ENTER_ARG_0, src/coreclr/jit/targetamd64.h under UNIX_AMD64_ABI; r15 holds the
 * profiled rsp), the leave and tailcall hooks in rdi (rsi holds the profiled rsp), as the
 * runtime's own ProfileEnterNaked / ProfileLeaveNaked / ProfileTailcallNaked in
 * src/coreclr/vm/amd64/asmhelpers.S read them.
 *
 * CORPROF_ELT_MODE picks what is measured:
 *   fast      (default) SetEnterLeaveFunctionHooks3 with the asm stubs; every function hooked.
 *   slow      SetEnterLeaveFunctionHooks3WithInfo + COR_PRF_ENABLE_FRAME_INFO: the runtime's own
 *             stubs save the registers and call plain C hooks (FunctionIDOrClientID, eltInfo).
 *   unhooked  the fast set-up, but the mapper hooks no function: the cost of a call in a process
 *             with ELT on, for a function the profiler declined.
 * At Shutdown it writes to the file named by CORPROF_ELT_OUT (else stderr):
 *   mode <mode>
 *   mapped <functions the mapper saw>
 *   enters <total> / leaves <total> / tailcalls <total>  (one line each)
 *   app <token> <enters> <leaves> <tailcalls>   for each method of EltBench.dll, by token (summed
 *                                               over the method's code versions)
 *
 * Every callback but Initialize and Shutdown is an asm `xor eax, eax; ret` (S_OK): the event mask
 * asks for none of them.
 *
 * CLSID: {7D4E2A9C-1B3F-4C58-A6E0-5F2D8B9C3E71}. Built by bench/reference-elt/build.sh. */

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "com.h"

static const CLSID PROFILER_CLSID = {0x7D4E2A9C, 0x1B3F, 0x4C58, {0xA6, 0xE0, 0x5F, 0x2D, 0x8B, 0x9C, 0x3E, 0x71}};
static const IID IID_ICorProfilerInfo3_ = {0xB555ED4F, 0x452A, 0x4E54, {0x8B, 0x39, 0xB5, 0x36, 0x0B, 0xAD, 0x32, 0xA0}};

/* ------------------------------------------------------------------------------------------ */
/* The counters: one slot per mapped function. Slot 0 takes the calls of functions mapped after
 * the table filled up (none in the benchmark), so an index is always in bounds. */

#define MAX_FUNCTIONS (1u << 16)

typedef struct Counter {
    _Atomic uint64_t enters;
    _Atomic uint64_t leaves;
    _Atomic uint64_t tailcalls;
    FunctionID function;
    mdToken app_token; /* nonzero for a method of EltBench.dll */
} Counter;

static Counter COUNTERS[MAX_FUNCTIONS];
static _Atomic uint32_t NEXT_INDEX = 1;

/* The per-call work, called by the stubs with the mapper's index in rdi. */
HIDDEN void elt_count_enter(uintptr_t index)
{
    atomic_fetch_add_explicit(&COUNTERS[index].enters, 1, memory_order_relaxed);
}

HIDDEN void elt_count_leave(uintptr_t index)
{
    atomic_fetch_add_explicit(&COUNTERS[index].leaves, 1, memory_order_relaxed);
}

HIDDEN void elt_count_tailcall(uintptr_t index)
{
    atomic_fetch_add_explicit(&COUNTERS[index].tailcalls, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------------------------------ */
/* The fast stubs. On entry rsp is whatever the JIT left (not assumed aligned): keep it in rbp,
 * align down to 16, save the nine caller-saved integer registers and xmm0-15 (movaps: the area is
 * aligned), pass the argument in rdi, call, restore everything, return. 336 bytes = 9 * 8 integer
 * slots rounded up to 80, plus 16 * 16 for xmm. */

#define ELT_STUB(name, target, move_arg)                                                         \
    ".globl " #name "\n"                                                                         \
    ".hidden " #name "\n"                                                                        \
    ".type " #name ", @function\n"                                                               \
    ".p2align 4\n" #name ":\n"                                                                   \
    "    push rbp\n"                                                                             \
    "    mov rbp, rsp\n"                                                                         \
    "    and rsp, -16\n"                                                                         \
    "    sub rsp, 336\n"                                                                         \
    "    mov [rsp + 0], rax\n"                                                                   \
    "    mov [rsp + 8], rcx\n"                                                                   \
    "    mov [rsp + 16], rdx\n"                                                                  \
    "    mov [rsp + 24], rsi\n"                                                                  \
    "    mov [rsp + 32], rdi\n"                                                                  \
    "    mov [rsp + 40], r8\n"                                                                   \
    "    mov [rsp + 48], r9\n"                                                                   \
    "    mov [rsp + 56], r10\n"                                                                  \
    "    mov [rsp + 64], r11\n"                                                                  \
    "    movaps [rsp + 80], xmm0\n"                                                              \
    "    movaps [rsp + 96], xmm1\n"                                                              \
    "    movaps [rsp + 112], xmm2\n"                                                             \
    "    movaps [rsp + 128], xmm3\n"                                                             \
    "    movaps [rsp + 144], xmm4\n"                                                             \
    "    movaps [rsp + 160], xmm5\n"                                                             \
    "    movaps [rsp + 176], xmm6\n"                                                             \
    "    movaps [rsp + 192], xmm7\n"                                                             \
    "    movaps [rsp + 208], xmm8\n"                                                             \
    "    movaps [rsp + 224], xmm9\n"                                                             \
    "    movaps [rsp + 240], xmm10\n"                                                            \
    "    movaps [rsp + 256], xmm11\n"                                                            \
    "    movaps [rsp + 272], xmm12\n"                                                            \
    "    movaps [rsp + 288], xmm13\n"                                                            \
    "    movaps [rsp + 304], xmm14\n"                                                            \
    "    movaps [rsp + 320], xmm15\n"                                                            \
    "    " move_arg "\n"                                                                         \
    "    call " #target "\n"                                                                     \
    "    mov rax, [rsp + 0]\n"                                                                   \
    "    mov rcx, [rsp + 8]\n"                                                                   \
    "    mov rdx, [rsp + 16]\n"                                                                  \
    "    mov rsi, [rsp + 24]\n"                                                                  \
    "    mov rdi, [rsp + 32]\n"                                                                  \
    "    mov r8, [rsp + 40]\n"                                                                   \
    "    mov r9, [rsp + 48]\n"                                                                   \
    "    mov r10, [rsp + 56]\n"                                                                  \
    "    mov r11, [rsp + 64]\n"                                                                  \
    "    movaps xmm0, [rsp + 80]\n"                                                              \
    "    movaps xmm1, [rsp + 96]\n"                                                              \
    "    movaps xmm2, [rsp + 112]\n"                                                             \
    "    movaps xmm3, [rsp + 128]\n"                                                             \
    "    movaps xmm4, [rsp + 144]\n"                                                             \
    "    movaps xmm5, [rsp + 160]\n"                                                             \
    "    movaps xmm6, [rsp + 176]\n"                                                             \
    "    movaps xmm7, [rsp + 192]\n"                                                             \
    "    movaps xmm8, [rsp + 208]\n"                                                             \
    "    movaps xmm9, [rsp + 224]\n"                                                             \
    "    movaps xmm10, [rsp + 240]\n"                                                            \
    "    movaps xmm11, [rsp + 256]\n"                                                            \
    "    movaps xmm12, [rsp + 272]\n"                                                            \
    "    movaps xmm13, [rsp + 288]\n"                                                            \
    "    movaps xmm14, [rsp + 304]\n"                                                            \
    "    movaps xmm15, [rsp + 320]\n"                                                            \
    "    mov rsp, rbp\n"                                                                         \
    "    pop rbp\n"                                                                              \
    "    ret\n"                                                                                  \
    ".size " #name ", . - " #name "\n"

__asm__(".intel_syntax noprefix\n"
        ".text\n"
        /* Enter: the JIT passes the client data in r14. */
        ELT_STUB(elt_enter_stub, elt_count_enter, "mov rdi, r14")
        /* Leave and tailcall: in rdi already; the move keeps the three stubs the same length. */
        ELT_STUB(elt_leave_stub, elt_count_leave, "mov rdi, rdi")
        ELT_STUB(elt_tailcall_stub, elt_count_tailcall, "mov rdi, rdi")
        /* S_OK for every callback slot nobody asked for. */
        ".globl elt_callback_ok\n"
        ".hidden elt_callback_ok\n"
        ".type elt_callback_ok, @function\n"
        ".p2align 4\n"
        "elt_callback_ok:\n"
        "    xor eax, eax\n"
        "    ret\n"
        ".size elt_callback_ok, . - elt_callback_ok\n"
        ".att_syntax prefix\n");

void elt_enter_stub(FunctionIDOrClientID id);
void elt_leave_stub(FunctionIDOrClientID id);
void elt_tailcall_stub(FunctionIDOrClientID id);
void elt_callback_ok(void);

/* ------------------------------------------------------------------------------------------ */
/* The slow hooks: the runtime's stubs have saved the registers; these are ordinary C. */

static void slow_enter(FunctionIDOrClientID id, COR_PRF_ELT_INFO info)
{
    (void)info;
    elt_count_enter(id.clientID);
}

static void slow_leave(FunctionIDOrClientID id, COR_PRF_ELT_INFO info)
{
    (void)info;
    elt_count_leave(id.clientID);
}

static void slow_tailcall(FunctionIDOrClientID id, COR_PRF_ELT_INFO info)
{
    (void)info;
    elt_count_tailcall(id.clientID);
}

/* ------------------------------------------------------------------------------------------ */
/* The mapper: a fresh counter index per function, and whether to hook it. */

enum Mode { MODE_FAST, MODE_SLOW, MODE_UNHOOKED };
static enum Mode MODE = MODE_FAST;
static const char *const MODE_NAMES[] = {"fast", "slow", "unhooked"};
static ICorProfilerInfo3 *INFO = NULL;

/* Whether `module` is EltBench.dll (its file name ends so). */
static int is_app_module(ModuleID module)
{
    WCHAR name[1024];
    ULONG len = 0;
    LPCBYTE base = NULL;
    AssemblyID assembly = 0;
    if (FAILED(INFO->lpVtbl->GetModuleInfo(INFO, module, &base, sizeof name / sizeof name[0], &len, name, &assembly)))
        return 0;
    static const char suffix[] = "/EltBench.dll";
    size_t n = sizeof suffix - 1;
    /* len counts the terminating NUL. */
    if (len < n + 1 || len > sizeof name / sizeof name[0])
        return 0;
    for (size_t i = 0; i < n; i++)
        if (name[len - 1 - n + i] != (WCHAR)suffix[i])
            return 0;
    return 1;
}

static UINT_PTR STDMETHODCALLTYPE map_function(FunctionID function, void *client_data, BOOL *hook)
{
    (void)client_data;
    uint32_t index = atomic_fetch_add_explicit(&NEXT_INDEX, 1, memory_order_relaxed);
    if (index >= MAX_FUNCTIONS)
        index = 0;
    else {
        COUNTERS[index].function = function;
        ClassID class_id = 0;
        ModuleID module = 0;
        mdToken token = 0;
        if (!FAILED(INFO->lpVtbl->GetFunctionInfo(INFO, function, &class_id, &module, &token)) &&
            is_app_module(module))
            COUNTERS[index].app_token = token;
    }
    *hook = MODE != MODE_UNHOOKED;
    return index;
}

/* ------------------------------------------------------------------------------------------ */
/* Initialize and Shutdown */

static HRESULT STDMETHODCALLTYPE cb_initialize(ICorProfilerCallback3 *This, IUnknown *unk)
{
    (void)This;
    const char *mode = getenv("CORPROF_ELT_MODE");
    if (mode != NULL && *mode != '\0') {
        if (strcmp(mode, "fast") == 0)
            MODE = MODE_FAST;
        else if (strcmp(mode, "slow") == 0)
            MODE = MODE_SLOW;
        else if (strcmp(mode, "unhooked") == 0)
            MODE = MODE_UNHOOKED;
        else {
            fprintf(stderr, "elt-reference: CORPROF_ELT_MODE=\"%s\" is not fast, slow or unhooked\n", mode);
            return E_INVALIDARG;
        }
    }
    if (unk == NULL)
        return E_POINTER;
    HRESULT hr = unk->lpVtbl->QueryInterface(unk, &IID_ICorProfilerInfo3_, (void **)&INFO);
    if (FAILED(hr))
        return hr;
    DWORD mask = COR_PRF_MONITOR_ENTERLEAVE;
    if (MODE == MODE_SLOW)
        mask |= COR_PRF_ENABLE_FRAME_INFO;
    hr = INFO->lpVtbl->SetEventMask(INFO, mask);
    if (!FAILED(hr))
        hr = INFO->lpVtbl->SetFunctionIDMapper2(INFO, map_function, NULL);
    if (!FAILED(hr)) {
        if (MODE == MODE_SLOW)
            hr = INFO->lpVtbl->SetEnterLeaveFunctionHooks3WithInfo(INFO, slow_enter, slow_leave, slow_tailcall);
        else
            hr = INFO->lpVtbl->SetEnterLeaveFunctionHooks3(INFO, elt_enter_stub, elt_leave_stub, elt_tailcall_stub);
    }
    if (FAILED(hr))
        fprintf(stderr, "elt-reference: Initialize failed: 0x%08X\n", (unsigned)hr);
    return hr;
}

static HRESULT STDMETHODCALLTYPE cb_shutdown(ICorProfilerCallback3 *This)
{
    (void)This;
    const char *path = getenv("CORPROF_ELT_OUT");
    FILE *out = path != NULL ? fopen(path, "w") : stderr;
    if (out == NULL) {
        fprintf(stderr, "elt-reference: cannot write the counts: %s: %s\n", path, strerror(errno));
        return E_FAIL;
    }
    uint32_t mapped = atomic_load_explicit(&NEXT_INDEX, memory_order_relaxed) - 1;
    uint32_t used = mapped + 1 < MAX_FUNCTIONS ? mapped + 1 : MAX_FUNCTIONS;
    uint64_t enters = 0, leaves = 0, tailcalls = 0;
    for (uint32_t i = 0; i < used; i++) {
        enters += atomic_load_explicit(&COUNTERS[i].enters, memory_order_relaxed);
        leaves += atomic_load_explicit(&COUNTERS[i].leaves, memory_order_relaxed);
        tailcalls += atomic_load_explicit(&COUNTERS[i].tailcalls, memory_order_relaxed);
    }
    fprintf(out, "mode %s\nmapped %u\nenters %llu\nleaves %llu\ntailcalls %llu\n", MODE_NAMES[MODE], mapped,
            (unsigned long long)enters, (unsigned long long)leaves, (unsigned long long)tailcalls);
    /* The app's methods by token, each summed over its slots: the runtime asks the mapper again
     * for each new code version of a function (tier 0, OSR, tier 1), so one method can have
     * several. A selection sort: the app has a handful of methods. */
    mdToken last = 0;
    for (;;) {
        mdToken token = 0;
        for (uint32_t i = 1; i < used; i++) {
            mdToken t = COUNTERS[i].app_token;
            if (t > last && (token == 0 || t < token))
                token = t;
        }
        if (token == 0)
            break;
        uint64_t e = 0, l = 0, tc = 0;
        for (uint32_t i = 1; i < used; i++) {
            if (COUNTERS[i].app_token != token)
                continue;
            e += atomic_load_explicit(&COUNTERS[i].enters, memory_order_relaxed);
            l += atomic_load_explicit(&COUNTERS[i].leaves, memory_order_relaxed);
            tc += atomic_load_explicit(&COUNTERS[i].tailcalls, memory_order_relaxed);
        }
        fprintf(out, "app %08x %llu %llu %llu\n", (unsigned)token, (unsigned long long)e, (unsigned long long)l,
                (unsigned long long)tc);
        last = token;
    }
    int failed = ferror(out);
    failed |= path != NULL ? fclose(out) : fflush(out);
    if (failed) {
        fprintf(stderr, "elt-reference: cannot write the counts to %s\n", path ? path : "stderr");
        return E_FAIL;
    }
    return S_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* The profiler object: one static instance (the runtime creates one), its vtable filled at
 * creation: IUnknown, Initialize, Shutdown, and S_OK everywhere else. */

typedef struct Profiler {
    void *const *lpVtbl;
    atomic_uint refs;
} Profiler;

#define SLOTS (sizeof(ICorProfilerCallback11Vtbl) / sizeof(void *))
static void *PROFILER_VTBL[SLOTS];
static Profiler PROFILER = {PROFILER_VTBL, 0};

static ULONG STDMETHODCALLTYPE profiler_add_ref(Profiler *This)
{
    return atomic_fetch_add_explicit(&This->refs, 1, memory_order_relaxed) + 1;
}

static ULONG STDMETHODCALLTYPE profiler_release(Profiler *This)
{
    /* Static: nothing to free. */
    return atomic_fetch_sub_explicit(&This->refs, 1, memory_order_relaxed) - 1;
}

static HRESULT STDMETHODCALLTYPE profiler_query_interface(Profiler *This, REFIID riid, void **ppv)
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

#define SLOT_OF(field) (offsetof(ICorProfilerCallback11Vtbl, field) / sizeof(void *))

static void fill_vtable(void)
{
    for (size_t i = 0; i < SLOTS; i++)
        PROFILER_VTBL[i] = (void *)elt_callback_ok;
    PROFILER_VTBL[SLOT_OF(QueryInterface)] = (void *)profiler_query_interface;
    PROFILER_VTBL[SLOT_OF(AddRef)] = (void *)profiler_add_ref;
    PROFILER_VTBL[SLOT_OF(Release)] = (void *)profiler_release;
    PROFILER_VTBL[SLOT_OF(Initialize)] = (void *)cb_initialize;
    PROFILER_VTBL[SLOT_OF(Shutdown)] = (void *)cb_shutdown;
}

/* The one object the class factory (com.h) hands out. */
static HRESULT create_profiler(REFIID riid, void **ppv)
{
    fill_vtable();
    return profiler_query_interface(&PROFILER, riid, ppv);
}
