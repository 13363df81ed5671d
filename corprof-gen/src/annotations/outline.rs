//! What serde_yaml's value tree does not keep: where each key of a block-style map is written
//! and where its block ends. A line scanner, not a YAML parser: it follows indentation and steps
//! over what holds no keys (block scalars, flow collections, quoted scalars spanning lines). It
//! also notes what serde_yaml's errors point past: keys written twice, where a quote or bracket
//! still open at the end opened, and where a second document starts; and where the text nests
//! deeper than [`MAX_DEPTH`], which the loader refuses before serde_yaml sees it. The scan is
//! linear in the text's length, whatever it holds.

use std::borrow::Cow;
use std::collections::HashMap;

/// One key of a block map: 1-based line and column, and the last line of its block.
#[derive(Clone, Debug, Default)]
pub(crate) struct Key<'a> {
    /// Empty for sequence items. Borrowed from the text unless quoted.
    name: Cow<'a, str>,
    pub line: u32,
    pub col: u32,
    /// The last line holding the key or its value (blank and comment lines after it excluded).
    pub end: u32,
    /// The value is not a block map (`a: in`, `I: {}`, or `{}` on the next line): nothing can be
    /// written beneath.
    pub inline: bool,
    /// The indentation of the first key beneath this one.
    pub child_indent: Option<usize>,
}

impl Key<'_> {
    pub fn indent(&self) -> usize {
        self.col as usize - 1
    }
}

/// A key written twice under the same parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Duplicate {
    /// The parents' names, then the key.
    pub path: Vec<String>,
    pub first: (u32, u32),
    pub second: (u32, u32),
}

/// How deep block maps, sequences and flow collections may nest, together: annotations need
/// about 5 levels (interface, method, parameter, its map, a list in it). libyaml's scanner spends
/// time in the square of the flow depth (every token revisits each open level's possible simple
/// key), so 20,000 `[` took seconds before its own recursion limit answered.
pub(crate) const MAX_DEPTH: usize = 64;

/// A construct still open at the end of the text: `"`, `'`, `[` or `{`, and where it opened.
pub(crate) type Unclosed = (char, u32, u32);

pub(crate) struct Outline<'a> {
    /// Index 0 is the document itself.
    keys: Vec<Key<'a>>,
    /// (parent index, name) → the key's index: one table for the whole text, borrowing the
    /// names, rather than a map of owned names in every key (two allocations a key).
    children: Children<'a>,
    pub duplicates: Vec<Duplicate>,
    pub unclosed: Option<Unclosed>,
    /// The line where a second YAML document starts.
    pub second_document: Option<u32>,
    /// Where (line, column) the nesting first goes past [`MAX_DEPTH`].
    pub too_deep: Option<(u32, u32)>,
}

type Children<'a> = HashMap<(usize, Cow<'a, str>), usize>;

impl<'a> Outline<'a> {
    pub fn scan(text: &'a str) -> Outline<'a> {
        let mut s = Scanner::default();
        // About a key a line: reserved once rather than grown (and rehashed) on a big file.
        let newlines = text.bytes().filter(|&b| b == b'\n').count();
        s.keys.reserve(newlines + 1);
        s.children.reserve(newlines);
        s.keys.push(Key::default());
        for (i, line) in lines(text.strip_prefix('\u{feff}').unwrap_or(text)).enumerate() {
            s.line(line, i as u32 + 1);
        }
        s.pop_to(0);
        let open = s.flow.quote.is_some() || s.flow.depth > 0;
        let too_deep = s.too_deep.or(s.flow.too_deep);
        let (keys, duplicates, children) = (s.keys, s.duplicates, s.children);
        Outline {
            keys,
            children,
            duplicates,
            unclosed: s.flow.opened.filter(|_| open),
            second_document: s.second_document,
            too_deep,
        }
    }

    /// The key at `path` (interface, method, parameter), if written in block style.
    pub fn key(&self, path: &[&str]) -> Option<&Key<'a>> {
        let mut at = 0;
        for name in path {
            at = self.child(at, name)?;
        }
        Some(&self.keys[at])
    }

    fn child(&self, parent: usize, name: &str) -> Option<usize> {
        self.children.get(&(parent, Cow::Borrowed(name))).copied()
    }

    /// The root of a walk down the keys ([`Outline::under`]): the document itself.
    pub fn root(&self) -> Place {
        Place { key: 0, found: true }
    }

    /// One step down from `parent` to its key `name`, as [`Outline::pos`] walks a whole path:
    /// a loader going through the tree level by level looks each name up once.
    pub fn under(&self, parent: Place, name: &str) -> Place {
        match parent.found.then(|| self.child(parent.key, name)).flatten() {
            Some(key) => Place { key, found: true },
            None => Place { found: false, ..parent },
        }
    }

    /// Where a place is written: its key's, or the closest written parent's; 1:1 for the root.
    pub fn at(&self, place: Place) -> (u32, u32) {
        match place.key {
            0 => (1, 1),
            k => (self.keys[k].line, self.keys[k].col),
        }
    }

    /// Where `path` is written, or where its closest written parent is (`I: { M: { a: in } }`
    /// shows `a` at `I`); 1:1 when nothing of it is.
    pub fn pos(&self, path: &[&str]) -> (u32, u32) {
        self.at(path.iter().fold(self.root(), |place, name| self.under(place, name)))
    }
}

/// A step of a walk down the outline's keys: the key reached, and whether every name on the way
/// was found (after a miss the walk stays at the last key found).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place {
    key: usize,
    found: bool,
}

/// Lines as YAML counts them: `\n`, `\r\n` and a lone `\r` all end one.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = &str> {
    lines_with_ends(text).map(|l| l.trim_end_matches(['\n', '\r']))
}

/// The lines of `text` with their endings.
pub(crate) fn lines_with_ends(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let text = rest?;
        let end = match text.find(['\n', '\r']) {
            Some(i) if text[i..].starts_with("\r\n") => i + 2,
            Some(i) => i + 1,
            None => text.len(),
        };
        let (line, tail) = text.split_at(end);
        rest = (end < text.len() || line.ends_with(['\n', '\r'])).then_some(tail);
        Some(line)
    })
}

#[derive(Default)]
struct Scanner<'a> {
    keys: Vec<Key<'a>>,
    children: Children<'a>,
    duplicates: Vec<Duplicate>,
    /// Open block keys and sequence items: (indentation, key index).
    stack: Vec<(usize, usize)>,
    last_content: u32,
    /// Inside a block scalar whose lines are indented deeper than this (-1: the document's).
    block_scalar: Option<isize>,
    flow: Flow,
    /// A `---` or content was seen / a `...` ended the document.
    started: bool,
    ended: bool,
    second_document: Option<u32>,
    /// Where the block nesting (the stack) first went past [`MAX_DEPTH`].
    too_deep: Option<(u32, u32)>,
}

impl<'a> Scanner<'a> {
    /// Pushes an open key or item; notes where the nesting first gets too deep.
    fn push(&mut self, indent: usize, key: usize, n: u32) {
        self.stack.push((indent, key));
        if self.stack.len() > MAX_DEPTH && self.too_deep.is_none() {
            self.too_deep = Some((n, indent as u32 + 1));
        }
    }

    fn line(&mut self, line: &'a str, n: u32) {
        let body = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - body.len();
        if indent == 0 && (marker(body, "---") || marker(body, "...")) {
            let start = body.starts_with('-');
            if start && (self.started || self.ended) {
                self.second_document.get_or_insert(n);
            }
            (self.started, self.ended) = (self.started || start, self.ended || !start);
            (self.flow, self.block_scalar) = (Flow::default(), None);
            self.pop_to(0);
            return;
        }
        if self.flow.quote.is_some() || self.flow.depth > 0 {
            self.flow.base = self.stack.len();
            self.flow.scan(line, 1, n);
            self.content(n, body);
            return;
        }
        if let Some(parent) = self.block_scalar {
            if body.is_empty() || indent as isize > parent {
                self.content(n, body);
                return;
            }
            self.block_scalar = None;
        }
        if body.is_empty() || body.starts_with('#') || indent == 0 && body.starts_with('%') {
            return;
        }
        if self.ended {
            self.second_document.get_or_insert(n);
        }
        self.started = true;
        self.pop_to(indent);
        self.last_content = n;
        // Columns count characters, as serde_yaml's do; indentation is ASCII.
        let (mut col, mut rest) = (indent, body);
        // A sequence item: keys inside it belong to it, not to the map above.
        while let Some(after) = rest.strip_prefix('-').filter(|a| a.is_empty() || a.starts_with([' ', '\t'])) {
            let item = self.new_key(Cow::Borrowed(""), n, col);
            self.push(col, item, n);
            let value = after.trim_start_matches([' ', '\t']);
            col += rest.len() - value.len();
            rest = value;
        }
        match leading_key(rest) {
            Some((name, after)) => {
                self.pop_to(col);
                let parent = self.stack.last().map_or(0, |&(_, k)| k);
                self.keys[parent].child_indent.get_or_insert(col);
                let key = self.new_key(name.clone(), n, col);
                match self.children.get(&(parent, name.clone())) {
                    Some(&first) => {
                        let names = self.stack.iter().map(|&(_, k)| &self.keys[k].name);
                        let mut path: Vec<String> = names.filter(|n| !n.is_empty()).map(|n| n.to_string()).collect();
                        path.push(name.into_owned());
                        let first = (self.keys[first].line, self.keys[first].col);
                        self.duplicates.push(Duplicate { path, first, second: (n, col as u32 + 1) });
                    }
                    None => {
                        self.children.insert((parent, name), key);
                    }
                }
                self.push(col, key, n);
                let value_col = col + rest[..rest.len() - after.len()].chars().count();
                self.keys[key].inline = self.value(after, value_col, n, col as isize);
            }
            None => {
                // A value on the lines after its key (`M:` then `{ a: in }` or `~`): no map.
                let parent = self.stack.last().map_or(-1, |&(ind, _)| ind as isize);
                if self.value(rest, col, n, parent)
                    && let Some(&(_, key)) = self.stack.last()
                {
                    self.keys[key].inline = true;
                }
            }
        }
    }

    /// A value starting at 0-based column `col` of line `n`; `parent` is its key's indentation.
    /// Returns whether there is one (not just a comment, anchor or tag).
    fn value(&mut self, text: &str, col: usize, n: u32, parent: isize) -> bool {
        let mut v = text.trim_start_matches([' ', '\t']);
        // Anchors and tags come before the value itself.
        while v.starts_with(['&', '!']) {
            v = v.find([' ', '\t']).map_or("", |end| v[end..].trim_start_matches([' ', '\t']));
        }
        if v.is_empty() || v.starts_with('#') {
            return false;
        }
        if block_scalar_header(v) {
            self.block_scalar = Some(parent);
        } else {
            self.flow.base = self.stack.len();
            self.flow.scan(v, col + text[..text.len() - v.len()].chars().count() + 1, n);
        }
        true
    }

    fn content(&mut self, n: u32, body: &str) {
        if !body.is_empty() && !body.starts_with('#') {
            self.last_content = n;
        }
    }

    fn new_key(&mut self, name: Cow<'a, str>, n: u32, col: usize) -> usize {
        self.keys.push(Key { name, line: n, col: col as u32 + 1, end: n, ..Key::default() });
        self.keys.len() - 1
    }

    /// Closes the keys indented at `indent` or deeper: their blocks end at the last content line.
    fn pop_to(&mut self, indent: usize) {
        while let Some(&(_, key)) = self.stack.last().filter(|&&(ind, _)| ind >= indent) {
            self.keys[key].end = self.keys[key].end.max(self.last_content);
            self.stack.pop();
        }
    }
}

/// `---` or `...` alone or followed by a space.
fn marker(body: &str, m: &str) -> bool {
    body.strip_prefix(m).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// `|`, `>-`, `|2+`, … optionally followed by a comment.
fn block_scalar_header(v: &str) -> bool {
    let Some(rest) = v.strip_prefix(['|', '>']) else {
        return false;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '+' || c == '-');
    rest.is_empty() || rest.starts_with([' ', '\t'])
}

/// Quotes and flow collections, which may span lines.
#[derive(Default)]
struct Flow {
    quote: Option<char>,
    depth: usize,
    /// The outermost construct open now, and where it opened.
    opened: Option<Unclosed>,
    /// The block nesting around the collection (it counts towards [`MAX_DEPTH`] too).
    base: usize,
    /// Where the nesting first went past [`MAX_DEPTH`].
    too_deep: Option<(u32, u32)>,
}

impl Flow {
    /// Follows `text`, starting at 1-based column `col` of line `n`: a quote or bracket opens a
    /// construct only where a value starts (`it's` is plain text).
    fn scan(&mut self, text: &str, col: usize, n: u32) {
        let mut at_start = true;
        let mut after_space = true;
        let mut chars = text.chars().enumerate().peekable();
        let mut escaped = false;
        while let Some((i, c)) = chars.next() {
            let here = (n, (col + i) as u32);
            if let Some(q) = self.quote {
                if escaped {
                    escaped = false;
                } else if q == '"' && c == '\\' {
                    escaped = true;
                } else if c == q && q == '\'' && chars.peek().is_some_and(|&(_, next)| next == '\'') {
                    chars.next();
                } else if c == q {
                    self.quote = None;
                    at_start = false;
                    if self.depth == 0 {
                        self.opened = None;
                    }
                }
                continue;
            }
            match c {
                '"' | '\'' if at_start => {
                    self.quote = Some(c);
                    if self.depth == 0 {
                        self.opened = Some((c, here.0, here.1));
                    }
                }
                '[' | '{' if at_start || self.depth > 0 => {
                    if self.depth == 0 {
                        self.opened = Some((c, here.0, here.1));
                    }
                    self.depth += 1;
                    if self.base + self.depth > MAX_DEPTH && self.too_deep.is_none() {
                        self.too_deep = Some(here);
                    }
                    at_start = true;
                }
                ']' | '}' if self.depth > 0 => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.opened = None;
                    }
                    at_start = false;
                }
                ',' | ':' | '?' if self.depth > 0 => at_start = true,
                '#' if after_space => return,
                ' ' | '\t' => {}
                _ => at_start = false,
            }
            after_space = c == ' ' || c == '\t';
        }
    }
}

/// `Name:` or `"Name":` at the start of `s` → (`Name`, the text after the colon).
fn leading_key(s: &str) -> Option<(Cow<'_, str>, &str)> {
    let (key, rest) = match s.chars().next()? {
        q @ ('"' | '\'') => {
            let (key, len) = quoted(&s[1..], q)?;
            (Cow::Owned(key), s[1 + len..].trim_start_matches([' ', '\t']))
        }
        '[' | '{' | '&' | '!' | '*' | '?' | '|' | '>' | '#' => return None,
        _ => {
            let end = s.match_indices(':').map(|(i, _)| i).find(|&i| {
                let after = &s[i + 1..];
                after.is_empty() || after.starts_with([' ', '\t'])
            })?;
            if s[..end].contains(" #") {
                return None;
            }
            (Cow::Borrowed(s[..end].trim_end()), &s[end..])
        }
    };
    let after = rest.strip_prefix(':')?;
    (after.is_empty() || after.starts_with([' ', '\t'])).then_some((key, after))
}

/// The text of a quoted scalar whose opening quote was just before `s`, and the byte length
/// through its closing quote. Only the escapes of quotes and backslashes are undone: other
/// escapes in a key are rare enough that a key using them is shown at its parent.
fn quoted(s: &str, q: char) -> Option<(String, usize)> {
    let mut key = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if q == '"' => {
                let (_, next) = chars.next()?;
                key.push(next);
            }
            '\'' if q == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
                key.push('\'');
            }
            c if c == q => return Some((key, i + 1)),
            c => key.push(c),
        }
    }
    None
}
