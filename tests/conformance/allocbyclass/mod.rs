//! Conformance scenario "allocbyclass", after the runtime's
//! `src/tests/profiler/gc/gcskipobjectsallocatedbyclasscallback.cs` (profiler
//! `native/gcskipobjectsallocatedbyclasscallbackprofiler`): with `COR_PRF_MONITOR_GC`, GCs pair
//! up and ObjectsAllocatedByClass reports the app's known allocations, class by class, per GC.
//! The runtime test's subject, `COR_PRF_HIGH_MONITOR_GC_SKIP_ALLOCATED_BY_CLASS_STATISTIC` (0x200),
//! exists from .NET 9 (the runtime-info15 header names it; 8.0.4 and 3.1.23 do not know it); with
//! `CORPROF_CONF_SKIP=1` the profiler also sets that bit and reports how this runtime answers,
//! and whether the callback still comes.

use crate::support::{Recorder, lock};
use corprof::types::{BOOL, COR_PRF_GC_REASON, COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, ClassID, ULONG};
use corprof::{CorProfilerCallback, IUnknown, Result};
use std::sync::Mutex;

/// The .NET 9 flag, as the runtime-info15 header names it (0x200).
const SKIP_ALLOCATED_BY_CLASS: u32 = COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_GC_SKIP_ALLOCATED_BY_CLASS_STATISTIC.0;

#[derive(Default)]
pub struct AllocByClass {
    rec: Recorder,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    started: u32,
    finished: u32,
    /// The GC count the next ObjectsAllocatedByClass belongs to.
    calls: u32,
    /// `(class, count)` for the app's classes, per call, in call order.
    reports: Vec<Vec<String>>,
    /// Calls whose class and count arrays differ in length (the header gives both one count).
    unpaired: u32,
    skip_answer: Option<String>,
}

impl AllocByClass {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl CorProfilerCallback for AllocByClass {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = self.rec.start(unknown, COR_PRF_MONITOR::GC, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        if std::env::var_os("CORPROF_CONF_SKIP").is_some_and(|v| v == "1") {
            // Asked for on top of the mask already set: accepted, the bit stays set for the run.
            let high = COR_PRF_HIGH_MONITOR(SKIP_ALLOCATED_BY_CLASS);
            let answer = match info.set_event_mask2(COR_PRF_MONITOR::GC, high) {
                Ok(()) => "accepted".to_string(),
                Err(e) => format!("refused with {e}"),
            };
            self.state().skip_answer = Some(answer);
        }
        Ok(())
    }

    fn garbage_collection_started(&self, _generations: &[BOOL], _reason: COR_PRF_GC_REASON) -> Result<()> {
        self.state().started += 1;
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        self.state().finished += 1;
        Ok(())
    }

    fn objects_allocated_by_class(&self, classes: &[ClassID], counts: &[ULONG]) -> Result<()> {
        let mut mine: Vec<String> = classes
            .iter()
            .zip(counts)
            .filter_map(|(class, count)| {
                let name = self.rec.class_name(*class);
                name.starts_with("ConfAllocByClass.").then(|| format!("{name} x{count}"))
            })
            .collect();
        mine.sort();
        let mut s = self.state();
        s.calls += 1;
        s.unpaired += u32::from(classes.len() != counts.len());
        s.reports.push(mine);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let s = self.state();
        if let Some(answer) = &s.skip_answer {
            self.rec.say(format!("SetEventMask2 with the skip flag {SKIP_ALLOCATED_BY_CLASS:#x}: {answer}"));
        }
        self.rec.say(format!("started == finished: {}", s.started == s.finished && s.started > 0));
        self.rec.say(format!("ObjectsAllocatedByClass raised: {}", s.calls > 0));
        self.rec.say(format!("calls with unpaired class and count arrays: {}", s.unpaired));
        let reports: Vec<String> =
            s.reports.iter().filter(|r| !r.is_empty()).map(|r| format!("[{}]", r.join(", "))).collect();
        self.rec.say(format!("app classes per report: {}", reports.join(" ")));
        drop(s);
        self.rec.finish()
    }
}
