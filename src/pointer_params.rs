//! The safe shapes of pointer parameters, and the checked conversions the generated thunks use
//! to build them from raw pointers (null checks, counted slices, UTF-16 text).

use crate::object::LiveObject;
use crate::types::ObjectID;
use crate::{HResult, Result};
use std::fmt;
use std::marker::PhantomData;

/// A value the callee must write (an `[out]` pointer). Write once with [`Out::write`].
///
/// The slot may be wider than `T`: an `Out<'_, bool>` stands for a `BOOL *` and writes a whole
/// `BOOL` (0 or 1), so the caller never reads three stale bytes.
pub struct Out<'a, T> {
    ptr: *mut (),
    /// Stores a `T` at `ptr` in the slot's own representation.
    store: unsafe fn(*mut (), T),
    _life: PhantomData<&'a mut T>,
}

impl<'a, T: Copy> Out<'a, T> {
    /// # Safety
    /// `ptr` must be non-null and valid for a write of `T` for `'a`.
    pub unsafe fn new(ptr: *mut T) -> Self {
        unsafe fn store<T>(p: *mut (), v: T) {
            // SAFETY: `p` came from `new`, whose caller promised a valid `*mut T`.
            unsafe { p.cast::<T>().write(v) }
        }
        Out { ptr: ptr.cast(), store: store::<T>, _life: PhantomData }
    }

    /// Stores the result for the caller.
    pub fn write(self, value: T) {
        // SAFETY: `ptr` and `store` were paired by a constructor whose caller vouched for `ptr`.
        unsafe { (self.store)(self.ptr, value) }
    }
}

impl<'a> Out<'a, bool> {
    /// A `bool` out over a C `BOOL *`: writes 1 or 0 as a whole `BOOL`.
    ///
    /// # Safety
    /// `ptr` must be non-null and valid for a write of `BOOL` for `'a`.
    pub unsafe fn from_bool_ptr(ptr: *mut crate::types::BOOL) -> Self {
        unsafe fn store(p: *mut (), v: bool) {
            // SAFETY: `p` came from `from_bool_ptr`, whose caller promised a valid `*mut BOOL`.
            unsafe { p.cast::<crate::types::BOOL>().write(crate::types::BOOL::from(v)) }
        }
        Out { ptr: ptr.cast(), store, _life: PhantomData }
    }
}

/// Borrowed UTF-16 text from the runtime (a `WCHAR` buffer).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct WStr<'a>(&'a [u16]);

impl<'a> WStr<'a> {
    /// Text over `units`, without a terminator.
    pub fn from_units(units: &'a [u16]) -> Self {
        WStr(units)
    }

    /// Reads up to (not including) the first NUL.
    ///
    /// # Safety
    /// `p` must point to a NUL-terminated buffer that lives for `'a`.
    pub unsafe fn from_nul_terminated(p: *const u16) -> Self {
        let mut n = 0;
        // SAFETY: the caller's contract: `p` points to NUL-terminated text, so every read up to the NUL is in bounds.
        unsafe {
            while *p.add(n) != 0 {
                n += 1;
            }
            WStr(std::slice::from_raw_parts(p, n))
        }
    }

    /// The UTF-16 code units, without a terminator.
    pub fn units(&self) -> &'a [u16] {
        self.0
    }

    /// The text as a `String`, replacing invalid UTF-16 and dropping a trailing NUL.
    pub fn to_string_lossy(&self) -> String {
        let units = self.0.strip_suffix(&[0]).unwrap_or(self.0);
        String::from_utf16_lossy(units)
    }
}

impl fmt::Display for WStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

impl fmt::Debug for WStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string_lossy())
    }
}

/// A raw pointer of either mutability (MIDL arrays arrive as `*mut` even when read-only).
pub trait RawPtr<T>: Copy {
    /// The pointer as `*const T`.
    fn as_const(self) -> *const T;
}

impl<T> RawPtr<T> for *const T {
    #[inline(always)]
    fn as_const(self) -> *const T {
        self
    }
}

impl<T> RawPtr<T> for *mut T {
    #[inline(always)]
    fn as_const(self) -> *const T {
        self
    }
}

/// Conversions used by generated thunks.
///
/// # Safety
/// All share one contract: a non-null pointer is valid (for `len` elements, or up to its NUL)
/// for the lifetime `'a` chosen by the caller, which is the callback's duration, as the
/// profiling API promises.
#[allow(clippy::missing_safety_doc)] // the module states the one contract
pub mod raw {
    use super::*;

    /// `&T` from a pointer the runtime must not pass as null (`E_POINTER` if it does).
    #[inline(always)]
    pub unsafe fn in_ref<'a, T>(p: impl RawPtr<T>) -> Result<&'a T> {
        // SAFETY: the caller's contract: `p` is null or valid for reads of `T` for `'a`.
        match unsafe { p.as_const().as_ref() } {
            Some(r) => Ok(r),
            None => null_pointer(),
        }
    }

    /// `Option<&T>`: `None` for null.
    #[inline(always)]
    pub unsafe fn in_opt<'a, T>(p: impl RawPtr<T>) -> Option<&'a T> {
        // SAFETY: as for `in_ref`.
        unsafe { p.as_const().as_ref() }
    }

    /// `&[T]` of `len` elements. No elements (a zero or negative count) is an empty slice
    /// whatever the pointer; a null pointer with a positive count breaks the runtime's contract
    /// and is refused with `E_POINTER`, like every other null the callback cannot do without.
    #[inline(always)]
    pub unsafe fn in_slice<'a, T, L: TryInto<usize>>(p: impl RawPtr<T>, len: L) -> Result<&'a [T]> {
        let p = p.as_const();
        match len.try_into() {
            Ok(0) | Err(_) => Ok(&[]),
            Ok(_) if p.is_null() => null_pointer(),
            // SAFETY: the caller's contract: a non-null `p` points to `len` elements valid for `'a`.
            Ok(n) => Ok(unsafe { std::slice::from_raw_parts(p, n) }),
        }
    }

    /// UTF-16 text, counted by `len` or NUL-terminated.
    #[inline(always)]
    pub unsafe fn in_wstr<'a, L: TryInto<usize>>(p: impl RawPtr<u16>, len: Option<L>) -> Result<WStr<'a>> {
        // SAFETY: as for `in_wstr_opt`, whose contract this passes on.
        match unsafe { in_wstr_opt(p, len) } {
            Some(w) => Ok(w),
            None => null_pointer(),
        }
    }

    /// As [`in_wstr`], `None` for null.
    #[inline(always)]
    pub unsafe fn in_wstr_opt<'a, L: TryInto<usize>>(p: impl RawPtr<u16>, len: Option<L>) -> Option<WStr<'a>> {
        let p = p.as_const();
        if p.is_null() {
            return None;
        }
        Some(match len {
            // SAFETY: the caller's contract: `n` code units at `p`, which is not null, so the
            // slice cannot be refused.
            Some(n) => WStr(unsafe { in_slice(p, n) }.unwrap_or_default()),
            // SAFETY: the caller's contract: NUL-terminated text at `p`.
            None => unsafe { WStr::from_nul_terminated(p) },
        })
    }

    /// `Out<T>` over a `T *` (`E_POINTER` if null).
    #[inline(always)]
    pub unsafe fn out<'a, T: Copy>(p: *mut T) -> Result<Out<'a, T>> {
        // SAFETY: `p` is not null, and the caller vouches it is valid for a write for `'a`.
        if p.is_null() { null_pointer() } else { Ok(unsafe { Out::new(p) }) }
    }

    /// `Out<'_, bool>` over a `BOOL *` (`E_POINTER` if null).
    #[inline(always)]
    pub unsafe fn out_bool<'a>(p: *mut crate::types::BOOL) -> Result<Out<'a, bool>> {
        // SAFETY: `p` is not null, and the caller vouches it is valid for a write of `BOOL` for `'a`.
        if p.is_null() { null_pointer() } else { Ok(unsafe { Out::from_bool_ptr(p) }) }
    }

    /// `&mut T` for a `[ref]` pointer (`E_POINTER` if null).
    #[inline(always)]
    pub unsafe fn ref_mut<'a, T>(p: *mut T) -> Result<&'a mut T> {
        // SAFETY: the caller's contract: `p` is null or valid for reads and writes for `'a`, not aliased.
        match unsafe { p.as_mut() } {
            Some(r) => Ok(r),
            None => null_pointer(),
        }
    }

    /// The refusal of a null pointer, out of line: the check on the hot path is then a test and
    /// a branch, not a select of the return code.
    #[cold]
    fn null_pointer<T>() -> Result<T> {
        Err(HResult::E_POINTER)
    }

    /// `Option<&mut T>`: `None` for null.
    #[inline(always)]
    pub unsafe fn ref_opt<'a, T>(p: *mut T) -> Option<&'a mut T> {
        // SAFETY: as for `ref_mut`.
        unsafe { p.as_mut() }
    }

    /// An object lent for the callback, for a parameter annotated `live` (a null one is kept:
    /// it refuses every question).
    #[inline(always)]
    pub unsafe fn live_object<'a>(id: usize) -> LiveObject<'a> {
        // SAFETY: the annotation's promise, checked against the runtime's source: `id` is an
        // ObjectID the runtime handed to this callback, the object cannot move or die while the
        // callback runs, and `'a` is no longer than the callback.
        unsafe { LiveObject::lent(ObjectID::from_raw(id)) }
    }

    /// `&[LiveObject]` of `len` elements, for an array annotated `live` (as [`in_slice`]).
    #[inline(always)]
    pub unsafe fn live_objects<'a, L: TryInto<usize>>(p: impl RawPtr<usize>, len: L) -> Result<&'a [LiveObject<'a>]> {
        // SAFETY: the caller's contract, as for `in_slice`.
        let ids = unsafe { in_slice(p, len) }?;
        // SAFETY: `LiveObject` is `#[repr(transparent)]` over `ObjectID`, itself over `UINT_PTR`
        // (`usize`), so the elements are the same bytes; each object is lent as in
        // `live_object`, for no longer than the slice.
        Ok(unsafe { std::slice::from_raw_parts(ids.as_ptr().cast::<LiveObject<'a>>(), ids.len()) })
    }
}

#[cfg(test)]
mod tests {
    use super::raw::*;
    use super::*;

    #[test]
    fn conversions_check_null_and_counts() {
        let v = [1u32, 2, 3];
        // SAFETY: every pointer is null or points into a live local, with counts within it.
        unsafe {
            assert_eq!(in_slice(v.as_ptr(), 2u32).unwrap(), &[1, 2]);
            assert_eq!(in_slice(std::ptr::null::<u32>(), 5u32).err(), Some(HResult::E_POINTER));
            assert_eq!(in_slice(std::ptr::null::<u32>(), 0u32).unwrap(), &[] as &[u32]);
            assert_eq!(in_slice(v.as_ptr(), -1i32).unwrap(), &[] as &[u32]);
            assert!(in_ref(std::ptr::null::<u32>()).is_err());
            assert_eq!(*in_ref(v.as_ptr()).unwrap(), 1);
            let mut slot = 0i32;
            out(&mut slot as *mut i32).unwrap().write(7);
            assert_eq!(slot, 7);
            assert_eq!(out(std::ptr::null_mut::<i32>()).err(), Some(HResult::E_POINTER));
            // A bool out writes the whole BOOL, not one byte of it.
            let mut b: crate::types::BOOL = -1;
            out_bool(&mut b).unwrap().write(true);
            assert_eq!(b, 1);
            out_bool(&mut b).unwrap().write(false);
            assert_eq!(b, 0);
        }
    }

    #[test]
    fn wide_strings_read_counted_and_terminated() {
        let text: Vec<u16> = "Main\0".encode_utf16().collect();
        // SAFETY: `text` is NUL-terminated and outlives the calls; the other pointer is null.
        unsafe {
            assert_eq!(in_wstr(text.as_ptr(), None::<u32>).unwrap().to_string(), "Main");
            assert_eq!(in_wstr(text.as_ptr(), Some(2u32)).unwrap().to_string(), "Ma");
            assert!(in_wstr_opt(std::ptr::null::<u16>(), None::<u32>).is_none());
        }
    }
}
