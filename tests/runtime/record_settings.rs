//! corprof-record-profiler's settings and output path, read at Initialize, on CoreCLR 8.0.4 and
//! 3.1.23 with the RecordCpu app: a setting out of its range, not a number or not UTF-8 is
//! refused with one `corprof: …` line naming it (the app runs on, unprofiled); a variable of
//! someone else's that is not UTF-8 changes nothing; the longest interval does not hold the app
//! at its end; an OUT that is not a regular file (a FIFO, a folder, a socket, a symlink to one of
//! those, to `/dev/null` or to nothing) is refused and left as it was.

use crate::common::*;
use crate::record_support::{CLSID, Profile};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// The app and its arguments: exit 0 after 300 ms of its two threads' work.
const APP: &str = "RecordCpu";
const ARGS: [&str; 2] = ["0", "300"];

/// Runs the app under the record profiler (cpu mode) with `settings` and the extra raw
/// variables `raw` added; returns the run and how long it took.
fn record(runtime: &'static str, settings: &[(&str, &str)], raw: &[(OsString, OsString)]) -> (Run, Duration) {
    let lib = profiler_lib("corprof_record_profiler");
    let mut env = profiler_env(CLSID, &lib);
    env.extend(settings.iter().map(|(k, v)| (*k, v.to_string())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut command = app_command(runtime, APP, &ARGS, &env);
    command.envs(raw.iter().map(|(k, v)| (k, v)));
    let started = Instant::now();
    let child = command.spawn().unwrap_or_else(|e| panic!("cannot start scripts/dotnet-run: {e}"));
    let run = finish_app(runtime, APP, child);
    (run, started.elapsed())
}

fn assert_app_done(run: &Run) {
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.lines().any(|l| l == "RecordCpu done"), "{}", run.describe());
}

/// The profiler refused to start with exactly the line `corprof: <why>` (and corprof's own
/// `Initialize failed` line), and the app ran to its end unprofiled.
fn assert_refused(run: &Run, why: &str) {
    assert_app_done(run);
    let ours: Vec<&str> =
        run.stderr_lines("corprof: ").into_iter().filter(|l| !l.starts_with("corprof: Initialize failed")).collect();
    assert_eq!(ours, [format!("corprof: {why}")], "{}", run.describe());
    assert_eq!(run.stderr_lines(INITIALIZE_FAILED_E_FAIL).len(), 1, "{}", run.describe());
}

fn bad_interval(runtime: &'static str) {
    let out = TempFile::new(&format!("record-bad-interval-{runtime}"));
    let range = "give a whole number of milliseconds from 1 to 60000";
    for (value, why) in [
        ("0", format!("CORPROF_RECORD_INTERVAL_MS=\"0\" is out of range: {range}")),
        ("4294967295", format!("CORPROF_RECORD_INTERVAL_MS=\"4294967295\" is out of range: {range}")),
        ("60001", format!("CORPROF_RECORD_INTERVAL_MS=\"60001\" is out of range: {range}")),
        ("abc", format!("CORPROF_RECORD_INTERVAL_MS=\"abc\" is not a number: {range}")),
    ] {
        let (run, _) =
            record(runtime, &[("CORPROF_RECORD_OUT", out.path()), ("CORPROF_RECORD_INTERVAL_MS", value)], &[]);
        assert_refused(&run, &why);
        assert!(out.read().is_none(), "a recording with interval {value}");
        // The command reads why from `<OUT>.error`.
        let error = Path::new(&format!("{}.error", out.path())).to_path_buf();
        let said = std::fs::read_to_string(&error).unwrap_or_default();
        let _ = std::fs::remove_file(&error);
        assert_eq!(said, format!("{why}\n"));
    }
}

#[test]
fn bad_intervals_are_refused_with_their_value_8() {
    let _runtime = runtime_lock();
    bad_interval("8");
}

#[test]
fn bad_intervals_are_refused_with_their_value_3() {
    let _runtime = runtime_lock();
    bad_interval("3");
}

/// The longest interval, a minute: the app (300 ms of work) ends at once, its sampler's wait cut
/// short by Shutdown; a plain sleep held the app's exit for the rest of the minute.
fn longest_interval(runtime: &'static str) {
    let out = TempFile::new(&format!("record-long-interval-{runtime}"));
    let (run, took) =
        record(runtime, &[("CORPROF_RECORD_OUT", out.path()), ("CORPROF_RECORD_INTERVAL_MS", "60000")], &[]);
    assert_app_done(&run);
    assert!(took < Duration::from_secs(30), "the app took {took:?} to end: {}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no recording: {}", run.describe()));
    let profile = Profile::parse(&text);
    assert_eq!(profile.unit, "samples");
    // The interval applied: the sampler's own counts say so, not the clock. The default 10 ms
    // would sample each thread about thirty times in the app's 300 ms of work; with 60 s, a
    // thread is sampled at most once, when its timer's first expiry (a random point of its first
    // interval, by design) falls in the run.
    // `corprof_record::settings::STATS_SUFFIX`, which this crate does not depend on.
    let stats = TempFile(Path::new(&format!("{}.stats", out.path())).to_path_buf());
    let stats = stats.read().unwrap_or_else(|| panic!("no stats beside the recording: {}", run.describe()));
    let number_before = |words: &str| -> Option<u64> {
        let (before, _) = stats.split_once(words)?;
        before.rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    let samples = number_before(" samples by the signal sampler").unwrap_or_else(|| panic!("no count in {stats:?}"));
    let threads = number_before(" threads sampled").unwrap_or_else(|| panic!("no thread count in {stats:?}"));
    assert!(
        samples <= threads,
        "{samples} samples of {threads} threads with a 60 s interval in {took:?}: {stats}{text}"
    );
}

#[test]
fn the_longest_interval_does_not_hold_the_apps_end_8() {
    let _runtime = runtime_lock();
    longest_interval("8");
}

#[test]
fn the_longest_interval_does_not_hold_the_apps_end_3() {
    let _runtime = runtime_lock();
    longest_interval("3");
}

/// A variable that is not UTF-8, name or value, is nobody's business but its owner's; one of the
/// profiler's own is refused, named.
fn non_utf8(runtime: &'static str) {
    let out = TempFile::new(&format!("record-non-utf8-{runtime}"));
    let raw = |k: &[u8], v: &[u8]| (OsString::from_vec(k.to_vec()), OsString::from_vec(v.to_vec()));
    let unrelated = [raw(b"CORPROF_TEST_JUNK", b"\xff\xfe"), raw(b"JUNK_\xff", b"x")];
    let (run, _) =
        record(runtime, &[("CORPROF_RECORD_OUT", out.path()), ("CORPROF_RECORD_INTERVAL_MS", "5")], &unrelated);
    assert_app_done(&run);
    assert!(run.stderr_lines("corprof").is_empty(), "{}", run.describe());
    let profile = Profile::parse(&out.read().unwrap_or_else(|| panic!("no recording: {}", run.describe())));
    assert!(profile.stacks.keys().any(|f| f.iter().any(|f| f == "RecordCpuApp.Work::Heavy")), "{}", profile.text);
    let ours = [raw(b"CORPROF_RECORD_CLOCK", b"w\xffll")];
    let (run, _) = record(runtime, &[("CORPROF_RECORD_OUT", out.path())], &ours);
    assert_refused(&run, "CORPROF_RECORD_CLOCK=\"w\\xFFll\" is not UTF-8 text");
    let _ = std::fs::remove_file(format!("{}.error", out.path()));
}

#[test]
fn only_its_own_variables_must_be_utf8_8() {
    let _runtime = runtime_lock();
    non_utf8("8");
}

#[test]
fn only_its_own_variables_must_be_utf8_3() {
    let _runtime = runtime_lock();
    non_utf8("3");
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("cannot run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// What `path` is itself (a symlink is not followed).
fn kind(path: &Path) -> Option<std::fs::FileType> {
    std::fs::symlink_metadata(path).ok().map(|m| m.file_type())
}

/// An OUT that is not a regular file: refused at Initialize, the app runs on, the path is what
/// it was — a FIFO is still a FIFO, a symlink to `/dev/null` still that symlink, and `/dev/null`
/// still a character device (the broken profiler replaced such a path by a file, which as root
/// for `/dev/null` itself breaks the machine; the symlink keeps this test from ever being able
/// to do that).
fn not_regular(runtime: &'static str) {
    let dir = TempDir::new("record-out", &format!("not-regular-{runtime}"));
    let fifo = dir.file("fifo");
    mkfifo(&fifo);
    let folder = dir.file("folder");
    std::fs::create_dir(&folder).unwrap();
    let socket = dir.file("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let to_fifo = dir.file("to-fifo");
    std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
    let to_null = dir.file("to-null");
    std::os::unix::fs::symlink("/dev/null", &to_null).unwrap();
    let dangling = dir.file("dangling");
    std::os::unix::fs::symlink(dir.file("nothing"), &dangling).unwrap();
    let cases = [
        (&fifo, "is a FIFO"),
        (&folder, "is a directory"),
        (&socket, "is a socket"),
        (&to_fifo, "is a symlink to a FIFO"),
        (&to_null, "is a symlink to a character device"),
        (&dangling, "is a symlink to nothing"),
    ];
    for (path, what) in cases {
        let before = kind(path);
        let (run, _) = record(runtime, &[("CORPROF_RECORD_OUT", path.to_str().unwrap())], &[]);
        assert_refused(&run, &format!("{} {what}: corprof record writes only regular files", path.display()));
        assert_eq!(kind(path), before, "{} changed", path.display());
        let error = format!("{}.error", path.display());
        assert!(kind(Path::new(&error)).is_none(), "{error} was written beside a refused OUT");
    }
    assert!(kind(&fifo).is_some_and(|k| k.is_fifo()) && kind(&to_null).is_some_and(|k| k.is_symlink()));
    assert!(std::fs::metadata("/dev/null").is_ok_and(|m| m.file_type().is_char_device()), "/dev/null is gone");
    assert!(kind(&dir.file("nothing")).is_none(), "a dangling symlink's target was made");
}

#[test]
fn an_out_that_is_not_a_regular_file_is_refused_and_left_alone_8() {
    let _runtime = runtime_lock();
    not_regular("8");
}

#[test]
fn an_out_that_is_not_a_regular_file_is_refused_and_left_alone_3() {
    let _runtime = runtime_lock();
    not_regular("3");
}
