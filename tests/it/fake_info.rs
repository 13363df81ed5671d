//! A fake ICorProfilerInfo object for the calling side's tests: a vtable as wide as the tested
//! interface's, every slot answering `E_NOTIMPL` unless a test sets it, a `QueryInterface` that
//! refuses one IID if asked to (a runtime older than the interface) and hands out itself
//! otherwise, and reference counting that never frees (the fake is leaked: it lives forever).

use corprof::{GUID, HRESULT, HResult, IUnknown, ProfilerInfo};
use std::ffi::c_void;
use std::mem::size_of;

/// What every fake starts with, whatever its state: `QueryInterface` reads it.
#[repr(C)]
struct Header {
    vtbl: *const usize,
    refused: Option<GUID>,
}

#[repr(C)]
struct Fake<T> {
    header: Header,
    state: T,
}

/// The state of the fake behind `this`.
///
/// # Safety
/// `this` must be a fake made by [`fake`] with state type `T` (what a slot of its vtable is
/// called with); fakes live forever.
pub unsafe fn state<'a, T>(this: *mut c_void) -> &'a T {
    // SAFETY: the caller's contract: `this` is a live `Fake<T>`.
    unsafe { &(*this.cast::<Fake<T>>()).state }
}

unsafe extern "system" fn unexpected() -> HRESULT {
    HResult::E_NOTIMPL.0
}

unsafe extern "system" fn query_interface(this: *mut c_void, riid: *const GUID, out: *mut *mut c_void) -> HRESULT {
    // SAFETY: every fake starts with its `Header`; the negotiation passes a valid IID and out
    // pointer.
    let (header, iid, out) = unsafe { (&*this.cast::<Header>(), *riid, &mut *out) };
    if header.refused == Some(iid) {
        *out = std::ptr::null_mut();
        return HResult::E_NOINTERFACE.0;
    }
    *out = this;
    0
}

unsafe extern "system" fn add_ref(_: *mut c_void) -> u32 {
    1
}

/// A leaked fake with a vtable the size of `Vtbl`, the `slots` (byte offset in the vtable,
/// function) set, refusing `refused`, and a `ProfilerInfo` negotiated over it.
pub fn fake<Vtbl, T: Send + Sync + 'static>(
    state: T,
    refused: Option<GUID>,
    slots: &[(usize, usize)],
) -> (&'static T, ProfilerInfo) {
    let (state, unknown) = fake_object::<Vtbl, T>(state, refused, slots);
    (state, ProfilerInfo::from_unknown(unknown).unwrap())
}

/// [`fake`] without the `ProfilerInfo`: the object itself, as the runtime hands it to a
/// profiler's initialize.
pub fn fake_object<Vtbl, T: Send + Sync + 'static>(
    state: T,
    refused: Option<GUID>,
    slots: &[(usize, usize)],
) -> (&'static T, &'static IUnknown) {
    let mut vtbl = vec![unexpected as *const () as usize; size_of::<Vtbl>() / size_of::<usize>()];
    vtbl[0] = query_interface as *const () as usize;
    vtbl[1] = add_ref as *const () as usize;
    vtbl[2] = add_ref as *const () as usize; // Release
    for &(offset, function) in slots {
        vtbl[offset / size_of::<usize>()] = function;
    }
    let vtbl: &'static [usize] = Vec::leak(vtbl);
    let obj: &'static Fake<T> = Box::leak(Box::new(Fake { header: Header { vtbl: vtbl.as_ptr(), refused }, state }));
    // SAFETY: the fake starts with its vtable pointer, as every COM object; it lives forever.
    let unknown = unsafe { &*(obj as *const Fake<T>).cast::<IUnknown>() };
    (&obj.state, unknown)
}
