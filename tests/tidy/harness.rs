//! Rules on the test harness and the profiler crates it loads.

use crate::{Repo, Violation, common, report};
use std::collections::BTreeMap;

/// Every file of tests/runtime is a module of its binary (a file left out would never be
/// compiled, its tests silently gone), and every test in them takes the runtime lock as its first
/// statement, so that tests of one file run together and tests of two files never do
/// (tests/runtime/main.rs says why).
#[test]
fn runtime_tests_take_the_runtime_lock_first() {
    let repo = Repo::get();
    let main = repo.read("tests/runtime/main.rs");
    let files: Vec<&str> = repo.files("tests/runtime/", ".rs").filter(|f| !f.ends_with("/main.rs")).collect();
    assert!(files.len() > 20, "tests/runtime has only {files:?}");
    let mut found = Vec::new();
    for file in files {
        let rel = &file["tests/runtime/".len()..];
        if rel.contains('/') {
            continue;
        }
        let stem = rel.trim_end_matches(".rs");
        if !main.lines().any(|l| l == format!("mod {stem};")) {
            found.push(Violation::new(file, 1, "not declared in tests/runtime/main.rs"));
        }
        let text = repo.read(file);
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "#[test]" {
                continue;
            }
            // The `fn` line after any further attributes, then its first statement.
            let Some(f) = (i + 1..lines.len()).find(|&j| lines[j].trim_start().starts_with("fn ")) else {
                found.push(Violation::new(file, i + 1, "a #[test] without a fn"));
                continue;
            };
            let first = lines.get(f + 1).map_or("", |l| l.trim());
            if first != "let _runtime = runtime_lock();" {
                found.push(Violation::new(
                    file,
                    f + 1,
                    format!("{} does not take runtime_lock() first", lines[f].trim()),
                ));
            }
        }
    }
    report("A runtime test file is not compiled, or a test does not take the runtime lock first:", found);
}

/// The harness builds with scripts/test's own build command, so that both resolve the same
/// features and share one build of corprof (`common::WORKSPACE_BUILD`).
#[test]
fn the_harness_builds_as_the_test_command_does() {
    let script = Repo::get().read("scripts/test");
    let command = format!("cargo {}", common::WORKSPACE_BUILD.join(" "));
    let found = if script.lines().any(|l| l.trim() == command) {
        Vec::new()
    } else {
        vec![Violation::new(
            "scripts/test",
            1,
            format!("no line runs `{command}` (tests/common/mod.rs WORKSPACE_BUILD)"),
        )]
    };
    report("The harness's build differs from the test command's:", found);
}

/// The GUIDs of the `const …CLSID: … = …GUID::parse("…")` lines, with their lines (a library
/// serving several profilers, as the conformance one does, declares one constant each).
fn clsids_of(source: &str) -> Vec<(usize, String)> {
    source
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("CLSID: ") && l.contains("const ") && l.contains("GUID::parse(\""))
        .filter_map(|(i, line)| {
            let start = line.find("GUID::parse(\"")? + "GUID::parse(\"".len();
            let len = line[start..].find('"')?;
            Some((i + 1, line[start..start + len].to_ascii_uppercase()))
        })
        .collect()
}

/// Every profiler crate of the workspace has a CLSID of its own: two crates sharing one would
/// load each other's library in a test that names the CLSID of the one and the path of the other
/// only by luck, and notification profilers of one process must differ.
#[test]
fn every_profiler_crate_has_its_own_clsid() {
    let repo = Repo::get();
    let mut owners: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
    // Crate roots: a folder's `src/lib.rs`, and the conformance library's `lib.rs` (its scenario
    // folders hold modules).
    let roots = ["tests/", "examples/", "bench/"]
        .into_iter()
        .flat_map(|dir| repo.files(dir, "/src/lib.rs"))
        .chain(repo.files("tests/conformance/", "/lib.rs").filter(|f| *f == "tests/conformance/lib.rs"))
        .filter(|f| !f.split('/').any(|part| matches!(part, "bin" | "obj")));
    for lib in roots {
        for (line, clsid) in clsids_of(&repo.read(lib)) {
            owners.entry(clsid).or_default().push((lib.to_string(), line));
        }
    }
    assert!(owners.len() >= 24, "the scan found only {} CLSIDs: {owners:?}", owners.len());
    let mut found = Vec::new();
    for (clsid, crates) in owners.iter().filter(|(_, crates)| crates.len() > 1) {
        for (file, line) in crates {
            found.push(Violation::new(file, *line, format!("CLSID {clsid} is declared more than once")));
        }
    }
    report("Profiler crates share a CLSID:", found);
}
