//! What generated thunks and the export macro call: the panic guard around every callback, and
//! the class factory behind `DllGetClassObject`.

use crate::com::{ComClass, ComObject, IUnknown, IUnknown_Vtbl};
use crate::{CallbackClass, CorProfilerCallback, GUID, HRESULT, HResult, Result};
use std::any::Any;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs a callback body on the object behind `this`. A panic never crosses into the runtime: it
/// is logged with the callback's name and reported as `E_FAIL`. The guard costs nothing unless a
/// panic happens (unwinding tables only). A failed `Initialize` or `InitializeForAttach` is
/// reported too (`report_initialize_failure`).
///
/// After `Shutdown` and `ProfilerDetachSucceeded` return, the profiler's Info gates close
/// (`info_gate::close_for`): the runtime lets go of its Info object then, so every wrapper of
/// it answers `CORPROF_E_PROFILER_DETACHING` from now on, and calls in flight on other threads
/// finish before the thunk returns to the runtime.
///
/// # Safety
/// `this` must be a live `ComObject<C>`.
#[inline(always)]
pub unsafe fn dispatch<C: ComClass>(
    this: *mut c_void,
    name: &'static str,
    body: impl FnOnce(&C::Value) -> Result<()>,
) -> HRESULT {
    // SAFETY: the caller guarantees `this` is a live `ComObject<C>`.
    let value = unsafe { ComObject::<C>::value(this) };
    let hr = match catch_unwind(AssertUnwindSafe(|| body(value))) {
        Ok(Ok(())) => HResult::S_OK.0,
        Ok(Err(e)) => failed(this, name, e),
        Err(payload) => failed(this, name, report_panic(name, payload)),
    };
    // `name` is a constant in each thunk: every other thunk folds this away.
    if name == "Shutdown" || name == "ProfilerDetachSucceeded" {
        crate::info_gate::close_for(this);
    }
    hr
}

/// [`dispatch`] for `Initialize` and `InitializeForAttach`: opens a gate for `info`, the Info
/// object the runtime hands over, before the body runs (every wrapper negotiated over `info`
/// is gated by it; `crate::info_gate`), and closes it again if the initialize fails.
///
/// # Safety
/// As for [`dispatch`]; `info` is the Info object argument of the call.
#[inline(always)]
pub unsafe fn dispatch_initialize<C: ComClass>(
    this: *mut c_void,
    name: &'static str,
    info: *mut c_void,
    body: impl FnOnce(&C::Value) -> Result<()>,
) -> HRESULT {
    crate::info_gate::open(this, info);
    // SAFETY: the caller's contract, passed on.
    unsafe { dispatch::<C>(this, name, body) }
}

/// The error path of [`dispatch`]. Inlined so that `name`, a constant in each thunk, folds the
/// comparison away: only the two initialize thunks keep a call to the report and the close.
#[inline(always)]
fn failed(this: *mut c_void, name: &str, hr: HResult) -> HRESULT {
    if !hr.is_ok() && (name == "Initialize" || name == "InitializeForAttach") {
        report_initialize_failure(name, hr);
        // The runtime deletes its Info object and unloads the profiler once this returns.
        crate::info_gate::close_for(this);
    }
    hr.0
}

/// Says why the profiler is not running: the runtime unloads a profiler whose `Initialize`
/// (`callback`) failed, silently. Writes `corprof: Initialize failed: <NAME (0x…)>: <meaning>`
/// unless the failure is `CORPROF_E_PROFILER_CANCEL_ACTIVATION` (the documented way to decline a
/// process: a choice, not an error) or reports are silenced ([`set_quiet`]).
#[cold]
#[inline(never)]
fn report_initialize_failure(callback: &str, hr: HResult) {
    if hr != HResult::CORPROF_E_PROFILER_CANCEL_ACTIVATION {
        write_line(&format!("corprof: {callback} failed: {}", hr.describe()));
    }
}

#[cold]
#[inline(never)]
fn report_panic(name: &str, payload: Box<dyn Any + Send>) -> HResult {
    log_panic(&format_args!("callback {name}"), payload, "returned E_FAIL to the runtime");
    HResult::E_FAIL
}

/// Logs a caught panic as one line, `corprof: <what> panicked: <message>; <then>`, and drops its
/// payload without letting a further panic (from the payload's own `Drop`) escape
/// ([`drop_payload`]).
#[cold]
#[inline(never)]
pub(crate) fn log_panic(what: &dyn std::fmt::Display, payload: Box<dyn Any + Send>, then: &str) {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string());
    write_line(&format!("corprof: {what} panicked: {msg}; {then}"));
    drop_payload(payload);
}

/// How many payloads of a chain [`drop_payload`] drops before it leaks the rest.
const MAX_PAYLOAD_DROPS: usize = 16;

/// Drops a caught panic payload where no panic may escape (a thunk, a hook, the last
/// `Release`). A payload's `Drop` may panic again, handing over a new payload, whose `Drop` may
/// panic too: each is dropped in turn, under its own `catch_unwind`, until one drops quietly.
/// After [`MAX_PAYLOAD_DROPS`] the payload in hand is forgotten instead (leaked), so a chain that
/// never ends costs one allocation, not a loop forever or the process. The panic hook still sees
/// every one of those panics; corprof's report stays the one line about the first.
#[cold]
#[inline(never)]
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    let mut payload = payload;
    for _ in 0..MAX_PAYLOAD_DROPS {
        match catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(next) => payload = next,
        }
    }
    std::mem::forget(payload);
}

/// Set by [`set_quiet`].
static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences (or, with `false`, un-silences) every line corprof itself writes to stderr: caught
/// panics and failed `Initialize` calls. Reports are also off when the environment has
/// `CORPROF_QUIET` set to anything but empty or `0`; this switch cannot turn them back on then.
///
/// The switch is per profiler library (each `cdylib` has its own copy of corprof), so a profiler
/// that declines processes on purpose can call it from its constructor or `initialize`.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether corprof's reports are silenced, by [`set_quiet`] or `CORPROF_QUIET`.
pub fn is_quiet() -> bool {
    // Read once, when the runtime asks for the class factory (or at the first report): the
    // setting then holds for the whole process, and no callback reads the environment while the
    // app may be changing it.
    static ENV: OnceLock<bool> = OnceLock::new();
    QUIET.load(Ordering::Relaxed)
        || *ENV.get_or_init(|| std::env::var_os("CORPROF_QUIET").is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Writes one line to stderr unless reports are silenced. One write under the stderr lock, so
/// lines from several threads do not interleave; a failed write is ignored (nowhere to report it).
/// Control characters and Unicode line breaks in `line` are escaped ([`escape_controls`]), so a
/// panic message cannot end the line early and forge a second report.
fn write_line(line: &str) {
    if is_quiet() {
        return;
    }
    let mut text = escape_controls(line);
    text.push('\n');
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
}

/// `text` with every control character (`\n`, `\r`, ESC, …) and U+2028/U+2029 written as Rust
/// writes them in a string literal (`\n`, `\u{1b}`); everything else, backslashes included, as is.
fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// What `export_profiler!` fills in: the profiler type, its CLSID and how to make one.
pub trait ProfilerFactory: 'static {
    type Profiler: CorProfilerCallback;
    const CLSID: GUID;
    fn create() -> Self::Profiler;
}

/// `IClassFactory`'s vtable (standard COM, not part of corprof.h).
#[repr(C)]
#[allow(non_snake_case, non_camel_case_types)]
pub struct IClassFactory_Vtbl {
    pub base__: IUnknown_Vtbl,
    pub CreateInstance:
        unsafe extern "system" fn(*mut IUnknown, *mut IUnknown, *const GUID, *mut *mut c_void) -> HRESULT,
    pub LockServer: unsafe extern "system" fn(*mut IUnknown, i32) -> HRESULT,
}

pub const IID_ICLASSFACTORY: GUID = GUID::from_u128(0x00000001_0000_0000_C000_000000000046);

/// The class factory object the runtime gets from `DllGetClassObject`.
pub struct FactoryClass<F>(PhantomData<F>);

// SAFETY: the factory vtable treats `this` as a `ComObject<FactoryClass<F>>`, the only objects it is installed in, and answers IClassFactory's IID.
unsafe impl<F: ProfilerFactory> ComClass for FactoryClass<F> {
    type Value = ();
    type Vtbl = IClassFactory_Vtbl;
    const VTBL: &'static IClassFactory_Vtbl = &IClassFactory_Vtbl {
        // SAFETY: this is `FactoryClass<F>::VTBL`, only installed by `ComObject::<FactoryClass<F>>::create`.
        base__: unsafe { IUnknown_Vtbl::new::<FactoryClass<F>>() },
        CreateInstance: create_instance::<F>,
        LockServer: lock_server,
    };
    const IIDS: &'static [GUID] = &[IID_ICLASSFACTORY];
}

unsafe extern "system" fn create_instance<F: ProfilerFactory>(
    _this: *mut IUnknown,
    outer: *mut IUnknown,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() {
        return HResult::E_POINTER.0;
    }
    // SAFETY: non-null, and COM's contract makes it valid for a write.
    unsafe { *ppv = std::ptr::null_mut() };
    if !outer.is_null() {
        return HResult::CLASS_E_NOAGGREGATION.0;
    }
    let profiler = match catch_unwind(F::create) {
        Ok(p) => p,
        Err(payload) => {
            let ty = std::any::type_name::<F::Profiler>();
            log_panic(&format_args!("constructor of {ty}"), payload, "returned E_FAIL to the runtime");
            return HResult::E_FAIL.0;
        }
    };
    let obj = ComObject::<CallbackClass<F::Profiler>>::create(profiler);
    // The QueryInterface takes the caller's reference; dropping ours leaves exactly that one.
    // When QueryInterface fails (an IID the object does not answer), that Release is the last and
    // runs the profiler's `Drop` here; `release` keeps a panic in it from reaching the runtime.
    // SAFETY: `obj` is the live object just created, holding the one reference given up here (so
    // a `ComObject<CallbackClass<F::Profiler>>` until then, as `value` and `register_instance`
    // require, and handed to the runtime when QueryInterface succeeds); `riid` and `ppv` are
    // the caller's, passed on as COM's contract has them.
    unsafe {
        let hr = (*obj).QueryInterface(riid, ppv);
        if HResult(hr).is_ok() {
            // The object the runtime now holds is the one whose hooks `hooks::install` accepts.
            crate::hooks::register_instance(obj, ComObject::<CallbackClass<F::Profiler>>::value(obj.cast()));
        }
        (*obj).Release();
        hr
    }
}

unsafe extern "system" fn lock_server(_this: *mut IUnknown, _lock: i32) -> HRESULT {
    HResult::S_OK.0
}

/// The body of the exported `DllGetClassObject`.
///
/// # Safety
/// Pointers as COM's `DllGetClassObject` contract requires.
pub unsafe fn dll_get_class_object<F: ProfilerFactory>(
    rclsid: *const GUID,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() || rclsid.is_null() {
        return HResult::E_POINTER.0;
    }
    is_quiet(); // reads CORPROF_QUIET now, as the runtime loads the profiler
    // SAFETY: `ppv` and `rclsid` are non-null and valid as COM's contract requires; `factory` is
    // the live object just created, and its Release gives up the reference `create` returned.
    unsafe {
        *ppv = std::ptr::null_mut();
        if *rclsid != F::CLSID {
            return HResult::CLASS_E_CLASSNOTAVAILABLE.0;
        }
        let factory = ComObject::<FactoryClass<F>>::create(());
        let hr = (*factory).QueryInterface(riid, ppv);
        (*factory).Release();
        hr
    }
}

/// Creates a profiler COM object directly (what the class factory does), for tests and hosts:
/// the returned pointer owns one reference.
pub fn new_profiler_object<T: CorProfilerCallback>(profiler: T) -> *mut IUnknown {
    ComObject::<CallbackClass<T>>::create(profiler)
}

/// Makes the enclosing `cdylib` a CoreCLR profiler: exports `DllGetClassObject` serving `$ty`
/// under the given CLSID. `$ty` is built with `Default`, or with the constructor given third.
///
/// The CLSID is a [`GUID`](crate::GUID) expression, typically a `const` that the rest of the
/// profiler (its tests, its launch script) shares, or its text form as a string literal:
///
/// ```
/// # #[derive(Default)]
/// # struct MyProfiler;
/// # impl corprof::CorProfilerCallback for MyProfiler {}
/// const CLSID: corprof::GUID = corprof::GUID::parse("8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11");
/// corprof::export_profiler!(MyProfiler, CLSID);
/// // or: corprof::export_profiler!(MyProfiler, "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11");
/// // or: corprof::export_profiler!(MyProfiler, CLSID, || MyProfiler::new(42));
/// ```
///
/// The CLSID is evaluated at compile time (a malformed literal is a build error).
#[macro_export]
macro_rules! export_profiler {
    // A literal is matched before `expr`: once captured as `expr` it could not be told apart.
    ($ty:ty, $clsid:literal $(,)?) => {
        $crate::export_profiler!(@export $ty, $crate::GUID::parse($clsid), <$ty as ::core::default::Default>::default);
    };
    ($ty:ty, $clsid:expr $(,)?) => {
        $crate::export_profiler!(@export $ty, $clsid, <$ty as ::core::default::Default>::default);
    };
    ($ty:ty, $clsid:literal, $ctor:expr $(,)?) => {
        $crate::export_profiler!(@export $ty, $crate::GUID::parse($clsid), $ctor);
    };
    ($ty:ty, $clsid:expr, $ctor:expr $(,)?) => {
        $crate::export_profiler!(@export $ty, $clsid, $ctor);
    };
    (@export $ty:ty, $clsid:expr, $ctor:expr) => {
        const _: () = {
            struct Factory__;
            impl $crate::glue::ProfilerFactory for Factory__ {
                type Profiler = $ty;
                const CLSID: $crate::GUID = $clsid;
                fn create() -> $ty {
                    ($ctor)()
                }
            }
            #[unsafe(no_mangle)]
            pub unsafe extern "system" fn DllGetClassObject(
                rclsid: *const $crate::GUID,
                riid: *const $crate::GUID,
                ppv: *mut *mut ::core::ffi::c_void,
            ) -> $crate::HRESULT {
                // SAFETY: the runtime calls DllGetClassObject with pointers as COM's contract has
                // them, which is what `dll_get_class_object` requires.
                unsafe { $crate::glue::dll_get_class_object::<Factory__>(rclsid, riid, ppv) }
            }
        };
    };
}
