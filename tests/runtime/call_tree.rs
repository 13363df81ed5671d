//! examples/call-tree on the CallTree app, CoreCLR 8.0.4 and 3.1.23: the call paths and call
//! counts are exactly the app's, an exception's unwind (three frames deep) ends its calls through `FunctionHooks::unwind`, and the times add up:
//! every method's inclusive time is its exclusive time plus its callees' (exactly, in
//! nanoseconds), and a recursive method's is counted once.

use crate::common::*;
use std::collections::BTreeMap;

const CALL_TREE_CLSID: &str = "4F2A6C81-3D5E-4B97-8A10-6E2C9D7B5F34";
const P: &str = "CallTreeApp.Program::";

struct Report {
    /// name → [calls, inclusive ns, exclusive ns]
    methods: BTreeMap<String, [u64; 3]>,
    folded: BTreeMap<String, u64>,
}

fn call_tree(runtime: &'static str, weight: &str, test: &str) -> Report {
    let lib = profiler_lib("call_tree");
    let (out, folded) = (TempFile::new(&format!("{test}-table")), TempFile::new(&format!("{test}-folded")));
    let env = [
        ("CORPROF_CALLTREE_FILTER", "CallTreeApp."),
        ("CORPROF_CALLTREE_WEIGHT", weight),
        ("CORPROF_CALLTREE_OUT", out.path()),
        ("CORPROF_CALLTREE_FOLDED", folded.path()),
    ];
    let run = run_profiled(runtime, "CallTree", CALL_TREE_CLSID, &lib, &env);
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "CallTree done 29\n"), "{}", run.describe());
    let parse = |text: String| -> Vec<(String, Vec<u64>)> {
        text.lines()
            .map(|l| {
                let mut parts = l.split(' ');
                let name = parts.next().unwrap().replace(P, "");
                (name, parts.map(|n| n.parse().unwrap_or_else(|e| panic!("{l:?}: {e}"))).collect())
            })
            .collect()
    };
    let table = parse(out.read().unwrap_or_else(|| panic!("no table: {}", run.describe())));
    let stacks = parse(folded.read().unwrap_or_else(|| panic!("no folded stacks: {}", run.describe())));
    Report {
        methods: table.into_iter().map(|(n, v)| (n, [v[0], v[1], v[2]])).collect(),
        folded: stacks.into_iter().map(|(n, v)| (n, v[0])).collect(),
    }
}

/// Every call path of the app, with how many calls ended on it.
const PATHS: &[(&str, u64)] = &[
    ("Main", 1),
    ("Main;Catcher", 1),
    ("Main;Catcher;Thrower", 1),
    ("Main;Catcher;Thrower;Deeper", 1),
    ("Main;Catcher;Thrower;Deeper;Deepest", 1),
    ("Main;Catcher;Thrower;Leaf", 1),
    ("Main;Middle", 3),
    ("Main;Middle;Leaf", 6),
    ("Main;Other", 1),
    ("Main;Other;Leaf", 1),
    ("Main;Rec", 1),
    ("Main;Rec;Rec", 1),
    ("Main;Rec;Rec;Rec", 1),
    ("Main;Rec;Rec;Rec;Rec", 1),
];

fn by_calls(runtime: &'static str, test: &str) {
    let r = call_tree(runtime, "calls", test);
    let expected: BTreeMap<String, u64> = PATHS.iter().map(|(p, n)| (p.to_string(), *n)).collect();
    assert_eq!(r.folded, expected, "folded stacks by calls on CoreCLR {runtime}");
    let calls: BTreeMap<&str, u64> = r.methods.iter().map(|(n, v)| (n.as_str(), v[0])).collect();
    let expected_calls = [
        ("Catcher", 1),
        ("Deeper", 1),
        ("Deepest", 1),
        ("Leaf", 8),
        ("Main", 1),
        ("Middle", 3),
        ("Other", 1),
        ("Rec", 4),
        ("Thrower", 1),
    ];
    assert_eq!(calls, BTreeMap::from(expected_calls), "calls per method on CoreCLR {runtime}");
}

fn by_time(runtime: &'static str, test: &str) {
    let r = call_tree(runtime, "time", test);
    let paths: Vec<&str> = r.folded.keys().map(String::as_str).collect();
    assert_eq!(paths, PATHS.iter().map(|(p, _)| *p).collect::<Vec<_>>(), "the same call paths");
    // A folded stack's weight is the exclusive time of the calls that ended on it.
    let mut exclusive: BTreeMap<&str, u64> = BTreeMap::new();
    for (path, ns) in &r.folded {
        *exclusive.entry(path.rsplit(';').next().unwrap()).or_default() += ns;
    }
    for (name, [_, inclusive, excl]) in &r.methods {
        assert_eq!(exclusive.get(name.as_str()), Some(excl), "{name}: table and folded stacks agree");
        assert!(inclusive >= excl && *excl > 0, "{name}: inclusive {inclusive} ≥ exclusive {excl} > 0");
    }
    // Inclusive = own exclusive + everything called beneath (the app's tree, exactly).
    let sum = |paths: &[&str]| paths.iter().map(|p| r.folded[*p]).sum::<u64>();
    let incl = |name: &str| r.methods[name][1];
    let all: Vec<&str> = paths.clone();
    assert_eq!(incl("Main"), sum(&all), "Main contains every hooked call");
    assert_eq!(incl("Middle"), sum(&["Main;Middle", "Main;Middle;Leaf"]));
    let thrower = [
        "Main;Catcher;Thrower",
        "Main;Catcher;Thrower;Leaf",
        "Main;Catcher;Thrower;Deeper",
        "Main;Catcher;Thrower;Deeper;Deepest",
    ];
    assert_eq!(incl("Catcher"), sum(&thrower) + sum(&["Main;Catcher"]));
    assert_eq!(incl("Thrower"), sum(&thrower), "unwound, still timed");
    assert_eq!(incl("Deeper"), sum(&thrower[2..]), "unwound, still timed");
    // Recursion: the outermost Rec call's time, not the sum over the nested ones.
    let rec: Vec<&str> = all.iter().copied().filter(|p| p.contains("Rec")).collect();
    assert_eq!(incl("Rec"), sum(&rec), "Rec's inclusive time is its outermost call's");
}

#[test]
fn call_tree_counts_on_coreclr_8() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(
        "call-tree",
        "8",
        "examples/call-tree on fast hooks: exact call paths and counts (loop, shared callee, recursion, an unwound call); inclusive = exclusive + callees, exactly",
    );
    by_calls("8", "call_tree_counts_on_coreclr_8");
    by_time("8", "call_tree_time_on_coreclr_8");
}

#[test]
fn call_tree_counts_on_coreclr_3() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("call-tree", "3", "");
    by_calls("3", "call_tree_counts_on_coreclr_3");
    by_time("3", "call_tree_time_on_coreclr_3");
}
