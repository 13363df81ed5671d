//! The IDL a MIDL-generated header was made from (`corprof.idl` next to `corprof.h`), read for
//! what the header loses: MIDL writes `/* [size_is][in] */` into the C header but drops the
//! count expression of `[in, size_is(cbMetadataBlob)]`. Takes the IDL's bytes, gives each
//! interface method parameter's attribute list ([`IdlParam`]) by `Interface::Method::param`.
//!
//! A scanner, not an IDL parser: it strips comments, finds `interface Name : Base { … }` blocks,
//! splits each into `;`-ended declarations and reads the `[attrs] Type name` parameters of the
//! ones with a parameter list. What it does not understand it skips; the C header stays the
//! source of truth for everything else.

use crate::ir::Loc;
use std::collections::HashMap;

/// One parameter as the IDL declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdlParam {
    /// The attributes, each as written: `in`, `size_is(cbMetadataBlob)`, `length_is(*pcMap)`.
    pub attrs: Vec<String>,
    /// Where the parameter is declared in the IDL.
    pub loc: Loc,
}

impl IdlParam {
    /// The attribute list as the IDL writes it: `[in, size_is(cbMetadataBlob)]`.
    pub fn quote(&self) -> String {
        format!("[{}]", self.attrs.join(", "))
    }
}

/// The key of [`parse`]'s map: `Interface::Method::param`.
pub fn key(interface: &str, method: &str, param: &str) -> String {
    format!("{interface}::{method}::{param}")
}

/// Every interface method parameter of the IDL text `bytes`, shown in messages as `file`. The
/// text need not be UTF-8: what is read here is ASCII.
pub fn parse(file: &str, bytes: &[u8]) -> HashMap<String, IdlParam> {
    let text = strip_comments(&String::from_utf8_lossy(bytes));
    // A parameter's line is one more than the newlines before it, found by a binary search: an
    // IDL of many parameters takes time in proportion to its size.
    let newlines: Vec<usize> = text.match_indices('\n').map(|(at, _)| at).collect();
    let line_of = |offset: usize| newlines.partition_point(|&n| n < offset) as u32 + 1;
    let mut out = HashMap::new();
    let mut rest = 0;
    // Every search below starts past what the one before read: the text is read a bounded number
    // of times whatever it holds (a file of nothing but `interface` read each word's head anew).
    while let Some(found) = find_word(&text[rest..], "interface") {
        let start = rest + found + "interface".len();
        // `interface Name : Base {` (a forward declaration `interface Name;` has no body). With
        // neither after it, no interface follows either.
        let Some(n) = text[start..].find(['{', ';']) else { break };
        let head_end = start + n;
        rest = head_end + 1;
        if text.as_bytes()[head_end] == b';' {
            continue;
        }
        let head = &text[start..head_end];
        let iface = head.split(':').next().unwrap_or("").trim();
        if iface.is_empty() || !iface.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            // Not a name: the last `interface` of the head may begin one (its head, read once
            // more, is the last read twice).
            if let Some(last) = last_word(head, "interface") {
                rest = start + last;
            }
            continue;
        }
        let Some(body_len) = matching(&text[head_end..], '{', '}') else { break };
        let body_start = head_end + 1;
        let body = &text[body_start..head_end + body_len];
        rest = head_end + body_len;
        for (decl_offset, decl) in split_top(body, ';') {
            let Some(open) = decl.find('(') else { continue };
            let before = decl[..open].trim_end();
            let method: String = before
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if method.is_empty() || decl.trim_start().starts_with("typedef") {
                continue;
            }
            let Some(len) = matching(&decl[open..], '(', ')') else { continue };
            let params_at = body_start + decl_offset + open + 1;
            for (offset, p) in split_top(&decl[open + 1..open + len - 1], ',') {
                let Some((attrs, param_name)) = param(p) else { continue };
                let at = params_at + offset + (p.len() - p.trim_start().len());
                let loc = Loc { file: file.into(), line: line_of(at), col: 0 };
                out.insert(key(iface, &method, param_name), IdlParam { attrs, loc });
            }
        }
    }
    out
}

/// `text` with every `//` and `/* */` comment and every string literal (`cpp_quote("…")`, C text
/// for the header) blanked out, newlines and byte offsets kept.
fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'/')) => {
                let end = bytes[i..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            (b'/', Some(b'*')) => {
                let end = text[i + 2..].find("*/").map_or(bytes.len(), |n| i + 2 + n + 2);
                blank(&mut out, i, end);
                i = end;
            }
            (b'"', _) => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(bytes.len());
                blank(&mut out, start, i);
            }
            _ => i += 1,
        }
    }
    // Whole characters were replaced (a comment or string ends at an ASCII byte): still UTF-8.
    String::from_utf8_lossy(&out).into_owned()
}

/// The offset of `word` in `text` as a whole word.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(n) = text[from..].find(word) {
        let at = from + n;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if !is_ident(before) && !is_ident(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The offset of the last whole word `word` in `text`.
fn last_word(text: &str, word: &str) -> Option<usize> {
    let (mut from, mut last) = (0, None);
    while let Some(n) = find_word(&text[from..], word) {
        last = Some(from + n);
        from += n + word.len();
    }
    last
}

/// `text` starts with `open`: the length up to and including the `close` that matches it.
fn matching(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i + c.len_utf8());
            }
        }
    }
    None
}

/// `text` split at `sep` outside brackets, each part with its offset in `text`.
fn split_top(text: &str, sep: char) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ if c == sep && depth == 0 => {
                parts.push((start, &text[start..i]));
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push((start, &text[start..]));
    parts
}

/// `[in, size_is(n)] ULONG values[]` → (`["in", "size_is(n)"]`, `values`).
fn param(text: &str) -> Option<(Vec<String>, &str)> {
    let text = text.trim();
    let rest = text.strip_prefix('[')?;
    let close = matching(text, '[', ']')?;
    let attrs = split_top(&rest[..close - 2], ',').into_iter().map(|(_, a)| a.split_whitespace().collect()).collect();
    // The name is the last identifier, before any `[]`.
    let decl = text[close..].trim_end();
    let decl = decl.strip_suffix("[]").unwrap_or(decl).trim_end();
    let start = decl.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |n| n + 1);
    let name = &decl[start..];
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some((attrs, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDL: &str = r#"
cpp_quote("// not a comment: interface Fake : IUnknown { HRESULT F([in] int x); }")
interface ICorProfilerCallback10;
[
    object,
    uuid(CEC5B60E-C69C-495F-87F6-84D28EE16FFB),
    local
]
interface ICorProfilerCallback10 : ICorProfilerCallback9
{
    // HRESULT Commented([in, size_is(n)] BYTE x[]);
    HRESULT EventPipeEventDelivered(
        [in] ULONG cbMetadataBlob,
        [in, size_is(cbMetadataBlob)] LPCBYTE metadataBlob, /* [in, size_is(wrong)] */
        [in] ULONG numStackFrames,
        [in, length_is(numStackFrames)] UINT_PTR stackFrames[]);

    HRESULT GetMap([in] ULONG32 cMap, [out] ULONG32 *pcMap,
                [out, size_is(cMap), length_is(*pcMap)]
                    COR_DEBUG_IL_TO_NATIVE_MAP map[]);
}
"#;

    #[test]
    fn reads_each_parameter_s_attributes_with_its_line() {
        let params = parse("corprof.idl", IDL.as_bytes());
        let get = |m: &str, p: &str| {
            params.get(&key("ICorProfilerCallback10", m, p)).unwrap_or_else(|| panic!("{m} {p}: {params:?}"))
        };
        let blob = get("EventPipeEventDelivered", "metadataBlob");
        assert_eq!(blob.attrs, ["in", "size_is(cbMetadataBlob)"]);
        assert_eq!(blob.loc.line, 14);
        assert_eq!(blob.quote(), "[in, size_is(cbMetadataBlob)]");
        assert_eq!(get("EventPipeEventDelivered", "stackFrames").attrs, ["in", "length_is(numStackFrames)"]);
        let map = get("GetMap", "map");
        assert_eq!(map.attrs, ["out", "size_is(cMap)", "length_is(*pcMap)"]);
        assert_eq!(map.loc.line, 19);
        assert_eq!(get("GetMap", "pcMap").attrs, ["out"]);
        // Comments and strings hold no declarations.
        assert_eq!(params.len(), 7, "{params:?}");
    }

    #[test]
    fn an_idl_that_is_not_utf8_is_read_all_the_same() {
        let idl = b"// caf\xe9\ninterface I : IUnknown\n{\n    HRESULT F([in] ULONG n, /* \xe9 */ [in, size_is(n)] BYTE *p);\n}\n";
        let p = &parse("x.idl", idl)[&key("I", "F", "p")];
        assert_eq!((p.attrs.as_slice(), p.loc.line), (&["in".to_string(), "size_is(n)".to_string()][..], 4));
    }

    #[test]
    fn names_that_are_not_names_declare_nothing() {
        let idl = "interface : IUnknown { HRESULT A([in] int a); }\n\
                   interface I<T> : IUnknown { HRESULT B([in] int b); }\n\
                   [helpstring] interface interface J : IUnknown {\n\
                   HRESULT C([in] int c);\n\
                   HRESULT D([in] BYTE *, [in] int 2x);\n\
                   }\n";
        let params = parse("x.idl", idl.as_bytes());
        let keys: Vec<&String> = params.keys().collect();
        // `interface interface J`: the head's last `interface` begins the name. A parameter
        // without a name, or with one that is not a name, is no parameter.
        assert_eq!(keys, [&key("J", "C", "c")]);
    }

    #[test]
    fn lines_are_those_of_the_parameters_and_typedefs_declare_none() {
        // Each parameter at the start of its line, the first after a `(` ending the line before,
        // the second after a space ending it.
        let idl = "interface I : IUnknown\n{\n    HRESULT G(\n[in] int first, \n[in] int second);\n\
                   typedef HRESULT Callback([in] int t);\n    ([in] int nameless);\n}\n";
        let params = parse("x.idl", idl.as_bytes());
        assert_eq!(params[&key("I", "G", "first")].loc.line, 4);
        assert_eq!(params[&key("I", "G", "second")].loc.line, 5);
        assert_eq!(params.len(), 2, "{params:?}");
    }

    #[test]
    fn strings_hold_no_declarations_whatever_they_hold() {
        let fake = "interface Fake : IUnknown { HRESULT F([in] int x); }";
        let real = "interface I : IUnknown { HRESULT G([in] int y); }";
        let read = |idl: String| {
            let params = parse("x.idl", idl.as_bytes());
            let mut keys: Vec<String> = params.into_keys().collect();
            keys.sort();
            keys
        };
        let only_real = [key("I", "G", "y")];
        assert_eq!(read(format!("cpp_quote(\"{fake}\")\n{real}\n")), only_real);
        // A string's closing quote opens no other.
        assert_eq!(read(format!("cpp_quote(\"{fake}\") {real}\n")), only_real);
        // An escaped quote does not end the string; a newline does.
        assert_eq!(read(format!("cpp_quote(\"a \\\" {fake} \\\" b\")\n{real}\n")), only_real);
        assert_eq!(read(format!("cpp_quote(\"a\n{real}\n")), only_real);
        // A string, or an escape, left open at the end of the text.
        assert_eq!(read(format!("{real}\ncpp_quote(\"{fake}")), only_real);
        assert_eq!(read(format!("{real}\ncpp_quote(\"\\")), only_real);
    }

    #[test]
    fn interface_is_read_only_as_a_whole_word() {
        let idl = "my_interface J : IUnknown { HRESULT A([in] int a); }\n\
                   interfaces K : IUnknown { HRESULT B([in] int b); }\n\
                   interface I : IUnknown { HRESULT G([in] int y); }\n";
        let params = parse("x.idl", idl.as_bytes());
        assert_eq!(params.keys().collect::<Vec<_>>(), [&key("I", "G", "y")]);
    }

    /// Runs `parse` on `idl` on a thread of its own, failing if it has not finished after a minute
    /// (what these inputs take when each is read once is milliseconds; read anew for each word or
    /// each parameter, hours).
    fn parses_soon(idl: String) -> HashMap<String, IdlParam> {
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || send.send(parse("x.idl", idl.as_bytes())));
        receive
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the parse takes time out of proportion to the IDL's size")
    }

    #[test]
    fn hostile_idls_take_time_in_proportion_to_their_size() {
        // Heads that never end: each `interface` once scanned to the end of the text.
        let words = "interface ".repeat(100_000);
        assert!(parses_soon(words).is_empty());
        let words = format!("{};", "interface ".repeat(100_000));
        assert!(parses_soon(words).is_empty());
        let words = format!("{}{{}}", "interface - ".repeat(100_000));
        assert!(parses_soon(words).is_empty());
        // Many parameters: each one's line once counted from the start of the text.
        let mut many = String::from("interface I : IUnknown\n{\n");
        for i in 0..100_000 {
            many += &format!("HRESULT F{i}([in] int a);\n");
        }
        many += "}\n";
        let params = parses_soon(many);
        assert_eq!(params.len(), 100_000);
        assert_eq!(params[&key("I", "F99999", "a")].loc.line, 100_002);
    }
}
