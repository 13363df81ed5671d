//! Conformance scenario "gcheapenumeration", after the runtime's
//! `src/tests/profiler/gcheapenumeration/gcheapenumeration.cs` (profiler
//! `native/gcheapenumerationprofiler`): the runtime test enumerates the GC heap through
//! ICorProfilerInfo15's EnumerateGCHeapObjects, both ways the runtime allows it (on its own, the
//! runtime suspending itself; and from the thread that holds a profiler suspension). The profiler
//! asks the runtime's Info object for ICorProfilerInfo15 by its IID, beside ICorProfilerInfo11 and
//! ICorProfilerInfo14 for contrast, then, from a thread of its own while the app's main thread
//! waits in JITCompilationStarted for `Program::Main`, walks the heap both ways through corprof's
//! safe faces (`ProfilerInfo::enumerate_gc_heap_objects_with`,
//! `Suspension::enumerate_gc_heap_objects`), writing each answer and how many objects the closure
//! saw: on a runtime without Info15 (8.0.4, 3.1.23) both are `E_NOINTERFACE` with no object.
//!
//! Gives its fact lines at Shutdown.

use crate::support::Recorder;
use corprof::interfaces::{ICorProfilerInfo11, ICorProfilerInfo14, ICorProfilerInfo15};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID};
use corprof::{CorProfilerCallback, GUID, HResult, IUnknown, Interface, ProfilerInfo, Result};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub struct GcHeapEnumeration {
    rec: Recorder,
    walked: AtomicBool,
}

/// The runtime's answer to QueryInterface for `iid` on `unknown`; a reference it hands out is
/// released at once.
fn ask(unknown: &IUnknown, iid: &GUID) -> HResult {
    let mut out: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `out` is a valid place for the interface pointer and `iid` a live GUID.
    let hr = HResult(unsafe { unknown.QueryInterface(iid, &mut out) });
    if !out.is_null() {
        // SAFETY: on success `out` holds a reference to an object whose vtable starts with
        // IUnknown's (every COM interface's does), handed to us and released here once.
        unsafe { (*out.cast::<IUnknown>()).Release() };
    }
    hr
}

fn outcome(r: Result<()>) -> String {
    match r {
        Ok(()) => HResult::S_OK.to_string(),
        Err(e) => e.to_string(),
    }
}

/// Both walks, from the profiler's own thread: the runtime suspending itself, then under a
/// suspension this thread holds.
fn walk_both_ways(rec: &Recorder, info: &ProfilerInfo) {
    let mut objects = 0usize;
    let alone = info.enumerate_gc_heap_objects_with(|_| {
        objects += 1;
        ControlFlow::Continue(())
    });
    rec.say(format!("heap walk, the runtime suspending itself: {}, {objects} object(s)", outcome(alone)));
    let mut objects = 0usize;
    let guarded = info.suspend_runtime().and_then(|suspension| {
        suspension.enumerate_gc_heap_objects(|_| {
            objects += 1;
            ControlFlow::Continue(())
        })
    });
    rec.say(format!("heap walk under a Suspension: {}, {objects} object(s)", outcome(guarded)));
}

impl CorProfilerCallback for GcHeapEnumeration {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = self.rec.start(
            unknown,
            COR_PRF_MONITOR::COR_PRF_MONITOR_JIT_COMPILATION,
            COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE,
        )?;
        for (name, iid) in [
            ("ICorProfilerInfo11", ICorProfilerInfo11::IID),
            ("ICorProfilerInfo14", ICorProfilerInfo14::IID),
            ("ICorProfilerInfo15", ICorProfilerInfo15::IID),
        ] {
            self.rec.say(format!("QueryInterface {name}: {}", ask(unknown, &iid)));
        }
        self.rec.say(format!("ProfilerInfo negotiated {}", info.interface_name()));
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _safe: bool) -> Result<()> {
        if self.rec.function_name(function) != "ConfGcHeapEnumeration.Program::Main"
            || self.walked.swap(true, Ordering::Relaxed)
        {
            return Ok(());
        }
        // The main thread waits here (preemptive, in a callback) while a thread of the
        // profiler's own suspends the runtime, as the runtime test's native thread does.
        let (rec, info) = (&self.rec, self.rec.info()?);
        std::thread::scope(|s| {
            s.spawn(|| walk_both_ways(rec, info));
        });
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}
