//! Attaching to and detaching from running apps, on CoreCLR 8.0.4 and 3.1.23.
//!
//! Each test starts the Waiter app (tests/apps/Waiter) with no profiler, waits for its `ready`
//! file, runs `corprof-attach`, and lets the app go on phase by phase through `go<n>` files. The
//! profilers are examples/callback-counter and tests/attach-profiler, which logs its lifetime
//! (the harness builds them and `corprof-attach`). Every wait is bounded; a timeout fails the
//! test with the app's stderr.

use crate::common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const COUNTER_CLSID: &str = "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11";
const LOGGER_CLSID: &str = "3A7D5C1E-9B2F-4E6A-8D0C-1F2E3D4C5B6A";

/// How long the app may take to get ready, to finish a phase, or the profiler to be released.
const WAIT: Duration = Duration::from_secs(30);

/// The Waiter app, running.
struct App {
    runtime: &'static str,
    child: Child,
    pid: u32,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

/// What the app printed, once it has ended.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl App {
    /// Starts `Waiter <dir> <phases>` on `runtime`, in an environment cleaned as
    /// `common::run_app` cleans it (so no profiler loads at launch), and waits for it to be ready.
    fn start(runtime: &'static str, dir: &TempDir, phases: u32) -> App {
        let phases = phases.to_string();
        let mut cmd = app_command(runtime, "Waiter", &[dir.0.to_str().unwrap(), &phases], &[]);
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start scripts/dotnet-run: {e}"));
        let reader = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                String::from_utf8_lossy(&bytes).into_owned()
            })
        };
        let stdout = Some(reader(Box::new(child.stdout.take().unwrap())));
        let stderr = Some(reader(Box::new(child.stderr.take().unwrap())));
        let mut app = App { runtime, child, pid: 0, stdout, stderr };
        let ready = dir.file("ready");
        app.wait_for(|| std::fs::read_to_string(&ready).is_ok_and(|t| !t.is_empty()), "the app's ready file");
        // scripts/dotnet-run execs the runtime's host, so the child is the .NET process itself.
        app.pid = std::fs::read_to_string(&ready).unwrap().trim().parse().expect("the ready file holds the pid");
        assert_eq!(app.pid, app.child.id(), "the app runs in the process the test started");
        app
    }

    /// Polls `done` every 10 ms for at most [`WAIT`]; on timeout kills the app and fails with
    /// its output.
    fn wait_for(&mut self, mut done: impl FnMut() -> bool, what: &str) {
        let started = Instant::now();
        while !done() {
            if let Ok(Some(status)) = self.child.try_wait() {
                let out = self.finish_with(status.code());
                panic!("CoreCLR {}: the app ended ({:?}) before {what}\n{}", self.runtime, out.code, out.describe());
            }
            if started.elapsed() > WAIT {
                let _ = self.child.kill();
                let status = self.child.wait().ok().and_then(|s| s.code());
                let out = self.finish_with(status);
                panic!("CoreCLR {}: no {what} after {WAIT:?}; killed the app\n{}", self.runtime, out.describe());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Lets phase `n` run (creates `go<n>`) and waits for its `done<n>`.
    fn run_phase(&mut self, dir: &TempDir, n: u32) {
        std::fs::write(dir.file(&format!("go{n}")), "").unwrap();
        let done = dir.file(&format!("done{n}"));
        self.wait_for(|| done.exists(), &format!("done{n} file"));
    }

    /// Waits for the app to exit (bounded) and collects its output.
    fn finish(mut self) -> Finished {
        let started = Instant::now();
        let code = loop {
            if let Some(status) = self.child.try_wait().expect("cannot wait for the app") {
                break status.code();
            }
            if started.elapsed() > WAIT {
                let _ = self.child.kill();
                let status = self.child.wait().ok().and_then(|s| s.code());
                let out = self.finish_with(status);
                panic!("CoreCLR {}: the app did not exit in {WAIT:?}; killed it\n{}", self.runtime, out.describe());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.finish_with(code)
    }

    fn finish_with(&mut self, code: Option<i32>) -> Finished {
        let stdout = self.stdout.take().map(|t| t.join().unwrap()).unwrap_or_default();
        let stderr = self.stderr.take().map(|t| t.join().unwrap()).unwrap_or_default();
        Finished { code, stdout, stderr }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        // A failed assertion must not leave the app waiting for its files.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Finished {
    fn describe(&self) -> String {
        format!(
            "exit code {:?}\n--- stdout ---\n{}--- stderr (last 40 lines) ---\n{}",
            self.code,
            self.stdout,
            last_lines(&self.stderr, 40)
        )
    }

    /// The app ran all its phases and exited normally, printing nothing on stderr.
    fn assert_ran(&self, phases: u32) {
        let mut expected: String = (1..=phases).map(|n| format!("phase {n} ok\n")).collect();
        expected.push_str("Waiter done\n");
        assert_eq!((self.code, self.stdout.as_str(), self.stderr.as_str()), (Some(0), expected.as_str(), ""));
    }
}

/// The `corprof-attach` binary, built first.
fn attach_tool() -> PathBuf {
    workspace_bin("corprof-attach")
}

/// Runs `corprof-attach` against the app.
fn attach(app: &App, clsid: &str, lib: &Path, data: &str) -> Output {
    Command::new(attach_tool())
        .args(["--pid", &app.pid.to_string(), "--clsid", &format!("{{{clsid}}}"), "--profiler"])
        .arg(lib)
        .args(["--data", data, "--timeout-ms", "10000"])
        .output()
        .expect("cannot run corprof-attach")
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("corprof-attach printed non-UTF-8")
}

/// `corprof-attach` succeeded: exit 0 and its one line naming S_OK.
fn assert_attached(out: &Output, app: &App, lib: &Path) {
    let expected =
        format!("corprof-attach: process {} attached {}: S_OK (0x00000000): Success.\n", app.pid, lib.display());
    assert_eq!((out.status.code(), text(&out.stdout), text(&out.stderr)), (Some(0), expected.as_str(), ""));
}

/// The callback counter, attached to a running app: it counts `InitializeForAttach 1`, sees the
/// app's work, and writes its counts at Shutdown; a second attach is refused by name.
fn counter_attaches(runtime: &'static str, test: &str) {
    let _row = ConformanceRow::new(
        "attach",
        runtime,
        "corprof-attach attaches the callback-counter to a running app (InitializeForAttach 1, ProfilerAttachComplete 1, the app's callbacks, Shutdown 1); a second attach is refused with CORPROF_E_PROFILER_ALREADY_ACTIVE",
    );
    let lib = profiler_lib("callback_counter");
    let dir = TempDir::new("attach", test);
    let counts_file = dir.file("counts.txt");
    let mut app = App::start(runtime, &dir, 1);

    let data = format!("CORPROF_COUNTS_OUT={}", counts_file.display());
    assert_attached(&attach(&app, COUNTER_CLSID, &lib, &data), &app, &lib);

    let again = attach(&app, COUNTER_CLSID, &lib, &data);
    assert_eq!(
        (again.status.code(), text(&again.stdout), text(&again.stderr)),
        (
            Some(1),
            "",
            "corprof-attach: the runtime refused: CORPROF_E_PROFILER_ALREADY_ACTIVE (0x8013136A): \
             Attach refused: a profiler is already loaded.\n"
        ),
        "a second attach"
    );

    app.run_phase(&dir, 1);
    let out = app.finish();
    out.assert_ran(1);
    let text = std::fs::read_to_string(&counts_file)
        .unwrap_or_else(|e| panic!("no counts in {} ({e}):\n{}", counts_file.display(), out.describe()));
    let counts = parse_counts(&text, "the attached counter's counts");
    let count = |name: &str| counts.get(name).copied().unwrap_or(0);
    assert_eq!(
        [
            ("Initialize", count("Initialize")),
            ("InitializeForAttach", count("InitializeForAttach")),
            ("ProfilerAttachComplete", count("ProfilerAttachComplete")),
            ("Shutdown", count("Shutdown")),
            ("ProfilerDetachSucceeded", count("ProfilerDetachSucceeded")),
        ],
        [
            ("Initialize", 0),
            ("InitializeForAttach", 1),
            ("ProfilerAttachComplete", 1),
            ("Shutdown", 1),
            ("ProfilerDetachSucceeded", 0)
        ],
        "{text}"
    );
    // Phase 1 JIT-compiles new methods, loads a generic instantiation, starts a thread, throws
    // and collects: the default mask, all allowed after attach, sees each.
    for name in
        ["JITCompilationStarted", "ClassLoadStarted", "ThreadCreated", "ExceptionThrown", "GarbageCollectionStarted"]
    {
        assert!(count(name) > 0, "no {name} counted after attach:\n{text}");
    }
}

const INSTRUMENT_CLSID: &str = "3B8E1F52-6C0A-4D97-B2E4-8F1A7C5D9E03";

/// tests/instrument-profiler attached after the app's first phase, whose methods it then wraps
/// through ReJIT (`corprof::instrument`, modules loaded before `start`): once its requests are
/// made (its `instrument-ready` file), phases 2 and 3 run, and its handlers see exactly their
/// calls, the app's output unchanged.
fn instrumentation_attaches(runtime: &'static str, test: &str) {
    let lib = profiler_lib("instrument_profiler");
    let dir = TempDir::new("attach", test);
    let (out_file, ready) = (dir.file("instrument.txt"), dir.file("instrument-ready"));
    let mut app = App::start(runtime, &dir, 3);
    app.run_phase(&dir, 1);
    let data = format!("CORPROF_INSTRUMENT_OUT={}\nINSTRUMENT_READY={}", out_file.display(), ready.display());
    assert_attached(&attach(&app, INSTRUMENT_CLSID, &lib, &data), &app, &lib);
    app.wait_for(|| ready.exists(), "the instrumentation's ReJIT requests");
    app.run_phase(&dir, 2);
    app.run_phase(&dir, 3);
    let out = app.finish();
    out.assert_ran(3);
    let text = std::fs::read_to_string(&out_file)
        .unwrap_or_else(|e| panic!("no output in {} ({e}):\n{}", out_file.display(), out.describe()));
    let mut lines: Vec<&str> = text.lines().collect();
    // Said as each request is made: in the order the worker met them.
    lines[..3].sort();
    assert_eq!(
        lines,
        [
            "wrapped WaiterApp.Box`1::Of (target WaiterApp.Box`1::Of)",
            "wrapped WaiterApp.Program::Allocate (target WaiterApp.Program::Allocate)",
            "wrapped WaiterApp.Program::Work (target WaiterApp.Program::Work)",
            "never blocking: begins=0 ends=0 without the GC transition=0",
            // Box<long>.Of in phase 2, Box<double>.Of in phase 3 (Box<int>.Of ran in phase 1,
            // before the attach); Allocate on each phase's thread.
            "WaiterApp.Box`1::Of calls=2 ends=2 threw=0 unpaired=0 last=Returned(Other) first_args=[Other]",
            "WaiterApp.Program::Allocate calls=2 ends=2 threw=0 unpaired=0 last=Returned(Int(19000)) first_args=[Int(2)]",
            "WaiterApp.Program::Work calls=2 ends=2 threw=0 unpaired=0 last=Returned(Void) first_args=[Int(2)]",
        ],
        "CoreCLR {runtime}:\n{text}"
    );
}

#[test]
fn instrumentation_attaches_on_coreclr_8() {
    let _runtime = runtime_lock();
    instrumentation_attaches("8", "instrumentation_attaches_on_coreclr_8");
}

#[test]
fn instrumentation_attaches_on_coreclr_3() {
    let _runtime = runtime_lock();
    instrumentation_attaches("3", "instrumentation_attaches_on_coreclr_3");
}

/// The handler assembly of tests/apps/InstrumentManaged and corprof's `Corprof.Instrumentation`,
/// as `bash scripts/setup` builds them.
fn managed_assemblies() -> (PathBuf, PathBuf) {
    let root = repo_root();
    (
        root.join("tests/apps/InstrumentManaged/bin/handlers/InstrumentManagedHandlers.dll"),
        root.join("managed/Corprof.Instrumentation/bin/Corprof.Instrumentation.dll"),
    )
}

/// tests/instrument-profiler attached after the Waiter app's first phase with handlers in C#
/// (tests/apps/InstrumentManaged's handler assembly): `Allocate` and `Box<T>.Of` around
/// `Handlers.Recorder`, `Twice` (`async`) around a Rust handler ending at its task's completion,
/// `Work` around a type the assembly lacks. The app's modules were
/// initialized long before, so each method's first ReJIT puts the startup code before its own
/// (the `instrument-ready` file says those are requested); `Work`'s first call in phase 2 runs
/// it. From then on the methods are wrapped (`instrument-started`: every ReJIT requested), so in
/// phase 3 the handlers see each call begin and end (`Twice` with its task's result); `Work`'s handler is said missing, `Work` refused and run as written. The app's
/// output is unchanged.
fn managed_instrumentation_attaches(runtime: &'static str, test: &str) {
    let lib = profiler_lib("instrument_profiler");
    let (handlers, invoker) = managed_assemblies();
    let dir = TempDir::new("attach", test);
    let (out_file, ready, started) =
        (dir.file("instrument.txt"), dir.file("instrument-ready"), dir.file("instrument-started"));
    let mut app = App::start(runtime, &dir, 3);
    app.run_phase(&dir, 1);
    let data = format!(
        "CORPROF_INSTRUMENT_OUT={}\nINSTRUMENT_READY={}\nINSTRUMENT_STARTED={}\nINSTRUMENT_HANDLERS={}\n\
         INSTRUMENT_INVOKER={}",
        out_file.display(),
        ready.display(),
        started.display(),
        handlers.display(),
        invoker.display()
    );
    assert_attached(&attach(&app, INSTRUMENT_CLSID, &lib, &data), &app, &lib);
    app.wait_for(|| ready.exists(), "the startup code's ReJIT requests");
    app.run_phase(&dir, 2);
    app.wait_for(|| started.exists(), "the startup, and the wrapped bodies' ReJIT requests");
    app.run_phase(&dir, 3);
    let out = app.finish();
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (Some(0), "phase 1 ok\nphase 2 ok\nphase 3 ok\nWaiter done\n"),
        "CoreCLR {runtime}: {}",
        out.describe()
    );
    let missing = format!(
        "corprof: managed handler Handlers.Nowhere (definition WaiterApp.Program::Work) is no non-generic class of {}; \
         its methods are not wrapped",
        handlers.display()
    );
    let (said, rest): (Vec<&str>, Vec<&str>) = out.stderr.lines().partition(|l| l.starts_with("handler: "));
    assert_eq!(rest, [missing.as_str()], "CoreCLR {runtime}: {}", out.describe());
    // The sequence numbers taken out: begin and end are paired by them below.
    let calls: Vec<String> = said
        .iter()
        .map(|l| {
            let words: Vec<&str> = l.split(' ').collect();
            let id = words.get(2).copied().unwrap_or_default();
            assert!(said.iter().filter(|o| o.split(' ').nth(2) == Some(id)).count() == 2, "unpaired: {l}");
            words.iter().enumerate().filter(|(i, _)| *i != 2).map(|(_, w)| *w).collect::<Vec<&str>>().join(" ")
        })
        .collect();
    let box_of = |n: u32, ty: &str| {
        [format!("handler: begin this=null args=[{n}]"), format!("handler: end returned WaiterApp.Box`1[System.{ty}]")]
    };
    let allocate =
        |n: u32| [format!("handler: begin this=null args=[{n}]"), format!("handler: end returned {}", (16 + n) * 1000)];
    // Phase 3 wrapped, in order (Allocate runs on a thread Work starts after Box<T>.Of). Phase
    // 2's calls come after the startup in Work: wrapped too when their first compilation after
    // the attach took the wrapped body; unwrapped when it took the startup code's.
    let phase3: Vec<String> = box_of(3, "Double").into_iter().chain(allocate(3)).collect();
    assert!(calls.ends_with(&phase3), "CoreCLR {runtime}: {calls:#?}\n{}", out.describe());
    let phase2 = &calls[..calls.len() - phase3.len()];
    let (box2, allocate2) = (box_of(2, "Int64"), allocate(2));
    assert!(
        [&[][..], &box2[..], &allocate2[..], &[box2.clone(), allocate2.clone()].concat()[..]].contains(&phase2),
        "CoreCLR {runtime}: phase 2 {phase2:#?}"
    );
    let text = std::fs::read_to_string(&out_file)
        .unwrap_or_else(|e| panic!("no output in {} ({e}):\n{}", out_file.display(), out.describe()));
    // Where `Twice` ends: the thread completing its task, or the caller's when the task was
    // complete before the end code ran (a race with the thread pool).
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("ended on another thread: ")).collect();
    lines.sort();
    // Twice(3), and Twice(2) when phase 2's call was wrapped already (as above).
    let twice = |n: u32| {
        format!("WaiterApp.Program::Twice calls={n} ends={n} threw=0 unpaired=0 last=Returned(Int(6)) first_args=-")
    };
    let twice = [twice(1), twice(2)];
    let twice = lines.iter().position(|l| twice.iter().any(|t| t == l)).map(|i| lines.remove(i));
    assert!(twice.is_some(), "CoreCLR {runtime}: Twice's line\n{text}");
    let refused = format!(
        "not wrapped WaiterApp.Program::Work (target WaiterApp.Program::Work): its managed handler Handlers.Nowhere \
         was not loaded from {} (see stderr)",
        handlers.display()
    );
    assert_eq!(
        lines,
        [
            "never blocking: begins=0 ends=0 without the GC transition=0",
            refused.as_str(),
            "wrapped WaiterApp.Box`1::Of (target WaiterApp.Box`1::Of)",
            "wrapped WaiterApp.Program::Allocate (target WaiterApp.Program::Allocate)",
            "wrapped WaiterApp.Program::Twice (target WaiterApp.Program::Twice)",
        ],
        "CoreCLR {runtime}:\n{text}"
    );
}

/// Attached before the Waiter app's only phase with `Handlers.Recorder` around `WaitFor`, which
/// the app, already inside it, calls no more: the startup never runs. The revert at shutdown
/// lets go of the method waiting for it, so no request is left pending (they stayed counted, and
/// a profiler waiting for its revert waited in vain), and says nothing of a method that had only
/// the startup code.
fn managed_instrumentation_reverted_before_its_startup(runtime: &'static str, test: &str) {
    let lib = profiler_lib("instrument_profiler");
    let (handlers, invoker) = managed_assemblies();
    let dir = TempDir::new("attach", test);
    let (out_file, ready) = (dir.file("instrument.txt"), dir.file("instrument-ready"));
    let mut app = App::start(runtime, &dir, 1);
    let data = format!(
        "CORPROF_INSTRUMENT_OUT={}\nINSTRUMENT_READY={}\nINSTRUMENT_REVERT_AT_SHUTDOWN=1\nINSTRUMENT_WAIT_ONLY=1\n\
         INSTRUMENT_HANDLERS={}\nINSTRUMENT_INVOKER={}",
        out_file.display(),
        ready.display(),
        handlers.display(),
        invoker.display()
    );
    assert_attached(&attach(&app, INSTRUMENT_CLSID, &lib, &data), &app, &lib);
    app.wait_for(|| ready.exists(), "the startup code's ReJIT request");
    app.run_phase(&dir, 1);
    let out = app.finish();
    out.assert_ran(1);
    let text = std::fs::read_to_string(&out_file)
        .unwrap_or_else(|e| panic!("no output in {} ({e}):\n{}", out_file.display(), out.describe()));
    assert_eq!(
        text.lines().collect::<Vec<&str>>(),
        ["pending after the revert at shutdown: 0", "never blocking: begins=0 ends=0 without the GC transition=0"],
        "CoreCLR {runtime}:\n{text}"
    );
}

#[test]
fn managed_instrumentation_reverted_before_its_startup_on_coreclr_8() {
    let _runtime = runtime_lock();
    managed_instrumentation_reverted_before_its_startup(
        "8",
        "managed_instrumentation_reverted_before_its_startup_on_coreclr_8",
    );
}

#[test]
fn managed_instrumentation_reverted_before_its_startup_on_coreclr_3() {
    let _runtime = runtime_lock();
    managed_instrumentation_reverted_before_its_startup(
        "3",
        "managed_instrumentation_reverted_before_its_startup_on_coreclr_3",
    );
}

#[test]
fn managed_instrumentation_attaches_on_coreclr_8() {
    let _runtime = runtime_lock();
    managed_instrumentation_attaches("8", "managed_instrumentation_attaches_on_coreclr_8");
}

#[test]
fn managed_instrumentation_attaches_on_coreclr_3() {
    let _runtime = runtime_lock();
    managed_instrumentation_attaches("3", "managed_instrumentation_attaches_on_coreclr_3");
}

#[test]
fn counter_attaches_on_coreclr_8() {
    let _runtime = runtime_lock();
    counter_attaches("8", "counter_attaches_on_coreclr_8");
}

#[test]
fn counter_attaches_on_coreclr_3() {
    let _runtime = runtime_lock();
    counter_attaches("3", "counter_attaches_on_coreclr_3");
}

/// The attach-profiler's log, as lines.
fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log).unwrap_or_default().lines().map(str::to_string).collect()
}

/// Attach, observe phase 1's callbacks, request a detach: ProfilerDetachSucceeded is the last
/// callback, then the runtime releases the profiler (Drop); the app runs phase 2 without it and
/// exits normally.
fn attach_then_detach(runtime: &'static str, test: &str) {
    let _row = ConformanceRow::new(
        "detach",
        runtime,
        "`src/tests/profiler/unittest/releaseondetach.cs` and `src/tests/profiler/unittest/releaseonshutdown.cs` (each attaches, detaches and waits for the release): an attached profiler requests detach: ProfilerDetachSucceeded, then Drop, no callback afterwards; the app goes on and exits 0",
    );
    let lib = profiler_lib("attach_profiler");
    let dir = TempDir::new("attach", test);
    let (log, trigger) = (dir.file("log"), dir.file("detach"));
    let mut app = App::start(runtime, &dir, 2);

    let data = format!("log={};detach={}", log.display(), trigger.display());
    assert_attached(&attach(&app, LOGGER_CLSID, &lib, &data), &app, &lib);
    app.run_phase(&dir, 1);

    std::fs::write(&trigger, "").unwrap();
    app.wait_for(|| log_lines(&log).iter().any(|l| l == "Drop"), "Drop line in the profiler's log");
    app.run_phase(&dir, 2);
    let out = app.finish();
    out.assert_ran(2);
    assert_eq!(
        log_lines(&log),
        [
            format!("InitializeForAttach {data}").as_str(),
            "ProfilerAttachComplete",
            "seen JITCompilationStarted ThreadCreated ExceptionThrown GarbageCollectionStarted",
            "RequestProfilerDetach S_OK (0x00000000)",
            "ProfilerDetachSucceeded",
            "Drop",
        ],
        "no `late` line: no callback after ProfilerDetachSucceeded, and no Shutdown once detached\n{}",
        out.describe()
    );
}

#[test]
fn attach_then_detach_on_coreclr_8() {
    let _runtime = runtime_lock();
    attach_then_detach("8", "attach_then_detach_on_coreclr_8");
}

#[test]
fn attach_then_detach_on_coreclr_3() {
    let _runtime = runtime_lock();
    attach_then_detach("3", "attach_then_detach_on_coreclr_3");
}

/// The lifetime without a detach: loaded at launch or attached, the profiler sees Shutdown;
/// CoreCLR 3.1.23 then releases it (Drop, exactly once), 8.0.4 never does at process exit.
fn lifetime_to_shutdown(runtime: &'static str, test: &str) {
    let what = "the profiler object, loaded at launch or attached, is dropped exactly once after Shutdown";
    let row = ConformanceRow::new("lifetime", runtime, what);
    let _row = if runtime == "8" {
        row.not_applicable(
            "8.0.4 never releases the profiler at exit; Shutdown is its last call, and the test checks that no Drop follows",
        )
    } else {
        row
    };
    let lib = profiler_lib("attach_profiler");
    let drop_at_exit: &[&str] = if runtime == "3" { &["Drop"] } else { &[] };

    // Loaded at launch: the app runs straight through (its go1 file is already there).
    let dir = TempDir::new("attach", &format!("{test}-launch"));
    let log = dir.file("log");
    std::fs::write(dir.file("go1"), "").unwrap();
    let env = profiler_env(LOGGER_CLSID, &lib);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("ATTACHPROF_LOG", log.to_str().unwrap()));
    let run = run_app_with_args(runtime, "Waiter", &[dir.0.to_str().unwrap(), "1"], &env);
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "phase 1 ok\nWaiter done\n"), "{}", run.describe());
    let expected: Vec<&str> = ["Initialize", "Shutdown"].iter().chain(drop_at_exit).copied().collect();
    assert_eq!(log_lines(&log), expected, "loaded at launch: {}", run.describe());

    // Attached, never detached.
    let dir = TempDir::new("attach", &format!("{test}-attach"));
    let log = dir.file("log");
    let mut app = App::start(runtime, &dir, 1);
    let data = format!("log={}", log.display());
    assert_attached(&attach(&app, LOGGER_CLSID, &lib, &data), &app, &lib);
    app.run_phase(&dir, 1);
    let out = app.finish();
    out.assert_ran(1);
    let first = format!("InitializeForAttach {data}");
    let expected: Vec<&str> =
        [first.as_str(), "ProfilerAttachComplete", "Shutdown"].iter().chain(drop_at_exit).copied().collect();
    assert_eq!(log_lines(&log), expected, "attached: {}", out.describe());
}

#[test]
fn lifetime_to_shutdown_on_coreclr_8() {
    let _runtime = runtime_lock();
    lifetime_to_shutdown("8", "lifetime_to_shutdown_on_coreclr_8");
}

#[test]
fn lifetime_to_shutdown_on_coreclr_3() {
    let _runtime = runtime_lock();
    lifetime_to_shutdown("3", "lifetime_to_shutdown_on_coreclr_3");
}

/// A profiler whose InitializeForAttach fails: the runtime answers with its HRESULT, which
/// corprof-attach names; corprof reports the failure in the app, which goes on unprofiled.
fn a_failed_attach_is_named(runtime: &'static str, test: &str) {
    let lib = profiler_lib("callback_counter");
    let dir = TempDir::new("attach", test);
    let mut app = App::start(runtime, &dir, 1);
    let out = attach(&app, COUNTER_CLSID, &lib, "not settings");
    let invalid = "E_INVALIDARG (0x80070057): An argument is invalid (a wrong ID, token, flag or size).";
    assert_eq!(
        (out.status.code(), text(&out.stdout), text(&out.stderr)),
        (Some(1), "", format!("corprof-attach: the runtime refused: {invalid}\n").as_str())
    );
    let missing = attach(&app, COUNTER_CLSID, &dir.file("no-such-lib.so"), "");
    assert_eq!(
        (missing.status.code(), text(&missing.stderr)),
        (
            Some(1),
            "corprof-attach: the runtime refused: ERROR_MOD_NOT_FOUND (0x8007007E): HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND): \
             the runtime could not load the profiler library (missing, or one of its dependencies is).\n"
        )
    );
    app.run_phase(&dir, 1);
    let done = app.finish();
    assert_eq!((done.code, done.stdout.as_str()), (Some(0), "phase 1 ok\nWaiter done\n"), "{}", done.describe());
    assert_eq!(
        done.stderr,
        format!(
            "callback-counter: \"not settings\" in the client data is not KEY=VALUE\n\
             corprof: InitializeForAttach failed: {invalid}\n"
        )
    );
}

#[test]
fn a_failed_attach_is_named_on_coreclr_8() {
    let _runtime = runtime_lock();
    a_failed_attach_is_named("8", "a_failed_attach_is_named_on_coreclr_8");
}

#[test]
fn a_failed_attach_is_named_on_coreclr_3() {
    let _runtime = runtime_lock();
    a_failed_attach_is_named("3", "a_failed_attach_is_named_on_coreclr_3");
}

/// The runtime-info15 header moves `COR_PRF_DISABLE_INLINING` and `COR_PRF_DISABLE_OPTIMIZATIONS`
/// into `COR_PRF_ALLOWABLE_AFTER_ATTACH` (0x100502fe → 0x106502fe): a newer runtime's rule. The
/// runtimes here keep their own, older mask: an attached profiler asking for either flag is
/// refused (SetEventMask answers E_FAIL on both). The counter, which keeps what the header's
/// constant allows, then asks again without the two flags, says so, and counts on (before it
/// asked again, the attach itself failed with E_FAIL).
fn inlining_flags_after_attach(runtime: &'static str, test: &str) {
    use corprof::types::COR_PRF_MONITOR;
    let moved = COR_PRF_MONITOR::COR_PRF_DISABLE_INLINING | COR_PRF_MONITOR::COR_PRF_DISABLE_OPTIMIZATIONS;
    assert!(COR_PRF_MONITOR::COR_PRF_ALLOWABLE_AFTER_ATTACH.contains(moved), "the header's constant allows them");
    assert!(!COR_PRF_MONITOR::COR_PRF_MONITOR_IMMUTABLE.intersects(moved), "and no longer calls them immutable");
    let lib = profiler_lib("callback_counter");
    let dir = TempDir::new("attach", test);
    let counts_file = dir.file("counts.txt");
    let mut app = App::start(runtime, &dir, 1);
    let mask = COR_PRF_MONITOR::COR_PRF_MONITOR_JIT_COMPILATION | moved;
    let data = format!("CORPROF_EVENT_MASK={:#x};CORPROF_COUNTS_OUT={}", mask.0, counts_file.display());
    assert_attached(&attach(&app, COUNTER_CLSID, &lib, &data), &app, &lib);
    app.run_phase(&dir, 1);
    let out = app.finish();
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            Some(0),
            "phase 1 ok\nWaiter done\n",
            "callback-counter: this runtime refused COR_PRF_DISABLE_INLINING | COR_PRF_DISABLE_OPTIMIZATIONS after \
             attach (E_FAIL (0x80004005)): leaving them out\n"
        ),
        "{}",
        out.describe()
    );
    let text = std::fs::read_to_string(&counts_file)
        .unwrap_or_else(|e| panic!("no counts in {} ({e}):\n{}", counts_file.display(), out.describe()));
    let counts = parse_counts(&text, "the attached counter's counts");
    assert!(counts.get("JITCompilationStarted").copied().unwrap_or(0) > 0, "{text}");
}

#[test]
fn inlining_flags_after_attach_on_coreclr_8() {
    let _runtime = runtime_lock();
    inlining_flags_after_attach("8", "inlining_flags_after_attach_on_coreclr_8");
}

#[test]
fn inlining_flags_after_attach_on_coreclr_3() {
    let _runtime = runtime_lock();
    inlining_flags_after_attach("3", "inlining_flags_after_attach_on_coreclr_3");
}
