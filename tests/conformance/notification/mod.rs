//! Conformance scenario "notification": two corprof profilers in one process (.NET 7+): the
//! main one (JIT events) and a notification-only one (`peer/`, exception events, loaded through
//! CORECLR_NOTIFICATION_PROFILERS and answering LoadAsNotificationOnly with true), each seeing
//! its own callbacks and only those.

pub mod peer;

use crate::support::Recorder;
use corprof::LiveObject;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID};
use corprof::{CorProfilerCallback, IUnknown, Result};

#[derive(Default)]
pub struct Main {
    rec: Recorder,
}

impl CorProfilerCallback for Main {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.say("main: initialize");
        self.rec.start(unknown, COR_PRF_MONITOR::JIT_COMPILATION, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _safe: bool) -> Result<()> {
        if let Some(name) = self.rec.function_name(function).strip_prefix("ConfNotification.Program::") {
            self.rec.say(format!("main: compiled {name}"));
        }
        Ok(())
    }

    fn exception_thrown(&self, _thrown: LiveObject<'_>) -> Result<()> {
        self.rec.say("main: an exception (not asked for)");
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.say("main: shutdown");
        self.rec.finish()
    }
}
