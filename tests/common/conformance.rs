//! The conformance suite's harness: a scenario is a folder `tests/conformance/<name>/` with a
//! profiler crate (`conformance-<name>`, CLSID `clsid`) and a C# app (`<app>.cs`, built by
//! scripts/setup into the folder's `bin/`). A run passes when the app exits 100 and the profiler
//! wrote exactly the expected fact lines to the file in `CORPROF_CONF_OUT`.

use super::*;

/// One scenario folder.
pub struct Scenario {
    pub name: &'static str,
    pub app: &'static str,
    pub clsid: &'static str,
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
    let lib = profiler_lib(&format!("conformance_{}", scenario.name));
    let out = TempFile::new(&format!("conformance-{}-{runtime}", scenario.name));
    let app = repo_root().join(format!("tests/conformance/{}/bin/{}.dll", scenario.name, scenario.app));
    let run = run_profiled(
        runtime,
        app.to_str().expect("UTF-8 path"),
        scenario.clsid,
        &lib,
        &[("CORPROF_CONF_OUT", out.path())],
    );
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

/// The run and the assertions of [`check_with`], without the row.
pub fn run_scenario(scenario: &Scenario, runtime: &'static str, expected: &[&str], env: &[(&'static str, &str)]) {
    let lib = profiler_lib(&format!("conformance_{}", scenario.name));
    let out = TempFile::new(&format!("conformance-{}-{runtime}", scenario.name));
    let app = repo_root().join(format!("tests/conformance/{}/bin/{}.dll", scenario.name, scenario.app));
    let app = app.to_str().expect("UTF-8 path");
    let mut env = env.to_vec();
    env.push(("CORPROF_CONF_OUT", out.path()));
    let run = run_profiled(runtime, app, scenario.clsid, &lib, &env);
    let lines: Vec<String> = out.read().unwrap_or_default().lines().map(str::to_string).collect();
    assert_eq!(
        run.code,
        Some(100),
        "{} on CoreCLR {runtime}: the app did not exit 100\n{}",
        scenario.name,
        run.describe()
    );
    assert_eq!(lines, expected, "{} on CoreCLR {runtime}: the profiler's facts\n{}", scenario.name, run.describe());
}
