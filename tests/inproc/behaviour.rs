//! Calls a Rust profiler the way CoreCLR does: through `DllGetClassObject`, the class factory and
//! raw vtable pointers of the bindings generated from the real corprof.h.

use corprof::interfaces::*;
use corprof::types::*;
use corprof::{CALLBACK_IIDS, CorProfilerCallback, GUID, HIGHEST_CALLBACK, HResult, IUnknown, Interface, Out};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};

const CLSID: &str = "5D4C3B2A-1F0E-4D6C-8B7A-695847362514";

/// IDs as the runtime would hand them out (this test plays the runtime).
fn oid(raw: usize) -> ObjectID {
    // SAFETY: these IDs only reach the test profiler, never a runtime.
    unsafe { ObjectID::from_raw(raw) }
}

fn fid(raw: usize) -> FunctionID {
    // SAFETY: as for `oid`.
    unsafe { FunctionID::from_raw(raw) }
}

static DROPS: AtomicUsize = AtomicUsize::new(0);
static JIT_STARTED: AtomicUsize = AtomicUsize::new(0);
/// The client data each `InitializeForAttach` call saw, in order.
static ATTACH_DATA: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

#[derive(Default)]
struct TestProfiler;

impl Drop for TestProfiler {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

impl CorProfilerCallback for TestProfiler {
    fn initialize(&self, info: &IUnknown) -> corprof::Result<()> {
        // The object handed in must be queryable; here it is the profiler itself.
        let again = info.query::<ICorProfilerCallback>()?;
        drop(again);
        Ok(())
    }

    fn initialize_for_attach(&self, _info: &IUnknown, client_data: &[u8]) -> corprof::Result<()> {
        ATTACH_DATA.lock().unwrap().push(client_data.to_vec());
        Ok(())
    }

    fn jit_compilation_started(&self, function_id: FunctionID, safe: bool) -> corprof::Result<()> {
        JIT_STARTED.fetch_add(function_id.as_raw() + usize::from(safe), Ordering::SeqCst);
        Ok(())
    }

    fn jit_inlining(
        &self,
        _caller: FunctionID,
        callee: FunctionID,
        should_inline: Out<'_, bool>,
    ) -> corprof::Result<()> {
        should_inline.write(callee.as_raw() % 2 == 1);
        Ok(())
    }

    fn moved_references(&self, old: &[ObjectID], new: &[ObjectID], len: &[ULONG]) -> corprof::Result<()> {
        assert_eq!((old, new, len), (&[oid(1), oid(2)][..], &[oid(10), oid(20)][..], &[8, 16][..]));
        Ok(())
    }

    fn exception_thrown(&self, thrown: corprof::LiveObject<'_>) -> corprof::Result<()> {
        if thrown.id() == oid(0xdead) {
            panic!("boom in a callback");
        }
        if thrown.id() == oid(0xbeef) {
            std::panic::panic_any(42u32);
        }
        Ok(())
    }

    fn thread_name_changed(&self, _thread: ThreadID, name: Option<corprof::WStr<'_>>) -> corprof::Result<()> {
        match name {
            Some(n) if n.to_string() == "worker" => Ok(()),
            _ => Err(HResult::E_INVALIDARG),
        }
    }
}

corprof::export_profiler!(TestProfiler, "5D4C3B2A-1F0E-4D6C-8B7A-695847362514");

// The runtime finds the export by its symbol name; so does this test.
unsafe extern "system" {
    fn DllGetClassObject(rclsid: *const GUID, riid: *const GUID, ppv: *mut *mut c_void) -> corprof::HRESULT;
}

/// The callback interface CoreCLR 8 asks for (the newest of today's headers; a later header's
/// newer one derives from it, so these tests hold through a bump).
type Newest = ICorProfilerCallback11;

fn unknown(p: *mut c_void) -> &'static IUnknown {
    // SAFETY: the test passes only live objects from `create` or `DllGetClassObject`, whose first field is the vtable pointer, as `IUnknown`'s.
    unsafe { &*(p as *const IUnknown) }
}

/// Creates a profiler through the exported entry points, as the runtime does.
fn create() -> *mut Newest {
    let clsid = GUID::parse(CLSID);
    let mut factory: *mut c_void = null_mut();
    // SAFETY: valid GUIDs and a valid out pointer.
    let hr = unsafe { DllGetClassObject(&clsid, &corprof::imp::IID_ICLASSFACTORY, &mut factory) };
    assert_eq!(hr, 0);
    // SAFETY: `factory` is the class factory `DllGetClassObject` just returned (hr 0 checked).
    let vt = unsafe { &**(factory as *const *const corprof::imp::IClassFactory_Vtbl) };
    let mut obj: *mut c_void = null_mut();
    // SAFETY: a live factory, no outer object, a valid IID and out pointer.
    let hr = unsafe { (vt.CreateInstance)(factory.cast(), null_mut(), &Newest::IID, &mut obj) };
    assert_eq!(hr, 0);
    // SAFETY: releases the factory's only reference; it is not used again.
    assert_eq!(unsafe { unknown(factory).Release() }, 0, "the factory is freed at its last Release");
    obj.cast()
}

fn vtbl(p: *mut Newest) -> &'static ICorProfilerCallback11_Vtbl {
    // SAFETY: `p` is the live profiler object `create` returned; the tests release it last.
    unsafe { &*p }.vtable()
}

/// The ICorProfilerCallback (version 1) part of the newest vtable.
fn v1(p: *mut Newest) -> &'static ICorProfilerCallback_Vtbl {
    let v = vtbl(p);
    &v.base__.base__.base__.base__.base__.base__.base__.base__.base__.base__
}

#[test]
fn query_interface_answers_iunknown_and_every_callback_version() {
    let p = create();
    let unk = unknown(p.cast());
    // One IID per version up to the header's newest (ICorProfilerCallback11 today): read from
    // the header's own name for it, so a header bump changes nothing here.
    let versions: usize = HIGHEST_CALLBACK.trim_start_matches("ICorProfilerCallback").parse().unwrap_or(1);
    assert_eq!(CALLBACK_IIDS.len(), versions, "one IID per version up to {HIGHEST_CALLBACK}");
    assert!(versions >= 11, "CoreCLR 8 asks for ICorProfilerCallback11: the header must declare it");
    for iid in CALLBACK_IIDS.iter().chain([&IUnknown::IID]) {
        let mut out: *mut c_void = null_mut();
        // SAFETY: `unk` is live (one reference held); every call below passes a valid IID and out pointer or, for the E_POINTER case, null, which QueryInterface must refuse.
        assert_eq!(unsafe { unk.QueryInterface(iid, &mut out) }, 0, "{iid}");
        assert_eq!(out, p.cast(), "one object serves every version");
        assert_eq!(unsafe { unk.Release() }, 1);
    }
    let mut out: *mut c_void = std::ptr::dangling_mut();
    let other = ICorProfilerInfo::IID;
    assert_eq!(HResult(unsafe { unk.QueryInterface(&other, &mut out) }), HResult::E_NOINTERFACE);
    assert!(out.is_null(), "E_NOINTERFACE nulls the out pointer");
    assert_eq!(HResult(unsafe { unk.QueryInterface(&other, null_mut()) }), HResult::E_POINTER);
    unsafe { unk.Release() };
}

#[test]
fn reference_counting_frees_at_the_last_release() {
    let before = DROPS.load(Ordering::SeqCst);
    let p = create();
    let unk = unknown(p.cast());
    // SAFETY: `unk` is live; the Releases below never drop the count under the one `create` gave.
    assert_eq!(unsafe { unk.AddRef() }, 2);
    assert_eq!(unsafe { unk.AddRef() }, 3);
    assert_eq!(unsafe { unk.Release() }, 2);
    assert_eq!(unsafe { unk.Release() }, 1);
    assert_eq!(DROPS.load(Ordering::SeqCst), before);
    assert_eq!(unsafe { unk.Release() }, 0);
    assert_eq!(DROPS.load(Ordering::SeqCst), before + 1, "dropped exactly once");
}

#[test]
fn a_wrong_clsid_is_refused() {
    let other = GUID::parse("00000000-1111-2222-3333-444444444444");
    let mut out: *mut c_void = std::ptr::dangling_mut();
    // SAFETY: a valid GUID pair and out pointer.
    let hr = unsafe { DllGetClassObject(&other, &corprof::imp::IID_ICLASSFACTORY, &mut out) };
    assert_eq!(HResult(hr), HResult::CLASS_E_CLASSNOTAVAILABLE);
    assert!(out.is_null());
}

#[test]
fn callbacks_of_each_shape_reach_the_profiler() {
    let p = create();
    let v = v1(p);
    // SAFETY: `p` is live, each call passes it as `this` with the arguments its slot declares.
    unsafe {
        assert_eq!((v.Initialize)(p.cast(), p.cast()), 0);
        let before = JIT_STARTED.load(Ordering::SeqCst);
        assert_eq!((v.JITCompilationStarted)(p.cast(), fid(100), 1), 0);
        assert_eq!(JIT_STARTED.load(Ordering::SeqCst), before + 101);
        let mut inline: BOOL = 7;
        assert_eq!((v.JITInlining)(p.cast(), fid(1), fid(3), &mut inline), 0);
        assert_eq!(inline, 1, "out parameter written");
        let (old, new, len) = ([oid(1), oid(2)], [oid(10), oid(20)], [8u32, 16]);
        let hr =
            (v.MovedReferences)(p.cast(), 2, old.as_ptr().cast_mut(), new.as_ptr().cast_mut(), len.as_ptr().cast_mut());
        assert_eq!(hr, 0);
        let name: Vec<u16> = "worker".encode_utf16().collect();
        let v2 = &vtbl(p).base__.base__.base__.base__.base__.base__.base__.base__.base__;
        assert_eq!((v2.ThreadNameChanged)(p.cast(), ThreadID::NULL, name.len() as u32, name.as_ptr().cast_mut()), 0);
        assert_eq!(HResult((v2.ThreadNameChanged)(p.cast(), ThreadID::NULL, 0, null_mut())), HResult::E_INVALIDARG);
        // Slots the profiler does not implement answer S_OK.
        assert_eq!((vtbl(p).LoadAsNotificationOnly)(p.cast(), &mut inline), 0);
        assert_eq!((v.Shutdown)(p.cast()), 0);
        unknown(p.cast()).Release();
    }
}

#[test]
fn attach_client_data_arrives_as_bytes() {
    let p = create();
    let v3 = &vtbl(p).base__.base__.base__.base__.base__.base__.base__.base__;
    let data = *b"hello\0attach";
    // SAFETY: `p` is live; the client data pointers point to `data`'s bytes for the lengths passed (or are null with 0).
    unsafe {
        assert_eq!((v3.InitializeForAttach)(p.cast(), p.cast(), null_mut(), 0), 0, "null with 0");
        assert_eq!((v3.InitializeForAttach)(p.cast(), p.cast(), data.as_ptr().cast_mut().cast(), data.len() as u32), 0);
        assert_eq!((v3.InitializeForAttach)(p.cast(), p.cast(), data.as_ptr().cast_mut().cast(), 5), 0);
        unknown(p.cast()).Release();
    }
    let seen = ATTACH_DATA.lock().unwrap().clone();
    assert_eq!(seen, [b"".to_vec(), b"hello\0attach".to_vec(), b"hello".to_vec()]);
}

#[test]
fn a_panic_in_a_callback_becomes_e_fail_and_the_process_goes_on() {
    let p = create();
    let v = v1(p);
    // SAFETY: as in `callbacks_of_each_shape_reach_the_profiler`: `p` is live and passed as `this`.
    unsafe {
        assert_eq!(HResult((v.ExceptionThrown)(p.cast(), oid(0xdead))), HResult::E_FAIL);
        assert_eq!(HResult((v.ExceptionThrown)(p.cast(), oid(0xbeef))), HResult::E_FAIL, "non-string payload");
        assert_eq!((v.ExceptionThrown)(p.cast(), oid(1)), 0, "the object still works after a panic");
        unknown(p.cast()).Release();
    }
}

#[test]
fn every_callback_version_shares_one_vtable_prefix() {
    // Slot 3 (first after IUnknown) is Initialize in every version.
    let p = create();
    let newest = vtbl(p) as *const _ as *const c_void;
    assert_eq!(newest, v1(p) as *const _ as *const c_void);
    assert_eq!(std::mem::size_of::<ICorProfilerCallback_Vtbl>(), (3 + 69) * 8);
    // SAFETY: the test's only reference; `p` is not used again.
    unsafe { unknown(p.cast()).Release() };
}
