//! The output formats of `corprof record`: takes a [`Profile`] (frames root first, values in one
//! [`Unit`]) and gives it as a flame graph (SVG, or SVG in an HTML page), speedscope JSON, pprof
//! (gzipped protobuf), folded stacks, or a top-N text table.
//!
//! Everything here is behind the `cli` feature: the profiler library links this crate without
//! it and must not pull in the writers' dependencies.

mod flamegraph;
mod folded;
pub mod latency;
pub mod pprof;
mod speedscope;
pub mod summary;
mod text;

use std::fmt;
use std::io::{self, Write};

use crate::profile::{Profile, Unit};

pub use text::DEFAULT_TOP;

/// An output format, as named on the command line (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Svg,
    Html,
    Speedscope,
    Pprof,
    Folded,
    Text,
    /// The methods mode's figures ([`latency::write_json`]); a profile has no JSON of its own
    /// (speedscope's is JSON).
    Json,
}

/// A `--format` name that is none of [`Format::ALL`]'s.
#[derive(Debug, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        write!(f, "unknown format {:?} (one of {})", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownFormat {}

impl Format {
    pub const ALL: [Format; 7] =
        [Format::Svg, Format::Html, Format::Speedscope, Format::Pprof, Format::Folded, Format::Text, Format::Json];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Html => "html",
            Format::Speedscope => "speedscope",
            Format::Pprof => "pprof",
            Format::Folded => "folded",
            Format::Text => "text",
            Format::Json => "json",
        }
    }

    /// Reads a `--format` name.
    pub fn parse(name: &str) -> Result<Format, UnknownFormat> {
        Format::ALL.into_iter().find(|f| f.name() == name).ok_or_else(|| UnknownFormat(name.to_string()))
    }

    /// The file extension of the format's output (no dot), for the default output name.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Html => "html",
            // speedscope.app recognises its files by content; `.speedscope.json` is its convention.
            Format::Speedscope => "speedscope.json",
            Format::Pprof => "pb.gz",
            Format::Folded => "folded",
            Format::Text => "txt",
            Format::Json => "json",
        }
    }
}

/// What a format may use beyond the profile itself; [`write()`] uses the defaults.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// Shown as the flame graph's title, speedscope's name, the text table's first line.
    pub title: &'a str,
    /// Rows of the text table.
    pub top: usize,
    /// cpu mode: the sampling interval, so pprof can say how much time a sample stands for.
    pub sample_period: Option<pprof::Period>,
}

impl<'a> Options<'a> {
    pub fn new(title: &'a str) -> Options<'a> {
        Options { title, top: DEFAULT_TOP, sample_period: None }
    }
}

/// Writes `profile` in `format` to `out`; [`Format::Json`] is not a profile's format (an
/// `Unsupported` error).
pub fn write(profile: &Profile, format: Format, title: &str, out: &mut dyn Write) -> io::Result<()> {
    write_with(profile, format, &Options::new(title), out)
}

/// [`write()`] with every option.
pub fn write_with(profile: &Profile, format: Format, options: &Options<'_>, out: &mut dyn Write) -> io::Result<()> {
    // Native frames' offsets (`--native`) are kept by the raw formats; the others show the name
    // alone, the frames of one function (or one stripped library) merged.
    let merged;
    let profile = match format {
        Format::Speedscope | Format::Pprof => profile,
        _ => match profile.without_offsets() {
            Some(without) => {
                merged = without;
                &merged
            }
            None => profile,
        },
    };
    match format {
        Format::Svg => flamegraph::write_svg(profile, options.title, out),
        Format::Html => flamegraph::write_html(profile, options.title, out),
        Format::Speedscope => speedscope::write(profile, options.title, out),
        Format::Pprof => pprof::write(profile, options.sample_period, out),
        Format::Folded => folded::write(profile, out),
        Format::Text => text::write(profile, options.title, options.top, out),
        Format::Json => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "json is the methods mode's format; a profile's JSON is --format speedscope",
        )),
    }
}

/// How a unit reads in a sentence ("42 samples").
fn unit_label(unit: Unit) -> &'static str {
    match unit {
        Unit::Samples => "samples",
        Unit::Bytes => "bytes",
        Unit::Microseconds => "µs",
    }
}

/// A frame name as folded stacks can carry it: `;` separates frames and a line ends a stack.
fn folded_frame(name: &str) -> String {
    name.replace(';', ",").replace(['\n', '\r'], " ")
}

/// The stacks with a value, in the profile's (sorted) order: zero-valued stacks (a call that took
/// no measurable time) draw nothing and would only be noise in a flame graph.
fn valued_stacks(profile: &Profile) -> impl Iterator<Item = (&Vec<String>, u64)> {
    profile.stacks.iter().filter(|(_, e)| e.value > 0).map(|(frames, e)| (frames, e.value))
}
