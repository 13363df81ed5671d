//! `corprof-gen`: check annotations, draft missing ones, compare header versions, and show the
//! generated Rust — the same pipeline `cargo build` runs.

use clap::{Args, Parser, Subcommand};
use corprof_gen::{Config, INCLUDE_DIR_VAR, commands};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "corprof-gen", version, about = "corprof.h + annotation YAML → Rust bindings")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct Inputs {
    /// Folder holding the headers the annotations' headers.yaml lists (corprof.h, and cor.h), or
    /// a `:`-separated search path. Default: $CORPROF_INCLUDE_DIR, else ./headers.
    #[arg(long)]
    include: Option<std::ffi::OsString>,
    /// Folder of annotation YAML files (repeat to merge several); one of them has headers.yaml.
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
        /// Write drafts into this annotation file: new interfaces are appended, new methods and
        /// parameters of its interfaces go under their keys (others go to stdout).
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
        include_dirs,
        annotations_dirs: inputs.annotations.clone(),
        display_root: std::env::current_dir().unwrap_or_default(),
        root: "::corprof".to_string(),
    }
}

/// Writes to stderr, buffered (a million diagnostics are not a million writes); a closed or
/// full stderr is no reason to panic.
fn say(text: impl std::fmt::Display) {
    let mut err = std::io::BufWriter::new(std::io::stderr().lock());
    let _ = writeln!(err, "{text}").and_then(|()| err.flush());
}

fn main() -> ExitCode {
    let output = match Cli::parse().command {
        Command::Check(inputs) => commands::check(&config(&inputs)),
        Command::Expand(inputs) => commands::expand(&config(&inputs)),
        Command::Bootstrap { inputs, interfaces, write } => {
            commands::bootstrap(&config(&inputs), &interfaces, write.as_deref())
        }
        Command::Diff { old, new, annotations } => {
            commands::diff(&search_path(Some(old)), &search_path(Some(new)), &annotations)
        }
    };
    let output = match output {
        Ok(output) => output,
        Err(errors) => {
            say(errors);
            return ExitCode::FAILURE;
        }
    };
    // One buffer for them all: a million diagnostics are not a million writes.
    let mut err = std::io::BufWriter::new(std::io::stderr().lock());
    let _ = output.messages.iter().try_for_each(|m| writeln!(err, "{m}")).and_then(|()| err.flush());
    drop(err);
    // `expand | head` closes the pipe early, and a disk fills: one line, not a panic.
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(output.stdout.as_bytes()).and_then(|()| out.flush()) {
        say(format_args!("error: cannot write the output: {e}"));
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
