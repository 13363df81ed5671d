//! The golden files of corprof-gen's fixtures (every `expected.rs`, found by build.rs) compile
//! against this crate, and the code they hold works: a profiler for the `directions` fixture is called through its raw vtable, once per
//! parameter shape (in, out, ref, opaque, array, counted and NUL-terminated text, optional).
//! The `callback-outputs` fixture proves `Out<T>`, `&mut T` and `Option<&mut T>`, each passed as
//! the only null pointer of a call (`E_POINTER`, or `None` when optional).

// One module per fixture with an `expected.rs` (`directions`, `calls`, …), found by build.rs.
include!(concat!(env!("OUT_DIR"), "/golden_modules.rs"));

use corprof::imp::ComObject;
use corprof::{HResult, Interface, Out, WStr};
use directions::callbacks::{CallbackClass, CorProfilerCallback};
use directions::interfaces::{ICorProfilerCallback2, IHelperFixture};
use directions::types::*;
use std::ffi::c_void;
use std::sync::Mutex;

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
}

impl Recorder {
    fn log(&self, s: String) {
        self.seen.lock().unwrap().push(s);
    }
}

impl CorProfilerCallback for Recorder {
    fn values(&self, function_id: FunctionID, hr_status: HResult, r#type: i32) -> corprof::Result<()> {
        self.log(format!("values {function_id} {hr_status} {type}", type = r#type));
        Err(HResult(0x8013_1350u32 as i32))
    }

    fn directions(
        &self,
        range: &FIX_RANGE,
        done: Out<'_, bool>,
        counter: &mut ULONG,
        client: *mut c_void,
    ) -> corprof::Result<()> {
        self.log(format!("directions {}+{} {client:?}", range.start, range.length));
        done.write(true);
        *counter += 10;
        Ok(())
    }

    fn arrays(
        &self,
        ids: &[FunctionID],
        name: Option<WStr<'_>>,
        path: WStr<'_>,
        guid: &corprof::GUID,
    ) -> corprof::Result<()> {
        self.log(format!("arrays {ids:?} {:?} {path} {guid}", name.map(|n| n.to_string())));
        Ok(())
    }

    fn later(&self, flags: FIX_FLAGS, helper: Option<&IHelperFixture>) -> corprof::Result<()> {
        self.log(format!("later {flags} {}", helper.is_some()));
        Ok(())
    }
}

/// A profiler object and its vtable, as the runtime holds them.
struct Obj(*mut ICorProfilerCallback2);

impl Obj {
    fn new() -> Obj {
        Obj(ComObject::<CallbackClass<Recorder>>::create(Recorder::default()).cast())
    }
    fn vtbl(&self) -> &directions::interfaces::ICorProfilerCallback2_Vtbl {
        unsafe { &*self.0 }.vtable()
    }
    fn seen(&self) -> Vec<String> {
        unsafe { ComObject::<CallbackClass<Recorder>>::value(self.0.cast()) }.seen.lock().unwrap().clone()
    }
}

impl Drop for Obj {
    fn drop(&mut self) {
        unsafe { (self.vtbl().base__.base__.Release)(self.0.cast()) };
    }
}

/// A FunctionID as the runtime would hand it out (this test plays the runtime).
fn fid(raw: usize) -> FunctionID {
    // SAFETY: the ID only reaches the test profiler.
    unsafe { FunctionID::from_raw(raw) }
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain([0]).collect()
}

#[test]
fn values_pass_through_and_errors_come_back_as_hresults() {
    let o = Obj::new();
    let hr = unsafe { (o.vtbl().base__.Values)(o.0.cast(), fid(0x77), HResult::E_FAIL.0, -3) };
    assert_eq!(hr, 0x8013_1350u32 as i32);
    assert_eq!(o.seen(), ["values 0x77 E_FAIL (0x80004005) -3"]);
}

#[test]
fn in_out_ref_and_opaque_pointers() {
    let o = Obj::new();
    let range = FIX_RANGE { start: 0x1000, length: 16 };
    let (mut done, mut counter) = (-1, 5u32);
    let hr = unsafe { (o.vtbl().base__.Directions)(o.0.cast(), &range, &mut done, &mut counter, 0x42 as *mut c_void) };
    assert_eq!(hr, 0);
    assert_eq!((done, counter), (1, 15));
    assert_eq!(o.seen(), ["directions 4096+16 0x42"]);
}

#[test]
fn a_null_required_pointer_is_refused_before_the_profiler_runs() {
    let o = Obj::new();
    let mut counter = 0u32;
    let hr = unsafe {
        (o.vtbl().base__.Directions)(
            o.0.cast(),
            std::ptr::null(),
            std::ptr::null_mut(),
            &mut counter,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(HResult(hr), HResult::E_POINTER);
    assert!(o.seen().is_empty());
}

#[test]
fn arrays_counted_text_terminated_text_and_guids() {
    let o = Obj::new();
    let ids = [fid(3), fid(4), fid(5)];
    let name: Vec<u16> = "Worker-1".encode_utf16().collect();
    let path = wide("/app/App.dll");
    let guid = corprof::GUID::parse("11111111-2222-3333-4444-555555555555");
    unsafe {
        let f = o.vtbl().base__.Arrays;
        assert_eq!(f(o.0.cast(), 2, ids.as_ptr().cast_mut(), 6, name.as_ptr().cast_mut(), path.as_ptr(), &guid), 0);
        assert_eq!(f(o.0.cast(), 0, std::ptr::null_mut(), 0, std::ptr::null_mut(), path.as_ptr(), &guid), 0);
    }
    assert_eq!(
        o.seen(),
        [
            "arrays [FunctionID(0x3), FunctionID(0x4)] Some(\"Worker\") /app/App.dll 11111111-2222-3333-4444-555555555555",
            "arrays [] None /app/App.dll 11111111-2222-3333-4444-555555555555",
        ]
    );
}

#[test]
fn derived_version_slots_and_optional_interfaces() {
    let o = Obj::new();
    let hr =
        unsafe { (o.vtbl().Later)(o.0.cast(), FIX_FLAGS::FIX_FLAG_A | FIX_FLAGS::FIX_FLAG_B, std::ptr::null_mut()) };
    assert_eq!(hr, 0);
    assert_eq!(o.seen(), ["later FIX_FLAG_A | FIX_FLAG_B false"]);
    assert_eq!(directions::callbacks::HIGHEST_CALLBACK, "ICorProfilerCallback2");
    assert_eq!(directions::callbacks::CALLBACK_IIDS.len(), 2);
}

#[test]
fn the_note_fixture_generated_the_same_api() {
    assert_eq!(note_absent_interface::callbacks::Callback::ALL.len(), directions::callbacks::Callback::ALL.len());
}

/// The `callback-outputs` fixture: `Out<T>`, `&mut T` and `Option<&mut T>` (shapes no callback of
/// .NET 8's header has), each passed as the only null pointer of a call.
mod outputs {
    use super::callback_outputs::callbacks::{Callback, CallbackClass, CorProfilerCallback};
    use super::callback_outputs::interfaces::ICorProfilerCallback;
    use super::callback_outputs::types::ULONG;
    use corprof::imp::ComObject;
    use corprof::{HResult, Interface, Out};
    use std::ptr::null_mut;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    struct Answers {
        before: Mutex<Vec<Callback>>,
        reached: Mutex<Vec<String>>,
        /// Whether `outputs` writes through its pointers: off for the null calls, so that a
        /// null let through shows as a reached call, not as a crash.
        write: AtomicBool,
    }

    impl CorProfilerCallback for Answers {
        fn before_callback(&self, callback: Callback) {
            self.before.lock().unwrap().push(callback);
        }

        fn outputs(&self, total: Out<'_, ULONG>, budget: &mut ULONG, spare: Option<&mut ULONG>) -> corprof::Result<()> {
            self.reached.lock().unwrap().push(format!("outputs spare {}", spare.is_some()));
            if self.write.load(Ordering::SeqCst) {
                total.write(42);
                *budget -= 1;
                if let Some(spare) = spare {
                    *spare += 100;
                }
            }
            Ok(())
        }
    }

    struct Obj(*mut ICorProfilerCallback);

    impl Obj {
        fn new() -> Obj {
            Obj(ComObject::<CallbackClass<Answers>>::create(Answers::default()).cast())
        }

        fn value(&self) -> &Answers {
            // SAFETY: `self.0` is a live `ComObject<CallbackClass<Answers>>` until `drop`.
            unsafe { ComObject::<CallbackClass<Answers>>::value(self.0.cast()) }
        }

        fn call(&self, total: *mut ULONG, budget: *mut ULONG, spare: *mut ULONG) -> HResult {
            // SAFETY: `self.0` is live; each pointer is a live local of the caller or null.
            HResult(unsafe { (self.0.as_ref().unwrap().vtable().Outputs)(self.0, total, budget, spare) })
        }

        /// What `before_callback` saw and what `outputs` reached, since the last call.
        fn take(&self) -> (Vec<Callback>, Vec<String>) {
            let v = self.value();
            (std::mem::take(&mut v.before.lock().unwrap()), std::mem::take(&mut v.reached.lock().unwrap()))
        }
    }

    impl Drop for Obj {
        fn drop(&mut self) {
            // SAFETY: releases the reference `new` made; the pointer is not used again.
            unsafe { (*self.0.cast::<corprof::IUnknown>()).Release() };
        }
    }

    fn refused(o: &Obj, hr: HResult) {
        assert_eq!(hr, HResult::E_POINTER);
        assert_eq!(o.take(), (vec![Callback::Outputs], vec![]), "seen by before_callback, the method not run");
    }

    #[test]
    fn outs_and_refs_are_written() {
        let o = Obj::new();
        o.value().write.store(true, Ordering::SeqCst);
        let (mut total, mut budget, mut spare) = (0, 10, 1);
        assert_eq!(o.call(&mut total, &mut budget, &mut spare), HResult::S_OK);
        assert_eq!((total, budget, spare), (42, 9, 101));
        assert_eq!(o.take(), (vec![Callback::Outputs], vec!["outputs spare true".to_string()]));
    }

    #[test]
    fn a_null_out_is_refused() {
        let o = Obj::new();
        let (mut budget, mut spare) = (10, 1);
        refused(&o, o.call(null_mut(), &mut budget, &mut spare));
    }

    #[test]
    fn a_null_ref_is_refused() {
        let o = Obj::new();
        let (mut total, mut spare) = (0, 1);
        refused(&o, o.call(&mut total, null_mut(), &mut spare));
    }

    #[test]
    fn a_null_optional_ref_arrives_as_none() {
        let o = Obj::new();
        let (mut total, mut budget) = (0, 10);
        assert_eq!(o.call(&mut total, &mut budget, null_mut()), HResult::S_OK);
        assert_eq!(o.take(), (vec![Callback::Outputs], vec!["outputs spare false".to_string()]));
    }
}
