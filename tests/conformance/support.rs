//! What every scenario (tests/conformance/<scenario>/) shares: the poisoned-lock helper, the
//! negotiated `ProfilerInfo`, names of classes and functions as `Namespace.Type` and
//! `Namespace.Type::Method`, and the fact lines the scenario writes at Shutdown to the file in
//! `CORPROF_CONF_OUT` for tests/runtime/conformance.rs to compare.

use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, ClassID, CorOpenFlags, FunctionID};
use corprof::{HResult, IUnknown, MetaDataImport, ProfilerInfo, Result};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A scenario profiler's shared state.
#[derive(Default)]
pub struct Recorder {
    info: OnceLock<ProfilerInfo>,
    lines: Mutex<Vec<String>>,
    classes: Mutex<HashMap<ClassID, String>>,
    functions: Mutex<HashMap<FunctionID, String>>,
}

/// Locks `m`, poisoned or not (corprof's one helper): a panic in one callback (caught and
/// reported by corprof) must not turn every later callback of the scenario into a second panic.
pub use corprof::sync::lock;

impl Recorder {
    /// Negotiates the info interface and sets the event masks (from `Initialize`).
    pub fn start(&self, unknown: &IUnknown, low: COR_PRF_MONITOR, high: COR_PRF_HIGH_MONITOR) -> Result<&ProfilerInfo> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask2(low, high)?;
        let _ = self.info.set(info);
        self.info()
    }

    pub fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(HResult::E_UNEXPECTED)
    }

    /// The runtime's major version (3 for 3.1.23, which reports the desktop-era 4).
    pub fn runtime_major(&self) -> u16 {
        match self.info().and_then(|i| i.get_runtime_information()) {
            Ok(rt) if rt.major_version == 4 => 3,
            Ok(rt) => rt.major_version,
            Err(_) => 0,
        }
    }

    /// Adds a fact line.
    pub fn say(&self, line: impl Into<String>) {
        lock(&self.lines).push(line.into());
    }

    fn import(&self, module: corprof::types::ModuleID) -> Result<MetaDataImport> {
        self.info()?.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)
    }

    /// `Namespace.Outer+Inner`, as metadata spells it.
    fn type_name(&self, import: &MetaDataImport, td: corprof::types::mdTypeDef) -> Result<String> {
        corprof::sig::type_path(import, corprof::sig::Token(td)).ok_or(HResult::CLDB_E_RECORD_NOTFOUND)
    }

    /// `Namespace.Type` of a class, or `?` when it has none (arrays, unresolvable).
    pub fn class_name(&self, class: ClassID) -> String {
        if let Some(name) = lock(&self.classes).get(&class) {
            return name.clone();
        }
        let name = (|| {
            let c = self.info()?.get_class_id_info(class)?;
            self.type_name(&self.import(c.module_id)?, c.type_def_token)
        })()
        .unwrap_or_else(|_| "?".to_string());
        lock(&self.classes).insert(class, name.clone());
        name
    }

    /// `Namespace.Type::Method` of a function, or `?`.
    pub fn function_name(&self, function: FunctionID) -> String {
        if let Some(name) = lock(&self.functions).get(&function) {
            return name.clone();
        }
        let name = (|| {
            let f = self.info()?.get_function_info(function)?;
            let import = self.import(f.module_id)?;
            let method = import.get_method_props(f.token)?;
            Ok::<_, HResult>(format!("{}::{}", self.type_name(&import, method.class)?, method.name))
        })()
        .unwrap_or_else(|_| "?".to_string());
        lock(&self.functions).insert(function, name.clone());
        name
    }

    /// Writes the fact lines to the file in `CORPROF_CONF_OUT` (from `Shutdown`).
    pub fn finish(&self) -> Result<()> {
        self.finish_to("CORPROF_CONF_OUT")
    }

    /// Writes the fact lines to the file named by the environment variable `var`.
    pub fn finish_to(&self, var: &str) -> Result<()> {
        if let Some(path) = std::env::var_os(var) {
            let text: String = lock(&self.lines).iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(path, text).map_err(|_| HResult::E_FAIL)?;
        }
        Ok(())
    }
}
