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
//! them ([`info_gate::wants`](crate::info_gate)). Only collectible code unloads in .NET Core, so:
//!
//! - a `ModuleID` or `AssemblyID` is dead from the return of its `*UnloadStarted` callback (its
//!   last valid moment, as the runtime documents) or `AssemblyUnloadFinished` (3.1.23 reports
//!   no `AssemblyUnloadStarted`) until its `*LoadStarted` hands the address out again: exact;
//! - a `ClassID` or `FunctionID` has no such callback for every kind (no unload callback for a
//!   generic instantiation on 8.0.4 or 3.1.23, none at all for functions). So corprof notes each
//!   one it sees while it is surely alive (handed to a callback, returned by a wrapper, or
//!   checked before any unload: [`record`]), and when an unload begins, while everything is
//!   still in memory, asks the runtime which collectible modules each noted ID depends on (its
//!   module, its class, its type arguments, an array's element type: [`classify`]). Once an
//!   unload has begun, an ID is taken if it is **lent** to the thread (a parameter of the
//!   callback running on it, except in the unload callbacks, or an output of a call made there)
//!   or classified with every module it depends on still loaded; an ID of a dynamic method
//!   (which dies without a module unload), one the runtime could not classify, or one first
//!   seen elsewhere after an unload (a stack walk's, a hook's) is refused. Before any unload,
//!   a check costs one relaxed load and a look in a small per-thread cache.
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

use crate::info_gate::{Gate, with_local};
use crate::sync::lock;
use crate::wrapper_support::Negotiated;
use crate::{HResult, Result};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

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
static DEAD: Mutex<Option<HashSet<usize, Ids>>> = Mutex::new(None);

/// The `ClassID`s and `FunctionID`s seen alive since the last unload began, not classified yet.
static PENDING: Mutex<Option<HashMap<usize, Kind, Ids>>> = Mutex::new(None);

/// Classified IDs → the collectible modules each depends on (empty: code that never unloads).
/// An entry goes when one of its modules unloads.
static MEMO: Mutex<Option<HashMap<usize, Vec<usize>, Ids>>> = Mutex::new(None);

/// IDs are addresses the runtime made, not input an attacker picks: a multiplicative hash is
/// enough, at a fraction of SipHash's cost per noted ID.
#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(26);
    }
}

type Ids = std::hash::BuildHasherDefault<IdHasher>;

/// The runtime's Info object the classification asks (the first profiler's).
static INFO: OnceLock<crate::ProfilerInfo> = OnceLock::new();

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
///
/// # Safety
/// Only the thunk of the callback `what` calls it, with the ID the runtime passed that callback
/// (a forged one would revive or kill a module ID in corprof's books).
#[doc(hidden)]
pub unsafe fn track(
    this: *const std::ffi::c_void,
    what: Tracked,
    id: usize,
    user: impl FnOnce() -> Result<()>,
) -> Result<()> {
    if matches!(what, Tracked::ModuleLoadStarted | Tracked::AssemblyLoadStarted) {
        revive(id);
    }
    // Marked when the profiler's method returns or unwinds: a panic in it must not leave the
    // ID alive.
    let _mark = Mark { what, id };
    #[cfg(all(corprof_iface = "IMetaDataImport", corprof_iface = "IMetaDataEmit"))]
    match what {
        Tracked::ModuleLoadFinished => crate::instrument::module_loaded(id),
        Tracked::ModuleUnloadStarted => crate::instrument::module_unloading(id),
        _ => {}
    }
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
    if let Some(set) = lock(&DEAD).as_mut() {
        set.remove(&id);
    }
}

/// Some collectible code unloads: lent outputs of earlier generations no longer count; once
/// the calls that checked before this began have finished (and noted what they saw), the IDs
/// seen since the last unload are classified (all still in memory: the runtime frees nothing
/// before this returns); then `id` is dead (if `dead`) with every classified ID that depends
/// on it, and the calls that were let through before that finish too.
fn unloaded(id: usize, dead: bool) {
    if id == 0 {
        // No ID: the runtime passes none for an unload.
        return;
    }
    GENERATION.fetch_add(1, Ordering::SeqCst);
    STATE.fetch_or(UNLOADING, Ordering::SeqCst);
    crate::info_gate::drain_all();
    let pending = lock(&PENDING).take().unwrap_or_default();
    let mut modules = HashMap::new();
    let classified: Vec<(usize, Option<Vec<usize>>)> =
        pending.into_iter().map(|(id, kind)| (id, classify(id, kind, &mut modules))).collect();
    // Locks in the order of `check_slow`: MEMO, then DEAD.
    let mut memo_guard = lock(&MEMO);
    let memo = memo_guard.get_or_insert_with(HashMap::default);
    for (seen, deps) in classified {
        if let Some(deps) = deps {
            memo.insert(seen, deps);
        }
    }
    if dead {
        lock(&DEAD).get_or_insert_with(HashSet::default).insert(id);
        memo.retain(|_, deps| !deps.contains(&id));
    }
    drop(memo_guard);
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
    let _ = INFO.set(info);
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
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `ModuleID` or `AssemblyID`: tracked exactly ([`DEAD`]).
    Exact,
    /// A `ClassID`: noted and classified.
    Class,
    /// A `FunctionID`: noted and classified.
    Function,
}

#[inline]
fn check(id: usize, kind: Kind) -> Result<()> {
    let state = STATE.load(Ordering::Relaxed);
    if state == 0 {
        if kind != Kind::Exact {
            record(id, kind);
        }
        Ok(())
    } else {
        check_slow(id, kind, state)
    }
}

#[cold]
fn check_slow(id: usize, kind: Kind, state: u8) -> Result<()> {
    if kind == Kind::Exact && state & BLIND == 0 {
        let dead = lock(&DEAD).as_ref().is_some_and(|d| d.contains(&id));
        return if dead { Err(UNLOADED) } else { Ok(()) };
    }
    if lock(&MEMO).as_ref().is_some_and(|m| m.contains_key(&id)) {
        return Ok(());
    }
    if !is_lent(id) {
        return Err(UNLOADED);
    }
    // Alive while lent: classified now, so that it is still taken once the callback is over.
    if kind != Kind::Exact && !in_unload_callback() {
        let deps = classify(id, kind, &mut HashMap::new());
        if let Some(deps) = deps {
            // MEMO before DEAD, as in `unloaded`: a module that dies meanwhile either is dead
            // here (no entry) or is marked after the entry, which its `retain` then drops.
            let mut memo = lock(&MEMO);
            let dead = lock(&DEAD);
            if !deps.iter().any(|m| dead.as_ref().is_some_and(|d| d.contains(m))) {
                memo.get_or_insert_with(HashMap::default).insert(id, deps);
            }
        }
    }
    Ok(())
}

/// Notes a `ClassID` or `FunctionID` seen alive, for the classification at the next unload
/// (not in an unload callback, whose IDs may be of what unloads). A per-thread cache keeps a
/// repeated ID from reaching the shared set.
fn record(id: usize, kind: Kind) {
    if id == 0 {
        return;
    }
    let fresh = with_local(|l| {
        let way = &l.recent[(id >> 4) % RECENT_WAYS];
        let fresh = l.unloading.get() == 0 && way.get() != id;
        if fresh {
            way.set(id);
        }
        fresh
    });
    if fresh {
        lock(&PENDING).get_or_insert_with(HashMap::default).insert(id, kind);
    }
}

/// How deep [`classify`] follows type arguments and array elements before it gives up.
const MAX_NESTING: u32 = 16;

/// The collectible modules the live ID `id` depends on, or `None` when the runtime cannot say
/// (or the ID is of a dynamic method). Asks the runtime directly (the wrappers would check).
fn classify(id: usize, kind: Kind, modules: &mut HashMap<usize, bool>) -> Option<Vec<usize>> {
    let info = INFO.get()?;
    let mut deps = Vec::new();
    match kind {
        Kind::Class => class_deps(info, id, modules, &mut deps, 0)?,
        Kind::Function => function_deps(info, id, modules, &mut deps)?,
        Kind::Exact => return None,
    }
    deps.sort_unstable();
    deps.dedup();
    Some(deps)
}

fn module_dep(
    info: &crate::ProfilerInfo,
    module: usize,
    modules: &mut HashMap<usize, bool>,
    deps: &mut Vec<usize>,
) -> Option<()> {
    if module == 0 {
        return Some(());
    }
    let collectible = match modules.get(&module) {
        Some(&c) => c,
        None => {
            let raw = info.get::<crate::interfaces::ICorProfilerInfo3>().ok()?;
            let (mut base, mut len, mut assembly, mut flags) = (std::ptr::null(), 0, crate::imp::zeroed(), 0);
            // SAFETY: `module` was handed out by the runtime and its module has not unloaded
            // (the caller's contract); the outs are locals, the name buffer absent (0, null).
            let hr = unsafe {
                raw.GetModuleInfo2(
                    crate::types::ModuleID::from_raw(module),
                    &mut base,
                    0,
                    &mut len,
                    std::ptr::null_mut(),
                    &mut assembly,
                    &mut flags,
                )
            };
            if hr < 0 {
                return None;
            }
            let c = flags & crate::types::COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_COLLECTIBLE.0 != 0;
            modules.insert(module, c);
            c
        }
    };
    if collectible {
        deps.push(module);
    }
    Some(())
}

/// The type arguments an Info call writes, asked with a buffer of 8 and again with the count.
fn type_args(mut ask: impl FnMut(u32, &mut u32, *mut crate::types::ClassID) -> i32) -> Option<Vec<usize>> {
    let mut args = vec![crate::types::ClassID::NULL; 8];
    let mut n = 0u32;
    if ask(args.len() as u32, &mut n, args.as_mut_ptr()) < 0 {
        return None;
    }
    if n as usize > args.len() {
        args = vec![crate::types::ClassID::NULL; n as usize];
        if ask(args.len() as u32, &mut n, args.as_mut_ptr()) < 0 || n as usize > args.len() {
            return None;
        }
    }
    Some(args[..n as usize].iter().map(|c| c.as_raw()).collect())
}

fn class_deps(
    info: &crate::ProfilerInfo,
    class: usize,
    modules: &mut HashMap<usize, bool>,
    deps: &mut Vec<usize>,
    depth: u32,
) -> Option<()> {
    if class == 0 {
        return Some(());
    }
    if depth > MAX_NESTING {
        return None;
    }
    // SAFETY: an integer newtype; the raw calls below rely on `class` having been handed out by
    // the runtime while alive with no unload having freed it since (the caller's contract).
    let id = unsafe { crate::types::ClassID::from_raw(class) };
    let info1 = info.get::<crate::interfaces::ICorProfilerInfo>().ok()?;
    let (mut elem_ty, mut elem, mut rank) = (crate::imp::zeroed(), crate::types::ClassID::NULL, 0);
    // SAFETY: `id` is alive (the caller's contract); the outs are locals.
    let hr = unsafe { info1.IsArrayClass(id, &mut elem_ty, &mut elem, &mut rank) };
    if hr == 0 {
        return class_deps(info, elem.as_raw(), modules, deps, depth + 1);
    }
    if hr < 0 {
        return None;
    }
    let info2 = info.get::<crate::interfaces::ICorProfilerInfo2>().ok()?;
    let (mut module, mut token, mut parent) = (crate::types::ModuleID::NULL, 0, crate::types::ClassID::NULL);
    let args = type_args(|cap, n, buf| {
        // SAFETY: `id` is alive (the caller's contract); the outs are locals, `buf` holds `cap`
        // ClassIDs.
        unsafe { info2.GetClassIDInfo2(id, &mut module, &mut token, &mut parent, cap, n, buf) }
    })?;
    module_dep(info, module.as_raw(), modules, deps)?;
    for arg in args {
        class_deps(info, arg, modules, deps, depth + 1)?;
    }
    Some(())
}

fn function_deps(
    info: &crate::ProfilerInfo,
    function: usize,
    modules: &mut HashMap<usize, bool>,
    deps: &mut Vec<usize>,
) -> Option<()> {
    // SAFETY: an integer newtype; the raw calls below rely on `function` being alive, as in
    // `class_deps`.
    let id = unsafe { crate::types::FunctionID::from_raw(function) };
    // A dynamic method dies on its own (no module unload says so): never classified.
    let info8 = info.get::<crate::interfaces::ICorProfilerInfo8>().ok()?;
    let mut dynamic = 0;
    // SAFETY: `id` is alive (the caller's contract); the out is a local.
    if unsafe { info8.IsFunctionDynamic(id, &mut dynamic) } < 0 || dynamic != 0 {
        return None;
    }
    let info2 = info.get::<crate::interfaces::ICorProfilerInfo2>().ok()?;
    let (mut class, mut module, mut token) = (crate::types::ClassID::NULL, crate::types::ModuleID::NULL, 0);
    let frame = crate::imp::zeroed();
    let args = type_args(|cap, n, buf| {
        // SAFETY: `id` is alive (the caller's contract); the outs are locals, `buf` holds `cap`
        // ClassIDs; a null frame asks for the function's own type arguments.
        unsafe { info2.GetFunctionInfo2(id, frame, &mut class, &mut module, &mut token, cap, n, buf) }
    })?;
    module_dep(info, module.as_raw(), modules, deps)?;
    class_deps(info, class.as_raw(), modules, deps, 0)?;
    for arg in args {
        class_deps(info, arg, modules, deps, 1)?;
    }
    Some(())
}

/// Refuses a `ModuleID` whose module unloaded.
///
/// # Safety
/// `id` is a `ModuleID` the runtime handed out (it may have died since: that is what this checks);
/// one it did not is noted and later handed to the runtime.
#[doc(hidden)]
#[inline]
pub unsafe fn alive_module(id: usize) -> Result<()> {
    check(id, Kind::Exact)
}

/// Refuses an `AssemblyID` whose assembly unloaded.
///
/// # Safety
/// `id` is a `AssemblyID` the runtime handed out (it may have died since: that is what this checks);
/// one it did not is noted and later handed to the runtime.
#[doc(hidden)]
#[inline]
pub unsafe fn alive_assembly(id: usize) -> Result<()> {
    check(id, Kind::Exact)
}

/// Refuses, once an unload began, a `ClassID` neither lent to this thread nor classified alive.
///
/// # Safety
/// `id` is a `ClassID` the runtime handed out (it may have died since: that is what this checks);
/// one it did not is noted and later handed to the runtime.
#[doc(hidden)]
#[inline]
pub unsafe fn alive_class(id: usize) -> Result<()> {
    check(id, Kind::Class)
}

/// Refuses, once an unload began, a `FunctionID` neither lent to this thread nor classified
/// alive.
///
/// # Safety
/// `id` is a `FunctionID` the runtime handed out (it may have died since: that is what this checks);
/// one it did not is noted and later handed to the runtime.
#[doc(hidden)]
#[inline]
pub unsafe fn alive_function(id: usize) -> Result<()> {
    check(id, Kind::Function)
}

/// How many IDs one thread holds lent at once; more are not lent (and refused once an unload
/// began), never written past.
const LENT_CAP: usize = 64;

/// A lent ID's generation when a callback lends it: valid for the whole callback.
const ARGUMENT: u32 = 0;

/// Entries of the per-thread cache that keeps a repeated ID from reaching [`PENDING`].
const RECENT_WAYS: usize = 256;

/// One thread's state, kept in its `info_gate` slot (two loads away on x86-64 Linux; Rust's
/// thread-locals in a `cdylib` cost a `__tls_get_addr` call per access). A slot outlives its
/// thread and is handed to a later one: every scope is closed by then, and what `recent` holds
/// is true of any thread (the IDs were noted).
pub(crate) struct Local {
    /// The IDs lent to the thread, with the generation they were lent in ([`ARGUMENT`] for a
    /// callback's own); at most [`LENT_CAP`].
    lent: RefCell<Vec<(usize, u32)>>,
    /// The IDs recently noted, one per way.
    recent: [Cell<usize>; RECENT_WAYS],
    /// How many lending callbacks run on this thread: outputs are lent only inside one.
    depth: Cell<u32>,
    /// How many of them are unload callbacks: what they are handed, and what calls made there
    /// return, may be of the code that unloads, and is never noted for classification.
    unloading: Cell<u32>,
}

impl Local {
    pub(crate) const fn new() -> Local {
        Local {
            lent: RefCell::new(Vec::new()),
            recent: [const { Cell::new(0) }; RECENT_WAYS],
            depth: Cell::new(0),
            unloading: Cell::new(0),
        }
    }
}

fn in_unload_callback() -> bool {
    with_local(|l| l.unloading.get() > 0)
}

fn is_lent(id: usize) -> bool {
    let now = GENERATION.load(Ordering::SeqCst);
    with_local(|l| {
        l.lent.borrow().iter().any(|&(lent, generation)| lent == id && (generation == ARGUMENT || generation == now))
    })
}

fn push(l: &Local, id: usize, generation: u32) {
    let mut lent = l.lent.borrow_mut();
    if lent.len() < LENT_CAP {
        lent.push((id, generation));
    }
}

/// Held by a callback thunk for the callback's duration: the IDs it was handed are lent to the
/// thread until it is dropped.
#[doc(hidden)]
pub struct LentScope {
    /// Whether `lend_ids` entered the thread's state (and the drop must leave it): after an
    /// unload began, or in an unload callback.
    entered: bool,
    len: usize,
    unloading: bool,
    _here: PhantomData<*const ()>,
}

/// Lends a callback's ID parameters (raw values, with their kinds) for the callback, and notes
/// the classes and functions among them, unless the callback is about an unload (`unloading`).
/// Before any unload nothing needs lending (every ID is alive, and those noted here are
/// classified when one begins): only the noting is done, and a callback that starts then lends
/// nothing for its whole run (its IDs are classified by the unload that begins meanwhile).
///
/// # Safety
/// The runtime handed `ids` (of those kinds) to the callback running on this thread, which
/// lasts until the scope is dropped, on this thread; `unloading` is set for an unload callback.
#[doc(hidden)]
#[inline]
pub unsafe fn lend_ids(ids: &[(usize, Kind)], unloading: bool) -> LentScope {
    let entered = unloading || STATE.load(Ordering::Relaxed) != 0;
    let mut len = 0;
    if entered {
        with_local(|l| {
            len = l.lent.borrow().len();
            if unloading {
                l.unloading.set(l.unloading.get().saturating_add(1));
            }
            l.depth.set(l.depth.get().saturating_add(1));
            for &(id, _) in ids {
                push(l, id, ARGUMENT);
            }
        });
    }
    for &(id, kind) in ids {
        if kind != Kind::Exact {
            record(id, kind);
        }
    }
    LentScope { entered, len, unloading, _here: PhantomData }
}

impl Drop for LentScope {
    #[inline]
    fn drop(&mut self) {
        if !self.entered {
            return;
        }
        with_local(|l| {
            l.lent.borrow_mut().truncate(self.len);
            l.depth.set(l.depth.get().saturating_sub(1));
            if self.unloading {
                l.unloading.set(l.unloading.get().saturating_sub(1));
            }
        });
    }
}

/// A `ClassID` or `FunctionID` a wrapper returned (alive then): noted for classification, and,
/// inside a lending callback once an unload began, lent until the next unload begins or the
/// callback ends.
///
/// # Safety
/// A call to the runtime on this thread has just returned `id`, of that kind, successfully.
#[doc(hidden)]
#[inline]
pub unsafe fn lend_output(id: usize, kind: Kind) {
    record(id, kind);
    if STATE.load(Ordering::Relaxed) != 0 {
        let generation = GENERATION.load(Ordering::SeqCst);
        with_local(|l| {
            if l.depth.get() > 0 {
                push(l, id, generation);
            }
        });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // The tests call the bookkeeping as the generated code does, with made-up IDs that never
    // reach a runtime (none is loaded in a unit test: `classify` answers `None`).
    fn alive_class(id: usize) -> Result<()> {
        // SAFETY: no runtime here; see above.
        unsafe { super::alive_class(id) }
    }
    fn alive_function(id: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { super::alive_function(id) }
    }
    fn alive_module(id: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { super::alive_module(id) }
    }
    fn alive_assembly(id: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { super::alive_assembly(id) }
    }
    fn lend_ids(ids: &[(usize, Kind)], unloading: bool) -> LentScope {
        // SAFETY: as above; the scopes are dropped on this thread.
        unsafe { super::lend_ids(ids, unloading) }
    }
    fn lend_output(id: usize, kind: Kind) {
        // SAFETY: as above.
        unsafe { super::lend_output(id, kind) }
    }
    fn track(this: *const std::ffi::c_void, what: Tracked, id: usize, user: impl FnOnce() -> Result<()>) -> Result<()> {
        // SAFETY: as above.
        unsafe { super::track(this, what, id, user) }
    }

    /// Serializes the tests that touch the process-wide state, and puts it back.
    pub(crate) static STATE_LOCK: Mutex<()> = Mutex::new(());

    pub(crate) fn reset() {
        STATE.store(0, Ordering::SeqCst);
        *lock(&DEAD) = None;
        *lock(&PENDING) = None;
        *lock(&MEMO) = None;
    }

    #[test]
    fn before_any_unload_every_id_is_taken_and_classes_are_noted() {
        let _l = lock(&STATE_LOCK);
        reset();
        assert_eq!(alive_class(0x10), Ok(()));
        assert_eq!(alive_function(0x18), Ok(()));
        assert_eq!(alive_module(0x20), Ok(()));
        let pending = lock(&PENDING).clone().unwrap_or_default();
        assert_eq!(pending.get(&0x10), Some(&Kind::Class));
        assert_eq!(pending.get(&0x18), Some(&Kind::Function));
        assert_eq!(pending.get(&0x20), None, "modules are tracked exactly");
        reset();
    }

    #[test]
    fn an_unloaded_module_is_refused_until_its_address_loads_again() {
        let _l = lock(&STATE_LOCK);
        reset();
        track(std::ptr::null(), Tracked::ModuleUnloadStarted, 0x20, || Ok(())).unwrap();
        assert_eq!(alive_module(0x20), Err(UNLOADED));
        assert_eq!(alive_module(0x30), Ok(()), "another module is alive");
        track(std::ptr::null(), Tracked::ModuleLoadStarted, 0x20, || Ok(())).unwrap();
        assert_eq!(alive_module(0x20), Ok(()), "handed out again");
        reset();
    }

    #[test]
    fn a_panicking_unload_callback_still_marks_the_module() {
        let _l = lock(&STATE_LOCK);
        reset();
        // A profiler object whose mask asked for assembly loads (its gate, as its initialize opens).
        let profiler = 0x5a10 as *const std::ffi::c_void;
        crate::info_gate::open(profiler, 0x5a20 as *const std::ffi::c_void).set_wanted(TRACKED_BITS);
        let unwound = std::panic::catch_unwind(|| {
            track(profiler, Tracked::AssemblyUnloadStarted, 0x90, || panic!("in the callback"))
        });
        assert!(unwound.is_err(), "the profiler's method ran");
        assert_eq!(alive_assembly(0x90), Err(UNLOADED));
        reset();
    }

    #[test]
    fn after_an_unload_unclassified_classes_are_taken_only_while_lent() {
        let _l = lock(&STATE_LOCK);
        reset();
        // No runtime here: nothing noted can be classified, so nothing is taken but what is lent.
        track(std::ptr::null(), Tracked::AssemblyUnloadFinished, 0x50, || Ok(())).unwrap();
        assert_eq!(alive_class(0x60), Err(UNLOADED), "kept from before");
        {
            let _scope = lend_ids(&[(0x60, Kind::Class)], false);
            assert_eq!(alive_class(0x60), Ok(()), "the callback's own");
            assert_eq!(alive_class(0x70), Err(UNLOADED));
            lend_output(0x70, Kind::Class);
            assert_eq!(alive_class(0x70), Ok(()), "returned inside the callback");
            GENERATION.fetch_add(1, Ordering::SeqCst);
            assert_eq!(alive_class(0x70), Err(UNLOADED), "an output of before the next unload");
            assert_eq!(alive_class(0x60), Ok(()), "an argument stays lent");
        }
        assert_eq!(alive_class(0x60), Err(UNLOADED), "the callback ended");
        lend_output(0x80, Kind::Class);
        assert_eq!(alive_class(0x80), Err(UNLOADED), "no callback: nothing is lent");
        reset();
    }

    #[test]
    fn classified_ids_stay_taken_until_a_module_they_depend_on_unloads() {
        let _l = lock(&STATE_LOCK);
        reset();
        STATE.fetch_or(UNLOADING, Ordering::SeqCst);
        lock(&MEMO).get_or_insert_with(HashMap::default).extend([
            (0x100, vec![]),
            (0x200, vec![0x20]),
            (0x300, vec![0x30]),
        ]);
        assert_eq!(alive_class(0x100), Ok(()), "code that never unloads");
        assert_eq!(alive_function(0x200), Ok(()), "its module is loaded");
        track(std::ptr::null(), Tracked::ModuleUnloadStarted, 0x20, || Ok(())).unwrap();
        assert_eq!(alive_function(0x200), Err(UNLOADED), "its module unloaded");
        assert_eq!(alive_class(0x300), Ok(()), "another module's");
        assert_eq!(alive_class(0x100), Ok(()));
        track(std::ptr::null(), Tracked::ModuleLoadStarted, 0x20, || Ok(())).unwrap();
        assert_eq!(alive_function(0x200), Err(UNLOADED), "a new module at the old address revives nothing");
        reset();
    }

    #[test]
    fn nothing_an_unload_callback_is_handed_or_returned_is_noted() {
        let _l = lock(&STATE_LOCK);
        reset();
        {
            let _scope = lend_ids(&[(0x400, Kind::Class)], true);
            lend_output(0x410, Kind::Class);
            assert_eq!(alive_class(0x420), Ok(()));
        }
        assert!(lock(&PENDING).as_ref().is_none_or(HashMap::is_empty), "{:?}", lock(&PENDING));
        reset();
    }

    #[test]
    fn blind_refuses_every_id_not_lent() {
        let _l = lock(&STATE_LOCK);
        reset();
        blind();
        assert_eq!(alive_module(0x20), Err(UNLOADED));
        let scope = lend_ids(&[(0x20, Kind::Exact)], false);
        assert_eq!(alive_module(0x20), Ok(()));
        drop(scope);
        reset();
    }

    #[test]
    fn lending_more_than_fits_drops_the_rest_and_writes_nothing_past() {
        let _l = lock(&STATE_LOCK);
        reset();
        blind();
        let ids: Vec<(usize, Kind)> = (1..=LENT_CAP + 10).map(|i| (i << 4, Kind::Class)).collect();
        let scope = lend_ids(&ids, false);
        assert_eq!(alive_class(LENT_CAP << 4), Ok(()));
        assert_eq!(alive_class((LENT_CAP + 1) << 4), Err(UNLOADED), "past the cap: not lent");
        drop(scope);
        assert_eq!(alive_class(1 << 4), Err(UNLOADED));
        reset();
    }
}
