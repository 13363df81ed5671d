//! Rules on Rust code (comments blanked).

use crate::lexer::lex;
use crate::{Repo, Violation, line_of, package_dir, report};

/// Whether the package in `dir` is corprof or depends on it.
fn uses_corprof(dir: &str) -> bool {
    let repo = Repo::get();
    let manifest = repo.read(&if dir.is_empty() { "Cargo.toml".to_string() } else { format!("{dir}/Cargo.toml") });
    dir.is_empty()
        || manifest.lines().any(|l| l.trim_start().starts_with("corprof ") || l.trim_start().starts_with("corprof="))
}

/// Where a lock may be taken past its poison by hand.
const OWN_LOCKS: &[(&str, &str)] = &[("src/sync.rs", "the helper itself")];

/// Whether `file` is one of the corprof package's own tests (tests/common, tests/runtime, …, not
/// the profiler crates under tests/): their locks keep tests apart, no profiler's state.
fn is_harness(file: &str) -> bool {
    package_dir(file).is_empty() && file.starts_with("tests/")
}

/// A lock is taken past its poison only through `corprof::sync` (`lock`, `read`, `write`: why
/// that is right is said there once), in corprof and every crate using it: no copy of the helper
/// and no `.lock().unwrap_or_else(…)` by hand.
#[test]
fn one_poisoned_lock_helper() {
    let repo = Repo::get();
    let mut found = Vec::new();
    for file in repo.files("", ".rs") {
        if OWN_LOCKS.iter().any(|(own, _)| file.starts_with(own))
            || is_harness(file)
            || !uses_corprof(package_dir(file))
        {
            continue;
        }
        let code = lex(&repo.read(file)).code;
        for (at, _) in code.match_indices(".unwrap_or_else(") {
            // The call before, whitespace and line breaks left out.
            let before: String = code[..at].chars().rev().filter(|c| !c.is_whitespace()).take(8).collect();
            let before: String = before.chars().rev().collect();
            if [".lock()", ".read()", ".write()"].iter().any(|l| before.ends_with(l)) {
                found.push(Violation::new(
                    file,
                    line_of(&code, at),
                    "a lock taken past its poison by hand: use corprof::sync::{lock, read, write}",
                ));
            }
        }
    }
    report("Poisoned locks are taken by hand instead of through corprof::sync:", found);
}

/// No glob import of corprof's crate root in src/: a glob's names are whichever items the header
/// happened to give, and a stand-in shadowed by it hides which code the build compiled. Code that
/// needs an interface or method a header may lack says so with the build's cfgs,
/// `corprof_iface = "…"` and `corprof_method = "…"`.
#[test]
fn no_glob_import_of_the_crate_root() {
    let repo = Repo::get();
    let mut found = Vec::new();
    for file in repo.files("src/", ".rs") {
        let code = lex(&repo.read(file)).code;
        let squeezed_lines = code.lines().enumerate().filter(|(_, l)| {
            let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            l.contains("usecrate::*;") || l.contains("usecrate::{*")
        });
        for (i, _) in squeezed_lines {
            found.push(Violation::new(
                file,
                i + 1,
                "`use crate::*`: name the items, or gate the code on a corprof_iface/corprof_method cfg",
            ));
        }
    }
    report("A glob import of the crate root:", found);
}
