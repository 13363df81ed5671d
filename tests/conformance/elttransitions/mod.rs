//! Conformance scenario "elttransitions", after the runtime's
//! `src/tests/profiler/elttransitions/elttransitions.cs` (profiler `native/elttransitions`, a
//! regression test for dotnet/runtime#130242): with the with-info enter/leave hooks, code
//! transitions and inlining off, a forward P/Invoke into this library is reported by its two
//! transitions (call out, return in) and never by a hook, while the managed method it calls back
//! (through a marshalled delegate, and on .NET 5+ an `[UnmanagedCallersOnly]` method through its
//! native entry point) gets its enter and leave hooks between the reverse transitions; the exact
//! order of every hook and transition of the app's methods is checked.
//!
//! Gives its fact lines (one per hook or transition, in order) at Shutdown.

use crate::support::Recorder;
use corprof::hooks::{self, FunctionHooks, HookFrame, HookMode};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, COR_PRF_TRANSITION_REASON, FunctionID};
use corprof::{CorProfilerCallback, IUnknown, Result};

const APP: &str = "ConfEltTransitions.";

/// The app's P/Invoke target: calls `callback` (a reverse P/Invoke into managed code) with `x`.
#[unsafe(no_mangle)]
pub extern "C" fn conf_do_pinvoke(callback: Option<extern "C" fn(i32) -> i32>, x: i32) -> i32 {
    callback.map_or(-1, |f| f(x))
}

#[derive(Default)]
pub struct EltTransitions {
    rec: Recorder,
}

impl EltTransitions {
    fn app_name(&self, function: FunctionID) -> Option<String> {
        let name = self.rec.function_name(function);
        name.strip_prefix(APP).map(str::to_string)
    }

    fn transition(&self, direction: &str, function: FunctionID, reason: COR_PRF_TRANSITION_REASON) {
        if let Some(name) = self.app_name(function) {
            let reason = match reason {
                COR_PRF_TRANSITION_REASON::COR_PRF_TRANSITION_CALL => "call",
                COR_PRF_TRANSITION_REASON::COR_PRF_TRANSITION_RETURN => "return",
                _ => "other",
            };
            self.rec.say(format!("{direction} {name} {reason}"));
        }
    }

    fn hook(&self, kind: &str, function: FunctionID) {
        if let Some(name) = self.app_name(function) {
            self.rec.say(format!("{kind} {name}"));
        }
    }
}

impl FunctionHooks for EltTransitions {
    type Data = FunctionID;

    /// Every method of the app is hooked, the P/Invoke included: whether its hooks run is the
    /// runtime's choice, and the test's subject.
    fn map_function(&self, function: FunctionID) -> Option<FunctionID> {
        self.app_name(function).map(|_| function)
    }

    fn enter(&self, function: FunctionID, _frame: &HookFrame<'_>) {
        self.hook("enter", function);
    }

    fn leave(&self, function: FunctionID, _frame: &HookFrame<'_>) {
        self.hook("leave", function);
    }

    fn tailcall(&self, function: FunctionID, _frame: &HookFrame<'_>) {
        self.hook("tailcall", function);
    }
}

impl CorProfilerCallback for EltTransitions {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let low = COR_PRF_MONITOR::CODE_TRANSITIONS | COR_PRF_MONITOR::COR_PRF_DISABLE_INLINING;
        let info = self.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        hooks::install(self, info, HookMode::WithInfo)
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
