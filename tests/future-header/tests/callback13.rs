//! A newer header, proved: ICorProfilerCallback12/13 and ICorProfilerInfo16 come out of the
//! unchanged generator, QueryInterface answers the new IIDs, and Callback13's methods are reached
//! through the vtable as the runtime would call them.

use corprof::{HResult, Interface, Out, WStr};
use corprof::{IUnknown, imp::ComObject};
use future_header::interfaces::*;
use future_header::types::*;
use future_header::wrappers::ProfilerInfo;
use future_header::{CALLBACK_IIDS, CallbackClass, CorProfilerCallback, HIGHEST_CALLBACK};
use std::ffi::c_void;
use std::sync::Mutex;

#[derive(Default)]
struct Future {
    seen: Mutex<Vec<String>>,
}

impl CorProfilerCallback for Future {
    fn object_pinned(&self, object_id: ObjectID, keep: Out<'_, bool>) -> corprof::Result<()> {
        self.seen.lock().unwrap().push(format!("pinned {object_id:#x}"));
        keep.write(true);
        Ok(())
    }

    fn functions_batched(&self, ids: &[FunctionID]) -> corprof::Result<()> {
        self.seen.lock().unwrap().push(format!("batch {ids:?}"));
        Ok(())
    }

    fn thread_renamed(&self, _thread: ThreadID, name: WStr<'_>) -> corprof::Result<()> {
        self.seen.lock().unwrap().push(format!("renamed {name}"));
        Ok(())
    }
}

#[test]
fn the_new_versions_are_generated() {
    assert_eq!(HIGHEST_CALLBACK, "ICorProfilerCallback13");
    assert_eq!(CALLBACK_IIDS.len(), 13);
    assert_eq!(ICorProfilerCallback13::IID.to_string(), "C0FFEE13-0000-4C13-9A13-000000000013");
    // On runtime-info15 (the test command's header): Info16 extends the real Info15.
    assert!(ProfilerInfo::INTERFACES.ends_with(&["ICorProfilerInfo14", "ICorProfilerInfo15", "ICorProfilerInfo16"]));
    // The new Info method has its safe wrapper: a String out of a sized buffer.
    let _: fn(&ProfilerInfo, FunctionID) -> corprof::Result<_> = ProfilerInfo::get_function_tier;
}

#[test]
fn callback13_is_reached_through_the_vtable() {
    let obj = ComObject::<CallbackClass<Future>>::create(Future::default());
    let unknown = unsafe { &*obj };
    for iid in [ICorProfilerCallback12::IID, ICorProfilerCallback13::IID] {
        let mut out: *mut c_void = std::ptr::null_mut();
        assert_eq!(unsafe { unknown.QueryInterface(&iid, &mut out) }, 0, "{iid}");
        assert_eq!(out, obj.cast());
        unsafe { unknown.Release() };
    }
    let cb = obj as *mut ICorProfilerCallback13;
    let vtbl = unsafe { &*cb }.vtable();
    // Sentinel bytes: the bool out must overwrite the whole BOOL.
    let mut keep: BOOL = -1;
    // SAFETY: these IDs only reach this test's own callbacks, never a runtime.
    let ids = unsafe { [FunctionID::from_raw(5), FunctionID::from_raw(6)] };
    let (object, thread) = unsafe { (ObjectID::from_raw(0xabc), ThreadID::from_raw(1)) };
    let name: Vec<u16> = "renamed-worker".encode_utf16().collect();
    unsafe {
        assert_eq!((vtbl.ObjectPinned)(cb, object, &mut keep), 0);
        assert_eq!((vtbl.FunctionsBatched)(cb, 2, ids.as_ptr().cast_mut()), 0);
        assert_eq!((vtbl.base__.ThreadRenamed)(cb.cast(), thread, name.len() as u32, name.as_ptr().cast_mut()), 0);
        assert_eq!(HResult((vtbl.ObjectPinned)(cb, object, std::ptr::null_mut())), HResult::E_POINTER);
    }
    assert_eq!(keep, 1);
    let seen = unsafe { ComObject::<CallbackClass<Future>>::value(obj.cast()) }.seen.lock().unwrap().clone();
    assert_eq!(seen, ["pinned 0xabc", "batch [FunctionID(0x5), FunctionID(0x6)]", "renamed renamed-worker"]);
    assert_eq!(unsafe { (*(obj as *const IUnknown)).Release() }, 0);
}

#[test]
fn a_void_pointer_id_is_a_handle_newtype() {
    fn send_sync<T: Send + Sync + Copy + Eq + std::hash::Hash + Ord + Default>() {}
    send_sync::<FutureHandleID>();
    assert_eq!(std::mem::size_of::<FutureHandleID>(), std::mem::size_of::<*mut c_void>());
    let mut slot = 0u8;
    let raw: *mut c_void = (&raw mut slot).cast();
    // SAFETY: the handle is only compared and printed here.
    let h = unsafe { FutureHandleID::from_raw(raw) };
    assert_eq!(h.as_raw(), raw);
    assert!(FutureHandleID::default().is_null() && !h.is_null());
    assert_eq!(h.to_string(), format!("{:#x}", raw as usize));
}
