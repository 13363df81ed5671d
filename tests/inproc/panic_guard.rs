//! The panic guard beyond callback bodies, and the reports corprof writes on stderr, checked the
//! way CoreCLR calls a profiler: through raw vtable pointers.
//!
//! Every case runs in a child process (this test binary again, with only that test selected and
//! `PANIC_GUARD_CHILD=1`): the child runs the case and its assertions, the parent checks how the
//! child ended and the exact `corprof:` lines it wrote. A panic escaping into the "runtime" aborts
//! the child, which fails the test instead of killing the test runner. The cases that document
//! what cannot be caught expect exactly that abort.

use corprof::imp::{ComObject, IUnknown_Vtbl};
use corprof::imp::{IClassFactory_Vtbl, IID_ICLASSFACTORY, ProfilerFactory};
use corprof::interfaces::*;
use corprof::types::*;
use corprof::{Callback, CallbackClass, CorProfilerCallback, GUID, HResult, IUnknown, Interface, Out};
use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

const CHILD: &str = "PANIC_GUARD_CHILD";

/// In the parent: runs `test` alone in a child process with `env` added, and returns how it went.
/// In the child: `None`; the caller then runs the case itself.
fn in_child(test: &str, env: &[(&str, &str)]) -> Option<Output> {
    if std::env::var_os(CHILD).is_some() {
        return None;
    }
    let exe = std::env::current_exe().expect("cannot find the test executable");
    // libtest names a test by its path in the binary: `panic_guard::<test>` in tests/inproc.
    let name = module_path!().split_once("::").map_or(test.to_string(), |(_, path)| format!("{path}::{test}"));
    let mut cmd = Command::new(exe);
    cmd.args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"]);
    cmd.env(CHILD, "1").env("RUST_BACKTRACE", "0").env_remove("CORPROF_QUIET").env_remove("PANIC_GUARD_SET_QUIET");
    cmd.envs(env.iter().copied());
    Some(cmd.output().unwrap_or_else(|e| panic!("cannot run the child for {test}: {e}")))
}

fn describe(out: &Output) -> String {
    format!(
        "child {:?} (signal {:?})\n--- stdout ---\n{}--- stderr ---\n{}",
        out.status.code(),
        out.status.signal(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The child ran its case to the end and every assertion in it held.
fn assert_passed(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "the child failed: {}", describe(out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 passed"), "the case did not run: {}", describe(out));
}

/// The child was killed by SIGABRT.
fn assert_aborted(out: &Output) {
    assert_eq!(out.status.signal(), Some(6), "expected an abort: {}", describe(out));
}

/// Every line corprof wrote, in order.
fn corprof_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.starts_with("corprof: ")).map(String::from).collect()
}

// ---------------------------------------------------------------------------------------------
// Counting what is dropped and freed.

/// Counts frees of blocks of `OBJECT_SIZE` bytes: the size of a `DropPanics` COM object, made
/// unusual (see `DropPanics::_ballast`) so that nothing else in the process has it.
struct CountingAlloc;

static OBJECTS_FREED: AtomicUsize = AtomicUsize::new(0);
const OBJECT_SIZE: usize = size_of::<ComObject<CallbackClass<DropPanics>>>();

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() == OBJECT_SIZE {
            OBJECTS_FREED.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

static DROPS: AtomicUsize = AtomicUsize::new(0);
static FIELD_DROPS: AtomicUsize = AtomicUsize::new(0);

/// How `DropPanics::drop` panics.
#[derive(Clone, Copy)]
enum DropMode {
    /// With a message.
    Message,
    /// With a payload whose own `Drop` panics when corprof discards it.
    Bomb,
    /// With a message, and then its field's `Drop` panics during the unwind: a panic while
    /// panicking, which Rust turns into an abort.
    FieldToo,
    /// With `Chain(2)`: three payloads, each dropped by panicking with the next.
    Chain,
}

const DROP_MESSAGE: &str = "DropPanics::drop panicked on purpose";

struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("Bomb: the payload panicked while being dropped");
    }
}

/// Drops made of `Chain`s, all links counted.
static CHAIN_DROPS: AtomicUsize = AtomicUsize::new(0);

/// A payload whose `Drop` panics with `Chain(n - 1)` until `Chain(0)`, which drops quietly: a
/// guard that catches only the first drop lets the second panic escape.
struct Chain(u32);

impl Drop for Chain {
    fn drop(&mut self) {
        CHAIN_DROPS.fetch_add(1, Ordering::SeqCst);
        if self.0 > 0 {
            std::panic::panic_any(Chain(self.0 - 1));
        }
    }
}

/// A field with its own `Drop`: shows the fields are still dropped when the owner's `Drop` panics.
struct Field {
    panics: bool,
}

impl Drop for Field {
    fn drop(&mut self) {
        FIELD_DROPS.fetch_add(1, Ordering::SeqCst);
        if self.panics {
            panic!("Field::drop panicked during the unwind");
        }
    }
}

/// A profiler whose `Drop` panics.
struct DropPanics {
    mode: DropMode,
    _field: Field,
    /// Gives the COM object a size no other allocation of this test has.
    _ballast: [u8; 1237],
}

impl DropPanics {
    fn new(mode: DropMode) -> DropPanics {
        DropPanics { mode, _field: Field { panics: matches!(mode, DropMode::FieldToo) }, _ballast: [0; 1237] }
    }
}

impl Drop for DropPanics {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
        match self.mode {
            DropMode::Bomb => std::panic::panic_any(Bomb),
            DropMode::Chain => std::panic::panic_any(Chain(2)),
            DropMode::Message | DropMode::FieldToo => panic!("{DROP_MESSAGE}"),
        }
    }
}

impl CorProfilerCallback for DropPanics {}

fn drop_line() -> String {
    let ty = std::any::type_name::<DropPanics>();
    format!("corprof: drop of {ty} panicked: {DROP_MESSAGE}; the object was freed")
}

// ---------------------------------------------------------------------------------------------
// Raw COM calls.

/// `IUnknown::AddRef` through the object's vtable.
///
/// # Safety
/// `p` must be a live COM object.
unsafe fn add_ref(p: *mut c_void) -> u32 {
    // SAFETY: a COM object starts with a pointer to a vtable that starts with IUnknown's slots.
    unsafe { ((**(p as *const *const IUnknown_Vtbl)).AddRef)(p.cast()) }
}

/// `IUnknown::Release` through the object's vtable.
///
/// # Safety
/// `p` must be a live COM object whose reference the caller gives up.
unsafe fn release(p: *mut c_void) -> u32 {
    // SAFETY: as in `add_ref`.
    unsafe { ((**(p as *const *const IUnknown_Vtbl)).Release)(p.cast()) }
}

/// The object's vtable as interface `V` (a prefix of the profiler's newest vtable).
///
/// # Safety
/// `p` must be a live profiler object, and `V` one of its callback vtables.
unsafe fn vtbl<'a, V>(p: *mut c_void) -> &'a V {
    // SAFETY: the caller's guarantees; every callback vtable is a prefix of the newest one.
    unsafe { &**(p as *const *const V) }
}

/// Creates a profiler through `F`'s class factory, as the runtime does, asking for `riid`.
fn create_instance<F: ProfilerFactory>(riid: &GUID) -> (HResult, *mut c_void) {
    let mut factory: *mut c_void = null_mut();
    // SAFETY: valid pointers, as `DllGetClassObject` requires.
    let hr = unsafe { corprof::imp::dll_get_class_object::<F>(&F::CLSID, &IID_ICLASSFACTORY, &mut factory) };
    assert_eq!(HResult(hr), HResult::S_OK);
    let mut obj: *mut c_void = std::ptr::dangling_mut();
    // SAFETY: `factory` is a live class factory; `obj` is valid for a write.
    let hr =
        unsafe { (vtbl::<IClassFactory_Vtbl>(factory).CreateInstance)(factory.cast(), null_mut(), riid, &mut obj) };
    // SAFETY: the reference `dll_get_class_object` gave this function.
    assert_eq!(unsafe { release(factory) }, 0, "the factory is freed at its last Release");
    (HResult(hr), obj)
}

// ---------------------------------------------------------------------------------------------
// Drop at the last Release.

fn drop_at_last_release_case(mode: DropMode) {
    let p: *mut c_void = corprof::imp::new_profiler_object(DropPanics::new(mode)).cast();
    // SAFETY: `p` is the live object just created; each Release gives up one reference held here.
    unsafe {
        assert_eq!(add_ref(p), 2);
        assert_eq!(release(p), 1);
        assert_eq!((DROPS.load(Ordering::SeqCst), OBJECTS_FREED.load(Ordering::SeqCst)), (0, 0), "too early");
        eprintln!("panic_guard: the last Release");
        assert_eq!(release(p), 0);
    }
    assert_eq!(DROPS.load(Ordering::SeqCst), 1, "Drop ran once");
    assert_eq!(FIELD_DROPS.load(Ordering::SeqCst), 1, "the fields were dropped once, while unwinding");
    assert_eq!(OBJECTS_FREED.load(Ordering::SeqCst), 1, "the object was freed once");
}

#[test]
fn a_drop_panic_at_the_last_release_is_logged_once_and_the_object_freed_once() {
    let Some(out) = in_child("a_drop_panic_at_the_last_release_is_logged_once_and_the_object_freed_once", &[]) else {
        return drop_at_last_release_case(DropMode::Message);
    };
    assert_passed(&out);
    assert_eq!(corprof_lines(&out), [drop_line()], "{}", describe(&out));
}

#[test]
fn a_drop_panic_whose_payload_panics_when_dropped_is_contained() {
    let Some(out) = in_child("a_drop_panic_whose_payload_panics_when_dropped_is_contained", &[]) else {
        return drop_at_last_release_case(DropMode::Bomb);
    };
    assert_passed(&out);
    let ty = std::any::type_name::<DropPanics>();
    let line = format!("corprof: drop of {ty} panicked: (non-string panic payload); the object was freed");
    assert_eq!(corprof_lines(&out), [line], "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Bomb: the payload panicked while being dropped"), "{}", describe(&out));
}

#[test]
fn a_drop_panic_whose_payloads_panic_in_a_chain_is_contained() {
    let Some(out) = in_child("a_drop_panic_whose_payloads_panic_in_a_chain_is_contained", &[]) else {
        drop_at_last_release_case(DropMode::Chain);
        assert_eq!(CHAIN_DROPS.load(Ordering::SeqCst), 3, "every link of the chain was dropped");
        return;
    };
    assert_passed(&out);
    let ty = std::any::type_name::<DropPanics>();
    let line = format!("corprof: drop of {ty} panicked: (non-string panic payload); the object was freed");
    assert_eq!(corprof_lines(&out), [line], "{}", describe(&out));
}

/// What docs/guide/reliability.md says cannot be caught: a panic while panicking. Rust aborts the process
/// before corprof gets control back, so there is no corprof line.
#[test]
fn a_panic_in_a_field_drop_after_a_drop_panic_aborts() {
    let Some(out) = in_child("a_panic_in_a_field_drop_after_a_drop_panic_aborts", &[]) else {
        return drop_at_last_release_case(DropMode::FieldToo);
    };
    assert_aborted(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("panic_guard: the last Release"), "the case did not get there: {}", describe(&out));
    assert!(stderr.contains("Field::drop panicked during the unwind"), "{}", describe(&out));
    assert_eq!(corprof_lines(&out), Vec::<String>::new(), "{}", describe(&out));
}

// ---------------------------------------------------------------------------------------------
// CreateInstance: the constructor, and the error path that drops the new profiler.

struct DropPanicsFactory;

impl ProfilerFactory for DropPanicsFactory {
    type Profiler = DropPanics;
    const CLSID: GUID = GUID::parse("1B6E3C2D-8F4A-4C7B-9E0D-5A1F2B3C4D5E");
    fn create() -> DropPanics {
        DropPanics::new(DropMode::Message)
    }
}

#[test]
fn create_instance_with_an_unanswered_iid_and_a_panicking_drop_returns_the_error() {
    let Some(out) = in_child("create_instance_with_an_unanswered_iid_and_a_panicking_drop_returns_the_error", &[])
    else {
        // An IID the profiler does not answer: its QueryInterface fails, so CreateInstance's
        // Release is the last one and drops the new profiler on the spot.
        let (hr, obj) = create_instance::<DropPanicsFactory>(&ICorProfilerInfo::IID);
        assert_eq!(hr, HResult::E_NOINTERFACE);
        assert!(obj.is_null(), "the out pointer is nulled");
        assert_eq!(DROPS.load(Ordering::SeqCst), 1, "Drop ran once");
        assert_eq!(FIELD_DROPS.load(Ordering::SeqCst), 1, "the fields were dropped once");
        assert_eq!(OBJECTS_FREED.load(Ordering::SeqCst), 1, "the object was freed once");
        return;
    };
    assert_passed(&out);
    assert_eq!(corprof_lines(&out), [drop_line()], "{}", describe(&out));
}

struct CtorPanics;

impl CorProfilerCallback for CtorPanics {}

struct CtorPanicsFactory;

impl ProfilerFactory for CtorPanicsFactory {
    type Profiler = CtorPanics;
    const CLSID: GUID = GUID::parse("2C7F4D3E-9A5B-4D8C-8F1E-6B2A3C4D5E6F");
    fn create() -> CtorPanics {
        panic!("the constructor panicked on purpose");
    }
}

#[test]
fn a_panicking_constructor_makes_create_instance_fail() {
    let Some(out) = in_child("a_panicking_constructor_makes_create_instance_fail", &[]) else {
        let (hr, obj) = create_instance::<CtorPanicsFactory>(&ICorProfilerCallback::IID);
        assert_eq!(hr, HResult::E_FAIL);
        assert!(obj.is_null(), "the out pointer is nulled");
        return;
    };
    assert_passed(&out);
    let ty = std::any::type_name::<CtorPanics>();
    let line = format!(
        "corprof: constructor of {ty} panicked: the constructor panicked on purpose; returned E_FAIL to the runtime"
    );
    assert_eq!(corprof_lines(&out), [line], "{}", describe(&out));
}

// ---------------------------------------------------------------------------------------------
// before_callback.

static EXCEPTIONS_SEEN: AtomicUsize = AtomicUsize::new(0);
static JIT_SEEN: AtomicUsize = AtomicUsize::new(0);

/// A profiler whose `before_callback` panics for `ExceptionThrown` and `JITInlining`.
struct BeforePanics;

impl CorProfilerCallback for BeforePanics {
    fn before_callback(&self, callback: Callback) {
        if matches!(callback, Callback::ExceptionThrown | Callback::JITInlining) {
            panic!("before_callback panicked on purpose before {}", callback.name());
        }
    }

    fn exception_thrown(&self, _thrown: corprof::LiveObject<'_>) -> corprof::Result<()> {
        EXCEPTIONS_SEEN.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn jit_compilation_started(&self, _function_id: FunctionID, _safe: bool) -> corprof::Result<()> {
        JIT_SEEN.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn jit_inlining(&self, _caller: FunctionID, _callee: FunctionID, _inline: Out<'_, bool>) -> corprof::Result<()> {
        unreachable!("before_callback panics first");
    }
}

#[test]
fn a_panicking_before_callback_is_e_fail() {
    let Some(out) = in_child("a_panicking_before_callback_is_e_fail", &[]) else {
        let p: *mut c_void = corprof::imp::new_profiler_object(BeforePanics).cast();
        // SAFETY: `p` is a live profiler object; the arguments are as the slots expect, a null
        // `pfShouldInline` included (the thunk answers it, after `before_callback`).
        unsafe {
            let v = vtbl::<ICorProfilerCallback_Vtbl>(p);
            assert_eq!(HResult((v.ExceptionThrown)(p.cast(), ObjectID::NULL)), HResult::E_FAIL);
            assert_eq!(EXCEPTIONS_SEEN.load(Ordering::SeqCst), 0, "the callback itself did not run");
            assert_eq!(
                HResult((v.JITInlining)(p.cast(), FunctionID::NULL, FunctionID::NULL, null_mut())),
                HResult::E_FAIL
            );
            assert_eq!(
                HResult((v.JITCompilationStarted)(p.cast(), FunctionID::NULL, 1)),
                HResult::S_OK,
                "others still work"
            );
            assert_eq!(JIT_SEEN.load(Ordering::SeqCst), 1);
            assert_eq!(release(p), 0);
        }
        return;
    };
    assert_passed(&out);
    let line = |name: &str| {
        format!(
            "corprof: callback {name} panicked: before_callback panicked on purpose before {name}; returned E_FAIL to the runtime"
        )
    };
    assert_eq!(corprof_lines(&out), [line("ExceptionThrown"), line("JITInlining")], "{}", describe(&out));
}

/// A profiler whose callbacks panic with payloads that are hard to report: a chain of payloads
/// each panicking when dropped (`ExceptionThrown`: three links; `ThreadDestroyed`: endless), and
/// messages with line breaks and escape sequences that would forge report lines if written raw
/// (`Shutdown`, `ThreadCreated`).
struct HostilePayloads;

/// What `Shutdown` panics with: a newline, then a forged report.
const FORGED: &str = "a\ncorprof: callback Shutdown panicked: forged";

impl CorProfilerCallback for HostilePayloads {
    fn exception_thrown(&self, _thrown: corprof::LiveObject<'_>) -> corprof::Result<()> {
        std::panic::panic_any(Chain(2));
    }

    fn shutdown(&self) -> corprof::Result<()> {
        panic!("{FORGED}");
    }

    fn thread_destroyed(&self, _thread: ThreadID) -> corprof::Result<()> {
        std::panic::panic_any(Chain(u32::MAX));
    }

    fn thread_created(&self, _thread: ThreadID) -> corprof::Result<()> {
        panic!("carriage\rreturn, \u{1b}[2Kerased, tab\tand a line separator\u{2028}here");
    }
}

#[test]
fn a_payload_chain_from_a_callback_is_dropped_link_by_link() {
    let Some(out) = in_child("a_payload_chain_from_a_callback_is_dropped_link_by_link", &[]) else {
        let p: *mut c_void = corprof::imp::new_profiler_object(HostilePayloads).cast();
        // SAFETY: `p` is a live profiler object; the reference is given up at the end.
        unsafe {
            let v = vtbl::<ICorProfilerCallback_Vtbl>(p);
            assert_eq!(HResult((v.ExceptionThrown)(p.cast(), ObjectID::NULL)), HResult::E_FAIL);
            assert_eq!(CHAIN_DROPS.load(Ordering::SeqCst), 3, "every link of the chain was dropped");
            assert_eq!(HResult((v.ExceptionThrown)(p.cast(), ObjectID::NULL)), HResult::E_FAIL, "and again");
            assert_eq!(CHAIN_DROPS.load(Ordering::SeqCst), 6);
            assert_eq!(release(p), 0);
        }
        return;
    };
    assert_passed(&out);
    let line = "corprof: callback ExceptionThrown panicked: (non-string panic payload); returned E_FAIL to the runtime";
    assert_eq!(corprof_lines(&out), [line, line], "{}", describe(&out));
}

/// A chain that would go on for four billion drops is cut: after 16 drops the payload in hand is
/// leaked, and the callback returns.
#[test]
fn an_endless_payload_chain_is_cut_and_leaked() {
    let Some(out) = in_child("an_endless_payload_chain_is_cut_and_leaked", &[]) else {
        std::panic::set_hook(Box::new(|_| {}));
        let p: *mut c_void = corprof::imp::new_profiler_object(HostilePayloads).cast();
        // SAFETY: `p` is a live profiler object; the reference is given up at the end.
        unsafe {
            let v = vtbl::<ICorProfilerCallback_Vtbl>(p);
            assert_eq!(HResult((v.ThreadDestroyed)(p.cast(), ThreadID::NULL)), HResult::E_FAIL);
            assert_eq!(CHAIN_DROPS.load(Ordering::SeqCst), 16, "16 drops, then the rest leaked");
            assert_eq!(release(p), 0);
        }
        return;
    };
    assert_passed(&out);
    let line = "corprof: callback ThreadDestroyed panicked: (non-string panic payload); returned E_FAIL to the runtime";
    assert_eq!(corprof_lines(&out), [line], "{}", describe(&out));
}

#[test]
fn a_panic_message_cannot_forge_report_lines() {
    let Some(out) = in_child("a_panic_message_cannot_forge_report_lines", &[]) else {
        std::panic::set_hook(Box::new(|_| {}));
        let p: *mut c_void = corprof::imp::new_profiler_object(HostilePayloads).cast();
        // SAFETY: `p` is a live profiler object; the reference is given up at the end.
        unsafe {
            let v = vtbl::<ICorProfilerCallback_Vtbl>(p);
            assert_eq!(HResult((v.Shutdown)(p.cast())), HResult::E_FAIL);
            assert_eq!(HResult((v.ThreadCreated)(p.cast(), ThreadID::NULL)), HResult::E_FAIL);
            assert_eq!(release(p), 0);
        }
        return;
    };
    assert_passed(&out);
    // The panic hook is silenced: every line on stderr is one of corprof's, whole.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            r"corprof: callback Shutdown panicked: a\ncorprof: callback Shutdown panicked: forged; returned E_FAIL to the runtime",
            r"corprof: callback ThreadCreated panicked: carriage\rreturn, \u{1b}[2Kerased, tab\tand a line separator\u{2028}here; returned E_FAIL to the runtime",
        ],
        "{}",
        describe(&out)
    );
}

/// What docs/guide/reliability.md says cannot be caught: a panic hook that panics. Rust aborts while processing
/// the first panic, before `catch_unwind` gets it back.
#[test]
fn a_panic_hook_that_panics_aborts() {
    let Some(out) = in_child("a_panic_hook_that_panics_aborts", &[]) else {
        std::panic::set_hook(Box::new(|_| panic!("the panic hook panicked")));
        let p: *mut c_void = corprof::imp::new_profiler_object(BeforePanics).cast();
        eprintln!("panic_guard: calling ExceptionThrown");
        // SAFETY: `p` is a live profiler object.
        unsafe { (vtbl::<ICorProfilerCallback_Vtbl>(p).ExceptionThrown)(p.cast(), ObjectID::NULL) };
        unreachable!("the process aborts in the callback");
    };
    assert_aborted(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("panic_guard: calling ExceptionThrown"), "the case did not get there: {}", describe(&out));
    assert_eq!(corprof_lines(&out), Vec::<String>::new(), "{}", describe(&out));
}

// ---------------------------------------------------------------------------------------------
// Reports: a failed Initialize, and silencing.

/// What `Initialize` and `InitializeForAttach` of `InitFails` return; 0 means panic.
static INIT_RESULT: AtomicI32 = AtomicI32::new(0);

const INCONSISTENT_WITH_FLAGS: HResult = HResult(0x8013_1374u32 as i32);
const CANCEL_ACTIVATION: HResult = HResult(0x8013_1375u32 as i32);

struct InitFails;

impl InitFails {
    fn result() -> corprof::Result<()> {
        match INIT_RESULT.load(Ordering::SeqCst) {
            0 => panic!("Initialize panicked on purpose"),
            hr => Err(HResult(hr)),
        }
    }
}

impl CorProfilerCallback for InitFails {
    fn initialize(&self, _info: &IUnknown) -> corprof::Result<()> {
        Self::result()
    }

    fn initialize_for_attach(&self, _info: &IUnknown, _data: &[u8]) -> corprof::Result<()> {
        Self::result()
    }

    fn shutdown(&self) -> corprof::Result<()> {
        Err(HResult::E_FAIL)
    }

    fn exception_thrown(&self, _thrown: corprof::LiveObject<'_>) -> corprof::Result<()> {
        panic!("ExceptionThrown panicked on purpose");
    }
}

/// `Initialize` then `InitializeForAttach` on a fresh `InitFails` returning `hr` (0: panicking).
fn initialize(hr: HResult) -> (HResult, HResult) {
    INIT_RESULT.store(hr.0, Ordering::SeqCst);
    let p: *mut c_void = corprof::imp::new_profiler_object(InitFails).cast();
    // SAFETY: `p` is a live profiler object, passed as its own (queryable) info object.
    unsafe {
        let init = HResult((vtbl::<ICorProfilerCallback_Vtbl>(p).Initialize)(p.cast(), p.cast()));
        let attach_slot = vtbl::<ICorProfilerCallback3_Vtbl>(p).InitializeForAttach;
        let attach = HResult(attach_slot(p.cast(), p.cast(), null_mut(), 0));
        assert_eq!(release(p), 0);
        (init, attach)
    }
}

/// Every report corprof has, in a known order.
fn reports_case() {
    if std::env::var_os("PANIC_GUARD_SET_QUIET").is_some() {
        corprof::set_quiet(true);
        assert!(corprof::is_quiet());
    }
    std::panic::set_hook(Box::new(|_| {}));
    assert_eq!(initialize(INCONSISTENT_WITH_FLAGS), (INCONSISTENT_WITH_FLAGS, INCONSISTENT_WITH_FLAGS));
    // The documented way to decline a process: not reported.
    assert_eq!(initialize(CANCEL_ACTIVATION), (CANCEL_ACTIVATION, CANCEL_ACTIVATION));
    // A success code in an `Err` is a success for the runtime: not reported either.
    assert_eq!(initialize(HResult::S_FALSE), (HResult::S_FALSE, HResult::S_FALSE));
    // A panic: its own line, then the failure it became.
    assert_eq!(initialize(HResult(0)), (HResult::E_FAIL, HResult::E_FAIL));
    // Other callbacks' errors are the runtime's business; their panics are reported.
    let p: *mut c_void = corprof::imp::new_profiler_object(InitFails).cast();
    // SAFETY: `p` is a live profiler object.
    unsafe {
        assert_eq!(HResult((vtbl::<ICorProfilerCallback_Vtbl>(p).Shutdown)(p.cast())), HResult::E_FAIL);
        assert_eq!(
            HResult((vtbl::<ICorProfilerCallback_Vtbl>(p).ExceptionThrown)(p.cast(), ObjectID::NULL)),
            HResult::E_FAIL
        );
        assert_eq!(release(p), 0);
    }
    drop_at_last_release_case(DropMode::Message);
    if std::env::var_os("PANIC_GUARD_SET_QUIET").is_some() {
        // Back on (unless CORPROF_QUIET says otherwise): one more report, which must show.
        corprof::set_quiet(false);
        assert_eq!(initialize(HResult::E_FAIL), (HResult::E_FAIL, HResult::E_FAIL));
    }
}

/// What corprof writes when Initialize and InitializeForAttach fail with `hr` (E_FAIL or
/// CORPROF_E_INCONSISTENT_WITH_FLAGS), written out rather than made with `HResult::describe`.
fn initialize_failed(hr: HResult) -> [String; 2] {
    let what = match hr {
        HResult::E_FAIL => {
            "E_FAIL (0x80004005): Unspecified failure (corprof also returns it for a callback that panicked)."
        }
        INCONSISTENT_WITH_FLAGS => {
            "CORPROF_E_INCONSISTENT_WITH_FLAGS (0x80131374): The call needs other event-mask flags set (or some set flags cleared) first."
        }
        other => panic!("no expected line written for {other}"),
    };
    [format!("corprof: Initialize failed: {what}"), format!("corprof: InitializeForAttach failed: {what}")]
}

/// The lines of `reports_case`, in order.
fn all_reports() -> Vec<String> {
    let panicked =
        |name: &str, msg: &str| format!("corprof: callback {name} panicked: {msg}; returned E_FAIL to the runtime");
    let [init_failed, attach_failed] = initialize_failed(HResult::E_FAIL);
    let mut lines = initialize_failed(INCONSISTENT_WITH_FLAGS).to_vec();
    // The same body serves both initialize callbacks, hence one message.
    lines.push(panicked("Initialize", "Initialize panicked on purpose"));
    lines.push(init_failed);
    lines.push(panicked("InitializeForAttach", "Initialize panicked on purpose"));
    lines.push(attach_failed);
    lines.push(panicked("ExceptionThrown", "ExceptionThrown panicked on purpose"));
    lines.push(drop_line());
    lines
}

#[test]
fn reports_say_why_and_what_once_each() {
    for quiet in [None, Some(""), Some("0")] {
        let env: Vec<(&str, &str)> = quiet.iter().map(|v| ("CORPROF_QUIET", *v)).collect();
        let Some(out) = in_child("reports_say_why_and_what_once_each", &env) else {
            return reports_case();
        };
        assert_passed(&out);
        assert_eq!(corprof_lines(&out), all_reports(), "CORPROF_QUIET={quiet:?}: {}", describe(&out));
    }
    // The line of the example in docs/guide/callbacks.md, byte for byte.
    assert_eq!(
        initialize_failed(INCONSISTENT_WITH_FLAGS)[0],
        "corprof: Initialize failed: CORPROF_E_INCONSISTENT_WITH_FLAGS (0x80131374): The call needs other event-mask flags set (or some set flags cleared) first."
    );
}

#[test]
fn corprof_quiet_silences_every_report() {
    for value in ["1", "yes"] {
        let Some(out) = in_child("corprof_quiet_silences_every_report", &[("CORPROF_QUIET", value)]) else {
            return reports_case();
        };
        assert_passed(&out);
        assert_eq!(corprof_lines(&out), Vec::<String>::new(), "CORPROF_QUIET={value}: {}", describe(&out));
    }
}

#[test]
fn set_quiet_silences_every_report_until_turned_off() {
    let Some(out) = in_child("set_quiet_silences_every_report_until_turned_off", &[("PANIC_GUARD_SET_QUIET", "1")])
    else {
        return reports_case();
    };
    assert_passed(&out);
    assert_eq!(corprof_lines(&out), initialize_failed(HResult::E_FAIL), "{}", describe(&out));
    // With CORPROF_QUIET=1 too, `set_quiet(false)` does not turn reports back on.
    let env = [("PANIC_GUARD_SET_QUIET", "1"), ("CORPROF_QUIET", "1")];
    let Some(out) = in_child("set_quiet_silences_every_report_until_turned_off", &env) else { unreachable!() };
    assert_passed(&out);
    assert_eq!(corprof_lines(&out), Vec::<String>::new(), "{}", describe(&out));
}

#[test]
fn the_child_harness_sees_failures() {
    // A child whose case fails must fail the parent's check: no test here can pass vacuously.
    let Some(out) = in_child("the_child_harness_sees_failures", &[]) else {
        panic!("this child fails on purpose");
    };
    assert_eq!(out.status.code(), Some(101), "{}", describe(&out));
    let result = std::panic::catch_unwind(|| assert_passed(&out));
    assert!(result.is_err(), "assert_passed accepted a failed child");
}

struct PanicsOnThreadExit;

impl Drop for PanicsOnThreadExit {
    fn drop(&mut self) {
        panic!("a thread-local value panicked in its destructor");
    }
}

thread_local! {
    static ON_EXIT: PanicsOnThreadExit = const { PanicsOnThreadExit };
}

/// What docs/guide/reliability.md says cannot be caught: a thread-local's destructor runs when its thread exits,
/// outside any callback (for a runtime thread: inside the runtime), and a panic there aborts.
#[test]
fn a_panic_in_a_thread_local_destructor_aborts() {
    let Some(out) = in_child("a_panic_in_a_thread_local_destructor_aborts", &[]) else {
        let thread = std::thread::spawn(|| ON_EXIT.with(|_| eprintln!("panic_guard: thread-local set")));
        let _ = thread.join();
        eprintln!("panic_guard: the process went on");
        return;
    };
    assert_aborted(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("panic_guard: thread-local set"), "the case did not get there: {}", describe(&out));
    assert!(!stderr.contains("panic_guard: the process went on"), "{}", describe(&out));
}
