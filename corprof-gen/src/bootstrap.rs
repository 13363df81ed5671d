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
use std::collections::HashSet;

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
pub(crate) fn check_interfaces(header: &Header, names: &[String]) -> Result<(), Errors> {
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
pub(crate) fn drafts(header: &Header, written: &[&Annotations], extra: &[String]) -> Vec<Draft> {
    let mut out = Vec::new();
    for iface in &header.interfaces {
        let named: Vec<&InterfaceAnn> = written.iter().filter_map(|a| a.interface(&iface.name)).collect();
        let wanted = header.is_callback(iface)
            || *iface.loc.file == *header.main_header
            || !named.is_empty()
            || extra.contains(&iface.name);
        if !wanted {
            continue;
        }
        let mut methods = Vec::new();
        for m in &iface.methods {
            let idl_of: infer::IdlOf<'_> = &|param| header.idl.get(&crate::idl::key(&iface.name, &m.name, param));
            let written: Vec<_> = named.iter().flat_map(|n| &n.methods).filter(|w| w.is_for(&m.name)).collect();
            let params = || written.iter().flat_map(|w| &w.params);
            let consumed: Vec<&str> = params().flat_map(|p| p.spec.consumes()).collect();
            let inferred: Vec<_> = m
                .params
                .iter()
                .filter(|p| !params().any(|wp| wp.name == p.name) && !consumed.contains(&p.name.as_str()))
                .filter_map(|p| infer::infer(m, p, idl_of).map(|spec| (p.name.clone(), spec)))
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

/// Places `drafts` into `text` (the `--write` file as it is, perhaps empty). The result is
/// checked: it loads, keeps every entry the file had and holds every placed one; if not (YAML
/// has forms the outline does not follow), nothing is placed and every draft is left.
pub fn place(text: &str, drafts: Vec<Draft>) -> Placed {
    let unplaced = |drafts| Placed { text: text.to_string(), left: drafts, written: 0 };
    let Ok(model) = Annotations::parse("", text) else {
        return unplaced(drafts);
    };
    let (placed, entries) = compose(text, &model, drafts.clone());
    let Ok(new) = Annotations::parse("", &placed.text) else {
        return unplaced(drafts);
    };
    let have = triples(&new);
    let kept = triples(&model).iter().all(|t| have.contains(t));
    let added = entries.iter().all(|(i, m, p)| have.contains(&(i.as_str(), m.as_str(), p.as_str())));
    if kept && added && have.len() == triples(&model).len() + entries.len() { placed } else { unplaced(drafts) }
}

/// (interface, method, parameter) of every entry; a method without parameters has one with "".
fn triples(ann: &Annotations) -> HashSet<(&str, &str, &str)> {
    let mut out = HashSet::new();
    for i in &ann.interfaces {
        for m in &i.methods {
            out.insert((i.name.as_str(), m.name.as_str(), ""));
            out.extend(m.params.iter().map(|p| (i.name.as_str(), m.name.as_str(), p.name.as_str())));
        }
    }
    out
}

/// The placing itself, and the entries it placed (new methods count with "" too).
fn compose(text: &str, model: &Annotations, drafts: Vec<Draft>) -> (Placed, Vec<(String, String, String)>) {
    // Only what the outline sees as the model has it takes new lines: an entry written as an
    // explicit `? key`, say, is in the model but not in the outline.
    let outline = Outline::scan(text);
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let root_indent = outline.key(&[]).and_then(|root| root.child_indent).unwrap_or(0);
    // (after this line, depth, lines to insert): deeper ones first where two meet.
    let mut inserts: Vec<(u32, usize, String)> = Vec::new();
    let (mut appended, mut left, mut entries) = (String::new(), Vec::new(), Vec::new());
    let mut placed = |i: &str, m: &str, params: &[(String, ParamSpec)], new_method: bool| {
        let names = params.iter().map(|(p, _)| p.as_str()).chain(new_method.then_some(""));
        entries.extend(names.map(|p| (i.to_string(), m.to_string(), p.to_string())));
    };
    for d in drafts {
        let in_model = model.interface(&d.interface);
        let Some(iface) = outline.key(&[&d.interface]).filter(|_| in_model.is_some()) else {
            if d.annotated || in_model.is_some() {
                left.push(d);
            } else {
                appended.push_str(nl);
                appended.push_str(&format!("{:root_indent$}{}:{nl}", "", d.interface));
                for (method, params) in &d.methods {
                    appended.push_str(&method_lines(method, params, root_indent + 2, 2, nl));
                    placed(&d.interface, method, params, true);
                }
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
            let in_model = in_model.is_some_and(|i| i.methods.iter().any(|m| m.name == method));
            match outline.key(&[&d.interface, &method]) {
                Some(m) if !m.inline && in_model => {
                    let indent = m.child_indent.unwrap_or(m.indent() + step);
                    inserts.push((m.end, 2, param_lines(&params, indent, nl)));
                    placed(&d.interface, &method, &params, false);
                }
                None if !in_model => {
                    inserts.push((iface.end, 1, method_lines(&method, &params, method_indent, step, nl)));
                    placed(&d.interface, &method, &params, true);
                }
                _ => rest.push((method, params)),
            }
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
    let written = entries.iter().filter(|(_, _, p)| !p.is_empty()).count();
    (Placed { text: out, left, written }, entries)
}

fn method_lines(method: &str, params: &[(String, ParamSpec)], indent: usize, step: usize, nl: &str) -> String {
    format!("{:indent$}{method}:{nl}{}", "", param_lines(params, indent + step, nl))
}

fn param_lines(params: &[(String, ParamSpec)], indent: usize, nl: &str) -> String {
    params.iter().map(|(p, spec)| format!("{:indent$}{p}: {}{nl}", "", infer::spec_yaml(spec))).collect()
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
    fn entries_the_outline_cannot_extend_are_left_for_printing() {
        let text = "IFoo:\n  A:\n    { p: in }\n  ? B\n  : { q: in }\n? IBar\n: M: { p: in }\n";
        let drafts =
            vec![draft("IFoo", false, &[("A", &["x"]), ("B", &["y"])]), draft("IBar", false, &[("M", &["z"])])];
        let placed = place(text, drafts);
        assert_eq!(placed.text, text);
        assert_eq!(names(&placed.left), ["IFoo::A", "IFoo::B", "IBar::M"]);
        // Text that does not load takes nothing.
        let placed = place("IFoo: [", vec![draft("INew", false, &[("M", &["p"])])]);
        assert_eq!((placed.text.as_str(), placed.written, placed.left.len()), ("IFoo: [", 0, 1));
        // Found by the fuzzer: a document whose map is indented takes new interfaces at its
        // indentation, not at column 1.
        let text = "# The block scalar's linesCallback:\n  Initialize:\n    pInfoUnk: ";
        let placed = place(text, vec![draft("INew", false, &[("M", &["p"])])]);
        assert_eq!(placed.text, format!("{text}\n\n  INew:\n    M:\n      p: {{ dir: out, draft: true }}\n"));
        // A flow-map document cannot take block lines: nothing is placed rather than break it.
        let text = "{ IFoo: { A: { p: in } } }\n";
        let placed = place(text, vec![draft("INew", false, &[("M", &["p"])])]);
        assert_eq!((placed.text.as_str(), placed.written, names(&placed.left)), (text, 0, vec!["INew::M".to_string()]));
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
