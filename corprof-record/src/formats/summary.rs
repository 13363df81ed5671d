//! The few lines the command prints at the end of a recording, so the terminal alone tells
//! where the time or the bytes went: the top frames by self and by total value (cpu), the top
//! allocated types and allocation sites (alloc), the slowest methods by exclusive time (calls).
//!
//! Pure functions over a [`Profile`]; the command adds its `corprof: ` prefix.

use std::collections::HashMap;

use crate::profile::{Profile, Unit};

/// Rows in each of the summary's lists.
pub const SUMMARY_TOP: usize = 10;

/// One row of a list: a name, its value and, in the calls mode, its calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub value: u64,
    pub count: u64,
}

/// The frames with the most value of their own (the leaf of each stack), most first.
pub fn top_self(profile: &Profile, top: usize) -> Vec<Row> {
    rank(profile.stacks.iter().filter_map(|(frames, e)| Some((frames.last()?.as_str(), e.value, e.count))), top)
}

/// The frames with the most value in total (their own and their callees'), most first; a frame
/// that recurses counts once per stack, and the bracketed frames (`[thread …]`, `[native]`) are
/// left out: they stand for no one function, and as roots under nearly every sample they would
/// head the list and say nothing about the code.
pub fn top_total(profile: &Profile, top: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for (frames, e) in &profile.stacks {
        let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
        for frame in frames.iter().filter(|f| !f.starts_with('[')) {
            if !seen.contains(&frame.as_str()) {
                seen.push(frame);
                rows.push((frame.as_str(), e.value, e.count));
            }
        }
    }
    rank(rows.into_iter(), top)
}

/// alloc: the types allocated most, by bytes (from each stack's `[alloc T]` leaf).
pub fn top_alloc_types(profile: &Profile, top: usize) -> Vec<Row> {
    rank(profile.stacks.iter().filter_map(|(frames, e)| Some((alloc_type(frames.last()?)?, e.value, 0))), top)
}

/// alloc: the allocation sites, by bytes: the frame that called into the allocation (the one
/// above the `[alloc T]` leaf), with the type it allocated.
pub fn top_alloc_sites(profile: &Profile, top: usize) -> Vec<Row> {
    let sites: Vec<(String, u64)> = profile
        .stacks
        .iter()
        .filter_map(|(frames, e)| {
            let [.., site, leaf] = frames.as_slice() else { return None };
            Some((format!("{site} → {}", alloc_type(leaf)?), e.value))
        })
        .collect();
    rank(sites.iter().map(|(name, value)| (name.as_str(), *value, 0)), top)
}

/// `T` of an `[alloc T]` frame.
fn alloc_type(frame: &str) -> Option<&str> {
    frame.strip_prefix("[alloc ")?.strip_suffix(']')
}

/// Sums the rows by name and keeps the `top` largest (ties by name, so the order is stable);
/// rows of no value are left out.
fn rank<'a>(rows: impl Iterator<Item = (&'a str, u64, u64)>, top: usize) -> Vec<Row> {
    let mut sums: HashMap<&str, (u64, u64)> = HashMap::new();
    for (name, value, count) in rows {
        let sum = sums.entry(name).or_default();
        sum.0 = sum.0.saturating_add(value);
        sum.1 = sum.1.saturating_add(count);
    }
    let mut rows: Vec<Row> = sums
        .into_iter()
        .filter(|(_, (value, _))| *value > 0)
        .map(|(name, (value, count))| Row { name: name.to_string(), value, count })
        .collect();
    rows.sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.name.cmp(&b.name)));
    rows.truncate(top);
    rows
}

/// The summary's lines (without the command's prefix): headings, then rows indented by two
/// spaces, each with its share of the whole. Nothing for an empty profile. Native frames are
/// named without their offsets, as the text format names them (a stripped library's frames are
/// one row, not one per address).
pub fn summary_lines(profile: &Profile, top: usize) -> Vec<String> {
    let merged = profile.without_offsets();
    let profile = merged.as_ref().unwrap_or(profile);
    let total = profile.total();
    if total == 0 {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let mut list = |heading: String, rows: Vec<Row>, show: &dyn Fn(&Row) -> String| {
        if rows.is_empty() {
            return;
        }
        lines.push(heading);
        for row in &rows {
            lines.push(format!("  {}  {:>5.1}%  {}", show(row), percent(row.value, total), row.name));
        }
    };
    match profile.unit {
        Unit::Samples => {
            let show = |r: &Row| format!("{:>8}", r.value);
            list(format!("top frames by self samples (of {total}):"), top_self(profile, top), &show);
            list(format!("top frames by total samples (of {total}):"), top_total(profile, top), &show);
        }
        Unit::Bytes => {
            let show = |r: &Row| format!("{:>10}", bytes(r.value));
            list(format!("top allocated types (of {}):", bytes(total)), top_alloc_types(profile, top), &show);
            list(format!("top allocation sites (of {}):", bytes(total)), top_alloc_sites(profile, top), &show);
        }
        Unit::Microseconds => {
            let show = |r: &Row| format!("{:>12} {:>10} calls", micros(r.value), r.count);
            list(format!("slowest methods by exclusive time (of {}):", micros(total)), top_self(profile, top), &show);
        }
    }
    lines
}

fn percent(value: u64, total: u64) -> f64 {
    value as f64 * 100.0 / total as f64
}

/// Bytes in binary units, as the allocator counts them: `512 B`, `1.5 KiB`, `3.2 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Microseconds as the largest unit that keeps them above 1: `850 µs`, `12.3 ms`, `4.50 s`.
pub fn micros(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} µs"),
        1_000..1_000_000 => format!("{:.1} ms", n as f64 / 1e3),
        _ => format!("{:.2} s", n as f64 / 1e6),
    }
}

/// heap: the types that retain the most bytes (the table's first rows, `stats` sorted as
/// [`crate::heap::type_stats`] gives them), each with its share of the snapshot's `total` bytes.
pub fn heap_summary_lines(stats: &[crate::heap::TypeStats], total: u64, top: usize) -> Vec<String> {
    if stats.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!("top types by retained bytes (of {} on the heap):", bytes(total))];
    for t in stats.iter().take(top) {
        lines.push(format!(
            "  {:>10}  {:>5.1}%  {:>9} objects  {}",
            bytes(t.retained),
            if total == 0 { 0.0 } else { percent(t.retained, total) },
            t.count,
            t.name
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(s: &str) -> Vec<String> {
        s.split(';').map(str::to_string).collect()
    }

    fn names(rows: &[Row]) -> Vec<(&str, u64)> {
        rows.iter().map(|r| (r.name.as_str(), r.value)).collect()
    }

    #[test]
    fn native_frames_are_summed_by_name_not_by_offset() {
        let mut p = Profile::new(Unit::Samples);
        p.add(&frames("[thread Main];App::Main;libcoreclr.so (+0x10)"), 30, 0);
        p.add(&frames("[thread Main];App::Main;libcoreclr.so (+0x20)"), 30, 0);
        p.add(&frames("[thread Main];App::Main"), 40, 0);
        let lines = summary_lines(&p, 10);
        assert_eq!(lines[1], "        60   60.0%  libcoreclr.so", "{lines:#?}");
        assert!(lines.iter().all(|l| !l.contains("(+0x")), "{lines:#?}");
    }

    #[test]
    fn cpu_frames_by_self_and_by_total() {
        let mut p = Profile::new(Unit::Samples);
        p.add(&frames("[thread Main];App::Main;App::Work"), 60, 0);
        p.add(&frames("[thread Main];App::Main;App::Work;App::Work"), 10, 0);
        p.add(&frames("[thread Main];App::Main"), 5, 0);
        p.add(&frames("[thread Worker];[native];App::Spin;App::Work"), 25, 0);
        assert_eq!(names(&top_self(&p, 10)), [("App::Work", 95), ("App::Main", 5)]);
        // App::Work recursing counts once per stack; no [thread …] or [native] row.
        assert_eq!(names(&top_total(&p, 10)), [("App::Work", 95), ("App::Main", 75), ("App::Spin", 25)]);
        assert_eq!(names(&top_total(&p, 2)), [("App::Work", 95), ("App::Main", 75)]);
        let lines = summary_lines(&p, 10);
        assert_eq!(lines[0], "top frames by self samples (of 100):");
        assert_eq!(lines[1], "        95   95.0%  App::Work");
        assert_eq!(lines[3], "top frames by total samples (of 100):");
        assert_eq!(lines[5], "        75   75.0%  App::Main");
        assert_eq!(lines.len(), 7);
    }

    #[test]
    fn alloc_types_and_sites() {
        let mut p = Profile::new(Unit::Bytes);
        p.add(&frames("[thread Main];App::Main;App::Fill;[alloc System.Byte[]]"), 3 << 20, 0);
        p.add(&frames("[thread Main];App::Main;[alloc System.Byte[]]"), 1 << 20, 0);
        p.add(&frames("[thread Main];App::Main;App::Name;[alloc System.String]"), 512, 0);
        p.add(&frames("[thread Main];App::Main;App::Zero;[alloc System.String]"), 0, 0);
        assert_eq!(names(&top_alloc_types(&p, 10)), [("System.Byte[]", 4 << 20), ("System.String", 512)]);
        assert_eq!(
            names(&top_alloc_sites(&p, 10)),
            [
                ("App::Fill → System.Byte[]", 3 << 20),
                ("App::Main → System.Byte[]", 1 << 20),
                ("App::Name → System.String", 512)
            ]
        );
        let lines = summary_lines(&p, 1);
        assert_eq!(
            lines,
            [
                "top allocated types (of 4.0 MiB):",
                "     4.0 MiB  100.0%  System.Byte[]",
                "top allocation sites (of 4.0 MiB):",
                "     3.0 MiB   75.0%  App::Fill → System.Byte[]",
            ]
        );
    }

    #[test]
    fn calls_slowest_methods_with_their_calls() {
        let mut p = Profile::new(Unit::Microseconds);
        p.add(&frames("App::Main;App::A"), 300, 3);
        p.add(&frames("App::Main"), 0, 1);
        p.add(&frames("App::Main;App::B;App::A"), 1_500, 10);
        p.add(&frames("App::Main;App::B"), 200, 10);
        let rows = top_self(&p, 10);
        assert_eq!(names(&rows), [("App::A", 1_800), ("App::B", 200)]);
        assert_eq!(rows[0].count, 13);
        let lines = summary_lines(&p, 10);
        assert_eq!(lines[0], "slowest methods by exclusive time (of 2.0 ms):");
        assert_eq!(lines[1], "        1.8 ms         13 calls   90.0%  App::A");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn an_empty_profile_says_nothing() {
        assert!(summary_lines(&Profile::new(Unit::Samples), 10).is_empty());
        let mut p = Profile::new(Unit::Microseconds);
        p.add(&frames("App::Main"), 0, 5);
        assert!(summary_lines(&p, 10).is_empty());
    }

    #[test]
    fn units_read_as_they_should() {
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 << 30), "5.0 GiB");
        assert_eq!(micros(999), "999 µs");
        assert_eq!(micros(12_345), "12.3 ms");
        assert_eq!(micros(4_500_000), "4.50 s");
    }

    #[test]
    fn heap_types_by_retained_bytes() {
        let s = crate::heap::Snapshot::from_objects(
            &[("Holder", 24, &[1, 2]), ("Node", 1000, &[]), ("Node", 1000, &[]), ("Lone", 48, &[])],
            &[0, 3],
        );
        let d = crate::heap::Dominators::compute(&s);
        let lines = heap_summary_lines(&crate::heap::type_stats(&s, &d), s.total_bytes(), 2);
        assert_eq!(
            lines,
            [
                "top types by retained bytes (of 2.0 KiB on the heap):",
                "     2.0 KiB   97.7%          1 objects  Holder",
                "     2.0 KiB   96.5%          2 objects  Node",
            ]
        );
    }
}
