//! The tests that start CoreCLR (8.0.4 and 3.1.23), in one binary: each module loads a profiler
//! crate of this workspace (examples/, tests/*-profiler, tests/conformance, corprof-record's
//! profiler), or the C reference profilers of bench/, into a C# app of tests/apps (built by
//! `scripts/setup`). The harness (`common`, shared with tests/tools) runs the test command's
//! workspace build (`common::WORKSPACE_BUILD`) before the first profiler is loaded, so
//! `cargo test --test runtime <filter>` needs nothing built first.
//!
//! libtest runs these tests on parallel threads, but their timing checks were written for one
//! binary per file, which cargo ran one after another: every test takes [`common::runtime_lock`]
//! first, so that tests of one file run together and tests of two files never do
//! (`runtime_lock_is_taken_first` and `runtime_groups_exclude_each_other` below keep it so).

#[path = "../common/mod.rs"]
mod common;
mod record_support;

mod assembly_emit;
mod attach;
mod call_tree;
mod conformance;
mod conformance_eventpipe;
mod conformance_ipc;
mod doors;
mod e2e;
mod elt;
mod elt_reference;
mod gate;
mod heap;
mod il_roundtrip;
mod instrument;
mod jit_tracer;
mod names;
mod objects;
mod oracle;
mod probe;
mod record_alloc;
mod record_calls;
mod record_settings;
mod rejit;
mod reliability;
mod rewrite;
mod stack;

/// Every file of tests/runtime is a module of this binary (a file left out would never be
/// compiled, its tests silently gone), and every test in them takes the runtime lock as its
/// first statement.
#[test]
fn runtime_lock_is_taken_first() {
    let dir = common::repo_root().join("tests/runtime");
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("tests/runtime/main.rs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/runtime")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && !p.ends_with("main.rs"))
        .collect();
    files.sort();
    assert!(files.len() > 20, "tests/runtime has only {files:?}");
    let mut missing = Vec::new();
    for file in &files {
        let stem = file.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file name");
        if !main.lines().any(|l| l == format!("mod {stem};")) {
            missing.push(format!("{stem}.rs: not declared in main.rs"));
        }
        let text = std::fs::read_to_string(file).expect("a module file");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "#[test]" {
                continue;
            }
            // The `fn` line after any further attributes, then its first statement.
            let Some(f) = (i + 1..lines.len()).find(|&j| lines[j].trim_start().starts_with("fn ")) else {
                missing.push(format!("{stem}.rs:{}: a #[test] without a fn", i + 1));
                continue;
            };
            let first = lines.get(f + 1).map_or("", |l| l.trim());
            if first != "let _runtime = runtime_lock();" {
                missing.push(format!("{stem}.rs:{}: {} does not take runtime_lock() first", f + 1, lines[f].trim()));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The harness builds with scripts/test's own build command, so that both resolve the same
/// features and share one build of corprof (`common::WORKSPACE_BUILD`).
#[test]
fn the_harness_builds_as_the_test_command_does() {
    let script = std::fs::read_to_string(common::repo_root().join("scripts/test")).expect("scripts/test");
    let command = format!("cargo {}", common::WORKSPACE_BUILD.join(" "));
    assert!(script.lines().any(|l| l.trim() == command), "scripts/test does not run `{command}`");
}

/// Tests of one group (file) run together, two groups never: a test of another group waits
/// until the last of the running group has left.
#[test]
fn runtime_groups_exclude_each_other() {
    use std::sync::mpsc;
    use std::time::Duration;
    let first = common::runtime_group("group a");
    let (entered, entries) = mpsc::channel();
    let other = std::thread::spawn(move || {
        let _b = common::runtime_group("group b");
        entered.send(()).unwrap();
    });
    let second = common::runtime_group("group a"); // the same group: at once
    assert!(entries.recv_timeout(Duration::from_millis(200)).is_err(), "group b ran beside group a");
    drop(first);
    assert!(entries.recv_timeout(Duration::from_millis(200)).is_err(), "group b ran beside group a");
    drop(second);
    entries.recv_timeout(Duration::from_secs(10)).expect("group b never ran after group a left");
    other.join().unwrap();
}
