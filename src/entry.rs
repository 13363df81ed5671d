//! What generated thunks and the export macro call: the panic guard around every callback, and
//! the class factory behind `DllGetClassObject`.

use crate::com::{ComClass, ComObject, IUnknown, IUnknown_Vtbl};
use crate::report::{is_quiet, log_panic, report_initialize_failure, report_panic};
use crate::{CallbackClass, CorProfilerCallback, GUID, HRESULT, HResult, Result};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};

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
    // SAFETY: the caller passes the Info object argument of the call: null or a live COM object
    // for the call's duration, whose first field is its vtable pointer, as `IUnknown` is laid out.
    let unknown = unsafe { info.cast::<crate::IUnknown>().as_ref() };
    // Before the profiler's code runs: an ID it is handed (`enum_modules` in InitializeForAttach)
    // is tracked from the start.
    crate::unloads::start(unknown);
    // SAFETY: the caller's contract, passed on.
    let hr = unsafe { dispatch::<C>(this, name, body) };
    if hr >= 0 {
        crate::unloads::confirm(unknown);
    }
    hr
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

/// What `export_profiler!` fills in: the profiler type, its CLSID and how to make one.
pub trait ProfilerFactory: 'static {
    /// The profiler type the factory makes.
    type Profiler: CorProfilerCallback;
    /// The CLSID the runtime asks for (`CORECLR_PROFILER`).
    const CLSID: GUID;
    /// Makes one profiler object, when the runtime asks for an instance.
    fn create() -> Self::Profiler;
}

/// `IClassFactory`'s vtable (standard COM, not part of corprof.h).
#[repr(C)]
#[allow(non_snake_case, non_camel_case_types)]
pub struct IClassFactory_Vtbl {
    /// `IUnknown`'s three slots.
    pub base__: IUnknown_Vtbl,
    /// `IClassFactory::CreateInstance`.
    pub CreateInstance:
        unsafe extern "system" fn(*mut IUnknown, *mut IUnknown, *const GUID, *mut *mut c_void) -> HRESULT,
    /// `IClassFactory::LockServer`.
    pub LockServer: unsafe extern "system" fn(*mut IUnknown, i32) -> HRESULT,
}

/// `IID_IClassFactory`, what the runtime asks `DllGetClassObject` for.
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
            impl $crate::imp::ProfilerFactory for Factory__ {
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
                unsafe { $crate::imp::dll_get_class_object::<Factory__>(rclsid, riid, ppv) }
            }
        };
    };
}
