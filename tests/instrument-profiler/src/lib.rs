//! A test profiler for `tests/runtime/instrument.rs`: wraps the methods of the Instrument app
//! with handlers through `corprof::instrument`, with no `unsafe`, and writes what the handlers
//! saw to the file in `CORPROF_INSTRUMENT_OUT` at shutdown: the instrumentation's events, then
//! one line per wrapped method, `<name> calls=<n> ends=<n> threw=<n> unpaired=<n> last=<outcome>`.

#![forbid(unsafe_code)]

use corprof::instrument::{Call, CallValue, Handler, Instrumentation, ManagedHandler, Method, Outcome, Target};
use corprof::sync::lock;
use corprof::types::{COR_PRF_MONITOR, ModuleID};
use corprof::{CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

pub const CLSID: corprof::GUID = corprof::GUID::parse("3B8E1F52-6C0A-4D97-B2E4-8F1A7C5D9E03");

#[derive(Default)]
struct Seen {
    calls: u64,
    ends: u64,
    threw: u64,
    unpaired: u64,
    last: Option<Outcome>,
    /// The arguments of the first call.
    first: Option<Vec<CallValue>>,
}

/// Counts per method; `begin` hands out a sequence number that `end` must get back, checked
/// through a per-thread stack (calls nest, recursion included).
#[derive(Default)]
struct Recorder {
    seen: Mutex<BTreeMap<String, Seen>>,
    next: std::sync::atomic::AtomicU64,
}

thread_local! {
    static OPEN: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl Handler for &'static Recorder {
    fn wants_arguments(&self) -> bool {
        true
    }
    fn begin(&self, call: &Call<'_>) -> u64 {
        let state = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let mut seen = self.seen.lock().unwrap();
        let s = seen.entry(call.method().name().to_owned()).or_default();
        s.calls += 1;
        s.first.get_or_insert_with(|| call.arguments().to_vec());
        drop(seen);
        OPEN.with(|o| o.borrow_mut().push(state));
        state
    }
    fn end(&self, method: &Method, state: u64, outcome: Outcome) {
        let paired = OPEN.with(|o| o.borrow_mut().pop()) == Some(state);
        let mut seen = self.seen.lock().unwrap();
        let s = seen.entry(method.name().to_owned()).or_default();
        s.ends += 1;
        s.threw += u64::from(outcome == Outcome::Threw);
        s.unpaired += u64::from(!paired);
        s.last = Some(outcome);
    }
}

/// Ends the InstrumentAsync app's task-returning methods when their tasks complete: per method,
/// the calls, the ends, those that threw, the ends whose state was not one `begin` handed out
/// for that method (or came twice), and the last outcome.
#[derive(Default)]
struct TaskRecorder {
    seen: Mutex<BTreeMap<String, Seen>>,
    /// The states handed out and not ended yet, with their method's name and the thread that
    /// began the call.
    open: Mutex<BTreeMap<u64, (String, std::thread::ThreadId)>>,
    /// The methods with a call that ended on another thread than the one that began it.
    elsewhere: Mutex<std::collections::BTreeSet<String>>,
    /// Told at each end: shutdown waits for the ends still running on other threads.
    ended: std::sync::Condvar,
    next: std::sync::atomic::AtomicU64,
}

impl TaskRecorder {
    /// Waits until every call begun has ended (a task completed on another thread may still be
    /// in its `end` when the app returns from Main), for at most `limit`.
    fn drain(&self, limit: std::time::Duration) {
        let open = self.open.lock().unwrap();
        let _ = self.ended.wait_timeout_while(open, limit, |open| !open.is_empty());
    }
}

impl Handler for &'static TaskRecorder {
    fn ends_when_task_completes(&self) -> bool {
        true
    }
    fn begin(&self, call: &Call<'_>) -> u64 {
        let state = self.next.fetch_add(1, Ordering::Relaxed) + 1000;
        let name = call.method().name().to_owned();
        self.open.lock().unwrap().insert(state, (name.clone(), std::thread::current().id()));
        self.seen.lock().unwrap().entry(name).or_default().calls += 1;
        state
    }
    fn end(&self, method: &Method, state: u64, outcome: Outcome) {
        let mut open = self.open.lock().unwrap();
        let begun = open.remove(&state);
        let paired = begun.as_ref().is_some_and(|(n, _)| n == method.name());
        if begun.is_some_and(|(_, thread)| thread != std::thread::current().id()) {
            self.elsewhere.lock().unwrap().insert(method.name().to_owned());
        }
        let mut seen = self.seen.lock().unwrap();
        let s = seen.entry(method.name().to_owned()).or_default();
        s.ends += 1;
        s.threw += u64::from(outcome == Outcome::Threw);
        s.unpaired += u64::from(!paired);
        s.last = Some(outcome);
        drop((seen, open));
        self.ended.notify_all();
    }
}

fn task_recorder() -> &'static TaskRecorder {
    static RECORDER: OnceLock<TaskRecorder> = OnceLock::new();
    RECORDER.get_or_init(TaskRecorder::default)
}

/// Does nothing: what the wrapping itself costs.
struct Empty;

impl Handler for Empty {}

/// Counts begins and ends with atomics only, and says it never blocks: called without the GC
/// transition where the runtime can (.NET 5+).
#[derive(Default)]
struct NeverBlocking {
    begins: std::sync::atomic::AtomicU64,
    ends: std::sync::atomic::AtomicU64,
    /// Calls of methods whose entry points are called without the GC transition.
    fast: std::sync::atomic::AtomicU64,
}

impl Handler for &'static NeverBlocking {
    fn may_block(&self) -> bool {
        false
    }
    fn begin(&self, call: &Call<'_>) -> u64 {
        self.begins.fetch_add(1, Ordering::Relaxed);
        self.fast.fetch_add(u64::from(call.method().without_gc_transition()), Ordering::Relaxed);
        7
    }
    fn end(&self, _: &Method, state: u64, _: Outcome) {
        if state == 7 {
            self.ends.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn never_blocking() -> &'static NeverBlocking {
    static COUNTS: OnceLock<NeverBlocking> = OnceLock::new();
    COUNTS.get_or_init(NeverBlocking::default)
}

/// Does nothing, and says it never blocks.
struct EmptyNeverBlocking;

impl Handler for EmptyNeverBlocking {
    fn may_block(&self) -> bool {
        false
    }
}

/// Takes the arguments, and does nothing with them.
struct EmptyTakingArguments;

impl Handler for EmptyTakingArguments {
    fn wants_arguments(&self) -> bool {
        true
    }
}

/// The instrumentation, for [`Reverter`].
static STARTED: OnceLock<&'static Instrumentation> = OnceLock::new();

/// Takes the whole wrapping back when its method is called, and tells the app once the reverts
/// are requested (`INSTRUMENT_REVERTED`).
struct Reverter;

impl Handler for Reverter {
    fn begin(&self, _: &Call<'_>) -> u64 {
        if let Some(started) = STARTED.get() {
            started.revert();
            if let Some(marker) = std::env::var_os("INSTRUMENT_REVERTED") {
                tell_when_requested(started, marker.into(), false);
            }
        }
        0
    }
}

/// Panics in `begin`: reported once, then never called again; the app runs on.
struct Panicky;

impl Handler for Panicky {
    fn begin(&self, _: &Call<'_>) -> u64 {
        panic!("a handler that panics");
    }
}

/// Panics in `end`, after `begin` ran, with a payload whose `Drop` panics again: the call's
/// result still reaches the app, and the second panic goes no further than the first.
struct PanickyEnd;

/// A panic payload that panics when dropped.
struct DropBomb;

impl Drop for DropBomb {
    fn drop(&mut self) {
        panic!("DropBomb: the payload panicked while being dropped");
    }
}

impl Handler for PanickyEnd {
    fn end(&self, _: &Method, _: u64, _: Outcome) {
        std::panic::panic_any(DropBomb);
    }
}

static INFO: OnceLock<ProfilerInfo> = OnceLock::new();
/// Set when the app's own module has loaded.
static APP_LOADED: AtomicBool = AtomicBool::new(false);

#[derive(Default)]
pub struct Profiler {
    wrapping: OnceLock<&'static Instrumentation>,
}

fn recorder() -> &'static Recorder {
    static RECORDER: OnceLock<Recorder> = OnceLock::new();
    RECORDER.get_or_init(Recorder::default)
}

impl Profiler {
    /// The instrumentation of the Waiter app, attached to while it runs (tests/runtime/attach.rs):
    /// its methods were compiled and ran before, so they are wrapped through ReJIT.
    ///
    /// With `INSTRUMENT_HANDLERS` (and `INSTRUMENT_INVOKER`) in the attach data, the handlers in
    /// C# of that assembly instead: `Handlers.Recorder` around `Allocate` and `Box<T>.Of`, and
    /// `Work` around a handler type the assembly lacks; and [`TaskRecorder`] around `Twice`; `INSTRUMENT_STARTED` is created once
    /// the startup ran (at the first call of one of them) and every ReJIT is requested.
    /// `INSTRUMENT_WAIT_ONLY`: `Handlers.Recorder` around the app's `WaitFor` alone (called
    /// before each phase, so a run of one phase attached to before it calls it no more).
    fn attached(&self, info: &ProfilerInfo, settings: &[(String, String)]) -> Result<()> {
        let setting = |key: &str| settings.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let mut wrapping = Instrumentation::new();
        let handlers = setting("INSTRUMENT_HANDLERS");
        if let Some(handlers) = &handlers {
            wrapping.managed_invoker(setting("INSTRUMENT_INVOKER").unwrap_or_default()).map_err(|_| HResult::E_FAIL)?;
            let targets: &[(&str, &str, &str)] = if setting("INSTRUMENT_WAIT_ONLY").is_some() {
                &[("WaiterApp.Program", "WaitFor", "Handlers.Recorder")]
            } else {
                &[
                    ("WaiterApp.Program", "Work", "Handlers.Nowhere"),
                    ("WaiterApp.Program", "Allocate", "Handlers.Recorder"),
                    ("WaiterApp.Box`1", "Of", "Handlers.Recorder"),
                ]
            };
            for (ty, method, handler) in targets {
                wrapping
                    .wrap_managed(Target::method(ty, method), ManagedHandler::new(handlers, handler))
                    .map_err(|_| HResult::E_FAIL)?;
            }
            if setting("INSTRUMENT_WAIT_ONLY").is_none() {
                wrapping
                    .wrap(Target::method("WaiterApp.Program", "Twice"), task_recorder())
                    .map_err(|_| HResult::E_FAIL)?;
            }
        } else {
            for (ty, method) in
                [("WaiterApp.Program", "Work"), ("WaiterApp.Program", "Allocate"), ("WaiterApp.Box`1", "Of")]
            {
                wrapping.wrap(Target::method(ty, method), recorder()).map_err(|_| HResult::E_FAIL)?;
            }
        }
        let started = wrapping.start(info).map_err(|_| HResult::E_FAIL)?;
        let _ = self.wrapping.set(started);
        for (key, value) in settings {
            match key.as_str() {
                "CORPROF_INSTRUMENT_OUT" => {
                    let _ = OUT.set(value.into());
                }
                // Managed handlers: once the startup code is requested before the methods'
                // own (each method's first ReJIT).
                "INSTRUMENT_READY" if handlers.is_some() => {
                    let ready: std::path::PathBuf = value.into();
                    std::thread::spawn(move || {
                        while started.pending_rejit_requests() > started.waiting_for_managed_startup() {
                            std::thread::sleep(std::time::Duration::from_millis(2));
                        }
                        let _ = std::fs::write(ready, "");
                    });
                }
                "INSTRUMENT_READY" => tell_when_requested(started, value.into(), false),
                "INSTRUMENT_REVERT_AT_SHUTDOWN" => REVERT_AT_SHUTDOWN.store(true, Ordering::Release),
                "INSTRUMENT_STARTED" => {
                    let ready: std::path::PathBuf = value.into();
                    std::thread::spawn(move || {
                        while !started.managed_startup_ran() || started.pending_rejit_requests() > 0 {
                            std::thread::sleep(std::time::Duration::from_millis(2));
                        }
                        let _ = std::fs::write(ready, "");
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Profiler {
    /// The InstrumentAsync app's methods (`InstrumentAsyncApp.Work::_`), wrapped with
    /// [`TaskRecorder`]; corprof's own assembly is at `INSTRUMENT_INVOKER`, when set (without
    /// it, the task-returning methods are refused).
    fn tasks(&self, info: &ProfilerInfo, mut wrapping: Instrumentation) -> Result<()> {
        let invoker = std::env::var_os("INSTRUMENT_INVOKER");
        if let Some(invoker) = &invoker {
            wrapping.managed_invoker(invoker).map_err(|_| HResult::E_FAIL)?;
        }
        wrapping.wrap(Target::method("InstrumentAsyncApp.Work", "_"), task_recorder()).map_err(|_| HResult::E_FAIL)?;
        let started = wrapping.start(info).map_err(|_| HResult::E_FAIL)?;
        let _ = self.wrapping.set(started);
        if let Some(out) = std::env::var_os("CORPROF_INSTRUMENT_OUT") {
            let _ = OUT.set(out.into());
        }
        if let Some(ready) = std::env::var_os("INSTRUMENT_READY") {
            let ready: std::path::PathBuf = ready.into();
            let startup = invoker.is_some();
            std::thread::spawn(move || {
                while (startup && !started.managed_startup_ran()) || started.pending_rejit_requests() > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                let _ = std::fs::write(ready, "");
            });
        }
        Ok(())
    }

    /// The InstrumentManaged app's methods, wrapped with the handlers in C# of the assembly at
    /// `handlers` (tests/apps/InstrumentManaged/handlers); corprof's own assembly is at
    /// `INSTRUMENT_INVOKER`. What `wrap_managed` refuses is written to the output as `error: …`.
    /// `INSTRUMENT_ONLY=<Type>` wraps that type's methods alone (to find which one a runtime
    /// does not take).
    fn managed(&self, info: &ProfilerInfo, wrapping: &mut Instrumentation, handlers: std::path::PathBuf) -> Result<()> {
        let mut errors = String::new();
        if let Err(e) = wrapping.managed_invoker(std::env::var_os("INSTRUMENT_INVOKER").unwrap_or_default()) {
            errors += &format!("error: {e}\n");
        }
        let app = "InstrumentManagedApp";
        for (ty, method, handler) in [
            ("Target", "_", "Handlers.Recorder"),
            ("Point", "Sum", "Handlers.Recorder"),
            ("Box`1", "Get", "Handlers.Recorder"),
            ("Faulty", "Add", "Handlers.Throwing"),
            ("Partial", "Twice", "Handlers.BeginOnly"),
            ("Changed", "Answer", "Handlers.Replacer"),
            ("Gone", "Run", "Handlers.Nowhere"),
            ("Async", "_", "Handlers.AsyncRecorder"),
            ("AsyncFaulty", "Now", "Handlers.AsyncThrowing"),
            ("AsyncValue", "_", "Handlers.AsyncRecorder"),
        ]
        .into_iter()
        .filter(|(ty, ..)| std::env::var("INSTRUMENT_ONLY").map_or(true, |only| only == *ty))
        {
            let target = Target::method(&format!("{app}.{ty}"), method);
            if let Err(e) = wrapping.wrap_managed(target, ManagedHandler::new(&handlers, handler)) {
                errors += &format!("error: {e}\n");
            }
        }
        // A precompiled method of CoreLib, wrapped through ReJIT.
        if std::env::var("INSTRUMENT_ONLY").map_or(true, |only| only == "Convert") {
            let target = Target::method("System.Convert", "ToBase64String");
            if let Err(e) = wrapping.wrap_managed(target, ManagedHandler::new(&handlers, "Handlers.Recorder")) {
                errors += &format!("error: {e}\n");
            }
        }
        // Refused at once, the app unharmed: an assembly that is not there, a folder, a type
        // name that cannot be one.
        for (path, handler) in [
            (handlers.with_file_name("Missing.dll"), "Handlers.Recorder"),
            (handlers.parent().map(|p| p.to_owned()).unwrap_or_default(), "Handlers.Recorder"),
            (handlers.clone(), "Handlers.Recorder, Other"),
        ] {
            let target = Target::method(&format!("{app}.Target"), "Add");
            if let Err(e) = wrapping.wrap_managed(target, ManagedHandler::new(path, handler)) {
                errors += &format!("error: {e}\n");
            }
        }
        let _ = ERRORS.set(errors);
        let started = std::mem::take(wrapping).start(info).map_err(|_| HResult::E_FAIL)?;
        let _ = self.wrapping.set(started);
        if let Some(out) = std::env::var_os("CORPROF_INSTRUMENT_OUT") {
            let _ = OUT.set(out.into());
        }
        if let Some(ready) = std::env::var_os("INSTRUMENT_READY") {
            let ready: std::path::PathBuf = ready.into();
            std::thread::spawn(move || {
                while !started.managed_startup_ran() || started.pending_rejit_requests() > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                let _ = std::fs::write(ready, "");
            });
        }
        Ok(())
    }
}

/// How many times a module named `InstrumentHostile.dll` has loaded (INSTRUMENT_HOSTILE).
static HOSTILE_LOADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Profiler {
    /// INSTRUMENT_HOSTILE: at the second load of the InstrumentHostile app's module (its copy in
    /// a collectible context), wrap every method of `InstrumentHostile.Hostile` in both copies,
    /// through ReJIT, and write INSTRUMENT_READY once the requests are made.
    fn hostile(&self, module: ModuleID) -> Result<()> {
        let Some(info) = INFO.get() else { return Ok(()) };
        if !info.get_module_info(module).is_ok_and(|m| m.name.ends_with("InstrumentHostile.dll")) {
            return Ok(());
        }
        if HOSTILE_LOADS.fetch_add(1, Ordering::AcqRel) != 1 {
            return Ok(());
        }
        let mut wrapping = Instrumentation::new();
        wrapping.wrap(Target::method("InstrumentHostile.Hostile", "_"), recorder()).map_err(|_| HResult::E_FAIL)?;
        let started = wrapping.start(info).map_err(|_| HResult::E_FAIL)?;
        let _ = self.wrapping.set(started);
        if let Some(out) = std::env::var_os("CORPROF_INSTRUMENT_OUT") {
            let _ = OUT.set(out.into());
        }
        if let Some(ready) = std::env::var_os("INSTRUMENT_READY") {
            tell_when_requested(started, ready.into(), false);
        }
        Ok(())
    }
}

/// What `wrap_managed` refused, for the output.
static ERRORS: OnceLock<String> = OnceLock::new();

/// Creates `ready` once the ReJITs are requested (and, `after_app`, the app's own module has
/// loaded, so the framework's were seen before): the app waits for it.
fn tell_when_requested(started: &'static Instrumentation, ready: std::path::PathBuf, after_app: bool) {
    std::thread::spawn(move || {
        while (after_app && !APP_LOADED.load(Ordering::Acquire)) || started.pending_rejit_requests() > 0 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let _ = std::fs::write(ready, "");
    });
}

/// `INSTRUMENT_REVERT_AT_SHUTDOWN` in the attach data.
static REVERT_AT_SHUTDOWN: AtomicBool = AtomicBool::new(false);

/// Where to write at shutdown: `CORPROF_INSTRUMENT_OUT`, or the attach data's.
static OUT: OnceLock<std::path::PathBuf> = OnceLock::new();

/// The ReJIT failures the runtime reported to the profiler (after corprof saw them first).
static REJIT_ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());

impl CorProfilerCallback for Profiler {
    fn rejit_error(
        &self,
        _module: ModuleID,
        _method: corprof::types::mdMethodDef,
        _function: corprof::types::FunctionID,
        status: HResult,
    ) -> Result<()> {
        lock(&REJIT_ERRORS).push(status.describe());
        Ok(())
    }

    fn initialize_for_attach(&self, unknown: &IUnknown, client_data: &[u8]) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::NONE)?;
        // `KEY=VALUE` lines.
        let settings: Vec<(String, String)> = String::from_utf8_lossy(client_data)
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();
        self.attached(&info, &settings)
    }

    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::MODULE_LOADS)?;
        let _ = INFO.set(info.clone());
        if std::env::var_os("INSTRUMENT_LATE").is_some() || std::env::var_os("INSTRUMENT_HOSTILE").is_some() {
            // Started late: see module_load_finished.
            if let Some(out) = std::env::var_os("CORPROF_INSTRUMENT_OUT") {
                let _ = OUT.set(out.into());
            }
            return Ok(());
        }
        let mut wrapping = Instrumentation::new();
        if let Some(handlers) = std::env::var_os("INSTRUMENT_HANDLERS") {
            return self.managed(&info, &mut wrapping, handlers.into());
        }
        if std::env::var_os("INSTRUMENT_TASKS").is_some() {
            return self.tasks(&info, wrapping);
        }
        if let Some(bench) = std::env::var_os("CORPROF_INSTRUMENT_BENCH") {
            // scripts/bench-instrument: one small method, empty handlers (`args`: taking its
            // arguments).
            let target = Target::method("InstrumentBench.Program", "Small");
            let wrapped = match bench.to_str() {
                // Start-up with no definitions at all.
                Some("startup-none") => {
                    let _ = self.wrapping.set(wrapping.start(&info).map_err(|_| HResult::E_FAIL)?);
                    return Ok(());
                }
                Some("args") => wrapping.wrap(target, EmptyTakingArguments),
                Some("fast") => wrapping.wrap(target, EmptyNeverBlocking),
                // Start-up: the fifty methods of InstrumentBench.Many, one of them, or nothing.
                Some("startup-50") => wrapping.wrap(Target::method("InstrumentBench.Many", "M*"), Empty),
                Some("startup-1") => wrapping.wrap(Target::method("InstrumentBench.Many", "M0"), Empty),
                Some("startup-nothing") => wrapping.wrap(Target::method("Nowhere.Type", "M"), Empty),
                _ => wrapping.wrap(target, Empty),
            };
            wrapped.map_err(|_| HResult::E_FAIL)?;
            let _ = self.wrapping.set(wrapping.start(&info).map_err(|_| HResult::E_FAIL)?);
            return Ok(());
        }
        let targets = [
            Target::method("InstrumentApp.Target", "_"),
            Target::method("InstrumentApp.Target+Inner", "_"),
            Target::method("InstrumentApp.Point", "_"),
            Target::method("InstrumentApp.Box`1", "Get").in_assembly("Instrument"),
            // Names nothing: said at the end.
            Target::method("InstrumentApp.Nowhere", "Nothing"),
            // Already wrapped by the first target: wrapped once.
            Target::method("InstrumentApp.Target", "Add"),
            Target::parse("InstrumentApp.Pat*::Get*").map_err(|_| HResult::E_FAIL)?,
            // Precompiled framework code: wrapped through ReJIT.
            Target::method("System.Convert", "ToBase64String").in_assembly("System.Private.CoreLib"),
        ];
        for target in targets {
            wrapping.wrap(target, recorder()).map_err(|_| HResult::E_FAIL)?;
        }
        wrapping.wrap(Target::method("InstrumentApp.Program", "Main"), Panicky).map_err(|_| HResult::E_FAIL)?;
        wrapping.wrap(Target::method("InstrumentApp.Box`1", ".ctor"), PanickyEnd).map_err(|_| HResult::E_FAIL)?;
        wrapping.wrap(Target::method("InstrumentApp.Program", "RevertNow"), Reverter).map_err(|_| HResult::E_FAIL)?;
        // Without the GC transition on 8.0.4: in the app's module (a TypeRef through a new
        // AssemblyRef) and in CoreLib (the TypeDef), after the ReJIT marker.
        for target in [
            Target::method("InstrumentApp.Patterns", "Other"),
            Target::method("System.BitConverter", "ToString").in_assembly("System.Private.CoreLib"),
        ] {
            wrapping.wrap(target, never_blocking()).map_err(|_| HResult::E_FAIL)?;
        }
        let started = wrapping.start(&info).map_err(|_| HResult::E_FAIL)?;
        // One per process: a second is refused.
        if Instrumentation::new().start(&info).is_ok() {
            return Err(HResult::E_UNEXPECTED);
        }
        let _ = self.wrapping.set(started);
        let _ = STARTED.set(started);
        if let Some(ready) = std::env::var_os("INSTRUMENT_READY") {
            tell_when_requested(started, ready.into(), true);
        }
        if let Some(out) = std::env::var_os("CORPROF_INSTRUMENT_OUT") {
            let _ = OUT.set(out.into());
        }
        Ok(())
    }

    fn module_load_finished(&self, module: ModuleID, _status: HResult) -> Result<()> {
        if std::env::var_os("INSTRUMENT_HOSTILE").is_some() {
            return self.hostile(module);
        }
        if INFO.get().is_some_and(|i| i.get_module_info(module).is_ok_and(|m| m.name.ends_with("Instrument.dll"))) {
            APP_LOADED.store(true, Ordering::Release);
            if std::env::var_os("INSTRUMENT_LATE").is_some()
                && let Some(info) = INFO.get()
            {
                // `start` from a callback after Initialize: what was loaded before (the app's
                // module, precompiled CoreLib) goes through ReJIT, which the runtime still enables.
                let mut wrapping = Instrumentation::new();
                wrapping
                    .wrap(Target::method("InstrumentApp.Target", "Add"), recorder())
                    .map_err(|_| HResult::E_FAIL)?;
                let target = Target::method("System.Convert", "ToBase64String").in_assembly("System.Private.CoreLib");
                wrapping.wrap(target, recorder()).map_err(|_| HResult::E_FAIL)?;
                let started = wrapping.start(info).map_err(|_| HResult::E_FAIL)?;
                let _ = self.wrapping.set(started);
            }
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let Some(path) = OUT.get() else { return Ok(()) };
        let mut text = ERRORS.get().cloned().unwrap_or_default();
        if let (Some(wrapping), true) = (
            self.wrapping.get(),
            std::env::var_os("INSTRUMENT_REVERT_AT_SHUTDOWN").is_some() || REVERT_AT_SHUTDOWN.load(Ordering::Acquire),
        ) {
            // Taken back while the runtime shuts down: the worker's RequestRevert meets a runtime
            // that is ending. Waited for a bounded time: the app's exit must not hang on it.
            wrapping.revert();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while wrapping.pending_rejit_requests() > 0 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            text += &format!("pending after the revert at shutdown: {}\n", wrapping.pending_rejit_requests());
        }
        if let Some(wrapping) = self.wrapping.get() {
            for decision in wrapping.decisions() {
                text += &format!("{decision}\n");
            }
            for target in wrapping.unmatched() {
                text += &format!("unmatched {target}\n");
            }
        }
        for status in lock(&REJIT_ERRORS).iter() {
            text += &format!("rejit error seen by the profiler: {status}\n");
        }
        let n = never_blocking();
        text += &format!(
            "never blocking: begins={} ends={} without the GC transition={}\n",
            n.begins.load(Ordering::Relaxed),
            n.ends.load(Ordering::Relaxed),
            n.fast.load(Ordering::Relaxed)
        );
        task_recorder().drain(std::time::Duration::from_secs(10));
        for name in task_recorder().elsewhere.lock().unwrap().iter() {
            text += &format!("ended on another thread: {name}\n");
        }
        let tasks = task_recorder().seen.lock().unwrap();
        for (name, s) in recorder().seen.lock().unwrap().iter().chain(tasks.iter()) {
            let last = s.last.map_or("-".to_owned(), |o| format!("{o:?}"));
            let first = s.first.as_ref().map_or("-".to_owned(), |a| format!("{a:?}"));
            text += &format!(
                "{name} calls={} ends={} threw={} unpaired={} last={last} first_args={first}\n",
                s.calls, s.ends, s.threw, s.unpaired
            );
        }
        std::fs::write(path, text).map_err(|_| HResult::E_FAIL)
    }
}

corprof::export_profiler!(Profiler, CLSID);
