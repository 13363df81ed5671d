//! Conformance scenario "statics" (`src/tests/profiler/unittest/getappdomainstaticaddress.cs`):
//! from a thread the profiler creates (InitializeCurrentThread, then ForceGC), GetStaticFieldInfo
//! classifies the app's statics, GetAppDomainStaticAddress finds the values Main stored (a long
//! and a string), and GetThreadStaticAddress2 finds the main thread's thread static
//! (GetThreadStaticAddress, which answers for the calling thread only, refuses with E_INVALIDARG).
//! As the runtime test does, every GarbageCollectionFinished walks the AppDomain statics of every
//! class loaded and not unloading (each static non-literal field of each non-array class): no
//! GetAppDomainStaticAddress fails (CORPROF_E_DATAINCOMPLETE aside), and both classes of
//! collectible modules (a copy of the app in a collectible AssemblyLoadContext, flagged
//! COR_PRF_MODULE_COLLECTIBLE) and others are read. Beyond the runtime's checks: the walks read
//! the values the two Holder classes were given (the collectible copy's its own), the copy's
//! Holder gets ClassUnloadStarted once its context is unloaded, and no walk after that reads it.
//!
//! `COR_PRF_MONITOR_GC` is turned on once the profiler's thread has read the statics (the app runs
//! with `COMPlus_gcConcurrent=0`, without which the runtime refuses the GC flag after Initialize):
//! with it on from the start, 8.0.4 answers that thread's GetClassFromObject (under its
//! SuspendRuntime) with CORPROF_E_UNSUPPORTED_CALL_SEQUENCE (the runtime allows object inspection
//! outside a callback only while it reports a GC in progress).
//!
//! With `CORPROF_CONF_SKIP_COLLECTIBLE=1` the walks leave collectible modules' classes alone:
//! 3.1.23 crashes in GetAppDomainStaticAddress for them at GarbageCollectionFinished, their
//! context still alive (.NET 5 reworked that call for collectible modules: dotnet/runtime#33367,
//! #34677 with the runtime test, #41076).

use crate::support::{Recorder, lock};
use corprof::types::{
    AppDomainID, COR_PRF_HIGH_MONITOR, COR_PRF_MODULE_FLAGS, COR_PRF_MONITOR, COR_PRF_STATIC_TYPE, ClassID,
    CorOpenFlags, FunctionID, ModuleID, ObjectID, ThreadID, mdFieldDef,
};
use corprof::{CorProfilerCallback, HResult, IUnknown, MetaDataImport, ProfilerInfo, Result};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

pub struct Statics {
    rec: Recorder,
    holder: Mutex<Option<(ClassID, ModuleID)>>,
    /// Every non-array class loaded and not unloading, with the AppDomain it loaded in.
    classes: Mutex<HashMap<ClassID, AppDomainID>>,
    walks: Mutex<Walks>,
    /// `CORPROF_CONF_SKIP_COLLECTIBLE=1`: the walks leave collectible modules' classes alone.
    skip_collectible: bool,
}

impl Default for Statics {
    fn default() -> Statics {
        Statics {
            rec: Recorder::default(),
            holder: Mutex::default(),
            classes: Mutex::default(),
            walks: Mutex::default(),
            skip_collectible: std::env::var_os("CORPROF_CONF_SKIP_COLLECTIBLE").is_some_and(|v| v == "1"),
        }
    }
}

/// What the walks of the statics at GarbageCollectionFinished found.
#[derive(Default)]
struct Walks {
    gcs: u32,
    /// `Class::field HRESULT` of every failed call but CORPROF_E_DATAINCOMPLETE.
    failures: BTreeSet<String>,
    collectible_reads: u32,
    other_reads: u32,
    /// Whether each module is collectible, asked once.
    collectible_modules: HashMap<ModuleID, bool>,
    /// `Holder.Counter` as the last walk read it, in the app's Holder and in its collectible copy.
    counter: Option<i64>,
    collectible_counter: Option<i64>,
    /// The collectible copy's Holder, once loaded; whether it got ClassUnloadStarted; whether a
    /// walk read it after that.
    collectible_holder: Option<ClassID>,
    collectible_holder_unloaded: bool,
    read_after_unload: bool,
}

/// The mask from Initialize on; [`COR_PRF_MONITOR::GC`] joins it once the profiler's thread is done.
const MASK: COR_PRF_MONITOR =
    COR_PRF_MONITOR::CLASS_LOADS.union(COR_PRF_MONITOR::JIT_COMPILATION).union(COR_PRF_MONITOR::MODULE_LOADS);

/// `fdStatic` and `fdLiteral` of a field's attributes (corhdr.h).
const FD_STATIC: u32 = 0x10;
const FD_LITERAL: u32 = 0x40;

impl Statics {
    /// The runtime test's walk, from GarbageCollectionFinished (the runtime is suspended).
    fn walk_statics(&self) -> Result<()> {
        let info = self.rec.info()?;
        // Held for the whole walk: a class's unload waits for it (ClassUnloadStarted takes it).
        let classes = lock(&self.classes);
        let mut walks = lock(&self.walks);
        walks.gcs += 1;
        for (&class, &domain) in classes.iter() {
            if let Err(e) = self.walk_class(info, &mut walks, class, domain) {
                walks.failures.insert(format!("{} {e}", self.rec.class_name(class)));
            }
        }
        Ok(())
    }

    fn walk_class(&self, info: &ProfilerInfo, walks: &mut Walks, class: ClassID, domain: AppDomainID) -> Result<()> {
        let c = match info.get_class_id_info2(class) {
            Err(HResult::CORPROF_E_DATAINCOMPLETE) => return Ok(()),
            other => other?,
        };
        let import = match info.get_module_metadata::<MetaDataImport>(c.module_id, CorOpenFlags::ofRead) {
            Err(HResult::CORPROF_E_DATAINCOMPLETE) => return Ok(()),
            other => other?,
        };
        let collectible = match walks.collectible_modules.get(&c.module_id) {
            Some(&known) => known,
            None => {
                let flags = info.get_module_info2(c.module_id)?.module_flags;
                let known = flags.0 & COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_COLLECTIBLE.0 != 0;
                walks.collectible_modules.insert(c.module_id, known);
                known
            }
        };
        if collectible && self.skip_collectible {
            return Ok(());
        }
        let holder = self.rec.class_name(class) == "ConfStatics.Holder";
        if walks.collectible_holder_unloaded && walks.collectible_holder == Some(class) {
            walks.read_after_unload = true;
        }
        for field in import.enum_fields(c.type_def_token)? {
            let props = import.get_field_props(field)?;
            if props.attr & FD_STATIC == 0 || props.attr & FD_LITERAL != 0 {
                continue;
            }
            let kind = info.get_static_field_info(class, field)?;
            if kind.0 & COR_PRF_STATIC_TYPE::COR_PRF_FIELD_APP_DOMAIN_STATIC.0 == 0 {
                continue;
            }
            match info.get_app_domain_static_address(class, field, domain) {
                Err(HResult::CORPROF_E_DATAINCOMPLETE) => {}
                Err(e) => {
                    walks.failures.insert(format!("{}::{} {e}", self.rec.class_name(class), props.name));
                }
                Ok(at) => {
                    if collectible {
                        walks.collectible_reads += 1;
                    } else {
                        walks.other_reads += 1;
                    }
                    if holder && props.name == "Counter" {
                        // SAFETY: the runtime gave the address of this class's `long` static; the
                        // runtime is suspended for the GC, and the class is loaded and not
                        // unloading (an unload waits for the walk to end).
                        let value = unsafe { at.cast::<i64>().read() };
                        *if collectible { &mut walks.collectible_counter } else { &mut walks.counter } = Some(value);
                    }
                }
            }
        }
        Ok(())
    }
}

/// What the profiler's own thread reads.
fn read_statics(rec: &Recorder, class: ClassID, module: ModuleID, domain: AppDomainID, main: ThreadID) -> Result<()> {
    let info = rec.info()?;
    info.initialize_current_thread()?;
    info.force_gc()?;
    rec.say("profiler thread: initialized, forced a GC");
    let import = info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)?;
    let holder = import.find_type_def_by_name("ConfStatics.Holder", 0)?;
    let mut fields: Vec<(String, mdFieldDef)> = Vec::new();
    for field in import.enum_fields(holder)? {
        fields.push((import.get_field_props(field)?.name, field));
    }
    fields.sort();
    for (name, field) in fields {
        let kind = info.get_static_field_info(class, field)?;
        let value = match name.as_str() {
            "Counter" => info.get_app_domain_static_address(class, field, domain).map(|at| {
                // SAFETY: the runtime gave the address of this class's `long` static in `domain`;
                // the class is loaded and never unloads (not collectible).
                format!("{:#x}", unsafe { at.cast::<i64>().read() })
            }),
            "Name" => info.get_app_domain_static_address(class, field, domain).and_then(|at| {
                // With the runtime suspended no GC can move or free the string between reading
                // the reference and asking for its class; the guard resumes it at the scope's end.
                let _suspension = info.suspend_runtime()?;
                // SAFETY: the runtime gave the address of this class's reference static in
                // `domain`; the slot holds an object reference (or null), read once while no GC
                // can run.
                let object = unsafe { ObjectID::from_raw(at.cast::<usize>().read()) };
                // SAFETY: `object` is the string the static refers to, read just now, and no GC
                // can run while the runtime is suspended.
                unsafe { info.get_class_from_object(object) }.map(|c| rec.class_name(c))
            }),
            "PerThread" => {
                // GetThreadStaticAddress answers for the calling thread only; the 2 form takes
                // any managed thread.
                // SAFETY (both calls): the main thread is alive, waiting in JITCompilationStarted
                // for this thread to finish.
                let v1 = unsafe { info.get_thread_static_address(class, field, main) }.map(|_| "Ok".to_string());
                let v2 = unsafe { info.get_thread_static_address2(class, field, domain, main) }.map(|at| {
                    // SAFETY: the runtime gave the address of the main thread's `int` thread
                    // static; the main thread is alive (it waits for this thread to finish).
                    unsafe { at.cast::<i32>().read() }.to_string()
                });
                let v1 = v1.unwrap_or_else(|e| e.to_string());
                let v2 = v2.unwrap_or_else(|e| e.to_string());
                Ok(format!("{v2} (GetThreadStaticAddress of another thread: {v1})"))
            }
            _ => Err(HResult::E_UNEXPECTED),
        };
        let value = value.unwrap_or_else(|e| e.to_string());
        rec.say(format!("{name}: {kind}, value {value}"));
    }
    Ok(())
}

impl CorProfilerCallback for Statics {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(unknown, MASK, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn class_load_finished(&self, class: ClassID, _status: HResult) -> Result<()> {
        let info = self.rec.info()?;
        if info.is_array_class(class)?.is_some() {
            return Ok(());
        }
        let domain = info.with_current_thread(|t| t.app_domain(info))??;
        lock(&self.classes).insert(class, domain);
        if self.rec.class_name(class) == "ConfStatics.Holder" {
            let module = info.get_class_id_info(class)?.module_id;
            let flags = info.get_module_info2(module)?.module_flags;
            if flags.0 & COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_COLLECTIBLE.0 != 0 {
                lock(&self.walks).collectible_holder = Some(class);
            } else {
                lock(&self.holder).get_or_insert((class, module));
            }
        }
        Ok(())
    }

    fn class_unload_started(&self, class: ClassID) -> Result<()> {
        lock(&self.classes).remove(&class);
        let mut walks = lock(&self.walks);
        if walks.collectible_holder == Some(class) {
            walks.collectible_holder_unloaded = true;
        }
        Ok(())
    }

    /// Classes of the unloading module, and instantiations over its classes, leave the walk (as
    /// in the runtime test: not every one of them gets ClassUnloadStarted).
    fn module_unload_started(&self, module: ModuleID) -> Result<()> {
        let info = self.rec.info()?;
        lock(&self.classes).retain(|&class, _| match info.get_class_id_info2(class) {
            Ok(c) => {
                c.module_id != module
                    && c.type_args.iter().all(|&arg| info.get_class_id_info(arg).is_ok_and(|a| a.module_id != module))
            }
            Err(_) => false,
        });
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        self.walk_statics()
    }

    fn jit_compilation_started(&self, function: FunctionID, _safe: bool) -> Result<()> {
        if self.rec.function_name(function) != "ConfStatics.Program::Ready" {
            return Ok(());
        }
        let Some((class, module)) = *lock(&self.holder) else {
            self.rec.say("Holder was never loaded");
            return Ok(());
        };
        let info = self.rec.info()?;
        let main = info.get_current_thread_id()?;
        let domain = info.with_current_thread(|t| t.app_domain(info))??;
        let rec = &self.rec;
        std::thread::scope(|s| {
            s.spawn(|| {
                if let Err(e) = read_statics(rec, class, module, domain, main) {
                    rec.say(format!("profiler thread failed: {e}"));
                }
            });
        });
        // Accepted only without concurrent GC (else CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE): the
        // test runs the app with COMPlus_gcConcurrent=0.
        let gc = MASK | COR_PRF_MONITOR::GC;
        if let Err(e) = info.set_event_mask2(gc, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE) {
            self.rec.say(format!("turning on COR_PRF_MONITOR_GC failed: {e}"));
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let walks = lock(&self.walks);
        let say = |line: String| self.rec.say(line);
        say(format!("statics walked at GarbageCollectionFinished: {}", walks.gcs > 0));
        say(format!("walk failures: {:?}", walks.failures));
        say(format!(
            "statics read in collectible modules: {}, in others: {}",
            walks.collectible_reads > 0,
            walks.other_reads > 0
        ));
        let hex = |v: Option<i64>| v.map_or("never read".to_string(), |v| format!("{v:#x}"));
        say(format!("Holder.Counter as the walks read it: {}", hex(walks.counter)));
        say(format!("the collectible Holder.Counter as the walks read it: {}", hex(walks.collectible_counter)));
        say(format!("the collectible Holder unloaded: {}", walks.collectible_holder_unloaded));
        say(format!("the collectible Holder read after its unload: {}", walks.read_after_unload));
        drop(walks);
        self.rec.finish()
    }
}
