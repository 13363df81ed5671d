//! The differential oracle: the Rust callback logger (examples/callback-logger, built
//! on corprof's generated thunks) and a C logger generated from the header by
//! tests/oracle/gen_logger.py (independent of corprof-gen) run in ONE CoreCLR 8.0.4 process on
//! tests/oracle/apps/OracleApp, each writing `<tid> <CallbackName> <args…>` per call; the two
//! files' per-thread line sequences must be identical.
//!
//! Two arrangements:
//! - tee: the C logger is the main profiler and calls the same slot of the Rust logger's callback
//!   object with the same arguments after logging each call (`CORPROF_LOG_TEE`), so callbacks only
//!   a main profiler gets (heap walks, suspensions, cache searches) are compared too;
//! - notification: one logger is the main profiler, the other a notification profiler
//!   (`CORECLR_NOTIFICATION_PROFILERS`), each called by the runtime itself, both ways round.
//!
//! And the coverage: every callback of the header appears in some run, except those in
//! [`NEVER_RAISED`] (each with why CoreCLR 8 on Linux never raises it), which appear in none.
//!
//! Needs python3 and a C compiler (`cc`, or `$CC`), and `bash scripts/setup` for the app.

use crate::common::{
    RUN_TIMEOUT, Run, app_command, profile_dir, profiler_lib, repo_root, run_app_with_args, runtime_lock, workspace_bin,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const RUST_CLSID: &str = "5E2A7C41-93B8-4F0D-A6E1-3C8B0D7F2A19";
const C_CLSID: &str = "9B1E4D3A-6C2F-4E8B-A1D7-5F3C2B0E8D46";
const APP: &str = "tests/oracle/apps/OracleApp/bin/OracleApp.dll";

/// The callbacks CoreCLR 8.0.4 on Linux never raises, and why (the runs set every mask bit they
/// hang on). Every other callback of the header must appear in some run, and none of these in any;
/// examples/callback-logger/README.md lists them too.
const NEVER_RAISED: &[(&str, &str)] = &[
    (
        "FunctionUnloadStarted",
        "CoreCLR never calls it: code goes away only with its collectible assembly, which raises class, module and assembly unloads",
    ),
    ("JITFunctionPitched", "CoreCLR never pitches jitted code"),
    ("RemotingClientInvocationStarted", ".NET Remoting does not exist in .NET Core"),
    ("RemotingClientSendingMessage", ".NET Remoting does not exist in .NET Core"),
    ("RemotingClientReceivingReply", ".NET Remoting does not exist in .NET Core"),
    ("RemotingClientInvocationFinished", ".NET Remoting does not exist in .NET Core"),
    ("RemotingServerReceivingMessage", ".NET Remoting does not exist in .NET Core"),
    ("RemotingServerInvocationStarted", ".NET Remoting does not exist in .NET Core"),
    ("RemotingServerInvocationReturned", ".NET Remoting does not exist in .NET Core"),
    ("RemotingServerSendingReply", ".NET Remoting does not exist in .NET Core"),
    (
        "RuntimeSuspendAborted",
        "CoreCLR's runtime suspension keeps retrying until every thread is stopped; no suspension is aborted",
    ),
    ("ExceptionOSHandlerEnter", "documented as not implemented (the parameter is named __unused)"),
    ("ExceptionOSHandlerLeave", "documented as not implemented (the parameter is named __unused)"),
    ("COMClassicVTableCreated", "classic COM interop (COM-callable wrappers) exists only on Windows"),
    ("COMClassicVTableDestroyed", "classic COM interop (COM-callable wrappers) exists only on Windows"),
    ("ExceptionCLRCatcherFound", "obsolete since .NET Framework 2.0; the runtime never calls it"),
    ("ExceptionCLRCatcherExecute", "obsolete since .NET Framework 2.0; the runtime never calls it"),
    ("AppDomainShutdownStarted", "CoreCLR has one AppDomain, never unloaded, not even at exit"),
    ("AppDomainShutdownFinished", "CoreCLR has one AppDomain, never unloaded, not even at exit"),
    (
        "GetAssemblyReferences",
        "came with the .NET Framework binder; CoreCLR's binder does not ask, even with COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES set",
    ),
    (
        "ModuleInMemorySymbolsUpdated",
        "raised when Reflection.Emit updates the symbols of an in-memory module; CoreCLR's Reflection.Emit writes no symbols",
    ),
];

// COR_PRF_MONITOR bits (corprof.h).
const FUNCTION_UNLOADS: u32 = 0x1;
const CLASS_LOADS: u32 = 0x2;
const MODULE_LOADS: u32 = 0x4;
const ASSEMBLY_LOADS: u32 = 0x8;
const APPDOMAIN_LOADS: u32 = 0x10;
const JIT_COMPILATION: u32 = 0x20;
const EXCEPTIONS: u32 = 0x40;
const GC: u32 = 0x80;
const OBJECT_ALLOCATED: u32 = 0x100;
const THREADS: u32 = 0x200;
const REMOTING: u32 = 0x400;
const CODE_TRANSITIONS: u32 = 0x800;
const CCW: u32 = 0x2000;
const REMOTING_COOKIE: u32 = 0x4000;
const REMOTING_ASYNC: u32 = 0x8000;
const SUSPENDS: u32 = 0x10000;
const CACHE_SEARCHES: u32 = 0x20000;
const ENABLE_REJIT: u32 = 0x40000;
const ENABLE_OBJECT_ALLOCATED: u32 = 0x800000;
const CLR_EXCEPTIONS: u32 = 0x1000000;
// COR_PRF_HIGH_MONITOR bits.
const HIGH_ADD_ASSEMBLY_REFERENCES: u32 = 0x1;
const HIGH_IN_MEMORY_SYMBOLS_UPDATED: u32 = 0x2;
const HIGH_DYNAMIC_FUNCTION_UNLOADS: u32 = 0x4;
const HIGH_BASIC_GC: u32 = 0x10;
const HIGH_GC_MOVED_OBJECTS: u32 = 0x20;
const HIGH_EVENT_PIPE: u32 = 0x80;

/// What a notification profiler may ask for too (8.0.4 refuses GC, SUSPENDS and CACHE_SEARCHES).
const SHARED_LOW: u32 = FUNCTION_UNLOADS
    | CLASS_LOADS
    | MODULE_LOADS
    | ASSEMBLY_LOADS
    | APPDOMAIN_LOADS
    | JIT_COMPILATION
    | EXCEPTIONS
    | THREADS
    | CODE_TRANSITIONS
    | CLR_EXCEPTIONS;
const SHARED_HIGH: u32 = HIGH_IN_MEMORY_SYMBOLS_UPDATED | HIGH_DYNAMIC_FUNCTION_UNLOADS | HIGH_EVENT_PIPE;

/// One way of loading the two loggers into the app's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arrangement {
    /// The C logger is the main profiler and calls the Rust logger's slots itself.
    Tee,
    /// The C logger is the main profiler, the Rust one a notification profiler.
    CMainRustNotified,
    /// The Rust logger is the main profiler, the C one a notification profiler.
    RustMainCNotified,
    /// As [`Arrangement::Tee`], but the C logger is attached to the running app (corprof-attach)
    /// instead of loaded at startup.
    TeeAttached,
}

#[derive(Clone, Copy)]
struct Config {
    name: &'static str,
    arrangement: Arrangement,
    low: u32,
    high: u32,
    /// The app's arguments: `rejit` and `detach` have the C logger request those.
    args: &'static [&'static str],
    /// More settings for the loggers.
    env: &'static [(&'static str, &'static str)],
}

/// Everything a main profiler can see without the callbacks that turn off ReadyToRun code (and
/// with it the cache searches): heap walks, suspensions, cache searches, and the remoting, COM
/// and CLR-exception bits whose callbacks never come.
const TEE_ALL: Config = Config {
    name: "tee-all",
    arrangement: Arrangement::Tee,
    low: (SHARED_LOW & !CODE_TRANSITIONS)
        | GC
        | SUSPENDS
        | CACHE_SEARCHES
        | REMOTING
        | REMOTING_COOKIE
        | REMOTING_ASYNC
        | CCW,
    high: SHARED_HIGH | HIGH_ADD_ASSEMBLY_REFERENCES | HIGH_GC_MOVED_OBJECTS,
    args: &[],
    // The C logger's EventPipe session: the app's EventSource events reach both loggers through
    // EventPipeEventDelivered.
    env: &[("CORPROF_LOG_EVENTPIPE", "Oracle-Events")],
};

/// What turns ReadyToRun code off: every allocation (ObjectAllocated) and the managed/unmanaged
/// transitions, with the heap walks.
const TEE_ALLOCATIONS: Config = Config {
    name: "tee-allocations-transitions",
    arrangement: Arrangement::Tee,
    low: CLASS_LOADS | GC | OBJECT_ALLOCATED | ENABLE_OBJECT_ALLOCATED | THREADS | CODE_TRANSITIONS,
    high: 0,
    args: &[],
    env: &[],
};

/// The C logger requests a ReJIT of one method and of a token that is no method (the app finds
/// the method's module through the P/Invoke's ManagedToUnmanagedTransition, hence
/// CODE_TRANSITIONS).
const TEE_REJIT: Config = Config {
    name: "tee-rejit",
    arrangement: Arrangement::Tee,
    low: JIT_COMPILATION | CODE_TRANSITIONS | ENABLE_REJIT | SUSPENDS | THREADS,
    high: 0,
    args: &["rejit"],
    env: &[],
};

/// The C logger attached to the running app, with client data; the mask is what the runtime
/// allows after attach.
const TEE_ATTACH: Config = Config {
    name: "tee-attach",
    arrangement: Arrangement::TeeAttached,
    low: THREADS
        | MODULE_LOADS
        | ASSEMBLY_LOADS
        | APPDOMAIN_LOADS
        | GC
        | SUSPENDS
        | CLASS_LOADS
        | EXCEPTIONS
        | JIT_COMPILATION,
    high: 0,
    args: &["attach"],
    env: &[],
};

/// The C logger asks to detach: no flag the runtime calls immutable may be set.
const TEE_DETACH: Config = Config {
    name: "tee-detach",
    arrangement: Arrangement::Tee,
    low: JIT_COMPILATION | EXCEPTIONS | THREADS | SUSPENDS | CLASS_LOADS,
    high: 0,
    args: &["detach"],
    env: &[],
};

const NOTIFIED_RUST: Config = Config {
    name: "c-main-rust-notified",
    arrangement: Arrangement::CMainRustNotified,
    low: SHARED_LOW,
    high: SHARED_HIGH | HIGH_BASIC_GC,
    args: &[],
    env: &[],
};

const NOTIFIED_C: Config = Config {
    name: "rust-main-c-notified",
    arrangement: Arrangement::RustMainCNotified,
    low: SHARED_LOW,
    high: SHARED_HIGH | HIGH_BASIC_GC,
    args: &[],
    env: &[],
};

const ALL_CONFIGS: [Config; 7] =
    [TEE_ALL, TEE_ALLOCATIONS, TEE_REJIT, TEE_DETACH, TEE_ATTACH, NOTIFIED_RUST, NOTIFIED_C];

/// The two loggers' files of one run.
struct Logs {
    c: String,
    rust: String,
}

/// The folders of `CORPROF_INCLUDE_DIR` (the headers corprof was built from).
fn include_dirs() -> Vec<PathBuf> {
    let value = std::env::var_os("CORPROF_INCLUDE_DIR")
        .expect("CORPROF_INCLUDE_DIR must name the header folder the crate was built from");
    std::env::split_paths(&value).map(|d| if d.is_absolute() { d } else { repo_root().join(d) }).collect()
}

/// `corprof.h` from the include folders, and `corprof.idl` beside it or in a sibling header
/// folder (the net8 header set ships no IDL; the callbacks' `size_is` counts have not changed).
fn header_and_idl() -> (PathBuf, PathBuf) {
    let dirs = include_dirs();
    let header = dirs
        .iter()
        .map(|d| d.join("corprof.h"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no corprof.h in CORPROF_INCLUDE_DIR ({dirs:?})"));
    let beside = dirs.iter().map(|d| d.join("corprof.idl"));
    let siblings = dirs.iter().filter_map(|d| d.parent()).flat_map(|parent| {
        let mut found: Vec<PathBuf> =
            std::fs::read_dir(parent).into_iter().flatten().flatten().map(|e| e.path().join("corprof.idl")).collect();
        found.sort();
        found
    });
    let idl = beside.chain(siblings).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "no corprof.idl beside the header or in a sibling of the folders {dirs:?}: gen_logger.py needs its counts"
        )
    });
    (header, idl)
}

/// The C logger: generated by gen_logger.py and compiled into `target/<profile>/oracle/`, once per
/// test process.
fn c_logger() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = profile_dir().join("oracle");
        std::fs::create_dir_all(&out).expect("cannot create the oracle build folder");
        let (header, idl) = header_and_idl();
        let script = repo_root().join("tests/oracle/gen_logger.py");
        let generated = Command::new("python3")
            .arg(&script)
            .arg(&header)
            .arg(&idl)
            .output()
            .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
        assert!(
            generated.status.success(),
            "gen_logger.py failed ({}):\n{}",
            generated.status,
            String::from_utf8_lossy(&generated.stderr)
        );
        let source = out.join("logger.c");
        std::fs::write(&source, &generated.stdout).expect("cannot write logger.c");
        let lib = out.join("libcorprof_oracle_c.so");
        // Built beside and renamed into place: another test process may have the old one loaded.
        let fresh = out.join(format!("libcorprof_oracle_c.so.{}", std::process::id()));
        let cc = std::env::var("CC").ok().filter(|cc| !cc.is_empty()).unwrap_or_else(|| "cc".to_string());
        let built = Command::new(&cc)
            .args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o"])
            .arg(&fresh)
            .arg(&source)
            .args(["-ldl", "-lpthread"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` (install gcc or set CC): {e}"));
        assert!(
            built.status.success(),
            "compiling {} failed ({}):\n{}",
            source.display(),
            built.status,
            String::from_utf8_lossy(&built.stderr)
        );
        std::fs::rename(&fresh, &lib).expect("cannot move the C logger into place");
        lib
    })
}

/// The callbacks the generated C logger implements, in slot order (its `cb_<Name>` functions).
fn c_logger_callbacks() -> Vec<String> {
    c_logger();
    let source = std::fs::read_to_string(profile_dir().join("oracle/logger.c")).expect("cannot read logger.c");
    source
        .lines()
        .filter_map(|l| l.strip_prefix("static HRESULT cb_"))
        .filter_map(|l| l.split_once('(').map(|(name, _)| name.to_string()))
        .filter(|name| !["QueryInterface"].contains(&name.as_str()))
        .collect()
}

/// Runs the app with both loggers as `config` arranges them; memoized per configuration, since
/// the coverage test reads every run.
fn logs(config: &Config) -> &'static Logs {
    static RUNS: Mutex<BTreeMap<&'static str, &'static OnceLock<Logs>>> = Mutex::new(BTreeMap::new());
    let cell: &'static OnceLock<Logs> = RUNS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(config.name)
        .or_insert_with(|| Box::leak(Box::new(OnceLock::new())));
    cell.get_or_init(|| run(config))
}

fn run(config: &Config) -> Logs {
    let c_lib = c_logger().to_str().expect("path is not UTF-8").to_string();
    let rust_lib = profiler_lib("callback_logger").to_str().expect("path is not UTF-8").to_string();
    // The logs stay in target/<profile>/oracle/ for a look after a failure.
    let dir = c_logger().parent().expect("the oracle folder").to_path_buf();
    let c_out = dir.join(format!("{}.c.log", config.name));
    let rust_out = dir.join(format!("{}.rust.log", config.name));
    for file in [&c_out, &rust_out] {
        let _ = std::fs::remove_file(file);
    }
    let low = format!("{:#x}", config.low);
    let high = format!("{:#x}", config.high);
    let mut env: Vec<(&str, String)> = vec![
        ("CORECLR_ENABLE_PROFILING", "1".into()),
        ("CORPROF_LOG_C_OUT", c_out.to_str().expect("not UTF-8").into()),
        ("CORPROF_LOG_OUT", rust_out.to_str().expect("not UTF-8").into()),
        ("CORPROF_EVENT_MASK", low),
        ("CORPROF_EVENT_MASK_HIGH", high),
        // The app's P/Invokes into the C logger (rejit, detach) find its library here.
        ("LD_LIBRARY_PATH", c_logger().parent().expect("the oracle folder").to_str().expect("not UTF-8").into()),
    ];
    env.extend(config.env.iter().map(|(k, v)| (*k, v.to_string())));
    let main = |clsid: &str, lib: &str| {
        vec![("CORECLR_PROFILER", format!("{{{clsid}}}")), ("CORECLR_PROFILER_PATH", lib.to_string())]
    };
    let notified = |clsid: &str, lib: &str| {
        vec![
            ("CORECLR_ENABLE_NOTIFICATION_PROFILERS", "1".to_string()),
            ("CORECLR_NOTIFICATION_PROFILERS", format!("{lib}={{{clsid}}}")),
        ]
    };
    match config.arrangement {
        Arrangement::Tee => {
            env.extend(main(C_CLSID, &c_lib));
            env.push(("CORPROF_LOG_TEE", format!("{rust_lib}{{{RUST_CLSID}}}")));
        }
        Arrangement::TeeAttached => {
            env.push(("CORPROF_LOG_TEE", format!("{rust_lib}{{{RUST_CLSID}}}")));
        }
        Arrangement::CMainRustNotified => {
            env.extend(main(C_CLSID, &c_lib));
            env.extend(notified(RUST_CLSID, &rust_lib));
            env.push(("CORPROF_LOG_NOTIFICATION", "1".into()));
            env.push(("CORPROF_LOG_C_NOTIFICATION", "0".into()));
        }
        Arrangement::RustMainCNotified => {
            env.extend(main(RUST_CLSID, &rust_lib));
            env.extend(notified(C_CLSID, &c_lib));
            env.push(("CORPROF_LOG_C_NOTIFICATION", "1".into()));
        }
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let app = match config.arrangement {
        Arrangement::TeeAttached => run_attached(config.args, &env),
        _ => run_app_with_args("8", APP, config.args, &env),
    };
    assert_eq!(app.code, Some(100), "{}: the app failed (timeout {RUN_TIMEOUT:?}): {}", config.name, app.describe());
    let read = |file: &Path, who: &str| {
        std::fs::read_to_string(file).unwrap_or_else(|e| {
            panic!("{}: the {who} logger wrote no {} ({e}): {}", config.name, file.display(), app.describe())
        })
    };
    Logs { c: read(&c_out, "C"), rust: read(&rust_out, "Rust") }
}

/// Runs the app with no profiler at launch, and attaches the C logger (corprof-attach, with client
/// data) once the app says it waits for it.
fn run_attached(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = app_command("8", APP, args, env);
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start scripts/dotnet-run: {e}"));
    let pid = child.id();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().expect("no stdout pipe");
    let stdout = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stdout).lines().map_while(std::result::Result::ok) {
            let _ = lines_tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut stderr_pipe = child.stderr.take().expect("no stderr pipe");
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + RUN_TIMEOUT;
    let mut attached = None;
    while Instant::now() < deadline {
        match lines_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line == "waiting for attach" => {
                let tool = workspace_bin("corprof-attach");
                let out = Command::new(tool)
                    .args(["--pid", &pid.to_string(), "--clsid", &format!("{{{C_CLSID}}}"), "--profiler"])
                    .arg(c_logger())
                    .args(["--data", "oracle \"client\" data", "--timeout-ms", "10000"])
                    .output()
                    .expect("cannot run corprof-attach");
                attached = Some(out);
                break;
            }
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = loop {
        if let Some(status) = child.try_wait().expect("cannot wait for the app") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the attached app did not finish in {RUN_TIMEOUT:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let run = Run { runtime: "8", code: status.code(), stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() };
    let attached = attached.unwrap_or_else(|| panic!("the app never waited for an attach: {}", run.describe()));
    assert!(
        attached.status.success(),
        "corprof-attach failed ({}): {}{}\n{}",
        attached.status,
        String::from_utf8_lossy(&attached.stdout),
        String::from_utf8_lossy(&attached.stderr),
        run.describe()
    );
    run
}

/// Lines grouped by thread ID, each thread's in file order.
fn per_thread(text: &str) -> BTreeMap<&str, Vec<&str>> {
    let mut threads: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in text.lines() {
        let (tid, _) = line.split_once(' ').unwrap_or_else(|| panic!("malformed line {line:?}"));
        threads.entry(tid).or_default().push(line);
    }
    threads
}

/// The name of each line's callback.
fn callback_names(text: &str) -> BTreeSet<&str> {
    text.lines().filter_map(|l| l.split(' ').nth(1)).collect()
}

/// Both files hold the same lines thread by thread; the message shows the first difference.
fn assert_same_per_thread(config: &Config) {
    let logs = logs(config);
    let (c, rust) = (per_thread(&logs.c), per_thread(&logs.rust));
    assert!(
        c.values().map(Vec::len).sum::<usize>() > 100,
        "{}: the C logger saw almost nothing:\n{}",
        config.name,
        logs.c
    );
    let c_threads: BTreeSet<_> = c.keys().collect();
    let rust_threads: BTreeSet<_> = rust.keys().collect();
    let mut problems = Vec::new();
    if c_threads != rust_threads {
        problems.push(format!("threads differ: C {c_threads:?}, Rust {rust_threads:?}"));
    }
    for (tid, c_lines) in &c {
        let rust_lines = rust.get(tid).map(Vec::as_slice).unwrap_or_default();
        let Some(at) = (0..c_lines.len().max(rust_lines.len())).find(|&i| c_lines.get(i) != rust_lines.get(i)) else {
            continue;
        };
        let window = |lines: &[&str]| lines[at.saturating_sub(3)..(at + 3).min(lines.len())].join("\n    ");
        problems.push(format!(
            "thread {tid}, line {at} of {} (C) / {} (Rust):\n  C:\n    {}\n  Rust:\n    {}",
            c_lines.len(),
            rust_lines.len(),
            window(c_lines),
            window(rust_lines)
        ));
    }
    assert!(problems.is_empty(), "{}: the Rust and C loggers differ:\n{}", config.name, problems.join("\n"));
}

#[test]
fn oracle_tee_all_callbacks_match_line_for_line() {
    let _runtime = runtime_lock();
    assert_same_per_thread(&TEE_ALL);
}

#[test]
fn oracle_tee_allocations_and_transitions_match_line_for_line() {
    let _runtime = runtime_lock();
    assert_same_per_thread(&TEE_ALLOCATIONS);
}

#[test]
fn oracle_tee_rejit_matches_line_for_line() {
    let _runtime = runtime_lock();
    assert_same_per_thread(&TEE_REJIT);
}

#[test]
fn oracle_tee_attach_matches_line_for_line() {
    let _runtime = runtime_lock();
    assert_same_per_thread(&TEE_ATTACH);
}

#[test]
fn oracle_tee_detach_matches_line_for_line() {
    let _runtime = runtime_lock();
    assert_same_per_thread(&TEE_DETACH);
}

#[test]
fn oracle_c_main_rust_notification_match_per_thread() {
    let _runtime = runtime_lock();
    assert_same_per_thread(&NOTIFIED_RUST);
}

#[test]
fn oracle_rust_main_c_notification_match_per_thread() {
    let _runtime = runtime_lock();
    assert_same_per_thread(&NOTIFIED_C);
}

/// Every callback of the header is raised in some run except the [`NEVER_RAISED`] ones, which are
/// raised in none; the C logger (generated from the header) has a slot for every callback corprof
/// knows, in the same order.
#[test]
fn oracle_every_raisable_callback_is_raised() {
    let _runtime = runtime_lock();
    let header: Vec<&str> = corprof::Callback::ALL.iter().map(|c| c.name()).collect();
    let c_slots = c_logger_callbacks();
    assert_eq!(
        c_slots.iter().map(String::as_str).collect::<Vec<_>>(),
        header,
        "the C logger's callback slots and corprof's callbacks differ"
    );
    let never: BTreeMap<&str, &str> = NEVER_RAISED.iter().copied().collect();
    assert_eq!(never.len(), NEVER_RAISED.len(), "a callback is listed twice in NEVER_RAISED");
    for name in never.keys() {
        assert!(header.contains(name), "NEVER_RAISED lists {name}, which is not a callback of the header");
    }
    let mut seen: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for config in &ALL_CONFIGS {
        let logs = logs(config);
        for name in callback_names(&logs.c).into_iter().chain(callback_names(&logs.rust)) {
            seen.entry(name).or_default().insert(config.name);
        }
    }
    let raised_but_never: Vec<String> =
        never.keys().filter_map(|n| seen.get(n).map(|runs| format!("{n} (in {runs:?})"))).collect();
    assert!(raised_but_never.is_empty(), "raised although listed as never raised: {raised_but_never:?}");
    let missing: Vec<&str> =
        header.iter().copied().filter(|n| !never.contains_key(n) && !seen.contains_key(n)).collect();
    assert!(missing.is_empty(), "never raised in any run (and not in NEVER_RAISED): {missing:?}");
    let readme = std::fs::read_to_string(repo_root().join("examples/callback-logger/README.md"))
        .expect("cannot read examples/callback-logger/README.md");
    for name in never.keys() {
        assert!(readme.contains(&format!("`{name}`")), "examples/callback-logger/README.md does not list {name}");
    }
}
