//! Conformance scenario "exceptions": the exact sequence of exception callbacks, for the app's
//! own methods, for a catch two frames up, a finally, a rethrow and two filters.

use conformance_support::Recorder;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID, ObjectID};
use corprof::{CorProfilerCallback, IUnknown, Result};

pub const CLSID: corprof::GUID = corprof::GUID::parse("6A0F3C21-4B7E-4D9A-8E15-2C3B4A5D6E02");

#[derive(Default)]
pub struct Exceptions {
    rec: Recorder,
}

impl Exceptions {
    /// One line for an event naming an app method; events in the runtime's own code are left out.
    fn event(&self, what: &str, function: FunctionID) {
        let name = self.rec.function_name(function);
        if let Some(short) = name.strip_prefix("ConfExceptions.Program::") {
            self.rec.say(format!("{what} {short}"));
        }
    }
}

impl CorProfilerCallback for Exceptions {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(unknown, COR_PRF_MONITOR::EXCEPTIONS, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn exception_thrown(&self, thrown: ObjectID) -> Result<()> {
        // SAFETY: the runtime raises ExceptionThrown on the throwing thread in cooperative mode, so no
        // GC can move `thrown` before this callback returns.
        let class = unsafe { self.rec.info()?.get_class_from_object(thrown)? };
        let name = self.rec.class_name(class);
        if name.starts_with("ConfExceptions.") {
            self.rec.say(format!("thrown {name}"));
        }
        Ok(())
    }

    fn exception_search_function_enter(&self, function: FunctionID) -> Result<()> {
        self.event("search", function);
        Ok(())
    }

    fn exception_search_filter_enter(&self, function: FunctionID) -> Result<()> {
        self.event("filter", function);
        Ok(())
    }

    fn exception_search_catcher_found(&self, function: FunctionID) -> Result<()> {
        self.event("catcher found", function);
        Ok(())
    }

    fn exception_unwind_function_enter(&self, function: FunctionID) -> Result<()> {
        self.event("unwind", function);
        Ok(())
    }

    fn exception_unwind_finally_enter(&self, function: FunctionID) -> Result<()> {
        self.event("finally", function);
        Ok(())
    }

    fn exception_catcher_enter(&self, function: FunctionID, _object: ObjectID) -> Result<()> {
        self.event("catch", function);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}

corprof::export_profiler!(Exceptions, CLSID);
