//! What generated thunks and the export macro call: the panic guard around every callback, and
//! the class factory behind `DllGetClassObject`.

use crate::com::{ComClass, ComObject, IUnknown, IUnknown_Vtbl};
use crate::{CallbackClass, CorProfilerCallback, GUID, HRESULT, HResult, Result};
use std::any::Any;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs a callback body on the object behind `this`. A panic never crosses into the runtime: it
/// is logged with the callback's name and reported as `E_FAIL`. The guard costs nothing unless a
/// panic happens (unwinding tables only).
///
/// # Safety
/// `this` must be a live `ComObject<C>`.
#[inline(always)]
pub unsafe fn dispatch<C: ComClass>(
    this: *mut c_void,
    name: &'static str,
    body: impl FnOnce(&C::Value) -> Result<()>,
) -> HRESULT {
    let value = unsafe { ComObject::<C>::value(this) };
    match catch_unwind(AssertUnwindSafe(|| body(value))) {
        Ok(Ok(())) => HResult::S_OK.0,
        Ok(Err(e)) => e.0,
        Err(payload) => report_panic(name, payload),
    }
}

#[cold]
#[inline(never)]
fn report_panic(name: &str, payload: Box<dyn Any + Send>) -> HRESULT {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string());
    // One write under the stderr lock, so lines from callbacks panicking on several threads at
    // once do not interleave.
    let line = format!("corprof: callback {name} panicked: {msg}; returned E_FAIL to the runtime\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    // Dropping a payload can itself panic; never let that unwind into the runtime.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    HResult::E_FAIL.0
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
    unsafe { *ppv = std::ptr::null_mut() };
    if !outer.is_null() {
        return HResult::CLASS_E_NOAGGREGATION.0;
    }
    let profiler = match catch_unwind(F::create) {
        Ok(p) => p,
        Err(payload) => return report_panic("(profiler constructor)", payload),
    };
    let obj = ComObject::<CallbackClass<F::Profiler>>::create(profiler);
    // The QueryInterface takes the caller's reference; dropping ours leaves exactly that one.
    unsafe {
        let hr = (*obj).QueryInterface(riid, ppv);
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
/// under `$clsid` (text form). `$ty` is built with `Default`, or with the given constructor.
///
/// ```ignore
/// corprof::export_profiler!(MyProfiler, "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11");
/// ```
#[macro_export]
macro_rules! export_profiler {
    ($ty:ty, $clsid:literal) => {
        $crate::export_profiler!($ty, $clsid, <$ty as ::core::default::Default>::default);
    };
    ($ty:ty, $clsid:literal, $ctor:expr) => {
        const _: () = {
            struct Factory__;
            impl $crate::glue::ProfilerFactory for Factory__ {
                type Profiler = $ty;
                const CLSID: $crate::GUID = $crate::GUID::parse($clsid);
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
                unsafe { $crate::glue::dll_get_class_object::<Factory__>(rclsid, riid, ppv) }
            }
        };
    };
}
