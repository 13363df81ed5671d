//! gate-profiler: the test profiler of tests/gate.rs. Its threads hold clones of `ProfilerInfo`
//! and keep calling it after the runtime has let go of its Info object; with corprof's gate they
//! get `CORPROF_E_PROFILER_DETACHING`, without it they reach freed memory. What it does is set by
//! `GATEPROF_MODE`; it writes one line per event to `GATEPROF_LOG`, the moment each happens:
//!
//! - `fail-init`: `initialize` starts a thread and fails; 300 ms later the thread calls
//!   `get_event_mask` and writes `late get_event_mask <result>`, then `late thread done`.
//! - `detach`: `initialize` starts a thread calling `get_event_mask` in a loop and another asking
//!   the runtime to detach (`RequestProfilerDetach <result>`); the callback writes
//!   `ProfilerDetachSucceeded`. The loop goes on, whatever each call answers, until 200 ms after
//!   that callback, then writes `loop <n> ok, <m> refused, last <result>`. No thread is joined:
//!   corprof's gate is what keeps them off the freed object.
//! - `shutdown`: the same loop, until 200 ms after `Shutdown`, which the callback writes. An exit handler waits
//!   (at most 10 s) for the loop's line, so the process does not end before it is written.
//!
//! `<result>` is `Ok` or the HRESULT's name and code.

use corprof::{CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
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

#[derive(Default)]
pub struct GateProfiler;

impl CorProfilerCallback for GateProfiler {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        let mode = std::env::var("GATEPROF_MODE").unwrap_or_default();
        log(&format!("Initialize {mode}"));
        match mode.as_str() {
            "fail-init" => {
                let late = info.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(300));
                    log(&format!("late get_event_mask {}", show(&late.get_event_mask())));
                    drop(late);
                    log("late thread done");
                });
                Err(HResult::E_FAIL)
            }
            "detach" => {
                let looping = info.clone();
                std::thread::spawn(move || call_until_let_go(looping));
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(100));
                    log(&format!("RequestProfilerDetach {}", show(&info.request_profiler_detach(100))));
                });
                Ok(())
            }
            "shutdown" => {
                std::thread::spawn(move || call_until_let_go(info));
                exit_waits_for_the_loop();
                Ok(())
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

    fn profiler_detach_succeeded(&self) -> Result<()> {
        log("ProfilerDetachSucceeded");
        LET_GO.store(true, Ordering::SeqCst);
        Ok(())
    }
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
