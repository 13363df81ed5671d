//! `corprof record`: starts the app under the profiler library, or attaches it to a running
//! app, then reads what the profiler wrote and writes the output.
//!
//! The profiler writes its recording (a [`Profile`] in its text form) to a temporary file named by
//! the `OUT` setting, or, when it cannot start, the reason to `<OUT>.error`.

use super::output::{check_for_heap, write_heap, write_profile};
use super::{Alloc, Error, Mode, RecordArgs};
use corprof_record::formats::pprof::Period;
use corprof_record::profile::Profile;
use corprof_record::settings;
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

/// Runs the command; `Ok` is the exit status to leave with (the app's).
pub fn run(args: &RecordArgs) -> Result<i32, Error> {
    let heap = args.mode == Mode::Heap;
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
    if heap {
        check_for_heap(args.format()).map_err(Error::usage)?;
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.{}", args.mode.name(), args.format().extension())));
    let lib = profiler_library()?;
    let temp = TempOut::new();
    let mut settings = vec![
        (settings::MODE, args.mode.name().to_string()),
        (settings::OUT, temp.path_str()?.to_string()),
        (settings::INTERVAL_MS, args.interval_ms.to_string()),
        (settings::CLOCK, args.clock.name().to_string()),
        (settings::ALLOC, args.alloc.name().to_string()),
    ];
    if let Some(filter) = &args.filter {
        settings.push((settings::FILTER, filter.clone()));
    }
    if let Some(at_ms) = args.at_ms {
        settings.push((settings::AT_MS, at_ms.to_string()));
    }
    let (status, recorded) = match args.pid {
        Some(pid) => (0, attach(pid, args, &lib, settings, &temp)?),
        None => launch(args, &lib, &settings, &temp)?,
    };
    if let Ok(stats) = std::fs::read_to_string(temp.sibling(settings::STATS_SUFFIX)) {
        for line in stats.lines().filter(|l| !l.trim().is_empty()) {
            eprintln!("corprof: {line}");
        }
    }
    match recorded {
        Recorded::Profile(profile) => {
            let period = (args.mode == Mode::Cpu)
                .then(|| Period { clock: args.clock.name(), nanoseconds: args.interval_ms.saturating_mul(1_000_000) });
            write_profile(&profile, args.format(), period, &output).map_err(Error::failed)?;
            eprintln!("corprof: wrote {} ({} {})", output.display(), profile.total(), profile.unit.name());
        }
        Recorded::Heap => {
            write_heap(&temp.0, args.format(), &output).map_err(Error::failed)?;
            eprintln!("corprof: wrote {} (heap snapshot)", output.display());
        }
    }
    Ok(status)
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

/// Starts `<dotnet> <app.dll> [args…]` with the profiler, waits for it, and reads the recording.
fn launch(
    args: &RecordArgs,
    lib: &Path,
    settings: &[(&str, String)],
    temp: &TempOut,
) -> Result<(i32, Recorded), Error> {
    let [dotnet, rest @ ..] = args.command.as_slice() else {
        return Err(Error::usage(
            "give the app to run after `--` (corprof record [options] -- <dotnet> <app.dll> [args…]), \
             or --pid N --duration S",
        ));
    };
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
    let status = command.status().map_err(|e| Error::failed(format!("cannot run {dotnet}: {e}")))?;
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    match temp.read(args.mode == Mode::Heap)? {
        Some(recorded) => Ok((code, recorded)),
        None => Err(temp.why_nothing(&format!("the app (exit status {code})")).with_status(if code != 0 {
            code
        } else {
            1
        })),
    }
}

/// Attaches the profiler to `pid` for `--duration` seconds and reads the recording.
fn attach(
    pid: u32,
    args: &RecordArgs,
    lib: &Path,
    mut settings: Vec<(&str, String)>,
    temp: &TempOut,
) -> Result<Recorded, Error> {
    let seconds = args.duration.unwrap_or(0.0);
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) {
        return Err(Error::usage(format!("--duration {seconds}: give a number of seconds above 0")));
    }
    let duration = Duration::from_secs_f64(seconds);
    settings.push((settings::DURATION_MS, duration.as_millis().to_string()));
    if let Some((key, value)) = settings.iter().find(|(_, v)| v.contains([';', '\n'])) {
        return Err(Error::failed(format!("{key}={value:?} cannot be passed to an attach (it holds a `;`)")));
    }
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
    // The profiler writes the recording after the duration (or at the app's end, if sooner),
    // then detaches itself.
    let deadline = Instant::now() + duration + WRITE_GRACE;
    loop {
        if let Some(recorded) = temp.read(args.mode == Mode::Heap)? {
            wait_for_detach(pid, temp);
            return Ok(recorded);
        }
        let gone = !Path::new(&format!("/proc/{pid}")).exists();
        if gone || temp.error_path().exists() || Instant::now() > deadline {
            // One last look: the app may have written it as it ended.
            if let Some(recorded) = temp.read(args.mode == Mode::Heap)? {
                return Ok(recorded);
            }
            let what = if gone { format!("process {pid} (it has ended)") } else { format!("process {pid}") };
            return Err(temp.why_nothing(&what));
        }
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
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("corprof: process {pid} has not confirmed the detach in {DETACH_WAIT:?}; the recording is complete");
}

/// The temporary file the profiler writes its recording to, and its `.error`, `.detached` and
/// `.stats` siblings; all removed when dropped.
struct TempOut(PathBuf);

/// What the profiler left: a profile, or (heap mode) a snapshot in the temporary file.
enum Recorded {
    Profile(Profile),
    Heap,
}

impl TempOut {
    fn new() -> TempOut {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!("corprof-record-{}-{nanos}.profile", std::process::id()));
        TempOut(path)
    }

    fn path_str(&self) -> Result<&str, Error> {
        self.0.to_str().ok_or_else(|| Error::failed(format!("the temporary path {:?} is not UTF-8", self.0)))
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut p = self.0.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    }

    fn error_path(&self) -> PathBuf {
        self.sibling(".error")
    }

    /// The recording, if the profiler wrote it: a profile, or for the heap mode the snapshot
    /// file (read by [`write_heap`]).
    fn read(&self, heap: bool) -> Result<Option<Recorded>, Error> {
        if heap {
            return Ok(self.0.is_file().then_some(Recorded::Heap));
        }
        match std::fs::read_to_string(&self.0) {
            Ok(text) => Profile::from_text(&text)
                .map(|p| Some(Recorded::Profile(p)))
                .map_err(|e| Error::failed(format!("the profiler wrote a recording that does not read back: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::failed(format!("cannot read the recording {}: {e}", self.0.display()))),
        }
    }

    /// Why nothing was recorded: what the profiler said when it refused to start, or that
    /// `target` never loaded it.
    fn why_nothing(&self, target: &str) -> Error {
        match std::fs::read_to_string(self.error_path()) {
            Ok(why) => Error::failed(format!("the profiler did not start: {}; nothing was recorded", why.trim())),
            Err(_) => Error::failed(format!(
                "{target} wrote no recording: the runtime did not load the profiler, or the app ended \
                 before it could write (see the app's output above)"
            )),
        }
    }
}

impl Drop for TempOut {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.error_path());
        let _ = std::fs::remove_file(self.sibling(".detached"));
        let _ = std::fs::remove_file(self.sibling(settings::STATS_SUFFIX));
    }
}
