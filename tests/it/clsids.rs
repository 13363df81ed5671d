//! Every profiler crate of the workspace has a CLSID of its own: two crates sharing one would
//! load each other's library in a test that names the CLSID of the one and the path of the other
//! only by luck, and notification profilers of one process must differ.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The crate roots under `dir`, at any depth: a folder's `src/lib.rs`, or its `lib.rs` beside its
/// `Cargo.toml` (the conformance library's, whose scenario folders hold modules).
fn crate_roots(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !matches!(path.file_name().and_then(|n| n.to_str()), Some("target" | "bin" | "obj")) {
            let lib = path.join("src/lib.rs");
            let beside = path.join("lib.rs");
            if lib.is_file() {
                found.push(lib);
            } else if beside.is_file() && path.join("Cargo.toml").is_file() {
                found.push(beside);
            }
            crate_roots(&path, found);
        }
    }
}

/// The GUIDs of the `const …CLSID: … = …GUID::parse("…")` lines (a library serving several
/// profilers, as the conformance one does, declares one constant each).
fn clsids_of(source: &str) -> Vec<String> {
    source
        .lines()
        .filter(|l| l.contains("CLSID: ") && l.contains("const ") && l.contains("GUID::parse(\""))
        .filter_map(|line| {
            let start = line.find("GUID::parse(\"")? + "GUID::parse(\"".len();
            let len = line[start..].find('"')?;
            Some(line[start..start + len].to_ascii_uppercase())
        })
        .collect()
}

#[test]
fn every_profiler_crate_has_its_own_clsid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut libs = Vec::new();
    for dir in ["tests", "examples", "bench"] {
        crate_roots(&root.join(dir), &mut libs);
    }
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for lib in &libs {
        let source = std::fs::read_to_string(lib).expect("readable crate root");
        for clsid in clsids_of(&source) {
            let name = lib.strip_prefix(root).unwrap_or(lib).display().to_string();
            owners.entry(clsid).or_default().push(name);
        }
    }
    assert!(owners.len() >= 24, "the scan found only {} CLSIDs: {owners:?}", owners.len());
    let shared: Vec<_> = owners.iter().filter(|(_, crates)| crates.len() > 1).collect();
    assert!(shared.is_empty(), "CLSIDs declared more than once: {shared:?}");
}
