//! The conformance suite's harness: a scenario is a folder `tests/conformance/<name>/` with a
//! module of the conformance profiler (`libconformance.so`, CLSID [`CLSID`], the scenario chosen
//! by [`SCENARIO`]) and a C# app (`<app>.cs`, built by scripts/setup into the folder's `bin/`).
//! A run passes when the app exits 100 and the profiler wrote exactly the expected fact lines to
//! the file in `CORPROF_CONF_OUT`.

use super::*;

/// The variable that names the scenario to the profiler (tests/conformance/lib.rs `SCENARIO`).
pub const SCENARIO: &str = "CORPROF_CONF_SCENARIO";
/// The CLSID of every scenario's profiler (tests/conformance/lib.rs `CLSID`).
pub const CLSID: &str = "6A0F3C21-4B7E-4D9A-8E15-2C3B4A5D6E00";
/// The CLSID of the notification scenario's notification-only peer (`PEER_CLSID`).
pub const PEER_CLSID: &str = "6A0F3C21-4B7E-4D9A-8E15-2C3B4A5D6E09";

/// The conformance profiler, every scenario's, built first.
pub fn library() -> PathBuf {
    profiler_lib("conformance")
}

/// One scenario folder.
pub struct Scenario {
    pub name: &'static str,
    pub app: &'static str,
}

impl Scenario {
    /// The scenario's C# app.
    pub fn app_path(&self) -> String {
        let app = repo_root().join(format!("tests/conformance/{}/bin/{}.dll", self.name, self.app));
        app.to_str().expect("UTF-8 path").to_string()
    }

    /// `env` with the variable that chooses this scenario added.
    pub fn env<'a>(&self, env: &[(&'static str, &'a str)]) -> Vec<(&'static str, &'a str)> {
        let mut env = env.to_vec();
        env.push((SCENARIO, self.name));
        env
    }

    /// Runs the app under the conformance profiler, this scenario chosen, with `env` added.
    pub fn run(&self, runtime: &'static str, env: &[(&'static str, &str)]) -> Run {
        run_profiled(runtime, &self.app_path(), CLSID, &library(), &self.env(env))
    }
}

/// Runs `scenario` on `runtime`, records the outcome, and fails the test unless the app exited
/// 100 and the profiler wrote exactly `expected`.
pub fn check(scenario: &Scenario, runtime: &'static str, expected: &[&str]) {
    check_with(scenario, runtime, expected, &[]);
}

/// [`check`] with more environment for the app.
pub fn check_with(scenario: &Scenario, runtime: &'static str, expected: &[&str], env: &[(&'static str, &str)]) {
    let _row = ConformanceRow::new(scenario.name, runtime, "");
    run_scenario(scenario, runtime, expected, env);
}

/// [`check`] for facts the app counts: the app prints `counted: <what> <n>, <what> <n>…` on
/// stdout, and `expected` makes the facts from those counts (`what` → `n`).
pub fn check_counted(
    scenario: &Scenario,
    runtime: &'static str,
    expected: impl FnOnce(&BTreeMap<String, u64>) -> Vec<String>,
) {
    let _row = ConformanceRow::new(scenario.name, runtime, "");
    let out = TempFile::new(&format!("conformance-{}-{runtime}", scenario.name));
    let run = scenario.run(runtime, &[("CORPROF_CONF_OUT", out.path())]);
    let lines: Vec<String> = out.read().unwrap_or_default().lines().map(str::to_string).collect();
    assert_eq!(
        run.code,
        Some(100),
        "{} on CoreCLR {runtime}: the app did not exit 100\n{}",
        scenario.name,
        run.describe()
    );
    let counts: BTreeMap<String, u64> = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("counted: "))
        .flat_map(|l| l.split(", "))
        .map(|c| {
            let (what, n) = c.rsplit_once(' ').unwrap_or_else(|| panic!("`{c}`: not `<what> <n>`"));
            (what.to_string(), n.parse().unwrap_or_else(|e| panic!("`{c}`: {e}")))
        })
        .collect();
    assert!(
        !counts.is_empty(),
        "{} on CoreCLR {runtime}: the app printed no `counted:` line\n{}",
        scenario.name,
        run.describe()
    );
    let expected = expected(&counts);
    assert_eq!(lines, expected, "{} on CoreCLR {runtime}: the profiler's facts\n{}", scenario.name, run.describe());
}

/// Runs `scenario` on `runtime` whatever the app's exit code: the run and the profiler's lines.
pub fn run_for_lines(scenario: &Scenario, runtime: &'static str, env: &[(&'static str, &str)]) -> (Run, Vec<String>) {
    let out = TempFile::new(&format!("conformance-{}-{runtime}", scenario.name));
    let mut env = env.to_vec();
    env.push(("CORPROF_CONF_OUT", out.path()));
    let run = scenario.run(runtime, &env);
    let lines = out.read().unwrap_or_default().lines().map(str::to_string).collect();
    (run, lines)
}

/// The run and the assertions of [`check_with`], without the row.
pub fn run_scenario(scenario: &Scenario, runtime: &'static str, expected: &[&str], env: &[(&'static str, &str)]) {
    let (run, lines) = run_for_lines(scenario, runtime, env);
    assert_eq!(
        run.code,
        Some(100),
        "{} on CoreCLR {runtime}: the app did not exit 100\n{}",
        scenario.name,
        run.describe()
    );
    assert_eq!(lines, expected, "{} on CoreCLR {runtime}: the profiler's facts\n{}", scenario.name, run.describe());
}
