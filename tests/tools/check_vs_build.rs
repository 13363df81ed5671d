//! `corprof-gen check` accepts exactly what builds: each folder of tests/check-vs-build/cases is
//! run through the CLI's `check` and through `cargo build` of a profiler crate generated from it
//! (tests/check-vs-build). Both succeed, or both fail with the same errors; a failing case's
//! errors are also pinned in its `expected.err` (`CORPROF_BLESS=1` rewrites them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A target folder of its own: the generated profiler crates' builds stay apart from the
/// workspace's (and from each other's runs).
fn cargo(target: &Path) -> Command {
    let mut c = crate::common::cargo_command();
    c.current_dir(repo()).env("CARGO_TARGET_DIR", target);
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `error: …` headlines, in order.
fn error_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim_start_matches("cargo:warning="))
        .filter(|l| l.starts_with("error: "))
        .map(String::from)
        .collect()
}

#[test]
fn check_accepts_exactly_what_builds() {
    let target = repo().join("target/check-vs-build");
    let cases_dir = repo().join("tests/check-vs-build/cases");
    let built = cargo(&target)
        .args(["build", "-q", "-p", "corprof-gen", "--features", "corprof-gen/cli", "-p", "check-vs-build"])
        .output()
        .unwrap();
    assert!(built.status.success(), "the ok case must build:\n{}", stderr(&built));
    let gen_bin = target.join("debug/corprof-gen");
    let bless = std::env::var_os("CORPROF_BLESS").is_some();

    let mut cases: Vec<PathBuf> = std::fs::read_dir(&cases_dir).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    assert!(cases.len() >= 6, "cases are missing");
    let mut failures = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let check = Command::new(&gen_bin)
            .current_dir(&case)
            .args(["check", "--include", ".", "--annotations", "."])
            .arg("--annotations")
            .arg(repo().join("tests/check-vs-build/headers"))
            .output()
            .unwrap();
        let build = cargo(&target)
            .args(["build", "-q", "-p", "check-vs-build"])
            .env("CORPROF_CHECK_CASE", &case)
            .output()
            .unwrap();
        let (check_err, build_err) = (stderr(&check), stderr(&build));
        if check.status.success() != build.status.success() {
            failures.push(format!(
                "{name}: check {} but cargo build {}\n--- check:\n{check_err}\n--- build:\n{build_err}",
                if check.status.success() { "passed" } else { "failed" },
                if build.status.success() { "passed" } else { "failed" },
            ));
            continue;
        }
        let expected_path = case.join("expected.err");
        if check.status.success() {
            assert!(!expected_path.exists(), "{name} builds: remove its expected.err");
            continue;
        }
        // The build script prints the same diagnostics (paths shown from the case folder).
        let missing: Vec<String> =
            error_lines(&check_err).into_iter().filter(|l| !build_err.contains(l.as_str())).collect();
        if !missing.is_empty() {
            failures.push(format!("{name}: cargo build did not report {missing:?}\n--- build:\n{build_err}"));
        }
        if bless {
            std::fs::write(&expected_path, &check_err).unwrap();
        } else if std::fs::read_to_string(&expected_path).ok().as_deref() != Some(check_err.as_str()) {
            failures.push(format!("{name}: check's errors differ from expected.err:\n{check_err}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
