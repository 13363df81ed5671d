//! Conformance scenarios driven through the runtime's diagnostics IPC (`corprof-attach`): a
//! profiler loaded at startup through a diagnostic port (`reversestartup`). Like
//! tests/conformance.rs, each scenario is a folder `tests/conformance/<scenario>/` (a profiler
//! crate and its C# app) and each test records its row in `target/conformance/`; here the test
//! starts the app itself, since the tool must talk to it while it runs. `cargo build --workspace`
//! must have built `corprof-attach` and the profilers first.

mod common;

use common::conformance::Scenario;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

const REVERSE_STARTUP: Scenario =
    Scenario { name: "reversestartup", app: "ConfReverseStartup", clsid: "6A0F3C21-4B7E-4D9A-8E15-2C3B4A5D6E21" };

/// How long the tool waits for the runtime, and the test for the app's socket.
const WAIT: Duration = Duration::from_secs(30);

/// A per-test directory (the port's socket, the app's hold file), removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("corprof-ipc-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cannot create the test directory");
        TempDir(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The built `corprof-attach` binary.
fn attach_tool() -> PathBuf {
    let tool = profile_dir().join("corprof-attach");
    assert!(tool.exists(), "{} is missing: run `cargo build --workspace` first", tool.display());
    tool
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("corprof-attach printed non-UTF-8")
}

/// The app of a scenario, started with `env` (and `args`), not waited for.
fn start(scenario: &Scenario, runtime: &'static str, args: &[&str], env: &[(&str, &str)]) -> Child {
    let app = repo_root().join(format!("tests/conformance/{}/bin/{}.dll", scenario.name, scenario.app));
    app_command(runtime, app.to_str().expect("UTF-8 path"), args, env)
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
        .args(["--clsid", REVERSE_STARTUP.clsid, "--profiler"])
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
    let lib = profiler_lib("conformance_reversestartup");
    let dir = TempDir::new(test);
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
    let lib = profiler_lib("conformance_reversestartup");
    let dir = TempDir::new(test);
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
    let _row = ConformanceRow::new(REVERSE_STARTUP.name, "8", "");
    let lib = profiler_lib("conformance_reversestartup");

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
