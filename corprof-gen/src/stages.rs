//! The pipeline's order, as a test: each stage's files may use only the stages before it (and
//! `diag`, which every stage returns), never a later one. Takes the crate's own sources; gives
//! a failing test naming the file and the later stage it reaches for. ARCHITECTURE.md's "one way"
//! points here.

/// Each module (a file, or a folder's files) and its place in the pipeline: a file may use a
/// module of its own place or an earlier one. The extract stage's data (`ir`, with `idl`'s
/// attributes and `diag`'s locations in it) is every later stage's vocabulary; the tools drafting
/// annotations and the commands come after everything they drive.
const STAGES: &[(&str, u32)] = &[
    ("clang", 1),
    ("input", 1),
    ("diag", 2),
    ("idl", 2),
    ("ir", 2),
    ("decls", 2),
    ("extract", 2),
    ("annotations", 3),
    ("contract", 4),
    ("resolve", 5),
    ("capabilities", 5),
    ("classify", 6),
    ("types", 7),
    ("view", 8),
    ("lib", 9),
    ("diff", 9),
    ("infer", 10),
    ("bootstrap", 10),
    ("build", 11),
    ("commands", 11),
    ("main", 11),
];

fn place(module: &str) -> Option<u32> {
    STAGES.iter().find(|(m, _)| *m == module).map(|(_, p)| *p)
}

/// The crate modules a source text names: `crate::x::…` and the items of `use crate::{x, …}`.
fn used_modules(text: &str) -> Vec<String> {
    let word = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut used = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                used.extend(group.split(',').map(|item| word(item.trim())));
            }
            None => used.push(word(rest)),
        }
    }
    used
}

#[test]
fn each_stage_uses_only_earlier_stages() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let module = rel.iter().next().and_then(|m| m.to_str()).unwrap_or_default().trim_end_matches(".rs");
        if module == "stages" {
            continue;
        }
        let Some(own) = place(module) else {
            wrong.push(format!("{}: a module the pipeline does not place (add it to STAGES)", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable");
        // A module's own tests may build what a later stage reads; only the code counts.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for used in used_modules(code) {
            if let Some(theirs) = place(&used)
                && theirs > own
            {
                wrong.push(format!("{} uses `crate::{used}`, a later stage", rel.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn crate_paths_are_read_in_both_forms() {
    assert_eq!(used_modules("use crate::ir::CType; x(crate::diag::Errors)"), ["ir", "diag"]);
    assert_eq!(used_modules("use crate::{Config, build::entry_headers, ir};"), ["Config", "build", "ir"]);
}
