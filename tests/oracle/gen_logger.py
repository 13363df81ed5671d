#!/usr/bin/env python3
"""Writes the C callback logger (the reference half of the differential oracle, tests/runtime/oracle.rs).

    gen_logger.py CORPROF_H CORPROF_IDL > logger.c

Reads, independently of corprof-gen:
  - from corprof.h: the slots of the newest ICorProfilerCallback vtable in the C (CINTERFACE)
    section, in order, each with its parameters as declared; the callback and ICorProfilerInfo5
    IIDs (MIDL_INTERFACE); the header's typedefs and enum names, to know each scalar's width;
    SAL `_In_reads_(n)` counts;
  - from corprof.idl: `[size_is(n)]` / `[length_is(n)]` counts, which MIDL's C output drops.

Writes a complete COM profiler in plain C: DllGetClassObject, a class factory, IUnknown, and a
function for every slot that appends `<tid> <Name> <arg> …` to a file (the line format of
examples/callback-logger/src/fmt.rs) and, in tee mode, calls the same slot of a second profiler
with the same arguments. Settings (environment):
  - CORPROF_LOG_C_OUT, else CORPROF_LOG_OUT: the output file;
  - CORPROF_EVENT_MASK / CORPROF_EVENT_MASK_HIGH: hex masks set in Initialize (SetEventMask2);
  - CORPROF_LOG_C_NOTIFICATION if set, else CORPROF_LOG_NOTIFICATION: `1` answers
    LoadAsNotificationOnly with TRUE;
  - CORPROF_LOG_TEE=/path/lib.so{CLSID}: the tee's second profiler;
  - CORPROF_LOG_EVENTPIPE=<provider>: in Initialize, start an EventPipe session with that provider
    (its events then come through EventPipeEventDelivered).
It also exports what the app calls (P/Invoke) to make the runtime raise the callbacks that follow
a profiler's own request: oracle_request_rejit (RequestReJIT of a method of the calling module, and
of a token that is no method), oracle_request_detach (RequestProfilerDetach) and oracle_detached,
and oracle_attached (ProfilerAttachComplete has come).
"""

import re
import sys

CLSID = "9B1E4D3A-6C2F-4E8B-A1D7-5F3C2B0E8D46"

# The Windows/MIDL vocabulary the header builds on: (kind, bits) of each base scalar.
BASE_SCALARS = {
    "BOOL": 32, "HRESULT": 32, "int": 32, "LONG": 32, "LONG32": 32, "ULONG": 32, "DWORD": 32,
    "UINT": 32, "ULONG32": 32, "UINT32": 32, "USHORT": 16, "WCHAR": 16, "BYTE": 8,
    "UINT_PTR": 64, "SIZE_T": 64, "ULONG_PTR": 64,
}
# Pointer typedefs of that vocabulary: name -> (base, const).
POINTER_TYPEDEFS = {"LPCGUID": "GUID", "REFGUID": "GUID", "REFIID": "GUID", "REFCLSID": "GUID"}

# pILHeader has no size_is in the IDL; its count is the next parameter, cbILHeader, as the
# header's documentation of DynamicMethodJITCompilationStarted says.
# Likewise InitializeForAttach's client data (`void *`), cbClientData bytes long.
EXTRA_COUNTS = {
    ("DynamicMethodJITCompilationStarted", "pILHeader"): "cbILHeader",
    ("InitializeForAttach", "pvClientData"): "cbClientData",
}


def die(msg):
    sys.exit(f"gen_logger.py: {msg}")


def strip_comments_keep_attrs(text):
    """MIDL puts direction attributes in comments: keep them as `@attrs(...)` markers."""
    def attrs(m):
        return " @attrs[" + ",".join(re.findall(r"\[([^\]]*)\]", m.group(1))).replace(" ", "") + "] "

    text = re.sub(r"/\*\s*(\[[^*]*\])\s*\*/", attrs, text)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def split_top(text, sep=","):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def vtable_slots(header, iface):
    m = re.search(r"typedef struct %sVtbl\s*\{(.*?)\}\s*%sVtbl;" % (iface, iface), header, re.S)
    if not m:
        die(f"no {iface}Vtbl in the header")
    body = re.sub(r"DECLSPEC_XFGVIRT\([^)]*\)", " ", m.group(1))
    slots = []
    for sm in re.finditer(r"\(\s*STDMETHODCALLTYPE\s*\*\s*(\w+)\s*\)\s*\((.*?)\)\s*;", body, re.S):
        name, params = sm.group(1), []
        for raw in split_top(sm.group(2)):
            p = parse_param(raw)
            if p["name"] != "This":
                params.append(p)
        slots.append((name, params))
    return slots


def parse_param(raw):
    attrs = set()
    for a in re.findall(r"@attrs\[([^\]]*)\]", raw):
        attrs.update(a.split(","))
    raw = re.sub(r"@attrs\[[^\]]*\]", " ", raw)
    sal_count = None
    sal = re.search(r"_In_reads_(?:opt_)?\((\w+)\)", raw)
    if sal:
        sal_count = sal.group(1)
    raw = re.sub(r"\b_\w+_(?:\([^)]*\))?", " ", raw)  # SAL annotations
    is_array = "[" in raw
    raw = re.sub(r"\[\s*\]", " ", raw)
    stars = raw.count("*")
    words = raw.replace("*", " ").split()
    const = "const" in words or "CONST" in words
    words = [w for w in words if w not in ("const", "CONST")]
    if len(words) != 2:
        die(f"cannot read the parameter {raw!r}")
    return {"type": words[0], "name": words[1], "stars": stars, "array": is_array, "const": const,
            "attrs": attrs, "sal_count": sal_count}


def typedefs(texts):
    """name -> what it stands for (another name), and the set of enum type names."""
    aliases, enums = {}, set()
    for text in texts:
        for m in re.finditer(r"typedef\s+(const\s+)?(\w+)\s*(\*?)\s*(\w+)\s*;", text):
            aliases[m.group(4)] = (m.group(2), bool(m.group(1)), m.group(3) == "*")
        for m in re.finditer(r"typedef\s+(?:@attrs\[[^\]]*\]\s*)?enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", text, re.S):
            enums.add(m.group(1))
    return aliases, enums


def interface_iid(header, iface):
    m = re.search(r'MIDL_INTERFACE\("([0-9A-Fa-f-]{36})"\)\s*%s\s*:' % iface, header)
    if not m:
        die(f"no IID for {iface}")
    return m.group(1)


def idl_counts(idl):
    """(method, param) -> count parameter, from [size_is(x)] / [length_is(x)] in the callbacks."""
    counts = {}
    idl = re.sub(r"//[^\n]*", " ", idl)
    for im in re.finditer(r"interface\s+ICorProfilerCallback\d*\s*:\s*\w+\s*\{(.*?)\n\}", idl, re.S):
        for mm in re.finditer(r"HRESULT\s+(\w+)\s*\((.*?)\)\s*;", im.group(1), re.S):
            for raw in split_top(mm.group(2)):
                c = re.search(r"(?:size_is|length_is)\((\w+)\)", raw)
                name = re.search(r"(\w+)\s*(?:\[\s*\])?\s*$", raw.strip())
                if c and name:
                    counts[(mm.group(1), name.group(1))] = c.group(1)
    return counts


class Types:
    def __init__(self, aliases, enums):
        self.aliases, self.enums = aliases, enums

    def resolve(self, name):
        """(base name, pointer added by typedefs, const) for a type name."""
        ptr, const = 0, False
        for _ in range(20):
            if name in POINTER_TYPEDEFS:
                return POINTER_TYPEDEFS[name], ptr + 1, True
            if name in BASE_SCALARS or name in self.enums or name == "GUID":
                return name, ptr, const
            if name not in self.aliases:
                return name, ptr, const  # an interface, IUnknown, void
            name, c, p = self.aliases[name]
            const |= c
            ptr += p
        die(f"typedef loop at {name}")

    def bits(self, base):
        if base in self.enums:
            return 32
        return BASE_SCALARS.get(base)


def classify(method, params, types, counts):
    """Each parameter's shape: scalar, out, text, guid, array, or ptr."""
    shapes = []
    for p in params:
        base, tptr, tconst = types.resolve(p["type"])
        ptr = p["stars"] + tptr + (1 if p["array"] else 0)
        const = p["const"] or tconst
        count = counts.get((method, p["name"])) or p["sal_count"] or EXTRA_COUNTS.get((method, p["name"]))
        bits = types.bits(base)
        if base == "void" and count is not None:
            bits = 8  # counted bytes
        if ptr == 0:
            if bits is None:
                die(f"{method}.{p['name']}: no width for {p['type']}")
            shape = ("scalar", bits)
        elif ptr == 1 and base == "WCHAR":
            shape = ("text", count)
        elif ptr == 1 and base == "GUID":
            shape = ("guid",)
        elif ptr == 1 and count is not None and bits is not None:
            shape = ("array", bits, count)
        elif ptr == 1 and bits is not None and not const and "in" not in p["attrs"]:
            shape = ("out",)
        elif ptr == 1 and bits is not None and "out" in p["attrs"]:
            shape = ("out",)
        elif ptr >= 1:
            shape = ("ptr",)
        else:
            die(f"{method}.{p['name']}: unknown shape")
        shapes.append((p, shape))
    return shapes


def c_type(shape):
    kind = shape[0]
    if kind == "scalar":
        return {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uintptr_t"}[shape[1]]
    if kind == "text":
        return "const uint16_t *"
    if kind == "guid":
        return "const GUID *"
    if kind == "array":
        return {8: "const uint8_t *", 16: "const uint16_t *", 32: "const uint32_t *", 64: "const uintptr_t *"}[shape[1]]
    if kind == "out":
        return "void *"
    return "void *"


PRELUDE = r"""// @generated by tests/oracle/gen_logger.py from corprof.h and corprof.idl: do not edit.
// The C callback logger of the differential oracle (tests/runtime/oracle.rs).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int32_t HRESULT;
typedef struct { uint32_t d1; uint16_t d2, d3; uint8_t d4[8]; } GUID;
#define S_OK ((HRESULT)0)
#define E_NOINTERFACE ((HRESULT)0x80004002)
#define E_POINTER ((HRESULT)0x80004003)
#define E_FAIL ((HRESULT)0x80004005)
#define E_INVALIDARG ((HRESULT)0x80070057)
#define CLASS_E_CLASSNOTAVAILABLE ((HRESULT)0x80040111)
#define CLASS_E_NOAGGREGATION ((HRESULT)0x80040110)

static int parse_guid(const char *s, GUID *g) {
    unsigned int d[11];
    if (sscanf(s, "%8x-%4x-%4x-%2x%2x-%2x%2x%2x%2x%2x%2x", &d[0], &d[1], &d[2], &d[3], &d[4], &d[5],
               &d[6], &d[7], &d[8], &d[9], &d[10]) != 11)
        return 0;
    g->d1 = d[0]; g->d2 = (uint16_t)d[1]; g->d3 = (uint16_t)d[2];
    for (int i = 0; i < 8; i++) g->d4[i] = (uint8_t)d[3 + i];
    return 1;
}

static GUID guid_of(const char *s) { GUID g; if (!parse_guid(s, &g)) abort(); return g; }

/* ---- the line format ---- */
typedef struct { char *p; size_t n, cap; } Line;

static void put(Line *l, const char *s, size_t n) {
    if (l->n + n + 1 > l->cap) {
        size_t cap = l->cap ? l->cap : 256;
        while (l->n + n + 1 > cap) cap *= 2;
        char *p = realloc(l->p, cap);
        if (!p) abort();
        l->p = p; l->cap = cap;
    }
    memcpy(l->p + l->n, s, n);
    l->n += n;
}
static void puts_(Line *l, const char *s) { put(l, s, strlen(s)); }
static void put_hex(Line *l, uint64_t v) { char b[24]; int n = snprintf(b, sizeof b, "0x%llx", (unsigned long long)v); put(l, b, (size_t)n); }
static void put_ptr(Line *l, const void *p) { puts_(l, p ? "ptr" : "null"); }
static void put_text(Line *l, const uint16_t *s, int counted, uint64_t n) {
    if (!s) { puts_(l, "null"); return; }
    puts_(l, "\"");
    for (uint64_t i = 0; counted ? i < n : s[i] != 0; i++) {
        uint16_t u = s[i];
        if (u >= 0x20 && u <= 0x7e && u != '"' && u != '\\') { char c = (char)u; put(l, &c, 1); }
        else { char b[8]; snprintf(b, sizeof b, "\\u%04x", u); put(l, b, 6); }
    }
    puts_(l, "\"");
}
static void put_guid(Line *l, const GUID *g) {
    if (!g) { puts_(l, "null"); return; }
    char b[40];
    snprintf(b, sizeof b, "{%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X}", g->d1, g->d2, g->d3,
             g->d4[0], g->d4[1], g->d4[2], g->d4[3], g->d4[4], g->d4[5], g->d4[6], g->d4[7]);
    puts_(l, b);
}
/* A counted array: `[]` when the count is 0, `null` for a null pointer with a count. */
#define PUT_ARRAY(l, arr, count, cast)                              \
    do {                                                             \
        uint64_t n_ = (uint64_t)(count);                             \
        if (n_ == 0) { puts_(l, "[]"); break; }                      \
        if (!(arr)) { puts_(l, "null"); break; }                     \
        puts_(l, "[");                                               \
        for (uint64_t i_ = 0; i_ < n_; i_++) {                       \
            if (i_) puts_(l, ",");                                   \
            put_hex(l, (uint64_t)(cast)(arr)[i_]);                   \
        }                                                            \
        puts_(l, "]");                                               \
    } while (0)

static int g_fd = -1;
static pthread_once_t g_open_once = PTHREAD_ONCE_INIT;
static void open_out(void) {
    const char *path = getenv("CORPROF_LOG_C_OUT");
    if (!path) path = getenv("CORPROF_LOG_OUT");
    if (path) g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void line_start(Line *l, const char *name) {
    char b[32];
    int n = snprintf(b, sizeof b, "%ld ", (long)syscall(SYS_gettid));
    l->p = NULL; l->n = l->cap = 0;
    put(l, b, (size_t)n);
    puts_(l, name);
}
static void arg(Line *l) { puts_(l, " "); }
/* One write(2) per line on an O_APPEND file: lines from threads never mix. */
static void line_end(Line *l) {
    puts_(l, "\n");
    pthread_once(&g_open_once, open_out);
    if (g_fd >= 0 && write(g_fd, l->p, l->n) != (ssize_t)l->n) { /* nothing to do */ }
    free(l->p);
}

/* In tee mode, what the second profiler answered: every callback of the Rust logger succeeds, so
   anything but S_OK (a thunk that lost the result, or refused the call) gets a line of its own,
   which the Rust logger's file lacks. */
static void tee_result(const char *name, HRESULT hr) {
    if (hr == S_OK) return;
    Line l;
    line_start(&l, "TeeFailed");
    arg(&l); puts_(&l, name);
    arg(&l); put_hex(&l, (uint64_t)(uint32_t)hr);
    line_end(&l);
}

static int env_hex(const char *key, uint32_t *out) {
    const char *s = getenv(key);
    *out = 0;
    if (!s || !*s) return 1;
    char *end;
    unsigned long v = strtoul(s, &end, 16);
    if (*end) return 0;
    *out = (uint32_t)v;
    return 1;
}

static int notification_only(void) {
    const char *s = getenv("CORPROF_LOG_C_NOTIFICATION");
    if (!s) s = getenv("CORPROF_LOG_NOTIFICATION");
    return s && strcmp(s, "1") == 0;
}

/* ---- COM ---- */
typedef struct Logger { void **vtbl; volatile long refs; void *tee; } Logger;
typedef HRESULT (*QueryInterfaceFn)(void *, const GUID *, void **);
typedef uint32_t (*AddRefFn)(void *);
typedef uint32_t (*ReleaseFn)(void *);
typedef HRESULT (*DllGetClassObjectFn)(const GUID *, const GUID *, void **);
typedef HRESULT (*CreateInstanceFn)(void *, void *, const GUID *, void **);
#define VTBL(obj) (*(void ***)(obj))

static const char IID_IUnknown_S[] = "00000000-0000-0000-C000-000000000046";
static const char IID_IClassFactory_S[] = "00000001-0000-0000-C000-000000000046";
"""


# The low mask bit each callback corprof tracks for itself hangs on (corprof's `unloads`).
TRACKED_BITS = {
    "AssemblyLoadStarted": 0x8,
    "AssemblyLoadFinished": 0x8,
    "AssemblyUnloadStarted": 0x8,
    "AssemblyUnloadFinished": 0x8,
    "ModuleLoadStarted": 0x4,
    "ModuleLoadFinished": 0x4,
    "ModuleUnloadStarted": 0x4,
    "ModuleUnloadFinished": 0x4,
    "ModuleAttachedToAssembly": 0x4,
}


def main():
    if len(sys.argv) != 3:
        die("usage: gen_logger.py CORPROF_H CORPROF_IDL")
    header = strip_comments_keep_attrs(open(sys.argv[1], encoding="utf-8", errors="replace").read())
    idl = open(sys.argv[2], encoding="utf-8", errors="replace").read()
    newest = max(int(n or 1) for n in re.findall(r"typedef struct ICorProfilerCallback(\d*)Vtbl", header))
    cb_iface = "ICorProfilerCallback" + (str(newest) if newest > 1 else "")
    slots = vtable_slots(header, cb_iface)
    info_slots = [n for n, _ in vtable_slots(header, "ICorProfilerInfo12")]
    aliases, enums = typedefs([header])
    types = Types(aliases, enums)
    counts = idl_counts(idl)
    callback_iids = [interface_iid(header, "ICorProfilerCallback" + (str(v) if v > 1 else "")) for v in range(1, newest + 1)]
    info12_iid = interface_iid(header, "ICorProfilerInfo12")

    if [n for n, _ in slots[:3]] != ["QueryInterface", "AddRef", "Release"]:
        die("the callback vtable does not start with IUnknown")
    out = [PRELUDE]
    out.append(f'static const char CLSID_S[] = "{CLSID}";\n')
    out.append(f'static const char IID_ICorProfilerInfo12_S[] = "{info12_iid}";\n')
    out.append("static const char *const CALLBACK_IIDS[] = {%s};\n" % ", ".join(f'"{i}"' for i in callback_iids))
    for slot in ("SetEventMask2", "GetFunctionInfo", "RequestReJIT", "RequestProfilerDetach", "EventPipeStartSession",
                 "InitializeCurrentThread"):
        out.append(f"#define SLOT_{slot} {info_slots.index(slot)}\n")
    out.append("""
static int is_callback_iid(const GUID *riid) {
    for (size_t i = 0; i < sizeof CALLBACK_IIDS / sizeof *CALLBACK_IIDS; i++) {
        GUID g = guid_of(CALLBACK_IIDS[i]);
        if (memcmp(&g, riid, sizeof g) == 0) return 1;
    }
    GUID unk = guid_of(IID_IUnknown_S);
    return memcmp(&unk, riid, sizeof unk) == 0;
}

static HRESULT cb_QueryInterface(Logger *self, const GUID *riid, void **ppv) {
    if (!ppv || !riid) return E_POINTER;
    if (!is_callback_iid(riid)) { *ppv = NULL; return E_NOINTERFACE; }
    __atomic_add_fetch(&self->refs, 1, __ATOMIC_SEQ_CST);
    *ppv = self;
    return S_OK;
}
static uint32_t cb_AddRef(Logger *self) { return (uint32_t)__atomic_add_fetch(&self->refs, 1, __ATOMIC_SEQ_CST); }
/* The logger lives until the process ends: the runtime may call it from any thread at exit. */
static uint32_t cb_Release(Logger *self) { return (uint32_t)__atomic_sub_fetch(&self->refs, 1, __ATOMIC_SEQ_CST); }

/* The runtime's info object (ICorProfilerInfo12), kept from Initialize for the requests below. */
static void *g_info;
/* The low mask this logger set (what it logs of the callbacks corprof keeps set for itself). */
static uint32_t g_low;
static volatile int g_detached;
/* The function of this thread's last managed-to-unmanaged transition: the P/Invoke method. */
static __thread uintptr_t t_last_pinvoke;

typedef struct { const uint16_t *provider; uint64_t keywords; uint32_t level; const uint16_t *filter; } ProviderConfig;

/* Starts an EventPipe session with one provider (all keywords, verbose) if CORPROF_LOG_EVENTPIPE names one. */
static HRESULT start_event_pipe(void *info) {
    const char *name = getenv("CORPROF_LOG_EVENTPIPE");
    if (!name || !*name) return S_OK;
    uint16_t wide[256];
    size_t n = strlen(name);
    if (n >= 256) return E_INVALIDARG;
    for (size_t i = 0; i <= n; i++) wide[i] = (uint8_t)name[i];
    ProviderConfig config = {wide, ~(uint64_t)0, 5, NULL};
    uint64_t session = 0;
    return ((HRESULT (*)(void *, uint32_t, ProviderConfig *, int32_t, uint64_t *))VTBL(info)[SLOT_EventPipeStartSession])(
        info, 1, &config, 0, &session);
}

/* Sets the two masks from the environment on the runtime's info object, keeps the object, and
   starts the EventPipe session asked for. */
static HRESULT set_masks(void *info_unk) {
    uint32_t low, high;
    if (!env_hex("CORPROF_EVENT_MASK", &low) || !env_hex("CORPROF_EVENT_MASK_HIGH", &high)) return E_INVALIDARG;
    GUID iid = guid_of(IID_ICorProfilerInfo12_S);
    void *info = NULL;
    HRESULT hr = ((QueryInterfaceFn)VTBL(info_unk)[0])(info_unk, &iid, &info);
    if (hr < 0) return hr;
    g_low = low;
    hr = ((HRESULT (*)(void *, uint32_t, uint32_t))VTBL(info)[SLOT_SetEventMask2])(info, low, high);
    if (hr >= 0) hr = start_event_pipe(info);
    if (hr < 0) { ((ReleaseFn)VTBL(info)[2])(info); return hr; }
    g_info = info;
    return hr;
}

/* The profiler's requests are "synchronous" calls, which the runtime refuses
   (CORPROF_E_UNSUPPORTED_CALL_SEQUENCE) on the app's thread inside a P/Invoke: they run on a
   thread of the logger's own, unknown to the runtime, which the caller waits for. */
typedef struct { uintptr_t pinvoke; uint32_t token, bad_token; int detach; HRESULT hr; } Request;

static void *run_request(void *arg) {
    Request *r = arg;
    ((HRESULT (*)(void *))VTBL(g_info)[SLOT_InitializeCurrentThread])(g_info);
    if (r->detach) {
        r->hr = ((HRESULT (*)(void *, uint32_t))VTBL(g_info)[SLOT_RequestProfilerDetach])(g_info, 100);
        return NULL;
    }
    uintptr_t class_id = 0, module = 0;
    uint32_t pinvoke_token = 0;
    r->hr = ((HRESULT (*)(void *, uintptr_t, uintptr_t *, uintptr_t *, uint32_t *))VTBL(g_info)[SLOT_GetFunctionInfo])(
        g_info, r->pinvoke, &class_id, &module, &pinvoke_token);
    if (r->hr < 0) return NULL;
    uintptr_t modules[2] = {module, module};
    uint32_t tokens[2] = {r->token, r->bad_token};
    r->hr = ((HRESULT (*)(void *, uint32_t, uintptr_t *, uint32_t *))VTBL(g_info)[SLOT_RequestReJIT])(g_info, 2, modules, tokens);
    return NULL;
}

static HRESULT request(Request *r) {
    if (!g_info) return E_FAIL;
    pthread_t worker;
    if (pthread_create(&worker, NULL, run_request, r) != 0) return E_FAIL;
    pthread_join(worker, NULL);
    return r->hr;
}

/* For the app: ReJIT `token` of the module that declares the calling P/Invoke method (seen in
   ManagedToUnmanagedTransition, so the mask needs CODE_TRANSITIONS), and `bad_token`, which the
   runtime answers with ReJITError. */
__attribute__((visibility("default"))) HRESULT oracle_request_rejit(uint32_t token, uint32_t bad_token) {
    if (!t_last_pinvoke) return E_FAIL;
    Request r = {t_last_pinvoke, token, bad_token, 0, S_OK};
    return request(&r);
}

/* For the app: asks the runtime to detach this profiler (ProfilerDetachSucceeded follows). */
__attribute__((visibility("default"))) HRESULT oracle_request_detach(void) {
    Request r = {0, 0, 0, 1, S_OK};
    return request(&r);
}

__attribute__((visibility("default"))) int oracle_detached(void) { return g_detached; }

/* For the app waiting to be attached to: whether ProfilerAttachComplete has come. */
static volatile int g_attached;
__attribute__((visibility("default"))) int oracle_attached(void) { return g_attached; }
""")
    names = []
    for index, (name, params) in enumerate(slots):
        if index < 3:
            continue
        names.append(name)
        shapes = classify(name, params, types, counts)
        decl = ", ".join(f"{c_type(s)} p{i}" for i, (_, s) in enumerate(shapes))
        sig = "Logger *self" + (", " + decl if decl else "")
        pnames = {p["name"]: f"p{i}" for i, (p, _) in enumerate(shapes)}
        body = [f'    Line l; line_start(&l, "{name}");']
        # corprof keeps MODULE_LOADS and ASSEMBLY_LOADS set for its own bookkeeping: in tee mode
        # the Rust logger adds them to the runtime's mask, and its own methods hear those
        # callbacks only if its mask asked. The C logger logs them on the same terms (and still
        # passes them on, for corprof to see).
        bit = TRACKED_BITS.get(name)
        if bit:
            body[0] = f'    Line l; int logged = (g_low & {bit:#x}) != 0; if (logged) line_start(&l, "{name}");'
        for i, (p, s) in enumerate(shapes):
            v = f"p{i}"
            kind = s[0]
            if kind == "scalar":
                cast = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uintptr_t"}[s[1]]
                body.append(f"    arg(&l); put_hex(&l, (uint64_t)({cast}){v});")
            elif kind == "text":
                if s[1]:
                    body.append(f"    arg(&l); put_text(&l, {v}, 1, (uint64_t){pnames[s[1]]});")
                else:
                    body.append(f"    arg(&l); put_text(&l, {v}, 0, 0);")
            elif kind == "guid":
                body.append(f"    arg(&l); put_guid(&l, {v});")
            elif kind == "array":
                cast = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uintptr_t"}[s[1]]
                if s[2] not in pnames:
                    die(f"{name}.{p['name']}: count {s[2]} is not a parameter")
                body.append(f"    arg(&l); PUT_ARRAY(&l, {v}, {pnames[s[2]]}, {cast});")
            elif kind == "out":
                body.append('    arg(&l); puts_(&l, "out");')
            else:
                body.append(f"    arg(&l); put_ptr(&l, {v});")
        if bit:
            # Every argument write above is guarded the same way.
            body = [body[0]] + [b.replace("    arg(&l);", "    if (logged) { arg(&l);", 1) + (" }" if b.startswith("    arg(&l);") else "") for b in body[1:]]
            body.append("    if (logged) line_end(&l);")
        else:
            body.append("    line_end(&l);")
        result = "S_OK"
        if name in ("Initialize", "InitializeForAttach"):
            body.append("    HRESULT hr = set_masks(p0);")
            result = "hr"
        if name == "LoadAsNotificationOnly":
            body.append("    if (p0 && notification_only()) *(int32_t *)p0 = 1;")
        if name == "ManagedToUnmanagedTransition":
            body.append("    t_last_pinvoke = p0;")
        if name == "ProfilerDetachSucceeded":
            body.append("    g_detached = 1;")
        if name == "ProfilerAttachComplete":
            body.append("    g_attached = 1;")
        args = "".join(f", p{i}" for i in range(len(shapes)))
        ftype = "HRESULT (*)(void *" + "".join(f", {c_type(s)}" for _, s in shapes) + ")"
        body.append(f"    if (self->tee) tee_result(\"{name}\", (({ftype})VTBL(self->tee)[{index}])(self->tee{args}));")
        body.append(f"    return {result};")
        out.append(f"static HRESULT cb_{name}({sig}) {{\n" + "\n".join(body) + "\n}\n")
    out.append("static void *VTABLE[] = {\n    (void *)cb_QueryInterface, (void *)cb_AddRef, (void *)cb_Release,\n")
    out.extend(f"    (void *)cb_{n},\n" for n in names)
    out.append("};\n")
    out.append(f"const char *const CORPROF_CLOG_CALLBACKS[] = {{{', '.join(chr(34) + n + chr(34) for n in names)}, 0}};\n")
    out.append(r"""
/* Tee mode: the second profiler's callback object, from CORPROF_LOG_TEE=/path/lib.so{CLSID}. */
static void *load_tee(void) {
    const char *spec = getenv("CORPROF_LOG_TEE");
    if (!spec || !*spec) return NULL;
    const char *brace = strchr(spec, '{');
    GUID clsid;
    if (!brace || !parse_guid(brace + 1, &clsid)) { fprintf(stderr, "c-logger: bad CORPROF_LOG_TEE %s\n", spec); return NULL; }
    char path[4096];
    size_t n = (size_t)(brace - spec);
    if (n >= sizeof path) return NULL;
    memcpy(path, spec, n); path[n] = 0;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "c-logger: cannot load %s: %s\n", path, dlerror()); return NULL; }
    DllGetClassObjectFn get = (DllGetClassObjectFn)dlsym(lib, "DllGetClassObject");
    if (!get) { fprintf(stderr, "c-logger: no DllGetClassObject in %s\n", path); return NULL; }
    GUID iid_factory = guid_of(IID_IClassFactory_S);
    void *factory = NULL;
    if (get(&clsid, &iid_factory, &factory) < 0 || !factory) { fprintf(stderr, "c-logger: no class factory in %s\n", path); return NULL; }
    GUID iid_cb = guid_of(CALLBACK_IIDS[sizeof CALLBACK_IIDS / sizeof *CALLBACK_IIDS - 1]);
    void *obj = NULL;
    HRESULT hr = ((CreateInstanceFn)VTBL(factory)[3])(factory, NULL, &iid_cb, &obj);
    ((ReleaseFn)VTBL(factory)[2])(factory);
    if (hr < 0 || !obj) { fprintf(stderr, "c-logger: CreateInstance failed: 0x%x\n", (unsigned)hr); return NULL; }
    return obj;
}

/* ---- class factory ---- */
typedef struct { void **vtbl; } Factory;
static HRESULT f_QueryInterface(Factory *self, const GUID *riid, void **ppv) {
    GUID unk = guid_of(IID_IUnknown_S), cf = guid_of(IID_IClassFactory_S);
    if (!ppv) return E_POINTER;
    if (memcmp(riid, &unk, sizeof unk) && memcmp(riid, &cf, sizeof cf)) { *ppv = NULL; return E_NOINTERFACE; }
    *ppv = self;
    return S_OK;
}
static uint32_t f_AddRef(Factory *self) { (void)self; return 2; }
static uint32_t f_Release(Factory *self) { (void)self; return 1; }
static HRESULT f_CreateInstance(Factory *self, void *outer, const GUID *riid, void **ppv) {
    (void)self;
    if (!ppv) return E_POINTER;
    *ppv = NULL;
    if (outer) return CLASS_E_NOAGGREGATION;
    Logger *logger = calloc(1, sizeof *logger);
    if (!logger) return E_FAIL;
    logger->vtbl = VTABLE;
    logger->refs = 0;
    logger->tee = load_tee();
    if (getenv("CORPROF_LOG_TEE") && !logger->tee) { free(logger); return E_FAIL; }
    HRESULT hr = cb_QueryInterface(logger, riid, ppv);
    if (hr < 0) free(logger);
    return hr;
}
static HRESULT f_LockServer(Factory *self, int lock) { (void)self; (void)lock; return S_OK; }
static void *FACTORY_VTABLE[] = {(void *)f_QueryInterface, (void *)f_AddRef, (void *)f_Release,
                                 (void *)f_CreateInstance, (void *)f_LockServer};
static Factory FACTORY = {FACTORY_VTABLE};

__attribute__((visibility("default"))) HRESULT DllGetClassObject(const GUID *rclsid, const GUID *riid, void **ppv) {
    if (!rclsid || !riid || !ppv) return E_POINTER;
    GUID mine = guid_of(CLSID_S);
    if (memcmp(rclsid, &mine, sizeof mine)) return CLASS_E_CLASSNOTAVAILABLE;
    return f_QueryInterface(&FACTORY, riid, ppv);
}
""")
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
