//! Diagnostics in rustc's style, collected so that every problem is reported at once (like cxx's
//! `Errors`, propagated once at the end): `error: …`, `  --> file:line:col`, `  = note: …`.

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
    /// One of a kind of warning the build prints as a single line with their number (each is
    /// for `corprof-gen check`): a build output stays readable.
    pub folded: Option<Fold>,
}

/// The kinds of warning a build folds (`Diagnostic::folded`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// A `[size_is]` count that no corprof.idl states (`resolve::unconfirmed`).
    UnconfirmedCounts,
}

impl Fold {
    /// What the build says after their number.
    pub(crate) fn summary(self) -> &'static str {
        match self {
            Fold::UnconfirmedCounts => {
                "`len`/`cap` count(s) of `[size_is]` parameters unconfirmed: no corprof.idl in the header folders \
                 states them (`corprof-gen check` lists each; a folder holding one, such as runtime-main, after the \
                 header's in CORPROF_INCLUDE_DIR confirms those it declares)"
            }
        }
    }
}

impl Diagnostic {
    pub(crate) fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            level: Level::Error,
            message: bound_quotes(message.into()),
            at: None,
            notes: Vec::new(),
            help: None,
            folded: None,
        }
    }

    pub(crate) fn warning(message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Warning, ..Diagnostic::error(message) }
    }

    pub(crate) fn info(message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Note, ..Diagnostic::error(message) }
    }

    pub(crate) fn at(mut self, loc: Loc) -> Self {
        self.at = Some(loc);
        self
    }

    pub(crate) fn at_opt(mut self, loc: Option<Loc>) -> Self {
        self.at = loc;
        self
    }

    pub(crate) fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// `note: declared at corprof.h:1234`
    pub(crate) fn declared_at(self, loc: &Loc) -> Self {
        self.note(format!("declared at {}:{}", loc.file, loc.line))
    }

    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(bound_quotes(help.into()));
        self
    }

    /// Marks a warning the build folds with the others of its kind into one line ([`Self::folded`]).
    pub(crate) fn folded(mut self, kind: Fold) -> Self {
        self.folded = Some(kind);
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
    pub(crate) fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// `Err(self)` when any error was collected; warnings alone pass.
    pub(crate) fn check(&mut self) -> Result<(), Errors> {
        if self.has_errors() { Err(std::mem::take(self)) } else { Ok(()) }
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| !d.is_error())
    }

    pub(crate) fn extend(&mut self, other: Errors) {
        self.items.extend(other.items);
    }

    /// The diagnostics without the warnings of a folded kind (`Diagnostic::folded`), and how
    /// many of each kind there were: what a build (and `expand`) prints.
    pub(crate) fn fold(self) -> (Errors, Vec<(Fold, usize)>) {
        let mut folded: Vec<(Fold, usize)> = Vec::new();
        let mut kept = Errors::default();
        for d in self.items {
            match d.folded.filter(|_| d.level == Level::Warning) {
                None => kept.push(d),
                Some(kind) => match folded.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, n)) => *n += 1,
                    None => folded.push((kind, 1)),
                },
            }
        }
        (kept, folded)
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
pub(crate) fn both<A, B>(a: Result<A, Errors>, b: Result<B, Errors>) -> Result<(A, B), Errors> {
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

/// How many characters of a quoted value (between backticks or double quotes) a message shows.
pub(crate) const QUOTE_LIMIT: usize = 200;

/// Cuts every quoted span of `text` longer than [`QUOTE_LIMIT`] characters to that many and an
/// ellipsis: a 10 MB bad value must not become a 10 MB message.
fn bound_quotes(text: String) -> String {
    if text.len() <= QUOTE_LIMIT {
        return text;
    }
    let mut out = String::with_capacity(text.len().min(4 * QUOTE_LIMIT));
    let (mut open, mut run) = (None, 0);
    for c in text.chars() {
        match open {
            Some(q) if c == q => open = None,
            Some(_) => {
                run += 1;
                if run > QUOTE_LIMIT {
                    if run == QUOTE_LIMIT + 1 {
                        out.push('…');
                    }
                    continue;
                }
            }
            None if c == '`' || c == '"' => (open, run) = (Some(c), 0),
            None => {}
        }
        out.push(c);
    }
    out
}

/// The closest candidate by edit distance, if it is close enough to be a likely typo (the first
/// of equally close ones). Every unknown name is compared with every candidate, thousands of
/// times on a big annotation set, so candidates that cannot be close are ruled out by length
/// and letter counts first, and the edit distance stops once it must exceed the bound.
pub(crate) fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let name: Vec<char> = name.chars().map(|c| c.to_ascii_lowercase()).collect();
    let counts = letter_counts(&name);
    let mut best: Option<(usize, &str)> = None;
    let mut candidate = Vec::new();
    let mut rows = (Vec::new(), Vec::new());
    for c in candidates {
        let mut limit = (c.len().max(3) / 3).max(2);
        if let Some((d, _)) = best {
            // Only a strictly closer candidate replaces the best one.
            match d.checked_sub(1) {
                Some(closer) => limit = limit.min(closer),
                None => break,
            }
        }
        let ascii = c.is_ascii();
        let len = if ascii { c.len() } else { c.chars().count() };
        if name.len().abs_diff(len) > limit || letter_distance(&counts, c, ascii) > limit {
            continue;
        }
        candidate.clear();
        candidate.extend(c.chars().map(|c| c.to_ascii_lowercase()));
        if let Some(d) = edit_distance(&name, &candidate, limit, &mut rows) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Occurrences of each character, folded into 64 buckets (folding keeps it a lower bound).
fn letter_counts(s: &[char]) -> [i32; 64] {
    let mut counts = [0; 64];
    for &c in s {
        counts[c as usize % 64] += 1;
    }
    counts
}

/// A lower bound of the edit distance: each edit adds, removes or changes one character.
fn letter_distance(a: &[i32; 64], b: &str, ascii: bool) -> usize {
    let mut diff = *a;
    if ascii {
        for &c in b.as_bytes() {
            diff[c.to_ascii_lowercase() as usize % 64] -= 1;
        }
    } else {
        for c in b.chars() {
            diff[c.to_ascii_lowercase() as usize % 64] -= 1;
        }
    }
    let (mut more, mut fewer) = (0, 0);
    for d in &diff {
        if *d > 0 {
            more += d;
        } else {
            fewer -= d;
        }
    }
    more.max(fewer) as usize
}

/// Levenshtein distance, or `None` once it must exceed `limit`. Only cells within `limit` of
/// the diagonal can stay within it, so only those are computed.
fn edit_distance(a: &[char], b: &[char], limit: usize, rows: &mut (Vec<usize>, Vec<usize>)) -> Option<usize> {
    const FAR: usize = usize::MAX / 2;
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let (prev, cur) = rows;
    prev.clear();
    prev.extend(0..=b.len());
    cur.clear();
    cur.resize(b.len() + 1, FAR);
    for (i, ca) in a.iter().enumerate() {
        let (from, to) = ((i + 1).saturating_sub(limit), (i + 1 + limit).min(b.len()));
        cur[0] = if from == 0 { i + 1 } else { FAR };
        if from > 1 {
            cur[from - 1] = FAR;
        }
        let mut row_min = cur[0];
        for j in from.max(1)..=to {
            let mut d = prev[j - 1] + usize::from(*ca != b[j - 1]);
            if prev[j] + 1 < d {
                d = prev[j] + 1;
            }
            if cur[j - 1] + 1 < d {
                d = cur[j - 1] + 1;
            }
            cur[j] = d;
            if d < row_min {
                row_min = d;
            }
        }
        if to < b.len() {
            cur[to + 1] = FAR;
        }
        if row_min > limit {
            return None;
        }
        std::mem::swap(prev, cur);
    }
    Some(prev[b.len()]).filter(|&d| d <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_warnings_are_counted_and_the_rest_kept() {
        let mut errors = Errors::default();
        let alike = Fold::UnconfirmedCounts;
        errors.push(Diagnostic::warning("one").folded(alike));
        errors.push(Diagnostic::warning("whole"));
        errors.push(Diagnostic::warning("two").folded(alike));
        // Only warnings fold: an error or a note marked so is kept whole.
        errors.push(Diagnostic::error("bad").folded(alike));
        errors.push(Diagnostic::info("said").folded(alike));
        let (kept, folded) = errors.fold();
        let kept: Vec<&str> = kept.items.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(kept, ["whole", "bad", "said"]);
        assert_eq!(folded, [(alike, 2)]);
    }

    #[test]
    fn suggests_close_names_only() {
        let names = ["JITCompilationStarted", "JITCompilationFinished", "Shutdown"];
        assert_eq!(suggest("JitCompilationStarted", names), Some("JITCompilationStarted"));
        assert_eq!(suggest("JITCompilationStartd", names), Some("JITCompilationStarted"));
        assert_eq!(suggest("Initialize", names), None);
        // The first of equally close candidates wins; an exact match stops the search.
        assert_eq!(suggest("ab", ["ax", "ay"]), Some("ax"));
        assert_eq!(suggest("shutdown", ["Shutdown", "Shutdowns"]), Some("Shutdown"));
        assert_eq!(suggest(&"x".repeat(1_000_000), names), None);
    }

    #[test]
    fn the_bounded_edit_distance_is_the_edit_distance_within_the_bound() {
        fn full(a: &[char], b: &[char]) -> usize {
            let mut prev: Vec<usize> = (0..=b.len()).collect();
            for (i, ca) in a.iter().enumerate() {
                let mut cur = vec![i + 1; b.len() + 1];
                for (j, cb) in b.iter().enumerate() {
                    cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
                }
                prev = cur;
            }
            prev[b.len()]
        }
        let words = [
            "",
            "a",
            "ab",
            "ba",
            "abc",
            "kitten",
            "sitting",
            "flaw",
            "lawn",
            "pbDone",
            "pbDoen",
            "ICorProfilerInfo",
            "ICorProfilerInfo12",
            "ICorProfilerCallbak3",
            "ICorProfilerCallback",
        ];
        let mut rows = (Vec::new(), Vec::new());
        for a in words {
            for b in words {
                let lower = |s: &str| s.to_ascii_lowercase().chars().collect::<Vec<char>>();
                let (a, b) = (lower(a), lower(b));
                let d = full(&a, &b);
                for limit in 0..8 {
                    assert_eq!(
                        edit_distance(&a, &b, limit, &mut rows),
                        Some(d).filter(|&d| d <= limit),
                        "{a:?} {b:?} {limit}"
                    );
                    let s: String = b.iter().collect();
                    assert!(letter_distance(&letter_counts(&a), &s, s.is_ascii()) <= d);
                }
            }
        }
    }

    #[test]
    fn quoted_values_are_cut_to_the_limit() {
        let long = "y".repeat(10_000_000);
        let d = Diagnostic::error(format!("expected a direction, found `{long}` in \"{long}\""));
        let shown = format!("`{}…`", "y".repeat(QUOTE_LIMIT));
        assert_eq!(d.message, format!("expected a direction, found {shown} in {}", shown.replace('`', "\"")));
        let d = Diagnostic::error("x").help(format!("did you mean `{long}"));
        assert_eq!(d.help.unwrap(), format!("did you mean `{}…", "y".repeat(QUOTE_LIMIT)));
        // Text outside quotes (paths, say) is never cut.
        let path = "/p".repeat(300);
        assert_eq!(Diagnostic::error(format!("cannot read {path}")).message, format!("cannot read {path}"));
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
