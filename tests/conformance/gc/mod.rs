//! Conformance scenario "gc", after the runtime's `src/tests/profiler/gc/gc.cs` (profiler
//! `native/gcprofiler`) and `src/tests/profiler/gc/gcallocate.cs` (the high allocation events):
//! GarbageCollectionStarted/Finished come exactly once for each of the app's six GCs (four
//! induced, two started by allocation; the app exits 100 only when its process ran exactly
//! those), with generation arrays that say which generations each induced GC collected;
//! GetGenerationBounds ranges are consistent; ObjectReferences and RootReferences2 show the app's
//! live Marker and its Child; on .NET 5+ (8.0.4 here) the high event mask alone reports large-
//! and pinned-object allocations, and nothing else, and pinned-object-heap objects appear among
//! ObjectReferences' references (the Marker's among them) and among RootReferences2's roots.

use crate::support::{Recorder, lock};
use corprof::types::{
    BOOL, COR_PRF_GC_GENERATION, COR_PRF_GC_REASON, COR_PRF_GC_ROOT_FLAGS, COR_PRF_GC_ROOT_KIND, COR_PRF_HIGH_MONITOR,
    COR_PRF_MONITOR, ClassID, ObjectID, UINT_PTR,
};
use corprof::{CorProfilerCallback, IUnknown, LiveObject, Result};
use std::collections::{BTreeSet, HashSet};
use std::sync::Mutex;

#[derive(Default)]
pub struct Gc {
    rec: Recorder,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    open: bool,
    nested: bool,
    started: u32,
    finished: u32,
    induced: Vec<String>,
    bounds_ok: bool,
    bounds_checked: u32,
    generations_seen: BTreeSet<u32>,
    markers: HashSet<ObjectID>,
    marker_references_child: bool,
    marker_rooted: bool,
    roots: HashSet<ObjectID>,
    allocations: u32,
    not_large_or_pinned: Vec<String>,
    large_byte_array: bool,
    pinned_byte_array: bool,
    /// Pinned-object-heap objects seen among ObjectReferences' references and among the roots
    /// (the runtime's gc test counts both), and whether the Marker itself references one.
    poh_in_references: u32,
    poh_in_roots: u32,
    marker_references_poh: bool,
}

impl Gc {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// How many of `objects` (null ones skipped) live on the pinned object heap.
    fn pinned_heap_objects(&self, objects: &[LiveObject<'_>]) -> Result<u32> {
        let info = self.rec.info()?;
        let poh = objects
            .iter()
            .filter(|o| !o.is_null())
            .filter(|o| o.generation(info).is_ok_and(|g| g.generation.0 == POH))
            .count();
        Ok(poh as u32)
    }
}

const LOH: u32 = 3;
const POH: u32 = 4;

impl CorProfilerCallback for Gc {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let low = COR_PRF_MONITOR::GC;
        // The high allocation events came with .NET 5: 3.1 refuses unknown bits.
        let probe = corprof::ProfilerInfo::from_unknown(unknown)?;
        let major = probe.get_runtime_information().map(|r| r.major_version).unwrap_or(0);
        let high = if major >= 5 {
            COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED
                | COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED
        } else {
            COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE
        };
        self.rec.start(unknown, low, high)?;
        Ok(())
    }

    fn garbage_collection_started(&self, generations: &[BOOL], reason: COR_PRF_GC_REASON) -> Result<()> {
        let mut s = self.state();
        s.nested |= s.open;
        s.open = true;
        s.started += 1;
        s.roots.clear();
        if reason.0 == COR_PRF_GC_REASON::COR_PRF_GC_INDUCED.0 {
            let collected: Vec<String> =
                generations.iter().enumerate().filter(|(_, c)| **c != 0).map(|(g, _)| g.to_string()).collect();
            let line = format!("induced GC of {} generations collected {}", generations.len(), collected.join(","));
            s.induced.push(line);
        }
        Ok(())
    }

    fn object_references(&self, object: LiveObject<'_>, class: ClassID, refs: &[LiveObject<'_>]) -> Result<()> {
        let poh = self.pinned_heap_objects(refs)?;
        let is_marker = self.rec.class_name(class) == "ConfGc.Marker";
        {
            let mut s = self.state();
            s.poh_in_references += poh;
            s.marker_references_poh |= is_marker && poh > 0;
        }
        if is_marker {
            let info = self.rec.info()?;
            let child = refs.iter().any(|r| r.class(info).is_ok_and(|c| self.rec.class_name(c) == "ConfGc.Child"));
            let mut s = self.state();
            s.marker_references_child |= child;
            s.markers.insert(object.id());
            s.marker_rooted |= s.roots.contains(&object.id());
        }
        Ok(())
    }

    fn root_references2(
        &self,
        roots: &[LiveObject<'_>],
        _kinds: &[COR_PRF_GC_ROOT_KIND],
        _flags: &[COR_PRF_GC_ROOT_FLAGS],
        _ids: &[UINT_PTR],
    ) -> Result<()> {
        let poh = self.pinned_heap_objects(roots)?;
        let mut s = self.state();
        s.poh_in_roots += poh;
        let rooted = roots.iter().any(|r| s.markers.contains(&r.id()));
        s.marker_rooted |= rooted;
        s.roots.extend(roots.iter().map(|r| r.id()));
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        let bounds = corprof::heap::generation_bounds(self.rec.info()?);
        let mut s = self.state();
        s.nested |= !s.open;
        s.open = false;
        s.finished += 1;
        if let Ok(ranges) = bounds {
            s.bounds_checked += 1;
            let mut ok = !ranges.is_empty();
            let mut spans: Vec<(usize, usize)> = Vec::new();
            for r in &ranges {
                let g = r.generation.0;
                s.generations_seen.insert(g);
                ok &= (0..=POH).contains(&g) && r.range.length <= r.range.reserved;
                spans.push((r.range.start, r.range.start + r.range.length));
            }
            spans.sort();
            ok &= spans.windows(2).all(|w| w[0].1 <= w[1].0);
            s.bounds_ok = if s.bounds_checked == 1 { ok } else { s.bounds_ok && ok };
        } else {
            s.bounds_ok = false;
        }
        Ok(())
    }

    fn object_allocated(&self, object: LiveObject<'_>, class: ClassID) -> Result<()> {
        let info = self.rec.info()?;
        let generation = object.generation(info).map(|g| g.generation);
        let (generation, size) =
            (generation.unwrap_or(COR_PRF_GC_GENERATION(u32::MAX)), object.size(info).unwrap_or(0));
        let name = self.rec.class_name(class);
        let mut s = self.state();
        s.allocations += 1;
        match generation.0 {
            LOH => s.large_byte_array |= name == "?" && size >= 100_000,
            POH => s.pinned_byte_array |= name == "?" && (1000..2000).contains(&size),
            g => s.not_large_or_pinned.push(format!("{name} in generation {g}")),
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let major = self.rec.runtime_major();
        let s = self.state();
        for line in &s.induced {
            self.rec.say(line.clone());
        }
        self.rec.say(format!("GCs started: {}, finished: {}", s.started, s.finished));
        self.rec.say(format!("never nested: {}", !s.nested));
        self.rec.say(format!(
            "generation bounds consistent after every GC: {}",
            s.bounds_ok && s.bounds_checked == s.finished
        ));
        let gens: Vec<String> = s.generations_seen.iter().map(u32::to_string).collect();
        self.rec.say(format!("generations in bounds: {}", gens.join(",")));
        self.rec.say(format!("Marker references its Child: {}", s.marker_references_child));
        self.rec.say(format!("a root references the Marker: {}", s.marker_rooted));
        if major >= 5 {
            self.rec.say(format!("large byte array reported: {}", s.large_byte_array));
            self.rec.say(format!("pinned byte array reported: {}", s.pinned_byte_array));
            self.rec.say(format!("other allocations reported: {:?}", s.not_large_or_pinned));
            self.rec.say(format!("pinned-heap objects among object references: {}", s.poh_in_references > 0));
            self.rec.say(format!("pinned-heap objects among root references: {}", s.poh_in_roots > 0));
            self.rec.say(format!("the Marker references a pinned-heap object: {}", s.marker_references_poh));
        } else {
            self.rec.say(format!("allocations reported without the high mask: {}", s.allocations));
        }
        drop(s);
        self.rec.finish()
    }
}
