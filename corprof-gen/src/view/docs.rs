//! A method's docs-table entry as rustdoc lines: the `doc` text, then **Needs**, **Errors** and
//! **Returns** paragraphs, wrapped to fit beside the generated code's indentation. Text outside
//! backticks has the characters rustdoc would read as HTML, links or emphasis escaped, so a
//! table entry can never break `cargo doc`.

use crate::annotations::docs::MethodDocs;

/// The width of a doc line's text.
pub(super) const WIDTH: usize = 92;

/// The lines, empty ones separating paragraphs (nothing without an entry).
pub fn doc_lines(docs: Option<&MethodDocs>) -> Vec<String> {
    let Some(d) = docs else { return Vec::new() };
    let mut lines = Vec::new();
    let paragraph = |title: &str, text: &str, lines: &mut Vec<String>| {
        lines.push(String::new());
        lines.extend(wrap(&format!("{title}{}", escape(text)), WIDTH));
    };
    paragraph("", &d.doc, &mut lines);
    if let Some(needs) = &d.needs {
        paragraph("**Needs:** ", needs, &mut lines);
    }
    if !d.errors.is_empty() {
        lines.push(String::new());
        lines.push("**Errors:**".to_string());
        for (name, when) in &d.errors {
            let mut item = wrap(&format!("- `{name}`: {}", escape(when)), WIDTH);
            for continued in item.iter_mut().skip(1) {
                continued.insert_str(0, "  ");
            }
            lines.extend(item);
        }
    }
    if let Some(returns) = &d.returns {
        paragraph("**Returns:** ", returns, &mut lines);
    }
    lines
}

/// `text` with `<`, `>`, `[`, `]` and `*` escaped outside code spans (`` `…` ``).
/// One more paragraph after a method's docs (the reason a callback's object is lent), escaped and
/// wrapped as theirs are.
pub fn push_paragraph(lines: &mut Vec<String>, text: &str) {
    lines.push(String::new());
    lines.extend(wrap(&escape(text), WIDTH));
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '<' | '>' | '[' | ']' | '*' if !in_code => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Greedy word wrap; a word longer than the width stays whole on its own line.
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_becomes_paragraphs() {
        let d = MethodDocs {
            doc: "Gives `List<int>` sizes [in bytes] <unaligned> *always*.".to_string(),
            needs: Some("COR_PRF_MONITOR_GC.".to_string()),
            errors: vec![("E_INVALIDARG".to_string(), "null <object>.".to_string())],
            returns: Some("Round up.".to_string()),
            ..MethodDocs::default()
        };
        assert_eq!(
            doc_lines(Some(&d)),
            vec![
                "",
                "Gives `List<int>` sizes \\[in bytes\\] \\<unaligned\\> \\*always\\*.",
                "",
                "**Needs:** COR_PRF_MONITOR_GC.",
                "",
                "**Errors:**",
                "- `E_INVALIDARG`: null \\<object\\>.",
                "",
                "**Returns:** Round up.",
            ]
        );
        assert!(doc_lines(None).is_empty());
    }

    #[test]
    fn long_text_wraps_and_items_continue_indented() {
        let long = "word ".repeat(40);
        let d = MethodDocs { doc: long.clone(), errors: vec![("E_FAIL".to_string(), long)], ..MethodDocs::default() };
        let lines = doc_lines(Some(&d));
        assert!(lines.iter().all(|l| l.len() <= WIDTH + 2), "{lines:#?}");
        let item_start = lines.iter().position(|l| l.starts_with("- `E_FAIL`")).unwrap();
        assert!(lines[item_start + 1].starts_with("  word"), "{lines:#?}");
    }
}
