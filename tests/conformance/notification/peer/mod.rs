//! The notification-only profiler of conformance scenario "notification", served under the
//! library's `PEER_CLSID`: it asks for exception events only and writes what it saw to the file in
//! `CORPROF_CONF_PEER_OUT`.

use crate::support::Recorder;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID};
use corprof::{CorProfilerCallback, IUnknown, LiveObject, Out, Result};

#[derive(Default)]
pub struct Peer {
    rec: Recorder,
}

impl CorProfilerCallback for Peer {
    fn load_as_notification_only(&self, notification_only: Out<'_, bool>) -> Result<()> {
        self.rec.say("peer: asked to load as notification only: yes");
        notification_only.write(true);
        Ok(())
    }

    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.say("peer: initialize");
        self.rec.start(unknown, COR_PRF_MONITOR::EXCEPTIONS, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn exception_thrown(&self, thrown: LiveObject<'_>) -> Result<()> {
        let class = thrown.class(self.rec.info()?)?;
        self.rec.say(format!("peer: thrown {}", self.rec.class_name(class)));
        Ok(())
    }

    fn exception_catcher_enter(&self, function: FunctionID, _object: LiveObject<'_>) -> Result<()> {
        self.rec.say(format!("peer: caught in {}", self.rec.function_name(function)));
        Ok(())
    }

    fn jit_compilation_started(&self, _function: FunctionID, _safe: bool) -> Result<()> {
        self.rec.say("peer: a JIT event (not asked for)");
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.say("peer: shutdown");
        self.rec.finish_to("CORPROF_CONF_PEER_OUT")
    }
}
