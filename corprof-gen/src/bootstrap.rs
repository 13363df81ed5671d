//! `corprof-gen bootstrap`: the drafts a header needs beyond the annotations written so far, and
//! how they go into the `--write` file without losing any of it. Interfaces new to every file
//! are appended; new methods and parameters of interfaces the file already has go under their
//! keys, the user's text and comments left as they are. What cannot be placed (an interface
//! annotated in another file, or written as a flow map) is left for printing.

use crate::annotations::outline::{Outline, lines_with_ends};
use crate::annotations::{Annotations, InterfaceAnn, ParamSpec};
use crate::diag::{Diagnostic, Errors, suggest};
use crate::infer;
use crate::ir::Header;

/// Method → drafted parameters.
pub type MethodDrafts = Vec<(String, Vec<(String, ParamSpec)>)>;

/// One interface's drafts.
#[derive(Clone, Debug)]
pub struct Draft {
    pub interface: String,
    /// Some annotation file already has an entry for the interface.
    pub annotated: bool,
    pub methods: MethodDrafts,
}

/// `--interface` names must be interfaces of the header.
pub fn check_interfaces(header: &Header, names: &[String]) -> Result<(), Errors> {
    let mut errors = Errors::default();
    for name in names.iter().filter(|n| header.interface(n).is_none()) {
        let mut d = Diagnostic::error(format!("unknown interface `{name}`: the header does not declare it"));
        if let Some(s) = suggest(name, header.interfaces.iter().map(|i| i.name.as_str())) {
            d = d.help(format!("did you mean `{s}`?"));
        }
        errors.push(d);
    }
    errors.check()
}

/// The drafts `header` needs beyond what `written` holds: every pointer parameter of callbacks,
/// of the main header's interfaces, of interfaces already annotated and of `extra`.
pub fn drafts(header: &Header, written: &[&Annotations], extra: &[String]) -> Vec<Draft> {
    let mut out = Vec::new();
    for iface in &header.interfaces {
        let named: Vec<&InterfaceAnn> = written.iter().filter_map(|a| a.interface(&iface.name)).collect();
        let wanted = header.is_callback(iface)
            || iface.loc.file == header.main_header
            || !named.is_empty()
            || extra.contains(&iface.name);
        if !wanted {
            continue;
        }
        let mut methods = Vec::new();
        for m in &iface.methods {
            let written: Vec<_> = named.iter().flat_map(|n| &n.methods).filter(|w| w.name == m.name).collect();
            let params = || written.iter().flat_map(|w| &w.params);
            let consumed: Vec<&str> = params().flat_map(|p| p.spec.consumes()).collect();
            let inferred: Vec<_> = m
                .params
                .iter()
                .filter(|p| !params().any(|wp| wp.name == p.name) && !consumed.contains(&p.name.as_str()))
                .filter_map(|p| infer::infer(m, p).map(|spec| (p.name.clone(), spec)))
                .collect();
            // Counts named by another draft (`len: pcTypeDefs`) need no entry of their own.
            let by_drafts: Vec<String> = inferred.iter().flat_map(|(_, s)| s.consumes().map(String::from)).collect();
            let params: Vec<_> = inferred.into_iter().filter(|(n, _)| !by_drafts.contains(n)).collect();
            if !params.is_empty() {
                methods.push((m.name.clone(), params));
            }
        }
        if !methods.is_empty() {
            out.push(Draft { interface: iface.name.clone(), annotated: !named.is_empty(), methods });
        }
    }
    out
}

/// The `--write` file's new text, and the drafts it cannot hold.
#[derive(Debug)]
pub struct Placed {
    pub text: String,
    pub left: Vec<Draft>,
    /// Parameters written into the file.
    pub written: usize,
}

/// Places `drafts` into `text` (the `--write` file as it is, perhaps empty).
pub fn place(text: &str, drafts: Vec<Draft>) -> Placed {
    let outline = Outline::scan(text);
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    // (after this line, depth, lines to insert): deeper ones first where two meet.
    let mut inserts: Vec<(u32, usize, String)> = Vec::new();
    let (mut appended, mut left, mut written) = (String::new(), Vec::new(), 0);
    for d in drafts {
        let Some(iface) = outline.key(&[&d.interface]) else {
            if d.annotated {
                left.push(d);
            } else {
                written += d.methods.iter().map(|(_, ps)| ps.len()).sum::<usize>();
                appended.push_str(nl);
                appended.push_str(&infer::draft_yaml(&d.interface, &d.methods).replace('\n', nl));
            }
            continue;
        };
        if iface.inline {
            left.push(d);
            continue;
        }
        let method_indent = iface.child_indent.unwrap_or(iface.indent() + 2);
        let step = method_indent.saturating_sub(iface.indent()).max(1);
        let mut rest = Vec::new();
        for (method, params) in d.methods {
            let entries = |indent: usize| -> String {
                params.iter().map(|(p, spec)| format!("{:indent$}{p}: {}{nl}", "", infer::spec_yaml(spec))).collect()
            };
            match outline.key(&[&d.interface, &method]) {
                Some(m) if m.inline => {
                    rest.push((method, params));
                    continue;
                }
                Some(m) => inserts.push((m.end, 2, entries(m.child_indent.unwrap_or(m.indent() + step)))),
                None => inserts.push((
                    iface.end,
                    1,
                    format!("{:method_indent$}{method}:{nl}{}", "", entries(method_indent + step)),
                )),
            }
            written += params.len();
        }
        if !rest.is_empty() {
            left.push(Draft { methods: rest, ..d });
        }
    }
    inserts.sort_by_key(|&(line, depth, _)| (line, std::cmp::Reverse(depth)));
    let mut out = String::with_capacity(text.len() + appended.len());
    let mut next = inserts.iter().peekable();
    for (i, line) in lines_with_ends(text).enumerate() {
        out.push_str(line);
        while let Some((_, _, lines)) = next.next_if(|&&(at, _, _)| at as usize == i + 1) {
            if !out.ends_with(['\n', '\r']) {
                out.push_str(nl);
            }
            out.push_str(lines);
        }
    }
    if !appended.is_empty() {
        if out.trim().is_empty() {
            out.push_str("# Drafted by `corprof-gen bootstrap`: review each entry, then remove `draft: true`.");
            out.push_str(nl);
        } else if !out.ends_with(['\n', '\r']) {
            out.push_str(nl);
        }
        out.push_str(&appended);
    }
    Placed { text: out, left, written }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::Direction;

    fn spec(dir: Direction) -> ParamSpec {
        ParamSpec { draft: true, ..ParamSpec::direction(dir) }
    }

    fn draft(interface: &str, annotated: bool, methods: &[(&str, &[&str])]) -> Draft {
        let methods = methods
            .iter()
            .map(|(m, ps)| (m.to_string(), ps.iter().map(|p| (p.to_string(), spec(Direction::Out))).collect()))
            .collect();
        Draft { interface: interface.to_string(), annotated, methods }
    }

    fn names(left: &[Draft]) -> Vec<String> {
        left.iter().flat_map(|d| d.methods.iter().map(move |(m, _)| format!("{}::{m}", d.interface))).collect()
    }

    #[test]
    fn drafts_go_under_the_keys_the_file_has_and_its_text_stays() {
        let text = "\
# reviewed by hand
IFoo:
    # the first method
    A:
        pA: in   # checked

    B:
IBar: { M: { p: in } }
";
        let drafts = vec![
            draft("IFoo", true, &[("A", &["pA2"]), ("B", &["pB"]), ("C", &["pC"])]),
            draft("IBar", true, &[("N", &["q"])]),
            draft("IElsewhere", true, &[("M", &["p"])]),
            draft("INew", false, &[("M", &["p"])]),
        ];
        let placed = place(text, drafts);
        assert_eq!(
            placed.text,
            "\
# reviewed by hand
IFoo:
    # the first method
    A:
        pA: in   # checked
        pA2: { dir: out, draft: true }

    B:
        pB: { dir: out, draft: true }
    C:
        pC: { dir: out, draft: true }
IBar: { M: { p: in } }

INew:
  M:
    p: { dir: out, draft: true }
"
        );
        assert_eq!(placed.written, 4);
        // A flow-style interface cannot take new lines; one annotated elsewhere is not here.
        assert_eq!(names(&placed.left), ["IBar::N", "IElsewhere::M"]);
        let ann = Annotations::parse("x.yaml", &placed.text).unwrap();
        assert_eq!(ann.interface("IFoo").unwrap().methods.len(), 3);
    }

    #[test]
    fn a_file_without_a_final_newline_or_with_crlf_keeps_its_form() {
        let placed = place("IFoo:\r\n  A:\r\n    p: in", vec![draft("IFoo", true, &[("A", &["q"]), ("B", &["r"])])]);
        assert_eq!(
            placed.text,
            "IFoo:\r\n  A:\r\n    p: in\r\n    q: { dir: out, draft: true }\r\n  B:\r\n    r: { dir: out, draft: true }\r\n"
        );
        let placed = place("IFoo:\n  A: # nothing yet", vec![draft("IFoo", true, &[("A", &["q"])])]);
        assert_eq!(placed.text, "IFoo:\n  A: # nothing yet\n    q: { dir: out, draft: true }\n");
        assert!(placed.left.is_empty());
    }

    #[test]
    fn an_empty_file_gets_a_heading_and_the_new_interfaces() {
        let placed = place("", vec![draft("INew", false, &[("M", &["p"])])]);
        assert_eq!(
            placed.text,
            "# Drafted by `corprof-gen bootstrap`: review each entry, then remove `draft: true`.\n\nINew:\n  M:\n    p: { dir: out, draft: true }\n"
        );
    }

    #[test]
    fn lines_are_counted_as_the_outline_counts_them() {
        for text in ["", "a", "a\n", "a\r\nb", "a\r\rb\n\n", "\r\n\r"] {
            let ends: Vec<&str> = lines_with_ends(text).collect();
            assert_eq!(ends.concat(), text);
            assert_eq!(ends.len(), crate::annotations::outline::lines(text).count(), "{text:?}");
        }
    }
}
