//! corprof-record-profiler's calls mode (the library `corprof record` loads, fast hooks) on the
//! RecordCalls app, CoreCLR 8.0.4 and 3.1.23: the call paths and the calls per path are exactly
//! the app's, also on a second thread and after an exception has unwound two hooked frames; the
//! exclusive time of a path is its own (a 30 ms spin is on the spinning path, not its caller's);
//! the filter hooks only the methods whose name contains its text.

use crate::common::runtime_lock;
use crate::record_support::{self, Profile};
use std::collections::BTreeMap;

const P: &str = "RecordCallsApp.Program::";

/// Every call path of the app (Program's methods), with the calls that ended on it.
const PATHS: &[(&str, u64)] = &[
    ("Main", 1),
    ("Main;Catcher", 2),
    // The catch block's call: after the unwind the shadow stack is back at Catcher.
    ("Main;Catcher;Leaf", 2),
    ("Main;Catcher;Passer", 2),
    ("Main;Catcher;Passer;Thrower", 2),
    ("Main;Catcher;Passer;Thrower;Leaf", 2),
    ("Main;Middle", 5),
    ("Main;Middle;Leaf", 10),
    ("Main;Rec", 1),
    ("Main;Rec;Rec", 1),
    ("Main;Rec;Rec;Rec", 1),
    ("Main;Rec;Rec;Rec;Rec", 1),
    ("Main;Spin", 1),
    // The second thread's calls are paths of their own.
    ("Worker", 1),
    ("Worker;Leaf", 1),
    ("Worker;Spin", 1),
];

fn record(runtime: &'static str, filter: &str, test: &str) -> Profile {
    let settings = [("CORPROF_RECORD_MODE", "calls"), ("CORPROF_RECORD_FILTER", filter)];
    record_support::record(runtime, "RecordCalls", &[], &settings, "RecordCalls done 39\n", test)
}

/// With no filter set, the app's own code is hooked and the framework's is not: the same paths
/// as with a filter naming the app's namespace.
fn apps_own(runtime: &'static str, test: &str) {
    let settings = [("CORPROF_RECORD_MODE", "calls")];
    let profile = record_support::record(runtime, "RecordCalls", &[], &settings, "RecordCalls done 39\n", test);
    let calls: BTreeMap<String, u64> = paths(&profile).into_iter().map(|(p, (_, n))| (p, n)).collect();
    let expected: BTreeMap<String, u64> = PATHS.iter().map(|(p, n)| (p.to_string(), *n)).collect();
    assert_eq!(calls, expected, "calls with no filter on CoreCLR {runtime}:\n{}", profile.text);
}

#[test]
fn calls_default_to_the_apps_own_code_on_coreclr_8() {
    let _runtime = runtime_lock();
    apps_own("8", "calls_default_to_the_apps_own_code_on_coreclr_8");
}

#[test]
fn calls_default_to_the_apps_own_code_on_coreclr_3() {
    let _runtime = runtime_lock();
    apps_own("3", "calls_default_to_the_apps_own_code_on_coreclr_3");
}

/// Path (without the class prefix) → (exclusive µs, calls).
fn paths(profile: &Profile) -> BTreeMap<String, (u64, u64)> {
    assert_eq!(profile.unit, "microseconds");
    profile.stacks.iter().map(|(frames, &entry)| (frames.join(";").replace(P, ""), entry)).collect()
}

fn counts(runtime: &'static str, test: &str) {
    let profile = record(runtime, "RecordCallsApp.", test);
    let paths = paths(&profile);
    let calls: BTreeMap<&str, u64> = paths.iter().map(|(p, &(_, n))| (p.as_str(), n)).collect();
    assert_eq!(calls, PATHS.iter().copied().collect::<BTreeMap<_, _>>(), "calls per path on CoreCLR {runtime}");

    // Inclusive time of a path = its own exclusive time + every path below it.
    let inclusive = |path: &str| -> u64 {
        paths.iter().filter(|(p, _)| *p == path || p.starts_with(&format!("{path};"))).map(|(_, &(us, _))| us).sum()
    };
    let exclusive = |path: &str| paths[path].0;
    for (path, _) in PATHS {
        assert!(inclusive(path) >= exclusive(path), "{path}");
    }
    // Spin(30) on the main thread and Spin(20) on the worker: their exclusive times are what the
    // app measured inside them (with its Stopwatch), to within 10% or 2 ms (the hooks' own time
    // and the calls around the watch).
    let spins = profile.stderr.lines().find_map(|l| l.strip_prefix("RecordCalls spin "));
    let spins: Vec<u64> = spins
        .unwrap_or_else(|| panic!("no spin times: {}", profile.stderr))
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect();
    for (path, app_us, at_least) in [("Main;Spin", spins[0], 30_000), ("Worker;Spin", spins[1], 20_000)] {
        let us = exclusive(path);
        let slack = (app_us / 10).max(2_000);
        assert!(
            app_us >= at_least && us >= app_us && us <= app_us + slack,
            "{path}: {us} µs, the app measured {app_us}"
        );
    }
    // … and that time is not Main's or Worker's own.
    assert!(inclusive("Main") >= exclusive("Main") + 30_000, "{}", profile.text);
    assert!(exclusive("Worker") < 20_000, "{}", profile.text);
}

/// The filter is a substring of `Namespace.Type::Method`: `Program::Leaf` hooks Leaf alone, so
/// every Leaf call is on the one-frame path.
fn filtered(runtime: &'static str, test: &str) {
    let profile = record(runtime, "Program::Leaf", test);
    let calls: Vec<(String, u64)> = paths(&profile).into_iter().map(|(p, (_, n))| (p, n)).collect();
    assert_eq!(calls, [("Leaf".to_string(), 15)], "filtered calls on CoreCLR {runtime}");
}

#[test]
fn calls_on_coreclr_8() {
    let _runtime = runtime_lock();
    counts("8", "calls_on_coreclr_8");
    filtered("8", "calls_filtered_on_coreclr_8");
}

#[test]
fn calls_on_coreclr_3() {
    let _runtime = runtime_lock();
    counts("3", "calls_on_coreclr_3");
    filtered("3", "calls_filtered_on_coreclr_3");
}
