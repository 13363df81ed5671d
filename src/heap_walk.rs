//! Heap walks with a closure, over
//! [`ICorProfilerInfo15::EnumerateGCHeapObjects`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo15-enumerategcheapobjects-method)
//! (.NET 9; compiled when the header declares ICorProfilerInfo15): every object of the GC heap,
//! one [`ObjectID`] at a time, to a closure that returns [`ControlFlow::Break`] to stop.
//!
//! The generated [`ProfilerInfo::enumerate_gc_heap_objects`] stays what the header declares: an
//! `unsafe` call taking an `ObjectCallback` function pointer and a `void *` for it. The two safe
//! faces here put a trampoline of their own in that slot, as the stack walks do
//! ([`crate::stack`]), one for each way the runtime allows the walk (its `gcheapenumeration`
//! test runs both):
//!
//! - **under a suspension the profiler holds**, from the thread that holds it:
//!   [`Suspension::enumerate_gc_heap_objects`] (the runtime walks within that suspension);
//! - **on its own**: [`ProfilerInfo::enumerate_gc_heap_objects_with`], for which the runtime
//!   suspends itself and resumes when the walk is over (waiting for a GC in progress first). It
//!   is refused here with `CORPROF_E_SUSPENSION_IN_PROGRESS` while a [`Suspension`] is alive, in
//!   any thread: on its own thread the guard's method is the call, on another the runtime's one
//!   "profiler suspended the runtime" flag would be shared by two threads.
//!
//! The runtime is suspended for the whole walk either way, so each ObjectID is the current
//! address of a live object while the closure runs (and until the runtime resumes); calls that
//! make the runtime suspend itself (`force_gc`, …) are refused inside the closure, as on the
//! thread of a [`Suspension`].
//!
//! CoreCLR 8.0.4 and 3.1.23 have no ICorProfilerInfo15: both answer `Err(E_NOINTERFACE)` without
//! calling the closure.

use crate::interfaces::ICorProfilerInfo15;
use crate::types::{BOOL, ObjectID};
use crate::{HResult, ProfilerInfo, Result, Suspension};
use std::any::Any;
use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

/// What the trampoline shares with the walking call: the closure, whether it asked to stop, and
/// a panic it raised.
struct Walk<'f> {
    visit: &'f mut dyn FnMut(ObjectID) -> ControlFlow<()>,
    stopped: bool,
    panic: Option<Box<dyn Any + Send>>,
}

/// The `ObjectCallback` the runtime calls once per object, before `EnumerateGCHeapObjects`
/// returns, on the calling thread: `TRUE` goes on, `FALSE` ends the walk.
///
/// # Safety
/// `state` is the `Walk` that `walk` passed, alive and not otherwise borrowed for the call.
unsafe extern "C" fn trampoline(object: ObjectID, state: *mut std::ffi::c_void) -> BOOL {
    // SAFETY: `walk` passes a `&mut Walk` as the state and holds no other borrow of it while
    // EnumerateGCHeapObjects runs; the runtime calls this one object at a time on the calling
    // thread, so this is the only reference.
    let walk = unsafe { &mut *state.cast::<Walk<'_>>() };
    if walk.panic.is_some() || walk.stopped {
        // A runtime that calls again after FALSE never reruns a closure that panicked or stopped.
        return 0;
    }
    // The closure's panic must not unwind into the runtime's heap walker: catch it, end the walk,
    // and let `walk` raise it again once the runtime has returned (and resumed itself).
    match catch_unwind(AssertUnwindSafe(|| (walk.visit)(object))) {
        Ok(ControlFlow::Continue(())) => 1,
        Ok(ControlFlow::Break(())) => {
            walk.stopped = true;
            0
        }
        Err(payload) => {
            walk.panic = Some(payload);
            0
        }
    }
}

/// The call behind both faces: the runtime is suspended for it, by the caller's guard or by
/// itself.
fn walk(info: &ProfilerInfo, visit: &mut dyn FnMut(ObjectID) -> ControlFlow<()>) -> Result<()> {
    // Held through the raw call: the runtime's object cannot be let go under it (info_gate).
    let _entered = info.negotiated().enter()?;
    let raw = info.get::<ICorProfilerInfo15>()?;
    let mut walk = Walk { visit, stopped: false, panic: None };
    // SAFETY: `trampoline` is an ObjectCallback that never unwinds (it catches the closure's
    // panics) and is a plain function, valid forever; the runtime calls it only before this call
    // returns (the walk is synchronous), with `&mut walk` as its state, which outlives the call and
    // is not touched here until it returns.
    let hr = unsafe { raw.EnumerateGCHeapObjects(Some(trampoline), (&raw mut walk).cast()) };
    if let Some(payload) = walk.panic.take() {
        resume_unwind(payload);
    }
    HResult(hr).ok()
}

impl Suspension<'_> {
    /// Calls `visit` with every object of the GC heap while this suspension holds the runtime
    /// (`ICorProfilerInfo15::EnumerateGCHeapObjects` within a profiler suspension: the first way
    /// the runtime allows it); `visit` returns [`ControlFlow::Break`] to stop early. Each ObjectID
    /// stays valid while this guard is held: no GC can run.
    ///
    /// `Err(E_NOINTERFACE)` on a runtime without ICorProfilerInfo15 (CoreCLR 8 and older), else
    /// the runtime's code.
    ///
    /// # Panics
    /// A panic in `visit` ends the walk and is raised again from this call once the runtime has
    /// returned; unwinding on through the scope that holds this guard resumes the runtime.
    pub fn enumerate_gc_heap_objects<F>(&self, mut visit: F) -> Result<()>
    where
        F: FnMut(ObjectID) -> ControlFlow<()>,
    {
        walk(self.info(), &mut visit)
    }
}

impl ProfilerInfo {
    /// Calls `visit` with every object of the GC heap, the runtime suspending itself for the walk
    /// (`ICorProfilerInfo15::EnumerateGCHeapObjects` on its own: the second way the runtime allows
    /// it; call it from a thread of your own, as for [`suspend_runtime`](ProfilerInfo::suspend_runtime)).
    /// `visit` returns [`ControlFlow::Break`] to stop early; each ObjectID is valid while `visit`
    /// runs.
    ///
    /// `Err(CORPROF_E_SUSPENSION_IN_PROGRESS)` while a [`Suspension`] is alive (use its
    /// [`enumerate_gc_heap_objects`](Suspension::enumerate_gc_heap_objects) on its thread),
    /// `Err(E_NOINTERFACE)` on a runtime without ICorProfilerInfo15 (CoreCLR 8 and older), else
    /// the runtime's code.
    ///
    /// # Panics
    /// A panic in `visit` ends the walk and is raised again from this call once the runtime has
    /// returned (and resumed itself).
    pub fn enumerate_gc_heap_objects_with<F>(&self, mut visit: F) -> Result<()>
    where
        F: FnMut(ObjectID) -> ControlFlow<()>,
    {
        crate::suspend::while_runtime_suspends_here(|| walk(self, &mut visit))
    }
}
