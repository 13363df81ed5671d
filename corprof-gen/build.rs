//! One `#[test]` per folder of tests/fixtures, for tests/golden.rs: a new fixture is a new test
//! with nothing to register, and a failing one is named in the test output.
use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let fixtures = Path::new("tests/fixtures");
    println!("cargo:rerun-if-changed={}", fixtures.display());
    let mut names: Vec<String> = std::fs::read_dir(fixtures)
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut tests = String::new();
    for name in &names {
        let f = name.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let _ = writeln!(tests, "#[test]\nfn fixture_{f}() {{\n    check({name:?});\n}}\n");
    }
    let _ = writeln!(tests, "const FIXTURES: &[&str] = &{names:?};");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("golden_tests.rs"), tests).expect("OUT_DIR is writable");
}
