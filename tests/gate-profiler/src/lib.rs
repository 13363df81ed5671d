//! gate-profiler: the test profiler of tests/runtime/gate.rs. Its threads hold clones of `ProfilerInfo`
//! and keep calling it after the runtime has let go of its Info object; with corprof's gate they
//! get `CORPROF_E_PROFILER_DETACHING`, without it they reach freed memory. What it does is set by
//! `GATEPROF_MODE`; it writes one line per event to `GATEPROF_LOG`, the moment each happens:
//!
//! - `fail-init`: `initialize` starts a thread and fails; once the runtime has released the
//!   profiler object (its `Drop`, which the runtime reaches only after the failed `Initialize`
//!   returned and corprof closed the gate), the thread calls
//!   `get_event_mask` and writes `late get_event_mask <result>`, asks a `ComPtr<ICorProfilerInfo>` of the
//!   same object for ICorProfilerInfo (`late query <result>`), drops every clone, then writes
//!   `late thread done`.
//! - `detach`: `initialize` starts a thread calling `get_event_mask` in a loop and another asking
//!   the runtime to detach (`RequestProfilerDetach <result>`) once the runtime has started: the
//!   runtime answers `CORPROF_E_RUNTIME_UNINITIALIZED` until then, so the thread asks after a
//!   module load (`COR_PRF_MONITOR_MODULE_LOADS`) and asks again after the next one while that is
//!   the answer (the app's own module loads after the runtime started); the callback writes
//!   `ProfilerDetachSucceeded`. The loop goes on, whatever each call answers, until 200 ms after
//!   that callback, then writes `loop <n> ok, <m> refused, last <result>`. No thread is joined:
//!   corprof's gate is what keeps them off the freed object.
//! - `shutdown`: the same loop, until 200 ms after `Shutdown`, which the callback writes. An exit handler waits
//!   (at most 10 s) for the loop's line, so the process does not end before it is written.
//!
//! - `bench`: measures the gate (scripts/bench-gate): `initialize` times `GATEPROF_BENCH_N`
//!   calls of `get_event_mask` three ways per round, for `GATEPROF_BENCH_ROUNDS` rounds, the order
//!   rotating from round to round: through the gated wrapper, through the raw interface (no gate,
//!   the same HRESULT check), and raw between a `fetch_add`/`fetch_sub` pair on one shared atomic
//!   (the simpler gate design); writes `round <r> gated <ns> ungated <ns> shared <ns>` (ns per
//!   call), then declines the process.
//!
//! `<result>` is `Ok` or the HRESULT's name and code.

use corprof::interfaces::ICorProfilerInfo;
use corprof::sync::lock;
use corprof::types::{COR_PRF_MONITOR, ModuleID};
use corprof::{CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub const CLSID: corprof::GUID = corprof::GUID::parse("5E0B7A42-1C3D-4F8E-9A6B-2D4C6E8F0A13");

/// Where the lines go (`GATEPROF_LOG`), read once.
fn log_path() -> Option<&'static PathBuf> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| std::env::var_os("GATEPROF_LOG").map(PathBuf::from)).as_ref()
}

/// Appends one line (one write, so lines from several threads do not mix).
fn log(line: &str) {
    let Some(path) = log_path() else {
        eprintln!("gate-profiler: {line} (GATEPROF_LOG is not set)");
        return;
    };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = written {
        eprintln!("gate-profiler: cannot write {line:?} to {}: {e}", path.display());
    }
}

fn show<T>(r: &Result<T>) -> String {
    match r {
        Ok(_) => "Ok".to_string(),
        Err(e) => format!("{e:?}"),
    }
}

/// Set once the loop thread has written its line (the shutdown mode's exit handler waits for it).
static LOOP_DONE: AtomicBool = AtomicBool::new(false);
/// Set by `profiler_detach_succeeded` and `shutdown`, after which the runtime frees its object.
static LET_GO: AtomicBool = AtomicBool::new(false);

/// Calls `get_event_mask` in a loop, failing or not, until 200 ms after the runtime's last
/// callback, then writes `loop <ok> ok, <refused> refused, last <result>`.
fn call_until_let_go(info: ProfilerInfo) {
    let (mut ok, mut refused) = (0u64, 0u64);
    let mut until: Option<Instant> = None;
    let last = loop {
        let result = info.get_event_mask();
        match &result {
            Ok(_) => ok += 1,
            Err(_) => refused += 1,
        }
        if until.is_none() && LET_GO.load(Ordering::SeqCst) {
            until = Some(Instant::now() + Duration::from_millis(200));
        }
        if until.is_some_and(|t| Instant::now() > t) {
            break result;
        }
    };
    log(&format!("loop {ok} ok, {refused} refused, last {}", show(&last)));
    // Dropped after the gate closed: leaked, not released on the freed object.
    drop(info);
    LOOP_DONE.store(true, Ordering::SeqCst);
}

/// Module loads so far (`module_load_finished`), for the detach mode's thread to wait on.
static MODULE_LOADS: Mutex<u64> = Mutex::new(0);
static MODULE_LOADED: Condvar = Condvar::new();

/// Asks the runtime to detach after a module load, and again after the next one for as long as it
/// answers `CORPROF_E_RUNTIME_UNINITIALIZED` (it refuses before its startup finished, which the
/// first loads, CoreLib's, precede). Waits for each load at most `WAIT`, a bound for a runtime that
/// stopped loading, never the time the request is made at.
fn detach_once_started(info: ProfilerInfo) {
    const WAIT: Duration = Duration::from_secs(30);
    let mut seen = 0u64;
    loop {
        let loads = lock(&MODULE_LOADS);
        let (loads, timeout) =
            MODULE_LOADED.wait_timeout_while(loads, WAIT, |n| *n == seen).unwrap_or_else(|p| p.into_inner());
        if timeout.timed_out() {
            log("RequestProfilerDetach: no module load to ask after");
            return;
        }
        seen = *loads;
        drop(loads);
        let result = info.request_profiler_detach(100);
        if matches!(result, Err(HResult::CORPROF_E_RUNTIME_UNINITIALIZED)) {
            continue;
        }
        log(&format!("RequestProfilerDetach {}", show(&result)));
        return;
    }
}

#[derive(Default)]
pub struct GateProfiler;

/// Set by the profiler object's `Drop`: the runtime released it, so its Info object is gone too.
static RELEASED: Mutex<bool> = Mutex::new(false);
static RELEASED_NOW: Condvar = Condvar::new();

impl Drop for GateProfiler {
    fn drop(&mut self) {
        *lock(&RELEASED) = true;
        RELEASED_NOW.notify_all();
    }
}

/// Waits for the runtime to release the profiler object, at most 30 s (a bound for a runtime
/// that never does, which the late call's line then shows).
fn wait_until_released() {
    let released = lock(&RELEASED);
    let (_released, timeout) =
        RELEASED_NOW.wait_timeout_while(released, Duration::from_secs(30), |r| !*r).unwrap_or_else(|p| p.into_inner());
    if timeout.timed_out() {
        log("late: the profiler object was never released");
    }
}

impl CorProfilerCallback for GateProfiler {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        let mode = std::env::var("GATEPROF_MODE").unwrap_or_default();
        log(&format!("Initialize {mode}"));
        match mode.as_str() {
            "fail-init" => {
                let late = info.clone();
                // A plain COM pointer to the same object: its query, clone and drop are safe too.
                let raw = unknown.query::<ICorProfilerInfo>()?;
                std::thread::spawn(move || {
                    wait_until_released();
                    log(&format!("late get_event_mask {}", show(&late.get_event_mask())));
                    log(&format!("late query {}", show(&raw.query::<ICorProfilerInfo>())));
                    drop((late, raw.clone(), raw));
                    log("late thread done");
                });
                Err(HResult::E_FAIL)
            }
            "detach" => {
                info.set_event_mask(COR_PRF_MONITOR::MODULE_LOADS)?;
                let looping = info.clone();
                std::thread::spawn(move || call_until_let_go(looping));
                std::thread::spawn(move || detach_once_started(info));
                Ok(())
            }
            "shutdown" => {
                std::thread::spawn(move || call_until_let_go(info));
                exit_waits_for_the_loop();
                Ok(())
            }
            "bench" => {
                bench(&info)?;
                corprof::set_quiet(true);
                Err(HResult::CORPROF_E_PROFILER_CANCEL_ACTIVATION)
            }
            _ => {
                log("unknown GATEPROF_MODE");
                Err(HResult::E_INVALIDARG)
            }
        }
    }

    fn shutdown(&self) -> Result<()> {
        log("Shutdown");
        LET_GO.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn module_load_finished(&self, _module: ModuleID, _status: HResult) -> Result<()> {
        *lock(&MODULE_LOADS) += 1;
        MODULE_LOADED.notify_all();
        Ok(())
    }

    fn profiler_detach_succeeded(&self) -> Result<()> {
        log("ProfilerDetachSucceeded");
        LET_GO.store(true, Ordering::SeqCst);
        Ok(())
    }
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `get_event_mask` through the raw interface with the wrapper's HRESULT check: the wrapper
/// without its gate. Not inlined, as the wrapper method is not.
#[inline(never)]
fn raw_event_mask(info: &ProfilerInfo) -> Result<u32> {
    use corprof::Interface;
    use corprof::interfaces::ICorProfilerInfo;
    let mut mask = 0u32;
    let raw = info.get::<ICorProfilerInfo>()?;
    // The slot itself, as the inlined wrapper calls it (the raw method is a call of its own here).
    let slot = raw.vtable().GetEventMask;
    // SAFETY: the Info object is alive (the bench runs inside `initialize`), `raw` is it as an
    // ICorProfilerInfo, and `mask` is a valid out.
    let hr = unsafe { slot(raw as *const ICorProfilerInfo as *mut ICorProfilerInfo, &mut mask) };
    HResult(hr).ok()?;
    Ok(mask)
}

/// The `bench` mode (module docs).
fn bench(info: &ProfilerInfo) -> Result<()> {
    use std::hint::black_box;
    use std::sync::atomic::AtomicUsize;
    static SHARED: AtomicUsize = AtomicUsize::new(0);

    let n = setting("GATEPROF_BENCH_N", 10_000_000);
    let rounds = setting("GATEPROF_BENCH_ROUNDS", 9);
    // One loop function per variant, so no variant's loop carries another's code.
    #[inline(never)]
    fn gated(info: &ProfilerInfo, n: u64) -> Result<()> {
        for _ in 0..n {
            black_box(info.get_event_mask()?);
        }
        Ok(())
    }
    #[inline(never)]
    fn ungated(info: &ProfilerInfo, n: u64) -> Result<()> {
        for _ in 0..n {
            black_box(raw_event_mask(info)?);
        }
        Ok(())
    }
    #[inline(never)]
    fn shared(info: &ProfilerInfo, n: u64) -> Result<()> {
        for _ in 0..n {
            SHARED.fetch_add(1, Ordering::SeqCst);
            let mask = raw_event_mask(info);
            SHARED.fetch_sub(1, Ordering::SeqCst);
            black_box(mask?);
        }
        Ok(())
    }
    let variants: [fn(&ProfilerInfo, u64) -> Result<()>; 3] = [gated, ungated, shared];
    let time = |which: usize| -> Result<f64> {
        let start = Instant::now();
        variants[which](info, n)?;
        Ok(start.elapsed().as_nanos() as f64 / n as f64)
    };
    for round in 0..rounds {
        let mut ns = [0f64; 3];
        for k in 0..3 {
            let which = (round as usize + k) % 3;
            ns[which] = time(which)?;
        }
        log(&format!("round {round} gated {:.3} ungated {:.3} shared {:.3}", ns[0], ns[1], ns[2]));
    }
    Ok(())
}

/// Registers a C exit handler (it runs after the runtime's shutdown, when `exit` is called) that
/// waits for the loop thread's line, at most 10 s.
fn exit_waits_for_the_loop() {
    extern "C" fn wait_for_loop() {
        let start = Instant::now();
        while !LOOP_DONE.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !LOOP_DONE.load(Ordering::SeqCst) {
            log("exit: the loop never stopped");
        }
    }
    unsafe extern "C" {
        fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
    }
    // SAFETY: `wait_for_loop` is a plain function of this library, which corprof pins in memory
    // (the handler runs after the runtime's shutdown); `atexit` only stores the pointer.
    unsafe { atexit(wait_for_loop) };
}

corprof::export_profiler!(GateProfiler, CLSID);
