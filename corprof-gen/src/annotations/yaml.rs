//! The one place that uses serde_yaml. Parses to a YAML value tree (syntax errors carry
//! line:col), then walks it into the typed model. serde gives values no positions, so the
//! [`Outline`] of the text maps each key path to the line:col where it is written.

use super::outline::{MAX_DEPTH, Outline};
use super::{
    AKA_KEY, ANSWERED_BY_KEY, Annotations, Direction, InterfaceAnn, MethodAnn, ParamAnn, ParamSpec, RETURN_KEY,
    ReturnSpec, SINCE_KEY, WRAPPER_KEY, WrapperSpec,
};
use crate::diag::{Diagnostic, Errors};
use crate::ir::Loc;
use serde_yaml::{Mapping, Value};
use std::sync::Arc;

/// The file's YAML value and the outline that places its keys (file:line:col), or the syntax
/// error: how each of the three files (annotations, docs, header list) starts. Text nested deeper
/// than [`MAX_DEPTH`] is refused first, by the outline's linear scan: serde_yaml's parser would
/// take time in the square of the depth before its own limit answered. The outline is made again
/// once serde_yaml is done: on a big file each is hundreds of bytes an entry, and serde_yaml's
/// events are as many again, so the three are never held at once (a rescan costs a few percent
/// of the load).
fn read<'a>(file: &str, text: &'a str) -> Result<(Value, Outline<'a>), Errors> {
    if let Some(place) = Outline::scan(text).too_deep {
        return Err(Diagnostic::error(format!("annotation YAML nested deeper than {MAX_DEPTH} levels"))
            .at(at(file, place))
            .note("an annotation needs about 5 (interface, method, parameter, its map, a list in it)")
            .into());
    }
    match serde_yaml::from_str(text) {
        Ok(root) => Ok((root, Outline::scan(text))),
        Err(e) => Err(syntax_error(file, text, &Outline::scan(text), &e).into()),
    }
}

pub(super) fn parse(file: &str, text: &str) -> Result<Annotations, Errors> {
    let (root, outline) = read(file, text)?;
    // Each name is looked up once, under its parent's place, as the walk goes down.
    let shown: Arc<str> = file.into();
    let loc = |place| shared(&shown, outline.at(place));
    let root_loc = loc(outline.root());
    let mut errors = Errors::default();
    let mut out = Annotations::default();
    let top = match root {
        Value::Null => return Ok(out),
        Value::Mapping(m) => m,
        _ => {
            return Err(Diagnostic::error("an annotation file is a map from interface name to methods")
                .at(root_loc)
                .into());
        }
    };
    out.interfaces.reserve(top.len());
    for (iface_key, methods) in top {
        let Some(iface) = key_str(iface_key, &root_loc, &mut errors) else {
            continue;
        };
        let iface_place = outline.under(outline.root(), &iface);
        let iface_loc = loc(iface_place);
        let methods = mapping_of(methods, &iface_loc, "interface", &mut errors);
        let mut iface_ann = InterfaceAnn { name: iface, methods: Vec::with_capacity(methods.len()), loc: iface_loc };
        for (method_key, params) in methods {
            let Some(method) = key_str(method_key, &iface_ann.loc, &mut errors) else {
                continue;
            };
            let method_place = outline.under(iface_place, &method);
            let method_loc = loc(method_place);
            let params = mapping_of(params, &method_loc, "method", &mut errors);
            let mut method_ann = MethodAnn {
                name: method,
                params: Vec::with_capacity(params.len()),
                ret: None,
                aka: Vec::new(),
                wrapper: None,
                since: None,
                answered_by: None,
                loc: method_loc,
            };
            for (param_key, spec) in params {
                let Some(param) = key_str(param_key, &method_ann.loc, &mut errors) else {
                    continue;
                };
                let loc = loc(outline.under(method_place, &param));
                if param == RETURN_KEY {
                    match serde_yaml::from_value::<ReturnSpec>(spec) {
                        Ok(r) => method_ann.ret = Some(Box::new((r, loc))),
                        Err(e) => errors.push(
                            Diagnostic::error(format!("invalid `{RETURN_KEY}` annotation: {e}"))
                                .at(loc)
                                .help("write `return: { s_false: \"<what S_FALSE means>\" }`"),
                        ),
                    }
                    continue;
                }
                if param == WRAPPER_KEY {
                    match serde_yaml::from_value::<WrapperSpec>(spec) {
                        Ok(w) => method_ann.wrapper = Some(Box::new((w, loc))),
                        Err(e) => errors.push(
                            Diagnostic::error(format!("invalid `{WRAPPER_KEY}` annotation: {e}"))
                                .at(loc)
                                .help("write `wrapper: { unsafe: \"<what the caller must ensure>\" }` or `wrapper: { manual: \"<where the hand-written wrapper is>\" }`"),
                        ),
                    }
                    continue;
                }
                if param == SINCE_KEY {
                    match spec {
                        Value::String(text) if !text.trim().is_empty() => {
                            method_ann.since = Some(Box::new((text, loc)))
                        }
                        _ => errors.push(
                            Diagnostic::error(format!("invalid `{SINCE_KEY}` annotation: expected a text"))
                                .at(loc)
                                .help("write `since: \"<the header that appended this method to its interface>\"`"),
                        ),
                    }
                    continue;
                }
                if param == ANSWERED_BY_KEY {
                    match spec {
                        Value::String(name) if !name.trim().is_empty() => {
                            method_ann.answered_by = Some(Box::new((name.trim().to_string(), loc)));
                        }
                        _ => errors.push(
                            Diagnostic::error(format!("invalid `{ANSWERED_BY_KEY}` annotation: expected a function name"))
                                .at(loc)
                                .help("write `answered_by: <the function of corprof's imp module that sees the callback first>`"),
                        ),
                    }
                    continue;
                }
                if param == AKA_KEY {
                    let names = match spec {
                        Value::String(one) => Some(vec![one]),
                        Value::Sequence(many) => {
                            many.into_iter().map(|v| if let Value::String(s) = v { Some(s) } else { None }).collect()
                        }
                        _ => None,
                    };
                    match names {
                        Some(names) => method_ann.aka.extend(names.into_iter().map(|n| (n, loc.clone()))),
                        None => errors.push(
                            Diagnostic::error(format!(
                                "invalid `{AKA_KEY}` annotation: expected a method name or a list of them"
                            ))
                            .at(loc)
                            .help("write `aka: <the header's other spelling of this method>`"),
                        ),
                    }
                    continue;
                }
                if let Some(spec) = param_spec(spec, &loc, &mut errors) {
                    method_ann.params.push(ParamAnn { name: param, spec, loc });
                }
            }
            iface_ann.methods.push(method_ann);
        }
        out.interfaces.push(iface_ann);
    }
    errors.check()?;
    Ok(out)
}

fn at(file: &str, (line, col): (u32, u32)) -> Loc {
    Loc { file: file.into(), line, col }
}

/// A place in a file whose name every place shares.
fn shared(file: &Arc<str>, (line, col): (u32, u32)) -> Loc {
    Loc { file: file.clone(), line, col }
}

/// A YAML syntax error at the line that caused it. serde_yaml says where its parser gave up:
/// the end of the file for an unclosed quote or bracket, the map for a duplicate key, nowhere
/// for a second document. The outline of the text knows the real place.
fn syntax_error(file: &str, text: &str, outline: &Outline, e: &serde_yaml::Error) -> Diagnostic {
    let msg = e.to_string();
    if msg.starts_with("deserializing from YAML containing more than one document") {
        let line = outline.second_document.unwrap_or(1);
        return Diagnostic::error("an annotation file holds one YAML document; a second one starts here")
            .at(at(file, (line, 1)))
            .note("several documents (separated by `---`) in one file are not supported")
            .help("put the second document in a file of its own");
    }
    let mark = e.location().map(|l| (l.line() as u32, l.column() as u32));
    if msg.contains("duplicate entry ") {
        return duplicate(file, outline, &msg, mark);
    }
    // serde_yaml: "<problem> at line L column C[, <context>[ at line L column C]]".
    let (problem, context) = msg.split_once(", ").unwrap_or((&msg, ""));
    let problem = problem.split(" at line ").next().unwrap_or(problem);
    let context_mark = context.split_once(" at line ").and_then(|(_, m)| line_col(m));
    let mut d = Diagnostic::error(format!("malformed annotation YAML: {problem}"));
    let at_end = e.location().is_some_and(|l| l.index() >= text.trim_end().len());
    let place = match (outline.unclosed, context_mark) {
        // Ran off the end: the cause is where the unfinished quote or bracket opened.
        (Some((_, line, col)), None) if at_end => (line, col),
        (_, Some(cm)) if at_end => cm,
        // "could not find expected ':'" belongs to the key that lacks it.
        (_, Some(cm)) if context.starts_with("while scanning a simple key") => cm,
        _ => mark.unwrap_or((1, 1)),
    };
    let line = nth_line(text, place.0).unwrap_or("");
    let opened = line.chars().nth((place.1 as usize).saturating_sub(1));
    if let Some(open @ ('"' | '\'' | '[' | '{')) = opened.filter(|_| at_end) {
        let what = if matches!(open, '"' | '\'') { "quote" } else { "bracket" };
        d = Diagnostic::error(format!("malformed annotation YAML: unclosed {what} `{open}`"))
            .note(format!("the file ends at line {} before it is closed", mark.map_or(0, |m| m.0)));
    }
    if line[..line.len() - line.trim_start_matches([' ', '\t']).len()].contains('\t') {
        d = d.help("YAML indents with spaces: this line's indentation has a tab");
    }
    d.at(at(file, place))
}

/// serde_yaml points a duplicate key at its map; the outline knows where the second one is.
/// `msg` is serde_yaml's `I.M: duplicate entry with key "a" at line …` (or `with key 7`, …).
fn duplicate(file: &str, outline: &Outline, msg: &str, mark: Option<(u32, u32)>) -> Diagnostic {
    let (parents, what) = msg.split_once("duplicate entry ").unwrap_or(("", msg));
    let what = what.rsplit_once(" at line ").map_or(what, |(w, _)| w);
    let key = what.strip_prefix("with key ");
    let same = |name: &String| key.is_some_and(|k| format!("{name:?}") == k || name == k);
    let Some(dup) = outline.duplicates.iter().find(|d| d.path.last().is_some_and(same)) else {
        // A key of a flow map (`{ dir: in, dir: out }`): serde_yaml's place is its map.
        let shown = key.map_or(what.to_string(), |k| format!("`{}`", k.trim_matches('"')));
        let parents = parents.trim_end_matches(": ");
        let under = if parents.is_empty() { String::new() } else { format!(" under `{parents}`") };
        return Diagnostic::error(format!("duplicate entry {shown}{under}")).at(at(file, mark.unwrap_or((1, 1))));
    };
    let (name, parents) = dup.path.split_last().expect("a duplicate has a name");
    let under = if parents.is_empty() { String::new() } else { format!(" under `{}`", parents.join(".")) };
    Diagnostic::error(format!("duplicate entry `{name}`{under}"))
        .at(at(file, dup.second))
        .note(format!("first written at {}", at(file, dup.first)))
}

/// `line 3 column 8` → (3, 8).
fn line_col(s: &str) -> Option<(u32, u32)> {
    let (line, rest) = s.split_once(" column ")?;
    let col: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.trim().parse().ok()?, col.parse().ok()?))
}

/// Line `n` (1-based) as YAML counts lines.
fn nth_line(text: &str, n: u32) -> Option<&str> {
    super::outline::lines(text).nth(n.checked_sub(1)? as usize)
}

fn key_str(key: Value, loc: &Loc, errors: &mut Errors) -> Option<String> {
    match key {
        Value::String(s) => Some(s),
        other => {
            errors.push(Diagnostic::error(format!("expected a name, found `{}`", short(&other))).at(loc.clone()));
            None
        }
    }
}

/// The entries of a map; `null` (a key with nothing under it) counts as an empty map.
fn mapping_of(v: Value, loc: &Loc, what: &str, errors: &mut Errors) -> serde_yaml::mapping::IntoIter {
    match v {
        Value::Null => Mapping::new().into_iter(),
        Value::Mapping(m) => m.into_iter(),
        other => {
            errors.push(
                Diagnostic::error(format!("expected a map under this {what}, found `{}`", short(&other)))
                    .at(loc.clone()),
            );
            Mapping::new().into_iter()
        }
    }
}

const SPEC_HELP: &str = "write `in`, `out` or `ref`, or a map such as `{ dir: in, len: cCount }`";

fn param_spec(v: Value, loc: &Loc, errors: &mut Errors) -> Option<ParamSpec> {
    match v {
        Value::Mapping(mut m) => {
            // `dir` is read here, so that a bad one reads like a bad bare direction.
            let dir = match m.get("dir") {
                Some(d) => Some(direction(d, loc, errors)?),
                // `{ flags: T }` or `{ live: "…" }` alone annotates a value parameter, which is
                // read: `in`.
                None if m.contains_key("flags") || m.contains_key("live") => Some(Direction::In),
                None => None,
            };
            if dir.is_some() {
                m.insert("dir".into(), "in".into());
            }
            match serde_yaml::from_value::<ParamSpec>(Value::Mapping(m)) {
                Ok(spec) => Some(ParamSpec { dir: dir.unwrap_or(spec.dir), ..spec }),
                Err(e) => {
                    errors.push(
                        Diagnostic::error(format!("invalid parameter annotation: {e}")).at(loc.clone()).help(SPEC_HELP),
                    );
                    None
                }
            }
        }
        v => direction(&v, loc, errors).map(ParamSpec::direction),
    }
}

fn direction(v: &Value, loc: &Loc, errors: &mut Errors) -> Option<Direction> {
    let found = match v {
        Value::String(s) => match Direction::parse(s) {
            Some(dir) => return Some(dir),
            None => s.clone(),
        },
        other => short(other),
    };
    errors.push(
        Diagnostic::error(format!("expected a direction (`in`, `out` or `ref`), found `{found}`"))
            .at(loc.clone())
            .help(SPEC_HELP),
    );
    None
}

/// A value as one line of flow YAML, cut soon after the length a message shows.
fn short(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        if out.len() > crate::diag::QUOTE_LIMIT {
            return;
        }
        match v {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(&b.to_string()),
            Value::Number(n) => out.push_str(&n.to_string()),
            Value::String(s) => out.extend(s.chars().take(crate::diag::QUOTE_LIMIT + 1)),
            Value::Sequence(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i > 0 { ", " } else { "" });
                    write(item, out);
                }
                out.push(']');
            }
            Value::Mapping(m) => {
                out.push('{');
                for (i, (k, item)) in m.iter().enumerate() {
                    out.push_str(if i > 0 { ", " } else { " " });
                    write(k, out);
                    out.push_str(": ");
                    write(item, out);
                }
                out.push_str(if m.is_empty() { "}" } else { " }" });
            }
            Value::Tagged(t) => {
                out.push_str(&format!("{} ", t.tag));
                write(&t.value, out);
            }
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// A docs-table file (annotations/docs/*.yaml; see [`super::docs`]): interface → method →
/// `doc`, `needs`, `errors`, `returns`.
pub(super) fn parse_docs(file: &str, text: &str) -> Result<Vec<super::docs::MethodDocs>, Errors> {
    use super::docs::MethodDocs;
    let (root, outline) = read(file, text)?;
    let shown: Arc<str> = file.into();
    let pos = |path: &[&str]| shared(&shown, outline.pos(path));
    let mut errors = Errors::default();
    let mut out = Vec::new();
    for (iface_key, methods) in mapping_of(root, &pos(&[]), "file", &mut errors) {
        let Some(iface) = key_str(iface_key, &pos(&[]), &mut errors) else { continue };
        let iface_loc = pos(&[&iface]);
        for (method_key, fields) in mapping_of(methods, &iface_loc, "interface", &mut errors) {
            let Some(method) = key_str(method_key, &iface_loc, &mut errors) else { continue };
            let loc = pos(&[&iface, &method]);
            let mut m =
                MethodDocs { iface: iface.clone(), method: method.clone(), loc: loc.clone(), ..Default::default() };
            for (field_key, value) in mapping_of(fields, &loc, "method", &mut errors) {
                let Some(field) = key_str(field_key, &loc, &mut errors) else { continue };
                let field_loc = pos(&[&iface, &method, &field]);
                let text = |v: Value, errors: &mut Errors| match v {
                    Value::String(s) => Some(s.split_whitespace().collect::<Vec<_>>().join(" ")),
                    other => {
                        errors.push(
                            Diagnostic::error(format!("`{field}` is text, found `{}`", short(&other)))
                                .at(field_loc.clone()),
                        );
                        None
                    }
                };
                match field.as_str() {
                    "doc" => m.doc = text(value, &mut errors).unwrap_or_default(),
                    "needs" => m.needs = text(value, &mut errors),
                    "returns" => m.returns = text(value, &mut errors),
                    "errors" => {
                        for (name, when) in mapping_of(value, &field_loc, "`errors`", &mut errors) {
                            let Some(name) = key_str(name, &field_loc, &mut errors) else { continue };
                            let name_loc = pos(&[&iface, &method, &field, &name]);
                            // `E_FAIL`, or a Win32 error as the header's macro makes it one.
                            let plain = |n: &str| {
                                n.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                                    && n.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                            };
                            let is_name = plain(&name)
                                || name
                                    .strip_prefix("HRESULT_FROM_WIN32(")
                                    .and_then(|n| n.strip_suffix(')'))
                                    .is_some_and(|n| n.starts_with("ERROR_") && plain(n));
                            if !is_name {
                                errors.push(
                                    Diagnostic::error(format!("`{name}` is not an HRESULT name"))
                                        .at(name_loc)
                                        .help("write the name the header gives it, such as `CORPROF_E_DATAINCOMPLETE`"),
                                );
                                continue;
                            }
                            if let Some(when) = text(when, &mut errors) {
                                m.errors.push((name, when));
                            }
                        }
                    }
                    other => errors.push(
                        Diagnostic::error(format!("unknown key `{other}`"))
                            .at(field_loc)
                            .help("a docs entry has `doc`, and may have `needs`, `errors` and `returns`"),
                    ),
                }
            }
            if m.doc.trim().is_empty() {
                errors.push(Diagnostic::error(format!("`{iface}::{method}` has no `doc`")).at(loc));
            } else {
                out.push(m);
            }
        }
    }
    errors.check()?;
    Ok(out)
}

/// The header list (`headers.yaml`; see [`super::headers`]): header name → `required`, `why`,
/// optional `stand_in`, in the file's order.
pub(super) fn parse_headers(file: &str, text: &str) -> Result<super::headers::HeaderList, Errors> {
    use super::headers::{EntryHeader, HeaderList, HeaderSpec};
    let (root, outline) = read(file, text)?;
    let shown: Arc<str> = file.into();
    let pos = |path: &[&str]| shared(&shown, outline.pos(path));
    let mut errors = Errors::default();
    let mut list = HeaderList::default();
    let example = "write `<header>: { required: true, why: \"<why the generator reads it>\" }`";
    for (key, spec) in mapping_of(root, &pos(&[]), "file", &mut errors) {
        let Some(name) = key_str(key, &pos(&[]), &mut errors) else { continue };
        let loc = pos(&[&name]);
        // The name goes into `#include "…"` as written.
        if name.trim().is_empty() || name.contains(['"', '\\', '\n', '\r']) {
            errors.push(
                Diagnostic::error(format!("`{name}` is not a header file name"))
                    .at(loc)
                    .help("name the file as `#include \"…\"` would, e.g. `corprof.h`"),
            );
            continue;
        }
        let spec = match serde_yaml::from_value::<HeaderSpec>(spec) {
            Ok(spec) => spec,
            Err(e) => {
                let msg = e.to_string();
                // "unknown field `requird`, expected one of …": shown at the key itself.
                let d = Diagnostic::error(format!("invalid entry for header `{name}`: {msg}"));
                errors.push(match msg.strip_prefix("unknown field `").and_then(|rest| rest.split('`').next()) {
                    Some(field) => d.at(pos(&[&name, field])),
                    None => d.at(loc).help(example),
                });
                continue;
            }
        };
        if spec.why.trim().is_empty() {
            errors.push(
                Diagnostic::error(format!("`{name}` has no `why`"))
                    .at(pos(&[&name, "why"]))
                    .help("say why the generator reads this header (and what is lost without an optional one)"),
            );
        }
        if spec.required && spec.stand_in.is_some() {
            errors.push(
                Diagnostic::error(format!("`{name}` is required, so nothing stands in for it"))
                    .at(pos(&[&name, "stand_in"]))
                    .help("remove `stand_in`, or make the header `required: false`"),
            );
        }
        let why = spec.why.split_whitespace().collect::<Vec<_>>().join(" ");
        list.entries.push(EntryHeader { name, required: spec.required, stand_in: spec.stand_in, why, loc });
    }
    errors.check()?;
    match list.entries.last() {
        None => Err(Diagnostic::error("the header list is empty: nothing says which headers to parse")
            .at(pos(&[]))
            .help(example)
            .into()),
        Some(main) if !main.required => Err(Diagnostic::error(format!(
            "the last header, `{}`, is the main one and must be `required: true`",
            main.name
        ))
        .at(main.loc.clone())
        .note("the main header's interfaces all get the safe layer; a header set without it has nothing to bind")
        .into()),
        Some(_) => Ok(list),
    }
}
