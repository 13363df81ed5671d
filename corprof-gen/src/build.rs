//! The build-script entry point: reads the settings from the environment, generates, writes
//! into OUT_DIR when the content changed, and reports like rustc (never panics).

use crate::diag::{Errors, Fold};
use crate::{Config, INCLUDE_DIR_VAR, generate, write_if_changed};
use std::path::{Path, PathBuf};

/// Name of the generated file in OUT_DIR.
pub(crate) const OUTPUT_FILE: &str = "corprof_bindings.rs";

/// Where the header folders come from: `CORPROF_INCLUDE_DIR` (one folder, or a `:`-separated
/// search path), else `headers/` beside the crate (what scripts/fetch-headers fills; the
/// annotations' header list says which files must be in it).
pub fn include_dirs(manifest_dir: &Path) -> Result<Vec<PathBuf>, Errors> {
    if let Some(value) = std::env::var_os(INCLUDE_DIR_VAR) {
        let dirs = std::env::split_paths(&value)
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| if d.is_absolute() { d } else { manifest_dir.join(d) })
            .collect();
        return Ok(dirs);
    }
    let fetched = manifest_dir.join("headers");
    if fetched.is_dir() {
        return Ok(vec![fetched]);
    }
    Err(crate::diag::Diagnostic::error(format!("{INCLUDE_DIR_VAR} is not set: corprof needs a folder holding corprof.h"))
        .help(format!(
            "export {INCLUDE_DIR_VAR}=/path/to/clr-headers/runtime-info15 (any folder with corprof.h), or run scripts/fetch-headers to download one into headers/"
        ))
        .into())
}

/// Runs the generator for the crate being built (the corprof crate: its `annotations/`, which
/// list the headers to read from `CORPROF_INCLUDE_DIR`); on failure prints every error and exits 1.
pub fn run() {
    report(default_config().and_then(|cfg| run_config(&cfg)));
}

/// Runs the generator with an explicit configuration (for crates that generate bindings of
/// their own, e.g. for a newer header), writing `OUTPUT_FILE` into OUT_DIR.
pub fn run_with(cfg: &Config) {
    report(run_config(cfg));
}

fn report(result: Result<(), Errors>) {
    if let Err(errors) = result {
        let (errors, folded) = errors.fold();
        for d in errors.warnings() {
            warn(&d.to_string());
        }
        warn_folded(&folded);
        eprintln!("{errors}");
        std::process::exit(1);
    }
}

/// One line per folded kind: `51 …` (cargo puts `warning:` before it).
fn warn_folded(folded: &[(Fold, usize)]) {
    for (kind, n) in folded {
        warn(&format!("{n} {}", kind.summary()));
    }
}

/// The configuration of the corprof crate's own build.
pub(crate) fn default_config() -> Result<Config, Errors> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    // Only an existing path: cargo reruns the script every time for a missing one.
    if manifest_dir.join("headers").exists() {
        println!("cargo:rerun-if-changed={}", manifest_dir.join("headers").display());
    }
    let include_dirs = include_dirs(&manifest_dir)?;
    Ok(Config {
        include_dirs,
        annotations_dirs: vec![manifest_dir.join("annotations")],
        display_root: manifest_dir,
        root: "crate".to_string(),
    })
}

fn run_config(cfg: &Config) -> Result<(), Errors> {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    println!("cargo:rerun-if-env-changed={INCLUDE_DIR_VAR}");
    println!("cargo:rerun-if-env-changed=LIBCLANG_PATH");
    for dir in cfg.annotations_dirs.iter().chain(&cfg.include_dirs) {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    let generated = generate(cfg)?;
    for input in &generated.inputs {
        println!("cargo:rerun-if-changed={input}");
    }
    // Notes (entries for interfaces this header lacks) are for `corprof-gen check`, not every build;
    // so are the single warnings of a folded kind, which the build counts in one line.
    let (warnings, folded) = Errors { items: generated.warnings.clone() }.fold();
    for w in warnings.items.iter().filter(|w| w.level == crate::diag::Level::Warning) {
        warn(&w.to_string());
    }
    warn_folded(&folded);
    write_if_changed(&out_dir.join(OUTPUT_FILE), &generated.code)
        .map_err(|e| crate::diag::Diagnostic::error(format!("cannot write {OUTPUT_FILE} into OUT_DIR: {e}")))?;
    // What the header declares, for `#[cfg(corprof_iface = "…")]` in the crate being built.
    for name in crate::capabilities::CFG_NAMES {
        println!("cargo::rustc-check-cfg=cfg({name}, values(any()))");
    }
    for cfg in &generated.cfgs {
        println!("cargo::rustc-cfg={cfg}");
    }
    Ok(())
}

/// For the corprof crate's build script: writes `golden_modules.rs` into OUT_DIR, one module per
/// fixture of `fixtures` that has an `expected.rs` (named after the folder, `-` → `_`), so that
/// tests/it/goldens.rs compiles every golden file without listing them. Writes an empty file when the
/// folder is absent (a packaged crate has no fixtures).
pub fn golden_modules(fixtures: &Path) {
    use std::fmt::Write as _;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    let mut code = String::new();
    if fixtures.is_dir() {
        println!("cargo:rerun-if-changed={}", fixtures.display());
        let mut dirs: Vec<PathBuf> =
            std::fs::read_dir(fixtures).into_iter().flatten().flatten().map(|e| e.path()).collect();
        dirs.sort();
        for dir in dirs.iter().filter(|d| d.join("expected.rs").is_file()) {
            let name = dir.file_name().map(|n| n.to_string_lossy().replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
            let path = dir.join("expected.rs").canonicalize().unwrap_or_else(|_| dir.join("expected.rs"));
            let _ = writeln!(
                code,
                "#[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, dead_code, clippy::all)]\n\
                 #[path = {:?}]\npub mod {};",
                path.display().to_string(),
                name.unwrap_or_default()
            );
        }
    }
    if let Err(e) = write_if_changed(&out_dir.join("golden_modules.rs"), &code) {
        warn(&format!("cannot write golden_modules.rs into OUT_DIR: {e}"));
    }
}

fn warn(text: &str) {
    for line in text.lines() {
        println!("cargo:warning={line}");
    }
}
