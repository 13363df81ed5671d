//! Conformance scenario "inlining", after the runtime's `src/tests/profiler/unittest/inlining.cs`:
//! JITInlining asks before each inline; refusing it keeps the callee a method of its own that is
//! JIT-compiled and called, while the allowed callee is inlined and never compiled on its own.

use crate::support::Recorder;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID};
use corprof::{CorProfilerCallback, IUnknown, Out, Result};

#[derive(Default)]
pub struct Inlining {
    rec: Recorder,
}

fn short(name: &str) -> Option<&str> {
    name.strip_prefix("ConfInlining.Program::")
}

impl CorProfilerCallback for Inlining {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let low = COR_PRF_MONITOR::JIT_COMPILATION;
        self.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn jit_inlining(&self, caller: FunctionID, callee: FunctionID, should_inline: Out<'_, bool>) -> Result<()> {
        let (caller, callee) = (self.rec.function_name(caller), self.rec.function_name(callee));
        if let (Some(caller), Some(callee)) = (short(&caller), short(&callee)) {
            let refuse = callee == "Refused";
            if refuse {
                should_inline.write(false);
            }
            self.rec.say(format!("inline {callee} into {caller}: {}", if refuse { "refused" } else { "allowed" }));
        }
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _safe: bool) -> Result<()> {
        if let Some(name) = short(&self.rec.function_name(function)) {
            self.rec.say(format!("compiled {name}"));
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}
