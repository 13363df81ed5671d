//! The live status line of `corprof record` on a terminal, end to end on CoreCLR 8.0.4 and
//! 3.1.23: run under a pseudo-terminal (util-linux `script`), the command draws
//! `corprof: recording <mode> · <seconds> s · <counts>` in place, with counts that grow while
//! the app runs, and erases it before its own lines, which then start on a clean line; with
//! stderr not a terminal it writes no carriage return and no escape sequence.
//!
//! The app is tests/apps/RecordRun (it runs until stopped, spinning in `Work::Spin` and
//! allocating in `Work::Allocate`); each run is stopped by a SIGINT to the command once two
//! different counts have shown. Every wait is for output of the command or the app.
//!
//! Needs `script` (util-linux), the profiler library next to the command
//! (`cargo build -p corprof-record-profiler`) and the apps and runtimes of `bash scripts/setup`.

mod support;
use support::{TempDir, clean, dotnet};

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longer than any run here takes: past it the test fails (it never waits this long on success).
const TIMEOUT: Duration = Duration::from_secs(120);
/// What the command writes to draw the line, and alone to erase it.
const ERASE: &str = "\r\x1b[K";

fn app_dll() -> PathBuf {
    support::app("RecordRun")
}

fn corprof() -> PathBuf {
    support::corprof_exe()
}

fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A process whose output is gathered as it comes (by a thread, so the pipe never fills).
struct Gathered {
    child: Child,
    /// Kept open: `script` ends the terminal's input at the end of its own.
    stdin: Option<ChildStdin>,
    out: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Gathered {
    fn start(mut cmd: Command, from: fn(&mut Child) -> Box<dyn Read + Send>) -> Gathered {
        let mut child = cmd.spawn().expect("cannot start");
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut pipe = from(&mut child);
        let sink = Arc::clone(&out);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Gathered { stdin: child.stdin.take(), child, out, reader: Some(reader) }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    /// Waits until `done` holds of the output so far; the output then.
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let text = self.text();
            if done(&text) {
                return text;
            }
            assert!(started.elapsed() < TIMEOUT, "no {what} in {TIMEOUT:?}: {text:?}");
            // Looked at once more after the end: the last output may have come with it.
            if self.out.lock().unwrap().len() == text.len() && self.ended() {
                panic!("ended before any {what}: {text:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the process ended, and its output is all in.
    fn ended(&self) -> bool {
        self.reader.as_ref().is_none_or(|r| r.is_finished())
    }

    /// Waits for the process to end; all its output.
    fn finish(mut self) -> String {
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if started.elapsed() > TIMEOUT {
                let _ = self.child.kill();
                panic!("did not end in {TIMEOUT:?}: {:?}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        self.text()
    }
}

impl Drop for Gathered {
    /// A test that failed midway leaves no process behind: `script` killed, its terminal's
    /// processes get SIGHUP.
    fn drop(&mut self) {
        if self.child.try_wait().is_ok_and(|s| s.is_none()) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn sigint(pid: i32) {
    // SAFETY: kill only sends a signal, to a process of this test's own that has not been
    // waited for yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
}

/// `corprof <args>` under a pseudo-terminal `columns` wide: `script` runs it in a shell that
/// prints its pid first (the command's, after `exec`); the app's stdout goes to /dev/null, so the
/// terminal shows the command's stderr alone.
fn under_terminal(columns: u32, args: &[&str]) -> Gathered {
    under_terminal_named("xterm", columns, args)
}

/// [`under_terminal`] with `TERM` set to `term`.
fn under_terminal_named(term: &str, columns: u32, args: &[&str]) -> Gathered {
    let words: Vec<String> = std::iter::once(corprof().to_str().unwrap().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|w| quote(&w))
        .collect();
    let line = format!("stty cols {columns} rows 24; echo corprof-pid $$; exec {} >/dev/null", words.join(" "));
    let mut cmd = Command::new("script");
    clean(&mut cmd);
    cmd.args(["-qec", &line, "/dev/null"])
        .env("TERM", term)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    Gathered::start(cmd, |c| Box::new(c.stdout.take().unwrap()))
}

/// One drawn line: `corprof: recording <what> · <seconds> s[ of <seconds> s] · <n> <name>…`;
/// `None` if `piece` is anything else.
fn status_line(piece: &str, what: &str) -> Option<(f64, Vec<(u64, String)>)> {
    let rest = piece.strip_prefix(&format!("corprof: recording {what} · "))?;
    let mut parts = rest.split(" · ");
    let time = parts.next()?;
    let seconds: f64 = time.split(" s").next()?.parse().ok()?;
    let counts = parts
        .map(|p| {
            let (n, name) = p.split_once(' ')?;
            Some((n.replace(',', "").parse().ok()?, name.to_string()))
        })
        .collect::<Option<Vec<_>>>()?;
    (!counts.is_empty() && counts.iter().all(|(_, n)| n.bytes().all(|b| b.is_ascii_alphabetic() || b == b' ')))
        .then_some((seconds, counts))
}

/// The first count of every line drawn so far in `output`.
fn first_counts(output: &str, what: &str) -> Vec<u64> {
    output.split(ERASE).filter_map(|p| status_line(p, what)).map(|(_, counts)| counts[0].0).collect()
}

/// Whether two different counts have shown.
fn grew(output: &str, what: &str) -> bool {
    let counts = first_counts(output, what);
    counts.iter().any(|&n| n != counts[0])
}

/// Checks a terminal's output: the lines drawn, each alone between two erasures, for `what`
/// with a first count named `count` that only grows and did grow, and the time that goes on;
/// the command's own lines (the SIGINT's, the end's) each after an erasure, from a clean line;
/// no line drawn after the output is written.
fn check_terminal_output(output: &str, what: &str, count: &str, rest: &[&str]) {
    let pieces: Vec<&str> = output.split(ERASE).collect();
    let drawn: Vec<usize> =
        (0..pieces.len()).filter(|&i| pieces[i].starts_with(&format!("corprof: recording {what} "))).collect();
    assert!(drawn.len() >= 2, "fewer than two lines drawn: {output:?}");
    let mut last = (0.0, 0);
    for &i in &drawn {
        let (seconds, counts) =
            status_line(pieces[i], what).unwrap_or_else(|| panic!("not a line alone: {:?} in {output:?}", pieces[i]));
        assert_eq!(counts[0].1, count, "{:?}", pieces[i]);
        let names: Vec<&str> = counts[1..].iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, rest, "{:?}", pieces[i]);
        assert!(seconds >= last.0 && counts[0].0 >= last.1, "went back: {:?} after {last:?}", pieces[i]);
        last = (seconds, counts[0].0);
    }
    assert!(grew(output, what), "the count did not grow: {output:?}");
    // Between and after the lines: only the command's own, each from a clean line (the line
    // erased before it).
    for piece in &pieces[drawn[0]..] {
        assert!(piece.starts_with("corprof: "), "not from a clean line: {piece:?} in {output:?}");
    }
    let after = pieces[*drawn.last().unwrap() + 1..].join(ERASE);
    assert!(after.contains("corprof: wrote "), "{after:?}");
    assert!(!after.contains("corprof: recording"), "a line drawn after the end: {after:?}");
}

/// The command's pid, from the shell's first line.
fn command_pid(run: &Gathered) -> i32 {
    let text = run.wait_for("pid line", |t| t.contains("corprof-pid ") && t.contains("\r\n"));
    let line = text.split("corprof-pid ").nth(1).unwrap();
    line.split("\r\n").next().unwrap().trim().parse().unwrap()
}

/// How a run is ended once its count has grown.
#[derive(Clone, Copy, PartialEq)]
enum End {
    /// A SIGINT to the command: it says so, and stops the recording.
    Signal,
    /// A line on the terminal, which ends RecordRun: the command sees the app end.
    Input,
}

/// Launches RecordRun under a terminal with `options`, ends it once the count has grown, and
/// checks the output; gives it, for more checks.
fn launch(runtime: &str, test: &str, options: &[&str], end: End, what: &str, count: &str, rest: &[&str]) -> String {
    let dir = TempDir::new(test);
    let out = dir.0.join("out");
    let (dotnet, dll) = (dotnet(runtime), app_dll());
    let mut args = vec!["record", "-o", out.to_str().unwrap()];
    args.extend(options);
    args.extend(["--", dotnet.to_str().unwrap(), dll.to_str().unwrap()]);
    let mut run = under_terminal(200, &args);
    let pid = command_pid(&run);
    run.wait_for("growing count", |t| grew(t, what));
    match end {
        End::Signal => sigint(pid),
        // The app reads it with the terminal's echo off (.NET's console echoes it to the app's
        // stdout, here /dev/null).
        End::Input => writeln!(run.stdin.as_mut().unwrap(), "end").unwrap(),
    }
    let output = run.finish();
    check_terminal_output(&output, what, count, rest);
    assert_eq!(output.contains("corprof: SIGINT: stopping the recording"), end == End::Signal, "{output:?}");
    assert!(out.is_file(), "no output: {output:?}");
    output
}

/// cpu: the last count shown is some of the samples the output holds (its total, which the
/// command says: `corprof: wrote … (N samples)`), never more.
fn check_samples_within_the_total(output: &str) {
    let last = *first_counts(output, "cpu").last().unwrap();
    let wrote = output.split("corprof: wrote ").nth(1).unwrap_or_else(|| panic!("{output:?}"));
    let total: u64 = wrote.split(" (").nth(1).and_then(|t| t.split(' ').next()?.parse().ok()).unwrap();
    assert!(last > 0 && last <= total, "{last} shown, {total} written: {output:?}");
}

#[test]
fn the_line_counts_samples_of_the_suspension_sampler_8() {
    let output = launch(
        "8",
        "suspend8",
        &["--sampler", "suspend", "--format", "folded"],
        End::Input,
        "cpu",
        "samples",
        &["dropped"],
    );
    check_samples_within_the_total(&output);
}

#[test]
fn the_line_counts_samples_of_the_signal_sampler_8() {
    let options = ["--sampler", "signal", "--format", "folded"];
    let output = launch("8", "signal8", &options, End::Signal, "cpu", "samples", &["dropped"]);
    check_samples_within_the_total(&output);
}

#[test]
fn the_line_counts_samples_3() {
    let output = launch("3", "cpu3", &["--format", "folded"], End::Input, "cpu", "samples", &["dropped"]);
    check_samples_within_the_total(&output);
}

#[test]
fn the_line_counts_allocation_samples_8() {
    launch("8", "alloc8", &["--mode", "alloc", "--format", "folded"], End::Input, "alloc", "samples", &[]);
}

/// `--alloc exact`: every allocation recorded, counted as such.
#[test]
fn the_line_counts_exact_allocations_8() {
    let options = ["--mode", "alloc", "--alloc", "exact", "--format", "folded"];
    launch("8", "exact8", &options, End::Input, "alloc", "allocations", &[]);
}

/// On 3.1 the alloc mode says what it costs as it starts: before the line, not on it.
#[test]
fn the_line_counts_allocation_samples_3() {
    let output = launch("3", "alloc3", &["--mode", "alloc", "--format", "folded"], End::Input, "alloc", "samples", &[]);
    let said = output.find("corprof: alloc on .NET Core 3.1 sends every allocation").expect("no start line");
    let said_end = said + output[said..].find("\r\n").expect("no end of the start line");
    assert!(said_end < output.find("corprof: recording").unwrap(), "{output:?}");
}

#[test]
fn the_line_counts_calls_8() {
    launch(
        "8",
        "calls8",
        &["--mode", "calls", "--filter", "Work::", "--format", "folded"],
        End::Input,
        "calls",
        "calls",
        &[],
    );
}

#[test]
fn the_line_counts_wrapped_calls_8() {
    let options = ["--mode", "methods", "--method", "RecordRunApp.Work::Spin", "--format", "text"];
    launch("8", "methods8", &options, End::Signal, "methods", "calls", &[]);
}

#[test]
fn the_line_counts_garbage_collections_8() {
    launch("8", "heap8", &["--mode", "heap", "--format", "text"], End::Signal, "heap", "GCs", &[]);
}

/// `--duration` at launch: the line shows until the recording comes, which the command then
/// writes out at once (no line of its own in between): the line is erased first. The duration
/// leaves the runtime seconds to start, for a line to show at all.
#[test]
fn the_end_of_a_duration_starts_on_a_clean_line_8() {
    let dir = TempDir::new("duration8");
    let out = dir.0.join("out.folded");
    let (dotnet, dll) = (dotnet("8"), app_dll());
    let (dotnet, dll) = (dotnet.to_str().unwrap(), dll.to_str().unwrap());
    let o = out.to_str().unwrap();
    let run = under_terminal(200, &["record", "--duration", "5", "--format", "folded", "-o", o, "--", dotnet, dll]);
    let output = run.finish();
    let pieces: Vec<&str> = output.split(ERASE).collect();
    let last = pieces.iter().rposition(|p| p.starts_with("corprof: recording cpu · ")).expect("no line drawn");
    assert!(status_line(pieces[last], "cpu").is_some(), "not a line alone: {output:?}");
    assert!(pieces[last + 1].starts_with("corprof: cpu: "), "not from a clean line: {output:?}");
    assert!(output.contains("corprof: --duration ended: ending the app"), "{output:?}");
}

/// On a narrow terminal the line is cut short of its last column (a line as wide as the terminal
/// would wrap on some): it never takes two lines.
#[test]
fn the_line_is_cut_to_the_terminals_width_8() {
    let dir = TempDir::new("narrow8");
    let out = dir.0.join("out.folded");
    let (dotnet, dll) = (dotnet("8"), app_dll());
    let (dotnet, dll) = (dotnet.to_str().unwrap(), dll.to_str().unwrap());
    let run = under_terminal(30, &["record", "--format", "folded", "-o", out.to_str().unwrap(), "--", dotnet, dll]);
    let pid = command_pid(&run);
    let drawn = |t: &str| t.split(ERASE).filter(|p| p.starts_with("corprof: rec")).count();
    run.wait_for("two lines drawn", |t| drawn(t) >= 2);
    sigint(pid);
    let output = run.finish();
    let lines: Vec<&str> = output.split(ERASE).filter(|p| p.starts_with("corprof: rec")).collect();
    assert!(lines.len() >= 2, "{output:?}");
    for line in lines {
        let cut = line.chars().count() == 29 && line.starts_with("corprof: recording cpu · ");
        assert!(cut, "not cut at 29 columns: {line:?} in {output:?}");
    }
}

/// Attached (`--pid`) to a running RecordRun: the line names the process and the duration, and
/// the app runs on after the detach.
#[test]
fn the_line_shows_while_attached_8() {
    let dir = TempDir::new("attach8");
    let out = dir.0.join("out.folded");
    let mut cmd = Command::new(dotnet("8"));
    clean(&mut cmd);
    cmd.arg(app_dll()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut app = cmd.spawn().unwrap();
    let mut app_out = BufReader::new(app.stdout.take().unwrap()).lines();
    let ready = app_out.next().unwrap().unwrap();
    let app_pid = ready.strip_prefix("ready ").unwrap_or_else(|| panic!("not a ready line: {ready}")).to_string();
    let o = out.to_str().unwrap();
    let run = under_terminal(200, &["record", "--pid", &app_pid, "--duration", "600", "--format", "folded", "-o", o]);
    let pid = command_pid(&run);
    let what = format!("cpu in process {app_pid}");
    run.wait_for("growing count", |t| grew(t, &what));
    sigint(pid);
    let output = run.finish();
    check_terminal_output(&output, &what, "samples", &["dropped"]);
    let first = output.split(ERASE).find_map(|p| status_line(p, &what)).unwrap();
    assert!(output.contains(&format!("corprof: recording {what} · {:.1} s of 600 s · ", first.0)), "{output:?}");
    assert!(output.contains(&format!("corprof: detached from process {app_pid}")), "{output:?}");
    assert!(app.try_wait().unwrap().is_none(), "the app ended with the recording");
    writeln!(app.stdin.as_mut().unwrap(), "end").unwrap();
    assert_eq!(app_out.next().map(Result::unwrap).as_deref(), Some("RecordRun done"));
    assert_eq!(app.wait().unwrap().code(), Some(0));
}

/// A terminal that says it cannot erase a line (`TERM=dumb`) gets none. RecordCpu runs for over a
/// second after the profiler starts, time enough for lines to be drawn if they were.
#[test]
fn a_dumb_terminal_gets_no_line_8() {
    let dir = TempDir::new("dumb8");
    let out = dir.0.join("out.folded");
    let dll = support::app("RecordCpu");
    let (dotnet, dll) = (dotnet("8"), dll.to_str().unwrap().to_string());
    let o = out.to_str().unwrap();
    let run = under_terminal_named(
        "dumb",
        200,
        &["record", "--format", "folded", "-o", o, "--", dotnet.to_str().unwrap(), &dll],
    );
    let output = run.finish();
    assert!(output.contains("corprof: wrote "), "{output:?}");
    assert!(!output.contains('\x1b') && !output.contains("corprof: recording"), "{output:?}");
}

/// With stderr not a terminal (a pipe, as in CI): no line, no carriage return, no escape, and
/// the profiler keeps no counts (no `.progress` beside the recording, in the command's folder in
/// `TMPDIR`). The app runs past its `ready` line (300 ms of work after the profiler started),
/// time enough for a line to be drawn and the file written if they were.
#[test]
fn nothing_is_drawn_when_stderr_is_not_a_terminal_8() {
    let dir = TempDir::new("pipe8");
    let out = dir.0.join("out.folded");
    let tmp = dir.0.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut cmd = Command::new(corprof());
    clean(&mut cmd);
    cmd.env("TERM", "xterm")
        .env("TMPDIR", &tmp)
        .args(["record", "--format", "folded", "-o", out.to_str().unwrap(), "--"])
        .arg(dotnet("8"))
        .arg(app_dll())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut run = Gathered::start(cmd, |c| Box::new(c.stderr.take().unwrap()));
    let mut app_out = BufReader::new(run.child.stdout.take().unwrap()).lines();
    let ready = app_out.next().unwrap().unwrap();
    assert!(ready.starts_with("ready "), "{ready}");
    // The runtime's diagnostics pipes are there too.
    let folders: Vec<PathBuf> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("corprof-record-"))
        .collect();
    let [folder] = folders.as_slice() else { panic!("not one folder of the command's: {folders:?}") };
    assert!(folder.join("recording.profile.runtime").is_file(), "not the profiler's folder: {folder:?}");
    assert!(!folder.join("recording.profile.progress").exists(), "the profiler keeps counts");
    writeln!(run.stdin.as_mut().unwrap(), "end").unwrap();
    assert_eq!(app_out.next().map(Result::unwrap).as_deref(), Some("RecordRun done"));
    let stderr = run.finish();
    assert!(stderr.contains("corprof: wrote "), "{stderr:?}");
    assert!(!stderr.contains(['\r', '\x1b']), "{stderr:?}");
    assert!(!stderr.contains("corprof: recording"), "{stderr:?}");
}
