//! A profiler crate built as a user would build it: outside this workspace, with a path
//! dependency on corprof, the README's "A profiler in a dozen lines" as its whole source, the
//! README's `.cargo/config.toml` naming the header folder (relative), and its
//! own target directory (kept in `target/outside-crate/` so that later runs only rebuild what
//! changed). The library it makes is then loaded by CoreCLR 8.0.4 and must log JIT compilations.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The first ```rust block after the README's "A profiler in a dozen lines" heading.
fn readme_profiler() -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let section = readme.split("## A profiler in a dozen lines").nth(1).expect("the README's profiler section");
    let block = section.split("```rust\n").nth(1).expect("a rust block in that section");
    block.split("\n```").next().expect("the block's end").to_string() + "\n"
}

/// The README's `.cargo/config.toml` (the ```toml block that sets `CORPROF_INCLUDE_DIR`), with its
/// path replaced by the header folder this test run uses, written relative as the README says.
fn readme_cargo_config(crate_dir: &Path) -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let block = readme
        .split("```toml\n")
        .filter_map(|b| b.split("\n```").next())
        .find(|b| b.contains("CORPROF_INCLUDE_DIR"))
        .expect("the README's .cargo/config.toml block");
    let value = block.split("value = \"").nth(1).and_then(|v| v.split('"').next()).expect("a `value = \"…\"`");
    assert!(block.contains("relative = true"), "the README's block reads the path relative to the crate");
    let headers = std::env::var("CORPROF_INCLUDE_DIR").expect("the test command sets CORPROF_INCLUDE_DIR");
    let headers = Path::new(&headers).canonicalize().expect("the header folder");
    format!("{}\n", block.replace(value, &relative(&headers, &crate_dir.canonicalize().unwrap())))
}

/// `path` from `base` (`../../x`), both absolute.
fn relative(path: &Path, base: &Path) -> String {
    let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    out.display().to_string()
}

/// Writes `text` to `path` unless it already holds it, so that cargo sees no change.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
}

fn cargo(dir: &Path) -> Command {
    let mut c = crate::common::cargo_command();
    c.current_dir(dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        // Settings cargo gives this test that would leak into a user's build.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        // The header folder comes from the crate's `.cargo/config.toml`, as in the README.
        .env_remove("CORPROF_INCLUDE_DIR");
    c
}

/// The crate's folder, laid out and built once per test run (both tests need it).
fn outside_crate() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(build_outside_crate)
}

/// Lays out the crate under `target/outside-crate/` and builds it.
fn build_outside_crate() -> PathBuf {
    let root = repo_root();
    let dir = root.join("target/outside-crate");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join(".cargo")).unwrap();
    write_if_changed(&dir.join(".cargo/config.toml"), &readme_cargo_config(&dir));
    let manifest = std::fs::read_to_string(root.join("tests/outside-crate/Cargo.toml.in")).unwrap();
    write_if_changed(&dir.join("Cargo.toml"), &manifest.replace("@CORPROF@", root.to_str().unwrap()));
    write_if_changed(&dir.join("src/lib.rs"), &readme_profiler());
    // The workspace's lock file pins the same versions the workspace was tested with (cargo drops
    // the entries this crate does not need), and lets the build run without the network.
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
    let out = cargo(&dir).args(["build", "--offline"]).output().expect("cannot run cargo");
    assert!(out.status.success(), "cargo build of the outside crate failed:\n{}", String::from_utf8_lossy(&out.stderr));
    dir
}

#[test]
fn the_readme_profiler_builds_outside_the_workspace_and_runs_in_coreclr_8() {
    let source = readme_profiler();
    let clsid = source
        .split("GUID::parse(\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the README's profiler has its CLSID in a GUID::parse constant");
    let lib = outside_crate().join("target/debug/libreadme_profiler.so");
    let run = run_profiled("8", "Workload", clsid, &lib, &[]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let jit_lines = run.stderr.lines().filter(|l| l.starts_with("JIT 0x") && l.contains(": token 0x")).count();
    assert!(jit_lines > 10, "the profiler logged {jit_lines} JIT compilations:\n{}", run.describe());
}

/// What the crate root's documentation lists, by kind: only what a profiler author uses.
const ROOT_ITEMS: &[&str] = &[
    "enum Callback",
    "enum HookMode",
    "fn is_quiet",
    "fn set_quiet",
    "macro export_profiler",
    "mod current_thread",
    "mod eventpipe",
    "mod files",
    "mod heap",
    "mod heap_walk",
    "mod hooks",
    "mod il",
    "mod info",
    "mod instrument",
    "mod interfaces",
    "mod metadata",
    "mod names",
    "mod object",
    "mod rewrite",
    "mod sig",
    "mod stack",
    "mod suspend",
    "mod sync",
    "mod threads",
    "mod types",
    "struct CallbackCounts",
    "struct ComPtr",
    "struct CorEnum",
    "struct GUID",
    "struct HResult",
    "struct IUnknown",
    "struct MetaDataAssemblyEmit",
    "struct MetaDataAssemblyImport",
    "struct MetaDataEmit",
    "struct MetaDataImport",
    "struct Out",
    "struct ProfilerInfo",
    "struct WStr",
    "trait CorProfilerCallback",
    "trait FamilyMember",
    "trait FreeThreaded",
    "trait FunctionHooks",
    "trait Interface",
    "trait Wrapper",
    "type HRESULT",
    "type Result",
];

/// `kind name` for every `title="kind corprof::name"` link of a rustdoc page's item lists.
fn listed_items(html: &str) -> Vec<String> {
    let mut items: Vec<String> = html
        .split("<dt><a class=\"")
        .skip(1)
        .filter_map(|s| s.split("title=\"").nth(1)?.split('"').next())
        .filter_map(|t| {
            let (kind, path) = t.split_once(' ')?;
            Some(format!("{kind} {}", path.strip_prefix("corprof::")?))
        })
        .collect();
    items.sort();
    items
}

/// `cargo doc` of corprof from the user's crate: no rustdoc warning, the root page lists exactly
/// [`ROOT_ITEMS`], and nothing of the generator's plumbing or bindgen's artifacts is documented.
#[test]
fn the_documented_surface_is_what_a_profiler_uses() {
    let dir = outside_crate();
    let out = cargo(dir)
        .args(["doc", "--offline", "--no-deps", "-p", "corprof"])
        .env("RUSTDOCFLAGS", "-Dwarnings")
        .output()
        .expect("cannot run cargo");
    assert!(out.status.success(), "cargo doc failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let doc = dir.join("target/doc/corprof");
    let index = std::fs::read_to_string(doc.join("index.html")).unwrap();
    assert_eq!(listed_items(&index), ROOT_ITEMS, "the crate root's public items");
    // Every documented path: none in the hidden modules, none of bindgen's helpers or stand-ins,
    // none of cor.h's EXTERN_GUID statics (no library defines them).
    let all = std::fs::read_to_string(doc.join("all.html")).unwrap();
    for module in ["imp", "com", "entry", "pointer_params", "wrapper_support", "wrappers", "bindings"] {
        assert!(!all.contains(&format!("href=\"{module}/")), "module {module} is documented");
    }
    for name in ["__Bindgen", "struct.IStream.html", "tagVARIANT", "types/static."] {
        assert!(!all.contains(name), "{name} is documented");
    }
    for module in ["info", "metadata"] {
        assert!(all.contains(&format!("href=\"{module}/struct.")), "{module} documents no struct");
    }
}
