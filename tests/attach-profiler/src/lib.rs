//! attach-profiler: the test profiler of tests/runtime/attach.rs. It writes its lifetime, one line per
//! event, to a log file the moment each happens (the process may end without a word more):
//!
//! - `Initialize` (loaded at launch; the log is `ATTACHPROF_LOG`) or `InitializeForAttach <data>`
//!   (the client data, `log=PATH` and optionally `;detach=PATH`);
//! - `ProfilerAttachComplete`, `Shutdown`, `ProfilerDetachSucceeded`, `Drop`;
//! - `seen A B …`: which of [`WATCHED`] fired before the detach request, in that order;
//! - `RequestProfilerDetach <HRESULT>`: the answer to the request, made from a thread of its own
//!   once the `detach` file exists (waiting at most 60 s, then `no detach file`);
//! - `late <Callback>`: any callback after ProfilerDetachSucceeded (there must be none).

use corprof::types::COR_PRF_MONITOR;
use corprof::{Callback, CallbackCounts, CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const CLSID: corprof::GUID = corprof::GUID::parse("3A7D5C1E-9B2F-4E6A-8D0C-1F2E3D4C5B6A");

/// Callbacks the Waiter app's phase 1 makes certain: a JIT compilation, a thread, an exception,
/// a GC.
pub const WATCHED: [Callback; 4] = [
    Callback::JITCompilationStarted,
    Callback::ThreadCreated,
    Callback::ExceptionThrown,
    Callback::GarbageCollectionStarted,
];

/// What makes [`WATCHED`] fire; all of it is allowed after attach, none of it is immutable (so
/// detach stays possible).
pub const MASK: COR_PRF_MONITOR = COR_PRF_MONITOR::JIT_COMPILATION
    .union(COR_PRF_MONITOR::THREADS)
    .union(COR_PRF_MONITOR::EXCEPTIONS)
    .union(COR_PRF_MONITOR::GC)
    .union(COR_PRF_MONITOR::MODULE_LOADS);

/// How long the runtime is told the detach will take (it waits this long before its first check).
pub const DETACH_EXPECTED_MS: u32 = 200;

/// Appends one line to the log, or says on stderr why it cannot.
fn log_line(log: &Path, line: &str) {
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = written {
        eprintln!("attach-profiler: cannot write {line:?} to {}: {e}", log.display());
    }
}

/// `seen A B …` for the [`WATCHED`] callbacks counted so far.
fn seen_line(counts: &CallbackCounts) -> String {
    let names: Vec<&str> = WATCHED.iter().filter(|c| counts.get(**c) > 0).map(|c| c.name()).collect();
    format!("seen {}", names.join(" "))
}

#[derive(Default)]
pub struct LifetimeLogger {
    log: OnceLock<PathBuf>,
    /// Shared with the detach thread, which reads it when the trigger appears.
    counts: Arc<CallbackCounts>,
    detached: AtomicBool,
    detacher: Mutex<Option<JoinHandle<()>>>,
}

impl LifetimeLogger {
    fn log(&self, line: &str) {
        match self.log.get() {
            Some(path) => log_line(path, line),
            None => eprintln!("attach-profiler: {line} (no log file set)"),
        }
    }

    /// Waits for `trigger` on a thread of its own, then asks the runtime to detach this profiler.
    fn detach_when(&self, log: PathBuf, trigger: PathBuf, info: ProfilerInfo) {
        let counts = Arc::clone(&self.counts);
        let started = Instant::now();
        let thread = std::thread::spawn(move || {
            while !trigger.exists() {
                if started.elapsed() > Duration::from_secs(60) {
                    log_line(&log, "no detach file");
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            log_line(&log, &seen_line(&counts));
            let answer = match info.request_profiler_detach(DETACH_EXPECTED_MS) {
                Ok(()) => HResult::S_OK,
                Err(hr) => hr,
            };
            // Our reference to ICorProfilerInfo goes back before the runtime releases us.
            drop(info);
            log_line(&log, &format!("RequestProfilerDetach {answer}"));
        });
        *self.detacher.lock().unwrap() = Some(thread);
    }
}

impl CorProfilerCallback for LifetimeLogger {
    fn before_callback(&self, callback: Callback) {
        self.counts.bump(callback);
        if self.detached.load(Ordering::SeqCst) {
            self.log(&format!("late {}", callback.name()));
        }
    }

    fn initialize(&self, info: &IUnknown) -> Result<()> {
        let log = std::env::var_os("ATTACHPROF_LOG").ok_or_else(|| {
            eprintln!("attach-profiler: ATTACHPROF_LOG is not set");
            HResult::E_INVALIDARG
        })?;
        let _ = self.log.set(PathBuf::from(log));
        self.log("Initialize");
        ProfilerInfo::from_unknown(info)?.set_event_mask(MASK)
    }

    fn initialize_for_attach(&self, info: &IUnknown, client_data: &[u8]) -> Result<()> {
        let text = String::from_utf8_lossy(client_data);
        let (mut log, mut detach) = (None, None);
        for pair in text.split(';') {
            match pair.split_once('=') {
                Some(("log", path)) => log = Some(PathBuf::from(path)),
                Some(("detach", path)) => detach = Some(PathBuf::from(path)),
                _ => {
                    eprintln!("attach-profiler: unexpected client data {text:?}");
                    return Err(HResult::E_INVALIDARG);
                }
            }
        }
        let log = log.ok_or(HResult::E_INVALIDARG)?;
        let _ = self.log.set(log.clone());
        self.log(&format!("InitializeForAttach {text}"));
        let info = ProfilerInfo::from_unknown(info)?;
        info.set_event_mask(MASK)?;
        if let Some(trigger) = detach {
            self.detach_when(log, trigger, info);
        }
        Ok(())
    }

    fn profiler_attach_complete(&self) -> Result<()> {
        self.log("ProfilerAttachComplete");
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.log("Shutdown");
        Ok(())
    }

    fn profiler_detach_succeeded(&self) -> Result<()> {
        self.detached.store(true, Ordering::SeqCst);
        // The detach thread has made its request, so it ends at once: joined here, none of its
        // code runs once the runtime unloads the library.
        if let Some(thread) = self.detacher.lock().unwrap().take() {
            let _ = thread.join();
        }
        self.log("ProfilerDetachSucceeded");
        Ok(())
    }
}

impl Drop for LifetimeLogger {
    fn drop(&mut self) {
        self.log("Drop");
    }
}

corprof::export_profiler!(LifetimeLogger, CLSID);
