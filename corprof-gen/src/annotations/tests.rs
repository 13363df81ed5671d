use super::*;

const SAMPLE: &str = "\
# callbacks
ICorProfilerCallback:
  JITCachedFunctionSearchStarted:
    pbUseCachedFunction: out
  MovedReferences:
    oldObjectIDRangeStart: { dir: in, len: cMovedObjectIDRanges }
  Shutdown:
";

#[test]
fn parses_short_and_full_forms_with_positions() {
    let a = Annotations::parse("cb.yaml", SAMPLE).unwrap();
    let iface = a.interface("ICorProfilerCallback").unwrap();
    assert_eq!((iface.loc.line, iface.loc.col), (2, 1));
    let m = &iface.methods[0];
    assert_eq!(m.name, "JITCachedFunctionSearchStarted");
    assert_eq!((m.loc.line, m.loc.col), (3, 3));
    assert_eq!(m.params[0].spec, ParamSpec::direction(Direction::Out));
    assert_eq!((m.params[0].loc.line, m.params[0].loc.col), (4, 5));
    let moved = &iface.methods[1].params[0];
    assert_eq!(moved.spec.len.as_deref(), Some("cMovedObjectIDRanges"));
    assert_eq!(moved.spec.dir, Direction::In);
    assert_eq!(moved.loc.line, 6);
    assert!(iface.methods[2].params.is_empty());
}

/// The one error of parsing `text`, rendered without the "aborting" line.
fn error(text: &str) -> String {
    let err = Annotations::parse("x.yaml", text).unwrap_err();
    assert_eq!(err.items.len(), 1, "{err}");
    err.items[0].to_string()
}

#[test]
fn malformed_yaml_reports_line_and_column() {
    assert_eq!(
        error("I:\n  M:\n    a: in\n   N:\n"),
        "error: malformed annotation YAML: did not find expected key\n  --> x.yaml:4:4"
    );
}

#[test]
fn an_unclosed_quote_or_bracket_is_shown_where_it_opens_not_at_the_end() {
    // serde_yaml says "found unexpected end of stream at line 5 column 1".
    assert_eq!(
        error("I:\n  M:\n    a: \"in\n    b: out\n"),
        "error: malformed annotation YAML: unclosed quote `\"`\n  --> x.yaml:3:8\n  = note: the file ends at line 5 before it is closed"
    );
    assert_eq!(
        error("I:\n  M:\n    a: 'it''s\n    b: out\n\n"),
        "error: malformed annotation YAML: unclosed quote `'`\n  --> x.yaml:3:8\n  = note: the file ends at line 6 before it is closed"
    );
    // serde_yaml says "did not find expected node content at line 3 column 1".
    assert_eq!(
        error("ICorProfilerCallback:\n  Shutdown: [1\n"),
        "error: malformed annotation YAML: unclosed bracket `[`\n  --> x.yaml:2:13\n  = note: the file ends at line 3 before it is closed"
    );
    // Nested: the innermost one, as serde_yaml's context says.
    assert_eq!(
        error("I:\n  M:\n    a: { dir: in,\n      len: [n\n"),
        "error: malformed annotation YAML: unclosed bracket `[`\n  --> x.yaml:4:12\n  = note: the file ends at line 5 before it is closed"
    );
}

#[test]
fn a_second_document_is_refused_at_its_first_line() {
    let refused = |line: u32| {
        format!(
            "error: an annotation file holds one YAML document; a second one starts here\n  --> x.yaml:{line}:1\n  \
             = note: several documents (separated by `---`) in one file are not supported\n  \
             = help: put the second document in a file of its own"
        )
    };
    assert_eq!(error("I:\n  M:\n    a: in\n---\nJ:\n  N:\n    b: in\n"), refused(4));
    assert_eq!(error("---\nI:\n  M:\n    a: in\n# next\n--- # two\nJ:\n"), refused(6));
    assert_eq!(error("I:\n  M:\n    a: in\n...\n\nJ:\n  N:\n    b: in\n"), refused(6));
    assert_eq!(error("I:\n  M:\n    a: in\n---\n"), refused(4));
    // One document, introduced by `---` or closed by `...`, is fine.
    assert!(Annotations::parse("x.yaml", "---\nI:\n  M:\n    a: in\n...\n").is_ok());
}

#[test]
fn a_key_missing_its_colon_is_shown_at_the_key() {
    // serde_yaml's own place is the line after.
    assert_eq!(
        error("I:\n  M:\n    a: in\n  bad\n"),
        "error: malformed annotation YAML: could not find expected ':'\n  --> x.yaml:4:3"
    );
}

#[test]
fn a_tab_in_the_indentation_gets_a_help() {
    assert_eq!(
        error("I:\n  M:\n\ta: in\n"),
        "error: malformed annotation YAML: found character that cannot start any token\n  --> x.yaml:3:1\n  \
         = help: YAML indents with spaces: this line's indentation has a tab"
    );
    // A tab after the colon is only a separator.
    assert!(Annotations::parse("x.yaml", "I:\n  M:\n    a:\tin\n").is_ok());
}

#[test]
fn block_scalars_and_flow_collections_hold_no_keys() {
    // The lines inside `|` look like a duplicate key; the real error is the unclosed bracket.
    assert_eq!(
        error("I:\n  M:\n    note: |\n      x: 1\n      x: 2\n    a: [\n"),
        "error: malformed annotation YAML: unclosed bracket `[`\n  --> x.yaml:6:8\n  = note: the file ends at line 7 before it is closed"
    );
    let text = "I:\n  M:\n    a: >-\n      b: 1\n\n      b: 2\n    c: { dir: in,\n      c: 1,\n      c: 2 }\n    \"d\": '\n      d: x'\n    e: out\n";
    let outline = outline::Outline::scan(text);
    assert!(outline.duplicates.is_empty(), "{:?}", outline.duplicates);
    assert_eq!(outline.pos(&["I", "M", "c"]), (7, 5));
    assert_eq!(outline.pos(&["I", "M", "d"]), (10, 5));
    assert_eq!(outline.pos(&["I", "M", "e"]), (12, 5));
    assert_eq!(outline.pos(&["I", "M", "a", "b"]), (3, 5), "no key `b` under `a`: shown at `a`");
    assert_eq!(outline.key(&["I", "M"]).unwrap().end, 12);
    assert_eq!(outline.key(&["I", "M", "c"]).unwrap().end, 9);
}

#[test]
fn duplicates_are_shown_at_the_second_key() {
    assert_eq!(
        error("I:\n  M:\n    a: in\n    a: out\n"),
        "error: duplicate entry `a` under `I.M`\n  --> x.yaml:4:5\n  = note: first written at x.yaml:3:5"
    );
    // A lone `\r` ends a line for YAML as `\n` does.
    assert_eq!(
        error("I:\r  M:\r    a: in\r    a: in\r"),
        "error: duplicate entry `a` under `I.M`\n  --> x.yaml:4:5\n  = note: first written at x.yaml:3:5"
    );
    // Sequence items are separate maps: their equal keys are no duplicates, the later one is.
    assert_eq!(
        error("I:\n  M:\n    a:\n      - k: 1\n      - k: 2\n  M:\n"),
        "error: duplicate entry `M` under `I`\n  --> x.yaml:6:3\n  = note: first written at x.yaml:2:3"
    );
    // In a flow map, serde_yaml's place (the map) is the best there is.
    assert_eq!(
        error("I:\n  M:\n    a: { dir: in, dir: out }\n"),
        "error: duplicate entry `dir` under `I.M.a`\n  --> x.yaml:3:8"
    );
}

#[test]
fn unknown_direction_and_unknown_field_are_errors_at_the_parameter() {
    let text = "I:\n  M:\n    a: inout\n    b: { dir: in, length: n }\n";
    let err = Annotations::parse("x.yaml", text).unwrap_err();
    assert_eq!(err.items.len(), 2);
    assert_eq!(err.items[0].message, "expected a direction (`in`, `out` or `ref`), found `inout`");
    assert_eq!(err.items[0].at.as_ref().unwrap().line, 3);
    assert!(err.items[1].message.contains("unknown field `length`"), "{}", err.items[1].message);
    assert_eq!(err.items[1].at.as_ref().unwrap().line, 4);
}

#[test]
fn a_bad_direction_says_what_a_direction_is() {
    let help = "\n  = help: write `in`, `out` or `ref`, or a map such as `{ dir: in, len: cCount }`";
    for (value, found) in [
        ("7", "7"),
        ("{ dir: 7 }", "7"),
        ("{ dir: [in] }", "[in]"),
        ("{ dir: inout, len: n }", "inout"),
        ("[in, out]", "[in, out]"),
        ("{ dir: { in: 1 } }", "{ in: 1 }"),
        ("{ dir: ~ }", "null"),
    ] {
        assert_eq!(
            error(&format!("I:\n  M:\n    pFoo: {value}\n")),
            format!("error: expected a direction (`in`, `out` or `ref`), found `{found}`\n  --> x.yaml:3:5{help}"),
            "{value}"
        );
    }
    // The other fields are still checked by their types.
    assert!(error("I:\n  M:\n    p: { dir: out, len: 5 }\n").contains("invalid type: integer `5`, expected a string"));
    let a = Annotations::parse("x.yaml", "I:\n  M:\n    p: { dir: ref, string: true }\n").unwrap();
    let spec = &a.interfaces[0].methods[0].params[0].spec;
    assert_eq!((spec.dir, spec.string), (Direction::Ref, true));
}

#[test]
fn a_huge_bad_value_is_quoted_short() {
    let (huge, big) = ("y".repeat(10_000_000), "y".repeat(1_000_000));
    let cut = format!("{}…", "y".repeat(crate::diag::QUOTE_LIMIT));
    // A key longer than 1024 characters must be written as an explicit `? key`.
    let text = format!("I:\n  M:\n    a: {huge}\n    b:\n      dir: in\n      ? {big}\n      : 1\n    c: [{big}]\n");
    let err = Annotations::parse("x.yaml", &text).unwrap_err();
    let messages: Vec<&str> = err.items.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(messages[0], format!("expected a direction (`in`, `out` or `ref`), found `{cut}`"));
    assert!(messages[1].starts_with(&format!("invalid parameter annotation: unknown field `{cut}`, expected one of")));
    assert_eq!(messages[2], format!("expected a direction (`in`, `out` or `ref`), found `[{}…`", &cut[..199]));
    assert!(err.to_string().len() < 2000, "{}", err.to_string().len());
}

#[test]
fn duplicate_keys_are_rejected() {
    let err = Annotations::parse("x.yaml", "I:\n  M:\n    a: in\n    a: out\n").unwrap_err();
    assert!(err.to_string().contains("duplicate entry"), "{err}");
}

#[test]
fn an_interface_in_two_files_is_an_error() {
    let a = Annotations::parse("a.yaml", "I:\n  M:\n    a: in\n").unwrap();
    let b = Annotations::parse("b.yaml", "I:\n  N:\n    b: in\n").unwrap();
    let mut errors = Errors::default();
    let all = Annotations::merge_all([a, b], &mut errors);
    assert_eq!(all.interfaces.len(), 1);
    assert!(errors.has_errors());
    assert!(errors.to_string().contains("first written at a.yaml:1:1"), "{errors}");
}

#[test]
fn a_leading_byte_order_mark_is_not_part_of_the_yaml() {
    for text in ["\u{feff}I:\n  M:\n    a: in\n", "\u{feff}---\nI:\n  M:\n    a: in\n...\n"] {
        let a = Annotations::parse("x.yaml", text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let i = a.interface("I").unwrap();
        assert_eq!(i.loc.col, 1);
        assert_eq!(i.methods[0].params[0].spec, ParamSpec::direction(Direction::In));
    }
}

#[test]
fn a_file_that_is_not_utf8_is_refused_at_the_byte() {
    let text = |bytes: &[u8]| Annotations::text("x.yaml", bytes.to_vec());
    assert_eq!(text(b"\xef\xbb\xbfI:\n").unwrap(), "\u{feff}I:\n");
    // A Latin-1 `\u{e9}` in a comment on line 3, after `    a: in # ` (12 characters; `\u{e8}` is one).
    let e = text(b"I:\n  M:\n    a: in # \xc3\xa8 \xe9t\xe9\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "error: x.yaml is not UTF-8: byte 0xE9 at byte offset 23 does not start a valid character\n  \
         --> x.yaml:3:15\n  = help: annotation files are UTF-8 YAML: save the file as UTF-8"
    );
}

/// A folder's file with a byte order mark loads; one that is not UTF-8 is an error naming it,
/// never an empty file.
#[test]
fn the_folder_reads_bytes() {
    let dir = std::env::temp_dir().join(format!("corprof-gen-ann-bytes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), b"\xef\xbb\xbfI:\n  M:\n    a: in\n").unwrap();
    let a = Annotations::load_dir(&dir, &dir).unwrap();
    assert!(a.interface("I").is_some());
    std::fs::write(dir.join("b.yaml"), b"J:\n  N:\n    b: in # \xff\n").unwrap();
    let e = Annotations::load_dir(&dir, &dir).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(e.items.len(), 1, "{e}");
    assert!(e.items[0].to_string().starts_with("error: b.yaml is not UTF-8: byte 0xFF at byte offset 20"), "{e}");
}

/// A folder that is not there, and a path that cannot be read as one (a file), each say which.
#[test]
fn a_folder_missing_or_unreadable_says_which() {
    let dir = std::env::temp_dir().join(format!("corprof-gen-ann-folder-{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let missing = Annotations::load_dir(&dir, &dir).unwrap_err();
    assert!(missing.items[0].message.ends_with("does not exist"), "{missing}");
    std::fs::write(&dir, "a file").unwrap();
    let file = Annotations::load_dir(&dir, &dir).unwrap_err();
    std::fs::remove_file(&dir).unwrap();
    assert!(file.items[0].message.starts_with("cannot read the annotation folder "), "{file}");
}

/// Nesting past `MAX_DEPTH` is refused where it goes past, before serde_yaml parses (whose
/// scanner takes time in the square of the flow depth), in every style.
#[test]
fn deep_nesting_is_refused_where_it_goes_past_the_limit() {
    use super::outline::MAX_DEPTH;
    let flow = format!("I:\n  M: {}{}\n", "[".repeat(MAX_DEPTH + 10), "]".repeat(MAX_DEPTH + 10));
    // Under I and M, the (MAX_DEPTH - 1)-th bracket reaches the limit; the next passes it.
    let col = "  M: ".len() + MAX_DEPTH - 1;
    assert_eq!(
        error(&flow),
        format!(
            "error: annotation YAML nested deeper than {MAX_DEPTH} levels\n  --> x.yaml:2:{col}\n  = note: an \
             annotation needs about 5 (interface, method, parameter, its map, a list in it)"
        )
    );
    // Block sequences on one line, and block maps by indentation.
    let items = format!("I:\n  M:\n    {}a\n", "- ".repeat(MAX_DEPTH + 1));
    assert!(error(&items).contains("nested deeper than 64 levels\n  --> x.yaml:3:"), "{}", error(&items));
    let maps: String = (0..=MAX_DEPTH).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
    let maps_error = error(&maps);
    assert!(maps_error.contains(&format!("  --> x.yaml:{}:{}\n", MAX_DEPTH + 1, MAX_DEPTH + 1)), "{maps_error}");
    // A flow collection spanning lines, inside block maps (I, M, a): both count.
    let spanning = format!("I:\n  M:\n    a: {}\n{}\n", "{ b: ".repeat(MAX_DEPTH - 2), "}".repeat(MAX_DEPTH - 2));
    assert!(error(&spanning).contains("nested deeper than"), "{}", error(&spanning));
    // At the limit, it is parsed (and refused for what it says, not for its depth).
    let at_limit = format!("I:\n  M: {}{}\n", "[".repeat(MAX_DEPTH - 2), "]".repeat(MAX_DEPTH - 2));
    assert!(!error(&at_limit).contains("nested deeper"), "{}", error(&at_limit));
}

/// The cost stays linear: 20,000 levels, and a 400 KB file of nested flow collections, are
/// refused fast (libyaml alone took 7.6 s and over 60 s); the bound is generous for a busy
/// machine and a debug build.
#[test]
fn deep_nesting_costs_linear_time() {
    let levels = format!("I: {}{}\n", "[".repeat(20_000), "]".repeat(20_000));
    let wide: String = std::iter::repeat_n("{a: [", 40_000).collect::<String>() + "\n";
    assert!(wide.len() >= 200_000);
    let big = format!("I:\n  M: {wide}{}", "x".repeat(400_000 - wide.len()));
    for text in [levels, big] {
        let start = std::time::Instant::now();
        let e = Annotations::parse("x.yaml", &text).unwrap_err();
        let took = start.elapsed();
        assert!(took < std::time::Duration::from_secs(2), "{took:?} for {} bytes", text.len());
        assert!(e.to_string().contains("nested deeper than"), "{e}");
    }
}

/// The outline against serde_yaml on generated YAML: for every text serde_yaml accepts, each key
/// path of its value tree is placed where the generator wrote that key, or, for a key inside a
/// flow collection (which the outline does not follow), where its closest block parent is. The
/// texts mix what the two must agree on: indentation widths, block scalars whose lines look like
/// keys, flow maps and sequences (some spanning lines), quoted keys, comments, anchors and
/// aliases, sequences at their key's indentation, `---`, CRLF. Then each text is damaged a little
/// (a character dropped, doubled or put in), and where serde_yaml still accepts it, every key the
/// outline claims to have found must be that key's text.
mod differential {
    use super::outline::{Outline, lines};
    use serde_yaml::Value;
    use std::collections::HashMap;

    /// xorshift64*: the cases are the same on every run, so a failure repeats.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn chance(&mut self, percent: usize) -> bool {
            self.below(100) < percent
        }
    }

    /// Where each key was written: its path, then its 1-based line and column (none for a key
    /// inside a flow collection).
    type Written = HashMap<Vec<String>, Option<(u32, u32)>>;

    /// A text and where its keys were written.
    struct Gen {
        rng: Rng,
        lines: Vec<String>,
        keys: Written,
        anchors: usize,
        counter: usize,
    }

    impl Gen {
        fn push(&mut self, line: String) -> u32 {
            self.lines.push(line);
            self.lines.len() as u32
        }

        /// A fresh key: the name it means and how it is written.
        fn key(&mut self) -> (String, String) {
            self.counter += 1;
            let n = self.counter;
            match self.rng.below(8) {
                0 => (format!("q {n}: #x"), format!("\"q {n}: #x\"")),
                1 => (format!("it's{n}"), format!("'it''s{n}'")),
                2 => (format!("e\"{n}\\"), format!("\"e\\\"{n}\\\\\"")),
                3 => (format!("K x{n}"), format!("K x{n}")),
                4 => (format!("a-b.{n}"), format!("a-b.{n}")),
                _ => (format!("k{n}"), format!("k{n}")),
            }
        }

        fn scalar(&mut self) -> String {
            match self.rng.below(9) {
                0 => "\"quoted # not: a comment\"".into(),
                1 => "'it''s: [x'".into(),
                2 => "7".into(),
                3 => "~".into(),
                4 => {
                    self.anchors += 1;
                    format!("&anc{} in", self.anchors)
                }
                5 if self.anchors > 0 => format!("*anc{}", 1 + self.rng.below(self.anchors)),
                6 => "a#b".into(),
                _ => "in".into(),
            }
        }

        /// A flow collection, its keys recorded under `path` without a place.
        fn flow(&mut self, path: &[String], depth: usize) -> String {
            if self.rng.chance(30) || depth > 2 {
                let items: Vec<String> = (0..self.rng.below(3)).map(|_| self.scalar()).collect();
                return format!("[{}]", items.join(", "));
            }
            let mut entries = Vec::new();
            for _ in 0..self.rng.below(3) + 1 {
                let (name, written) = self.key();
                let mut sub = path.to_vec();
                sub.push(name);
                let value = if self.rng.chance(30) { self.flow(&sub, depth + 1) } else { self.scalar() };
                self.keys.insert(sub, None);
                entries.push(format!("{written}: {value}"));
            }
            format!("{{ {} }}", entries.join(", "))
        }

        fn comment(&mut self, indent: usize) {
            let at = self.rng.below(indent + 3);
            match self.rng.below(10) {
                0 => drop(self.push(format!("{}# a: comment", " ".repeat(at)))),
                1 => drop(self.push(String::new())),
                _ => {}
            }
        }

        /// A block map whose keys are indented by `indent`.
        fn map(&mut self, path: &[String], indent: usize, depth: usize) {
            let pad = " ".repeat(indent);
            for _ in 0..self.rng.below(3) + 1 {
                self.comment(indent);
                let (name, written) = self.key();
                let mut sub = path.to_vec();
                sub.push(name);
                let step = 1 + self.rng.below(4);
                let inner = " ".repeat(indent + step);
                let trailing = if self.rng.chance(15) { " # b: c" } else { "" };
                let line = self.lines.len() as u32 + 1;
                self.keys.insert(sub.clone(), Some((line, indent as u32 + 1)));
                match self.rng.below(if depth >= 3 { 5 } else { 7 }) {
                    0 => drop(self.push(format!("{pad}{written}:{trailing}"))),
                    1 => {
                        let scalar = self.scalar();
                        self.push(format!("{pad}{written}: {scalar}{trailing}"));
                    }
                    2 => {
                        let header = ["|", ">", "|-", ">+", "|+"][self.rng.below(5)];
                        self.push(format!("{pad}{written}: {header}{trailing}"));
                        // The first line sets the scalar's indentation: not a deeper one.
                        let texts = ["x: y", "", "- z", "\"q", "  [ { deeper: 1", "# not a comment"];
                        for (i, text) in texts.into_iter().enumerate() {
                            if i == 0 || self.rng.chance(50) {
                                let text = if text.is_empty() { String::new() } else { format!("{inner}{text}") };
                                self.push(text);
                            }
                        }
                        self.push(format!("{inner}last: line"));
                    }
                    3 => {
                        let flow = self.flow(&sub, 0);
                        if self.rng.chance(30) && flow.len() > 4 {
                            // The collection goes on on the next line, indented deeper.
                            let cut = flow.find(", ").unwrap_or(1) + 1;
                            self.push(format!("{pad}{written}: {}", &flow[..cut]));
                            self.push(format!("{inner}{}", &flow[cut..].trim_start()));
                        } else {
                            self.push(format!("{pad}{written}: {flow}{trailing}"));
                        }
                    }
                    4 => {
                        // A sequence, deeper or at its key's own indentation.
                        self.push(format!("{pad}{written}:{trailing}"));
                        let at = if self.rng.chance(50) { pad.clone() } else { inner.clone() };
                        for _ in 0..self.rng.below(3) + 1 {
                            let scalar = self.scalar();
                            self.push(format!("{at}- {scalar}"));
                        }
                    }
                    _ => {
                        let anchor = if self.rng.chance(20) {
                            self.counter += 1;
                            format!(" &map{}", self.counter)
                        } else {
                            String::new()
                        };
                        self.push(format!("{pad}{written}:{anchor}{trailing}"));
                        self.map(&sub, indent + step, depth + 1);
                    }
                }
            }
        }
    }

    fn generate(seed: u64) -> (String, Written) {
        let mut g = Gen { rng: Rng(seed | 1), lines: Vec::new(), keys: HashMap::new(), anchors: 0, counter: 0 };
        for _ in 0..8 {
            g.rng.next();
        }
        if g.rng.chance(15) {
            g.push("---".into());
        }
        let indent = if g.rng.chance(20) { 1 + g.rng.below(2) } else { 0 };
        g.map(&[], indent, 0);
        let end = if g.rng.chance(25) { "\r\n" } else { "\n" };
        let mut text = g.lines.join(end);
        text.push_str(end);
        (text, g.keys)
    }

    /// Every path of string keys in the value tree, through maps only.
    fn paths(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        if let Value::Mapping(m) = v {
            for (k, v) in m {
                if let Value::String(k) = k {
                    path.push(k.clone());
                    out.push(path.clone());
                    paths(v, path, out);
                    path.pop();
                }
            }
        }
    }

    #[test]
    fn the_outline_places_the_keys_serde_yaml_reads() {
        let (mut accepted, cases) = (0, 3000);
        for seed in 0..cases {
            let (text, written) = generate(seed);
            let value: Value = match serde_yaml::from_str(&text) {
                Ok(v) => v,
                Err(_) => continue,
            };
            accepted += 1;
            let outline = Outline::scan(&text);
            let mut found = Vec::new();
            paths(&value, &mut Vec::new(), &mut found);
            let mut block: Vec<&Vec<String>> = written.iter().filter(|(_, at)| at.is_some()).map(|(p, _)| p).collect();
            block.sort();
            for path in &block {
                assert!(found.contains(path), "seed {seed}: serde_yaml has no {path:?}\n{text}");
            }
            for path in &found {
                // The closest written key on the path: itself, or a block parent of a flow key.
                let expected =
                    (1..=path.len()).rev().find_map(|n| written.get(&path[..n]).copied().flatten()).unwrap_or((1, 1));
                let names: Vec<&str> = path.iter().map(String::as_str).collect();
                assert_eq!(outline.pos(&names), expected, "seed {seed}: {path:?}\n{text}");
            }
            assert!(outline.duplicates.is_empty() && outline.too_deep.is_none(), "seed {seed}\n{text}");
        }
        // Most texts are valid YAML, so the comparison is not vacuous.
        assert!(accepted > cases * 9 / 10, "serde_yaml accepted only {accepted} of {cases}");
    }

    /// Whether the text at `line`:`col` writes the key `name` (plain or quoted).
    fn writes(text: &str, (line, col): (u32, u32), name: &str) -> bool {
        let Some(line) = lines(text).nth(line as usize - 1) else { return false };
        let rest: String = line.chars().skip(col as usize - 1).collect();
        if rest.starts_with(name) {
            return true;
        }
        let Some(q @ ('"' | '\'')) = rest.chars().next() else { return false };
        rest.char_indices()
            .skip(1)
            .filter(|&(_, c)| c == q)
            .any(|(i, _)| serde_yaml::from_str::<String>(&rest[..=i]).is_ok_and(|s| s == name))
    }

    #[test]
    fn on_damaged_yaml_the_outline_finds_no_key_where_serde_yaml_has_another() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut checked = 0;
        for seed in 0..3000 {
            let (text, _) = generate(seed);
            let mut chars: Vec<char> = text.chars().collect();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(chars.len());
                match rng.below(3) {
                    0 => drop(chars.remove(at)),
                    1 => chars.insert(at, chars[at]),
                    _ => chars
                        .insert(at, [' ', ':', '#', '"', '\'', '[', '{', '}', '|', '>', '-', '\n', '&'][rng.below(13)]),
                }
            }
            let text: String = chars.into_iter().collect();
            let Ok(value) = serde_yaml::from_str::<Value>(&text) else { continue };
            let outline = Outline::scan(&text);
            let mut found = Vec::new();
            paths(&value, &mut Vec::new(), &mut found);
            for path in &found {
                let names: Vec<&str> = path.iter().map(String::as_str).collect();
                if let Some(key) = outline.key(&names) {
                    checked += 1;
                    let name = path.last().expect("a path has a key");
                    assert!(writes(&text, (key.line, key.col), name), "{path:?} at {}:{}\n{text}", key.line, key.col);
                }
            }
        }
        assert!(checked > 1000, "only {checked} keys checked");
    }
}
