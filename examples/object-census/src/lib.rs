//! An exception, allocation and GC census without one `unsafe`: the exception types thrown
//! (from `ExceptionThrown`'s object), the objects allocated per type with their bytes (from
//! `ObjectAllocated`'s object and its size), the shape of the arrays allocated, and the GCs by
//! reason. Every object the runtime hands over is a [`LiveObject`], lent for its callback, whose
//! questions are safe; the throwing thread is asked through
//! [`ProfilerInfo::with_current_thread`].
//!
//! At shutdown it writes, sorted, to the file in `CORPROF_CENSUS_OUT` (else stderr):
//!
//! ```text
//! thrown <Type> <count>
//! throwing threads <n>
//! alloc <Type> <count> <bytes>
//! array <Type> <dimensions> <count>
//! gc <count> induced <count>
//! own thread <what with_current_thread answers on a thread of the profiler's own>
//! thrower domain is its context <bool>, handle <Ok or the error>
//! ```

#![forbid(unsafe_code)]

use corprof::sync::lock;
use corprof::types::{COR_PRF_GC_REASON, COR_PRF_MONITOR, ClassID};
use corprof::{CorProfilerCallback, IUnknown, LiveObject, ProfilerInfo, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::sync::{Mutex, MutexGuard, OnceLock};

pub const CLSID: corprof::GUID = corprof::GUID::parse("7D3E9A15-C2B8-4F61-9E07-A4D1B6C8E253");

#[derive(Default)]
struct Census {
    /// Type name → exceptions thrown.
    thrown: BTreeMap<String, u64>,
    /// The OS threads that threw.
    throwing_threads: BTreeSet<u32>,
    /// Type name → (objects, bytes).
    allocated: BTreeMap<String, (u64, u64)>,
    /// (array type, dimensions) → arrays.
    arrays: BTreeMap<(String, String), u64>,
    gcs: u64,
    induced: u64,
    /// What `with_current_thread` answered on a thread the runtime does not know.
    own_thread: String,
    /// The throwing thread's other answers (CoreCLR's context is the thread's AppDomain).
    thrower: String,
    /// Names already asked for, by class.
    names: HashMap<ClassID, String>,
}

#[derive(Default)]
pub struct ObjectCensus {
    info: OnceLock<ProfilerInfo>,
    census: Mutex<Census>,
}

impl ObjectCensus {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(corprof::HResult::E_UNEXPECTED)
    }

    fn census(&self) -> MutexGuard<'_, Census> {
        lock(&self.census)
    }

    fn name(&self, census: &mut Census, info: &ProfilerInfo, class: ClassID) -> String {
        census
            .names
            .entry(class)
            .or_insert_with(|| corprof::sig::class_name(info, class).unwrap_or_else(|e| format!("<{e}>")))
            .clone()
    }

    fn report(&self) -> String {
        let census = self.census();
        let mut out = String::new();
        for (name, count) in &census.thrown {
            out += &format!("thrown {name} {count}\n");
        }
        out += &format!("throwing threads {}\n", census.throwing_threads.len());
        for (name, (count, bytes)) in &census.allocated {
            out += &format!("alloc {name} {count} {bytes}\n");
        }
        for ((name, dims), count) in &census.arrays {
            out += &format!("array {name} {dims} {count}\n");
        }
        out += &format!("gc {} induced {}\n", census.gcs, census.induced);
        out += &format!("own thread {}\n", census.own_thread);
        out += &format!("thrower {}\n", census.thrower);
        out
    }
}

impl CorProfilerCallback for ObjectCensus {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(
            COR_PRF_MONITOR::EXCEPTIONS
                | COR_PRF_MONITOR::GC
                | COR_PRF_MONITOR::OBJECT_ALLOCATED
                | COR_PRF_MONITOR::COR_PRF_ENABLE_OBJECT_ALLOCATED,
        )?;
        // A thread of the profiler's own is no managed thread: no token for it.
        let asked = info.clone();
        let own = std::thread::spawn(move || asked.with_current_thread(|t| t.id()).map(|_| ()))
            .join()
            .map_or_else(|_| "panicked".to_string(), |r| r.map_or_else(|e| e.to_string(), |()| "a token".to_string()));
        self.census().own_thread = own;
        let _ = self.info.set(info);
        Ok(())
    }

    fn exception_thrown(&self, thrown: LiveObject<'_>) -> Result<()> {
        let info = self.info()?;
        let class = thrown.class(info)?;
        let (thread, thrower) = info.with_current_thread(|t| {
            let same = t.app_domain(info).ok().zip(t.context(info).ok()).map(|(d, c)| d.as_raw() == c.as_raw());
            let handle = t.handle(info).map_or_else(|e| e.to_string(), |_| "Ok".to_string());
            (t.os_thread_id(info), format!("domain is its context {}, handle {handle}", same == Some(true)))
        })?;
        let thread = thread?;
        let mut census = self.census();
        let name = self.name(&mut census, info, class);
        *census.thrown.entry(name).or_default() += 1;
        census.throwing_threads.insert(thread);
        census.thrower = thrower;
        Ok(())
    }

    fn object_allocated(&self, object: LiveObject<'_>, class: ClassID) -> Result<()> {
        let info = self.info()?;
        let size = object.size(info)? as u64;
        let array = object.array_info(info)?;
        let mut census = self.census();
        let name = self.name(&mut census, info, class);
        if let Some(array) = array {
            let dims: Vec<String> = array.dimension_sizes.iter().map(u32::to_string).collect();
            *census.arrays.entry((name.clone(), dims.join("x"))).or_default() += 1;
        }
        let entry = census.allocated.entry(name).or_default();
        entry.0 += 1;
        entry.1 += size;
        Ok(())
    }

    fn garbage_collection_started(
        &self,
        _generations: &[corprof::types::BOOL],
        reason: COR_PRF_GC_REASON,
    ) -> Result<()> {
        let mut census = self.census();
        census.gcs += 1;
        census.induced += u64::from(reason == COR_PRF_GC_REASON::COR_PRF_GC_INDUCED);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let report = self.report();
        match std::env::var_os("CORPROF_CENSUS_OUT") {
            Some(path) => {
                corprof::files::write_regular(path.as_ref(), report.as_bytes()).map_err(|_| corprof::HResult::E_FAIL)?
            }
            None => {
                let _ = std::io::stderr().write_all(report.as_bytes());
            }
        }
        Ok(())
    }
}

corprof::export_profiler!(ObjectCensus, CLSID);
