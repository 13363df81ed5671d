//! The generated callback thunks of the real corprof.h, called the way CoreCLR calls them
//! (`DllGetClassObject`, the class factory, raw vtable slots):
//! - one test per pointer shape the header's callbacks use (in, interface, BOOL out, text,
//!   counted array, optional in, optional text), each passing exactly that one pointer as null
//!   with every other argument valid: a required pointer is refused with `E_POINTER` before the
//!   profiler's method runs, an optional one arrives as `None`; `before_callback` sees the call
//!   either way. (`Out<T>` and `&mut T` appear in no callback of this header: tests/it/goldens.rs
//!   proves them on the `directions` fixture.)
//! - every slot of the newest callback vtable runs the thunk the header declares for that slot,
//!   the slot table read from the header's own C vtable form, not from corprof-gen.

use corprof::interfaces::*;
use corprof::types::*;
use corprof::{
    CALLBACK_IIDS, Callback, CallbackClass, CorProfilerCallback, GUID, HIGHEST_CALLBACK, HResult, IUnknown, Interface,
    Out, ProfilerInfo, WStr,
};
use std::ffi::c_void;
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

const CLSID: &str = "0B5A9E41-7C3D-4F28-9A61-3E5D7C9B1F24";

/// Records what the thunks let through: `before_callback`'s identity, and a line from each
/// method a shape test calls (the rest keep their default bodies).
#[derive(Default)]
struct Shapes {
    before: Mutex<Vec<Callback>>,
    reached: Mutex<Vec<String>>,
}

impl Shapes {
    fn reach(&self, line: String) -> corprof::Result<()> {
        self.reached.lock().unwrap().push(line);
        Ok(())
    }
}

/// The low event mask `Shapes::initialize` sets when it is handed an ICorProfilerInfo (the
/// other tests hand it an object that answers none).
static MASK: AtomicU32 = AtomicU32::new(0);

impl CorProfilerCallback for Shapes {
    fn initialize(&self, unknown: &IUnknown) -> corprof::Result<()> {
        if let Ok(info) = ProfilerInfo::from_unknown(unknown) {
            info.set_event_mask(COR_PRF_MONITOR(MASK.load(SeqCst)))?;
        }
        Ok(())
    }

    fn before_callback(&self, callback: Callback) {
        self.before.lock().unwrap().push(callback);
    }

    fn module_load_started(&self, module: ModuleID) -> corprof::Result<()> {
        self.reach(format!("module {module}"))
    }

    fn remoting_client_sending_message(&self, cookie: &GUID, is_async: bool) -> corprof::Result<()> {
        self.reach(format!("cookie {cookie} {is_async}"))
    }

    // Never writes its out: with the null check gone a null `should_inline` is then let through
    // and seen here, not a crash.
    fn jit_inlining(&self, _caller: FunctionID, callee: FunctionID, _should: Out<'_, bool>) -> corprof::Result<()> {
        self.reach(format!("inlining {callee:?}"))
    }

    fn get_assembly_references(
        &self,
        assembly_path: WStr<'_>,
        _provider: &ICorProfilerAssemblyReferenceProvider,
    ) -> corprof::Result<()> {
        self.reach(format!("references {assembly_path}"))
    }

    fn moved_references(&self, old: &[ObjectID], new: &[ObjectID], len: &[ULONG]) -> corprof::Result<()> {
        self.reach(format!("moved {old:?} {new:?} {len:?}"))
    }

    fn thread_name_changed(&self, _thread: ThreadID, name: Option<WStr<'_>>) -> corprof::Result<()> {
        self.reach(format!("renamed {:?}", name.map(|n| n.to_string())))
    }

    fn event_pipe_event_delivered(
        &self,
        _provider: EVENTPIPE_PROVIDER,
        event_id: DWORD,
        _event_version: DWORD,
        _metadata_blob: &[BYTE],
        event_data: &[BYTE],
        activity_id: Option<&GUID>,
        related_activity_id: Option<&GUID>,
        _event_thread: ThreadID,
        _stack_frames: &[UINT_PTR],
    ) -> corprof::Result<()> {
        let guid = |g: Option<&GUID>| g.map(|g| g.to_string());
        self.reach(format!("event {event_id} {event_data:?} {:?} {:?}", guid(activity_id), guid(related_activity_id)))
    }
}

corprof::export_profiler!(Shapes, "0B5A9E41-7C3D-4F28-9A61-3E5D7C9B1F24");

unsafe extern "system" {
    fn DllGetClassObject(rclsid: *const GUID, riid: *const GUID, ppv: *mut *mut c_void) -> corprof::HRESULT;
}

/// A profiler created through the exported entry points, released when dropped.
struct Profiler(*mut ICorProfilerCallback11);

impl Profiler {
    fn create() -> Profiler {
        let mut factory: *mut c_void = null_mut();
        // SAFETY: valid GUIDs and a valid out pointer.
        let hr = unsafe { DllGetClassObject(&GUID::parse(CLSID), &corprof::imp::IID_ICLASSFACTORY, &mut factory) };
        assert_eq!(hr, 0);
        // SAFETY: `factory` is the live class factory just returned.
        let vt = unsafe { &**(factory as *const *const corprof::imp::IClassFactory_Vtbl) };
        let mut obj: *mut c_void = null_mut();
        let newest = CALLBACK_IIDS.last().expect("the header declares callbacks");
        // SAFETY: a live factory, no outer object, a valid IID and out pointer; the factory's
        // only reference is released after its one use.
        unsafe {
            assert_eq!((vt.CreateInstance)(factory.cast(), null_mut(), newest, &mut obj), 0);
            (vt.base__.Release)(factory.cast());
        }
        Profiler(obj.cast())
    }

    fn this(&self) -> *mut ICorProfilerCallback11 {
        self.0
    }

    fn vtbl(&self) -> &ICorProfilerCallback11_Vtbl {
        // SAFETY: `self.0` is alive until `drop`.
        unsafe { &*self.0 }.vtable()
    }

    fn value(&self) -> &Shapes {
        // SAFETY: `DllGetClassObject`'s factory makes `ComObject<CallbackClass<Shapes>>` objects,
        // and this one is alive until `drop`.
        unsafe { corprof::imp::ComObject::<CallbackClass<Shapes>>::value(self.0.cast()) }
    }

    /// What `before_callback` saw and what the methods reached, since the last call.
    fn take(&self) -> (Vec<Callback>, Vec<String>) {
        let v = self.value();
        (std::mem::take(&mut v.before.lock().unwrap()), std::mem::take(&mut v.reached.lock().unwrap()))
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        // SAFETY: releases the one reference `create` gave; the pointer is not used again.
        unsafe { (*(self.0 as *const corprof::IUnknown)).Release() };
    }
}

fn oid(raw: usize) -> ObjectID {
    // SAFETY: the ID only reaches this test's profiler, never a runtime.
    unsafe { ObjectID::from_raw(raw) }
}

fn fid(raw: usize) -> FunctionID {
    // SAFETY: as for `oid`.
    unsafe { FunctionID::from_raw(raw) }
}

/// Asserts a call was refused before the profiler's method ran, with `before_callback` seeing it.
fn refused(p: &Profiler, hr: corprof::HRESULT, callback: Callback) {
    assert_eq!(HResult(hr), HResult::E_POINTER, "{} with a null required pointer", callback.name());
    assert_eq!(p.take(), (vec![callback], vec![]), "seen by before_callback, the method not run");
}

/// Asserts a call went through and the method saw `line`.
fn reached(p: &Profiler, hr: corprof::HRESULT, callback: Callback, line: &str) {
    assert_eq!(HResult(hr), HResult::S_OK, "{}", callback.name());
    assert_eq!(p.take(), (vec![callback], vec![line.to_string()]));
}

#[test]
fn a_null_in_pointer_is_refused() {
    let p = Profiler::create();
    let f = p.vtbl().base__.base__.base__.base__.base__.base__.base__.base__.base__.base__.RemotingClientSendingMessage;
    let cookie = GUID::parse("01234567-89AB-CDEF-0123-456789ABCDEF");
    // SAFETY: `p` is live; the cookie is a valid GUID or, on purpose, null.
    unsafe {
        reached(
            &p,
            f(p.this().cast(), &cookie as *const GUID as *mut GUID, 1),
            Callback::RemotingClientSendingMessage,
            "cookie 01234567-89AB-CDEF-0123-456789ABCDEF true",
        );
        refused(&p, f(p.this().cast(), null_mut(), 1), Callback::RemotingClientSendingMessage);
    }
}

#[test]
fn a_null_bool_out_is_refused() {
    let p = Profiler::create();
    let f = p.vtbl().base__.base__.base__.base__.base__.base__.base__.base__.base__.base__.JITInlining;
    let mut should: BOOL = 7;
    // SAFETY: `p` is live; the out is a valid BOOL or, on purpose, null.
    unsafe {
        reached(&p, f(p.this().cast(), fid(1), fid(2), &mut should), Callback::JITInlining, "inlining FunctionID(0x2)");
        refused(&p, f(p.this().cast(), fid(1), fid(2), null_mut()), Callback::JITInlining);
    }
}

#[test]
fn a_null_string_is_refused_and_so_is_a_null_interface() {
    let p = Profiler::create();
    let f = p.vtbl().base__.base__.base__.base__.base__.GetAssemblyReferences;
    let path: Vec<u16> = "/app/App.dll\0".encode_utf16().collect();
    // Never called by the profiler above: any live, non-null pointer stands for the provider.
    let provider = p.this().cast::<ICorProfilerAssemblyReferenceProvider>();
    // SAFETY: `p` is live; the path is NUL-terminated text, the provider a live pointer, each
    // of them null once on purpose.
    unsafe {
        reached(
            &p,
            f(p.this().cast(), path.as_ptr(), provider),
            Callback::GetAssemblyReferences,
            "references /app/App.dll",
        );
        refused(&p, f(p.this().cast(), null(), provider), Callback::GetAssemblyReferences);
        refused(&p, f(p.this().cast(), path.as_ptr(), null_mut()), Callback::GetAssemblyReferences);
    }
}

#[test]
fn a_null_counted_array_is_refused_unless_it_holds_nothing() {
    // A null array with a positive count breaks the runtime's contract: refused like any other
    // null. With a zero count the runtime may pass null, and the call goes through with empty
    // slices.
    let p = Profiler::create();
    let f = p.vtbl().base__.base__.base__.base__.base__.base__.base__.base__.base__.base__.MovedReferences;
    let (old, new, len) = ([oid(1), oid(2)], [oid(10), oid(20)], [8u32, 16]);
    let (old, new, len) = (old.as_ptr().cast_mut(), new.as_ptr().cast_mut(), len.as_ptr().cast_mut());
    // SAFETY: `p` is live; each non-null array holds the 2 elements the count says.
    unsafe {
        let hr = f(p.this().cast(), 2, old, new, len);
        let all = "moved [ObjectID(0x1), ObjectID(0x2)] [ObjectID(0xa), ObjectID(0x14)] [8, 16]";
        reached(&p, hr, Callback::MovedReferences, all);
        refused(&p, f(p.this().cast(), 2, null_mut(), new, len), Callback::MovedReferences);
        refused(&p, f(p.this().cast(), 2, old, new, null_mut()), Callback::MovedReferences);
        let hr = f(p.this().cast(), 0, null_mut(), null_mut(), null_mut());
        reached(&p, hr, Callback::MovedReferences, "moved [] [] []");
    }
}

#[test]
fn a_null_optional_pointer_arrives_as_none() {
    let p = Profiler::create();
    let f = p.vtbl().base__.EventPipeEventDelivered;
    let (activity, related) =
        (GUID::parse("11111111-2222-3333-4444-555555555555"), GUID::parse("66666666-7777-8888-9999-AAAAAAAAAAAA"));
    let data = [1u8, 2, 3];
    let frames = [0x1000usize];
    let call = |activity: *const GUID| {
        // SAFETY: `p` is live; blobs, GUIDs and frames point to locals of the lengths passed.
        unsafe {
            f(
                p.this().cast(),
                EVENTPIPE_PROVIDER::NULL,
                7,
                1,
                0,
                data.as_ptr(),
                3,
                data.as_ptr(),
                activity,
                &related,
                ThreadID::NULL,
                1,
                frames.as_ptr().cast_mut(),
            )
        }
    };
    let line = |a: &str| format!("event 7 [1, 2, 3] {a} Some(\"66666666-7777-8888-9999-AAAAAAAAAAAA\")");
    reached(
        &p,
        call(&activity),
        Callback::EventPipeEventDelivered,
        &line("Some(\"11111111-2222-3333-4444-555555555555\")"),
    );
    reached(&p, call(null()), Callback::EventPipeEventDelivered, &line("None"));
}

#[test]
fn a_null_optional_string_arrives_as_none() {
    let p = Profiler::create();
    let f = p.vtbl().base__.base__.base__.base__.base__.base__.base__.base__.base__.ThreadNameChanged;
    let name: Vec<u16> = "worker".encode_utf16().collect();
    // SAFETY: `p` is live; the name holds the units counted, or is null with a zero count.
    unsafe {
        let hr = f(p.this().cast(), ThreadID::NULL, name.len() as u32, name.as_ptr().cast_mut());
        reached(&p, hr, Callback::ThreadNameChanged, "renamed Some(\"worker\")");
        let hr = f(p.this().cast(), ThreadID::NULL, 0, null_mut());
        reached(&p, hr, Callback::ThreadNameChanged, "renamed None");
    }
}

/// corprof.h as the bindings were built from it (`CORPROF_INCLUDE_DIR` at build time, else the
/// fetched `headers/`, as build.rs looks for it).
fn header() -> String {
    let dirs = option_env!("CORPROF_INCLUDE_DIR")
        .map(|v| std::env::split_paths(v).collect())
        .unwrap_or_else(|| vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("headers")]);
    let path = dirs.iter().map(|d| d.join("corprof.h")).find(|p| p.is_file()).expect("corprof.h in the include dirs");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One slot of a C vtable: the method's name and, per parameter after `This`, whether it is a
/// pointer.
type Slot = (String, Vec<bool>);

/// The slots of `iface`'s C vtable (`typedef struct <iface>Vtbl { … }`), which MIDL writes out
/// whole, inherited methods included, in vtable order.
fn c_vtable(header: &str, iface: &str) -> Vec<Slot> {
    let start = header.find(&format!("typedef struct {iface}Vtbl")).unwrap_or_else(|| panic!("no {iface}Vtbl"));
    let len = header[start..].find(&format!("}} {iface}Vtbl;")).expect("the vtable's end");
    header[start..start + len]
        .split("STDMETHODCALLTYPE *")
        .skip(1)
        .map(|entry| {
            let (name, rest) = entry.split_once(')').expect("`*Name )`");
            let params = &rest[rest.find('(').expect("(") + 1..rest.find(");").expect(");")];
            let params = without_annotations(params);
            // The first parameter is `This`.
            let pointers = params.split(',').skip(1).map(is_pointer).collect();
            (name.trim().to_string(), pointers)
        })
        .collect()
}

/// `text` without `/* … */` comments and SAL annotations (`_In_reads_opt_(cchName)`,
/// `_COM_Outptr_`), whose parentheses and commas are not the parameter list's.
fn without_annotations(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = &after[after.find("*/").expect("a closed comment") + 2..];
        } else if c == '_' && (out.is_empty() || out.ends_with(|c: char| !c.is_alphanumeric() && c != '_')) {
            let word = rest.find(|c: char| !c.is_alphanumeric() && c != '_').unwrap_or(rest.len());
            rest = &rest[word..];
            if rest.starts_with('(') {
                rest = &rest[rest.find(')').expect("a closed annotation") + 1..];
            }
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// A parameter is a pointer when it is declared with `*` or `[]`, or its type is one of the
/// Windows pointer typedefs (`REFGUID`, `LPCBYTE`, …).
fn is_pointer(param: &str) -> bool {
    let ty = param.split_whitespace().find(|w| *w != "const").unwrap_or("");
    param.contains(['*', '[']) || ty.starts_with("REF") || ty.starts_with("LP")
}

/// Every callback slot, called as the runtime calls it.
type AnySlot = unsafe extern "system" fn(
    *mut c_void,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
) -> corprof::HRESULT;

/// The load and unload callbacks corprof keeps its mask bits set for (to see collectible code
/// unload): a profiler's own method runs only when its mask asked for them, and this one's
/// never did.
const TRACKED: [&str; 9] = [
    "AssemblyLoadStarted",
    "AssemblyLoadFinished",
    "AssemblyUnloadStarted",
    "AssemblyUnloadFinished",
    "ModuleLoadStarted",
    "ModuleLoadFinished",
    "ModuleUnloadStarted",
    "ModuleUnloadFinished",
    "ModuleAttachedToAssembly",
];

/// An object that answers no interface: what the initialize slots are handed here (corprof
/// asks the runtime's object for ICorProfilerInfo before the profiler's code runs).
#[repr(C)]
struct NoInterfaces {
    vtbl: &'static [*const (); 3],
}

unsafe extern "system" fn no_interface(_: *mut c_void, _: *const corprof::GUID, out: *mut *mut c_void) -> i32 {
    // SAFETY: the caller passes a valid out pointer.
    unsafe { *out = null_mut() };
    HResult::E_NOINTERFACE.0
}

unsafe extern "system" fn one(_: *mut c_void) -> u32 {
    1
}

struct Slots([*const (); 3]);
// SAFETY: function pointers, never written.
unsafe impl Sync for Slots {}
static NO_INTERFACES_VTBL: Slots = Slots([no_interface as *const (), one as *const (), one as *const ()]);

#[test]
fn every_vtable_slot_runs_the_callback_the_header_declares_there() {
    let slots = c_vtable(&header(), HIGHEST_CALLBACK);
    let names: Vec<&str> = slots.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..3], ["QueryInterface", "AddRef", "Release"]);
    let callbacks = &slots[3..];
    assert_eq!(callbacks.len(), Callback::ALL.len(), "one Callback per slot after IUnknown's");
    let p = Profiler::create();
    // SAFETY: a COM object's first field is its vtable pointer; the vtable CreateInstance
    // installed for the newest IID holds every slot the header's C vtable lists.
    let vtable = unsafe { *(p.this() as *const *const usize) };
    // Every pointer argument points here: zeroed memory reads as an empty NUL-terminated
    // string, a GUID or a `BOOL`, and takes a `BOOL` written to it; the default method bodies
    // never call through an interface pointer.
    let mut scratch = [0u64; 64];
    let mut wrong = Vec::new();
    for (i, (name, pointers)) in callbacks.iter().enumerate() {
        // Counts, IDs, enums and flags are 0, so every counted array is empty.
        let mut args = [0usize; 14];
        assert!(pointers.len() <= args.len(), "{name} has {} parameters", pointers.len());
        for (arg, _) in args.iter_mut().zip(pointers).filter(|(_, is_ptr)| **is_ptr) {
            scratch.fill(0);
            *arg = scratch.as_mut_ptr() as usize;
        }
        let no_interfaces = NoInterfaces { vtbl: &NO_INTERFACES_VTBL.0 };
        if name.starts_with("Initialize") {
            args[0] = &no_interfaces as *const NoInterfaces as usize;
        }
        // SAFETY: slot `3 + i` exists (counted above). Every parameter of a callback is an
        // integer or a pointer, passed in an integer register or an 8-byte stack slot in
        // declaration order (x86-64 SysV and AArch64 alike), and the caller removes its own
        // arguments: the extra zeros past the declared ones are never read.
        let hr = unsafe {
            let f: AnySlot = std::mem::transmute(*vtable.add(3 + i));
            let [a, b, c, d, e, f6, g, h, i7, j, k, l, m, n] = args;
            f(p.this().cast(), a, b, c, d, e, f6, g, h, i7, j, k, l, m, n)
        };
        let (before, _) = p.take();
        let ran: Vec<&str> = before.iter().map(|c| c.name()).collect();
        let expected: &[&str] = if TRACKED.contains(&name.as_str()) { &[] } else { &[name.as_str()] };
        if hr != 0 || ran != expected || Callback::ALL[i].name() != name {
            wrong.push(format!("slot {}: {name} declared, {ran:?} ran, {}", 3 + i, HResult(hr)));
        }
    }
    assert!(wrong.is_empty(), "slots running another callback:\n{}", wrong.join("\n"));
}

/// A fake Info object's event mask: what SetEventMask stored.
#[derive(Default)]
struct Mask(AtomicU32);

unsafe extern "system" fn set_mask(this: *mut c_void, low: u32) -> corprof::HRESULT {
    // SAFETY: the fake's own slot, called with the fake.
    unsafe { crate::fake_info::state::<Mask>(this) }.0.store(low, SeqCst);
    0
}

unsafe extern "system" fn get_mask(this: *mut c_void, out: *mut u32) -> corprof::HRESULT {
    // SAFETY: as above; the wrapper passes a valid out pointer.
    unsafe { *out = crate::fake_info::state::<Mask>(this).0.load(SeqCst) };
    0
}

/// corprof keeps `COR_PRF_MONITOR_MODULE_LOADS | COR_PRF_MONITOR_ASSEMBLY_LOADS` in the runtime's
/// mask (to see collectible code unload), shows the profiler only the bits it asked for, and
/// passes the module and assembly callbacks on only when it asked for them.
#[test]
fn corprof_keeps_the_load_bits_for_itself_and_passes_on_only_what_was_asked() {
    let tracked = COR_PRF_MONITOR::MODULE_LOADS | COR_PRF_MONITOR::ASSEMBLY_LOADS;
    for asked in [COR_PRF_MONITOR::JIT_COMPILATION, COR_PRF_MONITOR::JIT_COMPILATION | COR_PRF_MONITOR::MODULE_LOADS] {
        MASK.store(asked.0, SeqCst);
        let slots = [
            (std::mem::offset_of!(ICorProfilerInfo_Vtbl, SetEventMask), set_mask as *const () as usize),
            (std::mem::offset_of!(ICorProfilerInfo_Vtbl, GetEventMask), get_mask as *const () as usize),
        ];
        // As wide as the newest Info (its first slots are ICorProfilerInfo's): every other slot
        // answers E_NOTIMPL, whatever corprof asks it.
        let (mask, object) = crate::fake_info::fake_object::<ICorProfilerInfo15_Vtbl, _>(Mask::default(), None, &slots);
        let p = Profiler::create();
        let vtbl = p.vtbl();
        // SAFETY: the profiler's own slots, called as the runtime calls them, with the fake as
        // the Info object.
        unsafe {
            let hr = (vtbl.base__.base__.base__.base__.base__.base__.base__.base__.base__.base__.Initialize)(
                p.this().cast(),
                std::ptr::from_ref(object).cast_mut(),
            );
            assert_eq!(hr, 0);
        }
        let runtime_mask = COR_PRF_MONITOR(mask.0.load(SeqCst));
        assert_eq!(runtime_mask, asked | tracked, "what the runtime was asked for");
        let info = ProfilerInfo::from_unknown(object).unwrap();
        assert_eq!(info.get_event_mask().unwrap(), asked, "what the profiler is shown");
        // SAFETY: as above; a ModuleID the runtime would pass.
        let hr = unsafe {
            (vtbl.base__.base__.base__.base__.base__.base__.base__.base__.base__.base__.ModuleLoadStarted)(
                p.this().cast(),
                ModuleID::from_raw(0x7000),
            )
        };
        assert_eq!(hr, 0);
        let (before, reached) = p.take();
        let wanted = asked.contains(COR_PRF_MONITOR::MODULE_LOADS);
        assert_eq!(reached, if wanted { vec!["module 0x7000".to_string()] } else { vec![] }, "{asked}");
        assert_eq!(before.contains(&Callback::ModuleLoadStarted), wanted);
        // Setting back what it was shown asks for nothing new.
        info.set_event_mask(info.get_event_mask().unwrap()).unwrap();
        assert_eq!(COR_PRF_MONITOR(mask.0.load(SeqCst)), asked | tracked);
        assert_eq!(info.get_event_mask().unwrap(), asked);
    }
}
