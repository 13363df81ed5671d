//! End-to-end tests: the example profilers loaded into real CoreCLR runtimes (8.0.4 and 3.1.23)
//! running the `tests/apps/Workload` app.
//!
//! Needs `scripts/setup` (runtimes and the app); the harness builds the profilers. Every test runs
//! the app once (well under a second) with its own output file.

use crate::common::*;
use corprof::HResult;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// `examples/callback-counter`.
const COUNTER_CLSID: &str = "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11";
const COUNTER_LIB: &str = "callback_counter";
/// `examples/panicking-profiler`.
const PANICKY_CLSID: &str = "A3ACAAE4-6124-487E-9CF5-68F88E605DFA";
const PANICKY_LIB: &str = "panicking_profiler";

/// The callbacks panicking-profiler panics in that the workload triggers on both runtimes, with
/// a fragment of the message corprof must log for each (`None`: a non-string payload).
const PANICKY_CALLBACKS: &[(&str, Option<&str>)] = &[
    ("JITCompilationStarted", Some("JITCompilationStarted always panics in this profiler")),
    ("JITInlining", Some("JITInlining panics before writing pfShouldInline")),
    ("ClassLoadFinished", Some(" finished loading with ")),
    ("ModuleLoadFinished", Some("index out of bounds")),
    ("AssemblyLoadFinished", Some("attempt to divide by zero")),
    ("ThreadCreated", None),
    ("ExceptionThrown", None),
    ("ExceptionCatcherEnter", Some("called `Result::unwrap()` on an `Err` value")),
    ("GarbageCollectionStarted", Some("resumed an unwind")),
    ("ObjectReferences", Some("ObjectReferences: object with ")),
];

const NON_STRING_PAYLOAD: &str = "(non-string panic payload)";

/// The Workload app's own deterministic counts (see tests/apps/Workload/README.md).
const WORKLOAD_EXCEPTIONS: u64 = 5;
const WORKLOAD_GCS: u64 = 3;
const WORKLOAD_THREADS: u64 = 4;

/// ICorProfilerCallback11's one method as the header spells it: `LoadAsNotficationOnly` before
/// .NET 8's header fixed the typo (`Callback::name()` keeps the header's spelling).
fn load_as_notification_only() -> &'static str {
    let fixed = "LoadAsNotificationOnly";
    if corprof::Callback::ALL.iter().any(|c| c.name() == fixed) { fixed } else { "LoadAsNotficationOnly" }
}

fn count(counts: &BTreeMap<String, u64>, name: &str) -> u64 {
    assert_callback_name(name, "the test itself");
    counts.get(name).copied().unwrap_or(0)
}

/// Runs the Workload app under one of the example profilers, which writes `<Callback> <count>`
/// lines at Shutdown to the file named by `var`; the app must finish normally.
fn run_workload_counting(
    runtime: &'static str,
    test: &str,
    (lib, clsid): (&str, &str),
    var: &'static str,
    extra: &[(&'static str, &str)],
) -> (Run, BTreeMap<String, u64>) {
    let lib = profiler_lib(lib);
    let out = TempFile::new(test);
    let mut env = vec![(var, out.path())];
    env.extend_from_slice(extra);
    let run = run_profiled(runtime, "Workload", clsid, &lib, &env);
    run.assert_workload_done();
    let text = out.read().unwrap_or_else(|| panic!("no {var} file written: {}", run.describe()));
    let counts = parse_counts(&text, var);
    (run, counts)
}

// ---------------------------------------------------------------------------------------------
// callback-counter with its default mask: the runtime calls what the workload does.

fn counter(runtime: &'static str, test: &str) {
    let (_, counts) = run_workload_counting(runtime, test, (COUNTER_LIB, COUNTER_CLSID), "CORPROF_COUNTS_OUT", &[]);
    let c = |name| count(&counts, name);
    let ctx = format!("CoreCLR {runtime} counts: {counts:?}");

    for (name, expected) in [
        ("Initialize", 1),
        ("Shutdown", 1),
        ("ExceptionThrown", WORKLOAD_EXCEPTIONS),
        ("ExceptionCatcherEnter", WORKLOAD_EXCEPTIONS),
        ("GarbageCollectionStarted", WORKLOAD_GCS),
        ("GarbageCollectionFinished", WORKLOAD_GCS),
    ] {
        assert_eq!(c(name), expected, "{name}; {ctx}");
    }
    assert_eq!(c("ModuleLoadStarted"), c("ModuleLoadFinished"), "{ctx}");
    assert!(c("ModuleLoadFinished") >= 5, "{ctx}");
    assert_eq!(c("AssemblyLoadFinished"), c("ModuleLoadFinished"), "{ctx}");
    assert_eq!(c("ClassLoadStarted"), c("ClassLoadFinished"), "{ctx}");
    assert!(c("ClassLoadFinished") > 100, "{ctx}");
    assert_eq!(c("JITCompilationStarted"), c("JITCompilationFinished"), "{ctx}");
    assert!(c("JITCompilationStarted") >= 50, "{ctx}");
    assert!(c("ThreadCreated") >= WORKLOAD_THREADS, "{ctx}");
    match runtime {
        // ICorProfilerCallback11 exists only on 8: the runtime found it through QueryInterface.
        "8" => assert_eq!(c(load_as_notification_only()), 1, "{ctx}"),
        _ => assert!(!counts.contains_key(load_as_notification_only()), "{ctx}"),
    }
}

#[test]
fn counter_on_coreclr_8() {
    let _runtime = runtime_lock();
    counter("8", "counter_on_coreclr_8");
}

#[test]
fn counter_on_coreclr_3() {
    let _runtime = runtime_lock();
    counter("3", "counter_on_coreclr_3");
}

// ---------------------------------------------------------------------------------------------
// callback-counter with CORPROF_EVENT_MASK=0x20 (COR_PRF_MONITOR_JIT_COMPILATION only).

fn event_mask(runtime: &'static str, test: &str) {
    let (_, counts) = run_workload_counting(
        runtime,
        test,
        (COUNTER_LIB, COUNTER_CLSID),
        "CORPROF_COUNTS_OUT",
        &[("CORPROF_EVENT_MASK", "0x20")],
    );
    let ctx = format!("CoreCLR {runtime} counts with mask 0x20: {counts:?}");

    assert_eq!(count(&counts, "Initialize"), 1, "{ctx}");
    assert_eq!(count(&counts, "Shutdown"), 1, "{ctx}");
    assert!(count(&counts, "JITCompilationStarted") >= 50, "{ctx}");
    for absent in ["ClassLoadStarted", "ExceptionThrown"] {
        assert_eq!(count(&counts, absent), 0, "{absent}; {ctx}");
    }
    // Nothing but JIT callbacks (and those the runtime makes whatever the mask).
    let allowed = [
        "Initialize",
        "Shutdown",
        "JITCompilationStarted",
        "JITCompilationFinished",
        "JITCachedFunctionSearchStarted",
        "JITCachedFunctionSearchFinished",
        "JITFunctionPitched",
        "JITInlining",
        "DynamicMethodJITCompilationStarted",
        "DynamicMethodJITCompilationFinished",
        load_as_notification_only(),
    ];
    for name in allowed {
        assert_callback_name(name, "the allowed list");
    }
    for name in counts.keys() {
        assert!(allowed.contains(&name.as_str()), "{name} fired; {ctx}");
    }
}

#[test]
fn event_mask_on_coreclr_8() {
    let _runtime = runtime_lock();
    event_mask("8", "event_mask_on_coreclr_8");
}

#[test]
fn event_mask_on_coreclr_3() {
    let _runtime = runtime_lock();
    event_mask("3", "event_mask_on_coreclr_3");
}

// ---------------------------------------------------------------------------------------------
// panicking-profiler: every panic is caught, logged once, and the app does not notice.

fn panicking(runtime: &'static str, test: &str) {
    let (run, raised) = run_workload_counting(runtime, test, (PANICKY_LIB, PANICKY_CLSID), "CORPROF_PANICS_OUT", &[]);
    let logged = run.panic_lines();
    let ctx = format!("CoreCLR {runtime} panics raised: {raised:?}; logged: {logged:?}");

    // One log line per panic raised, per callback, and none for anything else.
    assert_eq!(logged, raised, "{ctx}\n{}", run.describe());
    for (name, fragment) in PANICKY_CALLBACKS {
        assert!(count(&raised, name) > 0, "{name} never panicked; {ctx}");
        let prefix = format!("{PANIC_LINE_PREFIX}{name} panicked: ");
        for line in run.stderr.lines().filter(|l| l.starts_with(&prefix)) {
            let msg = &line[prefix.len()..line.len() - PANIC_LINE_SUFFIX.len()];
            match fragment {
                Some(fragment) => assert!(msg.contains(fragment), "{line:?}; {ctx}"),
                None => assert_eq!(msg, NON_STRING_PAYLOAD, "{line:?}; {ctx}"),
            }
        }
    }
    for name in raised.keys() {
        assert!(
            PANICKY_CALLBACKS.iter().any(|(n, _)| n == name),
            "{name} panicked but is not listed in PANICKY_CALLBACKS; {ctx}"
        );
    }
    // The runtime goes on calling a callback that failed...
    assert_eq!(count(&raised, "ExceptionThrown"), WORKLOAD_EXCEPTIONS, "{ctx}");
    assert_eq!(count(&raised, "ExceptionCatcherEnter"), WORKLOAD_EXCEPTIONS, "{ctx}");
    assert_eq!(count(&raised, "GarbageCollectionStarted"), WORKLOAD_GCS, "{ctx}");
    assert!(count(&raised, "JITCompilationStarted") >= 50, "{ctx}");
    assert!(count(&raised, "ClassLoadFinished") > 100, "{ctx}");
    // ...except in a heap walk: E_FAIL from ObjectReferences ends the walk of that GC, so it
    // fails exactly once per GC (the counter sees hundreds of calls).
    assert_eq!(count(&raised, "ObjectReferences"), WORKLOAD_GCS, "{ctx}");
    // ThreadCreated's payload panics again when corprof drops it; that is contained too.
    assert!(
        run.stderr.contains("DropBomb: the panic payload panicked while being dropped"),
        "the DropBomb payload was never dropped; {ctx}"
    );
}

#[test]
fn panicking_profiler_on_coreclr_8() {
    let _runtime = runtime_lock();
    panicking("8", "panicking_profiler_on_coreclr_8");
}

#[test]
fn panicking_profiler_on_coreclr_3() {
    let _runtime = runtime_lock();
    panicking("3", "panicking_profiler_on_coreclr_3");
}

// ---------------------------------------------------------------------------------------------
// panicking-profiler with PANICKY_INIT_FAIL=1: the runtime drops the profiler and runs without it.

fn init_failure(runtime: &'static str, test: &str) {
    let lib = profiler_lib(PANICKY_LIB);
    let out = TempFile::new(test);
    let run = run_profiled(
        runtime,
        "Workload",
        PANICKY_CLSID,
        &lib,
        &[("CORPROF_PANICS_OUT", out.path()), ("PANICKY_INIT_FAIL", "1")],
    );
    run.assert_workload_done();
    assert!(
        run.stderr.contains("panicking-profiler: PANICKY_INIT_FAIL=1, failing Initialize with E_FAIL (0x80004005)"),
        "Initialize was never called: {}",
        run.describe()
    );
    assert_eq!(run.panic_lines(), BTreeMap::new(), "{}", run.describe());
    // The profiler is gone, and corprof says why, once.
    assert_eq!(run.stderr_lines("corprof: "), [INITIALIZE_FAILED_E_FAIL], "{}", run.describe());
    // Shutdown is not called for a profiler whose Initialize failed: no file (or an empty one).
    let text = out.read().unwrap_or_default();
    assert_eq!(parse_counts(&text, "the panics file"), BTreeMap::new(), "{}", run.describe());
}

#[test]
fn init_failure_on_coreclr_8() {
    let _runtime = runtime_lock();
    init_failure("8", "init_failure_on_coreclr_8");
}

#[test]
fn init_failure_on_coreclr_3() {
    let _runtime = runtime_lock();
    init_failure("3", "init_failure_on_coreclr_3");
}

// ---------------------------------------------------------------------------------------------
// panicking-profiler whose Drop panics (PANICKY_DROP_PANIC=1): the last Release must not take the
// app down (before corprof caught it: exit 134 on CoreCLR 3.1.23 after the app's output, and with
// a failed Initialize 139 on 8.0.4 / 134 on 3.1.23 before the app ran).

const PANICKER_TYPE: &str = "panicking_profiler::Panicker";
/// `panicking_profiler::DROP_PANIC_MESSAGE`.
const DROP_PANIC_MESSAGE: &str = "Panicker dropped with PANICKY_DROP_PANIC=1";

/// The profiler's own hook line for a panic in its `Drop`: proof that the `Drop` ran and panicked.
fn drop_panic_hook_lines(run: &Run) -> usize {
    let tail = format!(": {DROP_PANIC_MESSAGE}");
    run.stderr_lines("panicking-profiler: panic at ").iter().filter(|l| l.ends_with(&tail)).count()
}

fn drop_panic_at_shutdown(runtime: &'static str, test: &str) {
    // The profiler works as usual until then: Shutdown writes its counts, one line per panic.
    let attempt = || {
        run_workload_counting(
            runtime,
            test,
            (PANICKY_LIB, PANICKY_CLSID),
            "CORPROF_PANICS_OUT",
            &[("PANICKY_DROP_PANIC", "1")],
        )
    };
    let (mut run, mut raised) = attempt();
    // CoreCLR 3.1.23 releases the profiler on its shutdown path while the process exits: on a
    // loaded machine the exit can win, and then nothing of the `Drop` shows (neither line below).
    // That race is the runtime's; try again (twice at most) rather than read it as a failure. A
    // `Drop` panic that is not caught aborts the process, which no retry hides.
    for _ in 0..2 {
        let nothing_of_the_drop = run.stderr_lines("corprof: drop of ").is_empty() && drop_panic_hook_lines(&run) == 0;
        if runtime != "3" || run.code != Some(0) || !nothing_of_the_drop {
            break;
        }
        (run, raised) = attempt();
    }
    assert!(count(&raised, "JITCompilationStarted") >= 50, "{}", run.describe());
    assert_eq!(run.panic_lines(), raised, "{}", run.describe());
    // CoreCLR 3.1.23 releases the profiler after Shutdown; 8.0.4 never does at process exit, so
    // there the `Drop` does not run at all.
    let drops = match runtime {
        "3" => 1,
        _ => 0,
    };
    let line = drop_panic_line(PANICKER_TYPE, DROP_PANIC_MESSAGE);
    let not_callbacks: Vec<&str> =
        run.stderr_lines("corprof: ").into_iter().filter(|l| !l.starts_with(PANIC_LINE_PREFIX)).collect();
    assert_eq!(not_callbacks, vec![line.as_str(); drops], "{}", run.describe());
    assert_eq!(drop_panic_hook_lines(&run), drops, "{}", run.describe());
}

#[test]
fn drop_panic_at_shutdown_on_coreclr_8() {
    let _runtime = runtime_lock();
    drop_panic_at_shutdown("8", "drop_panic_at_shutdown_on_coreclr_8");
}

#[test]
fn drop_panic_at_shutdown_on_coreclr_3() {
    let _runtime = runtime_lock();
    drop_panic_at_shutdown("3", "drop_panic_at_shutdown_on_coreclr_3");
}

/// `PANICKY_INIT_FAIL` with the flags mismatch code, and a panicking `Drop`: the runtime releases
/// the profiler right after Initialize fails, before the app runs.
const INCONSISTENT_WITH_FLAGS: &str = "0x80131374";

fn init_failure_and_drop_panic(runtime: &'static str, extra: &[(&'static str, &str)]) -> Run {
    let lib = profiler_lib(PANICKY_LIB);
    let mut env = vec![("PANICKY_INIT_FAIL", INCONSISTENT_WITH_FLAGS), ("PANICKY_DROP_PANIC", "1")];
    env.extend_from_slice(extra);
    let run = run_profiled(runtime, "Workload", PANICKY_CLSID, &lib, &env);
    run.assert_workload_done();
    let hr = HResult(0x8013_1374u32 as i32);
    let said = format!("panicking-profiler: PANICKY_INIT_FAIL={INCONSISTENT_WITH_FLAGS}, failing Initialize with {hr}");
    assert_eq!(run.stderr_lines("panicking-profiler: PANICKY_INIT_FAIL="), [said], "{}", run.describe());
    assert_eq!(drop_panic_hook_lines(&run), 1, "the Drop did not run: {}", run.describe());
    run
}

fn init_failure_reported(runtime: &'static str) {
    let run = init_failure_and_drop_panic(runtime, &[]);
    let failed = INITIALIZE_FAILED_INCONSISTENT.to_string();
    let dropped = drop_panic_line(PANICKER_TYPE, DROP_PANIC_MESSAGE);
    assert_eq!(run.stderr_lines("corprof: "), [failed, dropped], "{}", run.describe());
}

#[test]
fn init_failure_reported_on_coreclr_8() {
    let _runtime = runtime_lock();
    init_failure_reported("8");
}

#[test]
fn init_failure_reported_on_coreclr_3() {
    let _runtime = runtime_lock();
    init_failure_reported("3");
}

/// `CORPROF_QUIET=1`: the same run, and not one line from corprof.
fn init_failure_quiet(runtime: &'static str) {
    let run = init_failure_and_drop_panic(runtime, &[("CORPROF_QUIET", "1")]);
    assert_eq!(run.stderr_lines("corprof"), Vec::<&str>::new(), "{}", run.describe());
}

#[test]
fn init_failure_quiet_on_coreclr_8() {
    let _runtime = runtime_lock();
    init_failure_quiet("8");
}

#[test]
fn init_failure_quiet_on_coreclr_3() {
    let _runtime = runtime_lock();
    init_failure_quiet("3");
}

/// `CORPROF_E_PROFILER_CANCEL_ACTIVATION`, the documented way to decline a process: no report.
fn cancel_activation(runtime: &'static str) {
    let lib = profiler_lib(PANICKY_LIB);
    let run = run_profiled(runtime, "Workload", PANICKY_CLSID, &lib, &[("PANICKY_INIT_FAIL", "0x80131375")]);
    run.assert_workload_done();
    assert_eq!(run.stderr_lines("panicking-profiler: PANICKY_INIT_FAIL=").len(), 1, "{}", run.describe());
    assert_eq!(run.stderr_lines("corprof"), Vec::<&str>::new(), "{}", run.describe());
}

#[test]
fn cancel_activation_on_coreclr_8() {
    let _runtime = runtime_lock();
    cancel_activation("8");
}

#[test]
fn cancel_activation_on_coreclr_3() {
    let _runtime = runtime_lock();
    cancel_activation("3");
}

// ---------------------------------------------------------------------------------------------
// callback-counter asked for a CLSID it does not serve: the runtime runs without a profiler.

/// A random GUID in text form (`XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`) that no example serves.
fn random_clsid() -> String {
    use std::hash::{BuildHasher, Hasher};
    loop {
        let word = |salt: u64| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(salt);
            h.write_u128(SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
            h.finish()
        };
        let v = (u128::from(word(1)) << 64) | u128::from(word(2));
        let text = format!(
            "{:08X}-{:04X}-{:04X}-{:04X}-{:012X}",
            v >> 96,
            (v >> 80) & 0xFFFF,
            (v >> 64) & 0xFFFF,
            (v >> 48) & 0xFFFF,
            v & 0xFFFF_FFFF_FFFF
        );
        if text != COUNTER_CLSID && text != PANICKY_CLSID {
            return text;
        }
    }
}

fn wrong_clsid(runtime: &'static str, test: &str) {
    let lib = profiler_lib(COUNTER_LIB);
    let out = TempFile::new(test);
    let clsid = random_clsid();
    let run = run_profiled(runtime, "Workload", &clsid, &lib, &[("CORPROF_COUNTS_OUT", out.path())]);
    run.assert_workload_done();
    assert_eq!(out.read(), None, "a counts file was written for CLSID {clsid}: {}", run.describe());
    assert!(
        !run.stderr.contains("corprof:") && !run.stderr.contains("callback-counter:"),
        "the profiler spoke for CLSID {clsid}: {}",
        run.describe()
    );
}

#[test]
fn wrong_clsid_on_coreclr_8() {
    let _runtime = runtime_lock();
    wrong_clsid("8", "wrong_clsid_on_coreclr_8");
}

#[test]
fn wrong_clsid_on_coreclr_3() {
    let _runtime = runtime_lock();
    wrong_clsid("3", "wrong_clsid_on_coreclr_3");
}

// ---------------------------------------------------------------------------------------------
// scripts/dotnet-run runs any app by its path, as the README tells users with their own apps.

#[test]
fn dotnet_run_takes_an_app_path() {
    let _runtime = runtime_lock();
    let dll = repo_root().join("tests/apps/Workload/bin/Workload.dll");
    for runtime in ["8", "3"] {
        let run = run_app(runtime, dll.to_str().unwrap(), &[]);
        run.assert_workload_done();
    }
    let missing = std::process::Command::new(repo_root().join("scripts/dotnet-run"))
        .args(["8", "/no/such/App.dll"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "dotnet-run: no /no/such/App.dll (a test app's is built by scripts/setup)\n"
    );
}
