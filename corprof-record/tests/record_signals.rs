//! `corprof record` stopped by a signal, end to end on CoreCLR 8.0.4 and 3.1.23: SIGINT and
//! SIGTERM to the command alone or to its whole process group (what the terminal's Ctrl-C
//! does) write the output, end the app with the signal and leave no process behind; a second
//! signal kills an app that ignored the first; `--duration` at launch; an attached recording
//! stopped by SIGINT while the app runs on; the hint for a `.dll` given as the program.
//!
//! The app is tests/apps/RecordRun: it prints `ready <pid>` and then runs until it is stopped
//! (a signal, or a line on stdin), spinning in `Work::Spin` and allocating in `Work::Allocate`.
//! Every wait is for a line the app or the command prints, or for a process to end.
//!
//! Needs the profiler library next to the command (`cargo build -p corprof-record-profiler`)
//! and the apps and runtimes of `bash scripts/setup`.

mod support;
use support::{clean, dotnet};

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// Longer than any run here takes: past it the test fails (it never waits this long on success).
const TIMEOUT: Duration = Duration::from_secs(120);

fn app_dll() -> PathBuf {
    support::app("RecordRun")
}

/// A running process whose stdout and stderr lines arrive on channels (read by threads, so the
/// pipes never fill), and whose stdin stays open (RecordRun ends at a line on it).
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<String>,
    err: Receiver<String>,
    /// Every stderr line seen so far.
    err_seen: Vec<String>,
}

fn lines(pipe: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Running {
    /// Starts `cmd` in a process group of its own (so a signal to the group reaches it and its
    /// children only).
    fn start(mut cmd: Command) -> Running {
        cmd.process_group(0).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("cannot start");
        let out = lines(child.stdout.take().unwrap());
        let err = lines(child.stderr.take().unwrap());
        Running { stdin: child.stdin.take(), child, out, err, err_seen: Vec::new() }
    }

    /// The app's pid from its `ready <pid>` line.
    fn ready(&self) -> i32 {
        let line = self.out.recv_timeout(TIMEOUT).expect("no `ready <pid>` line from the app");
        line.strip_prefix("ready ").and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("not a ready line: {line}"))
    }

    /// Waits for a stderr line containing `text`.
    fn stderr_line(&mut self, text: &str) -> String {
        loop {
            match self.err.recv_timeout(TIMEOUT) {
                Ok(line) => {
                    self.err_seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(_) => panic!("no stderr line with {text:?}; stderr: {:#?}", self.err_seen),
            }
        }
    }

    fn signal(&self, signal: i32, to_group: bool) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill only sends a signal, to the child not yet waited for (or its group).
        assert_eq!(unsafe { libc::kill(if to_group { -pid } else { pid }, signal) }, 0);
    }

    /// Waits for the end (failing after [`TIMEOUT`]): the exit status as a shell gives it
    /// (128 + the signal that killed it), and every stderr line.
    fn end(mut self) -> (i32, String) {
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > TIMEOUT {
                // The whole group: the app too, which a broken command may have left running.
                // SAFETY: kill only sends a signal, to the group this test made.
                unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL) };
                self.err_seen.extend(self.err.try_iter());
                panic!("did not end in {TIMEOUT:?}; stderr: {:#?}", self.err_seen);
            }
            // The child's own end is the event; this only paces the looking.
            std::thread::sleep(Duration::from_millis(10));
        };
        drop(self.stdin.take());
        self.err_seen.extend(self.err.iter());
        use std::os::unix::process::ExitStatusExt;
        let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap());
        (code, self.err_seen.join("\n"))
    }
}

fn corprof() -> Command {
    let mut cmd = Command::new(support::corprof_exe());
    clean(&mut cmd);
    cmd
}

/// `corprof record <options> -o <out> -- dotnet RecordRun.dll <app args>`.
fn record(runtime: &str, options: &[&str], out: &Path, app_args: &[&str]) -> Running {
    let mut cmd = corprof();
    cmd.arg("record").args(options).arg("-o").arg(out).arg("--").arg(dotnet(runtime)).arg(app_dll()).args(app_args);
    Running::start(cmd)
}

/// Whether process `pid` is still there (a zombie counts as gone: it runs nothing).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The folded output's total for stacks holding `frame`, failing if the file is missing.
fn folded_total(path: &Path, frame: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no output {}: {e}", path.display()));
    text.lines()
        .filter(|l| l.contains(frame))
        .map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<u64>().ok()).expect("a folded line"))
        .sum()
}

/// A signal mid-recording, to the command alone or to its group: the output holds the app's
/// frames, the command's status is the app's (killed by that signal), and the app is gone.
fn stopped_by(runtime: &str, mode: &str, signal: i32, to_group: bool) {
    let dir = support::TempDir::new(&format!("stop-{runtime}-{mode}-{signal}-{to_group}"));
    let out = dir.0.join("out.folded");
    let run = record(runtime, &["--mode", mode, "--format", "folded"], &out, &[]);
    let app = run.ready();
    run.signal(signal, to_group);
    let (code, stderr) = run.end();
    assert_eq!(code, 128 + signal, "{stderr}");
    assert!(stderr.contains(&format!("corprof: wrote {}", out.display())), "{stderr}");
    let frame = if mode == "alloc" { "Work::Allocate" } else { "Work::Spin" };
    assert!(folded_total(&out, frame) > 0, "no {frame} in the output; stderr: {stderr}");
    assert!(!alive(app), "the app (process {app}) is still running");
}

#[test]
fn sigint_to_the_command_writes_the_output_and_ends_the_app_8() {
    stopped_by("8", "cpu", libc::SIGINT, false);
}

#[test]
fn sigint_to_the_command_writes_the_output_and_ends_the_app_3() {
    stopped_by("3", "cpu", libc::SIGINT, false);
}

#[test]
fn sigint_to_the_group_writes_the_output_and_ends_the_app_8() {
    stopped_by("8", "cpu", libc::SIGINT, true);
    stopped_by("8", "alloc", libc::SIGINT, true);
}

#[test]
fn sigint_to_the_group_writes_the_output_and_ends_the_app_3() {
    stopped_by("3", "cpu", libc::SIGINT, true);
    stopped_by("3", "alloc", libc::SIGINT, true);
}

#[test]
fn sigterm_writes_the_output_and_ends_the_app_8() {
    stopped_by("8", "cpu", libc::SIGTERM, false);
    stopped_by("8", "alloc", libc::SIGTERM, true);
}

#[test]
fn sigterm_writes_the_output_and_ends_the_app_3() {
    stopped_by("3", "cpu", libc::SIGTERM, false);
    stopped_by("3", "alloc", libc::SIGTERM, true);
}

/// The other modes, SIGINT to the group mid-recording: each writes its output (the heap's
/// snapshot taken then, the calls and the wrapped methods' counts so far) and the app is gone.
fn other_modes(runtime: &str) {
    let cases: [(&[&str], &str); 3] = [
        (&["--mode", "heap", "--format", "text"], "System.Byte[]"),
        (&["--mode", "calls", "--filter", "RecordRunApp.Work", "--format", "folded"], "Work::Spin"),
        (
            &["--mode", "methods", "--method", "RecordRunApp.Work::Spin", "--format", "text"],
            "RecordRunApp.Work::Spin calls=",
        ),
    ];
    for (options, expected) in cases {
        let dir = support::TempDir::new(&format!("modes-{runtime}-{}", options[1]));
        let out = dir.0.join("out");
        let run = record(runtime, options, &out, &[]);
        let app = run.ready();
        run.signal(libc::SIGINT, true);
        let (code, stderr) = run.end();
        assert_eq!(code, 130, "{options:?}: {stderr}");
        let text = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{options:?}: no output: {e}; {stderr}"));
        assert!(text.contains(expected), "{options:?}: no {expected:?} in {text}");
        assert!(!alive(app), "{options:?}: the app (process {app}) is still running");
    }
}

#[test]
fn heap_calls_and_methods_stopped_by_sigint_8() {
    other_modes("8");
}

#[test]
fn heap_calls_and_methods_stopped_by_sigint_3() {
    other_modes("3");
}

/// A signal to the app alone (the command gets none): SIGINT, which ends a .NET app without
/// its Shutdown, is held by the profiler library until the recording is written; SIGTERM ends
/// the app through its Shutdown, where the recording is written. Either way the app ends by the
/// signal and the command passes its status on.
fn app_alone(runtime: &str, signal: i32) {
    let dir = support::TempDir::new(&format!("app-alone-{runtime}-{signal}"));
    let out = dir.0.join("out.folded");
    let run = record(runtime, &["--format", "folded"], &out, &[]);
    let app = run.ready();
    // SAFETY: kill only sends a signal, to the app the command started (still running: it
    // runs until stopped).
    assert_eq!(unsafe { libc::kill(app, signal) }, 0);
    let (code, stderr) = run.end();
    assert_eq!(code, 128 + signal, "{stderr}");
    assert!(!stderr.contains("stopping the recording"), "the command was signalled: {stderr}");
    assert!(folded_total(&out, "Work::Spin") > 0, "no Work::Spin; stderr: {stderr}");
}

#[test]
fn a_signal_to_the_app_alone_keeps_the_recording_8() {
    app_alone("8", libc::SIGINT);
    app_alone("8", libc::SIGTERM);
}

#[test]
fn a_signal_to_the_app_alone_keeps_the_recording_3() {
    app_alone("3", libc::SIGINT);
    app_alone("3", libc::SIGTERM);
}

/// An app that cancels Ctrl-C (Console.CancelKeyPress) runs on after the first SIGINT to the
/// group; the recording is written all the same, and a second SIGINT kills the app and ends the
/// command at once.
fn second_sigint(runtime: &str) {
    let dir = support::TempDir::new(&format!("second-{runtime}"));
    let out = dir.0.join("out.folded");
    let mut run = record(runtime, &["--format", "folded"], &out, &["cancel"]);
    let app = run.ready();
    run.signal(libc::SIGINT, true);
    run.stderr_line("corprof: wrote");
    assert!(folded_total(&out, "Work::Spin") > 0);
    let cancelled = run.out.recv_timeout(TIMEOUT).expect("the app said nothing");
    assert_eq!(cancelled, "cancelled");
    assert!(alive(app), "the app ended at a Ctrl-C it cancels");
    run.signal(libc::SIGINT, false);
    let (code, stderr) = run.end();
    assert_eq!(code, 130, "{stderr}");
    assert!(stderr.contains(&format!("SIGINT again: killed the app (process {app}) with SIGKILL")), "{stderr}");
    assert!(!alive(app), "the app (process {app}) is still running");
}

#[test]
fn a_second_sigint_kills_an_app_that_cancels_the_first_8() {
    second_sigint("8");
}

#[test]
fn a_second_sigint_kills_an_app_that_cancels_the_first_3() {
    second_sigint("3");
}

/// `--duration` at launch: the output is written after that long, then the app ends as at
/// Ctrl-C (SIGINT), its status the command's. The duration is the feature, so this test does
/// depend on time: 3 s leaves the app (ready within a few hundred ms here) a wide margin to
/// print its `ready` line and reach its work on a busy machine (0.5 s once did not).
fn duration_at_launch(runtime: &str, mode: &str) {
    let dir = support::TempDir::new(&format!("duration-{runtime}-{mode}"));
    let out = dir.0.join("out.folded");
    let run = record(runtime, &["--mode", mode, "--format", "folded", "--duration", "3"], &out, &[]);
    let app = run.ready();
    let (code, stderr) = run.end();
    assert_eq!(code, 130, "{stderr}");
    assert!(stderr.contains("--duration ended: ending the app"), "{stderr}");
    let frame = if mode == "alloc" { "Work::Allocate" } else { "Work::Spin" };
    assert!(folded_total(&out, frame) > 0, "no {frame}; stderr: {stderr}");
    assert!(!alive(app));
}

#[test]
fn duration_at_launch_records_then_ends_the_app_8() {
    duration_at_launch("8", "cpu");
    duration_at_launch("8", "alloc");
}

#[test]
fn duration_at_launch_records_then_ends_the_app_3() {
    duration_at_launch("3", "cpu");
    duration_at_launch("3", "alloc");
}

/// `--duration` at launch when the profiler refused to start (a misspelt setting in the
/// environment): no recording can come, and the app is ended at the duration all the same.
fn duration_without_a_recording(runtime: &str) {
    let dir = support::TempDir::new(&format!("duration-none-{runtime}"));
    let out = dir.0.join("out.folded");
    let mut cmd = corprof();
    cmd.args(["record", "--format", "folded", "--duration", "0.2", "-o"]).arg(&out).arg("--");
    cmd.arg(dotnet(runtime)).arg(app_dll());
    cmd.env("CORPROF_RECORD_INTERVAL", "5");
    let (code, stderr) = Running::start(cmd).end();
    assert_eq!(code, 130, "{stderr}");
    assert!(stderr.contains("--duration ended and no recording came: ending the app"), "{stderr}");
    assert!(stderr.contains("the profiler did not start: CORPROF_RECORD_INTERVAL"), "{stderr}");
    assert!(!out.exists());
}

/// The samples the profiler has counted so far, from the `.progress` file it keeps in the
/// command's temporary folder under `tmp` (none before it writes one).
fn samples_so_far(tmp: &Path) -> u64 {
    let Ok(folders) = std::fs::read_dir(tmp) else { return 0 };
    folders
        .filter_map(|f| std::fs::read_to_string(f.ok()?.path().join("recording.profile.progress")).ok())
        .filter_map(|text| text.lines().find_map(|l| l.strip_suffix(" samples")?.parse::<u64>().ok()))
        .max()
        .unwrap_or(0)
}

/// Attached (`--pid`), SIGINT to the command ends the recording long before `--duration`: the
/// output is written, the profiler detaches, and the app runs on (and ends normally after).
fn attach_then_sigint(runtime: &str, mode: &str) {
    let dir = support::TempDir::new(&format!("attach-{runtime}-{mode}"));
    let heap = mode == "heap";
    let out = dir.0.join(if heap { "out.txt" } else { "out.folded" });
    let tmp = dir.0.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut app_cmd = Command::new(dotnet(runtime));
    clean(&mut app_cmd);
    // The profiler reads its settings from the app's environment too: there it is asked for
    // its counts, which the command asks for only on a terminal.
    app_cmd.env("CORPROF_RECORD_PROGRESS", "1");
    app_cmd.arg(app_dll()).args(["exit", "7"]);
    let mut app = Running::start(app_cmd);
    let pid = app.ready();
    let mut cmd = corprof();
    let pid_arg = pid.to_string();
    let format = if heap { "text" } else { "folded" };
    cmd.args(["record", "--mode", mode, "--format", format, "--pid", &pid_arg, "--duration", "600", "-o"]).arg(&out);
    cmd.env("TMPDIR", &tmp);
    let mut run = Running::start(cmd);
    run.stderr_line("corprof: attached to process");
    if !heap {
        // Stopped at once, the recording may hold a sample or two, none yet in the app's work
        // (a busy machine): the stop waits for the profiler's own count of samples instead,
        // enough that the spinning thread's share (a quarter: every thread is sampled) is many.
        let started = std::time::Instant::now();
        while samples_so_far(&tmp) < 200 {
            assert!(started.elapsed() < TIMEOUT, "the profiler counted no 200 samples in {TIMEOUT:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    run.signal(libc::SIGINT, true);
    let (code, stderr) = run.end();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("detached from process {pid}")), "{stderr}");
    if heap {
        let table = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("no output: {e}; stderr: {stderr}"));
        assert!(table.contains("System.Byte[]"), "{table}");
    } else {
        assert!(folded_total(&out, "Work::") > 0, "no Work frames; stderr: {stderr}");
    }
    assert!(alive(pid), "the app ended with the attached recording");
    app.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    let (code, _) = app.end();
    assert_eq!(code, 7, "the app did not run on to its own end");
}

#[test]
fn sigint_ends_an_attached_recording_and_the_app_runs_on_8() {
    attach_then_sigint("8", "cpu");
    attach_then_sigint("8", "heap");
}

#[test]
fn sigint_ends_an_attached_recording_and_the_app_runs_on_3() {
    attach_then_sigint("3", "cpu");
    attach_then_sigint("3", "heap");
}

#[test]
fn duration_ends_the_app_when_no_recording_can_come_8() {
    duration_without_a_recording("8");
}

#[test]
fn duration_ends_the_app_when_no_recording_can_come_3() {
    duration_without_a_recording("3");
}

/// Started with SIGINT ignored (`nohup`, a script's background job), the command and the app
/// leave it ignored: a SIGINT to the group changes nothing, and the app ends at its own time.
fn sigint_ignored(runtime: &str) {
    let dir = support::TempDir::new(&format!("ignored-{runtime}"));
    let out = dir.0.join("out.folded");
    let mut cmd = corprof();
    cmd.args(["record", "--format", "folded", "-o"]).arg(&out).arg("--").arg(dotnet(runtime)).arg(app_dll());
    // SAFETY: between fork and exec only `signal`, which is async-signal-safe, runs.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        })
    };
    let mut run = Running::start(cmd);
    let app = run.ready();
    run.signal(libc::SIGINT, true);
    assert!(alive(app));
    run.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    let (code, stderr) = run.end();
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("stopping the recording"), "{stderr}");
    assert!(folded_total(&out, "Work::Spin") > 0, "no Work::Spin; stderr: {stderr}");
}

#[test]
fn an_ignored_sigint_stays_ignored_8() {
    sigint_ignored("8");
}

#[test]
fn an_ignored_sigint_stays_ignored_3() {
    sigint_ignored("3");
}

#[test]
fn a_dll_given_as_the_program_gets_a_hint() {
    let out = corprof().args(["record", "--", "App.dll"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("give the runtime first: corprof record -- dotnet App.dll"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
