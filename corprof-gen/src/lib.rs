//! corprof-gen: corprof.h + annotation YAML → Rust bindings.
//!
//! The pipeline runs one way, one module per stage:
//! `clang` (libclang wrappers) → `extract` (header → [`ir`]) → [`annotations`] (YAML → model) →
//! [`resolve`] (merge + validate, against what the header says: [`contract`]) → [`classify`] (parameter kinds) → [`view`] (template models) →
//! Askama template → syn + prettyplease → file. [`generate`] runs it; [`build`] is what a build
//! script calls.

pub mod annotations;
pub mod bootstrap;
pub mod build;
mod clang;
pub mod classify;
pub mod contract;
pub mod diag;
pub mod extract;
pub mod infer;
pub mod ir;
pub mod resolve;
pub mod types;
pub mod view;

use askama::Template;
use diag::{Diagnostic, Errors};
use std::path::{Path, PathBuf};

/// The env var naming the folder that holds corprof.h.
pub const INCLUDE_DIR_VAR: &str = "CORPROF_INCLUDE_DIR";

/// What to generate from.
#[derive(Clone, Debug)]
pub struct Config {
    /// The header folders, searched in order: the first holds the entry headers (or some of them),
    /// later ones serve the rest and `#include_next`.
    pub include_dirs: Vec<PathBuf>,
    /// The entry headers' file names, parsed together in this order.
    pub headers: Vec<String>,
    /// The folders of annotation YAML files, merged.
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
}

/// Checks that the header folder and header exist, naming the setting when they do not.
pub fn check_include_dir(dir: &Path, header: &str) -> Result<PathBuf, Errors> {
    if !dir.is_dir() {
        return Err(Diagnostic::error(format!("header folder {} does not exist", dir.display()))
            .help(format!("set {INCLUDE_DIR_VAR} to a folder holding {header}, or run scripts/fetch-headers"))
            .into());
    }
    let path = dir.join(header);
    if !path.is_file() {
        return Err(Diagnostic::error(format!("no {header} in header folder {}", dir.display()))
            .help(format!("set {INCLUDE_DIR_VAR} to a folder holding {header}, or run scripts/fetch-headers"))
            .into());
    }
    Ok(path)
}

fn canonical(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter().map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())).collect()
}

/// Checks that `header` is in one of the folders (the first must exist).
pub fn check_include_dirs(dirs: &[PathBuf], header: &str) -> Result<PathBuf, Errors> {
    let first = dirs.first().cloned().unwrap_or_default();
    match dirs.iter().find(|d| d.join(header).is_file()) {
        Some(d) => Ok(d.join(header)),
        None => check_include_dir(&first, header),
    }
}

/// Parses the header and annotations and validates them together (the `check` of the CLI).
pub fn load(cfg: &Config) -> Result<(resolve::Api, ir::Header, annotations::Annotations, Errors), Errors> {
    let include_dirs = canonical(&cfg.include_dirs);
    for h in &cfg.headers {
        check_include_dirs(&include_dirs, h)?;
    }
    let header = extract::parse_header(&include_dirs, &cfg.headers);
    let ann = annotations::Annotations::load_dirs(&cfg.annotations_dirs, &cfg.display_root);
    // Report header and annotation problems together.
    let (header, ann) = diag::both(header, ann)?;
    let (api, warnings) = resolve::resolve(&header, &ann)?;
    Ok((api, header, ann, warnings))
}

/// Runs the whole pipeline.
pub fn generate(cfg: &Config) -> Result<Generated, Errors> {
    let (api, header, ann, warnings) = load(cfg)?;
    let include_dirs = canonical(&cfg.include_dirs);
    let iface_names: Vec<&str> = header.interfaces.iter().map(|i| i.name.as_str()).collect();
    let types = types::generate(&include_dirs, &cfg.headers, &iface_names, &header)?;
    let view = view::build(&api, &cfg.headers.join(" + "), &cfg.root, types)?;
    let text = view.render().map_err(|e| Errors::from(Diagnostic::error(format!("template failed: {e}"))))?;
    let code = format_rust(&text)?;
    let mut inputs = header.files.clone();
    inputs.extend(ann.files.iter().cloned());
    Ok(Generated { code, inputs, warnings: warnings.items })
}

/// Parses generated text as Rust (so a template slip is caught here) and formats it.
pub fn format_rust(text: &str) -> Result<String, Errors> {
    match syn::parse_file(text) {
        Ok(file) => Ok(prettyplease::unparse(&file)),
        Err(e) => {
            // Spans carry no line numbers outside proc macros: show the text around the problem.
            let shown: String = text.chars().take(2000).collect();
            Err(Diagnostic::error(format!("generated code does not parse: {e}"))
                .note(format!("generated text starts: {shown}"))
                .into())
        }
    }
}

/// Writes `content` to `path` unless the file already holds exactly that (keeps mtimes stable,
/// so nothing downstream rebuilds). Returns whether it wrote.
pub fn write_if_changed(path: &Path, content: &str) -> std::io::Result<bool> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == content) {
        return Ok(false);
    }
    std::fs::write(path, content)?;
    Ok(true)
}
