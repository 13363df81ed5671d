//! The output side of the command: which formats each mode writes, and writing them — the
//! profile modes through [`corprof_record::formats`], the heap snapshot as a table (`text`) or a
//! treemap (`html`).

use corprof_record::formats::{self, Format, Options, latency, pprof::Period};
use corprof_record::latency::MethodsReport;
use corprof_record::profile::Profile;
use corprof_record::{files, heap};
use std::io::Write;
use std::path::Path;

/// Which formats the heap mode writes: it has a snapshot, not stacks.
pub fn check_for_heap(format: Format) -> Result<(), String> {
    match format {
        Format::Text | Format::Html => Ok(()),
        other => Err(format!(
            "the heap mode writes a table (--format text) or a treemap (--format html), not {}",
            other.name()
        )),
    }
}

/// Which formats the profile modes (cpu, alloc, calls) write: all but the methods mode's JSON.
pub fn check_for_profile(format: Format) -> Result<(), String> {
    match format {
        Format::Json => Err("--format json is the methods mode's; a profile's JSON is --format speedscope".to_string()),
        _ => Ok(()),
    }
}

/// Which formats the methods mode writes: figures, not stacks.
pub fn check_for_methods(format: Format) -> Result<(), String> {
    match format {
        Format::Text | Format::Json | Format::Svg | Format::Html => Ok(()),
        other => Err(format!(
            "the methods mode writes a table (--format text), JSON (json) or latency histograms (svg, html), not {}",
            other.name()
        )),
    }
}

/// Writes the methods mode's `report` to `path` in `format` (one of [`check_for_methods`]).
pub fn write_methods(report: &MethodsReport, format: Format, title: &str, path: &Path) -> Result<(), String> {
    write_file(path, |out| match format {
        Format::Text => latency::write_text(report, out),
        Format::Json => latency::write_json(report, title, out),
        Format::Html => latency::write_html(report, title, out),
        _ => latency::write_svg(report, title, out),
    })
}

/// Writes `profile` to `path` in `format`; `period` is the cpu mode's sampling interval.
pub fn write_profile(profile: &Profile, format: Format, period: Option<Period>, path: &Path) -> Result<(), String> {
    let title = format!("corprof record ({})", profile.unit.name());
    let options = Options { title: &title, top: 30, sample_period: period };
    write_file(path, |out| formats::write_with(profile, format, &options, out))
}

/// Reads the heap snapshot at `snapshot`, computes its dominators and writes the table or the
/// treemap to `path`.
pub fn write_heap(snapshot: &Path, format: Format, path: &Path) -> Result<(), String> {
    let s =
        heap::read(snapshot).map_err(|e| format!("the profiler wrote a heap snapshot that does not read back: {e}"))?;
    let d = heap::Dominators::compute(&s);
    write_file(path, |out| match format {
        Format::Html => heap::write_treemap(&s, &d, out),
        _ => heap::write_table(&s, &d, out, Some(50)),
    })
}

/// Writes the output in place, only to a regular file ([`files::write_in_place`]: a FIFO, device
/// or folder named since the command checked it is refused, never waited on or replaced).
fn write_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), String> {
    files::write_in_place(path, write).map_err(|e| e.to_string())
}
