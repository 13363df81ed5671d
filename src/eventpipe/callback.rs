//! A provider that hears its sessions: [`Provider::create_with_callback`] over
//! `ICorProfilerInfo14::EventPipeCreateProvider2` (the released .NET 8 header's; compiled when
//! the header declares it), which hands each enable and disable of the provider by a session to
//! a closure, as a [`ProviderEnabled`] (enabled, level, keywords, filter data).
//!
//! # Who owns the closure, and when the runtime may call it
//!
//! The runtime keeps the callback for the life of the process (a provider is never deleted) and
//! calls it on the thread that starts or stops a session — during `EventPipeCreateProvider2`
//! itself when a session already enables the provider, and up to process exit. It passes no
//! context (its `callback_data` is null: EventPipeCreateProvider2 has no parameter for one), so
//! a callback cannot tell two providers apart by it. Hence:
//!
//! - each provider gets one of [`MAX_CALLBACK_PROVIDERS`] slots, each with its own trampoline
//!   function (`trampoline::<SLOT>`), and the closure is moved into that slot's static cell, where
//!   it stays for the life of the process: the closure can never be freed while the runtime may
//!   still call it, whatever happens to the [`Provider`] values (they are handles). The closure is
//!   therefore `'static`, and `Send + Sync`: two sessions on two threads may call it at once.
//! - a slot is claimed before the runtime is asked (the callback may run inside the call); a
//!   provider the runtime refused leaves its slot used, never called.
//! - the trampolines live in the profiler library, which stays mapped once a profiler has
//!   initialized (`info_gate`'s pin), so a detach cannot unmap them; a closure that calls the
//!   runtime after the profiler has been let go gets `CORPROF_E_PROFILER_DETACHING` from every
//!   `ProfilerInfo` call.
//! - a panic in the closure is caught in the trampoline (the runtime's EventPipe code is below
//!   it) and logged, `corprof: EventPipe provider callback (<name>) panicked: …`; the runtime
//!   goes on.
//! - a closure that starts (or stops) a session enabling its own provider makes the runtime call
//!   it again, inside that call, on the same thread: without a bound, a closure starting a
//!   session each time it is told of one recursed until the stack overflowed (CoreCLR 8.0.4).
//!   So a call made while the same provider's closure runs on this thread is not passed on (the
//!   closure is already handling a change of that provider, which it made itself), and the first
//!   such call is logged, `corprof: EventPipe provider callback (<name>) called again inside
//!   itself: not run`. Calls on other threads, and of other providers, run as usual; a chain
//!   through other providers' closures is bounded by the [`MAX_CALLBACK_PROVIDERS`] slots.
//!
//! One thing no type can check: the call goes through Info14's vtable slot after
//! GetNonGCHeapBounds, which released .NET 8 runtimes have (8.0.4 does) but a .NET 8 preview of
//! the runtime-net8 snapshot's age did not; corprof offers the method only when the header
//! declares it, and trusts, as COM does, that a runtime answering an interface's IID has all of
//! its slots.
//!
//! What the runtime passes (CoreCLR's `ep-provider.c`, `provider_invoke_callback`; the eventpipe
//! conformance scenario asserts it on CoreCLR 8.0.4): the enabled sessions' keywords as
//! `match_any_keywords`, `match_all_keywords` 0, the level, and the enabling session's filter
//! data (`key=value;…`) as NUL-separated key and value strings. On disable, 8.0.4 repeats the
//! keywords, level and filter of the session that stopped, with `enabled` false. The source ID is
//! not a usable GUID (see [`ProviderEnabled::source_id`]).

use super::runtime::Provider;
use crate::types::{COR_PRF_FILTER_DATA, EventPipeProviderCallback, UINT8, UINT32, UINT64};
use crate::{HResult, ProfilerInfo, Result};
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// How many providers with a callback one profiler library can create (each needs a function of
/// its own: the runtime gives the callback no context). [`Provider::create_with_callback`]
/// answers `E_OUTOFMEMORY` beyond.
pub const MAX_CALLBACK_PROVIDERS: usize = 16;

/// One enable or disable of a provider by a session, as the runtime reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderEnabled<'a> {
    /// Whether any session still enables the provider (`false`: the last one stopped).
    pub enabled: bool,
    /// The most verbose level any session enables (0: log always … 5: verbose).
    pub level: u8,
    /// The keywords the sessions enable (EventPipe: all sessions' keywords together).
    pub match_any_keywords: u64,
    /// Keywords an event must all have (EventPipe: always 0).
    pub match_all_keywords: u64,
    /// The address the runtime passed as the source ID, never read: EventPipe's code passes
    /// null (`provider_invoke_callback`), yet CoreCLR 8.0.4 passes an address that is no GUID
    /// when the provider is enabled as it is created (seen in the eventpipe conformance scenario),
    /// so reading 16 bytes there would read whatever is there, if anything.
    pub source_id: usize,
    /// The enabling session's filter data as the runtime passes it: NUL-terminated key and
    /// value strings one after another (see [`filter_pairs`](ProviderEnabled::filter_pairs)).
    pub filter_data: Option<&'a [u8]>,
}

impl ProviderEnabled<'_> {
    /// The filter data as `(key, value)` pairs (UTF-8, lossily).
    pub fn filter_pairs(&self) -> Vec<(String, String)> {
        let data = self.filter_data.unwrap_or_default();
        let data = data.strip_suffix(&[0]).unwrap_or(data);
        if data.is_empty() {
            return Vec::new();
        }
        let strings: Vec<String> = data.split(|&b| b == 0).map(|s| String::from_utf8_lossy(s).into_owned()).collect();
        strings.chunks(2).map(|kv| (kv[0].clone(), kv.get(1).cloned().unwrap_or_default())).collect()
    }
}

type Hook = Box<dyn Fn(&ProviderEnabled<'_>) + Send + Sync>;

/// Each slot's closure and its provider's name (for a panic's log line), set once, kept for the
/// life of the process.
static HOOKS: [OnceLock<(String, Hook)>; MAX_CALLBACK_PROVIDERS] = [const { OnceLock::new() }; MAX_CALLBACK_PROVIDERS];

/// The next free slot.
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The slots whose closure runs on this thread, one bit each: a call into a running slot is
    /// the runtime reporting a session change the closure itself made, and is not run.
    static RUNNING: Cell<u32> = const { Cell::new(0) };
}

/// Whether each slot's reentered call has been logged (once per slot, for the process).
static REENTRY_LOGGED: [AtomicBool; MAX_CALLBACK_PROVIDERS] =
    [const { AtomicBool::new(false) }; MAX_CALLBACK_PROVIDERS];

/// Marks slot `SLOT` as running on this thread until dropped (a panic caught above included).
struct Running<const SLOT: usize>;

impl<const SLOT: usize> Running<SLOT> {
    /// `None` when the slot already runs on this thread.
    fn enter() -> Option<Self> {
        let bit = 1u32 << SLOT;
        let before = RUNNING.with(|r| r.replace(r.get() | bit));
        (before & bit == 0).then_some(Running)
    }
}

impl<const SLOT: usize> Drop for Running<SLOT> {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(r.get() & !(1u32 << SLOT)));
    }
}

/// The callback the runtime calls for slot `SLOT`'s provider.
///
/// # Safety
/// `filter_data` is null or points to a `COR_PRF_FILTER_DATA` whose `Ptr` is null or addresses
/// `Size` readable bytes, for the call (what the runtime passes). `source_id` is not read.
unsafe extern "C" fn trampoline<const SLOT: usize>(
    source_id: *const UINT8,
    is_enabled: UINT32,
    level: UINT8,
    match_any_keywords: UINT64,
    match_all_keywords: UINT64,
    filter_data: *mut COR_PRF_FILTER_DATA,
    _callback_data: *mut std::ffi::c_void,
) {
    let Some((name, hook)) = HOOKS[SLOT].get() else { return };
    let Some(_running) = Running::<SLOT>::enter() else {
        if !REENTRY_LOGGED[SLOT].swap(true, Ordering::Relaxed) {
            crate::report::write_line(&format!(
                "corprof: EventPipe provider callback ({name}) called again inside itself: not run"
            ));
        }
        return;
    };
    // SAFETY: null, or the runtime's descriptor for the call, whose `Ptr` is null or addresses
    // `Size` bytes it owns until the callback returns (`ProviderEnabled` is only lent for it).
    let filter_data = unsafe { filter_data.as_ref() }
        .filter(|f| f.Ptr != 0 && f.Size != 0)
        .map(|f| unsafe { std::slice::from_raw_parts(f.Ptr as usize as *const u8, f.Size as usize) });
    let enabled = ProviderEnabled {
        enabled: is_enabled != 0,
        level,
        match_any_keywords,
        match_all_keywords,
        source_id: source_id as usize,
        filter_data,
    };
    // The runtime's EventPipe code is below this frame: a panic stops here.
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| hook(&enabled))) {
        crate::report::log_panic(&format_args!("EventPipe provider callback ({name})"), payload, "the runtime goes on");
    }
}

macro_rules! trampolines {
    ($($slot:literal)*) => { [$(Some(trampoline::<$slot> as unsafe extern "C" fn(_, _, _, _, _, _, _))),*] };
}

const _: () = assert!(MAX_CALLBACK_PROVIDERS <= u32::BITS as usize, "one bit of RUNNING per slot");

/// Slot `n`'s trampoline.
static TRAMPOLINES: [EventPipeProviderCallback; MAX_CALLBACK_PROVIDERS] =
    trampolines!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);

impl Provider {
    /// Creates the provider `name` (`ICorProfilerInfo14::EventPipeCreateProvider2`) with
    /// `callback`, which hears every enable and disable of the provider by a session, from now
    /// until the process ends (during this call too, if a session already enables it). The
    /// closure is kept for the life of the process (see the module docs: the runtime may call it
    /// until then), and may run on any thread, two at once.
    ///
    /// Errors: `E_INVALIDARG` for a name with a NUL in it; `E_NOINTERFACE` on a runtime without
    /// ICorProfilerInfo14 (before .NET 8); `E_OUTOFMEMORY` once
    /// [`MAX_CALLBACK_PROVIDERS`] have been created; else the runtime's answer.
    pub fn create_with_callback<F>(info: &ProfilerInfo, name: &str, callback: F) -> Result<Provider>
    where
        F: Fn(&ProviderEnabled<'_>) + Send + Sync + 'static,
    {
        if name.contains('\0') {
            return Err(HResult::E_INVALIDARG);
        }
        // No slot for a runtime that cannot take the call.
        info.get::<crate::interfaces::ICorProfilerInfo14>()?;
        let slot = NEXT.fetch_add(1, Ordering::Relaxed);
        let Some(cell) = HOOKS.get(slot) else {
            return Err(HResult::E_OUTOFMEMORY);
        };
        if cell.set((name.to_string(), Box::new(callback))).is_err() {
            // Not reached: each slot number is handed out once.
            return Err(HResult::E_UNEXPECTED);
        }
        // SAFETY: `TRAMPOLINES[slot]` is `trampoline::<slot>`, a plain function of this library
        // (mapped for the life of the process once the profiler has initialized), of the
        // callback's signature, that never unwinds and ignores the null `callback_data`; the
        // closure it runs is owned by `HOOKS[slot]` for the life of the process.
        let handle = unsafe { info.event_pipe_create_provider2(name, TRAMPOLINES[slot]) }?;
        Ok(Provider::from_parts(info, handle, name))
    }
}
