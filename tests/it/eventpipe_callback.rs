//! The callback provider's plumbing (`Provider::create_with_callback`) against a fake
//! ICorProfilerInfo14 whose EventPipeCreateProvider2 keeps the callback, as the runtime does, and
//! calls it inside the create call and later: what the closure gets (enabled, level, keywords,
//! filter pairs), one trampoline per provider (the runtime passes no context), a panic stopped
//! before the runtime, and what is refused. The real runtime's calls are asserted by the eventpipe
//! conformance scenario (tests/runtime/conformance_eventpipe.rs).
#![cfg(corprof_method = "ICorProfilerInfo14::EventPipeCreateProvider2")]

use crate::fake_info;
use corprof::eventpipe::{MAX_CALLBACK_PROVIDERS, Provider, ProviderEnabled};
use corprof::interfaces::{ICorProfilerInfo14_Vtbl, ICorProfilerInfo15, ICorProfilerInfo15_Vtbl};
use corprof::types::{COR_PRF_FILTER_DATA, EVENTPIPE_PROVIDER, EventPipeProviderCallback, WCHAR};
use corprof::{HRESULT, HResult, Interface, ProfilerInfo};
use std::ffi::c_void;
use std::mem::offset_of;
use std::sync::{Arc, Mutex};

/// What the fake runtime keeps: the callbacks it was given, by provider name.
#[derive(Default)]
struct FakeInfo {
    callbacks: Mutex<Vec<(String, EventPipeProviderCallback)>>,
}

/// The filter data a session with `key=value;mode=fast` passes.
const FILTER: &[u8] = b"key\0value\0mode\0fast\0";

/// Calls `callback` as the runtime does for a session that enables (or, `enabled` false,
/// disables) the provider.
fn call(callback: EventPipeProviderCallback, enabled: bool) {
    let mut filter = COR_PRF_FILTER_DATA { Ptr: FILTER.as_ptr() as u64, Size: FILTER.len() as u32, Type: 0 };
    let callback = callback.expect("a callback");
    // SAFETY: the arguments are what the runtime passes: a null source and callback data, and a
    // filter descriptor of FILTER's bytes, alive for the call.
    unsafe { callback(std::ptr::null(), u32::from(enabled), 4, 0xf0, 0, &mut filter, std::ptr::null_mut()) };
}

/// As the runtime: the name, then the callback kept, and a session that already enables the
/// provider enables it inside this call.
unsafe extern "system" fn create_provider2(
    p: *mut c_void,
    name: *const WCHAR,
    callback: EventPipeProviderCallback,
    out: *mut EVENTPIPE_PROVIDER,
) -> HRESULT {
    // SAFETY: the wrapper passes a NUL-terminated UTF-16 name.
    let len = (0..).take_while(|&i| unsafe { *name.add(i) } != 0).count();
    let name = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(name, len) });
    if name == "Refused" {
        return HResult::E_INVALIDARG.0;
    }
    // SAFETY: this slot is set by `fake` over a `FakeInfo`, and called with that fake.
    let mut callbacks = unsafe { fake_info::state::<FakeInfo>(p) }.callbacks.lock().unwrap();
    callbacks.push((name, callback));
    let handle = callbacks.len();
    drop(callbacks);
    call(callback, true);
    // SAFETY: the wrapper passes a place for the handle; the handle is the fake runtime's own.
    unsafe { *out = EVENTPIPE_PROVIDER::from_raw(0x1000 + handle) };
    0
}

/// A fake Info14 runtime (it refuses Info15) whose EventPipeCreateProvider2 is `create_provider2`.
fn fake() -> (&'static FakeInfo, ProfilerInfo) {
    let create = offset_of!(ICorProfilerInfo14_Vtbl, EventPipeCreateProvider2);
    fake_info::fake::<ICorProfilerInfo15_Vtbl, _>(
        FakeInfo::default(),
        Some(ICorProfilerInfo15::IID),
        &[(create, create_provider2 as *const () as usize)],
    )
}

fn line(e: &ProviderEnabled<'_>) -> String {
    format!(
        "enabled {} level {} any {:#x} all {:#x} source {:#x} filter {:?}",
        e.enabled,
        e.level,
        e.match_any_keywords,
        e.match_all_keywords,
        e.source_id,
        e.filter_pairs()
    )
}

/// The providers made here share the process's [`MAX_CALLBACK_PROVIDERS`] slots, which the last
/// step uses up: one test, its steps in order.
#[test]
fn callback_providers_on_a_fake_runtime() {
    each_provider_hears_its_own_enables_and_disables();
    a_panicking_closure_never_unwinds_into_the_runtime();
    a_closure_enabling_its_own_provider_is_not_called_inside_itself();
    refusals_name_their_cause();
}

fn each_provider_hears_its_own_enables_and_disables() {
    let (obj, info) = fake();
    assert_eq!(info.interface_name(), "ICorProfilerInfo14");
    let heard = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (heard.clone(), heard.clone());
    let first =
        Provider::create_with_callback(&info, "First", move |e| a.lock().unwrap().push(format!("First {}", line(e))))
            .unwrap();
    let second =
        Provider::create_with_callback(&info, "Second", move |e| b.lock().unwrap().push(format!("Second {}", line(e))))
            .unwrap();
    assert_eq!((first.name(), second.name()), ("First", "Second"));
    assert_ne!(first.handle(), second.handle());
    let enabled =
        "enabled true level 4 any 0xf0 all 0x0 source 0x0 filter [(\"key\", \"value\"), (\"mode\", \"fast\")]";
    // Each heard its enable inside its own create call.
    assert_eq!(*heard.lock().unwrap(), [format!("First {enabled}"), format!("Second {enabled}")]);
    heard.lock().unwrap().clear();
    // Later calls, through the function pointer each provider gave the runtime, reach that
    // provider's closure only: the runtime's callback_data is null, so the pointer is the key.
    let callbacks = obj.callbacks.lock().unwrap().clone();
    call(callbacks[1].1, false);
    call(callbacks[0].1, false);
    let disabled =
        "enabled false level 4 any 0xf0 all 0x0 source 0x0 filter [(\"key\", \"value\"), (\"mode\", \"fast\")]";
    assert_eq!(*heard.lock().unwrap(), [format!("Second {disabled}"), format!("First {disabled}")]);
}

fn a_panicking_closure_never_unwinds_into_the_runtime() {
    let (obj, info) = fake();
    let calls = Arc::new(Mutex::new(0));
    let counted = calls.clone();
    // The panic comes inside the create call (the enable) and again later: both are stopped in
    // the trampoline (an unwind through `extern "C"` would abort this test process), logged,
    // and the provider works on.
    let provider = Provider::create_with_callback(&info, "Panics", move |_| {
        *counted.lock().unwrap() += 1;
        panic!("provider callback panic");
    });
    assert!(provider.is_ok(), "the create call returned normally: {:?}", provider.err());
    let callback = obj.callbacks.lock().unwrap().last().unwrap().1;
    call(callback, false);
    assert_eq!(*calls.lock().unwrap(), 2);
}

/// A closure that starts a session enabling its own provider: the runtime calls the provider's
/// callback inside that call, on the same thread (CoreCLR 8.0.4 did so without end, until the
/// stack overflowed). The fake plays that by calling the trampoline again from inside the
/// closure, up to a depth of 50 so that a broken bound fails the test instead of overflowing.
fn a_closure_enabling_its_own_provider_is_not_called_inside_itself() {
    let (obj, info) = fake();
    let depth = Arc::new(Mutex::new((0u32, 0u32)));
    let seen = depth.clone();
    let callbacks = &obj.callbacks;
    let provider = Provider::create_with_callback(&info, "Reenters", move |_| {
        let now = {
            let mut d = seen.lock().unwrap();
            d.0 += 1;
            d.1 = d.1.max(d.0);
            d.0
        };
        if now < 50 {
            let mine = callbacks.lock().unwrap().iter().find(|(n, _)| n == "Reenters").map(|c| c.1);
            if let Some(callback) = mine {
                call(callback, true); // the session this closure starts enables the provider again
            }
        }
        seen.lock().unwrap().0 -= 1;
    })
    .unwrap();
    assert_eq!(depth.lock().unwrap().1, 1, "the enable inside the closure was not passed on");
    // A later call (another session, on this thread but not inside the closure) runs again.
    let callback = obj.callbacks.lock().unwrap().last().unwrap().1;
    call(callback, false);
    assert_eq!(*depth.lock().unwrap(), (0, 1));
    drop(provider);
}

fn refusals_name_their_cause() {
    let (obj, info) = fake();
    let none = |_: &ProviderEnabled<'_>| {};
    assert_eq!(Provider::create_with_callback(&info, "Bad\0Name", none).err(), Some(HResult::E_INVALIDARG));
    assert_eq!(obj.callbacks.lock().unwrap().len(), 0, "refused before the runtime");
    // The runtime's own refusal comes back as is.
    assert_eq!(Provider::create_with_callback(&info, "Refused", none).err(), Some(HResult::E_INVALIDARG));
    // Slots run out: each provider keeps its trampoline for the life of the process.
    let mut results = Vec::new();
    for i in 0..=MAX_CALLBACK_PROVIDERS {
        results.push(Provider::create_with_callback(&info, &format!("Many{i}"), none).map(|_| ()));
    }
    assert_eq!(results.last(), Some(&Err(HResult::E_OUTOFMEMORY)));
    // Four slots went to the providers above, one to the runtime's refusal.
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), MAX_CALLBACK_PROVIDERS - 5);
}

#[test]
fn filter_pairs_split_the_runtimes_nul_separated_strings() {
    let e = |data: Option<&'static [u8]>| ProviderEnabled {
        enabled: true,
        level: 5,
        match_any_keywords: 0,
        match_all_keywords: 0,
        source_id: 0,
        filter_data: data,
    };
    assert_eq!(e(None).filter_pairs(), []);
    assert_eq!(e(Some(b"\0")).filter_pairs(), []);
    assert_eq!(e(Some(b"a\0b\0")).filter_pairs(), [("a".to_string(), "b".to_string())]);
    assert_eq!(
        e(Some(b"a;b\0=c\0lone\0")).filter_pairs(),
        [("a;b".to_string(), "=c".to_string()), ("lone".to_string(), String::new())]
    );
}
