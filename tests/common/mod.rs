//! Shared harness of the tests that run CoreCLR (tests/runtime, and tests/tools' outside_crate):
//! builds the profilers and tools they load (the test command's workspace build), runs a C# test app
//! (`scripts/dotnet-run`, apps built by `scripts/setup`) in a real CoreCLR with a clean
//! environment, and reads what it wrote; one lock keeps the files' runs apart.
#![allow(dead_code)] // each test binary uses a part

pub mod conformance;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub const PANIC_LINE_PREFIX: &str = "corprof: callback ";
pub const PANIC_LINE_SUFFIX: &str = "; returned E_FAIL to the runtime";

/// The lines corprof writes when the profiler's `Initialize` fails with E_FAIL, and with
/// CORPROF_E_INCONSISTENT_WITH_FLAGS: written out, not made with corprof's own `describe()`.
pub const INITIALIZE_FAILED_E_FAIL: &str = "corprof: Initialize failed: E_FAIL (0x80004005): Unspecified failure (corprof also returns it for a callback that panicked).";
pub const INITIALIZE_FAILED_INCONSISTENT: &str = "corprof: Initialize failed: CORPROF_E_INCONSISTENT_WITH_FLAGS (0x80131374): The call needs other event-mask flags set (or some set flags cleared) first.";

/// The line corprof writes when the `Drop` of `ty` (a type name) panics with `msg` at the last
/// `Release`.
pub fn drop_panic_line(ty: &str, msg: &str) -> String {
    format!("corprof: drop of {ty} panicked: {msg}; the object was freed")
}

/// How long one app run may take before the test kills it (a run normally takes < 1 s).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory cargo put this test binary's profile outputs in (`target/debug` for
/// `cargo test`): the test binary lives in its `deps/` subdirectory.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("cannot find the test executable");
    exe.parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("unexpected test executable location {}", exe.display()))
        .to_path_buf()
}

/// Keeps the tests that start CoreCLR as they ran when each file of tests/runtime was a binary of
/// its own, which cargo ran one after another: tests of one file run together (libtest's threads),
/// tests of two files never do. Their timing checks (sample ratios, a 30 ms spin on its own path,
/// exit races that must show a Drop) were written for that. The group is the caller's file
/// (`#[track_caller]`); every test of tests/runtime takes the guard first (the tidy test
/// `runtime_tests_take_the_runtime_lock_first` checks), and a failing test gives it back as it
/// unwinds.
#[track_caller]
pub fn runtime_lock() -> RuntimeGuard {
    runtime_group(std::panic::Location::caller().file())
}

/// Waits until no test of another group than `file` runs, and enters `file`'s.
pub fn runtime_group(file: &'static str) -> RuntimeGuard {
    let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    while running.0.is_some_and(|f| f != file) {
        running = RUNNING_DONE.wait(running).unwrap_or_else(PoisonError::into_inner);
    }
    running.0 = Some(file);
    running.1 += 1;
    RuntimeGuard(())
}

/// The file whose tests run now, and how many of them.
static RUNNING: Mutex<(Option<&'static str>, usize)> = Mutex::new((None, 0));
/// Signalled when the last test of a file leaves.
static RUNNING_DONE: Condvar = Condvar::new();

/// A test of tests/runtime running; see [`runtime_lock`].
pub struct RuntimeGuard(());

impl Drop for RuntimeGuard {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
        running.1 -= 1;
        if running.1 == 0 {
            running.0 = None;
            RUNNING_DONE.notify_all();
        }
    }
}

/// The profiler `lib<name>.so` of this workspace, built first (see [`built`]).
pub fn profiler_lib(name: &str) -> PathBuf {
    built(&format!("lib{name}.so"))
}

/// The binary `name` of this workspace (`corprof-attach`), built first (see [`built`]).
pub fn workspace_bin(name: &str) -> PathBuf {
    built(name)
}

/// The build the harness runs before a test loads a profiler or runs a tool: scripts/test's own
/// build step, word for word (the tidy test `the_harness_builds_as_the_test_command_does`
/// checks). The same command, so that the same features resolve: a narrower `cargo build -p <profiler>` resolves
/// the build dependencies' features (syn, libc, ...) for that one package, which builds a second
/// corprof and relinks every profiler each time the two builds alternate.
pub const WORKSPACE_BUILD: [&str; 5] = ["build", "--workspace", "--all-targets", "--features", "corprof-gen/cli"];

/// `file` in the profile directory once [`WORKSPACE_BUILD`] has run: the test binary's own cargo
/// (`$CARGO`) and profile, into the same target directory (the `cargo test` that started this
/// process holds no lock on it while tests run), with this process's environment
/// (`CORPROF_INCLUDE_DIR`, `RUSTFLAGS`). It runs once per process (a no-op when scripts/test built
/// first); a failed build fails the test with the command and cargo's output. A test thus checks
/// the code as it is now, and `cargo test --test runtime <one>` alone works.
/// The cargo that runs this test (`$CARGO`), for a build of its own: without what cargo set for
/// this test process about its package and target. Passed on, `OUT_DIR` would reach every rustc
/// of a package without a build script (corprof-sig's `builds_without_a_build_script_or_dependencies`
/// saw it) and change what they compile.
pub fn cargo_command() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut cmd = Command::new(cargo);
    for (var, _) in std::env::vars_os() {
        let name = var.to_string_lossy();
        if name == "OUT_DIR" || CARGO_TEST_VARS.iter().any(|p| name.starts_with(p)) {
            cmd.env_remove(&var);
        }
    }
    cmd
}

/// The prefixes of what cargo sets for a test process about its package and target.
const CARGO_TEST_VARS: [&str; 7] = [
    "CARGO_PKG_",
    "CARGO_MANIFEST_",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
];

fn built(file: &str) -> PathBuf {
    static BUILT: Mutex<bool> = Mutex::new(false);
    let dir = profile_dir();
    let path = dir.join(file);
    // Held while cargo runs: a second test waits for this build.
    let mut done = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if !*done {
        // `target/debug` is the `dev` profile's folder; any other profile's folder is its name.
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let target_dir = dir.parent().expect("the target directory");
        let mut cmd = cargo_command();
        cmd.args(WORKSPACE_BUILD)
            .args(["--profile", &profile, "--target-dir"])
            .arg(target_dir)
            .current_dir(repo_root())
            .stdin(Stdio::null());
        let line = format!("{cmd:?}");
        let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {line}: {e}"));
        assert!(out.status.success(), "{line} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        *done = true;
    }
    assert!(path.is_file(), "the workspace build made no {}: is {file} a target of this workspace?", path.display());
    path
}

/// A per-test directory in the temp directory (`corprof-<kind>-<pid>-<test>`), made empty
/// first and removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(kind: &str, test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("corprof-{kind}-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cannot create the test directory");
        TempDir(dir)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A per-test output file in the temp directory, removed first (and again when dropped).
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(test: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("corprof-e2e-{}-{test}.txt", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("temp path is not UTF-8")
    }

    /// The file's text, or `None` if the profiler did not write it.
    pub fn read(&self) -> Option<String> {
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
pub struct Run {
    pub runtime: &'static str,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Everything about the run, for assertion messages.
    pub fn describe(&self) -> String {
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
    pub fn assert_workload_done(&self) {
        assert_eq!(self.code, Some(0), "the app failed: {}", self.describe());
        assert!(self.stdout.lines().any(|l| l == "Workload done"), "no `Workload done`: {}", self.describe());
    }

    /// The stderr lines that start with `prefix`, in order.
    pub fn stderr_lines(&self, prefix: &str) -> Vec<&str> {
        self.stderr.lines().filter(|l| l.starts_with(prefix)).collect()
    }

    /// `callback name -> number of corprof panic lines` on stderr; every such line must be
    /// complete.
    pub fn panic_lines(&self) -> BTreeMap<String, u64> {
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

pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines[lines.len().saturating_sub(n)..].join("\n");
    out.push('\n');
    out
}

/// Runs `scripts/dotnet-run <runtime> <app>` with `env` added to a cleaned environment (no
/// inherited CoreCLR, .NET, corprof or Rust backtrace settings).
pub fn run_app(runtime: &'static str, app: &str, env: &[(&str, &str)]) -> Run {
    run_app_with_args(runtime, app, &[], env)
}

/// [`run_app`] with arguments for the app.
pub fn run_app_with_args(runtime: &'static str, app: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let child =
        app_command(runtime, app, args, env).spawn().unwrap_or_else(|e| panic!("cannot start scripts/dotnet-run: {e}"));
    finish_app(runtime, app, child)
}

/// Waits (at most [`RUN_TIMEOUT`], then kills it) for an app started from [`app_command`], and
/// collects what it printed.
pub fn finish_app(runtime: &'static str, app: &str, mut child: std::process::Child) -> Run {
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
                "CoreCLR {runtime}: the {app} app did not finish in {RUN_TIMEOUT:?}; killed it\n\
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

/// The command [`run_app_with_args`] runs, for a test that starts the app itself: its output
/// piped, its environment cleaned as [`run_app`] says, with `env` added.
pub fn app_command(runtime: &'static str, app: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let root = repo_root();
    let mut cmd = Command::new(root.join("scripts/dotnet-run"));
    cmd.args([runtime, app])
        .args(args)
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let inherited_setting =
            ["CORECLR_", "CORPROF_", "DOTNET_", "COMPlus_", "PANICKY_", "ATTACHPROF_"].iter().any(|p| k.starts_with(p))
                || k.starts_with("RUST_BACKTRACE")
                || k == "RUST_LIB_BACKTRACE";
        if inherited_setting {
            cmd.env_remove(&key);
        }
    }
    cmd.envs(env.iter().copied());
    cmd
}

/// The environment that loads the profiler `lib` under `clsid`.
pub fn profiler_env(clsid: &str, lib: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("CORECLR_ENABLE_PROFILING", "1".to_string()),
        ("CORECLR_PROFILER", format!("{{{clsid}}}")),
        ("CORECLR_PROFILER_PATH", lib.to_str().expect("library path is not UTF-8").to_string()),
    ]
}

pub fn run_profiled(runtime: &'static str, app: &str, clsid: &str, lib: &Path, extra: &[(&'static str, &str)]) -> Run {
    let mut env = profiler_env(clsid, lib);
    env.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_app(runtime, app, &env)
}

pub fn assert_callback_name(name: &str, context: &str) {
    assert!(
        corprof::Callback::ALL.iter().any(|c| c.name() == name),
        "{name:?} (in {context}) is not a profiler callback name"
    );
}

/// Parses `<CallbackName> <count>` lines; every name must be a real, unrepeated callback.
pub fn parse_counts(text: &str, what: &str) -> BTreeMap<String, u64> {
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

/// A row of CONFORMANCE.md for the test that holds it: when dropped it records, in
/// `target/conformance/<scenario>.<runtime>`, `pass` (or the `n/a` reason given) if the test
/// got there without panicking and `fail` if it is unwinding from a failed assertion.
/// `scripts/conformance-report` turns the records into the table.
pub struct ConformanceRow {
    path: PathBuf,
    what: &'static str,
    not_applicable: Option<&'static str>,
}

impl ConformanceRow {
    /// `what` says what the scenario checks (a scenario with a folder under tests/conformance/
    /// takes it from its module's doc, `<folder>/mod.rs`, instead; pass "").
    pub fn new(scenario: &str, runtime: &str, what: &'static str) -> ConformanceRow {
        let dir = profile_dir().parent().expect("the target directory").join("conformance");
        std::fs::create_dir_all(&dir).expect("cannot create target/conformance");
        let path = dir.join(format!("{scenario}.{runtime}"));
        let _ = std::fs::remove_file(&path);
        ConformanceRow { path, what, not_applicable: None }
    }

    /// The scenario does not apply to this runtime; the test checks that it says so.
    pub fn not_applicable(mut self, why: &'static str) -> ConformanceRow {
        self.not_applicable = Some(why);
        self
    }
}

impl Drop for ConformanceRow {
    fn drop(&mut self) {
        let outcome = match (std::thread::panicking(), self.not_applicable) {
            (true, _) => "fail: see the test's output".to_string(),
            (false, Some(why)) => format!("n/a: {why}"),
            (false, None) => "pass".to_string(),
        };
        let _ = std::fs::write(&self.path, format!("{outcome}\n{}\n", self.what));
    }
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn c_compiler_present(cc: &str) -> bool {
    Command::new(cc).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// `$CC`, else the first of cc, gcc, clang that runs (as bench/common/compile.sh chooses).
fn c_compiler() -> Option<String> {
    match std::env::var("CC") {
        Ok(cc) if !cc.is_empty() => c_compiler_present(&cc).then_some(cc),
        _ => ["cc", "gcc", "clang"].into_iter().find(|cc| c_compiler_present(cc)).map(String::from),
    }
}

/// `target/bench/<lib>`: the C reference profiler of `bench/<dir>` (`<dir>/<source>`), built by
/// `bench/<dir>/build.sh` when it is missing or older than its source, its build script or
/// bench/common (one build at a time in a test process).
pub fn c_reference(dir: &str, source: &str, lib: &str) -> PathBuf {
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let root = repo_root();
    let out = profile_dir().parent().expect("no target directory").join("bench").join(lib);
    let bench = root.join("bench");
    let script = bench.join(dir).join("build.sh");
    let sources =
        [bench.join(dir).join(source), script.clone(), bench.join("common/com.h"), bench.join("common/compile.sh")];
    let built = modified(&out);
    if built.is_none_or(|b| sources.iter().any(|s| modified(s).is_none_or(|m| m > b))) {
        let Some(cc) = c_compiler() else {
            panic!(
                "no C compiler ({}): the test compares against the C reference profiler bench/{dir}/{source}; \
                 install one (`apt-get install gcc`) or set CC",
                std::env::var("CC").map(|cc| format!("`{cc}`")).unwrap_or_else(|_| "cc, gcc or clang".to_string())
            )
        };
        let run = Command::new("bash")
            .arg(&script)
            .arg(&out)
            .env("CC", cc)
            .current_dir(&root)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            run.status.success(),
            "bench/{dir}/build.sh failed ({}):\n{}{}",
            run.status,
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
    }
    out
}
