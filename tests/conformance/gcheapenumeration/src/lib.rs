//! Conformance scenario "gcheapenumeration", after the runtime's
//! `src/tests/profiler/gcheapenumeration/gcheapenumeration.cs` (profiler
//! `native/gcheapenumerationprofiler`): the runtime test enumerates the GC heap through
//! ICorProfilerInfo15's EnumerateGCHeapObjects, an interface newer than 8.0.4 (and than the 8.0.4
//! header corprof is built from). The profiler asks the runtime's Info object for it by its IID,
//! beside ICorProfilerInfo11 and ICorProfilerInfo14 for contrast, and writes each answer: the
//! runtime's own refusal is the row's `n/a` reason.
//!
//! Gives its fact lines at Shutdown.

use conformance_support::Recorder;
use corprof::interfaces::{ICorProfilerInfo11, ICorProfilerInfo14};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR};
use corprof::{CorProfilerCallback, GUID, HResult, IUnknown, Interface, Result};

pub const CLSID: GUID = GUID::parse("6A0F3C21-4B7E-4D9A-8E15-2C3B4A5D6E24");

/// `IID_ICorProfilerInfo15`, from the .NET 9+ corprof.idl (not in the 8.0.4 header).
const IID_ICORPROFILERINFO15: GUID = GUID::parse("B446462D-BD22-41DD-872D-DC714C49EB56");

#[derive(Default)]
pub struct GcHeapEnumeration {
    rec: Recorder,
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

impl CorProfilerCallback for GcHeapEnumeration {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(
            unknown,
            COR_PRF_MONITOR::COR_PRF_MONITOR_NONE,
            COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE,
        )?;
        for (name, iid) in [
            ("ICorProfilerInfo11", ICorProfilerInfo11::IID),
            ("ICorProfilerInfo14", ICorProfilerInfo14::IID),
            ("ICorProfilerInfo15", IID_ICORPROFILERINFO15),
        ] {
            self.rec.say(format!("QueryInterface {name}: {}", ask(unknown, &iid)));
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}

corprof::export_profiler!(GcHeapEnumeration, CLSID);
