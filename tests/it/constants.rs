//! Constant names in one style: every `COR_PRF_*` enumerator of the runtime's `COR_PRF_*` types is
//! also reachable without the part of its name that repeats its type's (`COR_PRF_MONITOR::GC`,
//! `COR_PRF_MONITOR::ENABLE_STACK_SNAPSHOT`), checked over every enum of the generated bindings.

use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR};

/// The bindings the build generated from the header it was given.
const BINDINGS: &str = include_str!(concat!(env!("OUT_DIR"), "/corprof_bindings.rs"));

/// Enumerators with no short name, and why.
const NO_SHORT_NAME: &[(&str, &str)] = &[
    // `ALL` is COR_PRF_MONITOR_ALL's (the full type-name prefix goes first); a different mask.
    ("COR_PRF_MONITOR", "COR_PRF_ALL"),
];

#[test]
fn short_names_are_the_same_constants() {
    assert_eq!(COR_PRF_MONITOR::GC, COR_PRF_MONITOR::COR_PRF_MONITOR_GC);
    assert_eq!(COR_PRF_MONITOR::ENABLE_STACK_SNAPSHOT, COR_PRF_MONITOR::COR_PRF_ENABLE_STACK_SNAPSHOT);
    assert_eq!(COR_PRF_MONITOR::DISABLE_INLINING, COR_PRF_MONITOR::COR_PRF_DISABLE_INLINING);
    assert_eq!(
        COR_PRF_HIGH_MONITOR::ADD_ASSEMBLY_REFERENCES,
        COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES
    );
    assert_eq!(COR_PRF_HIGH_MONITOR::EVENT_PIPE, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_EVENT_PIPE);
}

#[test]
fn every_runtime_enumerator_has_a_short_name() {
    // `pub const COR_PRF_X: COR_PRF_TYPE = …` declares an enumerator; `pub const X: Self =
    // Self::COR_PRF_X;` inside `impl COR_PRF_TYPE` its short name.
    let mut current_impl = "";
    let mut enumerators: Vec<(String, String)> = Vec::new();
    let mut short: Vec<(String, String)> = Vec::new();
    for line in BINDINGS.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("impl ") {
            current_impl = rest.trim_end_matches(" {");
        }
        let Some(decl) = line.strip_prefix("pub const ") else { continue };
        let Some((name, rest)) = decl.split_once(": ") else { continue };
        if let Some(ty) = rest.split_once(" = ").map(|(ty, _)| ty).filter(|ty| ty.starts_with("COR_PRF_")) {
            if name.starts_with("COR_PRF_") {
                enumerators.push((ty.to_string(), name.to_string()));
            }
        } else if let Some(target) = rest.strip_prefix("Self = Self::").and_then(|t| t.strip_suffix(';')) {
            short.push((current_impl.to_string(), target.to_string()));
        }
    }
    assert!(enumerators.len() > 100, "the scan found only {} enumerators", enumerators.len());
    let missing: Vec<_> = enumerators
        .iter()
        .filter(|(ty, name)| !short.iter().any(|(t, n)| t == ty && n == name))
        .filter(|(ty, name)| !NO_SHORT_NAME.contains(&(ty.as_str(), name.as_str())))
        .collect();
    assert!(missing.is_empty(), "no short name: {missing:?}");
    for (ty, name) in NO_SHORT_NAME {
        assert!(enumerators.iter().any(|(t, n)| t == ty && n == name), "{ty}::{name} is no longer an enumerator");
    }
}
