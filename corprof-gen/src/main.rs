//! `corprof-gen`: check annotations, draft missing ones, compare header versions, and show the
//! generated Rust — the same pipeline `cargo build` runs.

use clap::{Args, Parser, Subcommand};
use corprof_gen::diag::{Diagnostic, Errors};
use corprof_gen::{Config, INCLUDE_DIR_VAR, build::entry_headers, infer, ir};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "corprof-gen", version, about = "corprof.h + annotation YAML → Rust bindings")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct Inputs {
    /// Folder holding corprof.h (and cor.h), or a `:`-separated search path.
    /// Default: $CORPROF_INCLUDE_DIR, else ./headers.
    #[arg(long)]
    include: Option<std::ffi::OsString>,
    /// Folder of annotation YAML files (repeat to merge several).
    #[arg(long, default_values = ["annotations"])]
    annotations: Vec<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and validate; print every problem at once; exit 1 on errors.
    Check(Inputs),
    /// Draft annotations for every method/parameter not yet annotated (marked `draft: true`).
    Bootstrap {
        #[command(flatten)]
        inputs: Inputs,
        /// Also draft these interfaces (besides callbacks and corprof.h's interfaces).
        #[arg(long = "interface")]
        interfaces: Vec<String>,
        /// Append drafts for interfaces with no entry yet to this file (others go to stdout).
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// Interfaces and methods added, removed or changed between two header folders, and the
    /// annotations the new one needs.
    Diff {
        old: std::ffi::OsString,
        new: std::ffi::OsString,
        #[arg(long, default_values = ["annotations"])]
        annotations: Vec<PathBuf>,
    },
    /// Print the generated Rust, formatted.
    Expand(Inputs),
}

fn search_path(value: Option<std::ffi::OsString>) -> Vec<PathBuf> {
    let value = value.or_else(|| std::env::var_os(INCLUDE_DIR_VAR)).unwrap_or_else(|| "headers".into());
    std::env::split_paths(&value).filter(|d| !d.as_os_str().is_empty()).collect()
}

fn config(inputs: &Inputs) -> Config {
    let include_dirs = search_path(inputs.include.clone());
    Config {
        headers: entry_headers(&include_dirs),
        include_dirs,
        annotations_dirs: inputs.annotations.clone(),
        display_root: std::env::current_dir().unwrap_or_default(),
        root: "::corprof".to_string(),
    }
}

fn report(items: &[Diagnostic]) {
    for d in items {
        eprintln!("{d}\n");
    }
}

fn fail(errors: Errors) -> ExitCode {
    eprintln!("{errors}");
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Check(inputs) => match corprof_gen::generate(&config(&inputs)) {
            Ok(g) => {
                report(&g.warnings);
                eprintln!("corprof-gen: ok ({} warning(s))", g.warnings.len());
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::Expand(inputs) => match corprof_gen::generate(&config(&inputs)) {
            Ok(g) => {
                report(&g.warnings);
                print!("{}", g.code);
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::Bootstrap { inputs, interfaces, write } => bootstrap(&config(&inputs), &interfaces, write.as_deref()),
        Command::Diff { old, new, annotations } => diff(&search_path(Some(old)), &search_path(Some(new)), &annotations),
    }
}

fn parse(include_dirs: &[PathBuf]) -> Result<ir::Header, Errors> {
    let dirs: Vec<PathBuf> = include_dirs.iter().map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())).collect();
    let headers = entry_headers(&dirs);
    for h in &headers {
        corprof_gen::check_include_dirs(&dirs, h)?;
    }
    corprof_gen::extract::parse_header(&dirs, &headers)
}

/// The annotation folders that exist, merged (none yet is fine for `bootstrap`).
fn load_annotations(dirs: &[PathBuf]) -> Result<corprof_gen::annotations::Annotations, Errors> {
    let existing: Vec<PathBuf> = dirs.iter().filter(|d| d.is_dir()).cloned().collect();
    corprof_gen::annotations::Annotations::load_dirs(&existing, &std::env::current_dir().unwrap_or_default())
}

/// The drafts `header` needs beyond `ann`: (interface, is it new to the annotations, methods).
type Drafts = Vec<(String, bool, Vec<(String, Vec<(String, corprof_gen::annotations::ParamSpec)>)>)>;

fn drafts(header: &ir::Header, ann: &corprof_gen::annotations::Annotations, extra: &[String]) -> Drafts {
    let mut out = Drafts::new();
    for iface in &header.interfaces {
        let named = ann.interface(&iface.name);
        let wanted = header.is_callback(iface)
            || iface.loc.file == header.main_header
            || named.is_some()
            || extra.contains(&iface.name);
        if !wanted {
            continue;
        }
        let mut methods = Vec::new();
        for m in &iface.methods {
            let written = named.and_then(|n| n.methods.iter().find(|mm| mm.name == m.name));
            let consumed: Vec<String> = written
                .map(|w| w.params.iter().flat_map(|p| p.spec.consumes().map(String::from)).collect())
                .unwrap_or_default();
            let inferred: Vec<_> = m
                .params
                .iter()
                .filter(|p| !written.is_some_and(|w| w.params.iter().any(|wp| wp.name == p.name)))
                .filter(|p| !consumed.contains(&p.name))
                .filter_map(|p| infer::infer(m, p).map(|spec| (p.name.clone(), spec)))
                .collect();
            // Counts named by another draft (`len: pcTypeDefs`) need no entry of their own.
            let by_drafts: Vec<String> = inferred.iter().flat_map(|(_, s)| s.consumes().map(String::from)).collect();
            let params: Vec<_> = inferred.into_iter().filter(|(n, _)| !by_drafts.contains(n)).collect();
            if !params.is_empty() {
                methods.push((m.name.clone(), params));
            }
        }
        if !methods.is_empty() {
            out.push((iface.name.clone(), named.is_none(), methods));
        }
    }
    out
}

fn bootstrap(cfg: &Config, extra: &[String], write: Option<&Path>) -> ExitCode {
    let header = match parse(&cfg.include_dirs) {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    let ann = match load_annotations(&cfg.annotations_dirs) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let all = drafts(&header, &ann, extra);
    if all.is_empty() {
        eprintln!("corprof-gen: every pointer parameter is annotated; nothing to draft");
        return ExitCode::SUCCESS;
    }
    let (mut appended, mut printed) = (String::new(), String::new());
    for (iface, is_new, methods) in &all {
        let yaml = infer::draft_yaml(iface, methods);
        if *is_new && write.is_some() {
            appended.push('\n');
            appended.push_str(&yaml);
        } else {
            printed.push_str(&yaml);
        }
    }
    if let Some(path) = write.filter(|_| !appended.is_empty()) {
        let mut text = std::fs::read_to_string(path).unwrap_or_default();
        if text.is_empty() {
            text.push_str("# Drafted by `corprof-gen bootstrap`: review each entry, then remove `draft: true`.\n");
        }
        text.push_str(&appended);
        if let Err(e) = std::fs::write(path, text) {
            return fail(Diagnostic::error(format!("cannot write {}: {e}", path.display())).into());
        }
        eprintln!("corprof-gen: appended drafts for new interfaces to {}", path.display());
    }
    if !printed.is_empty() {
        eprintln!("corprof-gen: drafts to merge by hand (existing entries are never rewritten):");
        print!("{printed}");
    }
    ExitCode::SUCCESS
}

fn signature(m: &ir::Method) -> String {
    let params: Vec<String> = m.params.iter().map(|p| format!("{} {}", p.ty, p.name)).collect();
    format!("{} {}({})", m.ret, m.name, params.join(", "))
}

fn diff(old: &[PathBuf], new: &[PathBuf], annotations: &[PathBuf]) -> ExitCode {
    let (old_h, new_h) = match corprof_gen::diag::both(parse(old), parse(new)) {
        Ok(both) => both,
        Err(e) => return fail(e),
    };
    for i in &new_h.interfaces {
        match old_h.interface(&i.name) {
            None => println!(
                "+ interface {} ({} methods, base {})",
                i.name,
                i.methods.len(),
                i.base.as_deref().unwrap_or("-")
            ),
            Some(o) => {
                for m in &i.methods {
                    match o.methods.iter().find(|om| om.name == m.name) {
                        None => println!("+ method {}::{}", i.name, signature(m)),
                        Some(om) if signature(om) != signature(m) => {
                            println!("~ method {}::{}\n    was {}", i.name, signature(m), signature(om))
                        }
                        Some(_) => {}
                    }
                }
                for om in o.methods.iter().filter(|om| !i.methods.iter().any(|m| m.name == om.name)) {
                    println!("- method {}::{}", i.name, om.name);
                }
            }
        }
    }
    for o in old_h.interfaces.iter().filter(|o| new_h.interface(&o.name).is_none()) {
        println!("- interface {}", o.name);
    }
    let ann = match load_annotations(annotations) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let needed = drafts(&new_h, &ann, &[]);
    let count: usize = needed.iter().flat_map(|(_, _, ms)| ms.iter().map(|(_, ps)| ps.len())).sum();
    if count == 0 {
        println!("annotations: complete for the new header");
    } else {
        let shown: Vec<String> = new.iter().map(|d| d.display().to_string()).collect();
        println!(
            "annotations: the new header needs {count} more (run `corprof-gen bootstrap --include {}`):",
            shown.join(":")
        );
        for (iface, _, methods) in &needed {
            print!("{}", infer::draft_yaml(iface, methods));
        }
    }
    ExitCode::SUCCESS
}
