//! Golden tests: each folder of tests/fixtures holds `input.h` and `annotations.yaml`, and either
//! `expected.rs` (the generated code) or `expected.err` (the diagnostics). Run with
//! `CORPROF_BLESS=1` to rewrite the expectations after an intended change.

use corprof_gen::{Config, generate};
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}

fn run(dir: &Path) -> (String, bool) {
    let cfg = Config {
        include_dirs: vec![dir.to_path_buf()],
        headers: vec!["input.h".to_string()],
        annotations_dirs: vec![dir.to_path_buf()],
        display_root: dir.to_path_buf(),
        root: "::corprof".to_string(),
    };
    // Absolute paths differ per machine: show the fixture folder as `$FIXTURE`.
    let shown = dir.display().to_string();
    let stable = |text: String| text.replace(&shown, "$FIXTURE");
    match generate(&cfg) {
        Ok(g) => {
            let warnings: String =
                g.warnings.iter().map(|w| format!("// {}\n", w.to_string().replace('\n', "\n// "))).collect();
            (stable(format!("{warnings}{}", g.code)), true)
        }
        Err(e) => (stable(format!("{e}\n")), false),
    }
}

#[test]
fn generated_code_and_errors_match_the_goldens() {
    let bless = std::env::var_os("CORPROF_BLESS").is_some();
    let mut failures = Vec::new();
    let all = fixtures();
    assert!(all.len() >= 5, "fixtures are missing");
    for dir in all {
        let (actual, ok) = run(&dir);
        let expected_path = dir.join(if ok { "expected.rs" } else { "expected.err" });
        let other = dir.join(if ok { "expected.err" } else { "expected.rs" });
        if bless {
            std::fs::write(&expected_path, &actual).unwrap();
            let _ = std::fs::remove_file(&other);
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!(
                "{}: output differs from {}\n{}",
                dir.display(),
                expected_path.display(),
                diff(&expected, &actual)
            )),
            Err(_) => failures.push(format!(
                "{}: generation {}, but there is no {} (run with CORPROF_BLESS=1)\n{actual}",
                dir.display(),
                if ok { "succeeded" } else { "failed" },
                expected_path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The first differing lines, enough to see what changed.
fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let first = e.iter().zip(&a).position(|(x, y)| x != y).unwrap_or(e.len().min(a.len()));
    let show = |v: &[&str]| v.iter().skip(first).take(6).map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n");
    format!("  first difference at line {}:\n  expected:\n{}\n  actual:\n{}", first + 1, show(&e), show(&a))
}
