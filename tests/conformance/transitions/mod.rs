//! Conformance scenario "transitions", after the runtime's
//! `src/tests/profiler/transitions/transitions.cs`: ManagedToUnmanagedTransition and
//! UnmanagedToManagedTransition, with their reasons, for a P/Invoke into a function this library
//! exports and for a reverse call from it through a marshalled delegate.

use crate::support::Recorder;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, COR_PRF_TRANSITION_REASON, FunctionID};
use corprof::{CorProfilerCallback, IUnknown, Result};

/// The app's P/Invoke target.
#[unsafe(no_mangle)]
pub extern "C" fn conf_add(a: i32, b: i32) -> i32 {
    a.wrapping_add(b)
}

/// The app's P/Invoke target that calls back into managed code.
#[unsafe(no_mangle)]
pub extern "C" fn conf_call_back(callback: Option<extern "C" fn(i32) -> i32>, x: i32) -> i32 {
    callback.map_or(-1, |f| f(x))
}

#[derive(Default)]
pub struct Transitions {
    rec: Recorder,
}

impl Transitions {
    fn transition(&self, direction: &str, function: FunctionID, reason: COR_PRF_TRANSITION_REASON) {
        let name = self.rec.function_name(function);
        if name.starts_with("ConfTransitions.") {
            let reason = match reason {
                COR_PRF_TRANSITION_REASON::COR_PRF_TRANSITION_CALL => "call",
                COR_PRF_TRANSITION_REASON::COR_PRF_TRANSITION_RETURN => "return",
                _ => "other",
            };
            self.rec.say(format!("{direction} {name} {reason}"));
        }
    }
}

impl CorProfilerCallback for Transitions {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let low = COR_PRF_MONITOR::CODE_TRANSITIONS;
        self.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn managed_to_unmanaged_transition(&self, function: FunctionID, reason: COR_PRF_TRANSITION_REASON) -> Result<()> {
        self.transition("managed-to-unmanaged", function, reason);
        Ok(())
    }

    fn unmanaged_to_managed_transition(&self, function: FunctionID, reason: COR_PRF_TRANSITION_REASON) -> Result<()> {
        self.transition("unmanaged-to-managed", function, reason);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}
