//! Conformance scenario "multiple" (`src/tests/profiler/multiple/multiple.cs`): several profiler
//! objects of one library in one process, each loading as a notification profiler (.NET 7+):
//! four loaded at startup through `CORECLR_NOTIFICATION_PROFILERS` (the same path and CLSID four
//! times, no main profiler) and four attached while the app runs. Each asks for exception events
//! and, at the app's one exception, requests its detach from a thread of its own: all eight see the
//! exception and detach (ProfilerDetachSucceeded, then the runtime releases them). Beyond the
//! runtime's checks: a ninth attached after all of them have gone detaches in its turn, each
//! object's own sequence of callbacks is exact, and no callback reaches an object after its detach.
//! The requests are made one at a time (each once the one before has detached): 8.0.4's detach
//! thread, woken once for several queued requests, serves about half of them (its loop pops the
//! queue while counting up to the shrinking size) and leaves the rest waiting for another request,
//! which the runtime test meets by counting seven detaches of eight.

use crate::support::{Recorder, lock};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR};
use corprof::{Callback, CorProfilerCallback, HResult, IUnknown, LiveObject, Out, Result};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

/// How long the runtime is told a detach will take (it waits this long before its first check).
const DETACH_EXPECTED_MS: u32 = 200;

/// Numbers the profiler objects in the order the runtime creates them.
static CREATED: AtomicU32 = AtomicU32::new(0);
/// One writer at a time, so that each line lands whole.
static FILE: Mutex<()> = Mutex::new(());
/// Whether an object's detach is under way: the next one asks only once it is through.
static DETACHING: Mutex<bool> = Mutex::new(false);
static DETACHED: Condvar = Condvar::new();

/// Sets [`DETACHING`] to `busy`, waiting first, when setting it, until no other detach is under
/// way.
fn detaching(busy: bool) {
    let mut now = lock(&DETACHING);
    if busy {
        now = DETACHED.wait_while(now, |d| *d).unwrap_or_else(|p| p.into_inner());
    }
    *now = busy;
    DETACHED.notify_all();
}

/// Appends `p<n> <event>` to the file in `CORPROF_CONF_OUT` at once: a detached object gets no
/// Shutdown to write its facts at.
fn log(instance: u32, event: &str) {
    let _one = lock(&FILE);
    let Some(path) = std::env::var_os("CORPROF_CONF_OUT") else { return };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("p{instance} {event}\n").as_bytes()));
    if let Err(e) = written {
        eprintln!("conformance: multiple: cannot write to {}: {e}", path.to_string_lossy());
    }
}

pub struct Multiple {
    instance: u32,
    rec: Recorder,
    detached: AtomicBool,
    detach_requested: OnceLock<()>,
}

impl Default for Multiple {
    fn default() -> Multiple {
        Multiple {
            instance: CREATED.fetch_add(1, Ordering::SeqCst) + 1,
            rec: Recorder::default(),
            detached: AtomicBool::new(false),
            detach_requested: OnceLock::new(),
        }
    }
}

impl Multiple {
    fn start(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(unknown, COR_PRF_MONITOR::EXCEPTIONS, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }
}

impl CorProfilerCallback for Multiple {
    fn before_callback(&self, callback: Callback) {
        if self.detached.load(Ordering::SeqCst) {
            log(self.instance, &format!("late {}", callback.name()));
        }
    }

    fn load_as_notification_only(&self, notification_only: Out<'_, bool>) -> Result<()> {
        log(self.instance, "LoadAsNotificationOnly");
        notification_only.write(true);
        Ok(())
    }

    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        log(self.instance, "Initialize");
        self.start(unknown)
    }

    fn initialize_for_attach(&self, unknown: &IUnknown, _client_data: &[u8]) -> Result<()> {
        log(self.instance, "InitializeForAttach");
        self.start(unknown)
    }

    fn exception_thrown(&self, thrown: LiveObject<'_>) -> Result<()> {
        let info = self.rec.info()?;
        let class = self.rec.class_name(thrown.class(info)?);
        log(self.instance, &format!("ExceptionThrown {class}"));
        // Only the app's cue, and once: the runtime refuses a detach requested from inside a
        // callback, so a thread of its own asks (as the runtime test does).
        if class == "ConfMultiple.Trigger" && self.detach_requested.set(()).is_ok() {
            let (info, instance) = (info.clone(), self.instance);
            std::thread::spawn(move || {
                detaching(true);
                let answer = info.request_profiler_detach(DETACH_EXPECTED_MS).err().unwrap_or(HResult::S_OK);
                if answer != HResult::S_OK {
                    detaching(false);
                }
                // Our reference to the Info object goes back before the runtime releases us.
                drop(info);
                log(instance, &format!("RequestProfilerDetach {answer}"));
            });
        }
        Ok(())
    }

    fn profiler_detach_succeeded(&self) -> Result<()> {
        log(self.instance, "ProfilerDetachSucceeded");
        self.detached.store(true, Ordering::SeqCst);
        detaching(false);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        log(self.instance, "Shutdown");
        Ok(())
    }
}

impl Drop for Multiple {
    fn drop(&mut self) {
        log(self.instance, "Drop");
    }
}
