//! Objects a callback lends: [`LiveObject`], an `ObjectID` whose lifetime is the callback's.
//!
//! An `ObjectID` is an object's address, current until the next GC moves or frees it; every
//! method taking one is `unsafe` (docs/guide/reliability.md, "IDs that die"). Inside some
//! callbacks, though, no GC can run: the runtime calls them in cooperative mode on the thread
//! that allocated or threw (a GC waits for that thread to return), or from inside a GC with the
//! runtime suspended. Those callbacks lend their objects as `LiveObject<'_>` (the annotation
//! `live:` in `annotations/callbacks.yaml`, with the reason read from the runtime's source for
//! each), and the questions below are safe on them: the lifetime ends with the callback, and the
//! type cannot leave the callback's thread.
//!
//! One thing can still move a lent object before its callback returns: the profiler itself,
//! calling from that callback something that may trigger a GC. `ObjectAllocated` and
//! `ExceptionThrown` are GC-triggering callbacks, so the runtime takes such calls there
//! (`get_class_from_token` loading a type may allocate, and a GC then moves the object the
//! runtime protects for itself, not the profiler's copy of its address). Every such call (the
//! annotation `refuse_in: [hook]`, CoreCLR's `kP2EETriggers` methods) marks the objects lent on
//! its thread as possibly moved, and from then on until the outermost lending callback returns
//! they answer every question with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` instead of asking the
//! runtime about an address that may be stale. Ask about the objects first, then make such calls.

use crate::types::{COR_PRF_GC_GENERATION_RANGE, ClassID, ObjectID};
use crate::{HResult, ProfilerInfo, Result};
use std::fmt;
use std::marker::PhantomData;

/// An object the runtime lent to the running callback: it cannot move or die before the callback
/// returns, so asking about it is safe.
///
/// Only generated callback code makes one (no public constructor), for the parameters the
/// annotations mark `live`; the callback's docs say why each is. It is `Copy`, but its lifetime
/// is the callback's, so it cannot be kept in a field, a `static` or a `thread_local!`, and it is
/// neither `Send` nor `Sync`. Its [`id`](LiveObject::id) is a plain `ObjectID` for tables and
/// logs; using that later stays `unsafe`, as for every stored ID.
///
/// The runtime passes null entries in some arrays (roots whose object is gone, say): a null
/// `LiveObject` answers every question with `E_INVALIDARG` before the runtime is asked.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LiveObject<'a> {
    id: ObjectID,
    /// The callback's lifetime, and `!Send + !Sync` (a raw pointer's auto traits).
    _lent: PhantomData<(&'a (), *const ())>,
}

/// What [`LiveObject::array_info`] tells of an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayInfo {
    /// The length of each dimension (one for a vector), as many as the array's rank.
    pub dimension_sizes: Vec<u32>,
    /// The lower bound of each dimension (0 for a vector).
    pub lower_bounds: Vec<i32>,
    /// Where the elements start. An address that moves with the object: reading through it is
    /// `unsafe`, and only sound inside the callback that lent the object.
    pub data: *mut u8,
}

/// The runtime's limit on an array's rank (ECMA-335 allows 32 dimensions at most).
const MAX_RANK: u32 = 32;

impl LiveObject<'static> {
    /// The null object, for tests calling a callback by hand: it refuses every question with
    /// `E_INVALIDARG`, so it needs no lifetime.
    pub const NULL: LiveObject<'static> = LiveObject { id: ObjectID::NULL, _lent: PhantomData };
}

impl<'a> LiveObject<'a> {
    /// Lends `id` for `'a`.
    ///
    /// # Safety
    /// `id` is null or the current address of an object that cannot move or die during `'a`:
    /// an `ObjectID` the runtime passed to a callback whose annotation says `live`, with `'a`
    /// no longer than that call.
    pub(crate) unsafe fn lent(id: ObjectID) -> Self {
        LiveObject { id, _lent: PhantomData }
    }

    /// The `ObjectID`, as a plain value (for tables and logs). Handing it back to the runtime
    /// after this callback is `unsafe`: the next GC may have moved or freed the object.
    pub fn id(self) -> ObjectID {
        self.id
    }

    /// Whether the runtime passed a null object (every question then answers `E_INVALIDARG`).
    pub fn is_null(self) -> bool {
        self.id.is_null()
    }

    /// The ID to ask about: refused when null, and when a call that may trigger a GC ran on this
    /// thread while it was lent (see the module's docs).
    pub(crate) fn checked(self) -> Result<ObjectID> {
        if self.id.is_null() {
            return Err(HResult::E_INVALIDARG);
        }
        if crate::lending::moved() {
            return Err(HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE);
        }
        Ok(self.id)
    }

    /// The object's class
    /// ([`GetClassFromObject`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo-getclassfromobject-method)).
    pub fn class(self, info: &ProfilerInfo) -> Result<ClassID> {
        let id = self.checked()?;
        // SAFETY: `id` is not null, and the object cannot move or die while the callback that
        // lent it for `'a` runs, which it still does: `self` cannot outlive it.
        unsafe { info.get_class_from_object(id) }
    }

    /// The object's size in bytes
    /// ([`GetObjectSize2`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo4-getobjectsize2-method),
    /// or `GetObjectSize` where ICorProfilerInfo4 is missing): unaligned for arrays and strings;
    /// round up to 8 to sum heap bytes.
    pub fn size(self, info: &ProfilerInfo) -> Result<usize> {
        let id = self.checked()?;
        // SAFETY: as in `class`: a non-null object lent for a callback that is still running.
        match unsafe { info.get_object_size2(id) } {
            Err(HResult::E_NOINTERFACE) => {
                // SAFETY: as above.
                unsafe { info.get_object_size(id) }.map(|s| s as usize)
            }
            size => size,
        }
    }

    /// The dimensions, lower bounds and element address of an array
    /// ([`GetArrayObjectInfo`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo-getarrayobjectinfo-method)),
    /// `None` when the object is not an array.
    pub fn array_info(self, info: &ProfilerInfo) -> Result<Option<ArrayInfo>> {
        let id = self.checked()?;
        let Some(array) = info.is_array_class(self.class(info)?)? else {
            return Ok(None);
        };
        if array.rank == 0 || array.rank > MAX_RANK {
            return Err(HResult::E_UNEXPECTED);
        }
        let mut dimension_sizes = vec![0u32; array.rank as usize];
        let mut lower_bounds = vec![0i32; array.rank as usize];
        // SAFETY: the object is lent for a callback still running (as in `class`); both arrays
        // hold `rank` elements, the count passed.
        let data = unsafe {
            info.get_array_object_info(id, array.rank, dimension_sizes.as_mut_ptr(), lower_bounds.as_mut_ptr())
        }?;
        Ok(Some(ArrayInfo { dimension_sizes, lower_bounds, data }))
    }

    /// The generation the object is in, and that generation's range
    /// ([`GetObjectGeneration`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo2-getobjectgeneration-method)).
    /// The runtime refuses it inside a GC (between `GarbageCollectionStarted` and
    /// `GarbageCollectionFinished`) and for a non-GC-heap object (`CORPROF_E_NOT_GC_OBJECT`).
    pub fn generation(self, info: &ProfilerInfo) -> Result<COR_PRF_GC_GENERATION_RANGE> {
        let id = self.checked()?;
        // SAFETY: as in `class`: a non-null object lent for a callback that is still running.
        unsafe { info.get_object_generation(id) }
    }

    /// Whether the object is on the non-GC (frozen) heap
    /// ([`IsFrozenObject`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo10-isfrozenobject-method)).
    #[cfg(corprof_iface = "ICorProfilerInfo10")]
    pub fn is_frozen(self, info: &ProfilerInfo) -> Result<bool> {
        let id = self.checked()?;
        // SAFETY: as in `class`: a non-null object lent for a callback that is still running.
        unsafe { info.is_frozen_object(id) }
    }
}

impl fmt::Debug for LiveObject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LiveObject({})", self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lent_object_is_its_id_and_null_is_refused_before_the_runtime() {
        // SAFETY: nothing dereferences these IDs: null is refused before any call, and the other
        // is only compared.
        let (raw, null, some) = unsafe {
            let raw = ObjectID::from_raw(0x1000);
            (raw, LiveObject::lent(ObjectID::NULL), LiveObject::lent(raw))
        };
        assert!(null.is_null());
        assert_eq!(null, LiveObject::NULL);
        assert_eq!(null.checked(), Err(HResult::E_INVALIDARG));
        assert_eq!(some.id(), raw);
        assert_eq!(some.checked(), Ok(raw));
        assert_eq!(std::mem::size_of::<LiveObject<'_>>(), std::mem::size_of::<ObjectID>());
    }
}
