//! methods: the methods the `METHODS` patterns name, wrapped by `corprof::instrument` with a
//! handler that times each call; the result is a [`MethodsReport`].
//!
//! The handler's work per call is two clock reads ([`Clock`]) and two atomic additions into the
//! method's own counters (three for a call that threw): no lock, and no allocation after the
//! method's first call, whose begin makes its counters. It never blocks, so on .NET 5+ its calls skip the GC transition. The histogram of
//! the first [`MAX_HISTOGRAMS`] methods called is kept; methods called after those keep their
//! counts and longest call only (a `*` pattern over a whole framework would otherwise hold a
//! histogram for each of thousands of methods).

use crate::{Context, Recording, Started, write_atomically};
use corprof::instrument::{Call, Decision, Handler, Instrumentation, MAX_METHODS, Method, Outcome, Target};
use corprof::sync::lock;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR};
use corprof::{CorProfilerCallback, ProfilerInfo};
use corprof_record::latency::{BUCKETS, MethodLatency, MethodsReport, bucket_of};
use corprof_record::settings;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The most methods whose histograms are kept (each about 5 KiB).
pub const MAX_HISTOGRAMS: usize = 4096;
/// attach: how long the end of the recording waits for the runtime to take the wrapping back
/// before the profiler detaches anyway (its code stays loaded, and calls no handler).
const REVERT_WAIT: Duration = Duration::from_secs(10);

/// One wrapped method's counters.
struct Counters {
    name: String,
    calls: AtomicU64,
    exceptions: AtomicU64,
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
    histogram: Option<Box<[AtomicU64]>>,
}

/// Methods per chunk of the table.
const CHUNK: usize = 256;

/// The counters of [`CHUNK`] methods, each made at the method's first call.
type Chunk = Box<[OnceLock<Counters>]>;

/// Every wrapped method's counters, by the method's index (`Method::index`), in chunks made when
/// a method of theirs is first called.
struct Table {
    chunks: Box<[OnceLock<Chunk>]>,
    histograms: AtomicUsize,
}

impl Table {
    fn new() -> Table {
        Table {
            chunks: (0..MAX_METHODS.div_ceil(CHUNK)).map(|_| OnceLock::new()).collect(),
            histograms: AtomicUsize::new(0),
        }
    }

    fn counters(&self, method: &Method) -> Option<&Counters> {
        let index = method.index() as usize;
        let chunk = self.chunks.get(index / CHUNK)?.get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
        Some(chunk[index % CHUNK].get_or_init(|| {
            let keep = self.histograms.fetch_add(1, Ordering::Relaxed) < MAX_HISTOGRAMS;
            Counters::new(method.name(), keep)
        }))
    }

    /// The counters made so far.
    fn made(&self) -> impl Iterator<Item = &Counters> {
        self.chunks.iter().filter_map(OnceLock::get).flat_map(|chunk| chunk.iter()).filter_map(OnceLock::get)
    }

    /// The counters as they are now.
    fn snapshot(&self) -> Vec<MethodLatency> {
        self.made().map(Counters::latency).collect()
    }
}

impl Counters {
    fn new(name: &str, histogram: bool) -> Counters {
        Counters {
            name: name.to_string(),
            calls: AtomicU64::new(0),
            exceptions: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            histogram: histogram.then(|| (0..BUCKETS).map(|_| AtomicU64::new(0)).collect()),
        }
    }

    /// Counts a call of `ns` nanoseconds.
    fn add(&self, ns: u64, threw: bool) {
        // The calls are the histogram's counts where there is one: one atomic addition fewer.
        match &self.histogram {
            Some(h) => h[bucket_of(ns)].fetch_add(1, Ordering::Relaxed),
            None => self.calls.fetch_add(1, Ordering::Relaxed),
        };
        if threw {
            self.exceptions.fetch_add(1, Ordering::Relaxed);
        }
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        if ns > self.max_ns.load(Ordering::Relaxed) {
            self.max_ns.fetch_max(ns, Ordering::Relaxed);
        }
    }

    /// The calls ended so far.
    fn calls(&self) -> u64 {
        match &self.histogram {
            Some(h) => h.iter().map(|n| n.load(Ordering::Relaxed)).sum(),
            None => self.calls.load(Ordering::Relaxed),
        }
    }

    /// The figures as they are now.
    fn latency(&self) -> MethodLatency {
        let mut m = MethodLatency {
            name: self.name.clone(),
            calls: self.calls.load(Ordering::Relaxed),
            exceptions: self.exceptions.load(Ordering::Relaxed),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
            max_ns: self.max_ns.load(Ordering::Relaxed),
            buckets: Default::default(),
        };
        match &self.histogram {
            Some(h) => {
                for (b, n) in h.iter().enumerate() {
                    let n = n.load(Ordering::Relaxed);
                    if n > 0 {
                        m.buckets.insert(b, n);
                    }
                }
                m.calls = m.buckets.values().sum();
            }
            // No histogram: every call counted in the bucket of the longest, so the counts still
            // add up (the quantiles of such a method are its maximum).
            None if m.calls > 0 => {
                m.buckets.insert(bucket_of(m.max_ns), m.calls);
            }
            None => {}
        }
        // A call ending while this is read may be in one counter and not yet in the other.
        m.exceptions = m.exceptions.min(m.calls);
        m
    }
}

/// The clock durations are read from. On x86-64 where the kernel keeps time by the time-stamp
/// counter itself (clocksource `tsc`: constant rate, the same on every CPU), the counter is read
/// directly (`rdtsc`, about 10 ns here, against 25 ns for `clock_gettime`: BENCHMARKS.md §12) and
/// its ticks turned into nanoseconds by their rate against the monotonic clock since the start;
/// elsewhere the monotonic clock.
struct Clock {
    tsc: bool,
    epoch: Instant,
    /// The counter at `epoch`.
    tsc0: u64,
    /// Nanoseconds per tick (`f64` bits), 0 until measured.
    ns_per_tick: AtomicU64,
}

/// The shortest time over which the counter's rate is measured: over 1 ms the two clocks'
/// reads (tens of ns apart) put it within 1e-4.
const CALIBRATION: Duration = Duration::from_millis(1);

#[cfg(target_arch = "x86_64")]
fn ticks() -> u64 {
    // SAFETY: `rdtsc` reads a counter; it has no precondition and touches no memory.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn ticks() -> u64 {
    0
}

impl Clock {
    fn new() -> Clock {
        let source = corprof_record::files::read_regular(
            Path::new("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
            // sysfs says every file is a page long.
            4096,
        );
        let tsc = cfg!(target_arch = "x86_64") && matches!(source, Ok(Some(s)) if s.trim_ascii() == b"tsc");
        Clock { tsc, epoch: Instant::now(), tsc0: ticks(), ns_per_tick: AtomicU64::new(0) }
    }

    /// Now, in the clock's unit (ticks or nanoseconds).
    fn now(&self) -> u64 {
        if self.tsc { ticks() } else { u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX) }
    }

    /// The nanoseconds from `begin` to `end` (both from [`now`](Self::now)).
    fn nanoseconds(&self, begin: u64, end: u64) -> u64 {
        let span = end.saturating_sub(begin);
        if !self.tsc {
            return span;
        }
        let mut rate = f64::from_bits(self.ns_per_tick.load(Ordering::Relaxed));
        if rate == 0.0 {
            let (elapsed, counted) = (self.epoch.elapsed(), ticks().saturating_sub(self.tsc0));
            rate = elapsed.as_nanos() as f64 / counted.max(1) as f64;
            if elapsed >= CALIBRATION {
                self.ns_per_tick.store(rate.to_bits(), Ordering::Relaxed);
            }
        }
        (span as f64 * rate) as u64
    }
}

/// The handler of every pattern (they share the table and the clock).
struct Timer {
    table: Arc<Table>,
    clock: Arc<Clock>,
}

impl Handler for Timer {
    fn may_block(&self) -> bool {
        false
    }

    fn begin(&self, call: &Call<'_>) -> u64 {
        // The method's first call makes its counters here, before its clock starts (not in
        // `end`, inside the duration of a recursive caller's call).
        let _ = self.table.counters(call.method());
        self.clock.now()
    }

    fn end(&self, method: &Method, state: u64, outcome: Outcome) {
        let ns = self.clock.nanoseconds(state, self.clock.now());
        if let Some(c) = self.table.counters(method) {
            c.add(ns, outcome == Outcome::Threw);
        }
    }
}

/// Starts the methods mode: the patterns are read here (a bad one refuses the start); the
/// wrapping starts once the mask is set ([`Recording::after_mask`]), since `start` adds to the
/// mask it finds.
pub(crate) fn start(ctx: &Context<'_>) -> Result<Started, String> {
    let value = ctx
        .settings
        .pairs
        .get(settings::METHODS)
        .ok_or_else(|| format!("the methods mode needs {}: the methods to wrap", settings::METHODS))?;
    let mut instrumentation = Instrumentation::new();
    let table = Arc::new(Table::new());
    let clock = Arc::new(Clock::new());
    for pattern in settings::method_patterns(value)? {
        let target = Target::parse(pattern).map_err(|e| e.to_string())?;
        instrumentation
            .wrap(target, Timer { table: Arc::clone(&table), clock: Arc::clone(&clock) })
            .map_err(|e| format!("{pattern}: {e}"))?;
    }
    let recording = MethodsRecording {
        info: ctx.info.clone(),
        waiting: Mutex::new(Some(instrumentation)),
        started: OnceLock::new(),
        table,
        attached: ctx.attached,
        ready: ctx.attached.then(|| crate::beside(&ctx.settings.out, settings::READY_SUFFIX)),
    };
    Ok(Started { recording: Box::new(recording), events: COR_PRF_MONITOR::NONE, events_high: COR_PRF_HIGH_MONITOR(0) })
}

struct MethodsRecording {
    info: ProfilerInfo,
    /// The instrumentation until it starts.
    waiting: Mutex<Option<Instrumentation>>,
    started: OnceLock<&'static Instrumentation>,
    table: Arc<Table>,
    attached: bool,
    /// attach: the file that tells the command the methods loaded already are wrapped.
    ready: Option<PathBuf>,
}

impl CorProfilerCallback for MethodsRecording {}

impl Recording for MethodsRecording {
    fn after_mask(&self) -> Result<(), String> {
        let instrumentation = lock(&self.waiting).take();
        let Some(instrumentation) = instrumentation else { return Ok(()) };
        let started = instrumentation.start(&self.info).map_err(|e| format!("the wrapping did not start: {e}"))?;
        let _ = self.started.set(started);
        if let Some(ready) = self.ready.clone() {
            // The ReJITs of the methods loaded already are requested from the instrumentation's
            // thread; once they are, every later call is timed, which the command says.
            std::thread::Builder::new()
                .name("corprof-methods-ready".into())
                .spawn(move || {
                    while started.pending_rejit_requests() > 0 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let wrapped = started.decisions().iter().filter(|d| matches!(d, Decision::Wrapped { .. })).count();
                    let _ = corprof_record::files::replace(&ready, format!("{wrapped}\n").as_bytes());
                })
                .map_err(|e| format!("cannot start a thread: {e}"))?;
        }
        Ok(())
    }

    fn finish(&self, out: &Path) -> std::io::Result<()> {
        let mut unmatched = Vec::new();
        let mut refused = Vec::new();
        let mut wrapped = Vec::new();
        if let Some(instrumentation) = self.started.get() {
            if self.attached {
                // Before the detach: the app's methods go back to their own code, and no call
                // reaches the handlers once the profiler is gone.
                instrumentation.revert();
                let deadline = Instant::now() + REVERT_WAIT;
                while instrumentation.pending_rejit_requests() > 0 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            unmatched = instrumentation.unmatched().iter().map(Target::to_string).collect();
            for decision in instrumentation.decisions() {
                match decision {
                    Decision::Wrapped { method, .. } => wrapped.push(MethodLatency::new(method)),
                    Decision::Refused { method, reason, .. } => refused.push((method, reason)),
                    _ => {}
                }
            }
        }
        // Methods wrapped and never called are lines with no call.
        let methods = self.table.snapshot().into_iter().chain(wrapped);
        write_atomically(out, MethodsReport::new(methods, unmatched, refused).to_text().as_bytes())
    }

    fn progress(&self) -> Vec<crate::progress::Count> {
        vec![(self.table.made().map(Counters::calls).sum(), "calls")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_with_and_without_a_histogram_add_up() {
        for histogram in [true, false] {
            let c = Counters::new("A::B", histogram);
            assert_eq!(c.latency(), MethodLatency::new("A::B"));
            for (ns, threw) in [(100, false), (5_000, true), (70, false)] {
                c.add(ns, threw);
            }
            let m = c.latency();
            assert_eq!((m.calls, m.exceptions, m.sum_ns, m.max_ns), (3, 1, 5_170, 5_000), "{histogram}");
            assert_eq!(m.buckets.values().sum::<u64>(), 3);
            if histogram {
                assert_eq!(m.buckets.len(), 3);
                assert!(m.quantile_ns(0.5).unwrap() < 110.0);
            } else {
                // Only the longest is known: every call is counted there.
                assert_eq!(m.buckets.keys().copied().collect::<Vec<_>>(), [bucket_of(5_000)]);
            }
            // What the command reads back.
            let report = MethodsReport::new([m.clone()], vec![], vec![]);
            assert_eq!(MethodsReport::from_text(&report.to_text()).unwrap().methods, [m]);
        }
    }

    #[test]
    fn the_clock_measures_nanoseconds_whichever_it_reads() {
        let clock = Clock::new();
        let source = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource");
        assert_eq!(clock.tsc, cfg!(target_arch = "x86_64") && source.is_ok_and(|s| s.trim() == "tsc"));
        let begin = clock.now();
        let wall = Instant::now();
        while wall.elapsed() < Duration::from_millis(3) {}
        let ns = clock.nanoseconds(begin, clock.now());
        let truth = wall.elapsed().as_nanos() as f64;
        assert!((ns as f64 - truth).abs() < truth * 0.05 + 50_000.0, "{ns} ns for {truth} (tsc: {})", clock.tsc);
        // A later reading before an earlier one (another CPU's counter a hair behind) is 0.
        assert_eq!(clock.nanoseconds(10, 5), 0);
    }
}
