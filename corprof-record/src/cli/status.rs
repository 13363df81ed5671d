//! The live line on a terminal while the command waits: `corprof: recording cpu · 12.3 s ·
//! 1,234 samples · 0 dropped`, drawn again in place (`\r` and erase to the end of the line) a
//! few times a second, and erased before the command prints anything else.
//!
//! Only when stderr is a terminal: the command then asks the profiler for its counts
//! ([`settings::PROGRESS`]), which it keeps in `<OUT>.progress`. The line first shows with that
//! file, so the lines the runtime and the profiler print as they start come before it rather than
//! on it; the time is the command's own, from its start.

use corprof_record::{files, settings};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often the line is drawn again.
const DRAW_EVERY: Duration = Duration::from_millis(250);
/// The terminal's width when it does not say.
const DEFAULT_COLUMNS: usize = 80;
/// The most counts shown, and the longest name of one.
const MAX_COUNTS: usize = 4;
const MAX_COUNT_NAME: usize = 24;
/// Erases the line the cursor is on: back to its start, then clear to its end.
const ERASE: &str = "\r\x1b[K";

/// Whether the command shows the line: stderr is a terminal that can erase a line.
pub fn wanted() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("TERM").is_none_or(|term| term != "dumb")
}

/// The live line, or nothing (not a terminal).
pub struct Status(Option<Line>);

struct Line {
    /// `<OUT>.progress`.
    file: PathBuf,
    /// The mode, and the process when attached: `cpu`, `alloc in process 4242`.
    what: String,
    started: Instant,
    /// How long the recording lasts, if the command was told.
    duration: Option<Duration>,
    /// When the line was last drawn (or the file looked for).
    drawn: Option<Instant>,
    /// A line is on the terminal now (erase before anything else is printed).
    shown: bool,
    /// Drawn no more (the recording is being written, or was).
    ended: bool,
}

impl Status {
    /// The line for a recording of `what` that began at `started`, if `live`.
    pub fn new(live: bool, file: PathBuf, what: String, started: Instant, duration: Option<Duration>) -> Status {
        Status(live.then_some(Line { file, what, started, duration, drawn: None, shown: false, ended: false }))
    }

    /// Draws the line again if it is time, once the profiler has given its counts.
    pub fn tick(&mut self) {
        let Some(line) = &mut self.0 else { return };
        if line.ended || line.drawn.is_some_and(|at| at.elapsed() < DRAW_EVERY) {
            return;
        }
        // Looked for at the same pace, drawn or not.
        line.drawn = Some(Instant::now());
        let Ok(Some(bytes)) = files::read_regular(&line.file, settings::MAX_PROGRESS_BYTES) else { return };
        let counts = counts(&String::from_utf8_lossy(&bytes));
        let text = text(&line.what, line.started.elapsed(), line.duration, &counts);
        let text: String = text.chars().take(columns().saturating_sub(1).max(1)).collect();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{ERASE}{text}");
        let _ = err.flush();
        line.shown = true;
    }

    /// Erases the line, if it is shown (before the command prints a line of its own).
    pub fn clear(&mut self) {
        if let Some(line) = &mut self.0
            && std::mem::take(&mut line.shown)
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{ERASE}");
            let _ = err.flush();
        }
    }

    /// Erases the line for good: what follows is the recording's output.
    pub fn end(&mut self) {
        self.clear();
        if let Some(line) = &mut self.0 {
            line.ended = true;
        }
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The counts of a `.progress` file: its `<number> <words>` lines (others skipped), at most
/// [`MAX_COUNTS`], each name plain lowercase words (nothing that could move the cursor).
fn counts(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter_map(|line| {
            let (n, what) = line.split_once(' ')?;
            let plain = !what.is_empty()
                && what.len() <= MAX_COUNT_NAME
                && what.bytes().all(|b| b.is_ascii_alphabetic() || b == b' ');
            Some((n.parse().ok()?, what.to_string())).filter(|_| plain)
        })
        .take(MAX_COUNTS)
        .collect()
}

/// The line: `corprof: recording <what> · <elapsed>[ of <duration>] · <counts>…`.
fn text(what: &str, elapsed: Duration, duration: Option<Duration>, counts: &[(u64, String)]) -> String {
    let mut text = format!("corprof: recording {what} · {:.1} s", elapsed.as_secs_f64());
    if let Some(duration) = duration {
        text += &format!(" of {} s", seconds(duration));
    }
    for (n, name) in counts {
        text += &format!(" · {} {name}", thousands(*n));
    }
    text
}

/// `2`, `2.5`, `0.001`: the seconds as given, without trailing zeros.
fn seconds(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The terminal's width in columns (stderr's), or [`DEFAULT_COLUMNS`].
fn columns() -> usize {
    // SAFETY: a zeroed winsize is a valid out-parameter; TIOCGWINSZ only writes it, and fails
    // (leaving it zero) when stderr is not a terminal.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: as above: `size` is valid and writable for the call.
    let rc = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) };
    if rc == 0 && size.ws_col > 0 { usize::from(size.ws_col) } else { DEFAULT_COLUMNS }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_the_mode_the_time_and_the_counts() {
        let counts = counts("1234 samples\n0 dropped\n");
        assert_eq!(
            text("cpu", Duration::from_millis(12_345), None, &counts),
            "corprof: recording cpu · 12.3 s · 1,234 samples · 0 dropped"
        );
        assert_eq!(
            text("alloc in process 7", Duration::from_millis(500), Some(Duration::from_millis(2500)), &[]),
            "corprof: recording alloc in process 7 · 0.5 s of 2.5 s"
        );
        assert_eq!(seconds(Duration::from_secs(30)), "30");
        assert_eq!(
            (thousands(0), thousands(999), thousands(1000), thousands(1_234_567)),
            ("0".to_string(), "999".to_string(), "1,000".to_string(), "1,234,567".to_string())
        );
    }

    #[test]
    fn only_plain_counts_are_shown() {
        let text = "12 calls\n\u{1b}[2J 3\n4 \u{1b}[31mred\nx samples\n5 \n6 a very long name of a count indeed\n7 GCs";
        assert_eq!(counts(text), [(12, "calls".to_string()), (7, "GCs".to_string())]);
        assert_eq!(counts(&"1 a\n".repeat(10)).len(), MAX_COUNTS);
    }
}
