//! The heap walk's closure plumbing (`corprof::heap_walk`) against a fake ICorProfilerInfo15:
//! every object in order, a stop, a panic caught before the runtime and raised again after it,
//! the two ways in (under a `Suspension`, or the runtime suspending itself) and what each refuses,
//! and `E_NOINTERFACE` from an object that stops at Info14 (as CoreCLR 8.0.4 does). The real
//! runtimes' answers are in tests/runtime/conformance.rs (`gcheapenumeration`).
#![cfg(corprof_iface = "ICorProfilerInfo15")]

use crate::fake_info;
use corprof::interfaces::{ICorProfilerInfo10_Vtbl, ICorProfilerInfo15, ICorProfilerInfo15_Vtbl};
use corprof::types::{ObjectCallback, ObjectID};
use corprof::{HRESULT, HResult, Interface, ProfilerInfo};
use std::ffi::c_void;
use std::mem::offset_of;
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// The suspension flags are process-wide: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const OBJECTS: [usize; 3] = [0x1000, 0x2000, 0x3000];

/// What the fake runtime saw.
#[derive(Default)]
struct FakeInfo {
    /// Objects handed to the callback, and the callback's answers.
    handed: AtomicUsize,
    stopped_at: AtomicUsize,
    suspends: AtomicUsize,
    resumes: AtomicUsize,
}

/// # Safety
/// `p` is what the fake's slots are called with: the fake `fake` made over a `FakeInfo`.
unsafe fn this<'a>(p: *mut c_void) -> &'a FakeInfo {
    // SAFETY: the caller's contract.
    unsafe { fake_info::state::<FakeInfo>(p) }
}

unsafe extern "system" fn suspend(p: *mut c_void) -> HRESULT {
    // SAFETY: a slot of the fake, called with it.
    unsafe { this(p) }.suspends.fetch_add(1, SeqCst);
    0
}
unsafe extern "system" fn resume(p: *mut c_void) -> HRESULT {
    // SAFETY: a slot of the fake, called with it.
    unsafe { this(p) }.resumes.fetch_add(1, SeqCst);
    0
}
/// As the runtime's walk: each object in turn until the callback answers FALSE.
unsafe extern "system" fn enumerate(p: *mut c_void, callback: ObjectCallback, state: *mut c_void) -> HRESULT {
    let Some(callback) = callback else { return HResult::E_INVALIDARG.0 };
    // SAFETY: a slot of the fake, called with it.
    let fake = unsafe { this(p) };
    for raw in OBJECTS {
        fake.handed.fetch_add(1, SeqCst);
        // SAFETY: the object IDs are the fake heap's; `state` is the caller's.
        let go_on = unsafe { callback(ObjectID::from_raw(raw), state) };
        if go_on == 0 {
            fake.stopped_at.store(raw, SeqCst);
            break;
        }
    }
    0
}

/// A fake runtime with Info15 (or, `has_info15` false, stopping at Info14 as CoreCLR 8.0.4 does)
/// whose SuspendRuntime, ResumeRuntime and EnumerateGCHeapObjects count what they are asked.
fn fake(has_info15: bool) -> (&'static FakeInfo, ProfilerInfo) {
    let info10 = offset_of!(ICorProfilerInfo15_Vtbl, base__.base__.base__.base__.base__);
    let slots = [
        (info10 + offset_of!(ICorProfilerInfo10_Vtbl, SuspendRuntime), suspend as *const () as usize),
        (info10 + offset_of!(ICorProfilerInfo10_Vtbl, ResumeRuntime), resume as *const () as usize),
        (offset_of!(ICorProfilerInfo15_Vtbl, EnumerateGCHeapObjects), enumerate as *const () as usize),
    ];
    let refused = (!has_info15).then_some(ICorProfilerInfo15::IID);
    fake_info::fake::<ICorProfilerInfo15_Vtbl, _>(FakeInfo::default(), refused, &slots)
}

fn raws(ids: &[ObjectID]) -> Vec<usize> {
    ids.iter().map(|id| id.as_raw()).collect()
}

#[test]
fn every_object_reaches_the_closure_in_order_both_ways() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (obj, info) = fake(true);
    assert_eq!(info.interface_name(), "ICorProfilerInfo15");
    let mut seen = Vec::new();
    info.enumerate_gc_heap_objects_with(|id| {
        seen.push(id);
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(raws(&seen), OBJECTS);
    assert_eq!(obj.stopped_at.load(SeqCst), 0, "the closure never answered FALSE");

    let suspension = info.suspend_runtime().unwrap();
    let mut again = Vec::new();
    suspension
        .enumerate_gc_heap_objects(|id| {
            again.push(id);
            ControlFlow::Continue(())
        })
        .unwrap();
    drop(suspension);
    assert_eq!(raws(&again), OBJECTS);
    assert_eq!((obj.suspends.load(SeqCst), obj.resumes.load(SeqCst)), (1, 1));
}

#[test]
fn break_stops_the_walk_at_that_object() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (obj, info) = fake(true);
    let mut seen = 0;
    info.enumerate_gc_heap_objects_with(|id| {
        seen += 1;
        if id.as_raw() == OBJECTS[1] { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    })
    .unwrap();
    assert_eq!(seen, 2);
    assert_eq!(obj.stopped_at.load(SeqCst), OBJECTS[1], "FALSE went back to the runtime at the second object");
    assert_eq!(obj.handed.load(SeqCst), 2);
}

#[test]
fn a_panic_stops_the_walk_and_is_raised_after_the_runtime_returns() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (obj, info) = fake(true);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = info.enumerate_gc_heap_objects_with(|id| {
            if id.as_raw() == OBJECTS[1] {
                panic!("closure panic at {id:?}");
            }
            ControlFlow::Continue(())
        });
    }));
    let payload = caught.expect_err("the closure's panic is raised again from the call");
    assert!(payload.downcast_ref::<String>().is_some_and(|m| m.starts_with("closure panic at")));
    // The runtime (the fake) got FALSE at the panicking object and returned before the unwind.
    assert_eq!(obj.stopped_at.load(SeqCst), OBJECTS[1]);
    assert_eq!(obj.handed.load(SeqCst), 2);
    // The unwind released the suspension flags: a guard can be taken again.
    let suspension = info.suspend_runtime().expect("the panic left no suspension flag behind");
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = suspension.enumerate_gc_heap_objects(|_| panic!("under the guard"));
    }));
    assert!(caught.is_err());
    drop(suspension);
    assert_eq!((obj.suspends.load(SeqCst), obj.resumes.load(SeqCst)), (1, 1));
}

#[test]
fn the_self_suspending_walk_is_refused_under_a_suspension_and_refuses_suspending_calls() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (obj, info) = fake(true);
    let suspension = info.suspend_runtime().unwrap();
    let refused = info.enumerate_gc_heap_objects_with(|_| ControlFlow::Continue(()));
    assert_eq!(refused, Err(HResult::CORPROF_E_SUSPENSION_IN_PROGRESS));
    // From another thread too: the runtime's one flag for a profiler suspension is taken.
    std::thread::scope(|s| {
        let other = s.spawn(|| info.enumerate_gc_heap_objects_with(|_| ControlFlow::Continue(()))).join().unwrap();
        assert_eq!(other, Err(HResult::CORPROF_E_SUSPENSION_IN_PROGRESS));
    });
    assert_eq!(obj.handed.load(SeqCst), 0, "the runtime was not asked");
    drop(suspension);
    // Inside the walk the runtime holds itself suspended on this thread: a call for which it
    // would suspend itself again (ForceGC) is refused before it reaches the runtime.
    let mut inner = None;
    info.enumerate_gc_heap_objects_with(|_| {
        inner.get_or_insert_with(|| info.force_gc());
        ControlFlow::Break(())
    })
    .unwrap();
    assert_eq!(inner, Some(Err(HResult::CORPROF_E_SUSPENSION_IN_PROGRESS)));
    assert!(info.force_gc().is_err_and(|e| e != HResult::CORPROF_E_SUSPENSION_IN_PROGRESS), "refused only inside");
}

#[test]
fn a_runtime_without_info15_answers_e_nointerface_and_never_calls_the_closure() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (obj, info) = fake(false);
    assert_eq!(info.interface_name(), "ICorProfilerInfo14");
    let mut called = false;
    let walk = info.enumerate_gc_heap_objects_with(|_| {
        called = true;
        ControlFlow::Continue(())
    });
    assert_eq!(walk, Err(HResult::E_NOINTERFACE));
    let suspension = info.suspend_runtime().unwrap();
    assert_eq!(suspension.enumerate_gc_heap_objects(|_| ControlFlow::Continue(())), Err(HResult::E_NOINTERFACE));
    drop(suspension);
    assert!(!called);
    assert_eq!(obj.handed.load(SeqCst), 0);
}
