//! The managed heap from a profiler's side: GC handles it owns ([`ObjectHandle`],
//! ICorProfilerInfo13) and the address ranges of the GC's generations ([`generation_bounds`]) and
//! of the non-GC heap ([`non_gc_heap_bounds`], ICorProfilerInfo14).
//!
//! The raw calls behind these (`CreateHandle`, `DestroyHandle`, `GetObjectIDFromHandle`,
//! `GetGenerationBounds`, `GetNonGCHeapBounds`) have no generated safe wrapper (annotation
//! `wrapper: { manual: … }`): a handle is one slot of the runtime's handle table, so a copyable
//! handle destroyed twice gives the slot two owners, and the ranges' starts are typed `ObjectID` by
//! the header but are addresses (an empty generation's start is no object at all).

use crate::types::{COR_PRF_GC_GENERATION, COR_PRF_GC_GENERATION_RANGE, ULONG};
use crate::{HResult, ProfilerInfo, Result};

/// An address range of the managed heap: `start .. start + length` holds objects,
/// `start + length .. start + reserved` is reserved for more. Plain addresses: an address in a
/// range is not an object by itself (see [`ObjectID::from_raw`](crate::types::ObjectID::from_raw)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeapRange {
    /// The first address.
    pub start: usize,
    /// How many bytes from `start` hold objects.
    pub length: usize,
    /// How many bytes from `start` are reserved (at least `length`).
    pub reserved: usize,
}

impl HeapRange {
    /// Whether `address` lies in the part of the range that holds objects.
    pub fn contains(&self, address: usize) -> bool {
        address.wrapping_sub(self.start) < self.length
    }
}

/// One range of a GC generation, from [`generation_bounds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GenerationRange {
    /// Generation 0, 1, 2, the large object heap or the pinned object heap.
    pub generation: COR_PRF_GC_GENERATION,
    /// Where it is.
    pub range: HeapRange,
}

/// [`ICorProfilerInfo2::GetGenerationBounds`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo2-getgenerationbounds-method):
/// the memory ranges of each generation of the GC heap, as addresses.
///
/// Only stable while no GC runs: call it from a GC callback or while the runtime is suspended
/// (`GarbageCollectionFinished`, say); elsewhere the ranges may already have changed when you read
/// them (harmless here: they are only numbers).
pub fn generation_bounds(info: &ProfilerInfo) -> Result<Vec<GenerationRange>> {
    // Held through the raw call: the runtime's object cannot be let go under it (info_gate).
    let _entered = info.negotiated().enter()?;
    let raw = info.get::<crate::interfaces::ICorProfilerInfo2>()?;
    let ranges = fill(|cap, count, ranges: *mut COR_PRF_GC_GENERATION_RANGE| {
        // SAFETY: `fill` passes room for `cap` records and a place for the count; `raw` is this
        // object's ICorProfilerInfo2.
        unsafe { raw.GetGenerationBounds(cap, count, ranges) }
    })?;
    Ok(ranges.iter().map(generation_range).collect())
}

/// The ask-then-fill loop of the two bounds methods: each writes min(capacity, ranges) records
/// and the number of ranges it has, which may grow between two calls, so it asks again (a few
/// times) while the runtime has more than the buffer held.
fn fill<T: crate::wrapper_support::Zeroable>(
    mut call: impl FnMut(ULONG, &mut ULONG, *mut T) -> crate::HRESULT,
) -> Result<Vec<T>> {
    let mut ranges: Vec<T> = Vec::new();
    for _ in 0..8 {
        let mut count: ULONG = 0;
        let cap = ULONG::try_from(ranges.len()).map_err(|_| HResult::E_OUTOFMEMORY)?;
        HResult(call(cap, &mut count, ranges.as_mut_ptr())).ok()?;
        if (count as usize) <= ranges.len() {
            ranges.truncate(count as usize);
            return Ok(ranges);
        }
        ranges = vec![crate::wrapper_support::zeroed(); count as usize];
    }
    Err(HResult::E_UNEXPECTED)
}

fn generation_range(r: &COR_PRF_GC_GENERATION_RANGE) -> GenerationRange {
    GenerationRange {
        generation: r.generation,
        range: HeapRange { start: r.rangeStart.as_raw(), length: r.rangeLength, reserved: r.rangeLengthReserved },
    }
}

#[cfg(corprof_iface = "ICorProfilerInfo14")]
pub use non_gc::non_gc_heap_bounds;

#[cfg(corprof_iface = "ICorProfilerInfo14")]
mod non_gc {
    use super::HeapRange;
    use crate::types::COR_PRF_NONGC_HEAP_RANGE;
    use crate::{ProfilerInfo, Result};

    /// [`ICorProfilerInfo14::GetNonGCHeapBounds`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo14-getnongcheapbounds-method)
    /// (CoreCLR 8+): the ranges of the non-GC (frozen) heap, where the runtime puts objects that
    /// never move or die (string literals, `typeof` objects). `Err(E_NOINTERFACE)` before .NET 8.
    pub fn non_gc_heap_bounds(info: &ProfilerInfo) -> Result<Vec<HeapRange>> {
        // Held through the raw call: the runtime's object cannot be let go under it (info_gate).
        let _entered = info.negotiated().enter()?;
        let raw = info.get::<crate::interfaces::ICorProfilerInfo14>()?;
        let ranges = super::fill(|cap, count, ranges: *mut COR_PRF_NONGC_HEAP_RANGE| {
            // SAFETY: `fill` passes room for `cap` records and a place for the number of
            // segments; `raw` is this object's Info14.
            unsafe { raw.GetNonGCHeapBounds(cap, count, ranges) }
        })?;
        Ok(ranges
            .iter()
            .map(|r| HeapRange { start: r.rangeStart.as_raw(), length: r.rangeLength, reserved: r.rangeLengthReserved })
            .collect())
    }
}

#[cfg(corprof_iface = "ICorProfilerInfo13")]
pub use handles::ObjectHandle;

#[cfg(corprof_iface = "ICorProfilerInfo13")]
mod handles {
    use crate::interfaces::ICorProfilerInfo13;
    use crate::object::LiveObject;
    use crate::types::{COR_PRF_HANDLE_TYPE, ObjectHandleID, ObjectID};
    use crate::{HResult, ProfilerInfo, Result};

    /// A GC handle the profiler owns (ICorProfilerInfo13, CoreCLR 7+): a strong handle keeps its
    /// object alive, a weak one follows it until it dies, a pinned one also keeps it from moving.
    ///
    /// Owned, like a `Box`: not `Copy` or `Clone`, so it is destroyed exactly once, by
    /// [`destroy`](ObjectHandle::destroy) (which says whether the runtime agreed) or by its drop
    /// (which ignores the answer). After that the handle-table slot may belong to the app's next
    /// `GCHandle.Alloc`, and nothing of the profiler's can still reach it. A handle still held
    /// when the runtime has let the profiler go (after Shutdown or a detach) is left to the
    /// runtime: its destruction then fails quietly.
    pub struct ObjectHandle {
        info: ProfilerInfo,
        raw: ObjectHandleID,
    }

    impl ObjectHandle {
        /// [`ICorProfilerInfo13::CreateHandle`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo13-createhandle-method):
        /// a handle of `kind` to an object a callback lent. `Err(E_NOINTERFACE)` before .NET 7,
        /// `Err(E_INVALIDARG)` for a null object.
        pub fn create(info: &ProfilerInfo, object: LiveObject<'_>, kind: COR_PRF_HANDLE_TYPE) -> Result<ObjectHandle> {
            let id = object.checked()?;
            // SAFETY: a non-null object lent for a callback that is still running (`object`
            // cannot outlive it), and no call that may trigger a GC ran on this thread since
            // (`checked`): it cannot move or die before this call returns.
            unsafe { Self::create_from_id(info, id, kind) }
        }

        /// [`create`](Self::create) from an `ObjectID` kept from earlier (under a runtime
        /// suspension the profiler holds, say).
        ///
        /// # Safety
        /// `object` must be the current address of a live object, and no garbage collection may
        /// run before this call returns: an `ObjectID` is valid from the runtime handing it out
        /// until the next GC. That holds inside the callback that gave it (on a managed thread),
        /// under a runtime suspension the profiler holds, and always for a non-GC-heap object.
        pub unsafe fn create_from_id(
            info: &ProfilerInfo,
            object: ObjectID,
            kind: COR_PRF_HANDLE_TYPE,
        ) -> Result<ObjectHandle> {
            // Held through the raw call: the runtime's object cannot be let go under it (info_gate).
            let _entered = info.negotiated().enter()?;
            let raw_info = info.get::<ICorProfilerInfo13>()?;
            let mut raw = ObjectHandleID::NULL;
            // SAFETY: the caller vouches that `object` is current; `raw` is a valid place for the
            // handle; `raw_info` is this object's Info13.
            HResult(unsafe { raw_info.CreateHandle(object, kind, &mut raw) }).ok()?;
            if raw.is_null() {
                return Err(HResult::E_FAIL);
            }
            Ok(ObjectHandle { info: info.clone(), raw })
        }

        /// [`ICorProfilerInfo13::GetObjectIDFromHandle`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo13-getobjectidfromhandle-method):
        /// the object the handle refers to now, or `None` once a weak handle's object has died.
        /// The ID is current until the next GC (see [`ObjectID`]'s rules in docs/guide/reliability.md).
        pub fn object(&self) -> Result<Option<ObjectID>> {
            let _entered = self.info.negotiated().enter()?;
            let raw_info = self.info.get::<ICorProfilerInfo13>()?;
            let mut object = ObjectID::NULL;
            // SAFETY: `self.raw` is a handle this value created and has not destroyed (it owns
            // it: destroying consumes the value); `object` is a valid place for the answer.
            HResult(unsafe { raw_info.GetObjectIDFromHandle(self.raw, &mut object) }).ok()?;
            Ok((!object.is_null()).then_some(object))
        }

        /// The runtime's handle, for logs (it cannot be handed back to the runtime from safe code).
        pub fn id(&self) -> ObjectHandleID {
            self.raw
        }

        /// [`ICorProfilerInfo13::DestroyHandle`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo13-destroyhandle-method):
        /// frees the handle's slot, consuming the handle so it cannot be used or destroyed again.
        pub fn destroy(mut self) -> Result<()> {
            self.release()
        }

        /// Destroys the handle once: the slot is forgotten before the call, so neither a second
        /// `release` nor the drop can reach it again.
        fn release(&mut self) -> Result<()> {
            let raw = std::mem::replace(&mut self.raw, ObjectHandleID::NULL);
            if raw.is_null() {
                return Ok(());
            }
            let _entered = self.info.negotiated().enter()?;
            let raw_info = self.info.get::<ICorProfilerInfo13>()?;
            // SAFETY: `raw` was created by this value and is destroyed here exactly once (it was
            // replaced by null above); `raw_info` is this object's Info13.
            HResult(unsafe { raw_info.DestroyHandle(raw) }).ok()
        }
    }

    impl Drop for ObjectHandle {
        fn drop(&mut self) {
            let _ = self.release();
        }
    }

    impl std::fmt::Debug for ObjectHandle {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "ObjectHandle({})", self.raw)
        }
    }
}
