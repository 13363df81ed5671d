//! What a recording holds: values per call stack, in one unit, and for the calls mode the number
//! of calls per stack; and its text form, the file the profiler writes and the command reads.
//!
//! The text form: a first line `corprof-profile <unit>`, then one line per stack,
//! `<value>\t<count>\t<frame>;<frame>;…` (root first). A `;` inside a frame name is written as
//! `,` (the folded format cannot carry it either).

use std::collections::BTreeMap;
use std::fmt;

/// What a profile's values count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// cpu: samples (each `interval` long).
    Samples,
    /// alloc: bytes allocated.
    Bytes,
    /// calls: exclusive time in microseconds.
    Microseconds,
}

impl Unit {
    /// The unit's name in the text form and in the outputs.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Samples => "samples",
            Unit::Bytes => "bytes",
            Unit::Microseconds => "microseconds",
        }
    }

    fn parse(name: &str) -> Option<Unit> {
        [Unit::Samples, Unit::Bytes, Unit::Microseconds].into_iter().find(|u| u.name() == name)
    }
}

/// Values and call counts per stack (frames root first).
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub unit: Unit,
    /// The value of each stack (self value: a parent's total is its own plus its callees').
    pub stacks: BTreeMap<Vec<String>, Entry>,
}

/// One stack's value and, in calls mode, how many calls ended there (0 otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub value: u64,
    pub count: u64,
}

/// A text form that does not parse: the line and what is wrong with it.
#[derive(Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// What follows a native frame's name (`lib!symbol` or `lib`, `corprof record --native`) to
/// keep where in its library the frame was: ` (+0x<ELF virtual address, hex>)`. The raw formats
/// (speedscope, pprof) keep it; the others show the name alone ([`Profile::without_offsets`]).
const OFFSET_OPEN: &str = " (+0x";

/// A native frame as the profile keeps it: `name` and its address in its library.
pub fn native_frame(name: &str, offset: u64) -> String {
    format!("{name}{OFFSET_OPEN}{offset:x})")
}

/// A frame's name without a native frame's offset, and the offset if it has one.
pub fn split_offset(frame: &str) -> (&str, Option<u64>) {
    let Some(at) = frame.rfind(OFFSET_OPEN) else { return (frame, None) };
    let Some(hex) = frame[at + OFFSET_OPEN.len()..].strip_suffix(')') else { return (frame, None) };
    match u64::from_str_radix(hex, 16) {
        Ok(offset) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => (&frame[..at], Some(offset)),
        _ => (frame, None),
    }
}

impl Profile {
    pub fn new(unit: Unit) -> Profile {
        Profile { unit, stacks: BTreeMap::new() }
    }

    /// Adds `value` (and `count` calls) to the stack `frames` (root first).
    pub fn add(&mut self, frames: &[String], value: u64, count: u64) {
        let entry = match self.stacks.get_mut(frames) {
            Some(entry) => entry,
            None => self.stacks.entry(frames.to_vec()).or_default(),
        };
        entry.value = entry.value.saturating_add(value);
        entry.count = entry.count.saturating_add(count);
    }

    /// The sum of every stack's value.
    pub fn total(&self) -> u64 {
        self.stacks.values().fold(0u64, |sum, e| sum.saturating_add(e.value))
    }

    /// The profile with every native frame's offset left out ([`split_offset`]), stacks that
    /// then read the same merged; `None` if no frame has one (the profile is that already).
    pub fn without_offsets(&self) -> Option<Profile> {
        let has = self.stacks.keys().any(|frames| frames.iter().any(|f| split_offset(f).1.is_some()));
        if !has {
            return None;
        }
        let mut out = Profile::new(self.unit);
        for (frames, entry) in &self.stacks {
            let frames: Vec<String> = frames.iter().map(|f| split_offset(f).0.to_string()).collect();
            out.add(&frames, entry.value, entry.count);
        }
        Some(out)
    }

    /// The text form (module docs).
    pub fn to_text(&self) -> String {
        let mut out = format!("corprof-profile {}\n", self.unit.name());
        for (frames, entry) in &self.stacks {
            let frames: Vec<String> = frames.iter().map(|f| f.replace(';', ",")).collect();
            out.push_str(&format!("{}\t{}\t{}\n", entry.value, entry.count, frames.join(";")));
        }
        out
    }

    /// Reads the text form back.
    pub fn from_text(text: &str) -> Result<Profile, ParseError> {
        let mut lines = text.lines().enumerate();
        let err = |line: usize, message: String| ParseError { line: line + 1, message };
        let (_, first) = lines.next().ok_or_else(|| err(0, "empty profile".into()))?;
        let unit = first
            .strip_prefix("corprof-profile ")
            .and_then(Unit::parse)
            .ok_or_else(|| err(0, format!("not a corprof profile: {first:?}")))?;
        let mut profile = Profile::new(unit);
        for (n, line) in lines {
            if line.is_empty() {
                continue;
            }
            let mut fields = line.splitn(3, '\t');
            let mut number = |what: &str| -> Result<u64, ParseError> {
                let field = fields.next().ok_or_else(|| err(n, format!("no {what}")))?;
                field.parse().map_err(|_| err(n, format!("{what} {field:?} is not a number")))
            };
            let value = number("value")?;
            let count = number("count")?;
            let frames: Vec<String> = match fields.next() {
                Some(stack) if !stack.is_empty() => stack.split(';').map(str::to_string).collect(),
                _ => return Err(err(n, "no frames".into())),
            };
            profile.add(&frames, value, count);
        }
        Ok(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(s: &str) -> Vec<String> {
        s.split(';').map(str::to_string).collect()
    }

    #[test]
    fn a_native_frames_offset_is_kept_apart_from_its_name() {
        let frame = native_frame("libcoreclr.so!WKS::gc_heap::mark_phase", 0x4f21a0);
        assert_eq!(frame, "libcoreclr.so!WKS::gc_heap::mark_phase (+0x4f21a0)");
        assert_eq!(split_offset(&frame), ("libcoreclr.so!WKS::gc_heap::mark_phase", Some(0x4f21a0)));
        for plain in ["App::Main", "[native]", "x (+0x)", "x (+0xzz)", "x (+0x12", "f(+0x1)"] {
            assert_eq!(split_offset(plain), (plain, None), "{plain}");
        }
        let mut p = Profile::new(Unit::Samples);
        p.add(&frames("[thread 1];App::Main;libc.so.6 (+0x10)"), 2, 0);
        p.add(&frames("[thread 1];App::Main;libc.so.6 (+0x20)"), 3, 0);
        let merged = p.without_offsets().unwrap();
        assert_eq!(merged.stacks.len(), 1);
        assert_eq!(merged.stacks[&frames("[thread 1];App::Main;libc.so.6")].value, 5);
        assert_eq!(merged.without_offsets(), None);
    }

    #[test]
    fn the_text_form_reads_back_what_was_written() {
        let mut p = Profile::new(Unit::Microseconds);
        p.add(&frames("[thread Main];App::Main;App::Work"), 7, 2);
        p.add(&frames("[thread Main];App::Main;App::Work"), 3, 1);
        p.add(&frames("[thread Main];System.Collections.Generic.Dictionary<string, int>::Add"), 5, 1);
        p.add(&["A;B".to_string()], 1, 0);
        let back = Profile::from_text(&p.to_text()).unwrap();
        assert_eq!(back.unit, Unit::Microseconds);
        assert_eq!(back.stacks[&frames("[thread Main];App::Main;App::Work")], Entry { value: 10, count: 3 });
        assert_eq!(back.stacks[&vec!["A,B".to_string()]], Entry { value: 1, count: 0 });
        assert_eq!(back.total(), 16);
    }

    #[test]
    fn bad_text_is_refused_with_its_line() {
        assert_eq!(Profile::from_text("").unwrap_err().line, 1);
        assert_eq!(Profile::from_text("corprof-profile furlongs\n").unwrap_err().line, 1);
        let e = Profile::from_text("corprof-profile bytes\n12\tx\tA;B\n").unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (2, "count \"x\" is not a number"));
        assert_eq!(Profile::from_text("corprof-profile bytes\n1\t0\t\n").unwrap_err().line, 2);
    }
}
