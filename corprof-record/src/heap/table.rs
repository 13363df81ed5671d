//! Per-type statistics of a snapshot (count, shallow bytes, retained bytes) and the sorted text
//! table the command writes.

use super::{Dominators, ROOT, Snapshot};
use std::io::{self, Write};

/// One type's totals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeStats {
    pub name: String,
    pub count: u64,
    pub shallow: u64,
    /// The retained bytes of the type's objects that no other object of the type dominates.
    pub retained: u64,
}

/// The statistics of every type present, sorted by retained bytes, then shallow bytes, then name.
pub fn type_stats(s: &Snapshot, d: &Dominators) -> Vec<TypeStats> {
    let mut stats: Vec<TypeStats> =
        s.types.iter().map(|name| TypeStats { name: name.clone(), count: 0, shallow: 0, retained: 0 }).collect();
    for o in 0..s.len() {
        let t = &mut stats[s.type_of[o] as usize];
        t.count += 1;
        t.shallow += s.sizes[o];
    }
    // Walk the dominator tree depth-first, counting the types on the path from the root: an
    // object counts for its type only where no dominator above it has that type.
    let children = children(d);
    let mut on_path = vec![0u32; s.types.len()];
    let mut stack: Vec<(u32, bool)> = children.of(ROOT).iter().rev().map(|&c| (c, true)).collect();
    while let Some((o, entering)) = stack.pop() {
        let t = s.type_of[o as usize] as usize;
        if entering {
            if on_path[t] == 0 {
                stats[t].retained += d.retained[o as usize];
            }
            on_path[t] += 1;
            stack.push((o, false));
            stack.extend(children.of(o).iter().rev().map(|&c| (c, true)));
        } else {
            on_path[t] -= 1;
        }
    }
    stats.retain(|t| t.count > 0);
    stats.sort_by(|a, b| b.retained.cmp(&a.retained).then(b.shallow.cmp(&a.shallow)).then(a.name.cmp(&b.name)));
    stats
}

/// The dominator tree's children lists, in compressed rows (the virtual root's last).
pub(super) struct Children {
    start: Vec<u32>,
    list: Vec<u32>,
}

impl Children {
    pub(super) fn of(&self, object: u32) -> &[u32] {
        let i = if object == ROOT { self.start.len() - 2 } else { object as usize };
        &self.list[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

pub(super) fn children(d: &Dominators) -> Children {
    let n = d.idom.len();
    let slot = |p: u32| if p == ROOT { n } else { p as usize };
    let mut start = vec![0u32; n + 2];
    for &p in &d.idom {
        start[slot(p) + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut next = start.clone();
    let mut list = vec![0u32; n];
    // In `order`, so each row lists children in DFS order.
    for &o in &d.order {
        let p = slot(d.idom[o as usize]);
        list[next[p] as usize] = o;
        next[p] += 1;
    }
    Children { start, list }
}

/// A table of the `top` types by retained bytes (all with `None`), after a summary line.
pub fn write_table(
    s: &Snapshot,
    d: &Dominators,
    title: &str,
    out: &mut dyn Write,
    top: Option<usize>,
) -> io::Result<()> {
    let stats = type_stats(s, d);
    // One line: a title cannot start a row of the table.
    writeln!(out, "# {}", title.replace(['\n', '\r'], " "))?;
    writeln!(
        out,
        "# {} objects, {} bytes, {} types, {} roots, {} objects not reached from a root",
        s.len(),
        s.total_bytes(),
        stats.len(),
        s.roots.len(),
        d.unrooted
    )?;
    let width = stats.iter().map(|t| t.name.len()).max().unwrap_or(4).clamp(4, 100);
    writeln!(out, "{:<width$}  {:>10}  {:>14}  {:>14}", "Type", "Count", "Shallow", "Retained")?;
    for t in stats.iter().take(top.unwrap_or(usize::MAX)) {
        writeln!(out, "{:<width$}  {:>10}  {:>14}  {:>14}", t.name, t.count, t.shallow, t.retained)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_retains_its_list_once() {
        // Holder → Node → Node → Node → Payload, and a separate Node rooted directly.
        let s = Snapshot::from_objects(
            &[
                ("Holder", 1, &[1]),
                ("Node", 10, &[2]),
                ("Node", 10, &[3]),
                ("Node", 10, &[4]),
                ("Payload", 100, &[]),
                ("Node", 10, &[]),
            ],
            &[0, 5],
        );
        let d = Dominators::compute(&s);
        let stats = type_stats(&s, &d);
        let node = stats.iter().find(|t| t.name == "Node").unwrap();
        assert_eq!((node.count, node.shallow, node.retained), (4, 40, 140));
        // Node (140: the list and the lone node) before Holder (131).
        assert_eq!(stats[1].name, "Holder");
        assert_eq!(stats[1].retained, 131);
        let mut text = Vec::new();
        write_table(&s, &d, "App.dll — heap\nsecond line", &mut text, None).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().next(), Some("# App.dll — heap second line"), "{text}");
        assert!(text.lines().nth(3).unwrap().starts_with("Node"), "{text}");
        assert!(text.lines().nth(4).unwrap().starts_with("Holder"), "{text}");
    }
}
