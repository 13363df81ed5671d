//! Conformance scenario "statics": from a thread the profiler creates (InitializeCurrentThread,
//! then ForceGC), GetStaticFieldInfo classifies the app's statics, GetAppDomainStaticAddress
//! finds the values Main stored (a long and a string), and GetThreadStaticAddress2 finds the
//! main thread's thread static (GetThreadStaticAddress, which answers for the calling thread only,
//! refuses with E_INVALIDARG).
//!
//! The runtime test it follows: `src/tests/profiler/unittest/getappdomainstaticaddress.cs`.

use conformance_support::Recorder;
use corprof::types::{
    AppDomainID, COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, ClassID, CorOpenFlags, FunctionID, ModuleID, ObjectID,
    ThreadID, mdFieldDef,
};
use corprof::{CorProfilerCallback, HResult, IUnknown, MetaDataImport, Result};
use std::sync::Mutex;

pub const CLSID: corprof::GUID = corprof::GUID::parse("6A0F3C21-4B7E-4D9A-8E15-2C3B4A5D6E05");

#[derive(Default)]
pub struct Statics {
    rec: Recorder,
    holder: Mutex<Option<(ClassID, ModuleID)>>,
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
        let low = COR_PRF_MONITOR::CLASS_LOADS | COR_PRF_MONITOR::JIT_COMPILATION;
        self.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn class_load_finished(&self, class: ClassID, _status: HResult) -> Result<()> {
        if self.rec.class_name(class) == "ConfStatics.Holder" {
            let module = self.rec.info()?.get_class_id_info(class)?.module_id;
            *self.holder.lock().unwrap_or_else(|p| p.into_inner()) = Some((class, module));
        }
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _safe: bool) -> Result<()> {
        if self.rec.function_name(function) != "ConfStatics.Program::Ready" {
            return Ok(());
        }
        let Some((class, module)) = *self.holder.lock().unwrap_or_else(|p| p.into_inner()) else {
            self.rec.say("Holder was never loaded");
            return Ok(());
        };
        let info = self.rec.info()?;
        let main = info.get_current_thread_id()?;
        // SAFETY: `main` is the calling thread, alive while it runs this callback.
        let domain = unsafe { info.get_thread_app_domain(main)? };
        let rec = &self.rec;
        std::thread::scope(|s| {
            s.spawn(|| {
                if let Err(e) = read_statics(rec, class, module, domain, main) {
                    rec.say(format!("profiler thread failed: {e}"));
                }
            });
        });
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}

corprof::export_profiler!(Statics, CLSID);
