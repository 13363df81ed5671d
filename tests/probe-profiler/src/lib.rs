//! A test profiler for `tests/runtime/probe.rs`: when the Tracer app's `Main` is about to be JIT-compiled,
//! it exercises the safe calling side against the real runtime — a `String` result, result
//! structs, the ICorProfilerModuleEnum iterator, HCORENUM iterators over metadata, S_FALSE
//! answers — and writes
//! one line per fact to the file in `CORPROF_PROBE_OUT`.

use corprof::types::{COR_PRF_MONITOR, CorOpenFlags, FunctionID, ModuleID, mdTypeDef};
use corprof::{CorProfilerCallback, IUnknown, MetaDataImport, ProfilerInfo, Result};
use std::sync::{Mutex, OnceLock};

pub const CLSID: corprof::GUID = corprof::GUID::parse("5E1F0C3A-7B2D-4C8E-9A61-0D4F2B7E8C93");

#[derive(Default)]
pub struct Probe {
    info: OnceLock<ProfilerInfo>,
    lines: Mutex<Vec<String>>,
    done: Mutex<bool>,
}

fn type_name(import: &MetaDataImport, td: mdTypeDef) -> Result<String> {
    Ok(import.get_type_def_props(td)?.name)
}

impl Probe {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(corprof::HResult::E_UNEXPECTED)
    }

    fn say(&self, line: String) {
        self.lines.lock().unwrap().push(line);
    }

    /// Everything the probe learns about the app's module through the safe API.
    fn probe(&self, module: ModuleID) -> Result<()> {
        let info = self.info()?;
        let rt = info.get_runtime_information()?;
        self.say(format!("runtime {}.{} {}", rt.major_version, rt.minor_version, rt.version_string));

        let module_info = info.get_module_info(module)?;
        let file = module_info.name.rsplit('/').next().unwrap_or_default().to_string();
        self.say(format!("module {file}"));
        let assembly = info.get_assembly_info(module_info.assembly_id)?;
        self.say(format!("assembly {}", assembly.name));

        // ICorProfilerModuleEnum as an iterator: the app's module is among the loaded ones.
        let loaded: Vec<ModuleID> = info.enum_modules()?.collect();
        self.say(format!("enum_modules has app module: {}", loaded.contains(&module)));

        // HCORENUM iterators over the metadata: types, then the methods of each app type.
        let import = info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)?;
        let mut types = Vec::new();
        for td in import.enum_type_defs()? {
            let name = type_name(&import, td)?;
            if name.starts_with("TracerApp.") {
                let mut methods: Vec<String> = Vec::new();
                for md in import.enum_methods(td)? {
                    methods.push(import.get_method_props(md)?.name);
                }
                methods.sort();
                types.push(format!("type {name}: {}", methods.join(" ")));
            }
        }
        types.sort();
        for t in types {
            self.say(t);
        }

        // S_FALSE answers "no": a class that is not an array, an attribute that is not there.
        let program = import.find_type_def_by_name("TracerApp.Program", 0)?;
        let class = info.get_class_from_token(module, program)?;
        self.say(format!("is_array_class TracerApp.Program: {:?}", info.is_array_class(class)?.map(|a| a.rank)));
        let attr = import.get_custom_attribute_by_name(program, "NoSuchAttribute")?;
        self.say(format!("custom attribute NoSuchAttribute: {:?}", attr.map(|a| a.data_size)));
        Ok(())
    }
}

impl CorProfilerCallback for Probe {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::JIT_COMPILATION)?;
        let _ = self.info.set(info);
        Ok(())
    }

    fn jit_compilation_started(&self, function_id: FunctionID, _safe: bool) -> Result<()> {
        let f = self.info()?.get_function_info(function_id)?;
        let import = self.info()?.get_module_metadata::<MetaDataImport>(f.module_id, CorOpenFlags::ofRead)?;
        let method = import.get_method_props(f.token)?;
        if method.name != "Main" || type_name(&import, method.class)? != "TracerApp.Program" {
            return Ok(());
        }
        let mut done = self.done.lock().unwrap();
        if !*done {
            *done = true;
            if let Err(e) = self.probe(f.module_id) {
                self.say(format!("error {e}"));
            }
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Some(path) = std::env::var_os("CORPROF_PROBE_OUT") {
            let text: String = self.lines.lock().unwrap().iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(path, text).map_err(|_| corprof::HResult::E_FAIL)?;
        }
        Ok(())
    }
}

corprof::export_profiler!(Probe, CLSID);
