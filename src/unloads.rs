//! What keeps a `ModuleID`, `AssemblyID`, `ClassID` or `FunctionID` of unloaded code from
//! reaching the runtime: the IDs of a collectible `AssemblyLoadContext` point into memory the
//! runtime frees once the context unloads, and every Info method taking one dereferences it.
//!
//! # What is tracked, and how
//!
//! corprof keeps `COR_PRF_MONITOR_MODULE_LOADS | COR_PRF_MONITOR_ASSEMBLY_LOADS` set for every
//! profiler ([`keep_tracked`], from the `set_event_mask` wrappers and before the profiler's
//! `initialize` runs), and the thunks of the load and unload callbacks report here
//! ([`track`]); those callbacks reach the profiler's own methods only when its mask asked for
//! them ([`Gate::wants`](crate::info_gate)). Only collectible code unloads in .NET Core, so:
//!
//! - a `ModuleID` or `AssemblyID` is dead from the return of its `*UnloadStarted` callback (its
//!   last valid moment, as the runtime documents) or `AssemblyUnloadFinished` (3.1.23 reports
//!   no `AssemblyUnloadStarted`) until its `*LoadStarted` hands the address out again: exact;
//! - a `ClassID` or `FunctionID` has no such callback for every kind (no unload callback for a
//!   generic instantiation on 8.0.4 or 3.1.23, none at all for functions). So once any unload
//!   has begun, one is taken only while it is **lent** to the thread: a parameter of the callback
//!   running on it (except the `*UnloadFinished` ones), or an output of a call made there after
//!   the unload began (the class of a lent function, a type argument of a lent class). Before any
//!   unload, every ID is alive, and checks cost one relaxed load.
//!
//! A call refused answers [`UNLOADED`]. If corprof could not keep the mask bits (the runtime
//! refused them), it cannot see unloads: every ID is then taken only while lent.
//!
//! # A call racing an unload
//!
//! A wrapper checks after entering its gate (its thread's count of calls in flight is stored,
//! `crate::info_gate`); an unload callback marks the IDs dead, then waits until no other thread
//! is inside a gated call ([`crate::info_gate::drain_all`]), before it returns to the runtime
//! and the memory goes. By the membarrier argument of `info_gate`, a call either sees the mark
//! or is waited for. The runtime calls the unload callbacks in preemptive mode, so a GC or a
//! suspension another thread's call waits for is not held up by the wait.

use crate::info_gate::Gate;
use crate::wrapper_support::Negotiated;
use crate::{HResult, Result};
use std::cell::Cell;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// What a call with an ID of unloaded code (or one corprof cannot tell alive) answers.
pub const UNLOADED: HResult = HResult::COR_E_APPDOMAINUNLOADED;

/// `COR_PRF_MONITOR_MODULE_LOADS | COR_PRF_MONITOR_ASSEMBLY_LOADS`: the low mask bits corprof
/// keeps set to see unloads.
pub const TRACKED_BITS: u32 = 0x4 | 0x8;

/// [`STATE`]: some collectible code has begun to unload.
const UNLOADING: u8 = 1;
/// [`STATE`]: corprof could not keep [`TRACKED_BITS`]; unloads may go unseen.
const BLIND: u8 = 2;

/// 0 while every ID the runtime handed out is alive: the one load a check makes.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Bumped when an unload begins: outputs lent before it may belong to what unloads.
static GENERATION: AtomicU32 = AtomicU32::new(1);

/// The `ModuleID`s and `AssemblyID`s that unloaded and were not handed out again.
static DEAD: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

/// Which of the tracked callbacks a thunk reports.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracked {
    /// `AssemblyLoadStarted`: the ID is handed out (again).
    AssemblyLoadStarted,
    /// `AssemblyLoadFinished`.
    AssemblyLoadFinished,
    /// `AssemblyUnloadStarted`: dead once the profiler's callback returns.
    AssemblyUnloadStarted,
    /// `AssemblyUnloadFinished`: dead (3.1.23 reports only this one).
    AssemblyUnloadFinished,
    /// `ModuleLoadStarted`: the ID is handed out (again).
    ModuleLoadStarted,
    /// `ModuleLoadFinished`.
    ModuleLoadFinished,
    /// `ModuleUnloadStarted`: dead once the profiler's callback returns.
    ModuleUnloadStarted,
    /// `ModuleUnloadFinished`.
    ModuleUnloadFinished,
    /// `ModuleAttachedToAssembly`.
    ModuleAttachedToAssembly,
}

impl Tracked {
    /// The mask bit that asks for this callback.
    fn bit(self) -> u32 {
        match self {
            Tracked::AssemblyLoadStarted
            | Tracked::AssemblyLoadFinished
            | Tracked::AssemblyUnloadStarted
            | Tracked::AssemblyUnloadFinished => 0x8,
            _ => 0x4,
        }
    }
}

/// Runs a tracked callback for the profiler object `this`: its own method (`user`) only if its
/// mask asked for the callback, and the bookkeeping of `id` around it.
#[doc(hidden)]
pub fn track(this: *const std::ffi::c_void, what: Tracked, id: usize, user: impl FnOnce() -> Result<()>) -> Result<()> {
    if matches!(what, Tracked::ModuleLoadStarted | Tracked::AssemblyLoadStarted) {
        revive(id);
    }
    // Marked when the profiler's method returns or unwinds: a panic in it must not leave the
    // ID alive.
    let _mark = Mark { what, id };
    if crate::info_gate::wants(this, what.bit()) { user() } else { Ok(()) }
}

/// Marks an unload once the profiler's callback is over (its drop).
struct Mark {
    what: Tracked,
    id: usize,
}

impl Drop for Mark {
    fn drop(&mut self) {
        match self.what {
            Tracked::ModuleUnloadStarted | Tracked::AssemblyUnloadStarted | Tracked::AssemblyUnloadFinished => {
                unloaded(self.id, true)
            }
            Tracked::ModuleUnloadFinished => unloaded(self.id, false),
            _ => {}
        }
    }
}

fn revive(id: usize) {
    let mut dead = DEAD.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(set) = dead.as_mut() {
        set.remove(&id);
    }
}

/// Some collectible code unloads: `id` is dead (if `dead`), lent outputs of earlier
/// generations no longer count, and the calls already past their check finish before the
/// runtime goes on.
fn unloaded(id: usize, dead: bool) {
    if dead {
        DEAD.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashSet::new).insert(id);
    }
    GENERATION.fetch_add(1, Ordering::SeqCst);
    STATE.fetch_or(UNLOADING, Ordering::SeqCst);
    crate::info_gate::drain_all();
}

/// Notes that corprof could not keep [`TRACKED_BITS`] set: unloads may go unseen.
pub(crate) fn blind() {
    STATE.fetch_or(BLIND, Ordering::SeqCst);
}

/// Sets [`TRACKED_BITS`] in the mask of the Info object a profiler's initialize is handed,
/// before the profiler's code runs; [`blind`] if that fails.
pub(crate) fn start(unknown: Option<&crate::IUnknown>) {
    // An object that is no ICorProfilerInfo, or cannot say its mask, is no runtime's: no wrapper
    // reaches one with an ID. A runtime refusing the bits leaves unloads unseen.
    let Some(info) = unknown.and_then(|u| crate::ProfilerInfo::from_unknown(u).ok()) else { return };
    let Ok(mask) = info.get_event_mask() else { return };
    if info.set_event_mask(mask).is_err() {
        blind();
    }
}

/// After a profiler's initialize succeeded: the bits are still set (a raw `SetEventMask` from
/// its code may have cleared them), or set again, or [`blind`].
pub(crate) fn confirm(unknown: Option<&crate::IUnknown>) {
    let Some(info) = unknown.and_then(|u| crate::ProfilerInfo::from_unknown(u).ok()) else { return };
    let Ok(raw) = info.get::<crate::interfaces::ICorProfilerInfo>() else { return };
    let mut now = 0;
    // SAFETY: `raw` is the live Info object's interface (the gate is open: its initialize has just
    // returned); GetEventMask writes one DWORD to a local.
    if !HResult(unsafe { raw.GetEventMask(&mut now) }).is_ok() || now & TRACKED_BITS == TRACKED_BITS {
        return;
    }
    if info.get_event_mask().and_then(|mask| info.set_event_mask(mask)).is_err() {
        blind();
    }
}

/// The low event mask a `set_event_mask` wrapper passes on: the profiler's, recorded in its
/// gate (so that the tracked callbacks it did not ask for stay away from it), with
/// [`TRACKED_BITS`] added.
#[doc(hidden)]
pub fn keep_tracked(info: &Negotiated, low: u32) -> u32 {
    if let Some(gate) = info.gate() {
        gate.set_wanted(low);
    }
    low | TRACKED_BITS
}

/// The low event mask a `get_event_mask` wrapper returns: without the [`TRACKED_BITS`] corprof
/// set and the profiler did not ask for, so that setting back what it read asks for nothing new.
#[doc(hidden)]
pub fn view_tracked(info: &Negotiated, low: u32) -> u32 {
    let wanted = info.gate().map_or(TRACKED_BITS, Gate::wanted);
    low & !(TRACKED_BITS & !wanted)
}

/// One ID kind, for the checks.
#[derive(Clone, Copy)]
enum Kind {
    /// Tracked exactly ([`DEAD`]).
    Exact,
    /// Taken while lent once an unload began.
    Lent,
}

#[inline]
fn check(id: usize, kind: Kind) -> Result<()> {
    let state = STATE.load(Ordering::Relaxed);
    if state == 0 { Ok(()) } else { check_slow(id, kind, state) }
}

#[cold]
fn check_slow(id: usize, kind: Kind, state: u8) -> Result<()> {
    if is_lent(id) {
        return Ok(());
    }
    match kind {
        Kind::Exact if state & BLIND == 0 => {
            let dead = DEAD.lock().unwrap_or_else(|p| p.into_inner());
            if dead.as_ref().is_some_and(|d| d.contains(&id)) { Err(UNLOADED) } else { Ok(()) }
        }
        _ => Err(UNLOADED),
    }
}

/// Refuses a `ModuleID` whose module unloaded.
#[doc(hidden)]
#[inline]
pub fn alive_module(id: crate::types::ModuleID) -> Result<()> {
    check(id.as_raw(), Kind::Exact)
}

/// Refuses an `AssemblyID` whose assembly unloaded.
#[doc(hidden)]
#[inline]
pub fn alive_assembly(id: crate::types::AssemblyID) -> Result<()> {
    check(id.as_raw(), Kind::Exact)
}

/// Refuses, once an unload began, a `ClassID` not lent to this thread.
#[doc(hidden)]
#[inline]
pub fn alive_class(id: crate::types::ClassID) -> Result<()> {
    check(id.as_raw(), Kind::Lent)
}

/// Refuses, once an unload began, a `FunctionID` not lent to this thread.
#[doc(hidden)]
#[inline]
pub fn alive_function(id: crate::types::FunctionID) -> Result<()> {
    check(id.as_raw(), Kind::Lent)
}

/// How many IDs one thread holds lent at once; more are not lent (and refused once an unload
/// began), never written past.
const LENT_CAP: usize = 64;

/// A lent ID's generation when a callback lends it: valid for the whole callback.
const ARGUMENT: u32 = 0;

struct LentIds {
    ids: [(usize, u32); LENT_CAP],
    len: usize,
}

thread_local! {
    static LENT: std::cell::RefCell<LentIds> =
        const { std::cell::RefCell::new(LentIds { ids: [(0, 0); LENT_CAP], len: 0 }) };
    /// How many lending callbacks run on this thread: outputs are lent only inside one.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

fn is_lent(id: usize) -> bool {
    let now = GENERATION.load(Ordering::SeqCst);
    LENT.try_with(|l| {
        let l = l.borrow();
        l.ids[..l.len].iter().any(|&(lent, generation)| lent == id && (generation == ARGUMENT || generation == now))
    })
    .unwrap_or(false)
}

fn push(id: usize, generation: u32) {
    let _ = LENT.try_with(|l| {
        let mut l = l.borrow_mut();
        if l.len < LENT_CAP {
            let at = l.len;
            l.ids[at] = (id, generation);
            l.len += 1;
        }
    });
}

/// Held by a callback thunk for the callback's duration: the IDs it was handed are lent to the
/// thread until it is dropped.
#[doc(hidden)]
pub struct LentScope {
    len: usize,
    _here: PhantomData<*const ()>,
}

/// Lends a callback's ID parameters (raw values) for the callback.
#[doc(hidden)]
#[inline]
pub fn lend_ids(ids: &[usize]) -> LentScope {
    let len = LENT.try_with(|l| l.borrow().len).unwrap_or(LENT_CAP);
    for &id in ids {
        push(id, ARGUMENT);
    }
    let _ = DEPTH.try_with(|d| d.set(d.get().saturating_add(1)));
    LentScope { len, _here: PhantomData }
}

impl Drop for LentScope {
    #[inline]
    fn drop(&mut self) {
        let _ = LENT.try_with(|l| {
            let mut l = l.borrow_mut();
            l.len = l.len.min(self.len);
        });
        let _ = DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Lends an ID a wrapper returned, inside a lending callback once an unload began (before,
/// every ID is alive and nothing needs lending): alive when returned, taken until the next
/// unload begins or the callback ends.
#[doc(hidden)]
#[inline]
pub fn lend_output(id: usize) {
    if STATE.load(Ordering::Relaxed) != 0 && DEPTH.try_with(Cell::get).unwrap_or(0) > 0 {
        push(id, GENERATION.load(Ordering::SeqCst));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Serializes the tests that touch the process-wide state, and puts it back.
    pub(crate) static STATE_LOCK: Mutex<()> = Mutex::new(());

    pub(crate) fn reset() {
        STATE.store(0, Ordering::SeqCst);
        *DEAD.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn class(raw: usize) -> crate::types::ClassID {
        // SAFETY: a test value that never reaches the runtime.
        unsafe { crate::types::ClassID::from_raw(raw) }
    }

    fn module(raw: usize) -> crate::types::ModuleID {
        // SAFETY: as above.
        unsafe { crate::types::ModuleID::from_raw(raw) }
    }

    #[test]
    fn before_any_unload_every_id_is_taken() {
        let _l = STATE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        reset();
        assert_eq!(alive_class(class(0x10)), Ok(()));
        assert_eq!(alive_module(module(0x20)), Ok(()));
    }

    #[test]
    fn an_unloaded_module_is_refused_until_its_address_loads_again() {
        let _l = STATE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        reset();
        track(std::ptr::null(), Tracked::ModuleUnloadStarted, 0x20, || Ok(())).unwrap();
        assert_eq!(alive_module(module(0x20)), Err(UNLOADED));
        assert_eq!(alive_module(module(0x30)), Ok(()), "another module is alive");
        track(std::ptr::null(), Tracked::ModuleLoadStarted, 0x20, || Ok(())).unwrap();
        assert_eq!(alive_module(module(0x20)), Ok(()), "handed out again");
        reset();
    }

    #[test]
    fn the_unloading_module_answers_inside_its_own_callback() {
        let _l = STATE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        reset();
        let _scope = lend_ids(&[0x40]);
        // `wants` finds no gate for a null profiler: the profiler's method is not run, so ask
        // here, before the callback's bookkeeping.
        assert_eq!(alive_module(module(0x40)), Ok(()));
        track(std::ptr::null(), Tracked::ModuleUnloadStarted, 0x40, || Ok(())).unwrap();
        drop(_scope);
        assert_eq!(alive_module(module(0x40)), Err(UNLOADED));
        reset();
    }

    #[test]
    fn after_an_unload_classes_are_taken_only_while_lent() {
        let _l = STATE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        reset();
        track(std::ptr::null(), Tracked::AssemblyUnloadFinished, 0x50, || Ok(())).unwrap();
        assert_eq!(alive_class(class(0x60)), Err(UNLOADED), "kept from before");
        {
            let _scope = lend_ids(&[0x60]);
            assert_eq!(alive_class(class(0x60)), Ok(()), "the callback's own");
            assert_eq!(alive_class(class(0x70)), Err(UNLOADED));
            lend_output(0x70);
            assert_eq!(alive_class(class(0x70)), Ok(()), "returned inside the callback");
            GENERATION.fetch_add(1, Ordering::SeqCst);
            assert_eq!(alive_class(class(0x70)), Err(UNLOADED), "an output of before the next unload");
            assert_eq!(alive_class(class(0x60)), Ok(()), "an argument stays lent");
        }
        assert_eq!(alive_class(class(0x60)), Err(UNLOADED), "the callback ended");
        lend_output(0x80);
        assert_eq!(alive_class(class(0x80)), Err(UNLOADED), "no callback: nothing is lent");
        reset();
    }

    #[test]
    fn blind_refuses_every_id_not_lent() {
        let _l = STATE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        reset();
        blind();
        assert_eq!(alive_module(module(0x20)), Err(UNLOADED));
        let _scope = lend_ids(&[0x20]);
        assert_eq!(alive_module(module(0x20)), Ok(()));
        drop(_scope);
        reset();
    }

    #[test]
    fn lending_more_than_fits_drops_the_rest_and_writes_nothing_past() {
        let _l = STATE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        reset();
        blind();
        let ids: Vec<usize> = (1..=LENT_CAP + 10).collect();
        let scope = lend_ids(&ids);
        assert_eq!(alive_class(class(LENT_CAP)), Ok(()));
        assert_eq!(alive_class(class(LENT_CAP + 1)), Err(UNLOADED), "past the cap: not lent");
        drop(scope);
        assert_eq!(alive_class(class(1)), Err(UNLOADED));
        reset();
    }

}
