//! Conformance scenario "reversestartup" (`src/tests/profiler/eventpipe/reverse_startup.cs`): a
//! profiler loaded at startup through a diagnostic port. The app starts with
//! `DOTNET_DiagnosticPorts=<socket>` (the runtime connects to `corprof-attach --startup --listen`
//! and waits); the tool sets `ReverseServerTest_OverwriteMe` and removes `ReverseServerTest_ClearMe`
//! with SetEnvironmentVariable, names this profiler with StartupProfiler and resumes the runtime.
//! The profiler gets `Initialize` (not `InitializeForAttach`), reads the changed variable and not
//! the removed one through GetEnvironmentVariable (ERROR_ENVVAR_NOT_FOUND), sees CoreLib load and
//! the app's Main compiled. The same through the process's own socket paused by
//! `DOTNET_DefaultDiagnosticPortSuspend=1`. Beyond the runtime's checks: the C library's
//! environment (`std::env`) keeps both variables as the process started, so a profiler reads such
//! settings through GetEnvironmentVariable; a runtime past its startup answers StartupProfiler
//! with S_OK and loads nothing.

use crate::support::Recorder;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID, ModuleID};
use corprof::{CorProfilerCallback, HResult, IUnknown, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// The variable the tool overwrites and the one it removes (the runtime test's names).
const OVERWRITTEN: &str = "ReverseServerTest_OverwriteMe";
const CLEARED: &str = "ReverseServerTest_ClearMe";

#[derive(Default)]
pub struct ReverseStartup {
    rec: Recorder,
    corelib_loaded: AtomicBool,
}

impl ReverseStartup {
    /// What GetEnvironmentVariable answers for `name`: its value, or the failure's HRESULT.
    fn variable(&self, name: &str) -> String {
        match self.rec.info().and_then(|info| info.get_environment_variable(name)) {
            Ok(value) => format!("{name} = {value:?}"),
            Err(e) => format!("{name}: 0x{:08X}", e.0 as u32),
        }
    }
}

impl CorProfilerCallback for ReverseStartup {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.say("Initialize");
        let low = COR_PRF_MONITOR::MODULE_LOADS | COR_PRF_MONITOR::JIT_COMPILATION;
        self.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        self.rec.say(self.variable(OVERWRITTEN));
        self.rec.say(self.variable(CLEARED));
        for name in [OVERWRITTEN, CLEARED] {
            self.rec.say(format!("libc: {name} {:?}", std::env::var(name).ok()));
        }
        Ok(())
    }

    fn initialize_for_attach(&self, _unknown: &IUnknown, _client_data: &[u8]) -> Result<()> {
        self.rec.say("InitializeForAttach");
        Err(HResult::E_FAIL)
    }

    fn module_load_finished(&self, module: ModuleID, _status: HResult) -> Result<()> {
        let name = self.rec.info()?.get_module_info(module)?.name;
        if name.ends_with("/System.Private.CoreLib.dll") {
            self.corelib_loaded.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _safe: bool) -> Result<()> {
        if self.rec.function_name(function) == "ConfReverseStartup.Program::Main" {
            self.rec.say("compiled ConfReverseStartup.Program::Main");
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.say(format!("saw System.Private.CoreLib load: {}", self.corelib_loaded.load(Ordering::Relaxed)));
        self.rec.say("Shutdown");
        self.rec.finish()
    }
}
