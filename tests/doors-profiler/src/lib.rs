//! The doors an outside attack went through with the public API alone (each an exit 139 before
//! corprof refused it), as a profiler that has no `unsafe` and prints what it got, one `DOORS …`
//! line on stderr per call. `DOORS_MODE` picks the door (tests/runtime/doors.rs asserts the lines
//! and a clean exit on CoreCLR 8.0.4 and 3.1.23):
//!
//! - `hook`: fast-mode enter hooks calling `force_gc` (a GC-triggering call in a thread running
//!   managed code with no frame: `Ok` once, then a crash) and `get_function_info` (allowed);
//! - `thread`: in `ModuleLoadFinished` of the app's module, the app's first TypeDef is looked up
//!   with `get_class_from_token` on the callback's thread (allowed) and on a thread of the
//!   profiler's own, before and after `initialize_current_thread` (a crash in the runtime's type
//!   loader); the TypeDef enumeration counts and rewinds its own handle on the way;
//! - `provider`: a provider whose callback starts a session naming that same provider each time
//!   it is enabled (the runtime called it again inside the start, without end: stack overflow).
//! - `lent`: in `ObjectAllocated`, the lent object's class is asked, then a call that may trigger
//!   a GC is made (`enum_modules`), then the class is asked again (the object may have moved: a
//!   stale address handed to the runtime); the next allocation's object is asked once more.
//! - `unloaded` (on tests/apps/Unload): with `COR_PRF_MONITOR_JIT_COMPILATION` alone, the IDs of
//!   `Plugin.Work` are kept twice from `JITCompilationStarted` (function, class, module,
//!   assembly): the app's own copy and the one in a collectible AssemblyLoadContext. When
//!   `AfterUnload` compiles, after that context was unloaded and collected, each kept ID is asked
//!   about (the collectible copy's reached freed memory: exit 139), so is `AfterUnload`'s own
//!   (lent to its callback) here and on a thread of the profiler's own after it was asked here.
//! - `inliners`: in `JITCompilationFinished` of the first method compiled, RequestReJITWithInliners
//!   for a method of precompiled (ReadyToRun) code, CoreLib's `System.Convert::ToBase64String`
//!   (CoreCLR 3.1.23 crashed: its R2R inlining lookups, fixed in .NET 7 and 8).
#![forbid(unsafe_code)]

use corprof::eventpipe::{Provider, ProviderConfig, Session};
use corprof::hooks::{self, HookFrame};
use corprof::metadata::MetaDataImport;
use corprof::sync::lock;
use corprof::types::{
    AssemblyID, COR_PRF_MODULE_FLAGS, COR_PRF_MONITOR, COR_PRF_REJIT_FLAGS, ClassID, CorOpenFlags, FunctionID, ModuleID,
};
use corprof::{CorProfilerCallback, FunctionHooks, HResult, HookMode, IUnknown, LiveObject, ProfilerInfo, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

pub const CLSID: corprof::GUID = corprof::GUID::parse("3D5C7E91-2A4B-4C6D-8E0F-1A2B3C4D5E6F");

fn say(line: impl AsRef<str>) {
    eprintln!("DOORS {}", line.as_ref());
}

fn shown<T: std::fmt::Debug>(r: Result<T>) -> String {
    match r {
        Ok(v) => format!("Ok {v:?}"),
        Err(e) => format!("Err {}", e.name().map_or_else(|| format!("{:#010x}", e.0 as u32), str::to_string)),
    }
}

/// The IDs of one `Plugin.Work`, kept from its `JITCompilationStarted`.
#[derive(Clone, Copy, Debug)]
struct Kept {
    function: FunctionID,
    class: ClassID,
    module: ModuleID,
    assembly: AssemblyID,
}

#[derive(Default)]
pub struct Doors {
    /// `unloaded` mode: `Plugin.Work` of the app's copy and of the collectible copy.
    kept: Mutex<(Option<Kept>, Option<Kept>)>,
    info: OnceLock<ProfilerInfo>,
    hook_calls: AtomicUsize,
    module_done: AtomicUsize,
    /// `lent` mode: 0 before the first allocation, 1 while it runs, 2 after, 3 once the next
    /// allocation was asked about.
    lent_stage: AtomicUsize,
}

/// Sessions the provider callback started, kept (a `Session` is a handle; the runtime stops them
/// at exit).
static SESSIONS: Mutex<Vec<Session>> = Mutex::new(Vec::new());
static STARTS: AtomicUsize = AtomicUsize::new(0);

impl Doors {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(HResult::E_UNEXPECTED)
    }

    fn provider(&self, info: &ProfilerInfo) {
        let inner = info.clone();
        // The attack's closure: a session naming its own provider at every enable.
        let created = Provider::create_with_callback(info, "Doors-Reenter", move |e| {
            if !e.enabled {
                return;
            }
            let n = STARTS.fetch_add(1, Ordering::Relaxed);
            let started = Session::start(&inner, &[ProviderConfig::new("Doors-Reenter")], false);
            say(format!("callback {n} start session {}", shown(started.as_ref().map(|_| ()).map_err(|e| *e))));
            if let Ok(s) = started {
                lock(&SESSIONS).push(s);
            }
        });
        say(format!("create provider {}", shown(created.as_ref().map(|_| ()).map_err(|e| *e))));
        let started = Session::start(info, &[ProviderConfig::new("Doors-Reenter")], false);
        say(format!("start session {}", shown(started.as_ref().map(|_| ()).map_err(|e| *e))));
        if let Ok(s) = started {
            lock(&SESSIONS).push(s);
        }
        say(format!("callbacks ran {}", STARTS.load(Ordering::Relaxed)));
    }

    fn module(&self, info: &ProfilerInfo, module: ModuleID) -> Result<()> {
        let import = info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)?;
        let mut types = import.enum_type_defs()?;
        let total = types.total()?;
        let first = types.next().ok_or(HResult::E_FAIL)?;
        let _second = types.next();
        let remaining = types.remaining()?;
        types.reset(0)?;
        let again = types.next();
        say(format!("typedefs total>2 {} read {} first again {}", total > 2, total - remaining, again == Some(first)));
        // Types nothing has loaded yet (the module has just loaded): the loader's own work, not a
        // lookup in the module's map.
        let all: Vec<_> = types.collect();
        let (Some(&last), Some(&before_last)) = (all.last(), all.iter().rev().nth(1)) else {
            return Err(HResult::E_FAIL);
        };
        let own = info.clone();
        let thread = std::thread::spawn(move || {
            say(format!(
                "own thread get_class_from_token {}",
                shown(own.get_class_from_token(module, last).map(|_| ()))
            ));
            say(format!("own thread initialize_current_thread {}", shown(own.initialize_current_thread())));
            say(format!(
                "own thread after initialize get_class_from_token {}",
                shown(own.get_class_from_token(module, last).map(|_| ()))
            ));
            say(format!(
                "own thread get_class_from_token_and_type_args {}",
                shown(own.get_class_from_token_and_type_args(module, before_last, &[]).map(|_| ()))
            ));
        });
        let _ = thread.join();
        say(format!(
            "callback thread get_class_from_token {}",
            shown(info.get_class_from_token(module, last).map(|_| ()))
        ));
        Ok(())
    }
}

impl CorProfilerCallback for Doors {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        let info = self.info.get_or_init(|| info);
        match std::env::var("DOORS_MODE").as_deref() {
            Ok("hook") => {
                info.set_event_mask(COR_PRF_MONITOR::COR_PRF_MONITOR_NONE)?;
                hooks::install(self, info, HookMode::Fast)
            }
            Ok("thread") => info.set_event_mask(COR_PRF_MONITOR::MODULE_LOADS),
            Ok("provider") => {
                self.provider(info);
                Ok(())
            }
            Ok("lent") => info
                .set_event_mask(COR_PRF_MONITOR::COR_PRF_ENABLE_OBJECT_ALLOCATED | COR_PRF_MONITOR::OBJECT_ALLOCATED),
            Ok("unloaded") => info.set_event_mask(COR_PRF_MONITOR::JIT_COMPILATION),
            Ok("inliners") => info.set_event_mask(COR_PRF_MONITOR::JIT_COMPILATION | COR_PRF_MONITOR::ENABLE_REJIT),
            _ => Err(HResult::E_INVALIDARG),
        }
    }

    fn jit_compilation_finished(&self, function: FunctionID, _status: HResult, _safe: bool) -> Result<()> {
        if std::env::var("DOORS_MODE").as_deref() != Ok("inliners")
            || self.module_done.fetch_add(1, Ordering::Relaxed) > 0
        {
            return Ok(());
        }
        // The first method compiled after start-up: ReJIT with its inliners a method of
        // precompiled code (CoreLib's System.Convert::ToBase64String(byte[])).
        let info = self.info()?;
        let _ = function;
        let result = (|| -> Result<()> {
            let corelib = info
                .enum_modules()?
                .find(|m| info.get_module_info(*m).is_ok_and(|i| i.name.ends_with("System.Private.CoreLib.dll")))
                .ok_or(HResult::E_FAIL)?;
            let import = info.get_module_metadata::<MetaDataImport>(corelib, CorOpenFlags::ofRead)?;
            let convert = import.find_type_def_by_name("System.Convert", 0)?;
            let method =
                import.enum_methods_with_name(convert, Some("ToBase64String"))?.next().ok_or(HResult::E_FAIL)?;
            info.request_rejit_with_inliners(COR_PRF_REJIT_FLAGS::COR_PRF_REJIT_BLOCK_INLINING, &[corelib], &[method])
        })();
        say(format!("inliners precompiled {}", shown(result)));
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _is_safe_to_block: bool) -> Result<()> {
        let info = self.info()?;
        let name = corprof::sig::function_name(info, function)?;
        if name.contains(" Unload.Plugin::Work(") {
            let f = info.get_function_info(function)?;
            let m = info.get_module_info2(f.module_id)?;
            let kept = Kept { function, class: f.class_id, module: f.module_id, assembly: m.assembly_id };
            let mut both = lock(&self.kept);
            if m.module_flags.contains(COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_COLLECTIBLE) {
                both.1 = Some(kept);
            } else {
                both.0 = Some(kept);
            }
        } else if name.contains(" Unload.Program::AfterUnload(") {
            let both = *lock(&self.kept);
            self.after_unload(info, function, both);
        }
        Ok(())
    }

    fn object_allocated(&self, object: LiveObject<'_>, _class: ClassID) -> Result<()> {
        self.lent(self.info()?, object);
        Ok(())
    }

    fn module_load_finished(&self, module_id: ModuleID, hr_status: HResult) -> Result<()> {
        if !hr_status.is_ok() {
            return Ok(());
        }
        let info = self.info()?;
        let is_app = info.get_module_info(module_id).is_ok_and(|m| m.name.ends_with("Workload.dll"));
        if is_app
            && self.module_done.fetch_add(1, Ordering::Relaxed) == 0
            && let Err(e) = self.module(info, module_id)
        {
            say(format!("module {}", shown::<()>(Err(e))));
        }
        Ok(())
    }
}

impl Doors {
    fn after_unload(&self, info: &ProfilerInfo, fresh: FunctionID, (kept, stale): (Option<Kept>, Option<Kept>)) {
        let (Some(kept), Some(stale)) = (kept, stale) else {
            say(format!("kept {kept:?} stale {stale:?}"));
            return;
        };
        for (what, ids) in [("stale", stale), ("kept", kept)] {
            say(format!("{what} module {}", shown(info.get_module_info(ids.module).map(|_| ()))));
            say(format!("{what} assembly {}", shown(info.get_assembly_info(ids.assembly).map(|_| ()))));
            say(format!("{what} class {}", shown(info.get_class_id_info(ids.class).map(|_| ()))));
            say(format!("{what} function {}", shown(info.get_function_info(ids.function).map(|_| ()))));
        }
        say(format!("lent function {}", shown(info.get_function_info(fresh).map(|_| ()))));
        let other = info.clone();
        let asked = std::thread::spawn(move || {
            say(format!("other thread lent function {}", shown(other.get_function_info(fresh).map(|_| ()))));
            say(format!("other thread stale function {}", shown(other.get_function_info(stale.function).map(|_| ()))));
            say(format!("other thread kept class {}", shown(other.get_class_id_info(kept.class).map(|_| ()))));
        });
        let _ = asked.join();
    }

    fn lent(&self, info: &ProfilerInfo, object: LiveObject<'_>) {
        let class = |when: &str| say(format!("lent {when} class {}", shown(object.class(info).map(|_| ()))));
        match self.lent_stage.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                class("before");
                say(format!("lent enum_modules {}", shown(info.enum_modules().map(|_| ()))));
                class("after");
                self.lent_stage.store(2, Ordering::Release);
            }
            Err(2) => {
                if self.lent_stage.compare_exchange(2, 3, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                    class("next callback");
                }
            }
            Err(_) => {}
        }
    }
}

impl FunctionHooks for Doors {
    type Data = FunctionID;

    fn map_function(&self, function: FunctionID) -> Option<FunctionID> {
        Some(function)
    }

    fn enter(&self, function: FunctionID, _frame: &HookFrame<'_>) {
        let n = self.hook_calls.fetch_add(1, Ordering::Relaxed);
        if n < 3 {
            let Ok(info) = self.info() else { return };
            say(format!("hook {n} force_gc {}", shown(info.force_gc())));
            say(format!("hook {n} get_function_info {}", shown(info.get_function_info(function).map(|_| ()))));
        }
    }
}

corprof::export_profiler!(Doors, CLSID);
