//! methods: the methods the `METHODS` patterns name, wrapped by `corprof::instrument` with a
//! handler that times each call; the result is a [`MethodsReport`].
//!
//! The handler's work per call is two clock reads and four atomic additions into the method's
//! own counters: no lock, and no allocation after the method's first call (which makes its
//! counters). It never blocks, so on .NET 5+ its calls skip the GC transition. The histogram of
//! the first [`MAX_HISTOGRAMS`] methods called is kept; methods called after those keep their
//! counts and longest call only (a `*` pattern over a whole framework would otherwise hold a
//! histogram for each of thousands of methods).

use crate::{Context, Recording, Started, write_atomically};
use corprof::instrument::{Call, Decision, Handler, Instrumentation, MAX_METHODS, Method, Outcome, Target};
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
            Counters {
                name: method.name().to_string(),
                calls: AtomicU64::new(0),
                exceptions: AtomicU64::new(0),
                sum_ns: AtomicU64::new(0),
                max_ns: AtomicU64::new(0),
                histogram: keep.then(|| (0..BUCKETS).map(|_| AtomicU64::new(0)).collect()),
            }
        }))
    }

    /// The counters as they are now.
    fn snapshot(&self) -> Vec<MethodLatency> {
        self.chunks
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|chunk| chunk.iter())
            .filter_map(OnceLock::get)
            .map(|c| {
                let calls = c.calls.load(Ordering::Relaxed);
                let mut m = MethodLatency {
                    name: c.name.clone(),
                    calls,
                    exceptions: c.exceptions.load(Ordering::Relaxed).min(calls),
                    sum_ns: c.sum_ns.load(Ordering::Relaxed),
                    max_ns: c.max_ns.load(Ordering::Relaxed),
                    buckets: Default::default(),
                };
                match &c.histogram {
                    Some(h) => {
                        for (b, n) in h.iter().enumerate() {
                            let n = n.load(Ordering::Relaxed);
                            if n > 0 {
                                m.buckets.insert(b, n);
                            }
                        }
                        // A call still ending while this is read may be in one counter and not
                        // the other: the histogram is what the report's calls are.
                        m.calls = m.buckets.values().sum();
                        m.exceptions = m.exceptions.min(m.calls);
                    }
                    // No histogram: every call counted in the bucket of the longest, so the
                    // counts still add up (the quantiles of such a method are its maximum).
                    None if calls > 0 => {
                        m.buckets.insert(bucket_of(m.max_ns), calls);
                    }
                    None => {}
                }
                m
            })
            .collect()
    }
}

/// The clock the durations are read from: nanoseconds since the recording started.
fn now_ns(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The handler of every pattern (they share the table).
struct Timer {
    table: Arc<Table>,
    epoch: Instant,
}

impl Handler for Timer {
    fn may_block(&self) -> bool {
        false
    }

    fn begin(&self, call: &Call<'_>) -> u64 {
        // The method's first call makes its counters here, before its clock starts (not in
        // `end`, inside the duration of a recursive caller's call).
        let _ = self.table.counters(call.method());
        now_ns(self.epoch)
    }

    fn end(&self, method: &Method, state: u64, outcome: Outcome) {
        let ns = now_ns(self.epoch).saturating_sub(state);
        let Some(c) = self.table.counters(method) else { return };
        c.calls.fetch_add(1, Ordering::Relaxed);
        if outcome == Outcome::Threw {
            c.exceptions.fetch_add(1, Ordering::Relaxed);
        }
        c.sum_ns.fetch_add(ns, Ordering::Relaxed);
        c.max_ns.fetch_max(ns, Ordering::Relaxed);
        if let Some(h) = &c.histogram {
            h[bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
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
    let epoch = Instant::now();
    for pattern in settings::method_patterns(value)? {
        let target = Target::parse(pattern).map_err(|e| e.to_string())?;
        instrumentation
            .wrap(target, Timer { table: Arc::clone(&table), epoch })
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
        let instrumentation = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).take();
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
}
