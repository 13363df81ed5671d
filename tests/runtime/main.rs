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
//! (`runtime_groups_exclude_each_other` below keeps the lock so, and the tidy test
//! `runtime_tests_take_the_runtime_lock_first` that every file is a module here and every test
//! takes it).

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
