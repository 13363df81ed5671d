/* dispatch.c: calls a profiler's callbacks through its vtable, as CoreCLR does, to measure what
 * one call costs (scripts/bench; results in BENCHMARKS.md).
 *
 *   dispatch LIB CLSID CALLBACK N [REPEATS]
 *
 * Loads LIB (a profiler .so), gets DllGetClassObject -> IClassFactory ->
 * CreateInstance(IID_ICorProfilerCallback11), then calls CALLBACK (JITCompilationStarted, or
 * JITInlining with a pointer to a BOOL) N times, REPEATS times over (default 1), each pass timed.
 * Finally it calls Shutdown with CORPROF_COUNTS_OUT set to a temporary file and checks that the
 * profiler counted exactly N * REPEATS calls. Prints one line:
 *
 *   calls=<N*REPEATS> best_ns=<fastest pass, ns/call> median_ns=<median pass, ns/call>
 *
 * The calls happen only inside the run_* functions: under callgrind, --toggle-collect='run_*'
 * counts exactly them (the loop and the calls, not the loading). Exits 1 on any failure. */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corprof.h"

#ifndef S_OK
#define S_OK ((HRESULT)0)
#endif

static const IID IID_IClassFactory_ = {0x00000001, 0x0000, 0x0000, {0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}};
static const IID IID_ICorProfilerCallback11_ = {0x42350846, 0xAAED, 0x47F7, {0xB1, 0x28, 0xFD, 0x0C, 0x98, 0x88, 0x1C, 0xDE}};

typedef struct IClassFactory IClassFactory;
typedef struct IClassFactoryVtbl {
    HRESULT (*QueryInterface)(IClassFactory *This, REFIID riid, void **ppv);
    ULONG (*AddRef)(IClassFactory *This);
    ULONG (*Release)(IClassFactory *This);
    HRESULT (*CreateInstance)(IClassFactory *This, IUnknown *outer, REFIID riid, void **ppv);
    HRESULT (*LockServer)(IClassFactory *This, BOOL lock);
} IClassFactoryVtbl;
struct IClassFactory {
    const IClassFactoryVtbl *lpVtbl;
};

typedef HRESULT (*DllGetClassObjectFn)(REFCLSID rclsid, REFIID riid, void **ppv);

static void die(const char *what)
{
    fprintf(stderr, "dispatch: %s\n", what);
    exit(1);
}

/* "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11" (braces optional) */
static int parse_guid(const char *text, GUID *g)
{
    unsigned int l, w1, w2, b[8];
    if (*text == '{')
        text++;
    if (sscanf(text, "%8x-%4x-%4x-%2x%2x-%2x%2x%2x%2x%2x%2x", &l, &w1, &w2, &b[0], &b[1], &b[2], &b[3], &b[4],
               &b[5], &b[6], &b[7]) != 11)
        return 0;
    g->Data1 = l;
    g->Data2 = (uint16_t)w1;
    g->Data3 = (uint16_t)w2;
    for (int i = 0; i < 8; i++)
        g->Data4[i] = (uint8_t)b[i];
    return 1;
}

/* The measured loops: one vtable call per iteration, the vtable read each time as the runtime
 * does. Never inlined, so callgrind can count exactly them. */
__attribute__((noinline)) static void run_JITCompilationStarted(ICorProfilerCallback11 *p, long n)
{
    for (long i = 0; i < n; i++)
        if (p->lpVtbl->JITCompilationStarted(p, (FunctionID)i, 1) != S_OK)
            die("JITCompilationStarted did not return S_OK");
}

/* The same callback with 64 FunctionIDs in turn, as the runtime repeats an ID across callbacks
 * (transitions, allocations of a class): corprof notes each class or function ID a callback
 * hands over once (scripts/bench-ids). */
__attribute__((noinline)) static void run_JITCompilationStartedRepeated(ICorProfilerCallback11 *p, long n)
{
    for (long i = 0; i < n; i++)
        if (p->lpVtbl->JITCompilationStarted(p, (FunctionID)(0x1000 + (i & 63) * 16), 1) != S_OK)
            die("JITCompilationStarted did not return S_OK");
}

__attribute__((noinline)) static void run_JITInlining(ICorProfilerCallback11 *p, long n)
{
    BOOL should_inline = 1;
    for (long i = 0; i < n; i++)
        if (p->lpVtbl->JITInlining(p, (FunctionID)i, (FunctionID)i + 1, &should_inline) != S_OK)
            die("JITInlining did not return S_OK");
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The count the profiler wrote for `name` at Shutdown (0 if it listed none). */
static unsigned long long counted(ICorProfilerCallback11 *p, const char *name)
{
    char path[] = "/tmp/corprof-dispatch-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        die("cannot create a temporary file");
    close(fd);
    setenv("CORPROF_COUNTS_OUT", path, 1);
    if (p->lpVtbl->Shutdown(p) != S_OK)
        die("Shutdown failed");
    FILE *f = fopen(path, "r");
    if (f == NULL)
        die("the profiler wrote no counts file");
    char line[256], key[200];
    unsigned long long n, found = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%199s %llu", key, &n) == 2 && strcmp(key, name) == 0)
            found = n;
    fclose(f);
    unlink(path);
    return found;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: dispatch LIB CLSID JITCompilationStarted|JITCompilationStartedRepeated|JITInlining N [REPEATS]\n");
        return 2;
    }
    const char *lib = argv[1], *callback = argv[3];
    long n = atol(argv[4]);
    int repeats = argc == 6 ? atoi(argv[5]) : 1;
    GUID clsid;
    if (!parse_guid(argv[2], &clsid))
        die("bad CLSID");
    if (n < 0 || repeats < 1 || repeats > 1000)
        die("bad N or REPEATS");
    void (*run)(ICorProfilerCallback11 *, long);
    if (strcmp(callback, "JITCompilationStarted") == 0)
        run = run_JITCompilationStarted;
    else if (strcmp(callback, "JITCompilationStartedRepeated") == 0)
        run = run_JITCompilationStartedRepeated;
    else if (strcmp(callback, "JITInlining") == 0)
        run = run_JITInlining;
    else
        die("CALLBACK must be JITCompilationStarted, JITCompilationStartedRepeated or JITInlining");

    void *so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (so == NULL) {
        fprintf(stderr, "dispatch: %s\n", dlerror());
        return 1;
    }
    DllGetClassObjectFn get_class_object = (DllGetClassObjectFn)dlsym(so, "DllGetClassObject");
    if (get_class_object == NULL)
        die("no DllGetClassObject");
    IClassFactory *factory = NULL;
    if (get_class_object(&clsid, &IID_IClassFactory_, (void **)&factory) != S_OK || factory == NULL)
        die("DllGetClassObject failed");
    ICorProfilerCallback11 *p = NULL;
    if (factory->lpVtbl->CreateInstance(factory, NULL, &IID_ICorProfilerCallback11_, (void **)&p) != S_OK ||
        p == NULL)
        die("CreateInstance(IID_ICorProfilerCallback11) failed");
    factory->lpVtbl->Release(factory);

    double *per_call = calloc((size_t)repeats, sizeof *per_call);
    if (per_call == NULL)
        die("out of memory");
    for (int r = 0; r < repeats; r++) {
        double start = now_ns();
        run(p, n);
        per_call[r] = n > 0 ? (now_ns() - start) / (double)n : 0.0;
    }
    qsort(per_call, (size_t)repeats, sizeof *per_call, cmp_double);

    unsigned long long total = (unsigned long long)n * (unsigned long long)repeats;
    const char *counted_as =
        strcmp(callback, "JITCompilationStartedRepeated") == 0 ? "JITCompilationStarted" : callback;
    unsigned long long seen = counted(p, counted_as);
    if (seen != total) {
        fprintf(stderr, "dispatch: the profiler counted %llu %s calls, not %llu\n", seen, callback, total);
        return 1;
    }
    if (p->lpVtbl->Release(p) != 0)
        die("the last Release did not return 0");
    printf("calls=%llu best_ns=%.3f median_ns=%.3f\n", total, per_call[0], per_call[repeats / 2]);
    free(per_call);
    return 0;
}
