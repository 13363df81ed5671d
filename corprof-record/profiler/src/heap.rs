//! Heap mode: a snapshot of the managed heap at a moment chosen by the settings, taken from a
//! GC the profiler forces. Takes the GC callbacks (`COR_PRF_MONITOR_GC`); gives the snapshot
//! file ([`corprof_record::heap`]'s form) that the command turns into a table and a treemap.
//!
//! The moment: [`settings::AT_MS`] milliseconds after Initialize, or the first SIGUSR2 with
//! [`settings::SIGNAL`], else the end of the run (Shutdown, or whenever [`HeapMode::finish`] is
//! called: 8.0.4 and 3.1.23 both still accept ForceGC at Shutdown). Either way a thread the profiler
//! creates calls InitializeCurrentThread and then ForceGC (the runtime accepts ForceGC only from
//! a thread it does not run managed code on); the GC that starts while the mode is armed, a
//! full one, is the snapshot: ObjectReferences gives every live object with its class and
//! references (sizes from GetObjectSize2), RootReferences2 the roots with their kinds, and at
//! GarbageCollectionFinished, the runtime still suspended so no class can unload, the classes
//! are named. Every other GC goes by untouched.

use corprof::sync::lock;
use corprof::types::{
    BOOL, COR_PRF_GC_REASON, COR_PRF_GC_ROOT_FLAGS, COR_PRF_GC_ROOT_KIND, COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR,
    ClassID, UINT_PTR,
};
use corprof::{CorProfilerCallback, HResult, IUnknown, LiveObject, ProfilerInfo, Result};
use corprof_record::heap::{RootKind, Snapshot, SnapshotBuilder};
use corprof_record::settings;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The default object limit: about 40 bytes each while collecting and building, so a full
/// snapshot stays under 1 GB; 1M objects take about 60 MB.
pub const DEFAULT_MAX_OBJECTS: usize = 20_000_000;

/// `1`: heap mode prints how long each step of the snapshot took to stderr (`corprof: heap
/// timing: …`), for scripts/bench-heap ([`settings::HEAP_TIMING`]).
pub const TIMING: &str = settings::HEAP_TIMING;

/// What heap mode is told.
#[derive(Clone, Debug, Default)]
pub struct HeapSettings {
    /// Where Shutdown writes the snapshot ([`settings::OUT`]); `None`: only [`HeapMode::finish`]
    /// writes it.
    pub out: Option<PathBuf>,
    /// Take the snapshot this long after Initialize ([`settings::AT_MS`]) rather than at the end.
    pub at_ms: Option<u64>,
    /// Take the snapshot at the first SIGUSR2 ([`settings::SIGNAL`]).
    pub on_signal: bool,
    /// Objects past this many are counted, not kept.
    pub max_objects: usize,
    /// Print each step's time ([`TIMING`]).
    pub timing: bool,
}

impl HeapSettings {
    /// From the environment the command sets, checked ([`settings::from_env`]); the error names
    /// the setting that is wrong.
    pub fn from_env() -> std::result::Result<HeapSettings, String> {
        let pairs = settings::from_env()?;
        let get = |key: &str| pairs.get(key).map(String::as_str);
        Ok(HeapSettings {
            out: get(settings::OUT).map(PathBuf::from),
            at_ms: get(settings::AT_MS)
                .map(|v| settings::number(settings::AT_MS, v, settings::AT_MS_RANGE))
                .transpose()?,
            on_signal: get(settings::SIGNAL) == Some("1"),
            max_objects: DEFAULT_MAX_OBJECTS,
            timing: get(TIMING) == Some("1"),
        })
    }
}

/// The heap-mode profiler: its state is shared with the timer thread of [`settings::AT_MS`].
pub struct HeapMode(Arc<Shared>);

struct Shared {
    settings: HeapSettings,
    info: OnceLock<ProfilerInfo>,
    /// Set just before the profiler's ForceGC: the next full GC is the snapshot.
    armed: AtomicBool,
    /// Set from that GC's start to its finish.
    collecting: AtomicBool,
    builder: Mutex<Option<SnapshotBuilder>>,
    /// The snapshot once taken, or why it could not be.
    taken: Mutex<Option<std::result::Result<Snapshot, String>>>,
    /// Held by whoever is taking the snapshot, so the timer and the end of the run take one.
    taking: Mutex<()>,
}

fn say_error(what: &str) {
    eprintln!("corprof: heap snapshot: {what}");
}

/// Prints a step's time when [`HeapSettings::timing`] is on.
fn say_time(settings: &HeapSettings, step: &str, since: Instant) {
    if settings.timing {
        eprintln!("corprof: heap timing: {step} {:.1} ms", since.elapsed().as_secs_f64() * 1e3);
    }
}

impl HeapMode {
    pub fn new(settings: HeapSettings) -> HeapMode {
        HeapMode(Arc::new(Shared {
            settings,
            info: OnceLock::new(),
            armed: AtomicBool::new(false),
            collecting: AtomicBool::new(false),
            builder: Mutex::new(None),
            taken: Mutex::new(None),
            taking: Mutex::new(()),
        }))
    }

    /// The event mask heap mode needs (for a dispatcher that sets the mask itself).
    pub const MASK: COR_PRF_MONITOR = COR_PRF_MONITOR::GC;

    /// Starts the mode with the runtime's `info`, for a dispatcher that set [`HeapMode::MASK`]
    /// itself: the snapshot timer of [`settings::AT_MS`] and the SIGUSR2 listener.
    pub fn begin(&self, info: ProfilerInfo) {
        let _ = self.0.info.set(info);
        if let Some(ms) = self.0.settings.at_ms {
            let shared = Arc::clone(&self.0);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(ms));
                if let Err(e) = shared.take_snapshot() {
                    say_error(&e);
                }
            });
        }
        if self.0.settings.on_signal {
            // signal-hook's handler only writes to a pipe; this thread reads it and does the work.
            match signal_hook::iterator::Signals::new([signal_hook::consts::SIGUSR2]) {
                Ok(mut signals) => {
                    let shared = Arc::clone(&self.0);
                    std::thread::spawn(move || {
                        for _ in signals.forever() {
                            if let Err(e) = shared.take_snapshot() {
                                say_error(&e);
                            }
                        }
                    });
                }
                Err(e) => say_error(&format!("cannot listen for SIGUSR2: {e}")),
            }
        }
    }

    /// Takes the snapshot now, unless one was already taken (or tried): one snapshot per run.
    pub fn take_snapshot(&self) -> std::result::Result<(), String> {
        self.0.take_snapshot()
    }

    /// Takes the snapshot if it was not taken yet, and writes it to `out`.
    pub fn finish(&self, out: &Path) -> std::result::Result<(), String> {
        self.0.take_snapshot()?;
        let started = Instant::now();
        match &*lock(&self.0.taken) {
            Some(Ok(snapshot)) => {
                corprof_record::heap::write(snapshot, out).map_err(|e| format!("the heap snapshot: {e}"))?;
                say_time(&self.0.settings, &format!("write ({} objects)", snapshot.len()), started);
                Ok(())
            }
            Some(Err(e)) => Err(e.clone()),
            None => Err("no heap snapshot was taken".to_string()),
        }
    }
}

impl Shared {
    /// From a new thread, initialised as the runtime requires, forces a GC; the callbacks
    /// collect it. Blocks until the GC is over. Only the first call does anything.
    fn take_snapshot(&self) -> std::result::Result<(), String> {
        let _taking = lock(&self.taking);
        if lock(&self.taken).is_none() {
            let info = self.info.get().ok_or("the profiler was not initialised")?;
            *lock(&self.builder) = Some(SnapshotBuilder::new(self.settings.max_objects));
            let started = Instant::now();
            let forced = std::thread::scope(|s| {
                s.spawn(|| {
                    info.initialize_current_thread()?;
                    self.armed.store(true, Ordering::SeqCst);
                    let r = info.force_gc();
                    self.armed.store(false, Ordering::SeqCst);
                    r
                })
                .join()
            });
            let error = match forced {
                Err(_) => "the snapshot thread panicked".to_string(),
                Ok(Err(e)) => format!("ForceGC failed: {e}"),
                Ok(Ok(())) => "the forced GC reported no heap".to_string(),
            };
            lock(&self.builder).take();
            say_time(&self.settings, "forced GC with collection and build", started);
            lock(&self.taken).get_or_insert(Err(error));
        }
        match &*lock(&self.taken) {
            Some(Err(e)) => Err(e.clone()),
            _ => Ok(()),
        }
    }
}

impl CorProfilerCallback for HeapMode {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask2(Self::MASK, COR_PRF_HIGH_MONITOR::NONE)?;
        self.begin(info);
        Ok(())
    }

    fn garbage_collection_started(&self, generations: &[BOOL], _reason: COR_PRF_GC_REASON) -> Result<()> {
        // Only a full GC (generation 2 collected) sees every object.
        let full = generations.get(2).is_some_and(|&g| g != 0);
        if full && self.0.armed.swap(false, Ordering::SeqCst) {
            self.0.collecting.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    fn object_references(&self, object: LiveObject<'_>, class: ClassID, refs: &[LiveObject<'_>]) -> Result<()> {
        if !self.0.collecting.load(Ordering::Relaxed) {
            return Ok(());
        }
        let info = self.0.info.get().ok_or(HResult::E_UNEXPECTED)?;
        let size = object.size(info).unwrap_or(0) as u64;
        let mut builder = lock(&self.0.builder);
        if let Some(b) = builder.as_mut() {
            // An ObjectID is the object's address: the builder keeps plain numbers.
            let refs = refs.iter().map(|r| r.id().as_raw() as u64);
            b.add_object(object.id().as_raw() as u64, class.as_raw() as u64, size, refs);
        }
        Ok(())
    }

    fn root_references2(
        &self,
        roots: &[LiveObject<'_>],
        kinds: &[COR_PRF_GC_ROOT_KIND],
        flags: &[COR_PRF_GC_ROOT_FLAGS],
        _ids: &[UINT_PTR],
    ) -> Result<()> {
        if !self.0.collecting.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut builder = lock(&self.0.builder);
        let Some(b) = builder.as_mut() else { return Ok(()) };
        for (i, root) in roots.iter().enumerate() {
            // A weak reference keeps nothing alive, so it retains nothing.
            let weak = flags.get(i).is_some_and(|f| f.0 & COR_PRF_GC_ROOT_FLAGS::COR_PRF_GC_ROOT_WEAKREF.0 != 0);
            if !weak {
                let kind = kinds.get(i).map_or(RootKind::OTHER, |k| RootKind(k.0.min(255) as u8));
                b.add_root(root.id().as_raw() as u64, kind);
            }
        }
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        if !self.0.collecting.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let Some(builder) = lock(&self.0.builder).take() else { return Ok(()) };
        let started = Instant::now();
        let info = self.0.info.get().ok_or(HResult::E_UNEXPECTED)?;
        let names = builder
            .class_ids()
            .iter()
            .map(|&raw| {
                // SAFETY: the runtime handed out this class ID in this GC's ObjectReferences;
                // the runtime is still suspended for the GC, so the class cannot unload.
                let class = unsafe { ClassID::from_raw(raw as UINT_PTR) };
                corprof::sig::class_name(info, class).unwrap_or_else(|e| format!("<class {raw:#x}: {e}>"))
            })
            .collect();
        *lock(&self.0.taken) = Some(Ok(builder.build(names)));
        say_time(&self.0.settings, "naming and build", started);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Some(out) = self.0.settings.out.clone()
            && let Err(e) = self.finish(&out)
        {
            say_error(&e);
        }
        Ok(())
    }
}
