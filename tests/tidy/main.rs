//! The tidy test: every rule kept by reading the repository's own text, in one binary (the model
//! is rust-analyzer's `xtask/src/tidy.rs`). Each rule is one `#[test]` named for what it keeps,
//! and its failure lists every offending place as `file:line: what is wrong`, so one run shows
//! them all.
//!
//! - `generator`: corprof-gen's pipeline order, the view and the template, the generated code's
//!   paths into corprof;
//! - `harness`: the runtime tests' lock, the harness's build command, the profiler crates'
//!   CLSIDs;
//! - `code`: one poisoned-lock helper, no glob of corprof's crate root;
//! - `prose`: no comment or document points at an issue number;
//! - `paths`: every `path::name` written in backticks names an item that exists.
//!
//! It lives beside the corprof crate's other tests, not in corprof-gen, because its rules span
//! the whole repository (src/, the generator, tests/, the guides) and it reads the bindings the
//! crate generated (`OUT_DIR`), which name the header's interfaces and the wrappers' methods; the
//! root package's tests are not published, so nothing here reaches a packaged crate.
//!
//! A new rule: a `#[test]` in the module it belongs to, reading files through [`Repo`] and
//! failing through [`report`]; a place a rule must not apply to is exempted in the rule, with
//! the reason beside it.

#[path = "../common/mod.rs"]
mod common;

mod code;
mod generator;
mod harness;
mod lexer;
mod paths;
mod prose;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository's files, as `git ls-files` lists them (tracked, and new files not ignored).
pub struct Repo {
    root: PathBuf,
    files: Vec<String>,
}

impl Repo {
    /// The repository this test was built from, read once per run.
    pub fn get() -> &'static Repo {
        static REPO: OnceLock<Repo> = OnceLock::new();
        REPO.get_or_init(|| {
            let root = common::repo_root();
            let out = std::process::Command::new("git")
                .args(["ls-files", "--cached", "--others", "--exclude-standard", "-z"])
                .current_dir(&root)
                .output()
                .expect("tidy lists the repository's files with git, which it cannot run");
            assert!(out.status.success(), "git ls-files failed: {}", String::from_utf8_lossy(&out.stderr));
            let mut files: Vec<String> = String::from_utf8(out.stdout)
                .expect("UTF-8 file names")
                .split('\0')
                .filter(|f| !f.is_empty() && root.join(f).is_file())
                .map(str::to_string)
                .collect();
            files.sort();
            files.dedup();
            Repo { root, files }
        })
    }

    /// The files whose repository path ends with `suffix` and starts with `prefix`.
    pub fn files<'a>(&'a self, prefix: &'a str, suffix: &'a str) -> impl Iterator<Item = &'a str> {
        self.files.iter().map(String::as_str).filter(move |f| f.starts_with(prefix) && f.ends_with(suffix))
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.root.join(file)
    }

    /// The text of `file` (a repository path).
    pub fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.path(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
    }
}

/// One place a rule finds wrong.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub file: String,
    pub line: usize,
    pub what: String,
}

impl Violation {
    pub fn new(file: &str, line: usize, what: impl Into<String>) -> Self {
        Violation { file: file.to_string(), line, what: what.into() }
    }
}

/// Fails with every violation, one `file:line: what` per line after `rule`'s explanation.
pub fn report(rule: &str, mut found: Vec<Violation>) {
    found.sort();
    found.dedup();
    if found.is_empty() {
        return;
    }
    let lines: Vec<String> = found.iter().map(|v| format!("{}:{}: {}", v.file, v.line, v.what)).collect();
    panic!("{rule}\n{} place(s):\n{}", lines.len(), lines.join("\n"));
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// `file`'s package: the folder of the nearest Cargo.toml above it (`""` for the root package).
pub fn package_dir(file: &str) -> &str {
    let repo = Repo::get();
    let mut dir = Path::new(file).parent();
    while let Some(d) = dir {
        if d.as_os_str().is_empty() {
            break;
        }
        if repo.path(&d.join("Cargo.toml").to_string_lossy()).is_file() {
            return &file[..d.as_os_str().len()];
        }
        dir = d.parent();
    }
    ""
}
