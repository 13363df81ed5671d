//! The command line: what `corprof record` accepts ([`RecordArgs`]), and the one-line error
//! every failure ends in ([`Error`]).

pub mod output;
pub mod record;
pub mod signals;
pub mod status;

use clap::{Parser, Subcommand, ValueEnum};
use corprof_record::formats::Format;
use std::fmt;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "corprof",
    version,
    about = "Run a .NET app under a ready CoreCLR profiler and write what it recorded"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses the command line; a bad one is an [`Error`] of one line (help and version are
    /// printed by clap as usual, and the process exits).
    pub fn parse_or_error() -> Result<Cli, Error> {
        Cli::try_parse().map_err(|e| {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                e.exit();
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                return Error::usage("give a command: corprof record [options] -- <dotnet> <app.dll> [args…]");
            }
            // clap's message is several lines: what is wrong (its first paragraph), then usage and
            // a hint.
            let text = e.render().to_string();
            let what: Vec<&str> = text.lines().map(str::trim).take_while(|l| !l.is_empty()).collect();
            let what = what.join(" ");
            Error::usage(format!("{} (see corprof record --help)", what.trim_start_matches("error: ")))
        })
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Record an app: `corprof record [options] -- <dotnet> <app.dll> [args…]`, or attach to a
    /// running one: `corprof record --pid N --duration S [options]`.
    Record(RecordArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub struct RecordArgs {
    /// What to record.
    #[arg(long, value_enum, default_value_t = Mode::Cpu)]
    pub mode: Mode,
    /// cpu: milliseconds between samples, from 1 to 60000.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub interval_ms: u64,
    /// cpu: `wall` counts every thread at each sample, `cpu` weights each by the CPU time it used.
    #[arg(long, value_enum, default_value_t = Clock::Wall)]
    pub clock: Clock,
    /// cpu: `signal` (the default on Linux x86-64) interrupts each thread alone (a timer per
    /// thread, its frames read in a signal handler); `suspend` (the default elsewhere, and what
    /// serves if the signal sampler cannot start) stops the whole runtime each tick and walks
    /// every thread.
    #[arg(long, value_enum)]
    pub sampler: Option<Sampler>,
    /// cpu, signal sampler: record native frames (the runtime's GC, JIT and type loader, libc,
    /// P/Invoke targets) between the managed ones, named `lib!symbol` or `lib`, instead of one
    /// `[native]` per run of them.
    #[arg(long)]
    pub native: bool,
    /// alloc: `sampled` (about one allocation per 100 KB, weighted so totals are unbiased) or
    /// `exact` (every allocation).
    #[arg(long, value_enum, default_value_t = Alloc::Sampled)]
    pub alloc: Alloc,
    /// calls: hook only methods whose `Namespace.Type::Method` name contains this text (without
    /// it, the app's own code, not the framework's; `--filter ''` hooks every method).
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// methods: wrap the methods this `Namespace.Type::Method` pattern names (`*` for any run of
    /// characters, `+` between a nested type and its outer one); give it once per pattern.
    #[arg(long = "method", value_name = "PATTERN")]
    pub methods: Vec<String>,
    /// heap: take the snapshot this many milliseconds after the app starts (default: at its end),
    /// up to 86400000 (a day).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=86_400_000))]
    pub at_ms: Option<u64>,
    /// The output format: a flame graph (svg, the default) or another; heap: a treemap (html, the
    /// default) or a table (text); methods: latency histograms (svg, the default, or html), a
    /// table (text) or json.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// The output file (default `<mode>.<format's extension>`): a new file or a regular file to
    /// replace (a symlink to one writes that file); anything else is refused before the app starts.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Attach to this running .NET process instead of starting an app.
    #[arg(long, value_name = "PID", conflicts_with = "command", requires = "duration")]
    pub pid: Option<u32>,
    /// Seconds to record, from 0.001 to 86400: with --pid, then detach (the app runs on);
    /// else, then end the app as Ctrl-C would (SIGINT).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Once the output is written, open it with `xdg-open` (the desktop's browser or viewer);
    /// where there is none, the command says so and ends as it would have.
    #[arg(long)]
    pub open: bool,
    /// The runtime's `dotnet`, the app and its arguments (after `--`).
    #[arg(last = true, value_name = "DOTNET APP.DLL ARGS")]
    pub command: Vec<String>,
}

impl RecordArgs {
    /// The format asked for, or the mode's default.
    pub fn format(&self) -> Format {
        self.format.unwrap_or(if self.mode == Mode::Heap { Format::Html } else { Format::Svg })
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Cpu,
    Alloc,
    Heap,
    Calls,
    /// Wraps the methods `--method` names and times each call.
    Methods,
}

impl Mode {
    /// The name the profiler's `MODE` setting takes, and the default output's stem.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Cpu => "cpu",
            Mode::Alloc => "alloc",
            Mode::Heap => "heap",
            Mode::Calls => "calls",
            Mode::Methods => "methods",
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alloc {
    Sampled,
    Exact,
}

impl Alloc {
    pub fn name(self) -> &'static str {
        match self {
            Alloc::Sampled => "sampled",
            Alloc::Exact => "exact",
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampler {
    Signal,
    Suspend,
}

impl Sampler {
    pub fn name(self) -> &'static str {
        match self {
            Sampler::Signal => "signal",
            Sampler::Suspend => "suspend",
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Wall,
    Cpu,
}

impl Clock {
    pub fn name(self) -> &'static str {
        match self {
            Clock::Wall => "wall",
            Clock::Cpu => "cpu",
        }
    }
}

/// A failure: its one line (without the `corprof: ` prefix) and the exit status.
#[derive(Debug)]
pub struct Error {
    message: String,
    status: i32,
}

impl Error {
    /// A bad command line (status 2, as clap's).
    pub fn usage(message: impl Into<String>) -> Error {
        Error { message: message.into(), status: 2 }
    }

    /// Anything else (status 1).
    pub fn failed(message: impl Into<String>) -> Error {
        Error { message: message.into(), status: 1 }
    }

    /// With another exit status (the app's, when it failed too).
    pub fn with_status(mut self, status: i32) -> Error {
        self.status = status;
        self
    }

    pub fn status(&self) -> i32 {
        self.status
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the message held.
        f.write_str(&self.message.replace('\n', " "))
    }
}
