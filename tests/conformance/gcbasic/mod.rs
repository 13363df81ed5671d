//! Conformance scenario "gcbasic", after the runtime's `src/tests/profiler/gc/gcbasic.cs`
//! (profiler `native/gcbasicprofiler`): with `COR_PRF_HIGH_BASIC_GC` alone (low mask 0),
//! GarbageCollectionStarted and GarbageCollectionFinished come, a Started is never more than two
//! ahead of the Finished count nor behind it, and at the first GC GetGenerationBounds answers with
//! known generations and an initial generation 1 no larger than its filler object (0x18 bytes);
//! 8.0.4's regions keep the length but reserve a whole region for generation 1.
//! Beyond the runtime's checks: the app's two induced GCs are counted exactly, and none of the
//! heap-walk callbacks that `COR_PRF_MONITOR_GC` would add is raised.

use crate::support::{Recorder, lock};
use corprof::LiveObject;
use corprof::types::{
    BOOL, COR_PRF_GC_REASON, COR_PRF_GC_ROOT_FLAGS, COR_PRF_GC_ROOT_KIND, COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR,
    ClassID, DWORD, GCHandleID, ObjectID, SIZE_T, UINT_PTR, ULONG,
};
use corprof::{CorProfilerCallback, IUnknown, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// The runtime test's bound for an empty generation's range: one filler object.
const GEN_FILLER: usize = 0x18;

#[derive(Default)]
pub struct GcBasic {
    rec: Recorder,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    started: u32,
    finished: u32,
    induced: u32,
    /// Every moment a count broke the runtime test's rule, as `started/finished`.
    out_of_step: Vec<String>,
    /// What the first GC's GetGenerationBounds said (one line), or its error.
    first_bounds: Option<String>,
    /// The heap-walk callbacks the basic mask must not raise, by name.
    heavy: BTreeMap<&'static str, u32>,
}

impl GcBasic {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn heavy(&self, name: &'static str) -> Result<()> {
        *self.state().heavy.entry(name).or_default() += 1;
        Ok(())
    }

    /// The runtime test's checks of the first GC's bounds, as one fact line.
    fn first_bounds(&self) -> String {
        let ranges = match self.rec.info().and_then(corprof::heap::generation_bounds) {
            Ok(ranges) => ranges,
            Err(e) => return format!("GetGenerationBounds failed: {e}"),
        };
        let generations: BTreeSet<u32> = ranges.iter().map(|r| r.generation.0).collect();
        let gen1: Vec<_> = ranges.iter().filter(|r| r.generation.0 == 1).collect();
        let length_ok = !gen1.is_empty() && gen1.iter().all(|r| r.range.length <= GEN_FILLER);
        let reserved_ok = !gen1.is_empty() && gen1.iter().all(|r| r.range.reserved <= GEN_FILLER);
        let generations: Vec<String> = generations.iter().map(u32::to_string).collect();
        format!(
            "first GC: generations {}; generation 1 length <= {GEN_FILLER:#x}: {length_ok}, reserved <= {GEN_FILLER:#x}: {reserved_ok}",
            generations.join(",")
        )
    }
}

impl CorProfilerCallback for GcBasic {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(unknown, COR_PRF_MONITOR::NONE, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_BASIC_GC)?;
        Ok(())
    }

    fn garbage_collection_started(&self, _generations: &[BOOL], reason: COR_PRF_GC_REASON) -> Result<()> {
        let first = self.state().started == 0;
        // Asked before the count moves, as the runtime test does at its first Started.
        let bounds = first.then(|| self.first_bounds());
        let mut s = self.state();
        s.started += 1;
        if s.started > s.finished + 2 {
            let line = format!("{}/{}", s.started, s.finished);
            s.out_of_step.push(line);
        }
        if reason.0 == COR_PRF_GC_REASON::COR_PRF_GC_INDUCED.0 {
            s.induced += 1;
        }
        if bounds.is_some() {
            s.first_bounds = bounds;
        }
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        let mut s = self.state();
        s.finished += 1;
        if s.finished > s.started {
            let line = format!("{}/{}", s.started, s.finished);
            s.out_of_step.push(line);
        }
        Ok(())
    }

    fn object_references(&self, _: LiveObject<'_>, _: ClassID, _: &[LiveObject<'_>]) -> Result<()> {
        self.heavy("ObjectReferences")
    }

    fn root_references(&self, _: &[LiveObject<'_>]) -> Result<()> {
        self.heavy("RootReferences")
    }

    fn root_references2(
        &self,
        _: &[LiveObject<'_>],
        _: &[COR_PRF_GC_ROOT_KIND],
        _: &[COR_PRF_GC_ROOT_FLAGS],
        _: &[UINT_PTR],
    ) -> Result<()> {
        self.heavy("RootReferences2")
    }

    fn moved_references(&self, _: &[ObjectID], _: &[ObjectID], _: &[ULONG]) -> Result<()> {
        self.heavy("MovedReferences")
    }

    fn moved_references2(&self, _: &[ObjectID], _: &[ObjectID], _: &[SIZE_T]) -> Result<()> {
        self.heavy("MovedReferences2")
    }

    fn surviving_references(&self, _: &[ObjectID], _: &[ULONG]) -> Result<()> {
        self.heavy("SurvivingReferences")
    }

    fn surviving_references2(&self, _: &[ObjectID], _: &[SIZE_T]) -> Result<()> {
        self.heavy("SurvivingReferences2")
    }

    fn objects_allocated_by_class(&self, _: &[ClassID], _: &[ULONG]) -> Result<()> {
        self.heavy("ObjectsAllocatedByClass")
    }

    fn finalizeable_object_queued(&self, _: DWORD, _: LiveObject<'_>) -> Result<()> {
        self.heavy("FinalizeableObjectQueued")
    }

    fn handle_created(&self, _: GCHandleID, _: LiveObject<'_>) -> Result<()> {
        self.heavy("HandleCreated")
    }

    fn handle_destroyed(&self, _: GCHandleID) -> Result<()> {
        self.heavy("HandleDestroyed")
    }

    fn shutdown(&self) -> Result<()> {
        let s = self.state();
        self.rec.say(format!("GarbageCollectionStarted seen: {}", s.started > 0));
        self.rec.say(format!("GarbageCollectionFinished seen: {}", s.finished > 0));
        self.rec.say(format!("started/finished out of step at: {:?}", s.out_of_step));
        self.rec.say(format!("started == finished: {}", s.started == s.finished));
        self.rec.say(format!("induced GCs: {}", s.induced));
        self.rec.say(s.first_bounds.clone().unwrap_or_else(|| "first GC: never came".into()));
        self.rec.say(format!("heap-walk callbacks under the basic mask: {:?}", s.heavy));
        drop(s);
        self.rec.finish()
    }
}
