//! Conformance scenario "classunload", after the runtime's
//! `src/tests/profiler/unittest/classload.cs` with `src/tests/profiler/unittest/unloadlibrary.cs`
//! (profiler `native/classload`): with `COR_PRF_MONITOR_CLASS_LOADS` alone, a `TestClass :
//! MarshalByRefObject` created in a collectible AssemblyLoadContext that is then unloaded brings
//! ClassLoadStarted/Finished for the seven classes the runtime test counts (TestClass, and
//! `List<TestClass>` with its six interfaces), each named with its type arguments, and
//! ClassUnloadStarted/Finished in pairs. The runtime test expects seven unloads; 8.0.4 and 3.1.23
//! unload only TestClass: the generic instantiations' unloads came with .NET 10
//! (dotnet/runtime#114068, fixed by #114107).

use crate::support::{Recorder, lock};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, ClassID};
use corprof::{CorProfilerCallback, HResult, IUnknown, Result};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// What the runtime test filters on: any class whose name mentions the test class.
const TEST_CLASS: &str = "ConfClassUnload.TestClass";

#[derive(Default)]
pub struct ClassUnload {
    rec: Recorder,
    /// Per class name, its count of each of the four callbacks.
    seen: Mutex<BTreeMap<String, [u32; 4]>>,
}

const LOAD_STARTED: usize = 0;
const LOAD_FINISHED: usize = 1;
const UNLOAD_STARTED: usize = 2;
const UNLOAD_FINISHED: usize = 3;

impl ClassUnload {
    /// `Namespace.Type`1<Arg>` with the runtime's type arguments.
    fn instantiated_name(&self, class: ClassID) -> String {
        let name = self.rec.class_name(class);
        match self.rec.info().and_then(|i| i.get_class_id_info2(class)) {
            Ok(info) if !info.type_args.is_empty() => {
                let args: Vec<String> = info.type_args.iter().map(|a| self.instantiated_name(*a)).collect();
                format!("{name}<{}>", args.join(", "))
            }
            _ => name,
        }
    }

    fn count(&self, class: ClassID, which: usize) -> Result<()> {
        let name = self.instantiated_name(class);
        if name.contains(TEST_CLASS) {
            lock(&self.seen).entry(name).or_default()[which] += 1;
        }
        Ok(())
    }
}

impl CorProfilerCallback for ClassUnload {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(unknown, COR_PRF_MONITOR::CLASS_LOADS, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn class_load_started(&self, class: ClassID) -> Result<()> {
        self.count(class, LOAD_STARTED)
    }

    fn class_load_finished(&self, class: ClassID, _status: HResult) -> Result<()> {
        self.count(class, LOAD_FINISHED)
    }

    fn class_unload_started(&self, class: ClassID) -> Result<()> {
        self.count(class, UNLOAD_STARTED)
    }

    fn class_unload_finished(&self, class: ClassID, _status: HResult) -> Result<()> {
        self.count(class, UNLOAD_FINISHED)
    }

    fn shutdown(&self) -> Result<()> {
        let seen = lock(&self.seen);
        let total = |which: usize| seen.values().map(|c| c[which]).sum::<u32>();
        self.rec.say(format!(
            "class loads: started {}, finished {}; unloads: started {}, finished {}",
            total(LOAD_STARTED),
            total(LOAD_FINISHED),
            total(UNLOAD_STARTED),
            total(UNLOAD_FINISHED)
        ));
        // Per class: load started, load finished, unload started, unload finished.
        for (name, c) in seen.iter() {
            self.rec.say(format!("{name}: {} {} {} {}", c[0], c[1], c[2], c[3]));
        }
        drop(seen);
        self.rec.finish()
    }
}
