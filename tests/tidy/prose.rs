//! Rules on prose: comments, docs and the Markdown files.

use crate::lexer::{Block, code_spans, comment_blocks, lex, markdown_blocks};
use crate::{Repo, Violation, report};

/// Where the rule on issue numbers does not apply, and why.
const HISTORY: &[(&str, &str)] = &[
    ("CHANGELOG.md", "history: each change may say what asked for it"),
    ("BENCHMARKS.md#", "history: a section's title may name what it measured for (its text may not)"),
];

/// Whether `file`'s `line` is exempt from the issue-number rule.
fn is_history(file: &str, line: &str) -> bool {
    HISTORY.iter().any(|(place, _)| match place.split_once('#') {
        Some((f, _)) => file == f && line.trim_start().starts_with('#'),
        None => file == *place,
    })
}

/// Where `text` points at an issue by number: `issue 12`, `issues 3 and 4`, `issue #12`,
/// `(issue 9)`, or a bare `#12`; each as its byte offset. A number after a repository
/// (`dotnet/runtime#69634`, `dotnet/runtime issue 5`) can be followed, and so can a bare `#N` in
/// a paragraph that names a repository's issue (`dotnet/runtime#69634, #88924`).
pub fn issue_numbers(text: &str) -> Vec<usize> {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let word_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    // The word before `at` (back to whitespace or an opening bracket) names a repository.
    let after_repository = |at: usize| {
        let before = lower[..at].trim_end();
        let word = before.rsplit(|c: char| c.is_whitespace() || c == '(' || c == '[').next().unwrap_or("");
        word.contains('/')
    };
    let mut found = Vec::new();
    for (at, _) in lower.match_indices("issue") {
        if at > 0 && word_char(bytes[at - 1]) {
            continue;
        }
        let mut j = at + "issue".len();
        if bytes.get(j) == Some(&b's') {
            j += 1;
        }
        let k = j + bytes[j..].iter().take_while(|&&b| matches!(b, b' ' | b'#' | b'-')).count();
        if k > j && bytes.get(k).is_some_and(u8::is_ascii_digit) && !after_repository(at) {
            found.push(at);
        }
    }
    // A repository's issue in the paragraph: `owner/repo#N`.
    let names_repository = lower.match_indices('#').any(|(at, _)| {
        let word =
            lower[..at].rsplit(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c))).next().unwrap_or("");
        word.contains('/') && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)
    });
    for (at, _) in lower.match_indices('#') {
        let bare = at == 0 || !(word_char(bytes[at - 1]) || matches!(bytes[at - 1], b'/' | b'&' | b'#' | b'`'));
        let after_issue = lower[..at].trim_end().ends_with("issue") || lower[..at].trim_end().ends_with("issues");
        if bare && !after_issue && bytes.get(at + 1).is_some_and(u8::is_ascii_digit) && !names_repository {
            found.push(at);
        }
    }
    found.sort();
    found
}

#[test]
fn issue_numbers_are_found_in_their_forms() {
    let at = |t: &str| issue_numbers(t);
    assert_eq!(at("see issue 12 and Issue #3, (issue 9), issues 3 and 4"), [4, 17, 28, 38]);
    assert_eq!(at("fixed in #12"), [9]);
    assert!(at("dotnet/runtime#69634, #88924; dotnet/runtime issue 5").is_empty());
    assert!(at("no issue here; tissue 3; `#[cfg]`; x#1; &#38; issues: none").is_empty());
}

/// A paragraph's text with its code spans blanked (a quoted `begin #1` is output, not a
/// reference), and the line each byte is on.
fn prose_of(block: &Block) -> Vec<(usize, String)> {
    let spans = code_spans(block);
    block
        .lines
        .iter()
        .map(|(line, text)| {
            let mut text = text.clone();
            for s in spans.iter().filter(|s| s.line == *line) {
                text = text.replacen(&format!("`{}`", s.text), "``", 1);
            }
            (*line, text)
        })
        .collect()
}

/// No comment, doc or Markdown file points at an issue by its number: a reader of the code cannot
/// follow it. Say what the number stood for instead. HISTORY lists what may.
#[test]
fn no_comment_points_at_an_issue_number() {
    let repo = Repo::get();
    let mut found = Vec::new();
    let mut check = |file: &str, blocks: Vec<Block>| {
        for block in blocks {
            let lines = prose_of(&block);
            let joined: String = lines.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join("\n");
            for at in issue_numbers(&joined) {
                let (line, text) = &block.lines[joined[..at].matches('\n').count()];
                if !is_history(file, text) {
                    found.push(Violation::new(file, *line, format!("points at an issue number: {}", text.trim())));
                }
            }
        }
    };
    for file in repo.files("", ".rs") {
        check(file, comment_blocks(&lex(&repo.read(file)).comments));
    }
    for file in repo.files("", ".md") {
        check(file, markdown_blocks(&repo.read(file)));
    }
    report("A comment or document points at an issue number (say what it stood for instead):", found);
}
