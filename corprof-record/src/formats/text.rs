//! A top-N table, for a terminal: per frame, its self value (stacks ending in it), its total
//! (stacks containing it, counted once per stack however often it recurses), both as percentages
//! of the whole, and in calls mode the calls that ended in it. Sorted by self, then total, then
//! name, like `pprof -top`.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use super::unit_label;
use crate::profile::{Profile, Unit};

/// Rows of the table unless told otherwise.
pub const DEFAULT_TOP: usize = 20;

#[derive(Default)]
struct Row {
    self_value: u64,
    total: u64,
    calls: u64,
}

pub(super) fn write(profile: &Profile, title: &str, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let mut rows: HashMap<&str, Row> = HashMap::new();
    for (frames, entry) in &profile.stacks {
        let Some(leaf) = frames.last() else { continue };
        let row = rows.entry(leaf).or_default();
        row.self_value = row.self_value.saturating_add(entry.value);
        row.calls = row.calls.saturating_add(entry.count);
        let mut seen = HashSet::new();
        for frame in frames.iter().filter(|f| seen.insert(f.as_str())) {
            let row = rows.entry(frame).or_default();
            row.total = row.total.saturating_add(entry.value);
        }
    }
    let mut rows: Vec<(&str, Row)> = rows.into_iter().collect();
    rows.sort_by(|(a, ra), (b, rb)| (rb.self_value, rb.total).cmp(&(ra.self_value, ra.total)).then_with(|| a.cmp(b)));
    let shown = rows.len().min(top);
    let total = profile.total();
    let unit = unit_label(profile.unit);
    let with_calls = profile.unit == Unit::Microseconds;

    writeln!(out, "{title}")?;
    writeln!(out, "total {total} {unit}; top {shown} of {} frames by self {unit}", rows.len())?;
    let percent = |v: u64| match total {
        0 => "0.0%".to_string(),
        _ => format!("{:.1}%", v as f64 * 100.0 / total as f64),
    };
    let mut table: Vec<Vec<String>> = vec![["self", "self%", "total", "total%", "calls"].map(String::from).to_vec()];
    for (_, row) in &rows[..shown] {
        let cells = [
            row.self_value.to_string(),
            percent(row.self_value),
            row.total.to_string(),
            percent(row.total),
            row.calls.to_string(),
        ];
        table.push(cells.to_vec());
    }
    let columns = if with_calls { 5 } else { 4 };
    let widths: Vec<usize> =
        (0..columns).map(|c| table.iter().map(|cells| cells[c].chars().count()).max().unwrap_or(0)).collect();
    let names = std::iter::once("frame").chain(rows[..shown].iter().map(|(name, _)| *name));
    for (cells, name) in table.iter().zip(names) {
        for (cell, width) in cells.iter().zip(&widths) {
            write!(out, "{cell:>width$}  ")?;
        }
        writeln!(out, "{name}")?;
    }
    Ok(())
}
