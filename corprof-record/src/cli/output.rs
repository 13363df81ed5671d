//! The output formats, in ONE place: [`write_output`] takes a [`Profile`], a [`Format`] and a
//! path, and writes the file.
//!
//! Interim: only `folded` and `text` are written here, minimally; the other formats answer a
//! clear "not built yet" error before the app is started ([`Format::check_available`]).
//! `corprof_record::formats` (branch rec-formats) replaces this body with the real writers.

use corprof_record::profile::Profile;
use std::collections::HashMap;
use std::path::Path;

/// The formats the command line accepts.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Html,
    Speedscope,
    Pprof,
    Folded,
    Text,
}

impl Format {
    /// The default output's extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Html => "html",
            Format::Speedscope => "speedscope.json",
            Format::Pprof => "pb.gz",
            Format::Folded => "folded",
            Format::Text => "txt",
        }
    }

    /// `Err` with the reason if this build cannot write the format (checked before the app runs).
    pub fn check_available(self) -> Result<(), String> {
        match self {
            Format::Folded | Format::Text => Ok(()),
            other => Err(format!("the {other:?} format is not built yet; use --format folded or text").to_lowercase()),
        }
    }
}

/// Writes `profile` to `path` in `format`.
pub fn write_output(profile: &Profile, format: Format, path: &Path) -> Result<(), String> {
    format.check_available()?;
    let text = match format {
        Format::Folded => folded(profile),
        _ => text_table(profile, 30),
    };
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `root;…;leaf value` per stack (a `;` inside a frame name written as `,`).
fn folded(profile: &Profile) -> String {
    let mut out = String::new();
    for (frames, entry) in &profile.stacks {
        if entry.value == 0 {
            continue;
        }
        let frames: Vec<String> = frames.iter().map(|f| f.replace(';', ",")).collect();
        out.push_str(&format!("{} {}\n", frames.join(";"), entry.value));
    }
    out
}

/// The `top` frames by self value, with their total (inclusive) value.
fn text_table(profile: &Profile, top: usize) -> String {
    let mut by_frame: HashMap<&str, (u64, u64)> = HashMap::new();
    for (frames, entry) in &profile.stacks {
        if let Some(leaf) = frames.last() {
            by_frame.entry(leaf).or_default().0 += entry.value;
        }
        let mut seen = std::collections::HashSet::new();
        for frame in frames {
            if seen.insert(frame.as_str()) {
                by_frame.entry(frame).or_default().1 += entry.value;
            }
        }
    }
    let mut rows: Vec<_> = by_frame.into_iter().collect();
    rows.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(b.1.1.cmp(&a.1.1)).then(a.0.cmp(b.0)));
    let total = profile.total().max(1);
    let unit = profile.unit.name();
    let mut out = format!("{:>12} {:>6} {:>12} {:>6}  frame ({unit}, total {})\n", "self", "%", "total", "%", total);
    for (frame, (own, all)) in rows.into_iter().take(top) {
        let pct = |v: u64| v as f64 * 100.0 / total as f64;
        out.push_str(&format!("{own:>12} {:>5.1}% {all:>12} {:>5.1}%  {frame}\n", pct(own), pct(all)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use corprof_record::profile::Unit;

    fn profile() -> Profile {
        let mut p = Profile::new(Unit::Samples);
        let f = |s: &str| s.split(';').map(str::to_string).collect::<Vec<_>>();
        p.add(&f("[thread Heavy];App.Work::Heavy"), 20, 0);
        p.add(&f("[thread Light];App.Work::Light"), 10, 0);
        p.add(&f("[thread Light];App.Work::Rest;[native]"), 10, 0);
        p
    }

    #[test]
    fn folded_is_one_line_per_stack() {
        assert_eq!(
            folded(&profile()),
            "[thread Heavy];App.Work::Heavy 20\n[thread Light];App.Work::Light 10\n\
             [thread Light];App.Work::Rest;[native] 10\n"
        );
    }

    #[test]
    fn the_table_sorts_by_self_value() {
        let table = text_table(&profile(), 2);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[1].ends_with("App.Work::Heavy") && lines[1].contains("50.0%"), "{table}");
        assert!(lines[2].ends_with("App.Work::Light") && lines[2].contains("25.0%"), "{table}");
    }

    #[test]
    fn unbuilt_formats_say_so() {
        assert!(Format::Svg.check_available().unwrap_err().contains("not built yet"));
        assert!(Format::Folded.check_available().is_ok());
    }
}
