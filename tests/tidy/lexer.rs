//! Just enough of Rust's and Markdown's syntax for the rules: a Rust file's comments (doc or
//! plain) and its code with the comments blanked; prose as paragraphs outside code blocks; the
//! code spans (`` `…` ``) of a paragraph.

/// Whether a comment is documentation (`///`, `//!`, `/** */`, `/*! */`) or a plain comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Doc,
    Plain,
}

/// One line of a comment.
#[derive(Debug)]
pub struct CommentLine {
    pub line: usize,
    pub kind: Kind,
    /// The text after the comment's marker.
    pub text: String,
    /// Whether the line holds nothing but this comment (not code before it).
    pub alone: bool,
}

/// A Rust file taken apart: its comments, and its code with every comment blanked (newlines kept,
/// so line numbers hold).
pub struct Lexed {
    pub comments: Vec<CommentLine>,
    pub code: String,
}

pub fn lex(src: &str) -> Lexed {
    let chars: Vec<char> = src.chars().collect();
    let mut code = String::with_capacity(src.len());
    let mut comments = Vec::new();
    let (mut i, mut line) = (0, 1);
    // Whether the current line has code before the position.
    let mut code_on_line = false;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let start = i;
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            let body: String = chars[start + 2..i].iter().collect();
            let (kind, text) = match body.chars().next() {
                Some('/') if !body.starts_with("//") => (Kind::Doc, &body[1..]),
                Some('!') => (Kind::Doc, &body[1..]),
                _ => (Kind::Plain, &body[..]),
            };
            comments.push(CommentLine { line, kind, text: text.to_string(), alone: !code_on_line });
            code.extend(std::iter::repeat_n(' ', i - start));
            continue;
        }
        if c == '/' && next == Some('*') {
            let doc = matches!(chars.get(i + 2), Some('*' | '!')) && chars.get(i + 3) != Some(&'/');
            let kind = if doc { Kind::Doc } else { Kind::Plain };
            let alone = !code_on_line;
            let mut depth = 0;
            let mut text = String::new();
            let mut first = true;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    code.push_str("  ");
                    i += 2;
                    if depth == 1 && doc {
                        code.push(' ');
                        i += 1;
                    }
                    continue;
                }
                if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    code.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                    continue;
                }
                if chars[i] == '\n' {
                    comments.push(CommentLine { line, kind, text: std::mem::take(&mut text), alone: alone || !first });
                    first = false;
                    line += 1;
                    code.push('\n');
                } else {
                    text.push(chars[i]);
                    code.push(' ');
                }
                i += 1;
            }
            comments.push(CommentLine { line, kind, text, alone: alone || !first });
            continue;
        }
        // Literals are code, copied whole, so that a `//` or a quote inside one is not taken
        // for a comment or an end.
        let raw_start = if c == 'r'
            && (i == 0 || !ident(chars[i - 1]) || (chars[i - 1] == 'b' && (i < 2 || !ident(chars[i - 2]))))
        {
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            (chars.get(j) == Some(&'"')).then_some((j - i - 1, j))
        } else {
            None
        };
        let end = if let Some((hashes, quote)) = raw_start {
            let mut j = quote + 1;
            loop {
                match chars.get(j) {
                    None => break j,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => break j + 1 + hashes,
                    _ => j += 1,
                }
            }
        } else if c == '"' {
            let mut j = i + 1;
            loop {
                match chars.get(j) {
                    None => break j,
                    Some('\\') => j += 2,
                    Some('"') => break j + 1,
                    _ => j += 1,
                }
            }
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a), which is code.
            match (next, chars.get(i + 2)) {
                (Some('\\'), _) => {
                    let mut j = i + 2;
                    while j < chars.len() && (chars[j] != '\'' || j == i + 2) {
                        j += 1;
                    }
                    j + 1
                }
                (Some(_), Some('\'')) => i + 3,
                _ => i + 1,
            }
        } else {
            i + 1
        };
        let end = end.min(chars.len());
        for &ch in &chars[i..end] {
            if ch == '\n' {
                line += 1;
                code_on_line = false;
            } else if !ch.is_whitespace() {
                code_on_line = true;
            }
            code.push(ch);
        }
        i = end;
    }
    Lexed { comments, code }
}

/// Consecutive lines of prose (a paragraph), each with its line number.
#[derive(Debug, Default)]
pub struct Block {
    pub lines: Vec<(usize, String)>,
    /// Doc or plain, for a block of comments.
    pub kind: Option<Kind>,
}

impl Block {
    /// The paragraph's text, its lines joined by `\n`, and where each line starts in it.
    fn text(&self) -> (String, Vec<(usize, usize)>) {
        let mut text = String::new();
        let mut starts = Vec::new();
        for (line, l) in &self.lines {
            if !text.is_empty() {
                text.push('\n');
            }
            starts.push((text.len(), *line));
            text.push_str(l);
        }
        (text, starts)
    }
}

/// Whether `line` opens or closes a fenced code block.
fn fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// A Rust file's comments as paragraphs: a block ends at a blank comment line, a gap, a change
/// between doc and plain, and a comment after code on its line stands alone. Fenced code in doc
/// comments is left out.
pub fn comment_blocks(comments: &[CommentLine]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut block = Block::default();
    let mut in_fence = false;
    // The previous comment line: its number, kind, and whether it stood alone.
    let mut last: Option<(usize, Kind, bool)> = None;
    let flush = |block: &mut Block, blocks: &mut Vec<Block>| {
        if !block.lines.is_empty() {
            blocks.push(std::mem::take(block));
        }
    };
    for c in comments {
        let continues = c.alone && last == Some((c.line - 1, c.kind, true));
        last = Some((c.line, c.kind, c.alone));
        if !continues {
            flush(&mut block, &mut blocks);
            in_fence = false;
        }
        let text = c.text.strip_prefix(' ').unwrap_or(&c.text);
        if fence(text) || in_fence || text.trim().is_empty() {
            if fence(text) {
                in_fence = !in_fence;
            }
            flush(&mut block, &mut blocks);
            continue;
        }
        block.kind = Some(c.kind);
        block.lines.push((c.line, text.to_string()));
    }
    flush(&mut block, &mut blocks);
    blocks
}

/// A Markdown text's paragraphs outside fenced code (a table's rows are one paragraph).
pub fn markdown_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut block = Block::default();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        if fence(line) {
            in_fence = !in_fence;
        }
        if fence(line) || in_fence || line.trim().is_empty() {
            if !block.lines.is_empty() {
                blocks.push(std::mem::take(&mut block));
            }
            continue;
        }
        block.lines.push((i + 1, line.to_string()));
    }
    if !block.lines.is_empty() {
        blocks.push(block);
    }
    blocks
}

/// A code span of a paragraph, and the line it starts on.
#[derive(Debug, PartialEq)]
pub struct Span {
    pub line: usize,
    pub text: String,
}

/// The code spans of `block`, as Markdown pairs backticks: a run of n backticks up to the next
/// run of exactly n, across the paragraph's lines.
pub fn code_spans(block: &Block) -> Vec<Span> {
    let (text, starts) = block.text();
    let line_at = |at: usize| starts.iter().rev().find(|(s, _)| *s <= at).map_or(0, |(_, l)| *l);
    let bytes = text.as_bytes();
    let run = |at: usize| bytes[at..].iter().take_while(|&&b| b == b'`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run(i);
        let open = i;
        let mut j = i + n;
        let close = loop {
            match text[j..].find('`') {
                None => break None,
                Some(k) => {
                    let at = j + k;
                    let m = run(at);
                    if m == n {
                        break Some(at);
                    }
                    j = at + m;
                }
            }
        };
        match close {
            Some(at) => {
                let inner = &text[open + n..at];
                let inner = inner.strip_prefix(' ').and_then(|s| s.strip_suffix(' ')).unwrap_or(inner);
                spans.push(Span { line: line_at(open), text: inner.replace('\n', " ") });
                i = at + n;
            }
            None => i = open + n,
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_strings_and_lifetimes_are_told_apart() {
        let src = "/// Doc `a::b`.\nfn f<'a>(x: &'a str) -> char { let _ = \"// not\"; '\"' } // after `c::d`\n//! inner\n\
                   // plain\nlet r = r#\"/* no \"# ; /* block\n still */ x\n";
        let l = lex(src);
        let got: Vec<(usize, Kind, &str, bool)> =
            l.comments.iter().map(|c| (c.line, c.kind, c.text.as_str(), c.alone)).collect();
        assert_eq!(
            got,
            [
                (1, Kind::Doc, " Doc `a::b`.", true),
                (2, Kind::Plain, " after `c::d`", false),
                (3, Kind::Doc, " inner", true),
                (4, Kind::Plain, " plain", true),
                (5, Kind::Plain, " block", false),
                (6, Kind::Plain, " still ", true),
            ]
        );
        assert!(l.code.contains("\"// not\"") && l.code.contains("r#\"/* no \"#") && !l.code.contains("after"));
        assert_eq!(l.code.lines().count(), src.lines().count());
    }

    #[test]
    fn spans_pair_across_lines_and_fences_are_skipped() {
        let l = lex("/// One `a::b` and `c::\n/// d`, ``e`f``.\n///\n/// ```\n/// `not::this`\n/// ```\n/// `g`\n");
        let spans: Vec<Span> = comment_blocks(&l.comments).iter().flat_map(code_spans).collect();
        let texts: Vec<(usize, &str)> = spans.iter().map(|s| (s.line, s.text.as_str())).collect();
        assert_eq!(texts, [(1, "a::b"), (1, "c:: d"), (2, "e`f"), (7, "g")]);
        let md = markdown_blocks("Text `x::y`\n\n```rust\n`no::no`\n```\n| `t::u` |\n");
        let texts: Vec<String> = md.iter().flat_map(code_spans).map(|s| format!("{}:{}", s.line, s.text)).collect();
        assert_eq!(texts, ["1:x::y", "6:t::u"]);
    }
}
