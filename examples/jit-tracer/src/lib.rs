//! jit-tracer: one line per JIT-compiled method (`Namespace.Type::Method`, nested types joined
//! with `+`, generic types as metadata names them, e.g. ``Box`1``) and one line
//! `EXC Namespace.Type` per thrown exception, resolved through ICorProfilerInfo and
//! IMetaDataImport. The first line says which ICorProfilerInfo version the runtime gave.
//!
//! With `CORPROF_TRACE_SIGNATURES=1` each method line is the method's full signature instead,
//! as its module declares it: `<ReturnType> <Namespace.Type>::<Method>(<ParamType>, …)`, e.g.
//! `System.Int32 Shop.Order::Submit(System.String)`, `System.Void Shop.Box<T>::.ctor(T)`
//! ([`corprof::sig::method_definition_name`]). With `CORPROF_TRACE_SIGNATURES=runtime` it is the
//! instantiation the runtime compiles, e.g. `System.Void Shop.Box<System.Int32>::.ctor(System.Int32)`
//! or, for code shared by reference types, `System.Void Shop.Box<System.__Canon>::.ctor(System.__Canon)`
//! ([`corprof::sig::function_name`]); that mode also writes `NEW <class>` for each class the
//! first time an object of it is allocated, e.g. `NEW Shop.Box<System.String>`,
//! `NEW System.String[,]` ([`corprof::sig::class_name`]).
//!
//! Load with `CORECLR_PROFILER={A3C1E5F7-2B4D-4F60-8A1C-3E5B7D9F1A2C}`; lines go to the file in
//! `CORPROF_TRACE_OUT`, else stderr.

use corprof::types::{COR_PRF_MONITOR, ClassID, CorOpenFlags, FunctionID, ModuleID, mdTypeDef};
use corprof::{CorProfilerCallback, IUnknown, LiveObject, MetaDataImport, ProfilerInfo, Result};
use std::collections::HashSet;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("A3C1E5F7-2B4D-4F60-8A1C-3E5B7D9F1A2C");

/// What a method line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// `Namespace.Type::Method` (the default).
    Names,
    /// The definition's signature (`CORPROF_TRACE_SIGNATURES=1`).
    Signatures,
    /// The runtime's instantiation (`CORPROF_TRACE_SIGNATURES=runtime`).
    Instantiations,
}

impl Lines {
    /// The mode `CORPROF_TRACE_SIGNATURES` asks for: unset, empty or `0` is [`Lines::Names`].
    pub fn from_env() -> Lines {
        match std::env::var("CORPROF_TRACE_SIGNATURES").as_deref() {
            Err(_) | Ok("" | "0") => Lines::Names,
            Ok("runtime") => Lines::Instantiations,
            Ok(_) => Lines::Signatures,
        }
    }
}

pub struct Tracer {
    info: OnceLock<ProfilerInfo>,
    out: Mutex<Box<dyn Write + Send>>,
    lines: Lines,
    /// The classes already written as `NEW` lines.
    allocated: Mutex<HashSet<ClassID>>,
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
        Tracer { info: OnceLock::new(), out: Mutex::new(out), lines: Lines::from_env(), allocated: Mutex::default() }
    }
}

/// The full name of a type definition: `Namespace.Outer+Inner`.
pub fn type_name(import: &MetaDataImport, td: mdTypeDef) -> Result<String> {
    corprof::sig::type_path(import, corprof::sig::Token(td)).ok_or(corprof::HResult::CLDB_E_RECORD_NOTFOUND)
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
        let mut mask = COR_PRF_MONITOR::JIT_COMPILATION | COR_PRF_MONITOR::EXCEPTIONS;
        if self.lines == Lines::Instantiations {
            mask = mask | COR_PRF_MONITOR::ENABLE_OBJECT_ALLOCATED | COR_PRF_MONITOR::OBJECT_ALLOCATED;
        }
        info.set_event_mask(mask)?;
        self.line(&format!("# info {} (version {})", info.interface_name(), info.version()));
        let _ = self.info.set(info);
        Ok(())
    }

    fn jit_compilation_started(&self, function_id: FunctionID, _safe: bool) -> Result<()> {
        let line = match self.lines {
            Lines::Names => self.method_name(function_id),
            Lines::Signatures => self.info().and_then(|info| {
                let f = info.get_function_info(function_id)?;
                corprof::sig::method_definition_name(info, f.module_id, f.token)
            }),
            Lines::Instantiations => self.info().and_then(|info| corprof::sig::function_name(info, function_id)),
        };
        match line {
            Ok(name) => self.line(&name),
            Err(e) => self.line(&format!("# unresolved function {function_id:#x}: {e}")),
        }
        Ok(())
    }

    fn exception_thrown(&self, thrown: LiveObject<'_>) -> Result<()> {
        let class = thrown.class(self.info()?);
        let name = class.and_then(|class| self.class_name(class));
        match name {
            Ok(name) => self.line(&format!("EXC {name}")),
            Err(e) => self.line(&format!("# unresolved exception object: {e}")),
        }
        Ok(())
    }

    fn object_allocated(&self, _object: LiveObject<'_>, class_id: ClassID) -> Result<()> {
        let first = self.allocated.lock().is_ok_and(|mut seen| seen.insert(class_id));
        if first {
            match corprof::sig::class_name(self.info()?, class_id) {
                Ok(name) => self.line(&format!("NEW {name}")),
                Err(e) => self.line(&format!("# unresolved class {class_id}: {e}")),
            }
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
