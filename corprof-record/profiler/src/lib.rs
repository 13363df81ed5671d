//! The profiler library `corprof record` loads into the app: one profiler, its mode chosen by
//! [`corprof_record::settings::MODE`].
//!
//! It takes its settings from the environment at launch, or from the attach's client data
//! (`KEY=VALUE` pairs separated by `;`, which win over the environment), starts the mode's
//! [`Recording`], and gives the recording's result to the file named by
//! [`corprof_record::settings::OUT`]: at Shutdown, or earlier when the command asks (a file
//! `<OUT>.stop`), at the app's SIGINT (`stop.rs`), or for an attach after
//! [`corprof_record::settings::DURATION_MS`], just before it asks the runtime to detach it. When
//! it cannot start (a bad setting, an output that is not a regular file, a mode not built), it
//! says why in one `corprof: …` line, writes it to `<OUT>.error` and fails `Initialize`, so the
//! runtime unloads it and the command can say what went wrong. After a detach it creates
//! `<OUT>.detached`. Every file it writes goes through [`corprof_record::files::replace`]:
//! created or replaced only if it is a regular file.

pub mod alloc;
pub mod alloc_tick;
pub mod calls;
mod cpu;
mod frames;
pub mod heap;
mod methods;
mod modes;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod native;
pub mod pauses;
mod progress;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod signal;
mod stop;

use corprof::threads::ThreadNames;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, ClassID, ThreadID};
use corprof::{CorProfilerCallback, HResult, IUnknown, LiveObject, ProfilerInfo, Result, WStr};
use corprof_record::{files, settings};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

/// The CLSID the command names in `CORECLR_PROFILER` (one text, in `corprof_record`).
pub const CLSID: corprof::GUID = corprof::GUID::parse(corprof_record::CLSID);

/// How long the runtime is told a detach will take before it first checks (milliseconds).
const DETACH_EXPECTED_MS: u32 = 100;
/// How often the watch thread looks for the command's request to stop and for a SIGINT.
const WATCH_POLL: Duration = Duration::from_millis(20);
/// How often the watch thread writes the counts so far, with [`settings::PROGRESS`].
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// What to record, as the command asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    /// Where the result goes.
    pub out: PathBuf,
    /// cpu: milliseconds between samples.
    pub interval_ms: u64,
    pub clock: Clock,
    /// cpu: the sampler asked for (`None`: `Sampler::default()`, the signal sampler on Linux
    /// x86-64, falling back to the suspension sampler if it cannot start).
    pub sampler: Option<Sampler>,
    /// attach: how long to record before detaching.
    pub duration_ms: Option<u64>,
    /// Every pair as given, for the modes' own settings (`ALLOC`, `FILTER`, `AT_MS`).
    pub pairs: HashMap<String, String>,
}

/// The recording modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Cpu,
    Alloc,
    Heap,
    Calls,
    Methods,
}

/// cpu: what one sample's value measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Every thread counts once per tick, running or not.
    Wall,
    /// Each thread counts by the CPU time it used since the last tick, in ticks.
    Cpu,
}

/// cpu: how samples are taken. The default is the signal sampler where it works (Linux
/// x86-64), which stops only the thread it samples; elsewhere the suspension sampler, which
/// stops the whole runtime each tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampler {
    /// Each thread interrupted alone by a signal from its own timer, its frames read in the
    /// handler.
    Signal,
    /// The runtime suspended each tick, every managed thread walked, resumed.
    Suspend,
}

impl Default for Sampler {
    fn default() -> Sampler {
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) { Sampler::Signal } else { Sampler::Suspend }
    }
}

impl Settings {
    /// cpu: whether native frames are recorded ([`settings::NATIVE`]).
    pub fn native(&self) -> bool {
        self.pairs.get(settings::NATIVE).is_some_and(|v| v == "1")
    }

    /// Reads the settings from `KEY=VALUE` pairs, each checked ([`settings::check`]: a name that
    /// is not a setting, a value out of its range); the error says which setting is wrong.
    pub fn from_pairs(pairs: HashMap<String, String>) -> std::result::Result<Settings, String> {
        // In name order, so that of several bad settings the same one is always named.
        let mut sorted: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        sorted.sort();
        settings::check_all(sorted)?;
        let get = |key: &str| pairs.get(key).map(String::as_str);
        let number = |key: &str, range| -> std::result::Result<Option<u64>, String> {
            get(key).map(|v| settings::number(key, v, range)).transpose()
        };
        let mode = match get(settings::MODE) {
            Some("cpu") | None => Mode::Cpu,
            Some("alloc") => Mode::Alloc,
            Some("heap") => Mode::Heap,
            Some("calls") => Mode::Calls,
            Some("methods") => Mode::Methods,
            Some(other) => {
                return Err(format!("{}={other:?} is not cpu, alloc, heap, calls or methods", settings::MODE));
            }
        };
        let out = get(settings::OUT).map(PathBuf::from).ok_or_else(|| format!("{} is not set", settings::OUT))?;
        let interval_ms = number(settings::INTERVAL_MS, settings::INTERVAL_MS_RANGE)?.unwrap_or(10);
        let clock = match get(settings::CLOCK) {
            Some("wall") | None => Clock::Wall,
            Some("cpu") => Clock::Cpu,
            Some(other) => return Err(format!("{}={other:?} is not wall or cpu", settings::CLOCK)),
        };
        let sampler = match get(settings::SAMPLER) {
            None => None,
            Some("signal") => Some(Sampler::Signal),
            Some("suspend") => Some(Sampler::Suspend),
            Some(other) => return Err(format!("{}={other:?} is not signal or suspend", settings::SAMPLER)),
        };
        let duration_ms = number(settings::DURATION_MS, settings::DURATION_MS_RANGE)?;
        if get(settings::NATIVE) == Some("1") && (mode != Mode::Cpu || sampler == Some(Sampler::Suspend)) {
            return Err(format!(
                "{}=1 is for the cpu mode's signal sampler (native frames are read in its signal handler)",
                settings::NATIVE
            ));
        }
        Ok(Settings { mode, out, interval_ms, clock, sampler, duration_ms, pairs })
    }
}

/// The `CORPROF_RECORD_*` variables of the environment, checked ([`settings::from_env`]: other
/// variables are not read, whatever their bytes).
fn env_pairs() -> std::result::Result<HashMap<String, String>, String> {
    settings::from_env()
}

/// An attach's client data: `KEY=VALUE` pairs separated by `;` or newlines (blank ones skipped).
pub fn parse_client_data(data: &[u8]) -> std::result::Result<Vec<(String, String)>, String> {
    let text = std::str::from_utf8(data).map_err(|e| format!("the client data is not UTF-8: {e}"))?;
    text.split([';', '\n'])
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => Ok((key.trim().to_string(), value.trim().to_string())),
            None => Err(format!("{pair:?} in the client data is not KEY=VALUE")),
        })
        .collect()
}

/// What a mode's `start` gets.
pub struct Context<'a> {
    pub info: &'a ProfilerInfo,
    pub settings: &'a Settings,
    pub threads: Arc<ThreadNames>,
    /// Started by an attach (the event mask must then stay within what attach allows).
    pub attached: bool,
}

/// A started mode: its recording and the events it needs (the library adds its own).
pub struct Started {
    pub recording: Box<dyn Recording>,
    pub events: COR_PRF_MONITOR,
    pub events_high: COR_PRF_HIGH_MONITOR,
}

/// A mode's recording. The library forwards to it the callbacks a mode may need (see the
/// `CorProfilerCallback` impl below: allocations and the GC's); add a forwarding line there for
/// any other.
pub trait Recording: CorProfilerCallback + Send + Sync {
    /// Stops recording (joins the mode's threads) and writes the result to `out`, completely
    /// before the file appears under that name, and only over a regular file
    /// ([`write_atomically`]). Called at most once;
    /// dropping a recording unfinished must stop its threads too.
    fn finish(&self, out: &Path) -> std::io::Result<()>;

    /// Called once the runtime has taken the event mask (some things, like an EventPipe session
    /// whose events must reach the profiler, only work after); an error fails the start.
    fn after_mask(&self) -> std::result::Result<(), String> {
        Ok(())
    }

    /// The calls mode, whose enter/leave hooks the library (the hooks' owner) forwards to it.
    fn calls(&self) -> Option<&calls::CallsMode> {
        None
    }

    /// What was recorded so far, for the command's live line: counts and what each counts
    /// (`(1234, "calls")`). Called about once a second from the watch thread, so it must not
    /// slow the app's threads (read counters, take an uncontended lock briefly). The cpu mode's
    /// samplers count in `progress.rs` instead.
    fn progress(&self) -> Vec<(u64, &'static str)> {
        Vec::new()
    }
}

/// Starts the mode the settings name.
fn start_mode(ctx: &Context<'_>) -> std::result::Result<Started, String> {
    match ctx.settings.mode {
        Mode::Cpu => start_cpu(ctx),
        Mode::Alloc => modes::alloc(ctx),
        Mode::Heap => modes::heap(ctx),
        Mode::Calls => modes::calls(ctx),
        Mode::Methods => methods::start(ctx),
    }
}

/// Starts the cpu mode with the sampler asked for, or the default one.
fn start_cpu(ctx: &Context<'_>) -> std::result::Result<Started, String> {
    match ctx.settings.sampler.unwrap_or_default() {
        Sampler::Suspend => cpu::start(ctx),
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        Sampler::Signal => match signal::start(ctx) {
            Ok(started) => Ok(started),
            // Not asked for by name: the suspension sampler serves instead (its line says so),
            // unless native frames were asked for, which only the signal sampler reads.
            Err(why) if ctx.settings.sampler.is_none() && !ctx.settings.native() => {
                eprintln!("corprof: the signal sampler cannot start ({why}); sampling by suspension");
                cpu::start(ctx)
            }
            Err(why) => Err(why),
        },
        #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
        Sampler::Signal => Err(format!("{}=signal: the signal sampler works on Linux x86-64 only", settings::SAMPLER)),
    }
}

/// Writes `text` to `path` through a new file beside it renamed into place, so a reader that
/// sees the file sees all of it; `path` must name nothing yet or a regular file (or a symlink to
/// one): [`corprof_record::files::replace`].
pub fn write_atomically(path: &Path, text: &[u8]) -> std::io::Result<()> {
    files::replace(path, text)
}

/// The runtime's name and version, `CoreCLR 8.0.4`. CoreCLR 3.1 reports the desktop-era
/// `v4.0.30319` through GetRuntimeInformation, so before .NET 5 the version is the name of the
/// folder libcoreclr.so was loaded from (`shared/Microsoft.NETCore.App/3.1.23/`), when that
/// reads as a version (a self-contained app's folder does not).
fn runtime_name(info: &ProfilerInfo) -> String {
    match info.get_runtime_information() {
        Ok(rt) if rt.major_version >= 5 && !rt.version_string.is_empty() => format!("CoreCLR {}", rt.version_string),
        _ => match std::fs::read_to_string("/proc/self/maps").ok().as_deref().and_then(version_from_maps) {
            Some(version) => format!("CoreCLR {version}"),
            None => "CoreCLR".to_string(),
        },
    }
}

/// The version folder of the `libcoreclr.so` mapped in `maps` (the text of `/proc/self/maps`).
fn version_from_maps(maps: &str) -> Option<String> {
    let path = maps.lines().filter_map(|l| l.split_whitespace().nth(5)).find(|p| p.ends_with("/libcoreclr.so"))?;
    let folder = Path::new(path).parent()?.file_name()?.to_str()?;
    let looks_like_one = folder.starts_with(|c: char| c.is_ascii_digit())
        && folder.contains('.')
        && folder.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    looks_like_one.then(|| folder.to_string())
}

/// `out` with `suffix` added (the `.error`, `.detached` and `.stats` files beside it).
pub(crate) fn beside(out: &Path, suffix: &str) -> PathBuf {
    let mut path = out.as_os_str().to_owned();
    path.push(suffix);
    PathBuf::from(path)
}

/// The profiler. Crate-private: its callbacks trust their arguments (the EventPipe provider
/// handle, a tick's type) as coming from the runtime, so only the runtime may call them.
#[derive(Default)]
pub(crate) struct Recorder {
    threads: Arc<ThreadNames>,
    /// The runtime's Info object, for the calls mode's hooks (set before they are installed).
    info: OnceLock<ProfilerInfo>,
    /// Shared with the detach thread, which writes the result when an attach's duration ends.
    result: Arc<Result_>,
    /// The watch thread ([`Recorder::watch`]: it ends the recording early, and detaches after
    /// an attach's duration), and the sender whose drop wakes it at Shutdown.
    detacher: Mutex<Option<(Sender<()>, JoinHandle<()>)>>,
}

/// The recording and where its result goes.
#[derive(Default)]
struct Result_ {
    out: OnceLock<PathBuf>,
    recording: OnceLock<Box<dyn Recording>>,
    /// Whether the result was written (at the end of an attach's duration, or at Shutdown).
    finished: Mutex<bool>,
}

impl Result_ {
    /// Writes the result once (later calls do nothing).
    fn finish(&self) {
        let Ok(mut finished) = self.finished.lock() else { return };
        if *finished {
            return;
        }
        *finished = true;
        if let (Some(recording), Some(out)) = (self.recording.get(), self.out.get())
            && let Err(e) = recording.finish(out)
        {
            eprintln!("corprof: {e}");
        }
    }
}

impl Recorder {
    /// Starts recording with `pairs` (or says why they could not be read); on failure writes
    /// why to `<OUT>.error` and says it on stderr.
    fn start(
        &self,
        unknown: &IUnknown,
        pairs: std::result::Result<HashMap<String, String>, String>,
        attached: bool,
    ) -> Result<()> {
        // Where to say why the start failed: beside OUT as given (or, when the settings did not
        // read, as the environment has it), if it is a path that may be written at all — beside
        // a refused one (`/dev/null`) nothing is written.
        let out = match &pairs {
            Ok(pairs) => pairs.get(settings::OUT).cloned(),
            Err(_) => std::env::var_os(settings::OUT).and_then(|v| v.into_string().ok()),
        };
        if let Some(out) = out.filter(|out| settings::check(settings::OUT, out).is_ok()).map(PathBuf::from)
            && files::check_output(&out).is_ok()
        {
            let _ = self.result.out.set(out);
        }
        let settings = pairs.and_then(Settings::from_pairs).map_err(|why| self.refuse(&why))?;
        // Before anything runs: the recording would be lost at the end (or, for a device, the
        // device replaced by a file).
        files::check_output(&settings.out).map_err(|e| self.refuse(&e.to_string()))?;
        let info = ProfilerInfo::from_unknown(unknown)?;
        // For the output's title; a title without the runtime is no reason to stop recording.
        let _ = files::replace(
            &beside(&settings.out, settings::RUNTIME_SUFFIX),
            format!("{}\n", runtime_name(&info)).as_bytes(),
        );
        let ctx = Context { info: &info, settings: &settings, threads: Arc::clone(&self.threads), attached };
        progress::reset();
        let started = start_mode(&ctx).map_err(|why| self.refuse(&why))?;
        let mut events = started.events | COR_PRF_MONITOR::THREADS;
        if attached {
            events &= COR_PRF_MONITOR::ALLOWABLE_AFTER_ATTACH;
        }
        let masked = if started.events_high.0 == 0 {
            info.set_event_mask(events)
        } else {
            info.set_event_mask2(events, started.events_high)
        };
        if let Err(e) = masked {
            drop(started.recording); // stops it
            return Err(self.refuse(&format!("the runtime refused the event mask: {}", e.describe())));
        }
        if let Err(why) = started.recording.after_mask() {
            drop(started.recording);
            return Err(self.refuse(&why));
        }
        let _ = self.result.recording.set(started.recording);
        let _ = self.info.set(info.clone());
        if self.calls().is_some() {
            // After the mask: install adds the hooks' bits to the mask it finds.
            corprof::hooks::install(self, &info, corprof::HookMode::Fast)
                .map_err(|e| self.refuse(&format!("the runtime refused the enter/leave hooks: {}", e.describe())))?;
        }
        if !attached && let Err(why) = stop::hold_sigint() {
            eprintln!("corprof: {why}; a SIGINT to the app will end it without its recording");
        }
        let duration = settings.duration_ms.filter(|_| attached).map(Duration::from_millis);
        let live = settings.pairs.get(settings::PROGRESS).is_some_and(|v| v == "1").then_some(settings.mode);
        self.watch(duration, info, attached, live);
        Ok(())
    }

    fn calls(&self) -> Option<&calls::CallsMode> {
        self.result.recording.get()?.calls()
    }

    /// Says why the profiler does not start, and gives the error Initialize returns.
    fn refuse(&self, why: &str) -> HResult {
        eprintln!("corprof: {why}");
        if let Some(out) = self.result.out.get() {
            let _ = files::replace(&beside(out, ".error"), format!("{why}\n").as_bytes());
        }
        HResult::E_FAIL
    }

    /// Starts the thread that ends the recording early: when the command asks (it creates
    /// `<OUT>.stop`), when an attach's `duration` ends, or at a SIGINT ([`stop`]). It writes the
    /// result and, attached, asks the runtime to detach this profiler; at Shutdown it is woken
    /// and ends (Shutdown writes the result itself). With `live` (the mode recording) it
    /// also writes the counts so far beside the output until then, from its start.
    fn watch(&self, duration: Option<Duration>, info: ProfilerInfo, attached: bool, live: Option<Mode>) {
        let (wake, woken) = std::sync::mpsc::channel::<()>();
        let result = Arc::clone(&self.result);
        let deadline = duration.map(|d| std::time::Instant::now() + d);
        let thread = std::thread::spawn(move || {
            let stop_file = result.out.get().map(|out| beside(out, settings::STOP_SUFFIX));
            let progress_file =
                live.and_then(|mode| result.out.get().map(|out| (mode, beside(out, settings::PROGRESS_SUFFIX))));
            let mut written: Option<std::time::Instant> = None;
            loop {
                if let Some((mode, file)) = &progress_file
                    && written.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY)
                {
                    written = Some(std::time::Instant::now());
                    let counts = match (mode, result.recording.get()) {
                        (Mode::Cpu, _) => progress::cpu(),
                        (_, Some(recording)) => recording.progress(),
                        (_, None) => Vec::new(),
                    };
                    // Only a live line is lost if it cannot be written.
                    let _ = files::replace(file, progress::text(&counts).as_bytes());
                }
                // A short wait: the command's request and a SIGINT are seen within it.
                let wait = deadline.map_or(WATCH_POLL, |d| d.saturating_duration_since(std::time::Instant::now()));
                if !matches!(woken.recv_timeout(wait.min(WATCH_POLL)), Err(RecvTimeoutError::Timeout)) {
                    return; // Shutdown came first and writes the result itself.
                }
                let asked = stop_file.as_ref().is_some_and(|f| f.exists());
                let ended = deadline.is_some_and(|d| std::time::Instant::now() >= d);
                if asked || ended || stop::sigint_pending() {
                    break;
                }
            }
            result.finish();
            stop::release_sigint();
            if !attached {
                return;
            }
            if let Err(e) = info.request_profiler_detach(DETACH_EXPECTED_MS) {
                // The runtime keeps a profiler that rewrote IL (the methods mode) loaded for
                // good: the command is told so instead of waiting for a detach.
                let why = format!("the runtime refused to detach the profiler: {}", e.describe());
                eprintln!("corprof: {why}");
                if let Some(out) = result.out.get() {
                    let _ = files::replace(&beside(out, settings::STAYS_SUFFIX), format!("{why}\n").as_bytes());
                }
            }
        });
        if let Ok(mut detacher) = self.detacher.lock() {
            *detacher = Some((wake, thread));
        }
    }

    /// Wakes the detach thread (if it still waits) and joins it.
    fn stop_detacher(&self) {
        let taken = self.detacher.lock().ok().and_then(|mut d| d.take());
        if let Some((wake, thread)) = taken {
            drop(wake);
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

impl CorProfilerCallback for Recorder {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.start(unknown, env_pairs(), false)
    }

    fn initialize_for_attach(&self, unknown: &IUnknown, client_data: &[u8]) -> Result<()> {
        let pairs = parse_client_data(client_data).and_then(|given| {
            let mut pairs = env_pairs()?;
            pairs.extend(given);
            Ok(pairs)
        });
        self.start(unknown, pairs, true)
    }

    fn thread_name_changed(&self, thread_id: ThreadID, name: Option<WStr<'_>>) -> Result<()> {
        self.threads.name_changed(thread_id, name);
        Ok(())
    }

    fn thread_created(&self, thread_id: ThreadID) -> Result<()> {
        self.threads.created(thread_id);
        Ok(())
    }

    fn thread_assigned_to_os_thread(&self, thread_id: ThreadID, os_thread: corprof::types::DWORD) -> Result<()> {
        self.threads.assigned_to_os_thread(thread_id, os_thread);
        self.result.recording.get().map_or(Ok(()), |r| r.thread_assigned_to_os_thread(thread_id, os_thread))
    }

    fn thread_destroyed(&self, thread_id: ThreadID) -> Result<()> {
        // The recording first: it may want the thread's name, which the table then forgets.
        let forwarded = self.result.recording.get().map_or(Ok(()), |r| r.thread_destroyed(thread_id));
        self.threads.destroyed(thread_id);
        forwarded
    }

    fn shutdown(&self) -> Result<()> {
        self.stop_detacher();
        self.result.finish();
        // A SIGINT that came while the app was ending goes on now, as it would have.
        stop::release_sigint();
        Ok(())
    }

    fn profiler_detach_succeeded(&self) -> Result<()> {
        self.stop_detacher();
        // Tells the command the detach is done (it waits for this after the recording).
        if let Some(out) = self.result.out.get() {
            let _ = files::replace(&beside(out, ".detached"), b"");
        }
        Ok(())
    }

    // Forwarded to the mode's recording (see `Recording`).

    fn object_allocated(&self, object_id: LiveObject<'_>, class_id: ClassID) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| r.object_allocated(object_id, class_id))
    }

    fn garbage_collection_started(
        &self,
        generation_collected: &[corprof::types::BOOL],
        reason: corprof::types::COR_PRF_GC_REASON,
    ) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| r.garbage_collection_started(generation_collected, reason))
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| r.garbage_collection_finished())
    }

    fn object_references(&self, object_id: LiveObject<'_>, class_id: ClassID, refs: &[LiveObject<'_>]) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| r.object_references(object_id, class_id, refs))
    }

    fn root_references2(
        &self,
        root_ref_ids: &[LiveObject<'_>],
        root_kinds: &[corprof::types::COR_PRF_GC_ROOT_KIND],
        root_flags: &[corprof::types::COR_PRF_GC_ROOT_FLAGS],
        root_ids: &[corprof::types::UINT_PTR],
    ) -> Result<()> {
        self.result
            .recording
            .get()
            .map_or(Ok(()), |r| r.root_references2(root_ref_ids, root_kinds, root_flags, root_ids))
    }

    fn event_pipe_event_delivered(
        &self,
        provider: corprof::types::EVENTPIPE_PROVIDER,
        event_id: u32,
        event_version: u32,
        metadata_blob: &[u8],
        event_data: &[u8],
        activity_id: Option<&corprof::GUID>,
        related_activity_id: Option<&corprof::GUID>,
        event_thread: ThreadID,
        stack_frames: &[corprof::types::UINT_PTR],
    ) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| {
            r.event_pipe_event_delivered(
                provider,
                event_id,
                event_version,
                metadata_blob,
                event_data,
                activity_id,
                related_activity_id,
                event_thread,
                stack_frames,
            )
        })
    }

    fn exception_thrown(&self, thrown: LiveObject<'_>) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| r.exception_thrown(thrown))
    }

    fn exception_unwind_function_enter(&self, function_id: corprof::types::FunctionID) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| r.exception_unwind_function_enter(function_id))
    }

    fn exception_unwind_function_leave(&self) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| r.exception_unwind_function_leave())
    }

    fn exception_catcher_enter(
        &self,
        function_id: corprof::types::FunctionID,
        object_id: LiveObject<'_>,
    ) -> Result<()> {
        self.result.recording.get().map_or(Ok(()), |r| r.exception_catcher_enter(function_id, object_id))
    }
}

/// The calls mode's hooks: the library owns them (they are installed on the exported type) and
/// hands each call to the mode; the other modes install none.
impl corprof::FunctionHooks for Recorder {
    type Data = u32;

    fn map_function(&self, function: corprof::types::FunctionID) -> Option<u32> {
        let info = self.info.get()?;
        self.calls()?.map_function(info, function)
    }

    fn enter(&self, function: u32, _frame: &corprof::hooks::HookFrame<'_>) {
        if let Some(calls) = self.calls() {
            calls.enter(function);
        }
    }

    fn leave(&self, _function: u32, _frame: &corprof::hooks::HookFrame<'_>) {
        if let Some(calls) = self.calls() {
            calls.leave();
        }
    }

    fn tailcall(&self, _function: u32, _frame: &corprof::hooks::HookFrame<'_>) {
        if let Some(calls) = self.calls() {
            calls.leave();
        }
    }
}

corprof::export_profiler!(Recorder, CLSID);

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> HashMap<String, String> {
        v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn settings_have_defaults_and_refuse_bad_values() {
        let s = Settings::from_pairs(pairs(&[(settings::OUT, "/tmp/x")])).unwrap();
        assert_eq!((s.mode, s.interval_ms, s.clock, s.duration_ms), (Mode::Cpu, 10, Clock::Wall, None));
        assert_eq!(s.sampler, None);
        let default =
            if cfg!(all(target_os = "linux", target_arch = "x86_64")) { Sampler::Signal } else { Sampler::Suspend };
        assert_eq!(Sampler::default(), default);
        let s = Settings::from_pairs(pairs(&[
            (settings::OUT, "/tmp/x"),
            (settings::MODE, "heap"),
            (settings::CLOCK, "cpu"),
            (settings::INTERVAL_MS, "5"),
            (settings::DURATION_MS, "2000"),
        ]))
        .unwrap();
        assert_eq!((s.mode, s.interval_ms, s.clock, s.duration_ms), (Mode::Heap, 5, Clock::Cpu, Some(2000)));
        assert!(Settings::from_pairs(pairs(&[])).unwrap_err().contains("CORPROF_RECORD_OUT is not set"));
        let bad = |k, v| Settings::from_pairs(pairs(&[(settings::OUT, "/tmp/x"), (k, v)])).unwrap_err();
        assert!(bad(settings::MODE, "gpu").contains("not cpu, alloc, heap, calls or methods"));
        assert!(bad(settings::INTERVAL_MS, "ten").contains("is not a number"));
        for out_of_range in ["0", "60001", "4294967295"] {
            let e = bad(settings::INTERVAL_MS, out_of_range);
            assert!(e.contains("is out of range: give a whole number of milliseconds from 1 to 60000"), "{e}");
        }
        assert!(bad(settings::CLOCK, "sun").contains("not wall or cpu"));
        assert!(bad(settings::SAMPLER, "perf").contains("not signal or suspend"));
        let s = Settings::from_pairs(pairs(&[(settings::OUT, "/tmp/x"), (settings::SAMPLER, "suspend")])).unwrap();
        assert_eq!(s.sampler, Some(Sampler::Suspend));
        assert!(bad(settings::ALLOC, "some").contains("not sampled or exact"));
        assert!(bad(settings::DURATION_MS, "0").contains("out of range"));
        assert!(bad("CORPROF_RECORD_INTERVAL", "5").contains("is not a setting of corprof record"));
    }

    #[test]
    fn native_frames_are_for_the_signal_sampler_only() {
        let with = |extra: &[(&str, &str)]| {
            let mut v = vec![(settings::OUT, "/tmp/x"), (settings::NATIVE, "1")];
            v.extend_from_slice(extra);
            Settings::from_pairs(pairs(&v))
        };
        assert!(with(&[]).unwrap().native());
        assert!(with(&[(settings::SAMPLER, "signal")]).unwrap().native());
        for refused in [(settings::SAMPLER, "suspend"), (settings::MODE, "alloc")] {
            let why = with(&[refused]).unwrap_err();
            assert!(why.contains("CORPROF_RECORD_NATIVE=1 is for the cpu mode's signal sampler"), "{why}");
        }
        let off = Settings::from_pairs(pairs(&[(settings::OUT, "/tmp/x"), (settings::NATIVE, "0")])).unwrap();
        assert!(!off.native());
        assert!(Settings::from_pairs(pairs(&[(settings::OUT, "/tmp/x"), (settings::NATIVE, "yes")])).is_err());
    }

    #[test]
    fn the_runtime_version_is_the_folder_libcoreclr_came_from() {
        let maps = "7f00-7f01 r-xp 00000000 08:01 42 /opt/dotnet/shared/Microsoft.NETCore.App/3.1.23/libclrjit.so\n\
                    7f02-7f03 r-xp 00000000 08:01 43 /opt/dotnet/shared/Microsoft.NETCore.App/3.1.23/libcoreclr.so\n";
        assert_eq!(version_from_maps(maps).as_deref(), Some("3.1.23"));
        // A self-contained app's folder is no version.
        assert_eq!(version_from_maps("7f02-7f03 r-xp 0 08:01 43 /srv/myapp/libcoreclr.so\n"), None);
        assert_eq!(version_from_maps("7f02-7f03 r-xp 0 08:01 43 /srv/v1.0/libcoreclr.so\n"), None);
        assert_eq!(version_from_maps(""), None);
    }

    #[test]
    fn client_data_is_key_value_pairs() {
        assert_eq!(
            parse_client_data(b"A=1; B = /tmp/a b\n;").unwrap(),
            vec![("A".to_string(), "1".to_string()), ("B".to_string(), "/tmp/a b".to_string())]
        );
        assert!(parse_client_data(b"oops").is_err());
    }
}
