//! End-to-end tests: the example profilers loaded into real CoreCLR runtimes (8.0.4 and 3.1.23)
//! running the `tests/apps/Workload` app.
//!
//! Needs `scripts/setup` (runtimes and the app) and `cargo build --workspace` (the profiler
//! `.so` files, built with the same profile as these tests). Every test runs the app once (well
//! under a second) with its own output file, so the tests can run in parallel.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

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
const PANIC_LINE_PREFIX: &str = "corprof: callback ";
const PANIC_LINE_SUFFIX: &str = "; returned E_FAIL to the runtime";

/// The Workload app's own deterministic counts (see tests/apps/Workload/README.md).
const WORKLOAD_EXCEPTIONS: u64 = 5;
const WORKLOAD_GCS: u64 = 3;
const WORKLOAD_THREADS: u64 = 4;

/// How long one app run may take before the test kills it (a run normally takes < 1 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory cargo put this test binary's profile outputs in (`target/debug` for
/// `cargo test`): the test binary lives in its `deps/` subdirectory.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("cannot find the test executable");
    exe.parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("unexpected test executable location {}", exe.display()))
        .to_path_buf()
}

/// The built profiler `lib<name>.so`; panics if it is missing or older than a source it was
/// built from (per cargo's `lib<name>.d`), since the test would then check stale code.
fn profiler_lib(name: &str) -> PathBuf {
    let dir = profile_dir();
    let lib = dir.join(format!("lib{name}.so"));
    let built = std::fs::metadata(&lib).and_then(|m| m.modified()).unwrap_or_else(|e| {
        panic!(
            "{} is missing ({e}): run `cargo build --workspace` (same profile as the tests) \
                 before `cargo test --test e2e`",
            lib.display()
        )
    });
    let dep_info = dir.join(format!("lib{name}.d"));
    if let Ok(text) = std::fs::read_to_string(&dep_info) {
        let root = repo_root();
        for dep in dep_info_sources(&text) {
            if !dep.starts_with(&root) {
                continue;
            }
            let changed = std::fs::metadata(&dep).and_then(|m| m.modified());
            if changed.is_ok_and(|t| t > built) {
                panic!(
                    "{} is older than {}: run `cargo build --workspace` (same profile as the \
                     tests) before `cargo test --test e2e`",
                    lib.display(),
                    dep.display()
                );
            }
        }
    }
    lib
}

/// The prerequisites listed in a Makefile-style dep-info file (`target: dep dep…`, spaces in
/// paths escaped with a backslash).
fn dep_info_sources(text: &str) -> Vec<PathBuf> {
    let mut deps = Vec::new();
    for line in text.lines() {
        let Some(pos) = line.find(": ") else { continue };
        let mut current = String::new();
        let mut chars = line[pos + 2..].chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => current.extend(chars.next()),
                ' ' => {
                    if !current.is_empty() {
                        deps.push(PathBuf::from(std::mem::take(&mut current)));
                    }
                }
                _ => current.push(c),
            }
        }
        if !current.is_empty() {
            deps.push(PathBuf::from(current));
        }
    }
    deps
}

/// A per-test output file in the temp directory, removed first (and again when dropped).
struct TempFile(PathBuf);

impl TempFile {
    fn new(test: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("corprof-e2e-{}-{test}.txt", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("temp path is not UTF-8")
    }

    /// The file's text, or `None` if the profiler did not write it.
    fn read(&self) -> Option<String> {
        match std::fs::read_to_string(&self.0) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => panic!("cannot read {}: {e}", self.0.display()),
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One finished run of the Workload app.
struct Run {
    runtime: &'static str,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Everything about the run, for assertion messages.
    fn describe(&self) -> String {
        format!(
            "CoreCLR {} exit code {:?}\n--- stdout ---\n{}--- stderr ({} lines, last 40) ---\n{}",
            self.runtime,
            self.code,
            self.stdout,
            self.stderr.lines().count(),
            last_lines(&self.stderr, 40)
        )
    }

    /// The app ran to completion as if no profiler were there.
    fn assert_workload_done(&self) {
        assert_eq!(self.code, Some(0), "the app failed: {}", self.describe());
        assert!(self.stdout.lines().any(|l| l == "Workload done"), "no `Workload done`: {}", self.describe());
    }

    /// `callback name -> number of corprof panic lines` on stderr; every such line must be
    /// complete.
    fn panic_lines(&self) -> BTreeMap<String, u64> {
        let all: Vec<&str> = self.stderr.lines().collect();
        let mut lines = BTreeMap::new();
        for (i, line) in all.iter().enumerate() {
            let Some(rest) = line.strip_prefix(PANIC_LINE_PREFIX) else {
                continue;
            };
            let around = || all[i.saturating_sub(3)..(i + 4).min(all.len())].join("\n");
            let name = rest
                .split_once(" panicked: ")
                .map(|(name, _)| name)
                .unwrap_or_else(|| panic!("malformed panic line {line:?} in\n{}", around()));
            assert!(
                line.ends_with(PANIC_LINE_SUFFIX),
                "panic line without `{PANIC_LINE_SUFFIX}`: {line:?} in\n{}",
                around()
            );
            assert_callback_name(name, "a corprof panic line");
            *lines.entry(name.to_string()).or_insert(0) += 1;
        }
        lines
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines[lines.len().saturating_sub(n)..].join("\n");
    out.push('\n');
    out
}

/// Runs `scripts/dotnet-run <runtime> Workload` with `env` added to a cleaned environment (no
/// inherited CoreCLR, .NET, corprof or Rust backtrace settings).
fn run_workload(runtime: &'static str, env: &[(&str, &str)]) -> Run {
    let root = repo_root();
    let mut cmd = Command::new(root.join("scripts/dotnet-run"));
    cmd.args([runtime, "Workload"])
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let inherited_setting =
            ["CORECLR_", "CORPROF_", "DOTNET_", "COMPlus_", "PANICKY_"].iter().any(|p| k.starts_with(p))
                || k.starts_with("RUST_BACKTRACE")
                || k == "RUST_LIB_BACKTRACE";
        if inherited_setting {
            cmd.env_remove(&key);
        }
    }
    cmd.envs(env.iter().copied());

    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start scripts/dotnet-run: {e}"));
    let reader = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).expect("cannot read the app's output");
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = reader(Box::new(child.stdout.take().unwrap()));
    let stderr = reader(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("cannot wait for the app") {
            break status;
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "CoreCLR {runtime}: the Workload app did not finish in {RUN_TIMEOUT:?}; killed it\n\
                 --- stderr ---\n{}",
                last_lines(&stderr.join().unwrap(), 40)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let run = Run { runtime, code: status.code(), stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() };
    if run.stdout.is_empty() && run.code == Some(2) {
        panic!("scripts/dotnet-run could not run the app (run `bash scripts/setup`?): {}", run.describe());
    }
    run
}

/// The environment that loads the profiler `lib` under `clsid`.
fn profiler_env(clsid: &str, lib: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("CORECLR_ENABLE_PROFILING", "1".to_string()),
        ("CORECLR_PROFILER", format!("{{{clsid}}}")),
        ("CORECLR_PROFILER_PATH", lib.to_str().expect("library path is not UTF-8").to_string()),
    ]
}

fn run_profiled(runtime: &'static str, clsid: &str, lib: &Path, extra: &[(&'static str, &str)]) -> Run {
    let mut env = profiler_env(clsid, lib);
    env.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_workload(runtime, &env)
}

fn assert_callback_name(name: &str, context: &str) {
    assert!(
        corprof::Callback::ALL.iter().any(|c| c.name() == name),
        "{name:?} (in {context}) is not a profiler callback name"
    );
}

/// Parses `<CallbackName> <count>` lines; every name must be a real, unrepeated callback.
fn parse_counts(text: &str, what: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (name, n) = line.split_once(' ').unwrap_or_else(|| panic!("malformed line {line:?} in {what}:\n{text}"));
        assert_callback_name(name, what);
        let n: u64 = n.trim().parse().unwrap_or_else(|e| panic!("bad count in {line:?} in {what}: {e}"));
        assert!(n > 0, "zero count listed in {what}: {line:?}");
        assert!(counts.insert(name.to_string(), n).is_none(), "{name} listed twice in {what}:\n{text}");
    }
    counts
}

fn count(counts: &BTreeMap<String, u64>, name: &str) -> u64 {
    assert_callback_name(name, "the test itself");
    counts.get(name).copied().unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// callback-counter with its default mask: the runtime calls what the workload does.

fn counter(runtime: &'static str, test: &str) {
    let lib = profiler_lib(COUNTER_LIB);
    let out = TempFile::new(test);
    let run = run_profiled(runtime, COUNTER_CLSID, &lib, &[("CORPROF_COUNTS_OUT", out.path())]);
    run.assert_workload_done();
    let text = out.read().unwrap_or_else(|| panic!("no counts file written: {}", run.describe()));
    let counts = parse_counts(&text, "the counts file");
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
        "8" => assert_eq!(c("LoadAsNotficationOnly"), 1, "{ctx}"),
        _ => assert!(!counts.contains_key("LoadAsNotficationOnly"), "{ctx}"),
    }
}

#[test]
fn counter_on_coreclr_8() {
    counter("8", "counter_on_coreclr_8");
}

#[test]
fn counter_on_coreclr_3() {
    counter("3", "counter_on_coreclr_3");
}

// ---------------------------------------------------------------------------------------------
// callback-counter with CORPROF_EVENT_MASK=0x20 (COR_PRF_MONITOR_JIT_COMPILATION only).

fn event_mask(runtime: &'static str, test: &str) {
    let lib = profiler_lib(COUNTER_LIB);
    let out = TempFile::new(test);
    let run = run_profiled(
        runtime,
        COUNTER_CLSID,
        &lib,
        &[("CORPROF_COUNTS_OUT", out.path()), ("CORPROF_EVENT_MASK", "0x20")],
    );
    run.assert_workload_done();
    let text = out.read().unwrap_or_else(|| panic!("no counts file written: {}", run.describe()));
    let counts = parse_counts(&text, "the counts file");
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
        "LoadAsNotficationOnly",
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
    event_mask("8", "event_mask_on_coreclr_8");
}

#[test]
fn event_mask_on_coreclr_3() {
    event_mask("3", "event_mask_on_coreclr_3");
}

// ---------------------------------------------------------------------------------------------
// panicking-profiler: every panic is caught, logged once, and the app does not notice.

fn panicking(runtime: &'static str, test: &str) {
    let lib = profiler_lib(PANICKY_LIB);
    let out = TempFile::new(test);
    let run = run_profiled(runtime, PANICKY_CLSID, &lib, &[("CORPROF_PANICS_OUT", out.path())]);
    run.assert_workload_done();
    let text = out.read().unwrap_or_else(|| panic!("no panics file written: {}", run.describe()));
    let raised = parse_counts(&text, "the panics file");
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
    panicking("8", "panicking_profiler_on_coreclr_8");
}

#[test]
fn panicking_profiler_on_coreclr_3() {
    panicking("3", "panicking_profiler_on_coreclr_3");
}

// ---------------------------------------------------------------------------------------------
// panicking-profiler with PANICKY_INIT_FAIL=1: the runtime drops the profiler and runs without it.

fn init_failure(runtime: &'static str, test: &str) {
    let lib = profiler_lib(PANICKY_LIB);
    let out = TempFile::new(test);
    let run =
        run_profiled(runtime, PANICKY_CLSID, &lib, &[("CORPROF_PANICS_OUT", out.path()), ("PANICKY_INIT_FAIL", "1")]);
    run.assert_workload_done();
    assert!(
        run.stderr.contains("panicking-profiler: PANICKY_INIT_FAIL=1, failing Initialize"),
        "Initialize was never called: {}",
        run.describe()
    );
    assert_eq!(run.panic_lines(), BTreeMap::new(), "{}", run.describe());
    // Shutdown is not called for a profiler whose Initialize failed: no file (or an empty one).
    let text = out.read().unwrap_or_default();
    assert_eq!(parse_counts(&text, "the panics file"), BTreeMap::new(), "{}", run.describe());
}

#[test]
fn init_failure_on_coreclr_8() {
    init_failure("8", "init_failure_on_coreclr_8");
}

#[test]
fn init_failure_on_coreclr_3() {
    init_failure("3", "init_failure_on_coreclr_3");
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
    let run = run_profiled(runtime, &clsid, &lib, &[("CORPROF_COUNTS_OUT", out.path())]);
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
    wrong_clsid("8", "wrong_clsid_on_coreclr_8");
}

#[test]
fn wrong_clsid_on_coreclr_3() {
    wrong_clsid("3", "wrong_clsid_on_coreclr_3");
}

#[test]
fn dep_info_paths_are_split_and_unescaped() {
    let deps = dep_info_sources("/t/libx.so: /a/b.rs /c\\ d/e.rs\n\n/t/libx.rlib: /f.rs\n");
    let expected: Vec<PathBuf> = ["/a/b.rs", "/c d/e.rs", "/f.rs"].iter().map(PathBuf::from).collect();
    assert_eq!(deps, expected);
}
