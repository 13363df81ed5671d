//! Conformance scenario "exceptions", after the runtime's `src/tests/profiler/exception/ExceptionTest.cs`
//! (profiler `native/exceptionprofiler`): the exact sequence of exception callbacks, every Enter
//! with its Leave, for the app's own methods, for a catch two frames up, a finally, a rethrow, two
//! filters and a throw from a finally; the catcher names the exception object it is given.

use crate::support::{Recorder, lock};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID};
use corprof::{CorProfilerCallback, IUnknown, LiveObject, Result};
use std::collections::HashMap;
use std::sync::Mutex;
use std::thread::ThreadId;

/// Per thread and per kind of Enter/Leave pair, the open Enters: the app method's short name, or
/// `None` for the runtime's own code. A Leave names no function; it closes the last Enter.
type OpenEnters = HashMap<(ThreadId, &'static str), Vec<Option<String>>>;

#[derive(Default)]
pub struct Exceptions {
    rec: Recorder,
    open: Mutex<OpenEnters>,
}

impl Exceptions {
    /// The short name of an app method, or `None` for the runtime's own code.
    fn app_method(&self, function: FunctionID) -> Option<String> {
        self.rec.function_name(function).strip_prefix("ConfExceptions.Program::").map(String::from)
    }

    /// One line for an event naming an app method; events in the runtime's own code are left out.
    fn event(&self, what: &str, function: FunctionID) {
        if let Some(short) = self.app_method(function) {
            self.rec.say(format!("{what} {short}"));
        }
    }

    /// An Enter of the pair `kind`: its line, and the Enter left open for its Leave.
    fn enter(&self, kind: &'static str, function: FunctionID) {
        self.event(kind, function);
        let name = self.app_method(function);
        let key = (std::thread::current().id(), kind);
        lock(&self.open).entry(key).or_default().push(name);
    }

    /// The Leave of the pair `kind`: `<kind> leave <method>` for an app method's Enter, and a line
    /// saying so when no Enter is open.
    fn leave(&self, kind: &'static str) -> Result<()> {
        let key = (std::thread::current().id(), kind);
        let opened = lock(&self.open).get_mut(&key).and_then(Vec::pop);
        match opened {
            Some(Some(short)) => self.rec.say(format!("{kind} leave {short}")),
            Some(None) => {}
            None => self.rec.say(format!("{kind} leave without an enter")),
        }
        Ok(())
    }
}

impl CorProfilerCallback for Exceptions {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(unknown, COR_PRF_MONITOR::EXCEPTIONS, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn exception_thrown(&self, thrown: LiveObject<'_>) -> Result<()> {
        let class = thrown.class(self.rec.info()?)?;
        let name = self.rec.class_name(class);
        if name.starts_with("ConfExceptions.") {
            self.rec.say(format!("thrown {name}"));
        }
        Ok(())
    }

    fn exception_search_function_enter(&self, function: FunctionID) -> Result<()> {
        self.enter("search", function);
        Ok(())
    }

    fn exception_search_function_leave(&self) -> Result<()> {
        self.leave("search")
    }

    fn exception_search_filter_enter(&self, function: FunctionID) -> Result<()> {
        self.enter("filter", function);
        Ok(())
    }

    fn exception_search_filter_leave(&self) -> Result<()> {
        self.leave("filter")
    }

    fn exception_search_catcher_found(&self, function: FunctionID) -> Result<()> {
        self.event("catcher found", function);
        Ok(())
    }

    fn exception_unwind_function_enter(&self, function: FunctionID) -> Result<()> {
        self.enter("unwind", function);
        Ok(())
    }

    fn exception_unwind_function_leave(&self) -> Result<()> {
        self.leave("unwind")
    }

    fn exception_unwind_finally_enter(&self, function: FunctionID) -> Result<()> {
        self.enter("finally", function);
        Ok(())
    }

    fn exception_unwind_finally_leave(&self) -> Result<()> {
        self.leave("finally")
    }

    fn exception_catcher_enter(&self, function: FunctionID, object: LiveObject<'_>) -> Result<()> {
        let class = object.class(self.rec.info()?);
        let thrown = class.map_or_else(|e| format!("no object ({e})"), |c| self.rec.class_name(c));
        self.enter("catch", function);
        if self.app_method(function).is_some() {
            self.rec.say(format!("caught object: {thrown}"));
        }
        Ok(())
    }

    fn exception_catcher_leave(&self) -> Result<()> {
        self.leave("catch")
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}
