//! Diagnostics in rustc's style, collected so that every problem is reported at once
//! (like cxx's `Errors::propagate()`): `error: …`, `  --> file:line:col`, `  = note: …`.

use crate::ir::Loc;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    /// Informational: shown by `corprof-gen check`, not by the build.
    Note,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub level: Level,
    pub message: String,
    /// Where the problem is (usually an annotation file).
    pub at: Option<Loc>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Error, message: message.into(), at: None, notes: Vec::new(), help: None }
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Warning, ..Diagnostic::error(message) }
    }

    pub fn info(message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Note, ..Diagnostic::error(message) }
    }

    pub fn at(mut self, loc: Loc) -> Self {
        self.at = Some(loc);
        self
    }

    pub fn at_opt(mut self, loc: Option<Loc>) -> Self {
        self.at = loc;
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// `note: declared at corprof.h:1234`
    pub fn declared_at(self, loc: &Loc) -> Self {
        self.note(format!("declared at {}:{}", loc.file, loc.line))
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.level == Level::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        };
        write!(f, "{level}: {}", self.message)?;
        if let Some(at) = &self.at {
            write!(f, "\n  --> {at}")?;
        }
        for note in &self.notes {
            write!(f, "\n  = note: {note}")?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

/// A batch of diagnostics; errors make the batch fail, warnings ride along.
#[derive(Clone, Debug, Default)]
pub struct Errors {
    pub items: Vec<Diagnostic>,
}

impl Errors {
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// `Err(self)` when any error was collected; warnings alone pass.
    pub fn check(&mut self) -> Result<(), Errors> {
        if self.has_errors() { Err(std::mem::take(self)) } else { Ok(()) }
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| !d.is_error())
    }

    pub fn extend(&mut self, other: Errors) {
        self.items.extend(other.items);
    }
}

impl From<Diagnostic> for Errors {
    fn from(d: Diagnostic) -> Self {
        Errors { items: vec![d] }
    }
}

impl fmt::Display for Errors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.items.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        let n = self.items.iter().filter(|d| d.is_error()).count();
        if n > 0 {
            write!(f, "\n\nerror: aborting due to {n} previous error{}", if n == 1 { "" } else { "s" })?;
        }
        Ok(())
    }
}

impl std::error::Error for Errors {}

/// Both results, or the errors of either or both: stages that can fail independently report
/// together instead of stopping at the first.
pub fn both<A, B>(a: Result<A, Errors>, b: Result<B, Errors>) -> Result<(A, B), Errors> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (a, b) => {
            let mut errors = Errors::default();
            for e in [a.err(), b.err()].into_iter().flatten() {
                errors.extend(e);
            }
            Err(errors)
        }
    }
}

/// The closest candidate by edit distance, if it is close enough to be a likely typo.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len().max(3) / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names = ["JITCompilationStarted", "JITCompilationFinished", "Shutdown"];
        assert_eq!(suggest("JitCompilationStarted", names), Some("JITCompilationStarted"));
        assert_eq!(suggest("JITCompilationStartd", names), Some("JITCompilationStarted"));
        assert_eq!(suggest("Initialize", names), None);
    }

    #[test]
    fn renders_in_rustc_style() {
        let d = Diagnostic::error("unknown method `Foo`")
            .at(Loc { file: "annotations/callbacks.yaml".into(), line: 42, col: 7 })
            .declared_at(&Loc { file: "corprof.h".into(), line: 1234, col: 5 })
            .help("did you mean `Bar`?");
        assert_eq!(
            d.to_string(),
            "error: unknown method `Foo`\n  --> annotations/callbacks.yaml:42:7\n  = note: declared at corprof.h:1234\n  = help: did you mean `Bar`?"
        );
    }
}
