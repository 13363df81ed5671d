//! COM plumbing the generated code builds on: `IUnknown`, the [`Interface`] trait, the owned
//! pointer [`ComPtr`], and [`ComObject`], the heap object behind every vtable this crate hands out
//! (atomic reference count, `QueryInterface` against a static IID list, freed at the last
//! `Release`).

use crate::{GUID, HRESULT, HResult, Result};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering, fence};

/// A COM interface: a struct whose first field points to a vtable of type `Vtbl`.
///
/// Safe code relies on one invariant: every `&T` of an interface type points to a live COM object
/// whose vtable pointer is a real `Vtbl` of that object. That is what makes [`IUnknown::query`],
/// [`ComPtr::from_ref`] and [`Interface::vtable`] safe.
///
/// # Safety
/// The type must be `#[repr(C)]` with the vtable pointer first, and the vtable must start with
/// `IUnknown`'s three slots; `IID` must be the interface's real identifier. Safe code must not be
/// able to make a value of the type or change its vtable pointer (keep the field private, implement
/// neither `Default`, `Clone` nor any constructor), so that a `&T` only ever comes from a real
/// object through `unsafe` code.
pub unsafe trait Interface: Sized {
    /// The interface's identifier, what `QueryInterface` is asked for.
    const IID: GUID;
    /// The interface's name in the header, for messages.
    const NAME: &'static str;
    /// The vtable the object's first field points to.
    type Vtbl;

    /// The object's vtable, for calling a slot directly (the slots themselves are `unsafe`).
    #[inline(always)]
    fn vtable(&self) -> &Self::Vtbl {
        // SAFETY: the trait's contract: `self` is a live object whose first field is a pointer to
        // its `Vtbl`, which lives at least as long as the object.
        unsafe { &**(self as *const Self as *const *const Self::Vtbl) }
    }
}

/// An interface whose objects may be used from any thread at once: `ComPtr<T>` is `Send + Sync`
/// only for these. The runtime documents ICorProfilerInfo and the metadata interfaces as
/// free-threaded; enumerators and IUnknown in general are not.
///
/// # Safety
/// Every object that can be reached as `T` must allow every method, `AddRef` and `Release`
/// included, to be called from any thread, concurrently.
pub unsafe trait FreeThreaded: Interface {}

/// `IUnknown`'s vtable: the first three slots of every COM vtable.
#[repr(C)]
#[allow(non_snake_case, non_camel_case_types)]
pub struct IUnknown_Vtbl {
    /// `IUnknown::QueryInterface`.
    pub QueryInterface:
        unsafe extern "system" fn(this__: *mut IUnknown, riid: *const GUID, ppvObject: *mut *mut c_void) -> HRESULT,
    /// `IUnknown::AddRef`.
    pub AddRef: unsafe extern "system" fn(this__: *mut IUnknown) -> u32,
    /// `IUnknown::Release`.
    pub Release: unsafe extern "system" fn(this__: *mut IUnknown) -> u32,
}

/// The root COM interface. Every generated interface dereferences to it.
///
/// Only reachable by reference: the vtable pointer is private, so safe code cannot make or alter
/// one (see [`Interface`]).
#[repr(C)]
#[allow(non_snake_case)]
pub struct IUnknown {
    lpVtbl: *const IUnknown_Vtbl,
}

// SAFETY: `IUnknown` is `#[repr(C)]` with its vtable pointer alone, and `IUnknown_Vtbl` is the COM IUnknown vtable slot for slot; the IID is COM's.
unsafe impl Interface for IUnknown {
    const IID: GUID = GUID::from_u128(0x00000000_0000_0000_C000_000000000046);
    const NAME: &'static str = "IUnknown";
    type Vtbl = IUnknown_Vtbl;
}

#[allow(non_snake_case)]
impl IUnknown {
    fn this(&self) -> *mut IUnknown {
        self as *const IUnknown as *mut IUnknown
    }

    /// Raw `QueryInterface`.
    ///
    /// # Safety
    /// `ppv` must be valid for a write.
    pub unsafe fn QueryInterface(&self, riid: *const GUID, ppv: *mut *mut c_void) -> HRESULT {
        // SAFETY: `self` is borrowed from a live object whose vtable starts with the IUnknown slots; the caller vouches for `ppv`.
        unsafe { ((*self.lpVtbl).QueryInterface)(self.this(), riid, ppv) }
    }

    /// Raw `AddRef`.
    ///
    /// # Safety
    /// Every `AddRef` must be matched by a `Release`.
    pub unsafe fn AddRef(&self) -> u32 {
        // SAFETY: as for `QueryInterface`; the caller matches this `AddRef` with a `Release`.
        unsafe { ((*self.lpVtbl).AddRef)(self.this()) }
    }

    /// Raw `Release`.
    ///
    /// # Safety
    /// Gives up a reference the caller owns; the object may be freed.
    pub unsafe fn Release(&self) -> u32 {
        // SAFETY: as for `QueryInterface`; the caller gives up a reference it owns.
        unsafe { ((*self.lpVtbl).Release)(self.this()) }
    }

    /// Asks the object for interface `T`: `Ok` holds a new reference, released on drop.
    ///
    /// On the runtime's Info object once the runtime has let go of it (see
    /// [`ProfilerInfo`](crate::ProfilerInfo)): `Err(CORPROF_E_PROFILER_DETACHING)`, without a call.
    pub fn query<T: Interface>(&self) -> Result<ComPtr<T>> {
        let _entered = crate::info_gate::enter_object(self.this().cast())?;
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: `out` is a valid place for the interface pointer.
        let hr = HResult(unsafe { self.QueryInterface(&T::IID, &mut out) });
        hr.ok()?;
        // SAFETY: on success the object stored a reference it handed to us (or null), released by nothing else.
        unsafe { ComPtr::from_raw(out.cast()) }.ok_or(HResult::E_POINTER)
    }
}

/// An owned reference to a COM object: `Release` on drop, `AddRef` on clone.
///
/// `Send + Sync` only when `T` is [`FreeThreaded`] (ICorProfilerInfo, the metadata interfaces):
/// clones share one object, so moving one to another thread is sharing it.
pub struct ComPtr<T: Interface> {
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
}

// SAFETY: `FreeThreaded` promises the object's methods, AddRef and Release included, may run on any
// thread concurrently; a `ComPtr` adds no state of its own.
unsafe impl<T: FreeThreaded> Send for ComPtr<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: FreeThreaded> Sync for ComPtr<T> {}

impl<T: Interface> ComPtr<T> {
    /// Takes over one reference; `None` for null.
    ///
    /// # Safety
    /// `ptr` must be null or a live `T` whose reference the caller owns.
    pub unsafe fn from_raw(ptr: *mut T) -> Option<Self> {
        NonNull::new(ptr).map(|ptr| ComPtr { ptr, _owns: PhantomData })
    }

    /// Takes a new reference to a borrowed object.
    ///
    /// Safe because no `&T` can be faked: an interface type cannot be built or have its vtable
    /// pointer replaced outside `unsafe` code (see [`Interface`]), so `r` is a live object and its
    /// `AddRef` is real; the reference taken here is ours to release.
    pub fn from_ref(r: &T) -> Self {
        // SAFETY: a reference is non-null; the `AddRef` below makes the reference we own.
        let p = unsafe { ComPtr::from_raw(r as *const T as *mut T).unwrap_unchecked() };
        p.add_ref();
        p
    }

    /// `AddRef` for a new owner, unless the object is the runtime's Info object and the runtime
    /// has let go of it: then the count is left alone, and [`Drop`] will not `Release` either.
    fn add_ref(&self) {
        if let Ok(_entered) = crate::info_gate::enter_object(self.ptr.as_ptr().cast()) {
            // SAFETY: the object is live (a `ComPtr` or a reference to it exists, and its gate,
            // if any, is open and entered until this returns); the matching Release is in `drop`.
            unsafe { self.unknown().AddRef() };
        }
    }

    /// The interface pointer, still owned by `self` (no reference added).
    pub fn as_raw(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Gives the reference back to the caller without releasing it.
    pub fn into_raw(self) -> *mut T {
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }

    fn unknown(&self) -> &IUnknown {
        // SAFETY: `ComPtr` holds a live reference, and every interface starts with the IUnknown vtable.
        unsafe { &*(self.ptr.as_ptr() as *const IUnknown) }
    }

    /// Asks for another interface of the same object.
    pub fn cast<U: Interface>(&self) -> Result<ComPtr<U>> {
        self.unknown().query::<U>()
    }
}

impl<T: Interface> std::ops::Deref for ComPtr<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `ComPtr` holds a live reference to a `T`, alive while `self` is borrowed.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Interface> Clone for ComPtr<T> {
    fn clone(&self) -> Self {
        self.add_ref();
        ComPtr { ptr: self.ptr, _owns: PhantomData }
    }
}

impl<T: Interface> Drop for ComPtr<T> {
    /// Releases the reference; on the runtime's Info object once the runtime has let go of it
    /// (and freed it), leaks it instead.
    fn drop(&mut self) {
        if let Ok(_entered) = crate::info_gate::enter_object(self.ptr.as_ptr().cast()) {
            // SAFETY: `self` owns one reference, given up here once; the object is live (its
            // gate, if any, is open and entered until after the call).
            unsafe { self.unknown().Release() };
        }
    }
}

impl<T: Interface> std::fmt::Debug for ComPtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ComPtr<{}>({:p})", T::NAME, self.ptr)
    }
}

/// A Rust type served to COM through one static vtable.
///
/// # Safety
/// `VTBL` must start with an `IUnknown_Vtbl` built by [`IUnknown_Vtbl::new::<Self>`], and every
/// other slot must expect a `this` that points to a `ComObject<Self>`.
pub unsafe trait ComClass: 'static {
    /// The state every call sees as `&Value`; shared across threads.
    type Value: Send + Sync + 'static;
    /// The vtable type the object starts with.
    type Vtbl: 'static;
    /// The one vtable every object of the class shares.
    const VTBL: &'static Self::Vtbl;
    /// The interfaces `QueryInterface` answers besides IUnknown.
    const IIDS: &'static [GUID];
}

/// The heap object behind a COM pointer: the vtable pointer first, as COM requires.
#[repr(C)]
pub struct ComObject<C: ComClass> {
    vtbl: &'static C::Vtbl,
    refs: AtomicU32,
    value: C::Value,
}

impl<C: ComClass> ComObject<C> {
    /// Boxes `value` with one reference owned by the caller; returns the COM `this` pointer.
    pub fn create(value: C::Value) -> *mut IUnknown {
        Box::into_raw(Box::new(ComObject::<C> { vtbl: C::VTBL, refs: AtomicU32::new(1), value })).cast()
    }

    /// The value behind a `this` pointer.
    ///
    /// # Safety
    /// `this` must come from [`ComObject::<C>::create`] and still be alive.
    #[inline(always)]
    pub unsafe fn value<'a>(this: *mut c_void) -> &'a C::Value {
        // SAFETY: the caller's contract: `this` is a live `ComObject<C>`.
        unsafe { &(*(this as *const ComObject<C>)).value }
    }

    /// The current reference count (for tests and diagnostics).
    ///
    /// # Safety
    /// As for [`ComObject::value`].
    pub unsafe fn ref_count(this: *mut c_void) -> u32 {
        // SAFETY: the caller's contract: `this` is a live `ComObject<C>`.
        unsafe { (*(this as *const ComObject<C>)).refs.load(Ordering::Acquire) }
    }
}

impl IUnknown_Vtbl {
    /// The three IUnknown slots for objects of class `C`.
    ///
    /// # Safety
    /// The vtable may only be installed in objects made by [`ComObject::<C>::create`] (as the
    /// start of `C::VTBL`): its slots treat `this` as a `ComObject<C>` and free it at the last
    /// `Release`.
    pub const unsafe fn new<C: ComClass>() -> Self {
        IUnknown_Vtbl { QueryInterface: query_interface::<C>, AddRef: add_ref::<C>, Release: release::<C> }
    }
}

unsafe extern "system" fn query_interface<C: ComClass>(
    this: *mut IUnknown,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() {
        return HResult::E_POINTER.0;
    }
    // SAFETY: the runtime calls through the vtable of a `ComObject<C>` (the vtable is only installed in those), so `this` is one and alive; `ppv` was checked for null, `riid` is checked below.
    unsafe {
        if riid.is_null() {
            *ppv = std::ptr::null_mut();
            return HResult::E_INVALIDARG.0;
        }
        let riid = &*riid;
        if *riid == IUnknown::IID || C::IIDS.contains(riid) {
            add_ref::<C>(this);
            *ppv = this.cast();
            HResult::S_OK.0
        } else {
            *ppv = std::ptr::null_mut();
            HResult::E_NOINTERFACE.0
        }
    }
}

unsafe extern "system" fn add_ref<C: ComClass>(this: *mut IUnknown) -> u32 {
    // SAFETY: the caller holds a reference to `this`, a `ComObject<C>` (the only objects this
    // vtable is installed in), so it is alive.
    let obj = unsafe { &*(this as *const ComObject<C>) };
    obj.refs.fetch_add(1, Ordering::Relaxed) + 1
}

unsafe extern "system" fn release<C: ComClass>(this: *mut IUnknown) -> u32 {
    // SAFETY: the caller owns a reference, so the object is alive until the decrement below.
    let obj = unsafe { &*(this as *const ComObject<C>) };
    // Wrapping: only a Release beyond the count could go below zero, and that is already a
    // use-after-free; an overflow panic here would abort instead of returning.
    let left = obj.refs.fetch_sub(1, Ordering::Release).wrapping_sub(1);
    if left == 0 {
        // Pairs with the Release above in other threads: their uses happen before the free.
        fence(Ordering::Acquire);
        // SAFETY: the count reached zero, so this call owns the last reference and nobody can
        // reach the object any more; it came from `ComObject::<C>::create`.
        unsafe { destroy::<C>(this.cast()) };
    }
    left
}

/// Drops the value and frees the object, from the last `Release`: a runtime thread that must never
/// see a panic. A panic in the value's `Drop` is logged as `corprof: drop of <type> panicked: …`
/// and the object is freed all the same, once.
///
/// # Safety
/// `obj` must come from [`ComObject::create`] (a `Box`) and be unreachable by anyone else.
unsafe fn destroy<C: ComClass>(obj: *mut ComObject<C>) {
    // Only the value has drop glue (the vtable pointer and the count need none). When its `Drop`
    // panics, the drop glue still drops its fields while unwinding, so afterwards the value is
    // gone either way, never to be dropped again.
    // SAFETY: `obj` is valid and its value is dropped exactly once, here.
    let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { std::ptr::drop_in_place(&raw mut (*obj).value) }));
    // Frees the allocation without dropping anything: as `MaybeUninit` the contents have no drop
    // glue, and the layout is that of the `Box<ComObject<C>>` it was allocated as.
    // SAFETY: `obj` came from `Box::into_raw` and is freed exactly once, here.
    drop(unsafe { Box::from_raw(obj.cast::<MaybeUninit<ComObject<C>>>()) });
    if let Err(payload) = dropped {
        let ty = std::any::type_name::<C::Value>();
        crate::report::log_panic(&format_args!("drop of {ty}"), payload, "the object was freed");
    }
}
