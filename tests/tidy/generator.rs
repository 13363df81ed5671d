//! Rules on the generator's sources (corprof-gen/src), its template and its golden output.

use crate::{Repo, Violation, line_of, report};

/// Each module of corprof-gen (a file, or a folder's files) and its place in the pipeline: a file
/// may use a module of its own place or an earlier one, never a later one. The extract stage's
/// data (`ir`, with `idl`'s attributes and `diag`'s locations in it) is every later stage's
/// vocabulary; the tools drafting annotations and the commands come after everything they drive.
/// ARCHITECTURE.md's "one way" is this order.
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

/// The crate modules a source text names, each with its byte offset: `crate::x::…` and the items
/// of `use crate::{x, …}`.
fn used_modules(text: &str) -> Vec<(usize, String)> {
    let word = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut used = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                used.extend(group.split(',').map(|item| (i, word(item.trim()))));
            }
            None => used.push((i, word(rest))),
        }
    }
    used
}

#[test]
fn crate_paths_are_read_in_both_forms() {
    let names = |t: &str| used_modules(t).into_iter().map(|(_, m)| m).collect::<Vec<_>>();
    assert_eq!(names("use crate::ir::CType; x(crate::diag::Errors)"), ["ir", "diag"]);
    assert_eq!(names("use crate::{Config, build::entry_headers, ir};"), ["Config", "build", "ir"]);
}

/// The pipeline runs one way: each stage's files use only the stages before it (and `diag`,
/// which every stage returns), never a later one. A module's own tests may build what a later
/// stage reads; only the code before `#[cfg(test)]` counts.
#[test]
fn each_generator_stage_uses_only_earlier_stages() {
    let repo = Repo::get();
    let mut wrong = Vec::new();
    for file in repo.files("corprof-gen/src/", ".rs") {
        let rel = &file["corprof-gen/src/".len()..];
        let module = rel.split('/').next().unwrap_or_default().trim_end_matches(".rs");
        let Some(own) = place(module) else {
            wrong.push(Violation::new(
                file,
                1,
                format!("module `{module}` has no place in the pipeline (add it to STAGES)"),
            ));
            continue;
        };
        let text = repo.read(file);
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (at, used) in used_modules(code) {
            if let Some(theirs) = place(&used)
                && theirs > own
            {
                wrong.push(Violation::new(
                    file,
                    line_of(code, at),
                    format!("`{module}` uses `crate::{used}`, a later stage"),
                ));
            }
        }
    }
    report("A generator stage uses a later one (the order is STAGES in tests/tidy/generator.rs):", wrong);
}

const TEMPLATE: &str = "templates/bindings.rs.jinja";
const VIEWS: [&str; 2] = ["corprof-gen/src/view/mod.rs", "corprof-gen/src/view/wrappers.rs"];

/// The template prints what the view computed: no version from a loop's position, no name put
/// together from pieces (`IID_{{ … }}`, `{{ … }}_Vtbl`), no partition of its own.
#[test]
fn the_template_builds_no_names_and_no_numbers() {
    let template = Repo::get().read(TEMPLATE);
    let mut found = Vec::new();
    for built in ["loop.", "IID_{{", "}}_Vtbl", "is_metadata"] {
        for (at, _) in template.match_indices(built) {
            found.push(Violation::new(TEMPLATE, line_of(&template, at), format!("the template uses `{built}`")));
        }
    }
    report("The template builds a name or a number the view should compute:", found);
}

/// Item names come from `view/names.rs`: the view's own sources hold none of the spellings that
/// used to be repeated in them (and in the template, rule above). Their tests may.
#[test]
fn the_view_spells_no_names() {
    let mut found = Vec::new();
    for view in VIEWS {
        let text = Repo::get().read(view);
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for spelling in
            ["\"IID_", "_Vtbl\"", "_Vtbl::", "strip_prefix(\"Get\")", "_com\"", "strip_prefix('I')", "{}_{}__"]
        {
            for (at, _) in code.match_indices(spelling) {
                found.push(Violation::new(view, line_of(code, at), format!("the view spells `{spelling}` itself")));
            }
        }
    }
    report("The view spells a name that view/names.rs owns:", found);
}

/// Every field of a view struct (`pub struct …View`) is printed (or tested) by the template: a
/// field it never reads is a second home for something, or dead.
#[test]
fn the_template_reads_every_view_field() {
    let template = Repo::get().read(TEMPLATE);
    let mut unread = Vec::new();
    for view in VIEWS {
        let text = Repo::get().read(view);
        let mut in_view = false;
        for (i, line) in text.lines().enumerate() {
            if line.starts_with("pub struct ") {
                in_view = line.contains("View ");
            } else if line.starts_with('}') {
                in_view = false;
            } else if in_view && let Some((field, _)) = line.trim().strip_prefix("pub ").and_then(|f| f.split_once(':'))
            {
                let read = [
                    format!(".{field} "),
                    format!(".{field}."),
                    format!(".{field}}}"),
                    format!("{{{{ {field} "),
                    format!(" {field}."),
                    format!(" {field} %}}"),
                ]
                .iter()
                .any(|use_| template.contains(use_.as_str()));
                if !read {
                    unread.push(Violation::new(view, i + 1, format!("the template never reads view field `{field}`")));
                }
            }
        }
    }
    report("A view field the template never reads:", unread);
}

/// Generated code reaches corprof's runtime support only through `imp` (the one hidden module)
/// and the crate root: the modules behind `imp` can then move without a template change. Read in
/// every golden fixture's `expected.rs`.
#[test]
fn generated_code_reaches_below_the_root_only_through_imp() {
    let repo = Repo::get();
    let prefix = "::corprof::";
    let (mut seen_imp, mut found) = (false, Vec::new());
    for file in repo.files("corprof-gen/tests/fixtures/", "/expected.rs") {
        let code = repo.read(file);
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let segment: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let is_module =
                segment.starts_with(|c: char| c.is_ascii_lowercase()) && rest[segment.len()..].starts_with("::");
            if is_module && segment != "imp" {
                found.push(Violation::new(
                    file,
                    line_of(&code, at),
                    format!("generated code names `{prefix}{segment}::`"),
                ));
            }
            seen_imp |= is_module && segment == "imp";
        }
    }
    assert!(seen_imp, "no fixture output calls into `imp`: the rule saw nothing");
    report("Generated code reaches a corprof module other than `imp`:", found);
}
