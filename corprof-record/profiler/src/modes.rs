//! The alloc, heap and calls modes as [`Recording`]s the library starts: each wraps its mode's
//! recorder (alloc.rs, heap.rs, calls.rs) and writes its result at the end.
//!
//! On an attach, the runtime allows no allocation callbacks and no enter/leave hooks
//! (`COR_PRF_ALLOWABLE_AFTER_ATTACH`): alloc then needs AllocationTick (.NET 5+), calls cannot
//! start, and the command is told why instead of getting an empty recording.

use crate::alloc::{AllocMode, Sampling};
use crate::alloc_tick::{self, AllocationTick};
use crate::calls::CallsMode;
use crate::heap::{DEFAULT_MAX_OBJECTS, HeapMode, HeapSettings};
use crate::progress::Count;
use crate::{Context, Recording, Started, write_atomically};
use corprof::eventpipe::{self, Level, ProviderConfig, Session};
use corprof::sync::lock;
use corprof::types::{BOOL, COR_PRF_GC_REASON, COR_PRF_GC_ROOT_FLAGS, COR_PRF_GC_ROOT_KIND, UINT_PTR};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, ClassID, EVENTPIPE_PROVIDER, ThreadID};
use corprof::{CorProfilerCallback, LiveObject, ProfilerInfo, Result};
use corprof_record::settings;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

fn refuse_attach(ctx: &Context<'_>, mode: &str, why: &str) -> std::result::Result<(), String> {
    if ctx.attached {
        Err(format!("the {mode} mode cannot attach to a running app ({why}); start the app under corprof record"))
    } else {
        Ok(())
    }
}

fn setting<'a>(ctx: &'a Context<'_>, key: &str) -> Option<&'a str> {
    ctx.settings.pairs.get(key).map(String::as_str)
}

/// alloc: the runtime's AllocationTick (.NET 5+, sampled) or every allocation (exact, and
/// sampled on .NET Core 3.1), with its stack.
pub(crate) fn alloc(ctx: &Context<'_>) -> std::result::Result<Started, String> {
    let sampling = Sampling::from_setting(setting(ctx, settings::ALLOC))?;
    let event_pipe = ctx.info.get_runtime_information().is_ok_and(|rt| rt.major_version >= 5);
    let ticks = sampling != Sampling::Exact && event_pipe;
    if !ticks {
        let why = if event_pipe {
            "exact: the runtime allows allocation callbacks only from startup"
        } else {
            "this runtime has no in-process EventPipe (.NET 5+) and allows allocation callbacks only from startup"
        };
        refuse_attach(ctx, "alloc", why)?;
    }
    if !ticks && sampling != Sampling::Exact {
        // The countdown keeps the callback cheap, not the allocations: asking for ObjectAllocated
        // at all sends every one down the runtime's slow path (the callback alone, counting and
        // nothing else, costs most of it), and 3.1's cheap source, AllocationTick over the
        // diagnostics IPC, counts allocation contexts, not the app's bytes (BENCHMARKS.md §9).
        eprintln!("{}", SLOW_PATH_WARNING);
    }
    let recording = AllocRecording {
        mode: AllocMode::new(sampling),
        info: ctx.info.clone(),
        ticks: ticks.then(Ticks::default),
        attached: ctx.attached,
    };
    let (events, events_high) = if ticks {
        (COR_PRF_MONITOR::ENABLE_STACK_SNAPSHOT, COR_PRF_HIGH_MONITOR::EVENT_PIPE)
    } else {
        (AllocMode::MASK, COR_PRF_HIGH_MONITOR(0))
    };
    Ok(Started { recording: Box::new(recording), events, events_high })
}

/// What the sampled alloc mode says as it starts on .NET Core 3.1: the app's slowdown that
/// `bash scripts/bench-record` measured in two runs (section 6: 720 MB of objects of one size on
/// one thread, CoreCLR 3.1.23).
const SLOW_PATH_WARNING: &str = "corprof: alloc on .NET Core 3.1 sends every allocation through the \
     runtime's slow path (ObjectAllocated; no in-process EventPipe before .NET 5): an allocation-heavy app runs \
     7.7-8.8x slower with 24-byte objects, 3.6-4.4x with 104-byte ones, 1.1-1.2x with 2 KB ones (CoreCLR 3.1.23, \
     BENCHMARKS.md section 9)";

struct AllocRecording {
    mode: AllocMode,
    info: ProfilerInfo,
    /// Reading AllocationTick, if so.
    ticks: Option<Ticks>,
    /// Started by an attach: the session stops before the profiler detaches.
    attached: bool,
}

/// The EventPipe session AllocationTick comes from.
#[derive(Default)]
struct Ticks {
    session: Mutex<Option<Session>>,
    /// Whether each provider seen is the runtime's (looked up once per provider).
    runtime: Mutex<HashMap<EVENTPIPE_PROVIDER, bool>>,
}

impl Ticks {
    fn is_runtime(&self, info: &ProfilerInfo, provider: EVENTPIPE_PROVIDER) -> bool {
        let mut known = lock(&self.runtime);
        *known.entry(provider).or_insert_with(|| {
            // SAFETY: `provider` is the handle of the provider whose event the runtime is
            // delivering right now.
            unsafe { eventpipe::provider_name(info, provider) }.is_ok_and(|name| name == alloc_tick::RUNTIME_PROVIDER)
        })
    }
}

impl CorProfilerCallback for AllocRecording {
    fn object_allocated(&self, object_id: LiveObject<'_>, class_id: ClassID) -> Result<()> {
        self.mode.object_allocated(&self.info, object_id, class_id)
    }

    fn event_pipe_event_delivered(
        &self,
        provider: EVENTPIPE_PROVIDER,
        event_id: u32,
        _event_version: u32,
        _metadata_blob: &[u8],
        event_data: &[u8],
        _activity_id: Option<&corprof::GUID>,
        _related_activity_id: Option<&corprof::GUID>,
        _event_thread: ThreadID,
        _stack_frames: &[UINT_PTR],
    ) -> Result<()> {
        let Some(ticks) = &self.ticks else { return Ok(()) };
        if event_id != alloc_tick::ALLOCATION_TICK || !ticks.is_runtime(&self.info, provider) {
            return Ok(());
        }
        if let Some(tick) = AllocationTick::parse(event_data) {
            self.mode.allocation_tick(&self.info, &tick);
        }
        Ok(())
    }
}

impl Recording for AllocRecording {
    fn after_mask(&self) -> std::result::Result<(), String> {
        let Some(ticks) = &self.ticks else { return Ok(()) };
        let gc =
            ProviderConfig::new(alloc_tick::RUNTIME_PROVIDER).keywords(alloc_tick::GC_KEYWORD).level(Level::Verbose);
        let session = Session::start(&self.info, &[gc], false)
            .map_err(|e| format!("the runtime refused an EventPipe session for AllocationTick: {}", e.describe()))?;
        *lock(&ticks.session) = Some(session);
        Ok(())
    }

    fn finish(&self, out: &Path) -> std::io::Result<()> {
        // What to say goes to the `.stats` file, which the command prints with its own lines
        // (the app's stderr may be elsewhere, or share the terminal with the command's live line).
        let mut notes = String::new();
        // Before a detach the session must end (no delivery to a profiler on its way out); at
        // Shutdown it is left to the runtime, which ends it itself.
        if let (Some(ticks), true) = (&self.ticks, self.attached) {
            let session = lock(&ticks.session).take();
            if let Some(Err(e)) = session.map(Session::stop) {
                notes += &format!("the EventPipe session did not stop: {}\n", e.describe());
            }
        }
        let own = self.mode.own_bytes();
        if own > 0 {
            notes += &format!(
                "alloc: left out {:.1} KiB the runtime allocated to start corprof's own EventPipe session\n",
                own as f64 / 1024.0
            );
        }
        if !notes.is_empty() {
            // Before the profile, whose appearance tells the command the recording is complete.
            write_atomically(&crate::beside(out, settings::STATS_SUFFIX), notes.as_bytes())?;
        }
        write_atomically(out, self.mode.profile().to_text().as_bytes())
    }

    fn progress(&self) -> Vec<Count> {
        vec![self.mode.recorded()]
    }
}

/// heap: a snapshot of the object graph in one forced GC, at the end (of the app, or of an
/// attach's duration) or at `AT_MS`/SIGUSR2. `COR_PRF_MONITOR_GC` is allowed after attach.
pub(crate) fn heap(ctx: &Context<'_>) -> std::result::Result<Started, String> {
    let at_ms = setting(ctx, settings::AT_MS)
        .map(|v| settings::number(settings::AT_MS, v, settings::AT_MS_RANGE))
        .transpose()?;
    let heap = HeapMode::new(HeapSettings {
        out: None, // the library writes the result (Recording::finish), not heap.rs at Shutdown
        at_ms,
        on_signal: setting(ctx, settings::SIGNAL) == Some("1"),
        max_objects: DEFAULT_MAX_OBJECTS,
        timing: setting(ctx, crate::heap::TIMING) == Some("1"),
    });
    heap.begin(ctx.info.clone());
    Ok(Started {
        recording: Box::new(HeapRecording(heap, AtomicU64::new(0))),
        events: HeapMode::MASK,
        events_high: COR_PRF_HIGH_MONITOR(0),
    })
}

/// The heap mode, and the garbage collections seen (the live count: the snapshot is one, at its
/// time).
struct HeapRecording(HeapMode, AtomicU64);

impl CorProfilerCallback for HeapRecording {
    fn garbage_collection_started(&self, generations: &[BOOL], reason: COR_PRF_GC_REASON) -> Result<()> {
        self.1.fetch_add(1, Ordering::Relaxed);
        self.0.garbage_collection_started(generations, reason)
    }

    fn object_references(&self, object_id: LiveObject<'_>, class_id: ClassID, refs: &[LiveObject<'_>]) -> Result<()> {
        self.0.object_references(object_id, class_id, refs)
    }

    fn root_references2(
        &self,
        refs: &[LiveObject<'_>],
        kinds: &[COR_PRF_GC_ROOT_KIND],
        flags: &[COR_PRF_GC_ROOT_FLAGS],
        ids: &[UINT_PTR],
    ) -> Result<()> {
        self.0.root_references2(refs, kinds, flags, ids)
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        self.0.garbage_collection_finished()
    }
}

impl Recording for HeapRecording {
    fn finish(&self, out: &Path) -> std::io::Result<()> {
        self.0.finish(out).map_err(std::io::Error::other)
    }

    fn progress(&self) -> Vec<Count> {
        vec![(self.1.load(Ordering::Relaxed), "GCs")]
    }
}

/// calls: enter/leave hooks on the methods the filter keeps; the library installs the hooks
/// once the mask is set and forwards them here through [`Recording::calls`].
pub(crate) fn calls(ctx: &Context<'_>) -> std::result::Result<Started, String> {
    refuse_attach(ctx, "calls", "the runtime allows enter/leave hooks only from startup")?;
    let recording = CallsRecording(CallsMode::new(setting(ctx, settings::FILTER)));
    Ok(Started { recording: Box::new(recording), events: CallsMode::MASK, events_high: COR_PRF_HIGH_MONITOR(0) })
}

struct CallsRecording(CallsMode);

impl CorProfilerCallback for CallsRecording {
    fn exception_unwind_function_enter(&self, function_id: corprof::types::FunctionID) -> Result<()> {
        self.0.exception_unwind_function_enter(function_id);
        Ok(())
    }

    fn exception_unwind_function_leave(&self) -> Result<()> {
        self.0.exception_unwind_function_leave();
        Ok(())
    }

    fn exception_catcher_enter(
        &self,
        _function_id: corprof::types::FunctionID,
        _object_id: LiveObject<'_>,
    ) -> Result<()> {
        self.0.exception_catcher_enter();
        Ok(())
    }
}

impl Recording for CallsRecording {
    fn finish(&self, out: &Path) -> std::io::Result<()> {
        write_atomically(out, self.0.profile().to_text().as_bytes())
    }

    fn calls(&self) -> Option<&CallsMode> {
        Some(&self.0)
    }

    fn progress(&self) -> Vec<Count> {
        vec![(self.0.calls_ended(), "calls")]
    }
}
