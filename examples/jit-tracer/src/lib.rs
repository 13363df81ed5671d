//! jit-tracer: one line per JIT-compiled method (`Namespace.Type::Method`, nested types joined
//! with `+`, generic types as metadata names them, e.g. ``Box`1``) and one line
//! `EXC Namespace.Type` per thrown exception, resolved through ICorProfilerInfo and
//! IMetaDataImport. The first line says which ICorProfilerInfo version the runtime gave.
//!
//! Load with `CORECLR_PROFILER={A3C1E5F7-2B4D-4F60-8A1C-3E5B7D9F1A2C}`; lines go to the file in
//! `CORPROF_TRACE_OUT`, else stderr.

use corprof::types::{COR_PRF_MONITOR, ClassID, CorOpenFlags, FunctionID, ModuleID, ObjectID, mdTypeDef};
use corprof::{CorProfilerCallback, IUnknown, MetaDataImport, ProfilerInfo, Result};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("A3C1E5F7-2B4D-4F60-8A1C-3E5B7D9F1A2C");

pub struct Tracer {
    info: OnceLock<ProfilerInfo>,
    out: Mutex<Box<dyn Write + Send>>,
}

impl Default for Tracer {
    fn default() -> Self {
        let out: Box<dyn Write + Send> = match std::env::var_os("CORPROF_TRACE_OUT") {
            Some(path) => match std::fs::File::create(&path) {
                Ok(f) => Box::new(std::io::BufWriter::new(f)),
                Err(e) => {
                    eprintln!("jit-tracer: cannot create {path:?}: {e}; writing to stderr");
                    Box::new(std::io::stderr())
                }
            },
            None => Box::new(std::io::stderr()),
        };
        Tracer { info: OnceLock::new(), out: Mutex::new(out) }
    }
}

/// The full name of a type definition: `Namespace.Outer+Inner`.
pub fn type_name(import: &MetaDataImport, td: mdTypeDef) -> Result<String> {
    let props = import.get_type_def_props(td)?;
    // Nested types have an enclosing class; top-level ones answer "record not found".
    match import.get_nested_class_props(td) {
        Ok(outer) if outer != 0 => Ok(format!("{}+{}", type_name(import, outer)?, props.name)),
        _ => Ok(props.name),
    }
}

impl Tracer {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(corprof::HResult::E_UNEXPECTED)
    }

    fn line(&self, text: &str) {
        if let Ok(mut out) = self.out.lock() {
            let _ = writeln!(out, "{text}");
        }
    }

    fn import(&self, module: ModuleID) -> Result<MetaDataImport> {
        self.info()?.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)
    }

    /// `Namespace.Type::Method` for a function.
    pub fn method_name(&self, function: FunctionID) -> Result<String> {
        let f = self.info()?.get_function_info(function)?;
        let import = self.import(f.module_id)?;
        let method = import.get_method_props(f.token)?;
        Ok(format!("{}::{}", type_name(&import, method.class)?, method.name))
    }

    /// `Namespace.Type` for a class.
    pub fn class_name(&self, class: ClassID) -> Result<String> {
        let c = self.info()?.get_class_id_info(class)?;
        type_name(&self.import(c.module_id)?, c.type_def_token)
    }
}

impl CorProfilerCallback for Tracer {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::JIT_COMPILATION | COR_PRF_MONITOR::EXCEPTIONS)?;
        self.line(&format!("# info {} (version {})", info.interface_name(), info.version()));
        let _ = self.info.set(info);
        Ok(())
    }

    fn jit_compilation_started(&self, function_id: FunctionID, _safe: bool) -> Result<()> {
        match self.method_name(function_id) {
            Ok(name) => self.line(&name),
            Err(e) => self.line(&format!("# unresolved function {function_id:#x}: {e}")),
        }
        Ok(())
    }

    fn exception_thrown(&self, thrown: ObjectID) -> Result<()> {
        let name = self.info()?.get_class_from_object(thrown).and_then(|class| self.class_name(class));
        match name {
            Ok(name) => self.line(&format!("EXC {name}")),
            Err(e) => self.line(&format!("# unresolved exception object: {e}")),
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Ok(mut out) = self.out.lock() {
            let _ = out.flush();
        }
        Ok(())
    }
}

corprof::export_profiler!(Tracer, CLSID);
