//! Writes a recorded profile (the text form the profiler leaves, `corprof-profile <unit>` …) in
//! one of the output formats, without running anything: what scripts/render-pictures uses to
//! turn a recording into README images.
//!
//! `render <profile> <format> <out> [title]`

use std::path::Path;
use std::process::ExitCode;

use corprof_record::files;
use corprof_record::formats::{self, Format};
use corprof_record::profile::Profile;

fn main() -> ExitCode {
    // An argument that is not UTF-8 is a usage error, not a panic.
    let args: Option<Vec<String>> = std::env::args_os().skip(1).map(|a| a.into_string().ok()).collect();
    let Some([input, format, out, rest @ ..]) = args.as_deref() else {
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
    // Only a regular file, of at most 1 GiB (a FIFO would wait forever, a device never end).
    let bytes = files::read_regular(Path::new(input), 1 << 30)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{input}: no such file"))?;
    let text = String::from_utf8(bytes).map_err(|e| format!("{input}: {e}"))?;
    let profile = Profile::from_text(&text).map_err(|e| format!("{input}: {e}"))?;
    let title = title.unwrap_or(input);
    let mut bytes = Vec::new();
    formats::write(&profile, format, title, &mut bytes).map_err(|e| format!("{out}: {e}"))?;
    files::write_in_place(Path::new(out), |file| file.write_all(&bytes)).map_err(|e| e.to_string())
}
