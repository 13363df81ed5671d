//! `corprof`: run a .NET app under corprof's ready profiler and write what it recorded.
//!
//! `corprof record [options] -- <dotnet> <app.dll> [args…]` starts the app with the profiler
//! library (`libcorprof_record_profiler.so`, next to this binary) loaded through the
//! `CORECLR_*` variables; `corprof record --pid N --duration S [options]` attaches it to a
//! running app for S seconds. Either way the profiler writes its recording to a temporary file,
//! which this command reads and writes out in the format asked for (`cli/output.rs`). Every
//! failure is one line `corprof: …` on stderr and a non-zero status; otherwise the status is the
//! app's.

mod cli;

use cli::{Cli, Command};

fn main() {
    let result = Cli::parse_or_error().and_then(|cli| match cli.command {
        Command::Record(args) => cli::record::run(&args),
    });
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("corprof: {e}");
            std::process::exit(e.status());
        }
    }
}
