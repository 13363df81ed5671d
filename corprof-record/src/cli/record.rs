//! `corprof record`: starts the app under the profiler library, or attaches it to a running
//! app, then reads what the profiler wrote and writes the output.
//!
//! The profiler writes its recording (a [`Profile`] in its text form) to a temporary file named by
//! the `OUT` setting, in a folder of the command's own (mode 0700, made for this run), or, when
//! it cannot start, the reason to `<OUT>.error`. The command reads only regular files there, each
//! up to a size.

use super::output::{
    check_for_heap, check_for_methods, check_for_profile, open_output, title, write_heap, write_methods, write_profile,
};
use super::signals::{self, Signals};
use super::status::{self, Status};
use super::{Alloc, Clock, Error, Mode, RecordArgs, Sampler};
use corprof_record::formats::latency::text_line;
use corprof_record::formats::pprof::Period;
use corprof_record::formats::summary::{SUMMARY_TOP, summary_lines};
use corprof_record::latency::MethodsReport;
use corprof_record::profile::Profile;
use corprof_record::{files, settings};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The profiler library's file name, looked for next to this binary.
const PROFILER_LIB: &str = "libcorprof_record_profiler.so";
/// How long the runtime may take to load the profiler on attach (milliseconds).
const ATTACH_TIMEOUT_MS: u32 = 10_000;
/// attach: how long after the duration the profiler may take to write its recording.
const WRITE_GRACE: Duration = Duration::from_secs(30);
/// attach: how long to wait, after the recording, for the profiler to confirm its detach.
const DETACH_WAIT: Duration = Duration::from_secs(10);
/// The largest recording the command reads back (a profile's text; the heap snapshot has its
/// own, `heap::MAX_SNAPSHOT_BYTES`).
const MAX_PROFILE_BYTES: u64 = 1 << 30;
/// The most methods the terminal summary lists (all are in the output).
const SUMMARY_LINES: usize = 20;
/// How often the command looks at the app, the signals and the recording while it waits.
const POLL: Duration = Duration::from_millis(20);
/// The largest `.error` or `.stats` line file the command reads.
const MAX_NOTE_BYTES: u64 = 64 << 10;

/// The longest runtime name the title takes from that file.
const MAX_RUNTIME_CHARS: usize = 64;

/// Runs the command; `Ok` is the exit status to leave with (the app's).
pub fn run(args: &RecordArgs) -> Result<i32, Error> {
    // The title's date: when the recording began, not when it was written.
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if args.pid.is_some() {
        // The runtime allows neither allocation callbacks nor enter/leave hooks after attach:
        // say so before touching the process.
        match (args.mode, args.alloc) {
            (Mode::Calls, _) => {
                return Err(Error::usage(
                    "the calls mode records from the app's start only (the runtime allows enter/leave hooks only \
                     from startup); attach (--pid) works with --mode cpu, alloc or heap",
                ));
            }
            (Mode::Alloc, Alloc::Exact) => {
                return Err(Error::usage(
                    "--alloc exact records from the app's start only (the runtime allows allocation callbacks \
                     only from startup); attach (--pid) works with --alloc sampled",
                ));
            }
            _ => {}
        }
    }
    match args.mode {
        Mode::Heap => check_for_heap(args.format()),
        Mode::Methods => check_for_methods(args.format()),
        _ => check_for_profile(args.format()),
    }
    .map_err(Error::usage)?;
    let methods = method_patterns(args)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.{}", args.mode.name(), args.format().extension())));
    // Before the app runs: an output that cannot be written would lose the whole run, and one
    // that is not a regular file (a FIFO would block the write forever) is never written.
    files::check_output(&output).map_err(|e| Error::failed(e.to_string()))?;
    if let Some(seconds) = args.duration
        && !(seconds.is_finite() && (0.001..=86_400.0).contains(&seconds))
    {
        return Err(Error::usage(format!("--duration {seconds}: give a number of seconds from 0.001 to 86400")));
    }
    let lib = profiler_library()?;
    let temp = TempOut::new()?;
    let mut settings = vec![
        (settings::MODE, args.mode.name().to_string()),
        (settings::OUT, temp.path_str()?.to_string()),
        (settings::INTERVAL_MS, args.interval_ms.to_string()),
        (settings::CLOCK, args.clock.name().to_string()),
        (settings::ALLOC, args.alloc.name().to_string()),
    ];
    if let Some(sampler) = args.sampler {
        if args.mode != Mode::Cpu {
            return Err(Error::usage("--sampler is for --mode cpu"));
        }
        settings.push((settings::SAMPLER, sampler.name().to_string()));
    }
    if args.native {
        if args.mode != Mode::Cpu || args.sampler == Some(Sampler::Suspend) {
            return Err(Error::usage(
                "--native is for --mode cpu with the signal sampler (native frames are read in its signal handler; \
                 the suspension sampler sees only managed ones)",
            ));
        }
        settings.push((settings::NATIVE, "1".to_string()));
    }
    if let Some(filter) = &args.filter {
        settings.push((settings::FILTER, filter.clone()));
    }
    if let Some(at_ms) = args.at_ms {
        settings.push((settings::AT_MS, at_ms.to_string()));
    }
    if let Some(methods) = methods {
        settings.push((settings::METHODS, methods));
    }
    // The live line: only on a terminal, so the profiler keeps its counts only then.
    let live = status::wanted();
    if live {
        settings.push((settings::PROGRESS, "1".to_string()));
    }
    // What the profiler would refuse at Initialize, refused here before anything starts.
    settings::check_all(settings.iter().map(|(k, v)| (*k, v.as_str()))).map_err(Error::usage)?;
    let (status, recorded) = match args.pid {
        Some(pid) => (0, Some(attach(pid, args, &lib, settings, &temp, live)?)),
        None => launch(args, &lib, &settings, &temp, &output, started, live)?,
    };
    if let Some(recorded) = recorded {
        emit(args, &temp, recorded, &output, started)?;
    }
    Ok(status)
}

/// Prints what the profiler said about its cost, writes the output, sums it up and says where it
/// went; `started` is when the recording began (seconds since 1970), for the title.
fn emit(args: &RecordArgs, temp: &TempOut, recorded: Recorded, output: &Path, started: u64) -> Result<(), Error> {
    if let Some(stats) = temp.note(settings::STATS_SUFFIX) {
        for line in stats.lines().filter(|l| !l.trim().is_empty()) {
            eprintln!("corprof: {line}");
        }
    }
    let runtime = temp.note(settings::RUNTIME_SUFFIX).and_then(|note| runtime_name(&note));
    let title = title(&target_name(args), &mode_name(args), runtime.as_deref(), started);
    match recorded {
        Recorded::Profile(profile) => {
            let period = (args.mode == Mode::Cpu)
                .then(|| Period { clock: args.clock.name(), nanoseconds: args.interval_ms.saturating_mul(1_000_000) });
            write_profile(&profile, args.format(), &title, period, output).map_err(Error::failed)?;
            for line in summary_lines(&profile, SUMMARY_TOP) {
                eprintln!("corprof: {line}");
            }
            eprintln!("corprof: wrote {} ({} {})", output.display(), profile.total(), profile.unit.name());
        }
        Recorded::Heap => {
            let summary = write_heap(&temp.0, args.format(), &title, output).map_err(Error::failed)?;
            for line in summary {
                eprintln!("corprof: {line}");
            }
            eprintln!("corprof: wrote {} (heap snapshot)", output.display());
        }
        Recorded::Methods(report) => {
            summarise_methods(&report);
            write_methods(&report, args.format(), &title, output).map_err(Error::failed)?;
            let calls: u64 = report.methods.iter().map(|m| m.calls).sum();
            eprintln!("corprof: wrote {} ({} methods, {calls} calls)", output.display(), report.methods.len());
        }
    }
    if args.open {
        open_output(output);
    }
    Ok(())
}

/// What the title calls the recorded app: the app's file (`MyApp.dll`, or the program run when
/// no `.dll` follows it: an app's own launcher), or `process <pid>` when attached.
fn target_name(args: &RecordArgs) -> String {
    if let Some(pid) = args.pid {
        return format!("process {pid}");
    }
    let app = match args.command.as_slice() {
        [_, app, ..] if app.ends_with(".dll") => app,
        [program, ..] => program,
        [] => return "the app".to_string(),
    };
    Path::new(app).file_name().map_or_else(|| app.clone(), |name| name.to_string_lossy().into_owned())
}

/// The mode as the title gives it, with what changes its numbers' meaning: `cpu (wall clock)`,
/// `alloc (sampled)`.
fn mode_name(args: &RecordArgs) -> String {
    match args.mode {
        Mode::Cpu => format!("cpu ({})", if args.clock == Clock::Wall { "wall clock" } else { "cpu clock" }),
        Mode::Alloc => format!("alloc ({})", args.alloc.name()),
        other => other.name().to_string(),
    }
}

/// The runtime named in the profiler's note: its first line, without control characters, at
/// most [`MAX_RUNTIME_CHARS`] long; `None` when empty.
fn runtime_name(note: &str) -> Option<String> {
    let name: String =
        note.lines().next()?.trim().chars().filter(|c| !c.is_control()).take(MAX_RUNTIME_CHARS).collect();
    (!name.is_empty()).then_some(name)
}

/// `--method`: the patterns as the `METHODS` setting holds them, checked as the profiler will
/// read them; only with `--mode methods`, which needs one.
fn method_patterns(args: &RecordArgs) -> Result<Option<String>, Error> {
    match (args.mode == Mode::Methods, args.methods.is_empty()) {
        (true, true) => {
            return Err(Error::usage(
                "--mode methods needs the methods to wrap: --method 'Namespace.Type::Method' (`*` for any run of \
                 characters), once per pattern",
            ));
        }
        (false, false) => return Err(Error::usage("--method is for --mode methods")),
        (false, true) => return Ok(None),
        (true, false) => {}
    }
    for pattern in &args.methods {
        if pattern.contains(settings::METHODS_SEPARATOR) {
            return Err(Error::usage(format!("--method {pattern:?}: a pattern holds no `|`")));
        }
        corprof::instrument::Target::parse(pattern).map_err(|e| Error::usage(format!("--method {e}")))?;
    }
    Ok(Some(args.methods.join(&settings::METHODS_SEPARATOR.to_string())))
}

/// The terminal's share of the methods mode: what was not wrapped, and the slowest methods in
/// total.
fn summarise_methods(report: &MethodsReport) {
    for pattern in &report.unmatched {
        eprintln!("corprof: warning: --method {pattern} named no method of any module the app loaded");
    }
    for (method, why) in &report.refused {
        eprintln!("corprof: warning: {method} was not wrapped: {why}");
    }
    let mut slowest: Vec<_> = report.methods.iter().filter(|m| m.calls > 0).collect();
    slowest.sort_by(|a, b| b.sum_ns.cmp(&a.sum_ns).then_with(|| a.name.cmp(&b.name)));
    for m in slowest.iter().take(SUMMARY_LINES) {
        eprintln!("corprof:   {}", text_line(m));
    }
    if slowest.len() > SUMMARY_LINES {
        eprintln!("corprof:   … {} more called methods in the output", slowest.len() - SUMMARY_LINES);
    }
}

/// `libcorprof_record_profiler.so` in this binary's directory.
fn profiler_library() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe().map_err(|e| Error::failed(format!("cannot find this program's path: {e}")))?;
    let lib = exe.parent().unwrap_or(Path::new(".")).join(PROFILER_LIB);
    if lib.is_file() {
        Ok(lib)
    } else {
        Err(Error::failed(format!(
            "the profiler library {} is missing: build it with `cargo build -p corprof-record-profiler` \
             (with the same profile, --release or not, as this binary)",
            lib.display()
        )))
    }
}

/// Starts `<dotnet> <app.dll> [args…]` with the profiler, waits for it, and reads the recording;
/// `None` when it was written out already (a stop asked for while the app ran on).
///
/// A first SIGINT or SIGTERM (or the end of `--duration`) asks the profiler to write the
/// recording now (`<OUT>.stop`); a signal that a process sent to the command is passed on to the
/// app (the terminal's Ctrl-C reached it already), and the end of `--duration` sends it SIGINT
/// once the output is written. The app's status is the command's. A second signal kills the app
/// (SIGKILL) and ends the command at once. With `live`, the status line shows while it waits.
fn launch(
    args: &RecordArgs,
    lib: &Path,
    settings: &[(&str, String)],
    temp: &TempOut,
    output: &Path,
    started: u64,
    live: bool,
) -> Result<(i32, Option<Recorded>), Error> {
    let [dotnet, rest @ ..] = args.command.as_slice() else {
        return Err(Error::usage(
            "give the app to run after `--` (corprof record [options] -- <dotnet> <app.dll> [args…]), \
             or --pid N --duration S",
        ));
    };
    if dotnet.ends_with(".dll") {
        return Err(Error::usage(format!(
            "{dotnet} is an app, not a program: give the runtime first: corprof record -- dotnet {dotnet}"
        )));
    }
    if let Some(app) = rest.first().filter(|a| a.ends_with(".dll"))
        && !Path::new(app).is_file()
    {
        return Err(Error::failed(format!("no app {app}: the file does not exist")));
    }
    let mut command = Command::new(dotnet);
    command
        .args(rest)
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", format!("{{{}}}", corprof_record::CLSID))
        .env("CORECLR_PROFILER_PATH", lib)
        // These would win over CORECLR_PROFILER_PATH.
        .env_remove("CORECLR_PROFILER_PATH_64")
        .env_remove("CORECLR_PROFILER_PATH_32")
        .envs(settings.iter().map(|(k, v)| (k, v)));
    // Caught before the app starts, so none is lost in between (the app gets the default
    // actions back at exec).
    let signals = Signals::catch().map_err(|e| Error::failed(format!("cannot catch SIGINT and SIGTERM: {e}")))?;
    let began = Instant::now();
    let mut child = command.spawn().map_err(|e| Error::failed(format!("cannot run {dotnet}: {e}")))?;
    let pid = child.id();
    let send = |signal: i32| {
        // SAFETY: kill only sends a signal; `pid` is the command's own child, not yet waited
        // for, so the number cannot name another process.
        unsafe { libc::kill(pid as libc::pid_t, signal) };
    };
    let duration = args.duration.map(Duration::from_secs_f64);
    let deadline = duration.map(|d| Instant::now() + d);
    let mut line =
        Status::new(live, temp.sibling(settings::PROGRESS_SUFFIX), args.mode.name().to_string(), began, duration);
    // Set once a stop is asked for: by the duration's end (end the app after the output), or
    // by a signal (the app has it).
    let mut stopping: Option<Stop> = None;
    let mut written = false;
    // The duration's SIGINT was sent.
    let mut ended_app = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(Error::failed(format!("cannot wait for the app (process {pid}): {e}"))),
        }
        if let Some(batch) = signals.take() {
            if stopping.is_some() {
                let _ = child.kill();
                let _ = child.wait();
                let what = if written { "the output is written" } else { "nothing was written" };
                return Err(Error::failed(format!(
                    "{} again: killed the app (process {pid}) with SIGKILL; {what}",
                    signals::name(batch.signal)
                ))
                .with_status(128 + batch.signal));
            }
            stopping = Some(Stop::Signal);
            temp.request_stop(&mut line);
            if batch.sent {
                send(batch.signal);
            }
            line.clear();
            eprintln!(
                "corprof: {}: stopping the recording; the app (process {pid}) has the signal too; {} again ends \
                 at once, killing it",
                signals::name(batch.signal),
                signals::name(batch.signal)
            );
        }
        if stopping.is_none() && deadline.is_some_and(|d| Instant::now() >= d) {
            stopping = Some(Stop::Duration);
            temp.request_stop(&mut line);
        }
        // The duration is over but no recording can come (the profiler did not start, or the
        // runtime never loaded it): the app ends all the same, and the command says why below.
        if stopping == Some(Stop::Duration)
            && !written
            && !ended_app
            && (temp.error_path().exists() || deadline.is_some_and(|d| Instant::now() > d + WRITE_GRACE))
        {
            ended_app = true;
            line.clear();
            eprintln!("corprof: --duration ended and no recording came: ending the app (process {pid}) with SIGINT");
            send(libc::SIGINT);
        }
        if let Some(stop) = stopping
            && !written
            && let Some(recorded) = temp.read(args.mode)?
        {
            line.end();
            emit(args, temp, recorded, output, started)?;
            written = true;
            if stop == Stop::Duration {
                ended_app = true;
                eprintln!("corprof: --duration ended: ending the app (process {pid}) with SIGINT");
                send(libc::SIGINT);
            }
        }
        line.tick();
        std::thread::sleep(POLL);
    };
    line.end();
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    if written {
        return Ok((code, None));
    }
    match temp.read(args.mode)? {
        Some(recorded) => Ok((code, Some(recorded))),
        None => Err(temp.why_nothing(&format!("the app (exit status {code})")).with_status(if code != 0 {
            code
        } else {
            1
        })),
    }
}

/// Why a launched app's recording was asked to stop early.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Signal,
    Duration,
}

/// Attaches the profiler to `pid` for `--duration` seconds and reads the recording; with `live`,
/// the status line shows while it waits.
fn attach(
    pid: u32,
    args: &RecordArgs,
    lib: &Path,
    mut settings: Vec<(&str, String)>,
    temp: &TempOut,
    live: bool,
) -> Result<Recorded, Error> {
    // Checked in `run` (0.001 to 86400 s): at least one whole millisecond.
    let duration = Duration::from_secs_f64(args.duration.unwrap_or(1.0));
    settings.push((settings::DURATION_MS, duration.as_millis().to_string()));
    if let Some((key, value)) = settings.iter().find(|(_, v)| v.contains([';', '\n'])) {
        return Err(Error::failed(format!("{key}={value:?} cannot be passed to an attach (it holds a `;`)")));
    }
    let signals = Signals::catch().map_err(|e| Error::failed(format!("cannot catch SIGINT and SIGTERM: {e}")))?;
    let data: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let data = data.join(";");
    let request = corprof_attach::AttachRequest {
        clsid: corprof::GUID::parse(corprof_record::CLSID),
        profiler_path: lib,
        client_data: data.as_bytes(),
        timeout_ms: ATTACH_TIMEOUT_MS,
    };
    corprof_attach::attach(pid, &request).map_err(|e| {
        // A profiler that refused to start said why; that says more than the runtime's E_FAIL.
        if temp.error_path().exists() {
            temp.why_nothing(&format!("process {pid}"))
        } else {
            Error::failed(format!("cannot attach to process {pid}: {e}"))
        }
    })?;
    eprintln!(
        "corprof: attached to process {pid}: recording for {:?} (Ctrl-C stops sooner; the app runs on)",
        duration
    );
    // The profiler writes the recording after the duration (or at the app's end, if sooner),
    // then detaches itself.
    let deadline = Instant::now() + duration + WRITE_GRACE;
    let what = format!("{} in process {pid}", args.mode.name());
    let mut line = Status::new(live, temp.sibling(settings::PROGRESS_SUFFIX), what, Instant::now(), Some(duration));
    let mut said_ready = false;
    let mut stopping = false;
    loop {
        if let Some(batch) = signals.take() {
            let name = signals::name(batch.signal);
            if stopping {
                return Err(Error::failed(format!(
                    "{name} again: ended without the recording; the profiler in process {pid} still writes it \
                     and detaches"
                ))
                .with_status(128 + batch.signal));
            }
            stopping = true;
            temp.request_stop(&mut line);
            line.clear();
            eprintln!(
                "corprof: {name}: stopping the recording; the profiler detaches and process {pid} runs on ({name} \
                 again ends at once)"
            );
        }
        if !said_ready && let Some(wrapped) = temp.note(settings::READY_SUFFIX) {
            said_ready = true;
            line.clear();
            eprintln!("corprof: {} methods wrapped in process {pid}; recording their calls", wrapped.trim());
        }
        if let Some(recorded) = temp.read(args.mode)? {
            line.end();
            wait_for_detach(pid, temp);
            return Ok(recorded);
        }
        let gone = !Path::new(&format!("/proc/{pid}")).exists();
        if gone || temp.error_path().exists() || Instant::now() > deadline {
            line.end();
            // One last look: the app may have written it as it ended.
            if let Some(recorded) = temp.read(args.mode)? {
                return Ok(recorded);
            }
            let what = if gone { format!("process {pid} (it has ended)") } else { format!("process {pid}") };
            return Err(temp.why_nothing(&what));
        }
        line.tick();
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (a bounded time) for the profiler to say it has detached, and says so; the app ending
/// first is no detach, and says nothing.
fn wait_for_detach(pid: u32, temp: &TempOut) {
    let deadline = Instant::now() + DETACH_WAIT;
    while Instant::now() < deadline {
        if temp.sibling(".detached").exists() {
            eprintln!("corprof: detached from process {pid}");
            return;
        }
        if let Some(why) = temp.note(settings::STAYS_SUFFIX) {
            eprintln!("corprof: the profiler stays loaded in process {pid}, recording nothing more ({})", why.trim());
            return;
        }
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("corprof: process {pid} has not confirmed the detach in {DETACH_WAIT:?}; the recording is complete");
}

/// The temporary file the profiler writes its recording to, and its `.error`, `.detached` and
/// `.stats` siblings, in a folder made for them; removed, folder and all, when dropped.
struct TempOut(PathBuf);

/// What the profiler left: a profile, (heap mode) a snapshot in the temporary file, or the
/// methods mode's report.
enum Recorded {
    Profile(Profile),
    Heap,
    Methods(MethodsReport),
}

impl TempOut {
    /// A new folder (mode 0700) in the temporary folder: only this user can put anything where
    /// the profiler writes, so no name there can be a symlink or a FIFO someone placed ahead.
    fn new() -> Result<TempOut, Error> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let mut last = None;
        for n in 0..16 {
            let dir = base.join(format!("corprof-record-{}-{nanos}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(TempOut(dir.join("recording.profile"))),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => last = Some(e),
            }
        }
        let why = last.map_or_else(String::new, |e| format!(": {e}"));
        Err(Error::failed(format!("cannot make a temporary folder in {}{why}", base.display())))
    }

    /// A small file the profiler left beside the recording (`.stats`, `.error`), if it is there.
    fn note(&self, suffix: &str) -> Option<String> {
        let bytes = files::read_regular(&self.sibling(suffix), MAX_NOTE_BYTES).ok()??;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn path_str(&self) -> Result<&str, Error> {
        self.0.to_str().ok_or_else(|| Error::failed(format!("the temporary path {:?} is not UTF-8", self.0)))
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut p = self.0.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    }

    /// Asks the profiler to write the recording now (its watch thread looks for this file); if
    /// it cannot, says so on a clean line (`line` erased first).
    fn request_stop(&self, line: &mut Status) {
        if let Err(e) = std::fs::File::create(self.sibling(settings::STOP_SUFFIX)) {
            line.clear();
            eprintln!("corprof: cannot ask the profiler to stop: {e}");
        }
    }

    fn error_path(&self) -> PathBuf {
        self.sibling(".error")
    }

    /// The recording, if the profiler wrote it: a profile, the methods mode's report, or for the
    /// heap mode the snapshot file (read by [`write_heap`]).
    fn read(&self, mode: Mode) -> Result<Option<Recorded>, Error> {
        if mode == Mode::Heap {
            return Ok(self.0.is_file().then_some(Recorded::Heap));
        }
        match files::read_regular(&self.0, MAX_PROFILE_BYTES) {
            Ok(Some(bytes)) => std::str::from_utf8(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|text| match mode {
                    Mode::Methods => MethodsReport::from_text(text).map(Recorded::Methods).map_err(|e| e.to_string()),
                    _ => Profile::from_text(text).map(Recorded::Profile).map_err(|e| e.to_string()),
                })
                .map(Some)
                .map_err(|e| Error::failed(format!("the profiler wrote a recording that does not read back: {e}"))),
            Ok(None) => Ok(None),
            Err(e) => Err(Error::failed(format!("cannot read the recording: {e}"))),
        }
    }

    /// Why nothing was recorded: what the profiler said when it refused to start, or that
    /// `target` never loaded it.
    fn why_nothing(&self, target: &str) -> Error {
        match self.note(".error") {
            Some(why) => Error::failed(format!("the profiler did not start: {}; nothing was recorded", why.trim())),
            None => Error::failed(format!(
                "{target} wrote no recording: the runtime did not load the profiler, or the app ended \
                 before it could write (see the app's output above)"
            )),
        }
    }
}

impl Drop for TempOut {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &[&str]) -> RecordArgs {
        let cli = super::super::Cli::try_parse_from([&["corprof", "record"], line].concat()).unwrap();
        let super::super::Command::Record(args) = cli.command;
        args
    }

    #[test]
    fn the_title_names_the_app_or_the_process_and_the_mode() {
        assert_eq!(target_name(&args(&["--", "/opt/dotnet/dotnet", "bin/MyApp.dll", "x.dll"])), "MyApp.dll");
        assert_eq!(target_name(&args(&["--", "./bin/MyApp", "arg"])), "MyApp");
        assert_eq!(target_name(&args(&["--pid", "4242", "--duration", "1"])), "process 4242");
        assert_eq!(mode_name(&args(&[])), "cpu (wall clock)");
        assert_eq!(mode_name(&args(&["--clock", "cpu"])), "cpu (cpu clock)");
        assert_eq!(mode_name(&args(&["--mode", "alloc", "--alloc", "exact"])), "alloc (exact)");
        assert_eq!(mode_name(&args(&["--mode", "heap"])), "heap");
    }

    #[test]
    fn the_runtime_note_is_one_short_line() {
        assert_eq!(runtime_name("CoreCLR 8.0.4\n").as_deref(), Some("CoreCLR 8.0.4"));
        assert_eq!(runtime_name(" \n").as_deref(), None);
        assert_eq!(runtime_name("Core\u{1b}[31mCLR\nmore").as_deref(), Some("Core[31mCLR"));
        assert_eq!(runtime_name(&"x".repeat(1000)).map(|n| n.len()), Some(MAX_RUNTIME_CHARS));
    }
}
