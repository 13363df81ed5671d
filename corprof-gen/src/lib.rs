//! corprof-gen: the runtime's headers (annotations/headers.yaml says which) + annotation YAML →
//! Rust bindings.
//!
//! The pipeline runs one way, one module per stage, each private to the crate:
//! `clang` (libclang wrappers) → `extract` (header → `ir`) → [`annotations`] (YAML → model) →
//! `resolve` (merge + validate, against what the header says: `contract`) → `classify`
//! (parameter kinds) → `view` (template models, Rust fragments as tokens) → Askama template →
//! syn + prettyplease → file (ARCHITECTURE.md describes each).
//!
//! What a user calls: [`build`] in a build script, [`generate`] with a [`Config`], the CLI's
//! [`commands`], the annotation model ([`annotations`], and [`bootstrap`]'s drafts), and
//! [`parse`] with [`check_annotations`] to check several annotation sets against headers parsed
//! once; all of them answer with [`diag`]'s diagnostics.

// The stages stay inside the crate, so that changing one is no change of the published crate;
// `tests/public_api.rs` lists the public items, so that a change to them is deliberate.
pub mod annotations;
pub mod bootstrap;
pub mod build;
pub(crate) mod capabilities;
mod clang;
pub(crate) mod classify;
pub mod commands;
pub(crate) mod contract;
mod decls;
pub mod diag;
pub(crate) mod diff;
pub(crate) mod extract;
pub(crate) mod idl;
pub(crate) mod infer;
pub(crate) mod input;
pub(crate) mod ir;
pub(crate) mod resolve;
pub(crate) mod types;
pub(crate) mod view;

pub use ir::Loc;

use annotations::Annotations;
use annotations::headers::{EntryHeaders, HeaderList};
use askama::Template;
use diag::{Diagnostic, Errors};
use std::path::{Path, PathBuf};

/// The env var naming the folder that holds corprof.h.
pub const INCLUDE_DIR_VAR: &str = "CORPROF_INCLUDE_DIR";

/// What to generate from. Which headers to parse is input, as the annotations are: the
/// `headers.yaml` of one of the annotation folders lists them ([`annotations::headers`]).
#[derive(Clone, Debug)]
pub struct Config {
    /// The header folders, searched in order: the first holds the entry headers (or some of them),
    /// later ones serve the rest and `#include_next`.
    pub include_dirs: Vec<PathBuf>,
    /// The folders of annotation YAML files, merged; one of them lists the headers.
    pub annotations_dirs: Vec<PathBuf>,
    /// Paths in messages are shown relative to this folder.
    pub display_root: PathBuf,
    /// How generated code names the runtime crate: `crate` inside corprof, `::corprof` elsewhere.
    pub root: String,
}

/// The generated file and what it was made from.
#[derive(Debug)]
pub struct Generated {
    pub code: String,
    /// Every file read: header, included files, annotations (for `rerun-if-changed`).
    pub inputs: Vec<String>,
    /// Warnings that did not stop generation.
    pub warnings: Vec<Diagnostic>,
    /// What the header declares, as cfgs (`corprof_iface = "…"`, `corprof_method = "…"`).
    pub cfgs: Vec<String>,
}

fn canonical(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter().map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())).collect()
}

/// The headers of `list` in the header folders `dirs` (as given, so messages show the paths the
/// user wrote). Before the list's own check (a required header no folder has is an error at its
/// line): a folder that is a file (`--include path/to/corprof.h` names the header where its
/// folder belongs), and a first folder that does not exist when the main header is nowhere.
pub(crate) fn entry_headers(dirs: &[PathBuf], list: &HeaderList) -> Result<EntryHeaders, Errors> {
    let main = list.main().map_or("the main header", |h| h.name.as_str());
    let mut errors = Errors::default();
    for file in dirs.iter().filter(|d| d.is_file()) {
        let folder = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        errors.push(
            Diagnostic::error(format!("header folder {} is a file: give the folder that holds {main}", file.display()))
                .help(format!("`--include {}` (or {INCLUDE_DIR_VAR}={0})", folder.display())),
        );
    }
    errors.check()?;
    let first = dirs.first().cloned().unwrap_or_default();
    if !first.is_dir() && !dirs.iter().any(|d| d.join(main).is_file()) {
        return Err(Diagnostic::error(format!("header folder {} does not exist", first.display()))
            .help(format!("set {INCLUDE_DIR_VAR} to a folder holding {main}, or run scripts/fetch-headers"))
            .into());
    }
    list.find(dirs, &extract::prelude_dir())
}

/// Parses the headers `list` names, found in `include_dirs`.
pub(crate) fn parse_headers(include_dirs: &[PathBuf], list: &HeaderList) -> Result<(ir::Header, EntryHeaders), Errors> {
    let entry = entry_headers(include_dirs, list)?;
    let header = extract::parse_header(&canonical(include_dirs), &entry.includes)?;
    Ok((header, entry))
}

/// The headers an annotation set lists, parsed once: what [`check_annotations`] checks annotation
/// sets against, without parsing the headers again for each.
pub struct Headers(ir::Header);

impl Headers {
    /// Every method of every interface, in declaration order: (interface, method, parameters).
    pub fn methods(&self) -> impl Iterator<Item = (&str, &str, Vec<&str>)> {
        self.0.interfaces.iter().flat_map(|i| {
            i.methods
                .iter()
                .map(move |m| (i.name.as_str(), m.name.as_str(), m.params.iter().map(|p| p.name.as_str()).collect()))
        })
    }
}

/// Parses the headers `list` names (an annotation set's [`HeaderList`]), found in `include_dirs`.
pub fn parse(include_dirs: &[PathBuf], list: &HeaderList) -> Result<Headers, Errors> {
    parse_headers(include_dirs, list).map(|(header, _)| Headers(header))
}

/// Checks `ann` against the parsed headers, as `corprof-gen check` does after parsing them:
/// every problem at once, or the warnings and notes.
pub fn check_annotations(headers: &Headers, ann: &Annotations) -> Result<Errors, Errors> {
    resolve::resolve(&headers.0, ann).map(|(_, warnings)| warnings)
}

/// What [`load_all`] reads, with the headers it parsed.
struct Loaded {
    api: resolve::Api,
    header: ir::Header,
    ann: Annotations,
    warnings: Errors,
    entry: EntryHeaders,
}

/// The annotations first: they say which headers to parse.
fn load_all(cfg: &Config) -> Result<Loaded, Errors> {
    let ann = Annotations::load_dirs(&cfg.annotations_dirs, &cfg.display_root);
    let header = match &ann {
        Ok(ann) => parse_headers(&cfg.include_dirs, &ann.headers),
        // Entries broken elsewhere: the list alone still says what to parse, so header problems
        // are reported with the annotations' (a broken or missing list is among those already).
        Err(_) => match HeaderList::load(&cfg.annotations_dirs, &cfg.display_root) {
            Ok(Some(list)) => parse_headers(&cfg.include_dirs, &list),
            _ => Err(Errors::default()),
        },
    };
    let ((header, entry), ann) = diag::both(header, ann)?;
    let (api, warnings) = resolve::resolve(&header, &ann)?;
    Ok(Loaded { api, header, ann, warnings, entry })
}

/// Runs the whole pipeline.
pub fn generate(cfg: &Config) -> Result<Generated, Errors> {
    let Loaded { api, header, ann, warnings, entry } = load_all(cfg)?;
    // What the annotations still give, taken before they go: the rest works from `api`, and
    // a big annotation set (a million entries) would otherwise stay in memory through bindgen,
    // the template and the formatting, the costliest steps in memory.
    let mut inputs = header.files.clone();
    inputs.extend(ann.files.iter().cloned());
    let cfgs = capabilities::cfgs(&header, &ann);
    drop(ann);
    let include_dirs = canonical(&cfg.include_dirs);
    let iface_names: Vec<&str> = header.interfaces.iter().map(|i| i.name.as_str()).collect();
    let types = types::generate(&include_dirs, &entry.includes, &iface_names, &header)?;
    let view = view::build(&api, &cfg.root, types)?;
    let text = view.render().map_err(|e| Errors::from(Diagnostic::error(format!("template failed: {e}"))))?;
    // After formatting: prettyplease keeps doc comments, not a file's leading `//` line.
    let code = format!("{}\n\n{}", generated_line(&entry.found), format_rust(&text)?);
    Ok(Generated { code, inputs, warnings: warnings.items, cfgs })
}

/// The first line of every generated file: what made it and that it is not for editing.
pub(crate) fn generated_line(headers: &[String]) -> String {
    format!(
        "// @generated by corprof-gen from {}: do not edit; change the header or the annotations.",
        headers.join(" + ")
    )
}

/// Parses generated text as Rust (so a template slip is caught here), formats it, and turns the
/// comment markers back into comments (see [`restore_comments`]).
pub(crate) fn format_rust(text: &str) -> Result<String, Errors> {
    match syn::parse_file(text) {
        Ok(file) => Ok(restore_comments(&prettyplease::unparse(&file))),
        Err(e) => {
            // Spans carry no line numbers outside proc macros: show the text around the problem.
            let shown: String = text.chars().take(2000).collect();
            Err(Diagnostic::error(format!("generated code does not parse: {e}"))
                .note(format!("generated text starts: {shown}"))
                .into())
        }
    }
}

/// The marker the template writes where a `// SAFETY:` comment belongs: syn drops comments, so
/// each travels through formatting as a statement (or item) `__safety__!("…");` of its own line,
/// and [`restore_comments`] turns it back into `// SAFETY: …`. A marker left over would not
/// compile (no such macro), so none is lost silently.
pub(crate) const SAFETY_MARKER: &str = "__safety__!(";

/// `__safety__!("text");` → `// SAFETY: text`, indentation kept; prettyplease may have spread a
/// long marker over three lines (`__safety__!(`, the literal, `);`).
pub(crate) fn restore_comments(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with(SAFETY_MARKER) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut marker = trimmed.to_string();
        while !marker.ends_with(");") {
            match lines.next() {
                Some(next) => marker.push_str(next.trim()),
                None => break,
            }
        }
        let literal = marker.strip_prefix(SAFETY_MARKER).and_then(|rest| rest.strip_suffix(");"));
        match literal.and_then(|lit| syn::parse_str::<syn::LitStr>(lit).ok()) {
            Some(lit) => {
                out.push_str(&line[..line.len() - trimmed.len()]);
                out.push_str("// SAFETY: ");
                out.push_str(&lit.value());
            }
            // Not a marker after all: kept, and rustc will say so.
            None => out.push_str(&marker),
        }
        out.push('\n');
    }
    out
}

/// Writes `content` to `path` unless the file already holds exactly that (keeps mtimes stable,
/// so nothing downstream rebuilds). Returns whether it wrote.
pub(crate) fn write_if_changed(path: &Path, content: &str) -> std::io::Result<bool> {
    // Only a regular file is read back (a FIFO would block the build); one the size of `content`.
    let cap = content.len() as u64;
    if input::read(path, cap).is_ok_and(|old| old == content.as_bytes()) {
        return Ok(false);
    }
    std::fs::write(path, content)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safety_markers_become_comments_after_formatting() {
        let long = "x".repeat(120);
        let text = format!(
            "fn f() {{ __safety__!(\"short `one`\"); unsafe {{ g() }}; __safety__!(\"{long}\"); unsafe {{ g() }} }}"
        );
        let code = format_rust(&text).unwrap();
        assert!(code.contains("    // SAFETY: short `one`\n    unsafe {"), "{code}");
        assert!(code.contains(&format!("    // SAFETY: {long}\n")), "{code}");
        assert!(!code.contains("__safety__"), "{code}");
    }
}
