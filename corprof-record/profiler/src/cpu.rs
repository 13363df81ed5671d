//! The cpu mode: a sampler thread of the profiler's own that, every `INTERVAL_MS`, suspends the
//! runtime (corprof's [`Suspension`](corprof::Suspension) guard), walks every managed thread's
//! stack, resumes, and adds one sample per thread to a [`Profile`] in samples.
//!
//! Each stack is rooted at `[thread <name>]` (the name from ThreadNameChanged, else the OS thread
//! ID), then the frames outermost first as `Namespace.Type::Method`, a run of native frames as one
//! `[native]`. With the wall clock every thread counts once per tick; with the cpu clock a thread
//! counts by the CPU time it used since the last tick (its per-thread CPU clock), in whole ticks,
//! the remainder carried to the next tick so nothing is lost to rounding.

use crate::frames::{self, Frame};
use crate::pauses::Pauses;
use crate::{Clock, Context, Recording, Started, write_atomically};
use corprof::names::FunctionNames;
use corprof::sync::lock;
use corprof::threads::ThreadNames;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID};
use corprof::{CorProfilerCallback, FrameContext, ProfilerInfo};
use corprof_record::profile::{Profile, Unit};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// More distinct names than this and the name cache starts over (bounded memory with collectible
/// code that keeps making new methods).
const MAX_CACHED_NAMES: usize = 100_000;
/// More distinct stacks than this and new ones are counted under `[thread …];[truncated]`.
pub(crate) const MAX_STACKS: usize = 200_000;
/// Frames kept per stack (the outermost ones are dropped beyond it).
const MAX_DEPTH: usize = 512;

/// The sampler's stop signal: its wait for the next tick ends as soon as it is raised (at
/// Shutdown, at an attach's end, or when the recording is dropped), whatever the interval —
/// a plain sleep would hold Shutdown, and so the app's exit, for up to an interval.
#[derive(Default)]
pub(crate) struct Stop {
    stopped: Mutex<bool>,
    raised: Condvar,
}

impl Stop {
    fn lock(&self) -> MutexGuard<'_, bool> {
        lock(&self.stopped)
    }

    pub(crate) fn raise(&self) {
        *self.lock() = true;
        self.raised.notify_all();
    }

    pub(crate) fn is_raised(&self) -> bool {
        *self.lock()
    }

    /// Waits until `deadline` or the stop, whichever comes first; `true` if stopped.
    pub(crate) fn wait_until(&self, deadline: Instant) -> bool {
        let mut stopped = self.lock();
        while !*stopped {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            stopped = self.raised.wait_timeout(stopped, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
        *stopped
    }
}

/// Starts the sampler thread.
pub(crate) fn start(ctx: &Context<'_>) -> Result<Started, String> {
    let stop = Arc::new(Stop::default());
    let sampler = Sampler {
        info: ctx.info.clone(),
        interval: Duration::from_millis(ctx.settings.interval_ms),
        clock: ctx.settings.clock,
        threads: Arc::clone(&ctx.threads),
        stop: Arc::clone(&stop),
        walk: ctx.settings.pairs.get(corprof_record::settings::CPU_WALK).is_none_or(|v| v != "0"),
    };
    let thread = std::thread::Builder::new()
        .name("corprof-sampler".to_string())
        .spawn(move || sampler.run())
        .map_err(|e| format!("cannot start the sampler thread: {e}"))?;
    Ok(Started {
        recording: Box::new(Cpu { stop, thread: Mutex::new(Some(thread)) }),
        events: COR_PRF_MONITOR::ENABLE_STACK_SNAPSHOT,
        events_high: COR_PRF_HIGH_MONITOR(0),
    })
}

/// The running cpu recording.
struct Cpu {
    stop: Arc<Stop>,
    thread: Mutex<Option<JoinHandle<(Profile, Pauses)>>>,
}

impl Cpu {
    /// Stops the sampler and takes what it recorded (`None` if it already stopped or panicked).
    fn stop(&self) -> Option<(Profile, Pauses)> {
        self.stop.raise();
        let thread = self.thread.lock().ok()?.take()?;
        thread.join().ok()
    }
}

impl CorProfilerCallback for Cpu {}

impl Recording for Cpu {
    fn finish(&self, out: &Path) -> std::io::Result<()> {
        let (profile, pauses) = self.stop().ok_or_else(|| std::io::Error::other("the sampler thread failed"))?;
        // Before the profile, whose appearance tells the command the recording is complete.
        let mut stats = out.as_os_str().to_owned();
        stats.push(corprof_record::settings::STATS_SUFFIX);
        write_atomically(Path::new(&stats), format!("cpu: {}\n", pauses.summary()).as_bytes())?;
        write_atomically(out, profile.to_text().as_bytes())
    }
}

impl Drop for Cpu {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The sampler thread's state.
struct Sampler {
    info: ProfilerInfo,
    interval: Duration,
    clock: Clock,
    threads: Arc<ThreadNames>,
    stop: Arc<Stop>,
    /// `false`: suspend and resume only (the runtime's own share of the pause, for benchmarks).
    walk: bool,
}

/// One thread's stack as walked: its OS ID, its name if it has one, frames innermost first
/// (`None` for a run of native frames), or no frames if the runtime refused the walk.
struct Walked {
    os_id: u32,
    name: Option<String>,
    frames: Option<Vec<Frame>>,
    /// cpu clock: the thread's CPU time, read while it was stopped where `frames` caught it.
    cpu_ns: Option<u64>,
}

impl Sampler {
    fn run(self) -> (Profile, Pauses) {
        // Whether the runtime's per-thread state for this thread is made: made up front rather
        // than lazily inside a later call, where making it could wait on a lock a suspension
        // holds (ICorProfilerInfo4::InitializeCurrentThread exists for that). Tried each tick
        // until it works (the runtime may not have started at the first).
        let mut thread_ready = false;
        let mut profile = Profile::new(Unit::Samples);
        let mut pauses = Pauses::default();
        let mut names = Names::new(&self.info);
        let mut cpu = CpuClocks::default();
        let mut next = Instant::now() + self.interval;
        while !self.stop.is_raised() {
            if self.stop.wait_until(next) {
                break;
            }
            // A late tick is taken once; the ones it overran are skipped, not caught up.
            next = next.max(Instant::now()) + self.interval;
            if !thread_ready {
                thread_ready = self.info.initialize_current_thread().is_ok();
            }
            // A suspension refused (before the runtime has started, or while another is held):
            // no tick, the clocks run on to the next.
            let paused = Instant::now();
            let Some(walked) = self.walk_all() else { continue };
            pauses.add(paused.elapsed());
            for thread in walked {
                let Some(frames) = &thread.frames else {
                    // No stack to give this tick's time to: a thread the runtime will not walk
                    // (some of its own threads, always refused) is left out; with the cpu clock
                    // its time waits for a tick that walks it.
                    cpu.keep(thread.os_id);
                    continue;
                };
                let weight = match self.clock {
                    Clock::Wall => 1,
                    Clock::Cpu => thread.cpu_ns.map_or(0, |now| cpu.ticks(thread.os_id, now, self.interval)),
                };
                if weight == 0 {
                    continue;
                }
                let stack = self.stack(&thread, frames, &mut names);
                let stack = if profile.stacks.len() >= MAX_STACKS && !profile.stacks.contains_key(&stack) {
                    vec![stack[0].clone(), "[truncated]".to_string()]
                } else {
                    stack
                };
                profile.add(&stack, weight, 0);
                crate::progress::add_samples(weight);
            }
            if self.clock == Clock::Cpu {
                cpu.forget_unseen();
            }
        }
        (profile, pauses)
    }

    /// Suspends the runtime, walks every managed thread, resumes: `None` if the runtime refuses
    /// the suspension or the thread list.
    fn walk_all(&self) -> Option<Vec<Walked>> {
        let suspension = self.info.suspend_runtime().ok()?;
        if !self.walk {
            return Some(Vec::new());
        }
        let threads = suspension.threads().ok()?;
        let mut walked = Vec::new();
        for thread in threads {
            let mut frames: Vec<Frame> = Vec::new();
            let result = suspension.walk(thread, FrameContext::Without, |frame| {
                frames::push(&mut frames, frame.function_id());
                if frames.len() >= MAX_DEPTH { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            });
            let os_id = suspension.os_thread_id(thread).unwrap_or(0);
            let frames = result.is_ok().then_some(frames);
            let cpu_ns = if self.clock == Clock::Cpu { thread_cpu_ns(os_id) } else { None };
            walked.push(Walked { os_id, name: self.threads.name(thread.id()).map(|n| n.to_string()), frames, cpu_ns });
        }
        Some(walked)
        // the runtime resumes here, as the suspension drops
    }

    /// `[thread <name>]` then the frames, outermost first.
    fn stack(&self, thread: &Walked, frames: &[Frame], names: &mut Names) -> Vec<String> {
        let root = match &thread.name {
            Some(name) => format!("[thread {name}]"),
            None => format!("[thread {}]", thread.os_id),
        };
        std::iter::once(root).chain(frames::folded(frames, |function| names.name(function))).collect()
    }
}

/// `Namespace.Type::Method` names of functions, through corprof's cached [`FunctionNames`].
pub(crate) struct Names(FunctionNames);

impl Names {
    pub(crate) fn new(info: &ProfilerInfo) -> Self {
        Names(FunctionNames::with_capacity(info.clone(), MAX_CACHED_NAMES))
    }

    pub(crate) fn name(&mut self, function: FunctionID) -> String {
        match self.0.get(function) {
            Ok(name) => name.short.to_string(),
            Err(e) => format!("[unknown function: {}]", e.describe()),
        }
    }
}

/// The cpu clock: each thread's CPU time at the last tick and the part of a tick not yet counted.
#[derive(Default)]
struct CpuClocks {
    /// OS thread ID → (CPU nanoseconds at the last tick, uncounted nanoseconds, seen this tick).
    threads: HashMap<u32, (u64, u64, bool)>,
}

impl CpuClocks {
    /// How many whole `interval`s of CPU time `tid` used since the last tick, its CPU clock
    /// being at `now` (0 the first time a thread is seen: its earlier time was not sampled).
    fn ticks(&mut self, tid: u32, now: u64, interval: Duration) -> u64 {
        let interval = interval.as_nanos().max(1) as u64;
        let entry = self.threads.entry(tid).or_insert((now, 0, true));
        let used = now.saturating_sub(entry.0);
        let pending = entry.1 + used;
        *entry = (now, pending % interval, true);
        pending / interval
    }

    /// Keeps `tid`'s clock as it is (its time since the last tick is counted at a later one).
    fn keep(&mut self, tid: u32) {
        if let Some(entry) = self.threads.get_mut(&tid) {
            entry.2 = true;
        }
    }

    /// Drops the threads not seen since the last call (they ended), and starts a new tick.
    fn forget_unseen(&mut self) {
        self.threads.retain(|_, (_, _, seen)| std::mem::take(seen));
    }
}

/// The CPU time `tid` (a thread of this process) has used, from its per-thread CPU clock.
pub(crate) fn thread_cpu_ns(tid: u32) -> Option<u64> {
    let clock = thread_cpu_clock(tid)?;
    let mut time = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `time` is a valid, writable timespec; an unknown clock makes the call fail with
    // EINVAL (a thread that has ended), which is answered as None.
    let rc = unsafe { libc::clock_gettime(clock, &mut time) };
    (rc == 0).then(|| time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64)
}

/// The clock ID of `tid`'s CPU clock (a thread of this process), `None` for an ID no thread has.
pub(crate) fn thread_cpu_clock(tid: u32) -> Option<libc::clockid_t> {
    // Beyond 2^28 the shift below would overflow into another clock's ID (Linux TIDs stay
    // below 2^22).
    if tid == 0 || tid >= 1 << 28 {
        return None;
    }
    // The kernel's clock ID for a thread's CPU clock (include/linux/posix-timers.h,
    // MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)): the bitwise NOT of the TID shifted left by 3,
    // with CPUCLOCK_PERTHREAD_MASK (4) and CPUCLOCK_SCHED (2). It is what glibc's
    // pthread_getcpuclockid builds, reachable here from the OS thread ID alone.
    Some(((!(tid as libc::clockid_t)) << 3) | 4 | 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_threads_cpu_clock_moves_with_work() {
        // The main thread's TID is the process ID; no thread has a TID above pid_max (2^22).
        assert!(thread_cpu_ns(std::process::id()).is_some());
        assert!(thread_cpu_ns((1 << 22) + 1).is_none());
        assert!(thread_cpu_ns(u32::MAX >> 1).is_none());
        // The test's own thread: spin for 30 ms of CPU and see its clock get there.
        // SAFETY: gettid takes no arguments.
        let me = unsafe { libc::gettid() } as u32;
        let start = thread_cpu_ns(me).unwrap();
        let wall = Instant::now();
        while thread_cpu_ns(me).unwrap() - start < 30_000_000 {
            assert!(wall.elapsed() < Duration::from_secs(10), "the CPU clock does not move");
        }
    }

    #[test]
    fn a_stop_ends_the_wait_at_once() {
        let stop = Arc::new(Stop::default());
        let far = Instant::now() + Duration::from_secs(3600);
        let waiter = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let started = Instant::now();
                (stop.wait_until(far), started.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        stop.raise();
        let (stopped, waited) = waiter.join().unwrap();
        assert!(stopped && waited < Duration::from_secs(10), "{waited:?}");
        assert!(stop.wait_until(far), "a raised stop does not wait");
        let short = Stop::default();
        assert!(!short.wait_until(Instant::now() + Duration::from_millis(20)), "the deadline ends it");
    }

    #[test]
    fn cpu_ticks_carry_the_remainder() {
        let mut clocks = CpuClocks::default();
        let me = unsafe { libc::gettid() } as u32; // SAFETY: gettid takes no arguments.
        let ticks = |clocks: &mut CpuClocks| clocks.ticks(me, thread_cpu_ns(me).unwrap(), Duration::from_millis(10));
        assert_eq!(ticks(&mut clocks), 0, "first sight counts nothing");
        let start = thread_cpu_ns(me).unwrap();
        while thread_cpu_ns(me).unwrap() - start < 25_000_000 {}
        let counted = ticks(&mut clocks);
        assert!((2..=3).contains(&counted), "{counted}");
        clocks.forget_unseen();
        assert_eq!(clocks.threads.len(), 1);
        clocks.forget_unseen();
        assert!(clocks.threads.is_empty(), "a thread not seen in a tick is forgotten");
    }
}
