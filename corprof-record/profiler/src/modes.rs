//! The alloc, heap and calls modes as [`Recording`]s the library starts: each wraps its mode's
//! recorder (alloc.rs, heap.rs, calls.rs) and writes its result at the end.
//!
//! None of them can start on an attach: the runtime does not allow allocation events or
//! enter/leave hooks after attach (`COR_PRF_ALLOWABLE_AFTER_ATTACH`), and a heap snapshot after
//! attach is not tested yet; the command is told why instead of getting an empty recording.

use crate::alloc::{AllocMode, Sampling};
use crate::calls::CallsMode;
use crate::heap::{DEFAULT_MAX_OBJECTS, HeapMode, HeapSettings};
use crate::{Context, Recording, Started, write_atomically};
use corprof::types::{BOOL, COR_PRF_GC_REASON, COR_PRF_GC_ROOT_FLAGS, COR_PRF_GC_ROOT_KIND, UINT_PTR};
use corprof::types::{COR_PRF_HIGH_MONITOR, ClassID, ObjectID};
use corprof::{CorProfilerCallback, ProfilerInfo, Result};
use corprof_record::settings;
use std::path::Path;

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

/// alloc: every allocation (exact) or about one per 100 KB (sampled), with its stack.
pub(crate) fn alloc(ctx: &Context<'_>) -> std::result::Result<Started, String> {
    refuse_attach(ctx, "alloc", "the runtime allows allocation events only from startup")?;
    let sampling = Sampling::from_setting(setting(ctx, settings::ALLOC))?;
    let recording = AllocRecording { mode: AllocMode::new(sampling), info: ctx.info.clone() };
    Ok(Started { recording: Box::new(recording), events: AllocMode::MASK, events_high: COR_PRF_HIGH_MONITOR(0) })
}

struct AllocRecording {
    mode: AllocMode,
    info: ProfilerInfo,
}

impl CorProfilerCallback for AllocRecording {
    fn object_allocated(&self, object_id: ObjectID, class_id: ClassID) -> Result<()> {
        self.mode.object_allocated(&self.info, object_id, class_id)
    }
}

impl Recording for AllocRecording {
    fn finish(&self, out: &Path) -> std::io::Result<()> {
        write_atomically(out, self.mode.profile().to_text().as_bytes())
    }
}

/// heap: a snapshot of the object graph in one forced GC, at the end or at `AT_MS`/SIGUSR2.
pub(crate) fn heap(ctx: &Context<'_>) -> std::result::Result<Started, String> {
    refuse_attach(ctx, "heap", "not supported yet")?;
    let at_ms = match setting(ctx, settings::AT_MS) {
        Some(v) => Some(v.trim().parse().map_err(|_| format!("{}={v:?} is not a number", settings::AT_MS))?),
        None => None,
    };
    let heap = HeapMode::new(HeapSettings {
        out: None, // the library writes the result (Recording::finish), not heap.rs at Shutdown
        at_ms,
        on_signal: setting(ctx, settings::SIGNAL) == Some("1"),
        max_objects: DEFAULT_MAX_OBJECTS,
        timing: setting(ctx, crate::heap::TIMING) == Some("1"),
    });
    heap.begin(ctx.info.clone());
    Ok(Started {
        recording: Box::new(HeapRecording(heap)),
        events: HeapMode::MASK,
        events_high: COR_PRF_HIGH_MONITOR(0),
    })
}

struct HeapRecording(HeapMode);

impl CorProfilerCallback for HeapRecording {
    fn garbage_collection_started(&self, generations: &[BOOL], reason: COR_PRF_GC_REASON) -> Result<()> {
        self.0.garbage_collection_started(generations, reason)
    }

    fn object_references(&self, object_id: ObjectID, class_id: ClassID, refs: &[ObjectID]) -> Result<()> {
        self.0.object_references(object_id, class_id, refs)
    }

    fn root_references2(
        &self,
        refs: &[ObjectID],
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

    fn exception_catcher_enter(&self, _function_id: corprof::types::FunctionID, _object_id: ObjectID) -> Result<()> {
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
}
