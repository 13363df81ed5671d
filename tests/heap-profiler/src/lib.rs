//! A test profiler for `tests/runtime/heap.rs`: ICorProfilerInfo13 handles and the ICorProfilerInfo14
//! non-GC heap in a real runtime. `CORPROF_HEAP_SCENARIO` picks the scenario (`handles`, with
//! the Handles app, or `nongc`, with the NonGcHeap app); at Shutdown the profiler writes one line
//! per fact to the file in `CORPROF_HEAP_OUT`.

use corprof::heap::{HeapRange, ObjectHandle};
use corprof::sync::lock;
use corprof::types::{
    BOOL, COR_PRF_GC_REASON, COR_PRF_HANDLE_TYPE, COR_PRF_MONITOR, ClassID, CorOpenFlags, ObjectID, SIZE_T,
};
use corprof::{CorProfilerCallback, HResult, IUnknown, LiveObject, MetaDataImport, ProfilerInfo, Result};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

pub const CLSID: corprof::GUID = corprof::GUID::parse("2B6C4E1A-9D3F-4F70-8C5B-7A1E0D9F3B64");

/// The three targets of the handle scenario, by the app's class names.
const TARGETS: [(&str, &str); 3] =
    [("weak", "HandlesApp.WeakTarget"), ("strong", "HandlesApp.StrongTarget"), ("pinned", "HandlesApp.PinnedTarget")];
const LITERAL_PREFIX: &str = "corprof-nongc-";

#[derive(Default)]
pub struct Heap {
    info: OnceLock<ProfilerInfo>,
    nongc: OnceLock<bool>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    lines: Vec<String>,
    class_names: HashMap<ClassID, Option<String>>,
    /// The handles on the weak, strong and pinned targets, in TARGETS order.
    handles: [Option<ObjectHandle>; 3],
    /// Weak handles on the former strong and pinned targets, once their own handles are destroyed.
    rewatched: Vec<(&'static str, ObjectHandle)>,
    pinned_at: Option<ObjectID>,
    strong_at: Option<ObjectID>,
    induced: bool,
    induced_gcs: u32,
    moved_ranges: u64,
    pinned_moved: bool,
}

impl Heap {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(HResult::E_UNEXPECTED)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn class_name(&self, class: ClassID) -> Result<String> {
        let info = self.info()?;
        let c = info.get_class_id_info(class)?;
        let import = info.get_module_metadata::<MetaDataImport>(c.module_id, CorOpenFlags::ofRead)?;
        Ok(import.get_type_def_props(c.type_def_token)?.name)
    }

    /// # Safety
    /// `object` must be current: no GC since the runtime handed it out, none during the call.
    unsafe fn object_class_name(&self, object: ObjectID) -> String {
        // SAFETY: this function's contract.
        let class = self.info().and_then(|info| unsafe { info.get_class_from_object(object) });
        match class.and_then(|c| self.class_name(c)) {
            Ok(name) => name,
            Err(e) => format!("<class unknown: {e}>"),
        }
    }

    /// What a handle holds now: `null`, or `alive <class>`.
    fn holds(&self, handle: &ObjectHandle) -> Result<Option<ObjectID>> {
        handle.object()
    }

    /// Called from GarbageCollectionFinished only: the runtime is still suspended for the GC.
    fn describe(&self, handle: &ObjectHandle) -> String {
        match self.holds(handle) {
            Ok(None) => "null".to_string(),
            // SAFETY: read from the handle during GarbageCollectionFinished, while the runtime is
            // suspended for the GC: the object cannot move before the class is read.
            Ok(Some(object)) => format!("alive {}", unsafe { self.object_class_name(object) }),
            Err(e) => format!("error {e}"),
        }
    }

    /// After each induced GC of the handle scenario: what each handle holds; after the fourth,
    /// every handle is destroyed and the former strong and pinned targets watched weakly; after
    /// the fifth, those weak handles read null and are destroyed too.
    fn check_handles(&self, state: &mut State) {
        let n = state.induced_gcs;
        if state.handles.iter().all(Option::is_none) && state.rewatched.is_empty() {
            return;
        }
        let mut parts = Vec::new();
        for ((name, _), handle) in TARGETS.iter().zip(&state.handles) {
            let Some(handle) = handle else { continue };
            let mut part = format!("{name} {}", self.describe(handle));
            // The strong target, allocated among garbage, shows that these GCs do move objects.
            let first = match *name {
                "pinned" => state.pinned_at,
                "strong" => state.strong_at,
                _ => None,
            };
            if first.is_some() {
                let now = self.holds(handle).ok().flatten();
                part += if now == first { " (same address)" } else { " (moved)" };
            }
            parts.push(part);
        }
        for (name, handle) in &state.rewatched {
            parts.push(format!("former {name} {}", self.describe(handle)));
        }
        state.lines.push(format!("gc {n}: {}", parts.join(", ")));

        if n == 4 {
            let info = match self.info() {
                Ok(info) => info,
                Err(_) => return,
            };
            let mut destroyed = Vec::new();
            for (i, (name, _)) in TARGETS.iter().enumerate() {
                let Some(handle) = state.handles[i].take() else { continue };
                let target = self.holds(&handle).ok().flatten();
                match handle.destroy() {
                    Ok(()) => destroyed.push(*name),
                    Err(e) => state.lines.push(format!("destroy {name}: {e}")),
                }
                if let (Some(object), true) = (target, *name != "weak") {
                    // SAFETY: read from a handle during this GarbageCollectionFinished, while the
                    // runtime is still suspended for the GC: `object` is current.
                    let weak = unsafe {
                        ObjectHandle::create_from_id(info, object, COR_PRF_HANDLE_TYPE::COR_PRF_HANDLE_TYPE_WEAK)
                    };
                    match weak {
                        Ok(weak) => state.rewatched.push((name, weak)),
                        Err(e) => state.lines.push(format!("rewatch {name}: {e}")),
                    }
                }
            }
            state.lines.push(format!("destroyed {}", destroyed.join(", ")));
        } else if n == 5 {
            let mut destroyed = Vec::new();
            for (name, handle) in std::mem::take(&mut state.rewatched) {
                match handle.destroy() {
                    Ok(()) => destroyed.push(format!("former {name}")),
                    Err(e) => state.lines.push(format!("destroy former {name}: {e}")),
                }
            }
            state.lines.push(format!("destroyed {}", destroyed.join(", ")));
        }
    }

    /// After the first induced GC of the non-GC heap scenario: the app's literals among the
    /// non-GC objects, each inside a non-GC range, and what GetObjectGeneration says of one.
    fn check_nongc(&self, state: &mut State) -> Result<()> {
        let info = self.info()?;
        let ranges = match corprof::heap::non_gc_heap_bounds(info) {
            Ok(ranges) => ranges,
            Err(e) => {
                state.lines.push(format!("non_gc_heap_bounds: {e}"));
                Vec::new()
            }
        };
        let objects: Vec<ObjectID> = match info.enumerate_non_gc_objects() {
            Ok(objects) => objects.collect(),
            Err(e) => {
                state.lines.push(format!("enumerate_non_gc_objects: {e}"));
                return Ok(());
            }
        };
        state.lines.push(format!("non-GC ranges: {}", if ranges.is_empty() { "none" } else { "some" }));
        let well_formed = ranges.iter().all(|r| r.start != 0 && r.length <= r.reserved);
        state.lines.push(format!("ranges well-formed: {well_formed}"));
        let first_starts_first_range = objects.first().zip(ranges.first()).is_some_and(|(o, r)| o.as_raw() == r.start);
        state.lines.push(format!("first object starts the first range: {first_starts_first_range}"));

        let layout = info.get_string_layout2()?;
        let mut literals = Vec::new();
        for &object in &objects {
            // SAFETY: a non-GC-heap object never moves or dies.
            if unsafe { self.object_class_name(object) } != "System.String" {
                continue;
            }
            // SAFETY: `object` was just enumerated from the runtime's non-GC heap, whose objects
            // are never moved or freed, and it is a System.String, whose length and characters
            // lie at the offsets GetStringLayout2 reported.
            let text = unsafe { read_string(object, layout.string_length_offset, layout.buffer_offset) };
            if text.starts_with(LITERAL_PREFIX) {
                literals.push((text, object));
            }
        }
        literals.sort();
        for (text, object) in &literals {
            // SAFETY: a non-GC-heap object never moves or dies.
            let frozen = unsafe { info.is_frozen_object(*object) };
            let frozen = frozen.map_or_else(|e| e.to_string(), |f| f.to_string());
            let inside = ranges.iter().any(|r: &HeapRange| r.contains(object.as_raw()));
            state.lines.push(format!("literal {text}: frozen {frozen}, inside a non-GC range {inside}"));
        }
        if let Some((text, object)) = literals.first() {
            // SAFETY: a non-GC-heap object never moves or dies.
            let generation = match unsafe { info.get_object_generation(*object) } {
                Ok(g) => format!("Ok generation {}", g.generation.0),
                Err(e) => format!("{e}"),
            };
            state.lines.push(format!("get_object_generation {text}: {generation}"));
        }
        Ok(())
    }
}

/// The characters of a System.String object.
///
/// # Safety
/// `object` must be a live System.String that cannot move during the call, and the offsets the
/// runtime's string layout.
unsafe fn read_string(object: ObjectID, length_offset: u32, buffer_offset: u32) -> String {
    let base = object.as_raw() as *const u8;
    // SAFETY: per this function's contract the length field is a u32 at `length_offset` and the
    // UTF-16 characters follow at `buffer_offset`, inside the live, unmoving object.
    unsafe {
        let len = base.add(length_offset as usize).cast::<u32>().read_unaligned() as usize;
        let chars = std::slice::from_raw_parts(base.add(buffer_offset as usize).cast::<u16>(), len);
        String::from_utf16_lossy(chars)
    }
}

impl CorProfilerCallback for Heap {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        let nongc = std::env::var("CORPROF_HEAP_SCENARIO").as_deref() == Ok("nongc");
        let mask = if nongc {
            COR_PRF_MONITOR::GC
        } else {
            COR_PRF_MONITOR::GC | COR_PRF_MONITOR::OBJECT_ALLOCATED | COR_PRF_MONITOR::COR_PRF_ENABLE_OBJECT_ALLOCATED
        };
        info.set_event_mask(mask)?;
        let _ = self.nongc.set(nongc);
        let _ = self.info.set(info);
        Ok(())
    }

    fn object_allocated(&self, object: LiveObject<'_>, class_id: ClassID) -> Result<()> {
        let mut state = self.state();
        let name = match state.class_names.get(&class_id) {
            Some(name) => name.clone(),
            None => {
                let name = self.class_name(class_id).ok();
                state.class_names.insert(class_id, name.clone());
                name
            }
        };
        let Some(index) = name.and_then(|name| TARGETS.iter().position(|(_, class)| *class == name)) else {
            return Ok(());
        };
        let kind = match index {
            0 => COR_PRF_HANDLE_TYPE::COR_PRF_HANDLE_TYPE_WEAK,
            1 => COR_PRF_HANDLE_TYPE::COR_PRF_HANDLE_TYPE_STRONG,
            _ => COR_PRF_HANDLE_TYPE::COR_PRF_HANDLE_TYPE_PINNED,
        };
        let (label, class) = TARGETS[index];
        match ObjectHandle::create(self.info()?, object, kind) {
            Ok(handle) => {
                state.handles[index] = Some(handle);
                match label {
                    "pinned" => state.pinned_at = Some(object.id()),
                    "strong" => state.strong_at = Some(object.id()),
                    _ => {}
                }
                state.lines.push(format!("created {label} handle on {class}"));
            }
            Err(e) => state.lines.push(format!("create {label} handle: {e}")),
        }
        Ok(())
    }

    fn garbage_collection_started(&self, generations: &[BOOL], reason: COR_PRF_GC_REASON) -> Result<()> {
        let mut state = self.state();
        // The runtime reports GC.Collect() as COR_PRF_GC_INDUCED, but the compacting
        // GC.Collect(2, Forced, true, true) of the Handles app as COR_PRF_GC_OTHER: a full
        // collection counts too (the apps cause no other one).
        let full = generations.get(2).is_some_and(|gen2| *gen2 != 0);
        state.induced = full || reason.0 == COR_PRF_GC_REASON::COR_PRF_GC_INDUCED.0;
        if state.induced {
            state.induced_gcs += 1;
        }
        Ok(())
    }

    fn moved_references2(&self, old: &[ObjectID], new: &[ObjectID], lengths: &[SIZE_T]) -> Result<()> {
        let mut state = self.state();
        for ((old, new), len) in old.iter().zip(new).zip(lengths) {
            if old == new {
                continue;
            }
            state.moved_ranges += 1;
            if let Some(pinned) = state.pinned_at {
                let (start, at) = (old.as_raw(), pinned.as_raw());
                state.pinned_moved |= start <= at && at < start + len;
            }
        }
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        let mut state = self.state();
        if !state.induced {
            return Ok(());
        }
        if *self.nongc.get().unwrap_or(&false) {
            if state.induced_gcs == 1
                && let Err(e) = self.check_nongc(&mut state)
            {
                state.lines.push(format!("error {e}"));
            }
        } else {
            self.check_handles(&mut state);
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let mut state = self.state();
        if !*self.nongc.get().unwrap_or(&false) {
            let line = format!("moved ranges seen: {}", state.moved_ranges > 0);
            state.lines.push(line);
            let line = format!("pinned object inside a moved range: {}", state.pinned_moved);
            state.lines.push(line);
        }
        if let Some(path) = std::env::var_os("CORPROF_HEAP_OUT") {
            let text: String = state.lines.iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(path, text).map_err(|_| HResult::E_FAIL)?;
        }
        Ok(())
    }
}

corprof::export_profiler!(Heap, CLSID);
