//! Runtime support for the generated safe wrappers: version negotiation, the buffers behind
//! `String`/`Vec` results, UTF-16 conversion, and `CorEnum`, the iterator over `HCORENUM`
//! enumerations.

use crate::com::{ComPtr, IUnknown, Interface};
pub use crate::info_gate::Entered;
use crate::info_gate::Gate;
use crate::{GUID, HRESULT, HResult, Result};
use std::ffi::c_void;

/// Types for which all-zero bytes are a valid value: what out values, buffers and enumeration
/// batches start as before the callee writes them.
///
/// Implemented here for the primitive numbers, `bool`, raw pointers, arrays of zeroable types,
/// [`GUID`] and [`HResult`]; the generator implements it for the plain-data structs and newtype
/// enums of the header (after checking every field is zeroable). References, `fn` pointers, `char`
/// and Rust enums are not.
///
/// # Safety
/// A value of the type whose bytes are all zero must be valid (and the type must have no drop glue,
/// hence `Copy`).
pub unsafe trait Zeroable: Copy {}

macro_rules! zeroable {
    ($($t:ty),*) => { $(
        // SAFETY: zero is a valid value of every primitive number, of `bool` (false), of a raw
        // pointer (null), and of GUID and HResult (plain integers inside).
        unsafe impl Zeroable for $t {}
    )* };
}
zeroable!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64, bool, GUID, HResult);
// SAFETY: a null thin raw pointer is valid (fat ones are left out: a null vtable is not).
unsafe impl<T> Zeroable for *const T {}
// SAFETY: as for `*const T`.
unsafe impl<T> Zeroable for *mut T {}
// SAFETY: an array of zero bytes is an array of zeroed elements, each valid.
unsafe impl<T: Zeroable, const N: usize> Zeroable for [T; N] {}

/// Writes an enum value by the header's names, for the generated `Display` impls: the first
/// enumerator of that value; for a flag enum (`flags`), the single-bit enumerators it holds joined
/// by ` | `, then any bits no enumerator names in hex (a zero value prints as the enumerator worth 0,
/// or `0`). A value no name covers prints as `Type(value)`.
pub fn fmt_enum(
    f: &mut std::fmt::Formatter<'_>,
    type_name: &str,
    value: i128,
    names: &[(i128, &str)],
    flags: bool,
) -> std::fmt::Result {
    if let Some((_, name)) = names.iter().find(|(v, _)| *v == value) {
        // A named combination (`COR_PRF_MONITOR_ALL`) still prints as its flags: what is set
        // matters more than which mask happens to equal it.
        if !flags || value == 0 || (value > 0 && value.count_ones() == 1) {
            return f.write_str(name);
        }
    }
    if !flags || value <= 0 {
        return if flags && value == 0 { f.write_str("0") } else { write!(f, "{type_name}({value})") };
    }
    let mut rest = value;
    let mut first = true;
    for (bit, name) in names.iter().filter(|(v, _)| *v > 0 && v.count_ones() == 1) {
        if rest & bit != 0 {
            f.write_str(if first { "" } else { " | " })?;
            f.write_str(name)?;
            rest &= !bit;
            first = false;
        }
    }
    if rest != 0 {
        write!(f, "{}{rest:#x}", if first { "" } else { " | " })?;
    }
    Ok(())
}

/// A zeroed `T`: the starting value of an out parameter.
#[inline(always)]
pub fn zeroed<T: Zeroable>() -> T {
    // SAFETY: `T: Zeroable` says all-zero bytes are a valid `T`.
    unsafe { std::mem::zeroed() }
}

/// A safe wrapper over an interface family (`ProfilerInfo`, `MetaDataImport`, …), or a plain
/// `ComPtr<T>`: what methods returning "an interface you name by IID" can produce.
pub trait Wrapper: Sized {
    /// The IID to ask the factory method for.
    const ROOT_IID: GUID;
    /// Asks `unknown` for the family (its newest version the object answers, for a family).
    fn from_unknown(unknown: &IUnknown) -> Result<Self>;
}

impl<T: crate::Interface> Wrapper for ComPtr<T> {
    const ROOT_IID: GUID = T::IID;
    fn from_unknown(unknown: &IUnknown) -> Result<Self> {
        unknown.query::<T>()
    }
}

/// Takes over a reference returned through an out pointer and wraps it.
///
/// # Safety
/// `raw` must be null or a live COM object whose reference the caller owns.
pub unsafe fn wrap_out<W: Wrapper>(raw: *mut IUnknown) -> Result<W> {
    // SAFETY: the caller's contract: `raw` is null or a reference it owns.
    let owned = unsafe { ComPtr::from_raw(raw) }.ok_or(HResult::E_POINTER)?;
    W::from_unknown(&owned)
}

/// The newest interface of a family an object answered, and which version that is.
///
/// When the object is the runtime's Info object (the one handed to `Initialize` or
/// `InitializeForAttach`), it is gated (`crate::info_gate`): once the runtime lets go of the
/// object, [`enter`](Self::enter) answers `CORPROF_E_PROFILER_DETACHING` instead of letting a
/// call through, and dropping or cloning leaks the reference instead of calling `Release` or
/// `AddRef` on a freed object (`ComPtr` does that for every pointer to the object). Other objects
/// (metadata, enumerators, fakes in tests) are not gated.
#[derive(Clone)]
pub struct Negotiated {
    ptr: ComPtr<IUnknown>,
    version: u32,
    gate: Option<&'static Gate>,
}

impl Negotiated {
    /// Asks for each IID, newest first; `iids` lists the family oldest first.
    pub fn negotiate(unknown: &IUnknown, iids: &[GUID]) -> Result<Negotiated> {
        let gate = crate::info_gate::find((unknown as *const IUnknown).cast());
        // A gate closed already means the object is gone: asking it anything would reach freed memory.
        let _entered = gate.map(|g| g.enter()).transpose()?;
        for (i, iid) in iids.iter().enumerate().rev() {
            let mut out: *mut c_void = std::ptr::null_mut();
            // SAFETY: `unknown` is a live object; `out` is a valid place for the interface pointer.
            if unsafe { unknown.QueryInterface(iid, &mut out) } >= 0
                    // SAFETY: on success `QueryInterface` stored a new reference (or null), released by nothing else.
                && let Some(ptr) = unsafe { ComPtr::from_raw(out.cast::<IUnknown>()) }
            {
                // The runtime's Info object answers every version at one address; should an
                // interface pointer differ from the one handed over, it is found by its own address.
                let gate = gate.or_else(|| crate::info_gate::find(ptr.as_raw().cast()));
                return Ok(Negotiated { ptr, version: i as u32 + 1, gate });
            }
        }
        Err(HResult::E_NOINTERFACE)
    }

    /// The negotiated version: 1 for the family's oldest interface.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Enters the object's gate for one call: `Err(CORPROF_E_PROFILER_DETACHING)` once the
    /// runtime has let go of the object (the call must not be made), otherwise a guard to hold
    /// until the call has returned. `None` inside for an object without a gate. Every generated
    /// wrapper method starts with this.
    #[inline(always)]
    pub fn enter(&self) -> Result<Option<Entered>> {
        match self.gate {
            Some(gate) => gate.enter().map(Some),
            None => Ok(None),
        }
    }

    /// The gate calls through this object enter, if it has one (the runtime's Info object).
    pub fn gate(&self) -> Option<&'static Gate> {
        self.gate
    }

    /// Whether calls through this object are refused (its gate has closed).
    pub fn is_closed(&self) -> bool {
        self.gate.is_some_and(Gate::is_closed)
    }

    /// The object as interface `I` of family version `version`, if the object has it. Each
    /// version's vtable extends the previous one, so the newest pointer serves every older one.
    /// Wrappers offer this safely, typed by the family: `info.get::<ICorProfilerInfo5>()`.
    ///
    /// # Safety
    /// `I` must be the interface at position `version` (1 = oldest) of the `iids` this was
    /// negotiated with, and each of those interfaces must extend the previous one.
    #[inline]
    pub unsafe fn at<I: Interface>(&self, version: u32) -> Result<&I> {
        if version <= self.version {
            // SAFETY: the object answered version `self.version` of the family, whose vtable starts
            // with every older version's (the caller's contract), so it is also an `I`; it lives
            // as long as `self.ptr`, which the returned borrow keeps.
            Ok(unsafe { &*(self.ptr.as_raw() as *const I) })
        } else {
            Err(HResult::E_NOINTERFACE)
        }
    }
}

/// An interface of a wrapper's family and the version it is in that family: what lets
/// `Wrapper::get::<I>()` hand out `&I` safely. The generator implements it for every version of
/// every family (`ICorProfilerInfo5`: family `ProfilerInfo`, version 5).
///
/// # Safety
/// `Family`'s wrapper must negotiate over its family's IIDs oldest first, with `Self` at position
/// `VERSION` (1 = oldest), and every interface of the family must extend the previous one.
pub unsafe trait FamilyMember: Interface {
    /// The wrapper of the family this interface belongs to.
    type Family;
    /// Its position in the family, 1 for the oldest.
    const VERSION: u32;
}

/// NUL-terminated UTF-16 for an `LPCWSTR` parameter.
pub fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// UTF-16 without a terminator, for counted text.
pub fn wide_counted(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// A buffer for an out array or string, grown when the callee says it needs more. Starts
/// empty, so the first call asks for the size (capacity 0, null pointer) and the second fills.
pub struct Buffer<T> {
    data: Vec<T>,
}

impl<T: Zeroable> Buffer<T> {
    /// An empty buffer (capacity 0).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Buffer { data: Vec::new() }
    }

    /// Null while empty: APIs read that as "tell me the size".
    pub fn ptr(&mut self) -> *mut T {
        if self.data.is_empty() { std::ptr::null_mut() } else { self.data.as_mut_ptr() }
    }

    /// How many elements fit.
    pub fn cap(&self) -> usize {
        self.data.len()
    }

    /// Whether `needed` elements fit.
    pub fn fits(&self, needed: usize) -> bool {
        needed <= self.data.len()
    }

    /// Grows to `needed` zeroed elements.
    pub fn grow(&mut self, needed: usize) {
        self.data.resize(needed, zeroed());
    }

    /// The first `len` elements.
    pub fn to_vec(&self, len: usize) -> Vec<T> {
        self.slice(len).to_vec()
    }

    /// The first `len` elements, borrowed.
    pub fn slice(&self, len: usize) -> &[T] {
        &self.data[..len.min(self.data.len())]
    }
}

impl Buffer<u16> {
    /// The first `len` code units as text, without trailing NULs.
    pub fn to_string(&self, len: usize) -> String {
        let units = &self.data[..len.min(self.data.len())];
        let end = units.iter().rposition(|u| *u != 0).map_or(0, |i| i + 1);
        String::from_utf16_lossy(&units[..end])
    }
}

/// The buffers of one call, as a tuple (`(Buffer<u16>,)`, `(Buffer<u16>, Buffer<T>)`, …): what
/// [`ask_then_fill`] checks and grows together.
pub trait Buffers<const N: usize> {
    /// Whether each buffer holds the number of elements the callee says it needs.
    fn fit(&self, needed: &[usize; N]) -> bool;
    /// Grows each buffer to what the callee needs.
    fn grow(&mut self, needed: &[usize; N]);
}

macro_rules! buffers {
    ($n:literal: $($t:ident $i:tt),+) => {
        impl<$($t: Zeroable),+> Buffers<$n> for ($(Buffer<$t>,)+) {
            fn fit(&self, needed: &[usize; $n]) -> bool {
                $(self.$i.fits(needed[$i]))&&+
            }
            fn grow(&mut self, needed: &[usize; $n]) {
                $(self.$i.grow(needed[$i]);)+
            }
        }
    };
}
buffers!(1: A 0);
buffers!(2: A 0, B 1);
buffers!(3: A 0, B 1, C 2);
buffers!(4: A 0, B 1, C 2, D 3);

/// How many calls [`ask_then_fill`] makes at most: ask, fill, and two more should the needed size
/// grow between calls (a module loading more types meanwhile).
pub const MAX_CALLS: u32 = 4;

/// The ask-size-then-fill protocol of every method with out buffers: calls `call` with the
/// buffers (empty at first, so the callee only reports sizes) until they hold what the callee says
/// it needs, at most [`MAX_CALLS`] times, and returns the last call's result. `call` returns its
/// result and the needed sizes, one per buffer; the generated wrappers check its HRESULT after.
pub fn ask_then_fill<B: Buffers<N>, R, const N: usize>(
    buffers: &mut B,
    mut call: impl FnMut(&mut B) -> (R, [usize; N]),
) -> R {
    let mut calls = 1;
    loop {
        let (result, needed) = call(buffers);
        if buffers.fit(&needed) || calls == MAX_CALLS {
            return result;
        }
        buffers.grow(&needed);
        calls += 1;
    }
}

/// The `HCORENUM` handle type of the metadata API.
pub type HCORENUM = *mut c_void;

type Fill<'a, T> = Box<dyn FnMut(&mut HCORENUM, &mut [T], &mut u32) -> HRESULT + 'a>;
type Control<'a> = Box<dyn FnMut(EnumOp<'_>) -> HRESULT + 'a>;

/// What a [`CorEnum`] asks of the interface its handle belongs to, besides the batches: the
/// handle never leaves the enumeration, so the runtime only ever sees one it made.
pub enum EnumOp<'a> {
    /// Free the handle (`CloseEnum`), once, when the enumeration drops.
    Close(HCORENUM),
    /// Write how many items the enumeration holds in all (`CountEnum`).
    Count(HCORENUM, &'a mut u32),
    /// Move the cursor to an index counted from the first item (`ResetEnum`).
    Reset(HCORENUM, u32),
}

/// An `HCORENUM` enumeration (`EnumTypeDefs`, `EnumMethods`, …) as an iterator. Fetches in
/// batches; closes the handle when dropped. The first batch is fetched by `new`, so an error
/// there is returned; an error in a later batch ends the iteration. [`total`](Self::total),
/// [`remaining`](Self::remaining) and [`reset`](Self::reset) offer what `CountEnum` and
/// `ResetEnum` do on the enumeration's own handle, which safe code never holds.
pub struct CorEnum<'a, T> {
    handle: HCORENUM,
    buf: Vec<T>,
    pos: usize,
    len: usize,
    done: bool,
    /// How many items `next` has handed out since the start (or the index `reset` moved to).
    index: usize,
    fill: Fill<'a, T>,
    control: Control<'a>,
}

const BATCH: usize = 64;

impl<'a, T: Zeroable> CorEnum<'a, T> {
    /// An enumeration that calls `fill` for each batch, and `control` to count, reset and (once,
    /// at the end) close its handle.
    pub fn new(
        fill: impl FnMut(&mut HCORENUM, &mut [T], &mut u32) -> HRESULT + 'a,
        control: impl FnMut(EnumOp<'_>) -> HRESULT + 'a,
    ) -> Result<Self> {
        let mut e = CorEnum {
            handle: std::ptr::null_mut(),
            buf: vec![zeroed(); BATCH],
            pos: 0,
            len: 0,
            done: false,
            index: 0,
            fill: Box::new(fill),
            control: Box::new(control),
        };
        e.refill()?;
        Ok(e)
    }

    fn refill(&mut self) -> Result<()> {
        let mut n = 0u32;
        let hr = (self.fill)(&mut self.handle, &mut self.buf, &mut n);
        self.pos = 0;
        self.len = (n as usize).min(self.buf.len());
        // S_FALSE (or a short batch) means the enumeration is exhausted.
        self.done = hr != 0 || self.len < self.buf.len();
        HResult(hr).ok()
    }

    /// How many items the enumeration holds in all, whatever has been read (`CountEnum`). An
    /// enumeration that found nothing counts 0. `Err(E_NOTIMPL)` from an interface without
    /// `CountEnum` (IMetaDataAssemblyImport).
    pub fn total(&mut self) -> Result<usize> {
        if self.handle.is_null() {
            // The runtime frees an enumeration that found nothing at once, leaving no handle.
            return Ok(0);
        }
        let mut n = 0u32;
        HResult((self.control)(EnumOp::Count(self.handle, &mut n))).ok()?;
        Ok(n as usize)
    }

    /// How many items `next` has yet to hand out: [`total`](Self::total) less those read.
    pub fn remaining(&mut self) -> Result<usize> {
        Ok(self.total()?.saturating_sub(self.index))
    }

    /// Moves to the item at `index` (0 starts over, [`total`](Self::total) is the end;
    /// `ResetEnum`), so that `next` hands it out next. `Err(E_INVALIDARG)` for an index past the
    /// end, `Err(E_NOTIMPL)` from an interface without `ResetEnum` or `CountEnum`.
    pub fn reset(&mut self, index: usize) -> Result<()> {
        if self.handle.is_null() {
            // Nothing was found: there is nothing to move over, and only the start is in range.
            return if index == 0 { Ok(()) } else { Err(HResult::E_INVALIDARG) };
        }
        // CoreCLR's ResetEnum stores the position unchecked, and its enumeration then takes
        // `end - position` items, unsigned: a position past the end reads past the scope's array.
        if index > self.total()? {
            return Err(HResult::E_INVALIDARG);
        }
        let Ok(at) = u32::try_from(index) else { return Err(HResult::E_INVALIDARG) };
        HResult((self.control)(EnumOp::Reset(self.handle, at))).ok()?;
        self.index = index;
        self.refill()
    }
}

impl<T: Zeroable> Iterator for CorEnum<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        if self.pos == self.len && (self.done || self.refill().is_err() || self.len == 0) {
            return None;
        }
        self.pos += 1;
        self.index += 1;
        Some(self.buf[self.pos - 1])
    }
}

impl<T> Drop for CorEnum<'_, T> {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            (self.control)(EnumOp::Close(self.handle));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn cor_enum_batches_and_closes_once() {
        let closed = Cell::new(0);
        let total = 150u32;
        let mut given = 0u32;
        let e = CorEnum::<u32>::new(
            |h, buf, n| {
                *h = 0x1 as HCORENUM;
                let k = (total - given).min(buf.len() as u32);
                for (i, slot) in buf.iter_mut().take(k as usize).enumerate() {
                    *slot = given + i as u32;
                }
                given += k;
                *n = k;
                if k == 0 { 1 } else { 0 }
            },
            |op| {
                if let EnumOp::Close(_) = op {
                    closed.set(closed.get() + 1);
                }
                0
            },
        )
        .unwrap();
        let all: Vec<u32> = e.collect();
        assert_eq!(all, (0..150).collect::<Vec<_>>());
        assert_eq!(closed.get(), 1);
    }

    /// A runtime enumeration of `total` items, its cursor shared with the test, counted and
    /// rewound through `EnumOp`: the handle the callee sees is always the one it made.
    #[test]
    fn cor_enum_counts_and_resets_through_its_own_handle() {
        let total = 150u32;
        let cursor = Cell::new(0u32);
        let handle = 0x77 as HCORENUM;
        let seen = std::cell::RefCell::new(Vec::new());
        let mut e = CorEnum::<u32>::new(
            |h, buf, n| {
                assert!(h.is_null() || *h == handle);
                *h = handle;
                let k = (total - cursor.get()).min(buf.len() as u32);
                for (i, slot) in buf.iter_mut().take(k as usize).enumerate() {
                    *slot = cursor.get() + i as u32;
                }
                cursor.set(cursor.get() + k);
                *n = k;
                if k == 0 { 1 } else { 0 }
            },
            |op| {
                let h = match op {
                    EnumOp::Close(h) => h,
                    EnumOp::Count(h, n) => {
                        *n = total;
                        h
                    }
                    EnumOp::Reset(h, at) => {
                        cursor.set(at.min(total));
                        h
                    }
                };
                seen.borrow_mut().push(h);
                0
            },
        )
        .unwrap();
        assert_eq!(e.total(), Ok(150));
        assert_eq!(e.by_ref().take(10).count(), 10);
        assert_eq!(e.remaining(), Ok(140));
        e.reset(100).unwrap();
        assert_eq!(e.next(), Some(100));
        assert_eq!(e.remaining(), Ok(49));
        e.reset(0).unwrap();
        assert_eq!(e.by_ref().count(), 150);
        e.reset(150).unwrap();
        assert_eq!(e.next(), None, "the end is a position with nothing to read");
        // Past the end never reaches the callee's ResetEnum (CoreCLR's would read past its array).
        assert_eq!(e.reset(151), Err(HResult::E_INVALIDARG));
        assert_eq!(e.reset(usize::MAX), Err(HResult::E_INVALIDARG));
        drop(e);
        assert!(seen.borrow().iter().all(|h| *h == handle), "only the enumeration's own handle reaches the callee");
        assert_eq!(
            seen.borrow().len(),
            3 + 2 * 3 + 2 + 1,
            "count ×3 (total, remaining ×2), count and reset ×3, count ×2 (the refused resets), close"
        );
    }

    #[test]
    fn ask_then_fill_asks_grows_and_gives_up() {
        // A callee that needs 3 then 5 elements (the data grew between calls), then stays at 5.
        let mut needs = [3usize, 5, 5].into_iter();
        let mut calls = 0;
        let mut buffers = (Buffer::<u16>::new(),);
        let last = ask_then_fill(&mut buffers, |(b,)| {
            calls += 1;
            let n = needs.next().unwrap_or(5);
            (b.cap(), [n])
        });
        assert_eq!((calls, last), (3, 5));
        // A callee that always needs more stops after MAX_CALLS.
        let mut calls = 0;
        let mut buffers = (Buffer::<u8>::new(), Buffer::<u32>::new());
        ask_then_fill(&mut buffers, |(a, _)| {
            calls += 1;
            ((), [a.cap() + 1, 0])
        });
        assert_eq!(calls, MAX_CALLS);
    }

    /// A bare COM object answering IUnknown only, for the gate tests.
    struct Bare;
    // SAFETY: `VTBL` is IUnknown's three slots built for `Bare`, installed only by `ComObject::create`.
    unsafe impl crate::com::ComClass for Bare {
        type Value = ();
        type Vtbl = crate::com::IUnknown_Vtbl;
        // SAFETY: this is `Bare::VTBL`, installed only in `ComObject::<Bare>` objects.
        const VTBL: &'static crate::com::IUnknown_Vtbl = &unsafe { crate::com::IUnknown_Vtbl::new::<Bare>() };
        const IIDS: &'static [GUID] = &[];
    }

    #[test]
    fn a_closed_gate_refuses_calls_and_leaks_instead_of_release_and_add_ref() {
        use crate::com::ComObject;
        let object = ComObject::<Bare>::create(());
        let profiler = 0x5150 as *const c_void;
        crate::info_gate::open(profiler, object.cast());
        // SAFETY: `object` is live, and holds the reference `create` gave this test.
        let unknown = unsafe { &*object };
        let refs = || {
            // SAFETY: the test keeps its own reference, so the object stays alive.
            unsafe { ComObject::<Bare>::ref_count(object.cast()) }
        };
        let gated = Negotiated::negotiate(unknown, &[IUnknown::IID]).unwrap();
        let other = ComPtr::from_ref(unknown);
        assert!(gated.enter().unwrap().is_some(), "the object handed to initialize is gated");
        assert_eq!(refs(), 3);
        drop(gated.clone());
        assert_eq!(refs(), 3, "open: clone and drop balance");

        crate::info_gate::close_for(profiler);
        assert_eq!(gated.enter().err(), Some(crate::info_gate::CLOSED));
        assert!(gated.is_closed());
        assert_eq!(unknown.query::<IUnknown>().err(), Some(crate::info_gate::CLOSED));
        assert_eq!(Negotiated::negotiate(unknown, &[IUnknown::IID]).err(), Some(crate::info_gate::CLOSED));
        let clones = (gated.clone(), other.clone());
        drop((gated, other, clones));
        assert_eq!(refs(), 3, "closed: no AddRef, no Release reached the object");
        // The test's own reference: leaked too (the gate stays closed for this address), as a
        // freed runtime object is.
    }

    #[test]
    fn buffers_ask_then_fill_and_strip_nuls() {
        let mut b = Buffer::<u16>::new();
        assert!(b.ptr().is_null());
        assert!(!b.fits(5));
        b.grow(5);
        let text: Vec<u16> = "abcd\0".encode_utf16().collect();
        // SAFETY: the buffer was grown to 5 elements, and `text` has 5.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), b.ptr(), 5) };
        assert_eq!(b.to_string(5), "abcd");
        assert_eq!(wide("ab"), vec![97, 98, 0]);
    }
}
