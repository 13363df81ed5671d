//! `ProfilerInfo` can never reach a freed runtime object (the Info gate), in CoreCLR 8.0.4
//! and 3.1.23. The profiler is tests/gate-profiler (the harness builds it);
//! its threads hold `ProfilerInfo` clones past a failed `Initialize`, a detach and `Shutdown`,
//! where the runtime frees its Info object (and unloads the library after the first two). Each
//! case must end with the app's exit code 0 and the threads told `CORPROF_E_PROFILER_DETACHING`;
//! without the gate they crash the app (exit 139). The app is tests/apps/Waiter, held in its
//! phase until the profiler's threads have said their part (at most 30 s; the run itself is
//! killed after `RUN_TIMEOUT`, so a hang fails the test).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CLSID: &str = "5E0B7A42-1C3D-4F8E-9A6B-2D4C6E8F0A13";
const REFUSED: &str = "CORPROF_E_PROFILER_DETACHING (0x80131367)";
const WAIT: Duration = Duration::from_secs(30);

/// A per-test directory for the app's signal files and the profiler's log.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("corprof-gate-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cannot create the test directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Runs Waiter (one phase) under gate-profiler in `mode`; the phase starts once the log holds a
/// line starting with `until` (or after `WAIT`). Returns the run and the log.
fn run(runtime: &'static str, mode: &str, until: &'static str) -> (Run, String) {
    let dir = TempDir::new(&format!("{mode}-{runtime}"));
    let log = dir.0.join("log");
    let go = dir.0.join("go1");
    let watcher = {
        let (log, go) = (log.clone(), go.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            while !read(&log).lines().any(|l| l.starts_with(until)) && start.elapsed() < WAIT {
                std::thread::sleep(Duration::from_millis(10));
            }
            std::fs::write(&go, "").expect("cannot write the go file");
        })
    };
    let mut env = profiler_env(CLSID, &profiler_lib("gate_profiler"));
    env.push(("GATEPROF_MODE", mode.to_string()));
    env.push(("GATEPROF_LOG", log.to_str().unwrap().to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = run_app_with_args(runtime, "Waiter", &[dir.0.to_str().unwrap(), "1"], &env);
    watcher.join().unwrap();
    let text = read(&log);
    (run, text)
}

fn assert_clean_exit(run: &Run, log: &str) {
    assert_eq!(run.code, Some(0), "the app did not exit cleanly; log:\n{log}\n{}", run.describe());
}

/// The lines of `log` in order, each asserted present.
fn assert_in_order(log: &str, run: &Run, lines: &[&str]) {
    let all: Vec<&str> = log.lines().collect();
    let mut at = 0;
    for want in lines {
        match all[at..].iter().position(|l| l == want) {
            Some(i) => at += i + 1,
            None => panic!("no {want:?} (in order) in the log:\n{log}\n{}", run.describe()),
        }
    }
}

/// The loop line came after `callback` and its calls, which went on 200 ms past it, ended refused.
fn assert_loop_refused_at_last(log: &str, callback: &str) {
    let line = log.lines().find(|l| l.starts_with("loop ")).unwrap_or_else(|| panic!("no loop line:\n{log}"));
    assert!(line.ends_with(&format!("last {REFUSED}")), "a call after {callback} was not refused: {line:?}\n{log}");
    assert!(log.find(callback).unwrap() < log.find(line).unwrap(), "the loop ended before {callback}:\n{log}");
}

fn failed_initialize_then_a_late_call(runtime: &'static str) {
    let (run, log) = run(runtime, "fail-init", "late thread done");
    assert_clean_exit(&run, &log);
    assert_in_order(
        &log,
        &run,
        &[
            "Initialize fail-init",
            &format!("late get_event_mask {REFUSED}"),
            &format!("late query {REFUSED}"),
            "late thread done",
        ],
    );
}

#[test]
fn failed_initialize_then_a_late_call_net8() {
    let _runtime = runtime_lock();
    failed_initialize_then_a_late_call("8");
}

#[test]
fn failed_initialize_then_a_late_call_net3() {
    let _runtime = runtime_lock();
    failed_initialize_then_a_late_call("3");
}

fn looping_thread_during_detach(runtime: &'static str) {
    let (run, log) = run(runtime, "detach", "loop ");
    assert_clean_exit(&run, &log);
    assert_in_order(&log, &run, &["Initialize detach", "RequestProfilerDetach Ok", "ProfilerDetachSucceeded"]);
    assert_loop_refused_at_last(&log, "ProfilerDetachSucceeded");
}

#[test]
fn looping_thread_during_detach_net8() {
    let _runtime = runtime_lock();
    looping_thread_during_detach("8");
}

#[test]
fn looping_thread_during_detach_net3() {
    let _runtime = runtime_lock();
    looping_thread_during_detach("3");
}

fn a_call_after_shutdown(runtime: &'static str) {
    let (run, log) = run(runtime, "shutdown", "Initialize");
    assert_clean_exit(&run, &log);
    assert_in_order(&log, &run, &["Initialize shutdown", "Shutdown"]);
    assert_loop_refused_at_last(&log, "Shutdown");
}

#[test]
fn a_call_after_shutdown_net8() {
    let _runtime = runtime_lock();
    a_call_after_shutdown("8");
}

#[test]
fn a_call_after_shutdown_net3() {
    let _runtime = runtime_lock();
    a_call_after_shutdown("3");
}
