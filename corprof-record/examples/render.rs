//! Writes a recorded profile (the text form the profiler leaves, `corprof-profile <unit>` …) in
//! one of the output formats, without running anything: what scripts/render-pictures uses to
//! turn a recording into README images.
//!
//! `render <profile> <format> <out> [title]`

use std::io::Write;
use std::process::ExitCode;

use corprof_record::formats::{self, Format};
use corprof_record::profile::Profile;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, format, out, rest @ ..] = args.as_slice() else {
        eprintln!("usage: render <profile> <svg|html|speedscope|pprof|folded|text> <out> [title]");
        return ExitCode::from(2);
    };
    match run(input, format, out, rest.first().map(String::as_str)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("render: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(input: &str, format: &str, out: &str, title: Option<&str>) -> Result<(), String> {
    let format = Format::parse(format).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(input).map_err(|e| format!("{input}: {e}"))?;
    let profile = Profile::from_text(&text).map_err(|e| format!("{input}: {e}"))?;
    let title = title.unwrap_or(input);
    let mut bytes = Vec::new();
    formats::write(&profile, format, title, &mut bytes).map_err(|e| format!("{out}: {e}"))?;
    let mut file = std::fs::File::create(out).map_err(|e| format!("{out}: {e}"))?;
    file.write_all(&bytes).map_err(|e| format!("{out}: {e}"))
}
