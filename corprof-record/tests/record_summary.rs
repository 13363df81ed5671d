//! `corprof record`'s terminal summary and the outputs' titles, end to end on CoreCLR 8.0.4 and
//! 3.1.23: the title names the app (or the attached process), the mode, the runtime the profiler
//! found and the minute the recording began; the summary lists the top frames (cpu), types and
//! sites (alloc), retaining types (heap) and slowest methods (calls) of the recording itself.
//!
//! Needs the profiler library next to the command (`cargo build -p corprof-record-profiler`)
//! and the apps and runtimes of `bash scripts/setup`.

mod support;
use support::TempDir;
use support::{clean, root};

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn dotnet(runtime: &str) -> String {
    let path = root().join(format!(".runtimes/dotnet-{runtime}/dotnet"));
    assert!(path.is_file(), "no runtime at {} (run `bash scripts/setup`)", path.display());
    path.to_str().unwrap().to_string()
}

fn test_app(name: &str) -> String {
    let path = root().join(format!("tests/apps/{name}/bin/{name}.dll"));
    assert!(path.is_file(), "no {} (run `bash scripts/setup`)", path.display());
    path.to_str().unwrap().to_string()
}

struct Output {
    code: Option<i32>,
    stderr: String,
}

/// Runs the command with `args` to its end (failing after [`RUN_TIMEOUT`]).
fn record(args: &[&str]) -> Output {
    let exe = Path::new(env!("CARGO_BIN_EXE_corprof"));
    let lib = exe.with_file_name("libcorprof_record_profiler.so");
    assert!(lib.is_file(), "{} is missing: run `cargo build -p corprof-record-profiler` first", lib.display());
    let mut cmd = Command::new(exe);
    clean(&mut cmd);
    let child = cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    finish(child)
}

/// Shown for the command's stderr when it stays open after the command ended ([`RUN_TIMEOUT`]):
/// something the command started holds it, a failure the test sees after cleaning up.
const STDERR_HELD: &str = "<the command's stderr is held open after it ended>";

fn finish(mut child: Child) -> Output {
    let mut pipe = child.stderr.take().unwrap();
    let (send, err) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        let _ = send.send(s);
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("did not finish in {RUN_TIMEOUT:?}: {}", err.recv_timeout(RUN_TIMEOUT).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // The pipe closes when the command's last holder ends: at once, unless something it left
    // running holds it.
    Output { code: status.code(), stderr: err.recv_timeout(RUN_TIMEOUT).unwrap_or_else(|_| STDERR_HELD.to_string()) }
}

/// The UTC minute now, as `date` gives it (a clock the command does not share).
fn utc_minute() -> String {
    let out = Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Checks `title` is `<head> — <a minute between before and after>`.
fn check_title(title: &str, head: &str, before: &str, after: &str) {
    let date = title.strip_prefix(head).and_then(|t| t.strip_prefix(" — "));
    assert!(
        date.is_some_and(|d| d == before || d == after),
        "title {title:?}, not {head:?} — {before:?} (or {after:?})"
    );
}

/// The rows of the summary list that `heading` begins (each `corprof:   …`).
fn list<'a>(stderr: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = stderr.lines().skip_while(|l| !l.starts_with(&format!("corprof: {heading}")));
    assert!(lines.next().is_some(), "no {heading:?} list: {stderr}");
    lines.map_while(|l| l.strip_prefix("corprof:   ")).collect()
}

/// The first row naming `frame` in `rows`.
fn position(rows: &[&str], frame: &str) -> Option<usize> {
    rows.iter().position(|r| r.ends_with(&format!("  {frame}")))
}

fn runtime_name(runtime: &str) -> &'static str {
    if runtime == "8" { "CoreCLR 8.0.4" } else { "CoreCLR 3.1.23" }
}

/// cpu at launch: the text table's title, and Heavy (twice Light's time) first of the app's
/// frames by self samples, both listed by total samples.
fn cpu_title_and_summary(runtime: &str) {
    let dir = TempDir::new(&format!("summary-cpu{runtime}"));
    let out = dir.0.join("cpu.txt");
    let before = utc_minute();
    let o = out.to_str().unwrap();
    let run = record(&["record", "--format", "text", "-o", o, "--", &dotnet(runtime), &test_app("RecordCpu")]);
    let after = utc_minute();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let table = std::fs::read_to_string(&out).unwrap();
    let head = format!("RecordCpu.dll — cpu (wall clock), {}", runtime_name(runtime));
    check_title(table.lines().next().unwrap(), &head, &before, &after);
    let by_self = list(&run.stderr, "top frames by self samples (of ");
    assert!((1..=10).contains(&by_self.len()), "{}", run.stderr);
    // Heavy and Light spend their time in Loop, which they call.
    assert!(position(&by_self, "RecordCpuApp.Work::Loop").is_some(), "{}", run.stderr);
    let by_total = list(&run.stderr, "top frames by total samples (of ");
    let heavy = position(&by_total, "RecordCpuApp.Work::Heavy");
    let light = position(&by_total, "RecordCpuApp.Work::Light");
    assert!(heavy.is_some() && light.is_some() && heavy < light, "{}", run.stderr);
    assert!(!by_total.iter().any(|r| r.contains("  [")), "{}", run.stderr);
    // The summary comes before the line saying where the output went, which stays the last.
    assert!(run.stderr.trim_end().lines().last().unwrap().starts_with("corprof: wrote "), "{}", run.stderr);
}

#[test]
fn cpu_title_and_summary_8() {
    cpu_title_and_summary("8");
}

#[test]
fn cpu_title_and_summary_3() {
    cpu_title_and_summary("3");
}

/// alloc exact at launch: `Bytes`'s byte arrays (10,000 × 1000 bytes) are the top type and
/// site; the speedscope file carries the title.
fn alloc_summary(runtime: &str) {
    let dir = TempDir::new(&format!("summary-alloc{runtime}"));
    let out = dir.0.join("alloc.json");
    let o = out.to_str().unwrap();
    let (before, dll) = (utc_minute(), test_app("RecordAlloc"));
    let run = record(&[
        "record",
        "--mode",
        "alloc",
        "--alloc",
        "exact",
        "--format",
        "speedscope",
        "-o",
        o,
        "--",
        &dotnet(runtime),
        &dll,
        "10000",
    ]);
    let after = utc_minute();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let head = format!("RecordAlloc.dll — alloc (exact), {}", runtime_name(runtime));
    check_title(json["name"].as_str().unwrap(), &head, &before, &after);
    let types = list(&run.stderr, "top allocated types (of ");
    assert!(types[0].ends_with("  System.Byte[]"), "{}", run.stderr);
    let sites = list(&run.stderr, "top allocation sites (of ");
    assert!(sites[0].ends_with("  RecordAllocApp.Program::Bytes → System.Byte[]"), "{}", run.stderr);
    assert!(position(&sites, "RecordAllocApp.Program::Inner → System.Int64[]").is_some(), "{}", run.stderr);
}

#[test]
fn alloc_summary_8() {
    alloc_summary("8");
}

#[test]
fn alloc_summary_3() {
    alloc_summary("3");
}

/// heap at launch: RecordHeap's holder retains its nodes; calls: Work::Heavy is the slowest
/// hooked method, with its calls.
fn heap_and_calls_summary(runtime: &str) {
    let dir = TempDir::new(&format!("summary-heap{runtime}"));
    let out = dir.0.join("heap.txt");
    let o = out.to_str().unwrap();
    let run = record(&[
        "record",
        "--mode",
        "heap",
        "--format",
        "text",
        "-o",
        o,
        "--",
        &dotnet(runtime),
        &test_app("RecordHeap"),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let types = list(&run.stderr, "top types by retained bytes (of ");
    assert!((1..=10).contains(&types.len()), "{}", run.stderr);
    assert!(position(&types, "RecordHeapApp.Holder").is_some(), "{}", run.stderr);

    let out = dir.0.join("calls.html");
    let o = out.to_str().unwrap();
    let (before, dll) = (utc_minute(), test_app("RecordCpu"));
    let run = record(&[
        "record",
        "--mode",
        "calls",
        "--filter",
        "RecordCpuApp.Work::",
        "--format",
        "html",
        "-o",
        o,
        "--",
        &dotnet(runtime),
        &dll,
    ]);
    let after = utc_minute();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let methods = list(&run.stderr, "slowest methods by exclusive time (of ");
    // Loop is the spinning every Burn calls (Rest sleeps a third as long).
    assert!(methods[0].ends_with("  RecordCpuApp.Work::Loop") && methods[0].contains(" calls "), "{}", run.stderr);
    let html = std::fs::read_to_string(&out).unwrap();
    let head = format!("RecordCpu.dll — calls, {}", runtime_name(runtime));
    let title = html.split("<title>").nth(1).and_then(|t| t.split("</title>").next()).unwrap();
    check_title(title, &head, &before, &after);
}

#[test]
fn heap_and_calls_summary_8() {
    heap_and_calls_summary("8");
}

#[test]
fn heap_and_calls_summary_3() {
    heap_and_calls_summary("3");
}

/// Attached, the title names the process.
#[test]
fn an_attached_recording_is_titled_by_its_process_8() {
    let mut cmd = Command::new(dotnet("8"));
    clean(&mut cmd);
    let mut app = cmd
        .args([&test_app("RecordCpu"), "0", "1500", "wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(app.stdout.take().unwrap()).lines();
    let pid = lines.next().unwrap().unwrap().strip_prefix("ready ").unwrap().to_string();
    let dir = TempDir::new("summary-attach8");
    let out = dir.0.join("cpu.txt");
    let before = utc_minute();
    let run = record(&["record", "--pid", &pid, "--duration", "0.5", "--format", "text", "-o", out.to_str().unwrap()]);
    let after = utc_minute();
    drop(app.stdin.take()); // the app's ReadLine returns: it works, then ends
    assert_eq!(app.wait().unwrap().code(), Some(0));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let table = std::fs::read_to_string(&out).unwrap();
    check_title(
        table.lines().next().unwrap(),
        &format!("process {pid} — cpu (wall clock), CoreCLR 8.0.4"),
        &before,
        &after,
    );
}

/// The methods mode's JSON carries the title too.
fn methods_title(runtime: &str) {
    let dir = TempDir::new(&format!("summary-methods{runtime}"));
    let out = dir.0.join("methods.json");
    let (before, dll) = (utc_minute(), test_app("RecordCalls"));
    let o = out.to_str().unwrap();
    let method = "RecordCallsApp.Program::Spin";
    let run = record(&[
        "record",
        "--mode",
        "methods",
        "--method",
        method,
        "--format",
        "json",
        "-o",
        o,
        "--",
        &dotnet(runtime),
        &dll,
    ]);
    let after = utc_minute();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let head = format!("RecordCalls.dll — methods, {}", runtime_name(runtime));
    check_title(json["title"].as_str().unwrap(), &head, &before, &after);
}

#[test]
fn methods_title_8() {
    methods_title("8");
}

#[test]
fn methods_title_3() {
    methods_title("3");
}

/// A folder holding a fake `xdg-open` that writes its arguments to `opened` beside it and exits
/// with `status` (with the shell's builtins only: PATH holds nothing else).
fn fake_opener(dir: &Path, status: i32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("xdg-open");
    std::fs::write(&script, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"${{0%/*}}/opened\"\nexit {status}\n"))
        .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Records RecordCpu briefly with `--open`, PATH set to `path`, the output named relatively
/// from `dir`.
fn record_and_open(dir: &Path, path: &Path) -> Output {
    let exe = Path::new(env!("CARGO_BIN_EXE_corprof"));
    let mut cmd = Command::new(exe);
    clean(&mut cmd);
    let args = ["record", "--open", "-o", "cpu.svg", "--", &dotnet("8"), &test_app("RecordCpu"), "0", "100"];
    let child = cmd
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child)
}

/// `--open` hands the written output, by its full path, to the `xdg-open` on PATH; the command
/// waits for it, so its record is there when the command ends.
#[test]
fn open_hands_the_output_to_xdg_open() {
    let dir = TempDir::new("summary-open");
    let bin = fake_opener(&dir.0, 0);
    let run = record_and_open(&dir.0, &bin);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let opened =
        std::fs::read_to_string(bin.join("opened")).unwrap_or_else(|e| panic!("not opened ({e}): {}", run.stderr));
    assert_eq!(opened, format!("{}\n", dir.0.join("cpu.svg").display()));
    assert!(std::fs::read_to_string(dir.0.join("cpu.svg")).unwrap().contains("<svg"));
    assert!(!run.stderr.contains("--open"), "{}", run.stderr);
}

/// An opener that fails, or none on PATH, is one line; the output is written and the status is
/// the app's all the same.
#[test]
fn open_without_a_working_xdg_open_says_so_and_succeeds() {
    let dir = TempDir::new("summary-open-failing");
    let bin = fake_opener(&dir.0, 3);
    let run = record_and_open(&dir.0, &bin);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let said: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("corprof: --open: ")).collect();
    assert!(said.len() == 1 && said[0].ends_with("ended with exit status: 3"), "{}", run.stderr);
    assert!(dir.0.join("cpu.svg").is_file());

    let empty = dir.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::remove_file(dir.0.join("cpu.svg")).unwrap();
    let run = record_and_open(&dir.0, &empty);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let said: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("corprof: --open: ")).collect();
    assert_eq!(said, ["corprof: --open: no xdg-open on PATH; open cpu.svg yourself"], "{}", run.stderr);
    assert!(dir.0.join("cpu.svg").is_file());
}

/// An opener that does not return is left running after the command's wait, holding none of
/// the command's streams (the test reads the command's stderr to its end, which it would hold
/// open), and the command ends with its output written.
#[test]
fn open_leaves_an_opener_that_does_not_return() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("summary-open-held");
    let bin = dir.0.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fifo = dir.0.join("never-written");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Builtins only; opening a FIFO no one writes to blocks until the test ends the shell.
    let script = bin.join("xdg-open");
    std::fs::write(&script, format!("#!/bin/sh\necho $$ > {}/pid\nread line < {}\n", bin.display(), fifo.display()))
        .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = record_and_open(&dir.0, &bin);
    let pid: i32 = std::fs::read_to_string(bin.join("pid")).unwrap().trim().parse().unwrap();
    let running = Path::new(&format!("/proc/{pid}")).exists();
    // SAFETY: kill only sends a signal, to the fake opener this test started (its parent, the
    // command, has ended, and nothing has reaped it yet only if it is still there).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(running, "the opener did not outlive the command's wait: {}", run.stderr);
    let said: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("corprof: --open: ")).collect();
    assert!(said.len() == 1 && said[0].ends_with("still runs after 10s; left running"), "{}", run.stderr);
    assert!(dir.0.join("cpu.svg").is_file());
}
