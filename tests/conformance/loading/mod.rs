//! Conformance scenario "loading", after the runtime's `src/tests/profiler/unittest/moduleload.cs`
//! and `src/tests/profiler/assembly/ALCTest.cs`: exactly one module and one assembly load started
//! and finished for each the app counts (its live assemblies and their modules, plus the unloaded
//! copy), including a Reflection.Emit assembly and a second copy of the app in a collectible
//! AssemblyLoadContext; unloading that context reports its module's and assembly's unload (3.1.23
//! reports AssemblyUnloadFinished without AssemblyUnloadStarted); class loads of generic
//! instantiations carry their type arguments (`System.__Canon` for the shared code).

use crate::support::{Recorder, lock};
use corprof::types::{AssemblyID, COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, ClassID, ModuleID};
use corprof::{CorProfilerCallback, HResult, IUnknown, Result};
use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct Loading {
    rec: Recorder,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    counts: BTreeMap<&'static str, u32>,
    loaded: BTreeMap<String, u32>,
    unloaded: BTreeMap<String, u32>,
    classes: BTreeMap<String, u32>,
}

impl Loading {
    fn bump(&self, what: &'static str) {
        *lock(&self.state).counts.entry(what).or_default() += 1;
    }

    fn assembly_name(&self, assembly: AssemblyID) -> String {
        self.rec.info().and_then(|i| i.get_assembly_info(assembly)).map_or_else(|e| format!("? {e}"), |a| a.name)
    }

    /// `Namespace.Type<Arg, …>` with the runtime's type arguments.
    fn instantiated_name(&self, class: ClassID) -> String {
        let name = self.rec.class_name(class);
        let args = match self.rec.info().and_then(|i| i.get_class_id_info2(class)) {
            Ok(info) => info.type_args,
            Err(_) => return name,
        };
        if args.is_empty() {
            return name;
        }
        let args: Vec<String> = args.iter().map(|a| self.instantiated_name(*a)).collect();
        format!("{}<{}>", name.split('`').next().unwrap_or(&name), args.join(", "))
    }
}

impl CorProfilerCallback for Loading {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let low = COR_PRF_MONITOR::MODULE_LOADS | COR_PRF_MONITOR::ASSEMBLY_LOADS | COR_PRF_MONITOR::CLASS_LOADS;
        self.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn module_load_started(&self, _module: ModuleID) -> Result<()> {
        self.bump("module load started");
        Ok(())
    }

    fn module_load_finished(&self, _module: ModuleID, _status: HResult) -> Result<()> {
        self.bump("module load finished");
        Ok(())
    }

    fn module_unload_started(&self, _module: ModuleID) -> Result<()> {
        self.bump("module unload started");
        Ok(())
    }

    fn module_unload_finished(&self, _module: ModuleID, _status: HResult) -> Result<()> {
        self.bump("module unload finished");
        Ok(())
    }

    fn assembly_load_started(&self, _assembly: AssemblyID) -> Result<()> {
        self.bump("assembly load started");
        Ok(())
    }

    fn assembly_load_finished(&self, assembly: AssemblyID, _status: HResult) -> Result<()> {
        self.bump("assembly load finished");
        let name = self.assembly_name(assembly);
        if name.starts_with("Conf") {
            *lock(&self.state).loaded.entry(name).or_default() += 1;
        }
        Ok(())
    }

    fn assembly_unload_started(&self, assembly: AssemblyID) -> Result<()> {
        self.bump("assembly unload started");
        let name = self.assembly_name(assembly);
        if name.starts_with("Conf") {
            *lock(&self.state).unloaded.entry(name).or_default() += 1;
        }
        Ok(())
    }

    fn assembly_unload_finished(&self, _assembly: AssemblyID, _status: HResult) -> Result<()> {
        self.bump("assembly unload finished");
        Ok(())
    }

    fn class_load_finished(&self, class: ClassID, _status: HResult) -> Result<()> {
        let name = self.instantiated_name(class);
        if name.starts_with("ConfLoading.Box") || name.starts_with("ConfDynamic.") {
            *lock(&self.state).classes.entry(name).or_default() += 1;
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let s = lock(&self.state);
        let count = |what: &str| s.counts.get(what).copied().unwrap_or(0);
        for kind in ["module load", "module unload", "assembly load"] {
            let (started, finished) = (count(&format!("{kind} started")), count(&format!("{kind} finished")));
            self.rec.say(format!("{kind}s: started {started}, finished {finished}"));
        }
        // Exact: the collectible copy is the only assembly that unloads.
        let (started, finished) = (count("assembly unload started"), count("assembly unload finished"));
        self.rec.say(format!("assembly unloads: started {started}, finished {finished}"));
        for (name, n) in &s.loaded {
            self.rec.say(format!("assembly loaded: {name} x{n}"));
        }
        for (name, n) in &s.unloaded {
            self.rec.say(format!("assembly unloaded: {name} x{n}"));
        }
        for (name, n) in &s.classes {
            self.rec.say(format!("class loaded: {name} x{n}"));
        }
        drop(s);
        self.rec.finish()
    }
}
