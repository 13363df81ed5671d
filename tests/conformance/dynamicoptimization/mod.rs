//! Conformance scenario "dynamicoptimization", after the runtime's
//! `src/tests/profiler/dynamicoptimization/DynamicOptimization.cs` (profiler
//! `native/dynamicjitoptimization`): the app loads copies of itself into collectible contexts
//! before, between and after asking the profiler to turn `COR_PRF_DISABLE_OPTIMIZATIONS`, then
//! `COR_PRF_DISABLE_INLINING`, on and off with SetEventMask2 after Initialize; each copy's method
//! is then compiled, its optimization tier read from the runtime's MethodLoadVerbose event and
//! its JITInlining requests counted. Switching either flag after Initialize came with .NET 10
//! (dotnet/runtime#113924); 8.0.4 and 3.1.23 refuse it (asserted, with the HRESULT) and keep the
//! mask, so every copy compiles as the flags set at Initialize say: with neither flag, optimized
//! with its callee inlined; with `COR_PRF_DISABLE_OPTIMIZATIONS`, MinOpts and no inlining asked;
//! with `COR_PRF_DISABLE_INLINING`, optimized and no inlining asked.
//!
//! Takes `CORPROF_CONF_DISABLE` (`optimizations`, `inlining`, or unset: the flag set at
//! Initialize) and gives its fact lines at Shutdown; the app's P/Invokes `conf_switch` and
//! `conf_compiled` drive it.

use crate::support::{Recorder, lock};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID, ModuleID};
use corprof::{CorProfilerCallback, HResult, IUnknown, Out, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

const RUN: &str = "ConfDynamicOptimization.Lib::Run";

/// What the app's P/Invokes and the callbacks share.
#[derive(Default)]
struct State {
    rec: Recorder,
    /// The low mask asked for last (JIT compilation and the disabling flags).
    mask: Mutex<u32>,
    /// The module of the latest compilation of `Lib::Run`, and the JITInlining requests seen
    /// per module with `Lib::Run` as the caller.
    last_run_module: Mutex<Option<ModuleID>>,
    inline_asks: Mutex<HashMap<ModuleID, u32>>,
}

/// The profiler's state, for the app's P/Invokes (they come with no profiler pointer).
static STATE: OnceLock<Arc<State>> = OnceLock::new();

#[derive(Default)]
pub struct DynamicOptimization {
    state: Arc<State>,
}

fn flag(which: i32) -> Option<(COR_PRF_MONITOR, &'static str)> {
    match which {
        1 => Some((COR_PRF_MONITOR::COR_PRF_DISABLE_OPTIMIZATIONS, "COR_PRF_DISABLE_OPTIMIZATIONS")),
        2 => Some((COR_PRF_MONITOR::COR_PRF_DISABLE_INLINING, "COR_PRF_DISABLE_INLINING")),
        _ => None,
    }
}

/// The MethodLoadVerbose tier's name (the runtime's `JitOptimizationTier` order), or `none`
/// when the app saw no event.
fn tier_name(tier: i32) -> String {
    match tier {
        -1 => "none".into(),
        0 => "Unknown".into(),
        1 => "MinOptJitted".into(),
        2 => "Optimized".into(),
        3 => "QuickJitted".into(),
        4 => "OptimizedTier1".into(),
        n => format!("tier {n}"),
    }
}

impl State {
    fn switch(&self, which: i32, on: bool) -> HResult {
        let Some((bit, name)) = flag(which) else { return HResult::E_INVALIDARG };
        let Ok(info) = self.rec.info() else { return HResult::E_UNEXPECTED };
        let mut mask = lock(&self.mask);
        let wanted = if on { *mask | bit.0 } else { *mask & !bit.0 };
        let hr = match info.set_event_mask2(COR_PRF_MONITOR(wanted), COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE) {
            Ok(()) => HResult::S_OK,
            Err(hr) => hr,
        };
        // What the runtime keeps, whatever it answered.
        let kept = info.get_event_mask2().map(|m| m.events_low.0).unwrap_or(u32::MAX);
        if hr.is_ok() {
            *mask = wanted;
        }
        self.rec.say(format!(
            "SetEventMask2 turning {name} {}: {}; the mask keeps it {}",
            if on { "on" } else { "off" },
            hr,
            if kept & bit.0 != 0 { "on" } else { "off" }
        ));
        hr
    }

    fn compiled(&self, copy: i32, tier: i32) {
        let module = *lock(&self.last_run_module);
        let asks = module.map_or(0, |m| lock(&self.inline_asks).get(&m).copied().unwrap_or(0));
        let fresh = module.is_some();
        self.rec
            .say(format!("copy {copy}: Run compiled: {fresh}, tier {}, inlining asked {asks} times", tier_name(tier)));
        *lock(&self.last_run_module) = None;
    }
}

impl CorProfilerCallback for DynamicOptimization {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let mut low = COR_PRF_MONITOR::JIT_COMPILATION;
        match std::env::var("CORPROF_CONF_DISABLE").as_deref() {
            Ok("optimizations") => low |= COR_PRF_MONITOR::COR_PRF_DISABLE_OPTIMIZATIONS,
            Ok("inlining") => low |= COR_PRF_MONITOR::COR_PRF_DISABLE_INLINING,
            _ => {}
        }
        self.state.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        *lock(&self.state.mask) = low.0;
        let _ = STATE.set(self.state.clone());
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _safe: bool) -> Result<()> {
        if self.state.rec.function_name(function) == RUN {
            let module = self.state.rec.info()?.get_function_info(function)?.module_id;
            *lock(&self.state.last_run_module) = Some(module);
        }
        Ok(())
    }

    fn jit_inlining(&self, caller: FunctionID, _callee: FunctionID, _should_inline: Out<'_, bool>) -> Result<()> {
        if self.state.rec.function_name(caller) == RUN {
            let module = self.state.rec.info()?.get_function_info(caller)?.module_id;
            *lock(&self.state.inline_asks).entry(module).or_default() += 1;
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.state.rec.finish()
    }
}

/// The app asks to turn a flag on (`on` 1) or off: 1 is `COR_PRF_DISABLE_OPTIMIZATIONS`, 2
/// `COR_PRF_DISABLE_INLINING`. Returns the HRESULT of SetEventMask2.
#[unsafe(no_mangle)]
pub extern "C" fn conf_switch(which: i32, on: i32) -> i32 {
    STATE.get().map_or(HResult::E_UNEXPECTED, |s| s.switch(which, on != 0)).0
}

/// The app compiled copy `copy`'s `Lib::Run` and read `tier` from its MethodLoadVerbose event
/// (-1: none came).
#[unsafe(no_mangle)]
pub extern "C" fn conf_compiled(copy: i32, tier: i32) {
    if let Some(state) = STATE.get() {
        state.compiled(copy, tier);
    }
}
