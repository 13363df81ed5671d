//! The calling side against fake COM objects written in Rust: the `calls` fixture's generated
//! wrappers call hand-built vtables the way a profiler calls the runtime. Every annotation shape
//! is exercised: out values, result structs, sized strings and arrays, slices, optional and
//! in-out pointers, interface outs, IID-picked outs, HCORENUM iterators, enumerator iterators,
//! version negotiation and Release on drop.

#[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, dead_code, clippy::all)]
mod calls {
    include!("../../corprof-gen/tests/fixtures/calls/expected.rs");
}

use calls::interfaces::*;
use calls::types::*;
use calls::wrappers::FixInfo;
use corprof::IUnknown;
use corprof::imp::{ComClass, ComObject, IUnknown_Vtbl};
use corprof::{ComPtr, GUID, HRESULT, HResult};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// What a fake records, to prove the wrapper's call pattern.
#[derive(Default)]
struct Fake {
    name_calls: AtomicUsize,
    closes: AtomicUsize,
    dropped: Option<&'static AtomicUsize>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        if let Some(d) = self.dropped {
            d.fetch_add(1, SeqCst);
        }
    }
}

fn fake<'a>(this: *mut IFixInfo) -> &'a Fake {
    unsafe { ComObject::<FakeV2>::value(this.cast()) }
}

const NAME: &str = "fixture-name";

unsafe extern "system" fn get_value(_: *mut IFixInfo, id: ULONG, out: *mut ULONG) -> HRESULT {
    unsafe { *out = id * 10 };
    0
}
unsafe extern "system" fn get_pair(_: *mut IFixInfo, _id: ULONG, a: *mut ULONG, b: *mut UINT_PTR) -> HRESULT {
    unsafe { (*a, *b) = (1, 2) };
    0
}
unsafe extern "system" fn get_name(
    this: *mut IFixInfo,
    _id: ULONG,
    cap: ULONG,
    len: *mut ULONG,
    buf: *mut WCHAR,
) -> HRESULT {
    fake(this).name_calls.fetch_add(1, SeqCst);
    let text: Vec<u16> = NAME.encode_utf16().chain([0]).collect();
    unsafe { *len = text.len() as ULONG };
    if (cap as usize) < text.len() || buf.is_null() {
        return 0;
    }
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buf, text.len()) };
    0
}
unsafe extern "system" fn get_ids(_: *mut IFixInfo, cap: ULONG, len: *mut ULONG, ids: *mut UINT_PTR) -> HRESULT {
    unsafe { *len = 5 };
    if cap >= 5 {
        for i in 0..5 {
            unsafe { *ids.add(i) = 10 + i };
        }
    }
    0
}
unsafe extern "system" fn sum(
    _: *mut IFixInfo,
    n: ULONG,
    values: *mut ULONG,
    bias: *const ULONG,
    total: *mut ULONG,
) -> HRESULT {
    let values = unsafe { std::slice::from_raw_parts(values, n as usize) };
    let bias = if bias.is_null() { 0 } else { unsafe { *bias } };
    unsafe { *total = values.iter().sum::<u32>() + bias };
    0
}
unsafe extern "system" fn greet(_: *mut IFixInfo, who: *const WCHAR, len: *mut ULONG) -> HRESULT {
    let mut n = 0;
    while unsafe { *who.add(n) } != 0 {
        n += 1;
    }
    unsafe { *len = n as ULONG };
    0
}
unsafe extern "system" fn bump(_: *mut IFixInfo, counter: *mut ULONG) -> HRESULT {
    unsafe { *counter += 1 };
    0
}
unsafe extern "system" fn get_enum(_: *mut IFixInfo, out: *mut *mut IFixEnum) -> HRESULT {
    let e = ComObject::<EnumClass>::create(EnumState { next: AtomicUsize::new(0) });
    unsafe { *out = e.cast() };
    0
}
unsafe extern "system" fn get_object(this: *mut IFixInfo, riid: *const IID, out: *mut *mut c_void) -> HRESULT {
    unsafe { (*(this as *mut IUnknown)).QueryInterface(riid, out) }
}
/// Hands out 0..100 in batches of at most `cap`; the handle holds the position.
unsafe extern "system" fn enum_items(
    _: *mut IFixInfo,
    h: *mut HCORENUM,
    items: *mut ULONG,
    cap: ULONG,
    n: *mut ULONG,
) -> HRESULT {
    unsafe {
        if (*h).is_null() {
            *h = Box::into_raw(Box::new(0u32)).cast();
        }
        let pos = &mut *((*h) as *mut u32);
        let k = (100 - *pos).min(cap);
        for i in 0..k {
            *items.add(i as usize) = *pos + i;
        }
        *pos += k;
        *n = k;
        if k == 0 { 1 } else { 0 }
    }
}
unsafe extern "system" fn close_enum(this: *mut IFixInfo, h: HCORENUM) {
    fake(this).closes.fetch_add(1, SeqCst);
    drop(unsafe { Box::from_raw(h as *mut u32) });
}
/// The fake's handle is a box of its position: 100 items in all, the cursor moved by ResetEnum.
unsafe extern "system" fn count_enum(_: *mut IFixInfo, h: HCORENUM, out: *mut ULONG) -> HRESULT {
    unsafe { *out = if h.is_null() { 0 } else { 100 } };
    0
}
unsafe extern "system" fn reset_enum(_: *mut IFixInfo, h: HCORENUM, pos: ULONG) -> HRESULT {
    if !h.is_null() {
        unsafe { *(h as *mut u32) = pos.min(100) };
    }
    0
}
unsafe extern "system" fn count(_: *mut IFixInfo) -> ULONG {
    42
}
unsafe extern "system" fn later(_: *mut IFixInfo2, out: *mut ULONG) -> HRESULT {
    unsafe { *out = 99 };
    0
}
/// Adds the two IDs' raw values, as a runtime would read the objects behind them.
unsafe extern "system" fn get_thread_value(
    _: *mut IFixInfo2,
    thread: ThreadID,
    object: ObjectID,
    out: *mut ULONG,
) -> HRESULT {
    unsafe { *out = (thread.as_raw() + object.as_raw()) as ULONG };
    0
}
static PAUSES: AtomicUsize = AtomicUsize::new(0);
unsafe extern "system" fn pause(_: *mut IFixInfo2) -> HRESULT {
    PAUSES.fetch_add(1, SeqCst);
    0
}
unsafe extern "system" fn resume(_: *mut IFixInfo2) -> HRESULT {
    PAUSES.fetch_sub(1, SeqCst);
    0
}
/// Calls both function pointers once, as the runtime calls a profiler's hooks.
unsafe extern "system" fn set_hooks(_: *mut IFixInfo2, hook: FixHook, visit: FixVisit) -> HRESULT {
    unsafe {
        if let Some(h) = hook {
            h(7);
        }
        match visit {
            Some(v) => v(8, std::ptr::null_mut()),
            None => 0,
        }
    }
}

/// Even ids are ready (S_OK), odd ones are not (S_FALSE); 0 is invalid.
unsafe extern "system" fn is_ready(_: *mut IFixInfo, id: ULONG) -> HRESULT {
    match id {
        0 => HResult::E_INVALIDARG.0,
        _ => (id % 2) as HRESULT,
    }
}
unsafe extern "system" fn find_value(this: *mut IFixInfo, id: ULONG, out: *mut ULONG) -> HRESULT {
    let hr = unsafe { is_ready(this, id) };
    if hr == 0 {
        unsafe { *out = id * 100 };
    }
    hr
}

/// # Safety
/// Only for `C::VTBL`, as `IUnknown_Vtbl::new` requires.
const unsafe fn v1<C: ComClass>() -> IFixInfo_Vtbl {
    IFixInfo_Vtbl {
        // SAFETY: the caller's contract.
        base__: unsafe { IUnknown_Vtbl::new::<C>() },
        GetValue: get_value,
        GetPair: get_pair,
        GetName: get_name,
        GetIds: get_ids,
        Sum: sum,
        Greet: greet,
        Bump: bump,
        GetEnum: get_enum,
        GetObject: get_object,
        EnumItems: enum_items,
        CloseEnum: close_enum,
        CountEnum: count_enum,
        ResetEnum: reset_enum,
        Count: count,
        IsReady: is_ready,
        FindValue: find_value,
    }
}

/// A runtime object that has IFixInfo and IFixInfo2.
struct FakeV2;
unsafe impl ComClass for FakeV2 {
    type Value = Fake;
    type Vtbl = IFixInfo2_Vtbl;
    // SAFETY: FakeV2's own vtable.
    const VTBL: &'static IFixInfo2_Vtbl = &IFixInfo2_Vtbl {
        base__: unsafe { v1::<FakeV2>() },
        Later: later,
        SetHooks: set_hooks,
        GetThreadValue: get_thread_value,
        Pause: pause,
        Resume: resume,
    };
    const IIDS: &'static [GUID] = &[IID_IFixInfo, IID_IFixInfo2];
}

/// An older runtime object: IFixInfo only.
struct FakeV1;
unsafe impl ComClass for FakeV1 {
    type Value = Fake;
    type Vtbl = IFixInfo_Vtbl;
    // SAFETY: FakeV1's own vtable.
    const VTBL: &'static IFixInfo_Vtbl = &unsafe { v1::<FakeV1>() };
    const IIDS: &'static [GUID] = &[IID_IFixInfo];
}

struct EnumState {
    next: AtomicUsize,
}
static ENUMS_DROPPED: AtomicUsize = AtomicUsize::new(0);
impl Drop for EnumState {
    fn drop(&mut self) {
        ENUMS_DROPPED.fetch_add(1, SeqCst);
    }
}
unsafe extern "system" fn next(this: *mut IFixEnum, celt: ULONG, items: *mut ULONG, fetched: *mut ULONG) -> HRESULT {
    let state = unsafe { ComObject::<EnumClass>::value(this.cast()) };
    let all = [7u32, 8, 9];
    let mut k = 0;
    while k < celt as usize {
        let i = state.next.fetch_add(1, SeqCst);
        if i >= all.len() {
            break;
        }
        unsafe { *items.add(k) = all[i] };
        k += 1;
    }
    unsafe { *fetched = k as ULONG };
    if k == celt as usize { 0 } else { 1 }
}
struct EnumClass;
unsafe impl ComClass for EnumClass {
    type Value = EnumState;
    type Vtbl = IFixEnum_Vtbl;
    // SAFETY: EnumClass's own vtable.
    const VTBL: &'static IFixEnum_Vtbl =
        &IFixEnum_Vtbl { base__: unsafe { IUnknown_Vtbl::new::<EnumClass>() }, Next: next };
    const IIDS: &'static [GUID] = &[IID_IFixEnum];
}

/// The wrapper over a fresh V2 object (our creation reference is released once wrapped).
fn info_v2(dropped: Option<&'static AtomicUsize>) -> FixInfo {
    let raw =
        ComObject::<FakeV2>::create(Fake { dropped, name_calls: AtomicUsize::new(0), closes: AtomicUsize::new(0) });
    let owned = unsafe { ComPtr::from_raw(raw) }.unwrap();
    FixInfo::from_unknown(&owned).unwrap()
}

#[test]
fn negotiation_picks_the_newest_version_and_refuses_newer_methods() {
    let v2 = info_v2(None);
    assert_eq!((v2.version(), v2.interface_name()), (2, "IFixInfo2"));
    assert_eq!(v2.later().unwrap(), 99);

    let raw = ComObject::<FakeV1>::create(Fake::default());
    let owned = unsafe { ComPtr::from_raw(raw) }.unwrap();
    let v1 = FixInfo::from_unknown(&owned).unwrap();
    assert_eq!((v1.version(), v1.interface_name()), (1, "IFixInfo"));
    assert_eq!(v1.later().unwrap_err(), HResult::E_NOINTERFACE, "a method the object lacks is an error, not a crash");
    assert_eq!(v1.get_value(4).unwrap(), 40);
}

#[test]
fn ids_that_die_and_annotated_calls_go_through_unsafe_wrappers() {
    let info = info_v2(None);
    // SAFETY: the fake reads no thread or object, only the numbers.
    let value = unsafe { info.get_thread_value(ThreadID::from_raw(3), ObjectID::from_raw(4)) };
    assert_eq!(value.unwrap(), 7);
    // SAFETY: the fake's pause is only a counter, undone by the raw resume below.
    unsafe { info.pause() }.unwrap();
    assert_eq!(PAUSES.load(SeqCst), 1);
    // `wrapper: { manual }`: no safe `resume`, the raw slot is still there.
    // SAFETY: the object is the fake, whose Resume slot takes no argument.
    assert_eq!(unsafe { info.get::<IFixInfo2>().unwrap().Resume() }, 0);
    assert_eq!(PAUSES.load(SeqCst), 0);
}

#[test]
fn out_values_and_result_structs() {
    let info = info_v2(None);
    assert_eq!(info.get_value(3).unwrap(), 30);
    let pair = info.get_pair(0).unwrap();
    assert_eq!((pair.first, pair.second), (1, 2));
    assert_eq!(info.count().unwrap(), 42, "non-HRESULT returns come back as values");
}

#[test]
fn strings_and_arrays_ask_for_the_size_then_fill() {
    let info = info_v2(None);
    assert_eq!(info.get_name(1).unwrap(), NAME);
    let fake = unsafe { ComObject::<FakeV2>::value(info.get::<IFixInfo>().unwrap() as *const _ as *mut c_void) };
    assert_eq!(fake.name_calls.load(SeqCst), 2, "one call to ask the size, one to fill");
    assert_eq!(info.get_ids().unwrap(), vec![10, 11, 12, 13, 14]);
}

#[test]
fn slices_optional_pointers_strings_and_in_out() {
    let info = info_v2(None);
    assert_eq!(info.sum(&[1, 2, 3], None).unwrap(), 6);
    assert_eq!(info.sum(&[1, 2, 3], Some(&10)).unwrap(), 16);
    assert_eq!(info.sum(&[], None).unwrap(), 0);
    assert_eq!(info.greet("héllo").unwrap(), 5);
    let mut counter = 41;
    info.bump(&mut counter).unwrap();
    assert_eq!(counter, 42);
}

#[test]
fn interface_outs_come_back_wrapped_and_are_released_on_drop() {
    let info = info_v2(None);
    let before = ENUMS_DROPPED.load(SeqCst);
    let items: Vec<u32> = info.get_enum().unwrap().collect();
    assert_eq!(items, [7, 8, 9], "the enumerator ends after its last item");
    assert_eq!(ENUMS_DROPPED.load(SeqCst), before + 1, "dropping the wrapper released the enumerator");

    let again: FixInfo = info.get_object::<FixInfo>().unwrap();
    assert_eq!(again.get_value(2).unwrap(), 20);
    let e: Result<ComPtr<IFixEnum>, HResult> = info.get_object::<ComPtr<IFixEnum>>();
    assert_eq!(e.unwrap_err(), HResult::E_NOINTERFACE);
}

#[test]
fn hcorenum_enumerations_iterate_in_batches_and_close_once() {
    let info = info_v2(None);
    let all: Vec<u32> = info.enum_items().unwrap().collect();
    assert_eq!(all, (0..100).collect::<Vec<_>>());
    let partial: Vec<u32> = info.enum_items().unwrap().take(3).collect();
    assert_eq!(partial, [0, 1, 2]);
    let fake = unsafe { ComObject::<FakeV2>::value(info.get::<IFixInfo>().unwrap() as *const _ as *mut c_void) };
    assert_eq!(fake.closes.load(SeqCst), 2, "each enumeration closed its handle exactly once");
}

/// What CountEnum and ResetEnum offer, on the enumeration's own handle: safe code never holds an
/// HCORENUM (the raw-handle wrappers are `unsafe`: tests/compile_fail/enum_handles_are_owned.rs).
#[test]
fn hcorenum_enumerations_count_and_rewind_their_own_handle() {
    let info = info_v2(None);
    let mut items = info.enum_items().unwrap();
    assert_eq!(items.total(), Ok(100));
    assert_eq!(items.by_ref().take(70).last(), Some(69));
    assert_eq!(items.remaining(), Ok(30));
    items.reset(10).unwrap();
    assert_eq!(items.next(), Some(10));
    // The runtime moves to any position it is given and then reads `end - position` items,
    // unsigned: past the end is refused here, before it is asked.
    assert_eq!(items.reset(101), Err(HResult::E_INVALIDARG));
    assert_eq!(items.reset(usize::MAX), Err(HResult::E_INVALIDARG));
    assert_eq!(items.next(), Some(11), "a refused reset moves nothing");
    items.reset(100).unwrap();
    assert_eq!(items.next(), None, "the end is a position, with nothing to read");
    items.reset(0).unwrap();
    assert_eq!(items.collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
    let fake = unsafe { ComObject::<FakeV2>::value(info.get::<IFixInfo>().unwrap() as *const _ as *mut c_void) };
    assert_eq!(fake.closes.load(SeqCst), 1, "closed once, after the resets");
}

#[test]
fn the_object_is_freed_when_the_last_wrapper_goes() {
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    let info = info_v2(Some(&DROPPED));
    let copy = info.clone();
    drop(info);
    assert_eq!(DROPPED.load(SeqCst), 0);
    assert_eq!(copy.get_value(1).unwrap(), 10);
    drop(copy);
    assert_eq!(DROPPED.load(SeqCst), 1);
}

#[test]
fn s_false_answers_no_instead_of_success() {
    let info = info_v2(None);
    assert_eq!(info.is_ready(2), Ok(true));
    assert_eq!(info.is_ready(3), Ok(false), "S_FALSE is a `false`, not a hidden success");
    assert_eq!(info.is_ready(0), Err(HResult::E_INVALIDARG));
    assert_eq!(info.find_value(4), Ok(Some(400)));
    assert_eq!(info.find_value(5), Ok(None), "S_FALSE leaves no value to read");
    assert_eq!(info.find_value(0), Err(HResult::E_INVALIDARG));
}

#[test]
fn get_hands_out_the_family_versions_the_object_has() {
    let v2 = info_v2(None);
    let raw2: &IFixInfo2 = v2.get::<IFixInfo2>().unwrap();
    let mut out: ULONG = 0;
    assert_eq!(unsafe { raw2.Later(&mut out) }, 0);
    assert_eq!(out, 99, "the raw IFixInfo2 reaches the object's own slot");
    let raw1: &IFixInfo = v2.get::<IFixInfo>().unwrap();
    assert_eq!(unsafe { raw1.Count() }, 42, "the newest pointer serves the older version");

    let raw = ComObject::<FakeV1>::create(Fake::default());
    let owned = unsafe { ComPtr::from_raw(raw) }.unwrap();
    let v1 = FixInfo::from_unknown(&owned).unwrap();
    assert!(v1.get::<IFixInfo>().is_ok());
    assert_eq!(v1.get::<IFixInfo2>().err(), Some(HResult::E_NOINTERFACE), "an older object has no IFixInfo2");
}

#[test]
fn free_threaded_families_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<corprof::ProfilerInfo>();
    send_sync::<corprof::MetaDataImport>();
    send_sync::<ComPtr<corprof::interfaces::ICorProfilerInfo12>>();
    send_sync::<ComPtr<corprof::interfaces::IMetaDataImport2>>();
    // Their negation (enumerators, IUnknown) is in tests/compile_fail/enumerators_unshared.rs.
}

#[test]
fn from_ref_takes_its_own_reference() {
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    let info = info_v2(Some(&DROPPED));
    let extra: ComPtr<IFixInfo> = ComPtr::from_ref(info.get::<IFixInfo>().unwrap());
    drop(info);
    assert_eq!(DROPPED.load(SeqCst), 0, "the adopted reference keeps the object alive");
    drop(extra);
    assert_eq!(DROPPED.load(SeqCst), 1);
}

#[test]
fn function_pointers_pass_through_an_unsafe_wrapper() {
    static SEEN: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn hook(id: ULONG) {
        SEEN.fetch_add(id as usize, SeqCst);
    }
    unsafe extern "C" fn visit(id: ULONG, _client: *mut c_void) -> HRESULT {
        SEEN.fetch_add(100 * id as usize, SeqCst);
        0
    }
    let info = info_v2(None);
    // SAFETY: the fake calls both at once, before returning; neither unwinds.
    unsafe { info.set_hooks(Some(hook), Some(visit)) }.unwrap();
    assert_eq!(SEEN.load(SeqCst), 807);
}
