//! Conformance scenarios driven through the runtime's diagnostics IPC (`corprof-attach`): a
//! profiler loaded at startup through a diagnostic port (`reversestartup`), and several profiler
//! objects of one library loaded at startup and attached, each detaching (`multiple`). Like
//! tests/runtime/conformance.rs, each scenario is a folder `tests/conformance/<scenario>/` (its
//! module of the conformance profiler and its C# app) and each test records its row in
//! `target/conformance/`; here the test starts the app itself, with the variable that chooses the
//! scenario, since the tool must talk to it while it runs (the harness builds `corprof-attach` and
//! the profiler).

use crate::common::conformance::{CLSID, Scenario, library};
use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

const REVERSE_STARTUP: Scenario = Scenario { name: "reversestartup", app: "ConfReverseStartup" };

/// How long the tool waits for the runtime, and the test for the app's socket.
const WAIT: Duration = Duration::from_secs(30);

/// The `corprof-attach` binary, built first.
fn attach_tool() -> PathBuf {
    workspace_bin("corprof-attach")
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("corprof-attach printed non-UTF-8")
}

/// The app of a scenario, started with `env` (and `args`) and the scenario chosen for any
/// profiler loaded into it, not waited for.
fn start(scenario: &Scenario, runtime: &'static str, args: &[&str], env: &[(&'static str, &str)]) -> Child {
    app_command(runtime, &scenario.app_path(), args, &scenario.env(env))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start scripts/dotnet-run: {e}"))
}

/// Waits for process `pid`'s own diagnostics socket (in our TMPDIR, which the app inherits).
fn wait_for_socket(pid: u32) {
    let prefix = format!("dotnet-diagnostic-{pid}-");
    let started = Instant::now();
    while started.elapsed() < WAIT {
        let found = std::fs::read_dir(std::env::temp_dir())
            .map(|d| d.filter_map(|e| e.ok()).any(|e| e.file_name().to_string_lossy().starts_with(&prefix)))
            .unwrap_or(false);
        if found {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("process {pid} made no diagnostics socket in {WAIT:?}");
}

// ---------------------------------------------------------------- reversestartup

/// The variables the app starts with; the tool overwrites the first and removes the second.
const START_ENV: [(&str, &str); 2] =
    [("ReverseServerTest_OverwriteMe", "Original"), ("ReverseServerTest_ClearMe", "Present")];
const CHANGES: [&str; 4] =
    ["--env", "ReverseServerTest_OverwriteMe=Overwritten", "--unset", "ReverseServerTest_ClearMe"];

/// What the app prints when its environment was changed, and when it was not.
const APP_CHANGED: &str = "ReverseServerTest_OverwriteMe=Overwritten\nReverseServerTest_ClearMe=(unset)\n";
const APP_UNCHANGED: &str = "ReverseServerTest_OverwriteMe=Original\nReverseServerTest_ClearMe=Present\n";

/// The profiler's facts when it was loaded at startup with the environment changed.
const STARTUP_FACTS: &[&str] = &[
    "Initialize",
    "ReverseServerTest_OverwriteMe = \"Overwritten\"",
    // HRESULT_FROM_WIN32(ERROR_ENVVAR_NOT_FOUND), as the runtime test expects
    "ReverseServerTest_ClearMe: 0x800700CB",
    // the C library's environment, which the runtime's does not write through to
    "libc: ReverseServerTest_OverwriteMe Some(\"Original\")",
    "libc: ReverseServerTest_ClearMe Some(\"Present\")",
    "compiled ConfReverseStartup.Program::Main",
    "saw System.Private.CoreLib load: true",
    "Shutdown",
];

/// `corprof-attach --startup <target…> --clsid … --profiler <lib> <more…>`.
fn startup_tool(target: &[&str], lib: &Path, more: &[&str]) -> Output {
    Command::new(attach_tool())
        .arg("--startup")
        .args(target)
        .args(["--clsid", CLSID, "--profiler"])
        .arg(lib)
        .args(more)
        .output()
        .expect("cannot run corprof-attach")
}

/// One run: the app's outcome, what the tool said, and the profiler's facts (`None`: it never
/// wrote them, so it never loaded).
struct Outcome {
    tool: Output,
    run: Run,
    facts: Option<Vec<String>>,
    pid: u32,
}

impl Outcome {
    fn describe(&self) -> String {
        format!(
            "corprof-attach: {:?}\n{}{}\n{}",
            self.tool.status.code(),
            text(&self.tool.stdout),
            text(&self.tool.stderr),
            self.run.describe()
        )
    }
}

/// The app started with `DOTNET_DiagnosticPorts=<socket>` and the tool listening there (it waits
/// `timeout_ms` for the runtime).
fn through_port(runtime: &'static str, test: &str, timeout_ms: &str) -> Outcome {
    let lib = library();
    let dir = TempDir::new("ipc", test);
    let socket = dir.file("port.sock");
    let out = TempFile::new(&format!("conformance-reversestartup-{test}"));
    let tool = {
        let (socket, lib) = (socket.clone(), lib.clone());
        let timeout_ms = timeout_ms.to_string();
        std::thread::spawn(move || {
            let mut more = CHANGES.to_vec();
            more.extend(["--timeout-ms", &timeout_ms]);
            startup_tool(&["--listen", socket.to_str().unwrap()], &lib, &more)
        })
    };
    let mut env = START_ENV.to_vec();
    env.extend([("DOTNET_DiagnosticPorts", socket.to_str().unwrap()), ("CORPROF_CONF_OUT", out.path())]);
    let child = start(&REVERSE_STARTUP, runtime, &[], &env);
    let pid = child.id();
    let run = finish_app(runtime, REVERSE_STARTUP.app, child);
    let tool = tool.join().expect("the tool's thread");
    let facts = out.read().map(|t| t.lines().map(str::to_string).collect());
    Outcome { tool, run, facts, pid }
}

/// The app started with `DOTNET_DefaultDiagnosticPortSuspend=1` (`suspend`) or not, and holding
/// until the test lets it go; the tool sends to its own socket, once per `changes` given: as soon
/// as the socket is there when the runtime pauses, else once the app's Main runs (the socket comes
/// before the runtime loads a startup profiler, so a command sent then could still make it).
fn through_own_socket(runtime: &'static str, test: &str, suspend: bool, changes: &[&[&str]]) -> (Vec<Output>, Outcome) {
    let lib = library();
    let dir = TempDir::new("ipc", test);
    let hold = dir.file("go");
    let out = TempFile::new(&format!("conformance-reversestartup-{test}"));
    let mut env = START_ENV.to_vec();
    env.push(("CORPROF_CONF_OUT", out.path()));
    if suspend {
        env.push(("DOTNET_DefaultDiagnosticPortSuspend", "1"));
    }
    let child = start(&REVERSE_STARTUP, runtime, &[hold.to_str().unwrap()], &env);
    let pid = child.id();
    wait_for_socket(pid);
    if !suspend {
        let ready = dir.file("go.ready");
        let started = Instant::now();
        while !ready.exists() {
            assert!(started.elapsed() < WAIT, "the app's Main did not run in {WAIT:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let tools: Vec<Output> =
        changes.iter().map(|more| startup_tool(&["--pid", &pid.to_string()], &lib, more)).collect();
    std::fs::write(&hold, "").unwrap();
    let run = finish_app(runtime, REVERSE_STARTUP.app, child);
    let facts = out.read().map(|t| t.lines().map(str::to_string).collect());
    let last = tools.last().expect("one tool run at least");
    let tool = Output { status: last.status, stdout: last.stdout.clone(), stderr: last.stderr.clone() };
    (tools, Outcome { tool, run, facts, pid })
}

/// `corprof-attach` loaded the profiler into process `pid`: exit 0 and its one line.
fn assert_started(o: &Outcome, lib: &Path) {
    let line = format!("corprof-attach: process {} resumed with {} loaded at startup\n", o.pid, lib.display());
    assert_eq!(
        (o.tool.status.code(), text(&o.tool.stdout), text(&o.tool.stderr)),
        (Some(0), line.as_str(), ""),
        "{}",
        o.describe()
    );
}

/// `src/tests/profiler/eventpipe/reverse_startup.cs` on 8.0.4: through a connect port (as the
/// runtime test does) and through the process's own paused socket, the profiler loads at startup
/// and reads the environment the tool set. A runtime that is not paused answers StartupProfiler
/// with S_OK all the same and loads nothing (SetEnvironmentVariable still applies).
#[test]
fn reversestartup_on_coreclr_8() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(REVERSE_STARTUP.name, "8", "");
    let lib = library();

    let port = through_port("8", "port_8", "30000");
    assert_started(&port, &lib);
    assert_eq!((port.run.code, port.run.stdout.as_str()), (Some(100), APP_CHANGED), "{}", port.describe());
    assert_eq!(
        port.facts.as_deref(),
        Some(&STARTUP_FACTS.iter().map(|l| l.to_string()).collect::<Vec<_>>()[..]),
        "{}",
        port.describe()
    );

    let (_, own) = through_own_socket("8", "own_8", true, &[&CHANGES]);
    assert_started(&own, &lib);
    assert_eq!((own.run.code, own.run.stdout.as_str()), (Some(100), APP_CHANGED), "{}", own.describe());
    assert_eq!(
        own.facts.as_deref(),
        Some(&STARTUP_FACTS.iter().map(|l| l.to_string()).collect::<Vec<_>>()[..]),
        "{}",
        own.describe()
    );

    let (_, late) = through_own_socket("8", "late_8", false, &[&CHANGES]);
    assert_started(&late, &lib);
    assert_eq!(
        (late.run.code, late.run.stdout.as_str(), late.facts.as_deref()),
        (Some(100), APP_CHANGED, None),
        "{}",
        late.describe()
    );
}

/// Diagnostic ports and StartupProfiler came with .NET 5: 3.1.23 never connects to the port and
/// never pauses (the app runs unprofiled with its environment as started), and its own socket
/// refuses the commands.
#[test]
fn reversestartup_on_coreclr_3() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(REVERSE_STARTUP.name, "3", "").not_applicable(
        "diagnostic ports and StartupProfiler came with .NET 5: 3.1.23 never connects to the port nor pauses, and its own socket answers SetEnvironmentVariable with CORDIAGIPC_E_UNKNOWN_COMMAND and StartupProfiler with CORDIAGIPC_E_BAD_ENCODING",
    );
    let port = through_port("3", "port_3", "3000");
    let socket = std::env::temp_dir().join(format!("corprof-ipc-{}-port_3", std::process::id())).join("port.sock");
    assert_eq!(
        (port.tool.status.code(), text(&port.tool.stdout), text(&port.tool.stderr)),
        (Some(1), "", format!("corprof-attach: no runtime connected to {} in time\n", socket.display()).as_str()),
        "{}",
        port.describe()
    );
    assert_eq!(
        (port.run.code, port.run.stdout.as_str(), port.facts.as_deref()),
        (Some(100), APP_UNCHANGED, None),
        "{}",
        port.describe()
    );

    let (tools, own) = through_own_socket("3", "own_3", true, &[&CHANGES, &[]]);
    let refusals: Vec<(Option<i32>, &str)> = tools.iter().map(|t| (t.status.code(), text(&t.stderr))).collect();
    assert_eq!(
        refusals,
        [
            (
                Some(1),
                "corprof-attach: the runtime refused SetEnvironmentVariable: CORDIAGIPC_E_UNKNOWN_COMMAND (0x80131385): \
                 The diagnostics server does not know this command.\n"
            ),
            (
                Some(1),
                "corprof-attach: the runtime refused StartupProfiler: CORDIAGIPC_E_BAD_ENCODING (0x80131384): \
                 The diagnostics server could not parse the message.\n"
            ),
        ],
        "{}",
        own.describe()
    );
    assert_eq!(
        (own.run.code, own.run.stdout.as_str(), own.facts.as_deref()),
        (Some(100), APP_UNCHANGED, None),
        "{}",
        own.describe()
    );
}

// ---------------------------------------------------------------- multiple

const MULTIPLE: Scenario = Scenario { name: "multiple", app: "ConfMultiple" };

/// How many copies of the profiler load at startup, and how many attach then.
const AT_STARTUP: usize = 4;
const ATTACHED: usize = 4;

/// Polls `done` every 10 ms for at most [`WAIT`]; on timeout kills the app and fails with `what`
/// and the profilers' log.
fn wait_until(child: &mut Child, log: &TempFile, what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        let ended = child.try_wait().ok().flatten();
        if ended.is_some() || started.elapsed() > WAIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no {what} ({ended:?} after {:?}); the profilers' log:\n{}",
                started.elapsed(),
                log.read().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `corprof-attach --pid <pid> --clsid <the conformance CLSID> --profiler <lib>`.
fn attach_multiple(pid: u32, lib: &Path) -> Output {
    Command::new(attach_tool())
        .args(["--pid", &pid.to_string(), "--clsid", CLSID, "--profiler"])
        .arg(lib)
        .args(["--timeout-ms", "10000"])
        .output()
        .expect("cannot run corprof-attach")
}

/// The profilers' log lines `p<n> <event>`, as each object's events in order, by object number.
fn by_object(log: &str) -> Vec<Vec<String>> {
    let mut objects: Vec<Vec<String>> = Vec::new();
    for line in log.lines() {
        let (object, event) = line.split_once(' ').unwrap_or_else(|| panic!("malformed line {line:?}"));
        let n: usize =
            object.strip_prefix('p').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("malformed line {line:?}"));
        if objects.len() < n {
            objects.resize(n, Vec::new());
        }
        objects[n - 1].push(event.to_string());
    }
    objects
}

/// The number of `event` lines in the log.
fn count(log: &TempFile, event: &str) -> usize {
    log.read().unwrap_or_default().lines().filter(|l| l.split_once(' ').is_some_and(|(_, e)| e == event)).count()
}

/// What `corprof-attach` answered: its exit status and stderr.
type Answer = (Option<i32>, String);

/// Runs the scenario: [`AT_STARTUP`] copies named in `CORECLR_NOTIFICATION_PROFILERS`,
/// [`ATTACHED`] attaches, the app's first exception, the wait for `detaches` detaches, one more
/// attach, the app's second exception, the wait for its detach. Returns what each attach answered
/// (exit status and stderr), the app's run and the log by object.
fn multiple(runtime: &'static str, test: &str, detaches: usize) -> (Vec<Answer>, Run, Vec<Vec<String>>) {
    let lib = library();
    let dir = TempDir::new("ipc", test);
    let log = TempFile::new(&format!("conformance-multiple-{test}"));
    let list: String = (0..AT_STARTUP).map(|_| format!("{}={{{CLSID}}};", lib.display())).collect();
    let env = [
        ("CORECLR_ENABLE_PROFILING", "1"),
        ("CORECLR_ENABLE_NOTIFICATION_PROFILERS", "1"),
        ("CORECLR_NOTIFICATION_PROFILERS", list.as_str()),
        ("CORPROF_CONF_OUT", log.path()),
    ];
    // Phase 3 only holds the app until the last detach is through.
    let mut child = start(&MULTIPLE, runtime, &[dir.0.to_str().unwrap(), "3"], &env);
    let ready = dir.file("ready");
    wait_until(&mut child, &log, "ready file", || std::fs::read_to_string(&ready).is_ok_and(|t| !t.is_empty()));
    let pid = child.id();

    let mut answers = Vec::new();
    let mut attach = || {
        let out = attach_multiple(pid, &lib);
        answers.push((out.status.code(), text(&out.stderr).to_string()));
    };
    for _ in 0..ATTACHED {
        attach();
    }
    std::fs::write(dir.file("go1"), "").unwrap();
    wait_until(&mut child, &log, "done1 file", || dir.file("done1").exists());
    wait_until(&mut child, &log, "detaches", || count(&log, "Drop") >= detaches);

    attach();
    std::fs::write(dir.file("go2"), "").unwrap();
    wait_until(&mut child, &log, "done2 file", || dir.file("done2").exists());
    wait_until(&mut child, &log, "the last detach", || count(&log, "Drop") > detaches);
    std::fs::write(dir.file("go3"), "").unwrap();
    let run = finish_app(runtime, MULTIPLE.app, child);
    let objects = by_object(&log.read().unwrap_or_default());
    (answers, run, objects)
}

/// What an object that sees the app's exception and detaches logs, after how it was loaded.
fn detaching(loaded: &[&str]) -> Vec<String> {
    let mut events: Vec<String> = loaded.iter().map(|e| e.to_string()).collect();
    events.extend(
        [
            "ExceptionThrown ConfMultiple.Trigger",
            "RequestProfilerDetach S_OK (0x00000000)",
            "ProfilerDetachSucceeded",
            "Drop",
        ]
        .map(String::from),
    );
    events
}

/// `src/tests/profiler/multiple/multiple.cs` on 8.0.4: four notification profilers at startup and
/// four attached, all detaching at the app's exception, then one more attached and detached.
#[test]
fn multiple_on_coreclr_8() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(MULTIPLE.name, "8", "");
    let (answers, run, objects) = multiple("8", "multiple_8", AT_STARTUP + ATTACHED);
    assert_eq!(answers, vec![(Some(0), String::new()); ATTACHED + 1], "{}", run.describe());
    assert_eq!((run.code, run.stdout.as_str()), (Some(100), "multiple scenario done\n"), "{}", run.describe());
    let mut expected = vec![detaching(&["LoadAsNotificationOnly", "Initialize"]); AT_STARTUP];
    expected.extend(vec![detaching(&["LoadAsNotificationOnly", "InitializeForAttach"]); ATTACHED + 1]);
    assert_eq!(objects, expected, "{}", run.describe());
}

/// Notification profilers came with .NET 7: 3.1.23 loads none at startup and takes one attached
/// profiler at a time (the others are refused); that one detaches, and the next attach after it
/// is taken and detaches too.
#[test]
fn multiple_on_coreclr_3() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(MULTIPLE.name, "3", "").not_applicable(
        "notification profilers came with .NET 7: 3.1.23 loads none at startup and refuses a second attached profiler (CORPROF_E_PROFILER_ALREADY_ACTIVE); attach, detach and attach again work",
    );
    let (answers, run, objects) = multiple("3", "multiple_3", 1);
    let refused = "corprof-attach: the runtime refused: CORPROF_E_PROFILER_ALREADY_ACTIVE (0x8013136A): \
                   Attach refused: a profiler is already loaded.\n";
    let mut expected = vec![(Some(0), String::new())];
    expected.extend(vec![(Some(1), refused.to_string()); ATTACHED - 1]);
    expected.push((Some(0), String::new()));
    assert_eq!(answers, expected, "{}", run.describe());
    assert_eq!((run.code, run.stdout.as_str()), (Some(100), "multiple scenario done\n"), "{}", run.describe());
    assert_eq!(objects, vec![detaching(&["InitializeForAttach"]); 2], "{}", run.describe());
}
