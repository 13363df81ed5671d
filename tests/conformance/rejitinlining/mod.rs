//! Conformance scenario "rejitinlining", after the runtime's `src/tests/profiler/rejit/rejit.cs`
//! (profiler `native/rejitprofiler`): RequestReJITWithInliners (`COR_PRF_REJIT_BLOCK_INLINING`,
//! `COR_PRF_REJIT_INLINING_CALLBACKS`) for a method the JIT inlined into two callers (one of them
//! through another inlinee) and also compiled on its own: GetReJITParameters replaces the
//! method's string literal (DefineUserString, through corprof's IL rewriter), the method and
//! each of its inliners are ReJIT-compiled (the runtime test's count: inliners + 1), every path
//! then runs the new text, and RequestRevert of the method alone brings the original back on
//! every path (the rejitted inliners call it, no longer inline it); no ReJITError.
//!
//! Gives its fact lines, one per event in order, at Shutdown.

use crate::support::{Recorder, lock};
use corprof::il::{Instruction, OpCode, Operand};
use corprof::interfaces::ICorProfilerFunctionControl;
use corprof::rewrite::{self, RewriteError};
use corprof::sig::Token;
use corprof::types::{
    COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, COR_PRF_REJIT_FLAGS, CorOpenFlags, FunctionID, ModuleID, ReJITID,
    mdMethodDef,
};
use corprof::{CorProfilerCallback, HResult, IUnknown, MetaDataEmit, MetaDataImport, Out, Result};
use std::sync::Mutex;

const PROGRAM: &str = "ConfRejitInlining.Program::";
const TARGET: &str = "InlineeTarget";

#[derive(Default)]
pub struct RejitInlining {
    rec: Recorder,
    /// InlineeTarget's module and token, from the first time the JIT met it.
    target: Mutex<Option<(ModuleID, mdMethodDef)>>,
}

impl RejitInlining {
    /// The app's method name of `function` (`Program::` stripped), if it is one.
    fn app_name(&self, function: FunctionID) -> Option<String> {
        self.rec.function_name(function).strip_prefix(PROGRAM).map(str::to_string)
    }

    fn method_name(&self, module: ModuleID, method: mdMethodDef) -> Result<String> {
        let import = self.rec.info()?.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)?;
        Ok(import.get_method_props(method)?.name)
    }

    fn note_target(&self, function: FunctionID) -> Result<()> {
        let f = self.rec.info()?.get_function_info(function)?;
        lock(&self.target).get_or_insert((f.module_id, f.token));
        Ok(())
    }

    /// The target's body with its string literal replaced: how many `ldstr` it changed.
    fn rewrite_target(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        control: &ICorProfilerFunctionControl,
    ) -> std::result::Result<usize, RewriteError> {
        let info = self.rec.info()?;
        let mut body = info.il_body(module, method)?;
        let emit = info.get_module_metadata::<MetaDataEmit>(module, CorOpenFlags::ofWrite)?;
        let text = Token(emit.define_user_string("rejitted target (")?);
        let import = info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)?;
        // Only the literal that says which code ran; the closing ")" stays.
        let is_marker = |ins: &Instruction| match (ins.opcode, &ins.operand) {
            (OpCode::LDSTR, Operand::Token(t)) => import.get_user_string(t.0).is_ok_and(|s| s == "original target ("),
            _ => false,
        };
        let literals: Vec<_> = body.iter().filter(|(_, ins)| is_marker(ins)).map(|(l, _)| l).collect();
        for label in &literals {
            body.replace(*label, [Instruction { opcode: OpCode::LDSTR, operand: Operand::Token(text) }])?;
        }
        // SAFETY: the method's own IL with each `ldstr` operand replaced by another string token of
        // the same module: every instruction keeps its stack types.
        unsafe { rewrite::set_rejit_body(control, &body)? };
        Ok(literals.len())
    }
}

impl CorProfilerCallback for RejitInlining {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        // ReJIT enabled here, where every runtime takes it; JIT events bring the triggers and the
        // inlining requests.
        let low = COR_PRF_MONITOR::COR_PRF_ENABLE_REJIT | COR_PRF_MONITOR::JIT_COMPILATION;
        self.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn jit_inlining(&self, caller: FunctionID, callee: FunctionID, _should_inline: Out<'_, bool>) -> Result<()> {
        if let (Some(caller_name), Some(callee_name)) = (self.app_name(caller), self.app_name(callee)) {
            if callee_name == TARGET {
                self.note_target(callee)?;
            }
            self.rec.say(format!("inline {callee_name} into {caller_name}"));
        }
        Ok(())
    }

    fn jit_compilation_finished(&self, function: FunctionID, _status: HResult, _safe: bool) -> Result<()> {
        let Some(name) = self.app_name(function) else { return Ok(()) };
        let target = *lock(&self.target);
        match (name.as_str(), target) {
            (TARGET, _) => self.note_target(function)?,
            ("TriggerReJIT", Some((module, method))) => {
                let flags = COR_PRF_REJIT_FLAGS::COR_PRF_REJIT_BLOCK_INLINING
                    | COR_PRF_REJIT_FLAGS::COR_PRF_REJIT_INLINING_CALLBACKS;
                let result = self.rec.info()?.request_rejit_with_inliners(flags, &[module], &[method]);
                self.rec.say(format!("RequestReJITWithInliners {TARGET}: {}", result.err().unwrap_or(HResult::S_OK)));
            }
            ("TriggerRevert", Some((module, method))) => {
                let status = match self.rec.info()?.revert_methods(&[module], &[method]) {
                    Ok(statuses) => statuses.first().copied().unwrap_or(HResult::E_UNEXPECTED),
                    Err(hr) => hr,
                };
                self.rec.say(format!("RequestRevert {TARGET}: {status}"));
            }
            _ => {}
        }
        Ok(())
    }

    fn get_rejit_parameters(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        control: &ICorProfilerFunctionControl,
    ) -> Result<()> {
        let name = self.method_name(module, method)?;
        if name == TARGET {
            match self.rewrite_target(module, method, control) {
                Ok(n) => self.rec.say(format!("GetReJITParameters {name}: {n} ldstr replaced")),
                Err(e) => self.rec.say(format!("GetReJITParameters {name}: {e}")),
            }
        } else {
            self.rec.say(format!("GetReJITParameters {name}: body kept"));
        }
        Ok(())
    }

    fn rejit_compilation_started(&self, function: FunctionID, _rejit: ReJITID, _safe: bool) -> Result<()> {
        if let Some(name) = self.app_name(function) {
            self.rec.say(format!("ReJITCompilationStarted {name}"));
        }
        Ok(())
    }

    fn rejit_compilation_finished(
        &self,
        function: FunctionID,
        _rejit: ReJITID,
        status: HResult,
        _safe: bool,
    ) -> Result<()> {
        if let Some(name) = self.app_name(function) {
            self.rec.say(format!("ReJITCompilationFinished {name}: {status}"));
        }
        Ok(())
    }

    fn rejit_error(
        &self,
        _module: ModuleID,
        method: mdMethodDef,
        _function: FunctionID,
        status: HResult,
    ) -> Result<()> {
        self.rec.say(format!("ReJITError {method:#x}: {status}"));
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}
