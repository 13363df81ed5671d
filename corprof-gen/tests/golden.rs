//! Golden tests: each folder of tests/fixtures holds `input.h` and `annotations.yaml`, and either
//! `expected.rs` (the generated code) or `expected.err` (the diagnostics). The headers parsed are
//! the folder's own `headers.yaml`, else tests/fixtures/headers.yaml (its `input.h`). The build
//! script makes one test per folder (`fixture_<name>`). Run with `CORPROF_BLESS=1` to rewrite the
//! expectations after an intended change.

use corprof_gen::{Config, generate};
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/golden_tests.rs"));

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn run(dir: &Path) -> (String, bool) {
    let fixtures = fixture("");
    let mut annotations_dirs = vec![dir.to_path_buf()];
    if !dir.join("headers.yaml").is_file() {
        annotations_dirs.push(fixtures.clone());
    }
    let cfg = Config {
        include_dirs: vec![dir.to_path_buf()],
        annotations_dirs,
        display_root: dir.to_path_buf(),
        root: "::corprof".to_string(),
    };
    // Absolute paths differ per machine: show the fixture folder as `$FIXTURE`, and the folder of
    // the fixtures (their shared headers.yaml) as `$FIXTURES`.
    let (shown, all) = (dir.display().to_string(), fixtures.display().to_string());
    let all = all.trim_end_matches('/').to_string();
    let stable = |text: String| text.replace(&shown, "$FIXTURE").replace(&all, "$FIXTURES");
    match generate(&cfg) {
        Ok(g) => {
            let warnings: String =
                g.warnings.iter().map(|w| format!("// {}\n", w.to_string().replace('\n', "\n// "))).collect();
            (stable(format!("{warnings}{}", g.code)), true)
        }
        Err(e) => (stable(format!("{e}\n")), false),
    }
}

/// Generates the fixture and compares with (or, with `CORPROF_BLESS`, rewrites) its expectation.
fn check(name: &str) {
    let dir = fixture(name);
    let (actual, ok) = run(&dir);
    let expected_path = dir.join(if ok { "expected.rs" } else { "expected.err" });
    let other = dir.join(if ok { "expected.err" } else { "expected.rs" });
    if std::env::var_os("CORPROF_BLESS").is_some() {
        std::fs::write(&expected_path, &actual).unwrap();
        let _ = std::fs::remove_file(&other);
        return;
    }
    match std::fs::read_to_string(&expected_path) {
        Ok(expected) => assert!(
            expected == actual,
            "{name}: output differs from {}\n{}",
            expected_path.display(),
            diff(&expected, &actual)
        ),
        Err(_) => panic!(
            "{name}: generation {}, but there is no {} (run with CORPROF_BLESS=1)\n{actual}",
            if ok { "succeeded" } else { "failed" },
            expected_path.display()
        ),
    }
}

#[test]
fn the_fixtures_are_there() {
    assert!(FIXTURES.len() >= 5, "fixtures are missing: {FIXTURES:?}");
}

/// The first differing lines, enough to see what changed.
fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let first = e.iter().zip(&a).position(|(x, y)| x != y).unwrap_or(e.len().min(a.len()));
    let show = |v: &[&str]| v.iter().skip(first).take(6).map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n");
    format!("  first difference at line {}:\n  expected:\n{}\n  actual:\n{}", first + 1, show(&e), show(&a))
}
