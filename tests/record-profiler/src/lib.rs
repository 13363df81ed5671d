//! A test profiler for `tests/record_alloc.rs` and `tests/record_calls.rs`: corprof-record-profiler's
//! alloc and calls modes, chosen and fed as the record profiler's own library does it, reading the
//! same settings (`CORPROF_RECORD_MODE` = `alloc` or `calls`, `CORPROF_RECORD_ALLOC`,
//! `CORPROF_RECORD_FILTER`) and writing the profile's text form to `CORPROF_RECORD_OUT` at
//! Shutdown. Anything else in the settings fails Initialize, so the runtime unloads it.
#![deny(unsafe_code)]

use corprof::hooks::{self, HookFrame};
use corprof::types::{ClassID, FunctionID, ObjectID};
use corprof::{CorProfilerCallback, FunctionHooks, HResult, HookMode, IUnknown, ProfilerInfo, Result};
use corprof_record::settings;
use corprof_record_profiler::alloc::{AllocMode, Sampling};
use corprof_record_profiler::calls::CallsMode;
use std::sync::OnceLock;

pub const CLSID: corprof::GUID = corprof::GUID::parse("B4D2E6F1-7A39-4C58-9E0D-2F6A8C1B3D75");

enum Mode {
    Alloc(AllocMode),
    Calls(CallsMode),
}

#[derive(Default)]
pub struct Recorder {
    info: OnceLock<ProfilerInfo>,
    mode: OnceLock<Mode>,
}

fn setting(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl Recorder {
    fn alloc(&self) -> Option<(&ProfilerInfo, &AllocMode)> {
        match self.mode.get()? {
            Mode::Alloc(mode) => Some((self.info.get()?, mode)),
            Mode::Calls(_) => None,
        }
    }

    fn calls(&self) -> Option<&CallsMode> {
        match self.mode.get()? {
            Mode::Calls(mode) => Some(mode),
            Mode::Alloc(_) => None,
        }
    }
}

impl FunctionHooks for Recorder {
    type Data = u32;

    fn map_function(&self, function: FunctionID) -> Option<u32> {
        self.calls()?.map_function(self.info.get()?, function)
    }

    fn enter(&self, function: u32, _frame: &HookFrame<'_>) {
        if let Some(calls) = self.calls() {
            calls.enter(function);
        }
    }

    fn leave(&self, _function: u32, _frame: &HookFrame<'_>) {
        if let Some(calls) = self.calls() {
            calls.leave();
        }
    }

    fn tailcall(&self, _function: u32, _frame: &HookFrame<'_>) {
        if let Some(calls) = self.calls() {
            calls.leave();
        }
    }
}

impl CorProfilerCallback for Recorder {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        let mode = match setting(settings::MODE).as_deref() {
            Some("alloc") => {
                let sampling = Sampling::from_setting(setting(settings::ALLOC).as_deref()).map_err(|e| {
                    eprintln!("record-test-profiler: {e}");
                    HResult::E_INVALIDARG
                })?;
                info.set_event_mask(AllocMode::MASK)?;
                Mode::Alloc(AllocMode::new(sampling))
            }
            Some("calls") => {
                info.set_event_mask(CallsMode::MASK)?;
                Mode::Calls(CallsMode::new(setting(settings::FILTER).as_deref()))
            }
            other => {
                eprintln!("record-test-profiler: mode {other:?} is not alloc or calls");
                return Err(HResult::E_INVALIDARG);
            }
        };
        let is_calls = matches!(mode, Mode::Calls(_));
        let _ = self.mode.set(mode);
        let info = self.info.get_or_init(|| info);
        if is_calls {
            // After the mode's mask: install adds the hooks' bits to the mask it finds.
            hooks::install(self, info, HookMode::Fast)?;
        }
        Ok(())
    }

    fn object_allocated(&self, object_id: ObjectID, class_id: ClassID) -> Result<()> {
        match self.alloc() {
            Some((info, alloc)) => alloc.object_allocated(info, object_id, class_id),
            None => Ok(()),
        }
    }

    fn exception_unwind_function_enter(&self, function_id: FunctionID) -> Result<()> {
        if let Some(calls) = self.calls() {
            calls.exception_unwind_function_enter(function_id);
        }
        Ok(())
    }

    fn exception_unwind_function_leave(&self) -> Result<()> {
        if let Some(calls) = self.calls() {
            calls.exception_unwind_function_leave();
        }
        Ok(())
    }

    fn exception_catcher_enter(&self, _function_id: FunctionID, _object_id: ObjectID) -> Result<()> {
        if let Some(calls) = self.calls() {
            calls.exception_catcher_enter();
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let profile = match self.mode.get() {
            Some(Mode::Alloc(alloc)) => alloc.profile(),
            Some(Mode::Calls(calls)) => calls.profile(),
            None => return Ok(()),
        };
        if let Some(out) = std::env::var_os(settings::OUT)
            && let Err(e) = std::fs::write(&out, profile.to_text())
        {
            eprintln!("record-test-profiler: cannot write {}: {e}", out.to_string_lossy());
        }
        Ok(())
    }
}

corprof::export_profiler!(Recorder, CLSID);
