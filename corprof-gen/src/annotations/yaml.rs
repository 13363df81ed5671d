//! The one place that uses serde_yaml. Parses to a YAML value tree (syntax errors carry
//! line:col), then walks it into the typed model. serde gives values no positions, so a small
//! indentation scanner over the text maps each key path to the line:col where it is written.

use super::{Annotations, Direction, InterfaceAnn, MethodAnn, ParamAnn, ParamSpec, RETURN_KEY, ReturnSpec};
use crate::diag::{Diagnostic, Errors};
use crate::ir::Loc;
use serde_yaml::Value;
use std::collections::HashMap;

pub(super) fn parse(file: &str, text: &str) -> Result<Annotations, Errors> {
    let root: Value = match serde_yaml::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let loc =
                e.location().map(|l| Loc { file: file.to_string(), line: l.line() as u32, col: l.column() as u32 });
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            let loc = loc.unwrap_or_else(|| Loc { file: file.to_string(), line: 1, col: 1 });
            // serde_yaml points duplicates at their map; the scanner finds the second key itself.
            if let Some((first, second)) = KeyPositions::scan(text).duplicates.first() {
                let at = |(line, col): (u32, u32)| Loc { file: file.to_string(), line, col };
                return Err(Diagnostic::error(format!("duplicate entry: {msg}"))
                    .at(at(*second))
                    .note(format!("first written at {}", at(*first)))
                    .into());
            }
            return Err(Diagnostic::error(format!("malformed annotation YAML: {msg}")).at(loc).into());
        }
    };
    let positions = KeyPositions::scan(text);
    let pos = |path: &[&str]| positions.get(file, path);
    let mut errors = Errors::default();
    let mut out = Annotations::default();
    let top = match root {
        Value::Null => return Ok(out),
        Value::Mapping(m) => m,
        _ => {
            return Err(Diagnostic::error("an annotation file is a map from interface name to methods")
                .at(pos(&[]))
                .into());
        }
    };
    for (iface_key, methods) in top {
        let Some(iface) = key_str(&iface_key, &pos(&[]), &mut errors) else {
            continue;
        };
        let iface_loc = pos(&[&iface]);
        let mut iface_ann = InterfaceAnn { name: iface.clone(), methods: Vec::new(), loc: iface_loc.clone() };
        for (method_key, params) in mapping_of(methods, &iface_loc, "interface", &mut errors) {
            let Some(method) = key_str(&method_key, &iface_loc, &mut errors) else {
                continue;
            };
            let method_loc = pos(&[&iface, &method]);
            let mut method_ann =
                MethodAnn { name: method.clone(), params: Vec::new(), ret: None, loc: method_loc.clone() };
            for (param_key, spec) in mapping_of(params, &method_loc, "method", &mut errors) {
                let Some(param) = key_str(&param_key, &method_loc, &mut errors) else {
                    continue;
                };
                let loc = pos(&[&iface, &method, &param]);
                if param == RETURN_KEY {
                    match serde_yaml::from_value::<ReturnSpec>(spec) {
                        Ok(r) => method_ann.ret = Some((r, loc)),
                        Err(e) => errors.push(
                            Diagnostic::error(format!("invalid `{RETURN_KEY}` annotation: {e}"))
                                .at(loc)
                                .help("write `return: { s_false: \"<what S_FALSE means>\" }`"),
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

fn key_str(key: &Value, loc: &Loc, errors: &mut Errors) -> Option<String> {
    match key {
        Value::String(s) => Some(s.clone()),
        other => {
            errors.push(Diagnostic::error(format!("expected a name, found `{}`", short(other))).at(loc.clone()));
            None
        }
    }
}

/// The entries of a map; `null` (a key with nothing under it) counts as an empty map.
fn mapping_of(v: Value, loc: &Loc, what: &str, errors: &mut Errors) -> Vec<(Value, Value)> {
    match v {
        Value::Null => Vec::new(),
        Value::Mapping(m) => m.into_iter().collect(),
        other => {
            errors.push(
                Diagnostic::error(format!("expected a map under this {what}, found `{}`", short(&other)))
                    .at(loc.clone()),
            );
            Vec::new()
        }
    }
}

fn param_spec(v: Value, loc: &Loc, errors: &mut Errors) -> Option<ParamSpec> {
    const HELP: &str = "write `in`, `out` or `ref`, or a map such as `{ dir: in, len: cCount }`";
    match v {
        Value::String(s) => match Direction::parse(&s) {
            Some(dir) => Some(ParamSpec::direction(dir)),
            None => {
                errors.push(Diagnostic::error(format!("unknown direction `{s}`")).at(loc.clone()).help(HELP));
                None
            }
        },
        v @ Value::Mapping(_) => match serde_yaml::from_value::<ParamSpec>(v) {
            Ok(spec) => Some(spec),
            Err(e) => {
                errors.push(Diagnostic::error(format!("invalid parameter annotation: {e}")).at(loc.clone()).help(HELP));
                None
            }
        },
        other => {
            errors.push(
                Diagnostic::error(format!("expected a direction, found `{}`", short(&other)))
                    .at(loc.clone())
                    .help(HELP),
            );
            None
        }
    }
}

fn short(v: &Value) -> String {
    serde_yaml::to_string(v).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Key path → (line, col), from block-style YAML text. Flow-style maps (`{ dir: in }`) are
/// values, so their inner keys are not needed.
struct KeyPositions {
    map: HashMap<Vec<String>, (u32, u32)>,
    /// (first, second) positions of keys written twice under the same parent.
    duplicates: Vec<((u32, u32), (u32, u32))>,
}

impl KeyPositions {
    fn scan(text: &str) -> Self {
        let mut map = HashMap::new();
        let mut duplicates = Vec::new();
        let mut stack: Vec<(usize, String)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("---") {
                continue;
            }
            let indent = line.len() - trimmed.len();
            let Some(key) = leading_key(trimmed) else {
                continue;
            };
            while stack.last().is_some_and(|(ind, _)| *ind >= indent) {
                stack.pop();
            }
            stack.push((indent, key));
            let path: Vec<String> = stack.iter().map(|(_, k)| k.clone()).collect();
            let here = (i as u32 + 1, indent as u32 + 1);
            match map.get(&path) {
                Some(first) => duplicates.push((*first, here)),
                None => {
                    map.insert(path, here);
                }
            }
        }
        KeyPositions { map, duplicates }
    }

    fn get(&self, file: &str, path: &[&str]) -> Loc {
        let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        let (line, col) = self.map.get(&key).copied().unwrap_or((1, 1));
        Loc { file: file.to_string(), line, col }
    }
}

/// `Name:` or `"Name":` at the start of a line → `Name`.
fn leading_key(s: &str) -> Option<String> {
    let (key, rest) = if let Some(q @ ('"' | '\'')) = s.chars().next() {
        let end = s[1..].find(q)? + 1;
        (&s[1..end], &s[end + 1..])
    } else {
        let end = s.find(':')?;
        (&s[..end], &s[end..])
    };
    let rest = rest.trim_start();
    let after = rest.strip_prefix(':')?;
    if !(after.is_empty() || after.starts_with([' ', '\t'])) || key.contains(['{', '[', ',']) {
        return None;
    }
    Some(key.trim().to_string())
}
