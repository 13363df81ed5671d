//! A self-contained HTML treemap of the dominator tree aggregated by type path: each box is the
//! objects of one type reached (in the dominator tree) through the same types above them, its
//! area their retained bytes. A run of one type (a linked list, a tree of nodes) is one box:
//! the path records a type once however many of its objects follow each other. Nested boxes split their parent alternately across and down
//! (slice-and-dice), biggest first; boxes under 0.1% of the heap fold into "other".

use super::{Dominators, ROOT, Snapshot};
use std::collections::HashMap;
use std::io::{self, Write};

/// How deep type paths go; deeper objects count in their ancestor at this depth.
const MAX_DEPTH: u8 = 12;
/// Boxes smaller than this part of the heap fold into their parent's "other".
const MIN_FRACTION: f64 = 0.001;

/// One aggregated type path.
struct PathNode {
    type_id: u32,
    depth: u8,
    count: u64,
    retained: u64,
    children: Vec<u32>,
}

/// The type-path tree: node 0 is the virtual root.
fn type_paths(s: &Snapshot, d: &Dominators) -> Vec<PathNode> {
    let mut nodes = vec![PathNode { type_id: u32::MAX, depth: 0, count: 0, retained: 0, children: Vec::new() }];
    let mut index: HashMap<(u32, u32), u32> = HashMap::new();
    let mut node_of = vec![0u32; s.len()];
    // `order` puts every object after its dominators, so its parent's path node is known.
    for &o in &d.order {
        let parent = match d.idom[o as usize] {
            ROOT => 0,
            p => node_of[p as usize],
        };
        let t = s.type_of[o as usize];
        let up = &mut nodes[parent as usize];
        if up.type_id == t || up.depth >= MAX_DEPTH {
            // A run of one type, or too deep: its bytes are in its dominator's retained bytes
            // already; an object of the run counts in its box.
            up.count += u64::from(up.type_id == t);
            node_of[o as usize] = parent;
            continue;
        }
        let next = nodes.len() as u32;
        let node = *index.entry((parent, t)).or_insert(next);
        if node == next {
            let depth = nodes[parent as usize].depth + 1;
            nodes.push(PathNode { type_id: t, depth, count: 0, retained: 0, children: Vec::new() });
            nodes[parent as usize].children.push(node);
        }
        nodes[node as usize].count += 1;
        nodes[node as usize].retained += d.retained[o as usize];
        node_of[o as usize] = node;
    }
    nodes[0].retained = s.total_bytes();
    nodes[0].count = s.len() as u64;
    nodes
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A pale colour from the type's name, so one type looks the same everywhere.
fn colour(name: &str) -> String {
    let h = name.bytes().fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    format!("hsl({},60%,{}%)", h % 360, 78 + (h >> 9) % 12)
}

/// A size for the eye, in binary units named as such (a MiB is 2^20 bytes, a MB 10^6).
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

struct Render<'a> {
    s: &'a Snapshot,
    nodes: Vec<PathNode>,
    min: u64,
    html: String,
}

impl Render<'_> {
    fn node(&mut self, i: u32, path: &str) {
        let (type_id, count, retained, depth) = {
            let n = &self.nodes[i as usize];
            (n.type_id, n.count, n.retained, n.depth)
        };
        let name = &self.s.types[type_id as usize];
        let path = if path.is_empty() { name.clone() } else { format!("{path} → {name}") };
        let tip = format!("{path}\n{count} objects, {} retained", bytes(retained));
        self.html.push_str(&format!(
            "<div class=\"b\" style=\"flex:{retained} 1 0;background:{}\" title=\"{}\"><span>{} ×{count} · {}</span>",
            colour(name),
            escape(&tip),
            escape(name),
            bytes(retained)
        ));
        self.children(i, depth, &path);
        self.html.push_str("</div>");
    }

    fn children(&mut self, i: u32, depth: u8, path: &str) {
        let mut kids = self.nodes[i as usize].children.clone();
        if kids.is_empty() {
            return;
        }
        kids.sort_by_key(|&k| std::cmp::Reverse(self.nodes[k as usize].retained));
        let dir = if depth.is_multiple_of(2) { "row" } else { "column" };
        self.html.push_str(&format!("<div class=\"k\" style=\"flex-direction:{dir}\">"));
        let mut other = (0u64, 0u64);
        for k in kids {
            let n = &self.nodes[k as usize];
            if n.retained < self.min {
                other = (other.0 + n.count, other.1 + n.retained);
            } else {
                self.node(k, path);
            }
        }
        if other.1 > 0 {
            let tip = format!("{path}: smaller types\n{} objects, {} retained", other.0, bytes(other.1));
            self.html.push_str(&format!(
                "<div class=\"b o\" style=\"flex:{} 1 0\" title=\"{}\"><span>other</span></div>",
                other.1,
                escape(&tip)
            ));
        }
        // The parent's own bytes, so the children keep their share of its area.
        let own = self.nodes[i as usize].retained
            - self.nodes[i as usize].children.iter().map(|&k| self.nodes[k as usize].retained).sum::<u64>();
        if own > 0 {
            self.html.push_str(&format!("<div class=\"self\" style=\"flex:{own} 1 0\"></div>"));
        }
        self.html.push_str("</div>");
    }
}

/// The treemap as one HTML page with no outside resources, titled `title` (what was recorded,
/// how and when).
pub fn write_treemap(s: &Snapshot, d: &Dominators, title: &str, out: &mut dyn Write) -> io::Result<()> {
    let nodes = type_paths(s, d);
    let total = nodes[0].retained;
    let min = ((total as f64) * MIN_FRACTION) as u64;
    let mut r = Render { s, nodes, min: min.max(1), html: String::new() };
    r.children(0, 0, "");
    let summary = format!(
        "{} objects, {} in {} types; {} GC roots; {} objects not reached from a root",
        s.len(),
        bytes(total),
        s.types.len(),
        s.roots.len(),
        d.unrooted
    );
    write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\n\
         body{{margin:0;font:12px sans-serif;display:flex;flex-direction:column;height:100vh}}\n\
         header{{padding:6px 10px;background:#333;color:#eee}}\n\
         #map{{flex:1;display:flex;min-height:0}}\n\
         .k{{display:flex;flex:1;min-height:0;min-width:0}}\n\
         .b{{display:flex;flex-direction:column;border:1px solid #0006;box-sizing:border-box;overflow:hidden;min-width:0;min-height:0}}\n\
         .b>span{{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:1px 3px;flex:none}}\n\
         .b:hover{{outline:2px solid #000}}\n\
         .o{{background:#ddd}}\n\
         .self{{min-width:0;min-height:0}}\n\
         </style></head><body>\n<header>{} — retained bytes by type path in the dominator tree. {}</header>\n\
         <div id=\"map\">",
        escape(title),
        escape(title),
        escape(&summary)
    )?;
    out.write_all(r.html.as_bytes())?;
    writeln!(out, "</div>\n</body></html>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_in_binary_units_named_so() {
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
        assert_eq!(bytes(5 << 30), "5.0 GiB");
    }

    #[test]
    fn paths_aggregate_by_type_and_render() {
        let s = Snapshot::from_objects(
            &[
                ("App.Holder", 8, &[1, 2]),
                ("App.Node", 100, &[3]),
                ("App.Node", 100, &[4]),
                ("System.Byte[]", 1000, &[]),
                ("System.Byte[]", 1000, &[]),
            ],
            &[0],
        );
        let d = Dominators::compute(&s);
        let nodes = type_paths(&s, &d);
        // root → Holder → Node (2 objects) → Byte[] (2 objects)
        assert_eq!(nodes.len(), 4);
        assert_eq!((nodes[1].count, nodes[1].retained), (1, 2208));
        assert_eq!((nodes[2].count, nodes[2].retained), (2, 2200));
        assert_eq!((nodes[3].count, nodes[3].retained), (2, 2000));
        let mut html = Vec::new();
        write_treemap(&s, &d, "t", &mut html).unwrap();
        let html = String::from_utf8(html).unwrap();
        assert!(html.contains("App.Holder → App.Node → System.Byte[]"), "{html}");
        assert!(html.contains("flex:2200 1 0"), "{html}");
        assert_eq!(html.matches("<div").count(), html.matches("</div>").count(), "{html}");
    }
}

#[cfg(test)]
mod runs {
    use super::*;

    #[test]
    fn a_run_of_one_type_is_one_box() {
        // Holder → Link → Link → Link → Tail.
        let s = Snapshot::from_objects(
            &[("Holder", 1, &[1]), ("Link", 10, &[2]), ("Link", 10, &[3]), ("Link", 10, &[4]), ("Tail", 100, &[])],
            &[0],
        );
        let d = Dominators::compute(&s);
        let nodes = type_paths(&s, &d);
        let names: Vec<&str> = nodes[1..].iter().map(|n| s.types[n.type_id as usize].as_str()).collect();
        assert_eq!(names, ["Holder", "Link", "Tail"]);
        assert_eq!((nodes[2].count, nodes[2].retained), (3, 130));
        assert_eq!((nodes[3].count, nodes[3].retained), (1, 100));
    }
}
