//! The gate in front of the runtime's Info object: what keeps a [`ProfilerInfo`](crate::ProfilerInfo)
//! from reaching that object once the runtime has freed it.
//!
//! The runtime deletes the object it hands to `Initialize`/`InitializeForAttach` (and unloads the
//! profiler library) after a failed initialize or a detach, whatever its reference count, and
//! stops honouring it at `Shutdown`. A `ProfilerInfo` is `Clone + Send + Sync + 'static`, so
//! clones may still be in use on other threads then. This module takes:
//!
//! - [`open`], from the `Initialize`/`InitializeForAttach` thunk before the profiler's code runs:
//!   one [`Gate`] per Info object, found again by its address ([`find`]) when a wrapper negotiates
//!   over that object (`wrapper_support::Negotiated`); it also pins the profiler library in
//!   memory;
//! - [`close_for`], from the thunks after a failed initialize, after `ProfilerDetachSucceeded`
//!   and after `Shutdown`: marks the profiler's gates closed, then waits until no other thread
//!   is inside a call through one (calls through another profiler object's gates are not waited
//!   for: several objects of one library, notification profilers, detach independently, and a
//!   detach that waited for another object's call into the runtime could deadlock with it);
//!
//! and gives [`Gate::enter`]: every call through a gated wrapper holds an [`Entered`] for its
//! duration, or gets [`CLOSED`] without touching the object; [`enter_object`] does the same by
//! address for `ComPtr`'s `AddRef`/`Release` and `IUnknown::query`, which leak or refuse once
//! the gate is closed.
//!
//! # How a call and a close agree, without a lock
//!
//! Each thread owns a [`Slot`], a counter of its calls in flight (nested calls, an Info call
//! inside a stack-walk closure inside an Info call, count twice) and the gate they go through
//! ([`MIXED`] when nested calls go through different gates). Entering stores the gate, then
//! `count + 1` (plain stores: only the owner writes its slot), then loads the gate's `closed`
//! flag; leaving stores the old count back. Closing stores `closed`, then waits until every other
//! thread's count is 0 or its gate is one that stays open. That is the store-buffering pattern (each side stores one location and loads the
//! other's), which needs a full fence on both sides; the entering side, which runs per call,
//! only has a compiler fence. The closer supplies the missing fence to every other thread at
//! once with `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: when it returns, every thread of
//! the process has executed a full barrier at some point of its program order after the closer's
//! store of `closed`. For a thread entering concurrently, that point falls either after its
//! store of the count (the closer then sees the count and waits for it) or before its load of
//! `closed` (the thread then sees `closed` and does not call): the compiler fence keeps the store
//! before the load in program order, so one of the two always holds. Where the kernel lacks the
//! expedited command, `MEMBARRIER_CMD_GLOBAL` gives the same guarantee, slower; where it lacks
//! both (another OS, or a seccomp filter), entering uses a real `SeqCst` fence and the pattern is
//! the textbook one.

use crate::{HResult, Result};
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicUsize, Ordering, compiler_fence, fence};

/// What every call through a closed gate returns: `CORPROF_E_PROFILER_DETACHING`, the code the
/// runtime itself gives Info calls made while it is letting go of the profiler.
pub const CLOSED: HResult = HResult::CORPROF_E_PROFILER_DETACHING;

/// The gate of one runtime Info object. Never freed: wrappers keep `&'static` references, and a
/// closed gate must stay closed for the clones that outlive the object.
pub struct Gate {
    /// The address of the Info object, as the runtime passed it.
    object: usize,
    /// The profiler object (`this` of the callback thunks) whose initialize opened the gate.
    profiler: usize,
    /// [`CLOSED_BIT`] and [`FENCE_BIT`]: one byte, so that entering loads one location.
    state: AtomicU8,
    /// The low event mask the profiler last set through a wrapper (`crate::unloads`: the load
    /// and unload callbacks corprof keeps set reach the profiler only when it asked for them).
    wanted: AtomicU32,
    next: *const Gate,
}

/// Set in [`Gate::state`] once the gate has closed.
const CLOSED_BIT: u8 = 1;
/// Set in [`Gate::state`] when entering must fence for itself (no usable membarrier).
const FENCE_BIT: u8 = 2;

/// [`Slot::gate`] when the thread's calls in flight go through more than one gate: every closer
/// waits for it.
const MIXED: usize = 1;

// SAFETY: `next` is null or another leaked `Gate`, written once before this gate is published
// and never again; everything else is a plain integer or an atomic.
unsafe impl Sync for Gate {}
// SAFETY: as for `Sync`.
unsafe impl Send for Gate {}

/// Every gate opened in this process, newest first; a push-only list.
static GATES: AtomicPtr<Gate> = AtomicPtr::new(ptr::null_mut());

/// Opens a gate for the Info object `object`, handed to the profiler object `profiler`'s
/// initialize. Called before the profiler's `initialize` runs, so every wrapper of `object`
/// finds it; pins the library and picks the fence strategy on first use.
pub(crate) fn open(profiler: *const c_void, object: *const c_void) -> &'static Gate {
    let heavy = strategy() == FENCE;
    pin_library();
    let gate = Box::leak(Box::new(Gate {
        object: object as usize,
        profiler: profiler as usize,
        state: AtomicU8::new(if heavy { FENCE_BIT } else { 0 }),
        wanted: AtomicU32::new(0),
        next: ptr::null(),
    }));
    let mut head = GATES.load(Ordering::Acquire);
    loop {
        gate.next = head;
        match GATES.compare_exchange_weak(head, gate, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return gate,
            Err(now) => head = now,
        }
    }
}

/// The newest gate opened for the object at `object`, if any: a wrapper negotiated over it
/// is gated by it.
pub(crate) fn find(object: *const c_void) -> Option<&'static Gate> {
    gates().find(|g| g.object == object as usize)
}

/// Enters the gate of the object at `object`, if it has one: what `ComPtr` and `IUnknown::query`
/// do around their calls (`Ok(None)` for every object but the runtime's Info object).
#[inline]
pub(crate) fn enter_object(object: *const c_void) -> Result<Option<Entered>> {
    find(object).map(Gate::enter).transpose()
}

fn gates() -> impl Iterator<Item = &'static Gate> {
    // SAFETY: every pointer in the list is a leaked `Gate`, published with Release after its
    // `next` was written, and never freed.
    std::iter::successors(unsafe { GATES.load(Ordering::Acquire).as_ref() }, |g| unsafe { g.next.as_ref() })
}

/// Closes every open gate of the profiler object `profiler`, then returns once no other thread
/// is inside a call through a gated wrapper. The calling thread's own calls in flight are not
/// waited for (it would wait for itself).
pub(crate) fn close_for(profiler: *const c_void) {
    let mut closing = Vec::new();
    for gate in gates().filter(|g| g.profiler == profiler as usize) {
        if gate.state.fetch_or(CLOSED_BIT, Ordering::SeqCst) & CLOSED_BIT == 0 {
            closing.push(gate as *const Gate as usize);
        }
    }
    if !closing.is_empty() {
        drain(&closing);
    }
}

impl Gate {
    /// Enters the gate for one call: `Err(CLOSED)` once the gate is closed, otherwise a guard
    /// that the closer waits for until it is dropped.
    #[inline(always)]
    pub fn enter(&'static self) -> Result<Entered> {
        let slot = Slot::mine();
        let before = slot.count.load(Ordering::Relaxed);
        let me = self as *const Gate as usize;
        if before == 0 {
            slot.gate.store(me, Ordering::Relaxed);
        } else if slot.gate.load(Ordering::Relaxed) != me {
            slot.gate.store(MIXED, Ordering::Relaxed);
        }
        // The gate's store stays before the count's: a closer that sees the count sees the gate
        // too (the same barrier argument as below).
        compiler_fence(Ordering::SeqCst);
        slot.count.store(before + 1, Ordering::Relaxed);
        // The store above must be ordered before the load below: in program order by this fence,
        // in the memory system by the closer's membarrier (module docs), or, without one, by a
        // real fence and a second load.
        compiler_fence(Ordering::SeqCst);
        let mut state = self.state.load(Ordering::Relaxed);
        if state & FENCE_BIT != 0 {
            fence(Ordering::SeqCst);
            state = self.state.load(Ordering::Relaxed);
        }
        if state & CLOSED_BIT != 0 {
            slot.count.store(before, Ordering::Relaxed);
            return Err(CLOSED);
        }
        Ok(Entered { slot, before })
    }

    /// Whether the gate is closed (the object is gone or going).
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) & CLOSED_BIT != 0
    }

    /// Records the low event mask the profiler set.
    pub(crate) fn set_wanted(&self, low: u32) {
        self.wanted.store(low, Ordering::Relaxed);
    }

    /// The low event mask the profiler last set through a wrapper (0 before it set one).
    pub(crate) fn wanted(&self) -> u32 {
        self.wanted.load(Ordering::Relaxed)
    }
}

/// Whether the profiler object `profiler` asked for the callbacks of the low mask bit `bit`
/// (its newest gate's mask; no gate, no profiler code has run: no).
pub(crate) fn wants(profiler: *const c_void, bit: u32) -> bool {
    gates().find(|g| g.profiler == profiler as usize).is_some_and(|g| g.wanted() & bit != 0)
}

/// Waits until no other thread is inside a gated call, through any gate: what an unload does
/// after marking IDs dead (`crate::unloads`), by the same barrier argument as closing.
pub(crate) fn drain_all() {
    barrier();
    let own = mine::get();
    for slot in Slot::all().filter(|s| !ptr::eq(*s, own)) {
        wait_while(|| slot.count.load(Ordering::Acquire) != 0);
    }
}

fn wait_while(busy: impl Fn() -> bool) {
    let mut spins = 0u32;
    while busy() {
        spins += 1;
        if spins < 100 {
            std::hint::spin_loop();
        } else if spins < 1000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

/// One call in flight through a gate; leaving the call is dropping this.
#[must_use]
pub struct Entered {
    slot: &'static Slot,
    before: usize,
}

impl Drop for Entered {
    #[inline(always)]
    fn drop(&mut self) {
        // Release: the call's accesses to the object happen before the closer, which loads the
        // count with Acquire, sees it back at 0 and lets the runtime free the object.
        self.slot.count.store(self.before, Ordering::Release);
    }
}

/// A thread's count of calls in flight. Slots are never freed: a thread ending gives its slot
/// back for the next thread to claim.
struct Slot {
    count: AtomicUsize,
    /// The address of the gate the calls in flight go through, or [`MIXED`]; meaningful while
    /// `count` is not 0.
    gate: AtomicUsize,
    taken: AtomicBool,
    /// The thread's bookkeeping of IDs of unloadable code (`crate::unloads`), kept here to be
    /// reached as cheaply as the slot.
    local: crate::unloads::Local,
    next: *const Slot,
}

// SAFETY: `next` is written once before the slot is published and points to another leaked
// slot; `local` (not thread-safe) is touched only through `with_local`, by the one thread that
// holds the slot (`taken`: claimed by one thread, given back when it ends); the rest is atomic.
unsafe impl Sync for Slot {}

/// Runs `f` with the calling thread's `unloads::Local` (in its slot, claimed on first use).
#[inline(always)]
pub(crate) fn with_local<R>(f: impl FnOnce(&crate::unloads::Local) -> R) -> R {
    f(&Slot::mine().local)
}

/// Every slot, newest first; a push-only list.
static SLOTS: AtomicPtr<Slot> = AtomicPtr::new(ptr::null_mut());

thread_local! {
    /// Gives the slot back when the thread ends.
    static RETURN: SlotReturn = const { SlotReturn };
}

struct SlotReturn;

impl Drop for SlotReturn {
    fn drop(&mut self) {
        // SAFETY: a non-null slot pointer is a leaked slot this thread claimed.
        if let Some(slot) = unsafe { mine::get().as_ref() } {
            mine::set(ptr::null());
            slot.taken.store(false, Ordering::Release);
        }
    }
}

/// This thread's slot pointer, null until its first gated call.
///
/// On x86-64 Linux a thread-local of the initial-exec model, declared in assembly: reading it is
/// two loads (`%fs:0` and the GOT's offset). Rust's `thread_local!` in a `cdylib` is of the
/// general-dynamic model, a call to `__tls_get_addr` per access, which alone costs about what
/// the whole gate may (BENCHMARKS.md §8). The static TLS block the variable takes (8 bytes) comes
/// from glibc's surplus reserved for libraries loaded with `dlopen`, as the runtime loads a
/// profiler.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod mine {
    use super::Slot;

    // Hidden, so that the profiler library does not export it; the name is only corprof's.
    std::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl corprof_info_gate_slot_v1",
        ".hidden corprof_info_gate_slot_v1",
        "corprof_info_gate_slot_v1:",
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    fn place() -> *mut *const Slot {
        let p: *mut *const Slot;
        // SAFETY: `%fs:0` holds the thread pointer (the x86-64 TLS ABI), and the GOT entry the
        // GOTTPOFF relocation names holds the variable's offset from it, filled by the loader;
        // the sum is this thread's 8-byte, 8-aligned variable declared above. Reads only.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr fs:[0]",
                "add {p}, qword ptr [rip + corprof_info_gate_slot_v1@GOTTPOFF]",
                p = out(reg) p,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        p
    }

    #[inline(always)]
    pub fn get() -> *const Slot {
        // SAFETY: `place` is this thread's own variable, live for the thread's life, which no
        // other thread reads or writes.
        unsafe { *place() }
    }

    #[inline(always)]
    pub fn set(slot: *const Slot) {
        // SAFETY: as for `get`.
        unsafe { *place() = slot }
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod mine {
    use super::Slot;

    thread_local! {
        // A `const` initializer without drop glue: no lazy-init check on access.
        static MINE: Cell<*const Slot> = const { Cell::new(std::ptr::null()) };
    }

    #[inline(always)]
    pub fn get() -> *const Slot {
        MINE.try_with(Cell::get).unwrap_or(std::ptr::null())
    }

    #[inline(always)]
    pub fn set(slot: *const Slot) {
        let _ = MINE.try_with(|m| m.set(slot));
    }
}

impl Slot {
    #[inline(always)]
    fn mine() -> &'static Slot {
        let p = mine::get();
        // SAFETY: a non-null slot pointer is a leaked slot this thread claimed and still owns.
        match unsafe { p.as_ref() } {
            Some(slot) => slot,
            None => Slot::claim(),
        }
    }

    #[cold]
    #[inline(never)]
    fn claim() -> &'static Slot {
        let slot = Slot::free().unwrap_or_else(Slot::push);
        mine::set(slot);
        // Touching `RETURN` registers its drop at thread exit. A thread already tearing down its
        // thread-locals cannot register it and keeps the slot for good: a leak of one slot, never
        // a slot shared by two threads.
        let _ = RETURN.try_with(|_| ());
        slot
    }

    fn all() -> impl Iterator<Item = &'static Slot> {
        // SAFETY: every pointer in the list is a leaked `Slot`, published with Release after its
        // `next` was written, and never freed.
        std::iter::successors(unsafe { SLOTS.load(Ordering::Acquire).as_ref() }, |s| unsafe { s.next.as_ref() })
    }

    fn free() -> Option<&'static Slot> {
        Slot::all().find(|s| s.taken.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok())
    }

    fn push() -> &'static Slot {
        let slot = Box::leak(Box::new(Slot {
            count: AtomicUsize::new(0),
            gate: AtomicUsize::new(MIXED),
            taken: AtomicBool::new(true),
            local: crate::unloads::Local::new(),
            next: ptr::null(),
        }));
        let mut head = SLOTS.load(Ordering::Acquire);
        loop {
            slot.next = head;
            match SLOTS.compare_exchange_weak(head, slot, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return slot,
                Err(now) => head = now,
            }
        }
    }
}

/// Waits until no other thread is inside a call through one of the `closing` gates (its slot's
/// count is 0, or its gate another one), after making the closed flags visible to them (module
/// docs).
fn drain(closing: &[usize]) {
    barrier();
    let own = mine::get();
    let inside = |slot: &Slot| {
        slot.count.load(Ordering::Acquire) != 0 && {
            let gate = slot.gate.load(Ordering::Relaxed);
            gate == MIXED || closing.contains(&gate)
        }
    };
    for slot in Slot::all().filter(|s| !ptr::eq(*s, own)) {
        wait_while(|| inside(slot));
    }
}

/// The closer's barrier, chosen once by [`strategy`].
static STRATEGY: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = 0;
const EXPEDITED: u8 = 1;
const GLOBAL: u8 = 2;
const FENCE: u8 = 3;

/// Picks the barrier before the first gate opens, hence before any gated call: registering for
/// the expedited command must precede its use, and a gate's `FENCE_BIT` is set when it opens.
fn strategy() -> u8 {
    let now = STRATEGY.load(Ordering::Acquire);
    if now != UNSET {
        return now;
    }
    let picked = membarrier::pick();
    STRATEGY.store(picked, Ordering::Release);
    picked
}

/// The closer's side of the asymmetric fence.
fn barrier() {
    fence(Ordering::SeqCst);
    match strategy() {
        EXPEDITED if membarrier::call(membarrier::PRIVATE_EXPEDITED) => {}
        // The expedited command failing after registration succeeded is not expected; the
        // global one orders every thread of the system, which covers ours.
        EXPEDITED | GLOBAL if membarrier::call(membarrier::GLOBAL) => {}
        EXPEDITED | GLOBAL => {
            // Both failed after the query said they work: not expected, never seen. Entering
            // does not fence for itself, and no barrier reached the other threads; the best left
            // is to make every later entry fence and to give running threads a scheduler tick
            // (a context switch is a full barrier). Not a proof.
            for gate in gates() {
                gate.state.fetch_or(FENCE_BIT, Ordering::SeqCst);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        _ => {}
    }
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod membarrier {
    use std::ffi::{c_int, c_long};

    #[cfg(target_arch = "x86_64")]
    const SYS_MEMBARRIER: c_long = 324;
    #[cfg(target_arch = "aarch64")]
    const SYS_MEMBARRIER: c_long = 283;

    const QUERY: c_int = 0;
    pub const GLOBAL: c_int = 1;
    pub const PRIVATE_EXPEDITED: c_int = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: c_int = 1 << 4;

    unsafe extern "C" {
        fn syscall(number: c_long, ...) -> c_long;
    }

    fn membarrier(cmd: c_int) -> c_long {
        // SAFETY: membarrier(cmd, flags = 0, cpu_id = 0) only reads its integer arguments.
        unsafe { syscall(SYS_MEMBARRIER, cmd, 0 as c_int, 0 as c_int) }
    }

    /// Whether the command ran.
    pub fn call(cmd: c_int) -> bool {
        membarrier(cmd) == 0
    }

    pub fn pick() -> u8 {
        let supported = membarrier(QUERY);
        if supported < 0 {
            return super::FENCE;
        }
        let has = |cmd: c_int| supported & cmd as c_long != 0;
        if has(PRIVATE_EXPEDITED) && has(REGISTER_PRIVATE_EXPEDITED) && call(REGISTER_PRIVATE_EXPEDITED) {
            super::EXPEDITED
        } else if has(GLOBAL) {
            super::GLOBAL
        } else {
            super::FENCE
        }
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
mod membarrier {
    pub const GLOBAL: i32 = 1;
    pub const PRIVATE_EXPEDITED: i32 = 8;
    pub fn call(_: i32) -> bool {
        false
    }
    pub fn pick() -> u8 {
        super::FENCE
    }
}

/// Keeps the profiler library mapped for the life of the process. The runtime unloads it after
/// a failed initialize or a detach; a thread the profiler started would then run unmapped code.
/// Pinned, such a thread runs on and gets [`CLOSED`] from every gated call. Once per library.
pub(crate) fn pin_library() {
    static PINNED: AtomicBool = AtomicBool::new(false);
    if PINNED.swap(true, Ordering::AcqRel) {
        return;
    }
    #[cfg(target_os = "linux")]
    pin::pin();
}

#[cfg(target_os = "linux")]
mod pin {
    use std::ffi::{c_char, c_int, c_void};

    #[repr(C)]
    struct DlInfo {
        fname: *const c_char,
        fbase: *mut c_void,
        sname: *const c_char,
        saddr: *mut c_void,
    }

    const RTLD_NOW: c_int = 2;
    const RTLD_NODELETE: c_int = 0x1000;

    unsafe extern "C" {
        fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
        fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    }

    pub fn pin() {
        let mut info = DlInfo {
            fname: std::ptr::null(),
            fbase: std::ptr::null_mut(),
            sname: std::ptr::null(),
            saddr: std::ptr::null_mut(),
        };
        // SAFETY: `dladdr` reads the address (of a function of this library) and writes `info`.
        let found = unsafe { dladdr(pin as *const c_void, &mut info) } != 0;
        if found && !info.fname.is_null() {
            // SAFETY: `fname` is the NUL-terminated path the loader holds for this library.
            // The handle is never closed: with RTLD_NODELETE the library then stays mapped even
            // after every other handle to it is closed. A null result (not expected: the library
            // is loaded) leaves it unpinned.
            unsafe { dlopen(info.fname, RTLD_NOW | RTLD_NODELETE) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU32;
    use std::time::{Duration, Instant};

    fn new_gate(profiler: usize) -> &'static Gate {
        open(profiler as *const c_void, (profiler + 8) as *const c_void)
    }

    #[test]
    fn closing_waits_for_a_call_in_flight_on_another_thread() {
        let gate = new_gate(0x1000);
        let in_call = Arc::new(AtomicU32::new(0));
        let flag = in_call.clone();
        let caller = std::thread::spawn(move || {
            let entered = gate.enter().expect("open gate");
            flag.store(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
            flag.store(2, Ordering::SeqCst);
            drop(entered);
        });
        while in_call.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let start = Instant::now();
        close_for(0x1000 as *const c_void);
        assert_eq!(in_call.load(Ordering::SeqCst), 2, "close returned while the call was in flight");
        assert!(start.elapsed() >= Duration::from_millis(200));
        caller.join().unwrap();
        assert_eq!(gate.enter().err(), Some(CLOSED));
    }

    #[test]
    fn nested_calls_and_the_closers_own_calls() {
        let gate = new_gate(0x2000);
        let outer = gate.enter().unwrap();
        let inner = gate.enter().unwrap();
        // The closer skips its own slot: closing from inside a call does not wait for itself.
        close_for(0x2000 as *const c_void);
        assert_eq!(gate.enter().err(), Some(CLOSED));
        drop(inner);
        drop(outer);
        assert_eq!(Slot::mine().count.load(Ordering::Relaxed), 0);
    }

    /// Several profiler objects of one library (notification profilers) detach independently: a
    /// call in flight through one's gate does not hold up the close of another's (a detach
    /// waiting for another object's call into the runtime could wait for ever), while a thread
    /// whose nested calls went through both is waited for.
    #[test]
    fn closing_one_profiler_does_not_wait_for_another_profilers_call() {
        let other = new_gate(0x9000);
        let mine = new_gate(0xA000);
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let caller = std::thread::spawn(move || {
            let entered = other.enter().expect("open gate");
            entered_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            drop(entered);
        });
        entered_rx.recv().unwrap();
        let start = Instant::now();
        close_for(0xA000 as *const c_void);
        assert!(start.elapsed() < Duration::from_secs(5), "the close waited for another profiler's call");
        assert!(mine.is_closed() && !other.is_closed());
        release_tx.send(()).unwrap();
        caller.join().unwrap();

        // Nested calls through two gates: the closer of either waits.
        let outer_gate = new_gate(0xB000);
        let inner_gate = new_gate(0xC000);
        let in_call = Arc::new(AtomicU32::new(0));
        let flag = in_call.clone();
        let caller = std::thread::spawn(move || {
            let outer = outer_gate.enter().expect("open gate");
            let inner = inner_gate.enter().expect("open gate");
            drop(inner);
            flag.store(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
            flag.store(2, Ordering::SeqCst);
            drop(outer);
        });
        while in_call.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        close_for(0xC000 as *const c_void);
        assert_eq!(in_call.load(Ordering::SeqCst), 2, "close returned while a mixed call was in flight");
        caller.join().unwrap();
    }

    #[test]
    fn closing_one_profiler_leaves_another_open_and_finds_by_address() {
        let a = new_gate(0x3000);
        let b = new_gate(0x4000);
        close_for(0x3000 as *const c_void);
        assert!(a.is_closed() && !b.is_closed());
        assert!(ptr::eq(find(0x4008 as *const c_void).unwrap(), b));
        assert!(find(0x5008 as *const c_void).is_none());
    }

    #[test]
    fn many_threads_racing_a_close_are_all_out_when_it_returns() {
        racing_a_close(0x6000, false);
    }

    /// The same with entering fencing for itself, as where membarrier is unavailable.
    #[test]
    fn the_fence_fallback_holds_too() {
        racing_a_close(0x8000, true);
    }

    fn racing_a_close(profiler: usize, fence_bit: bool) {
        let gate = new_gate(profiler);
        if fence_bit {
            gate.state.fetch_or(FENCE_BIT, Ordering::SeqCst);
        }
        let inside = Arc::new(AtomicU32::new(0));
        let callers: Vec<_> = (0..4)
            .map(|_| {
                let inside = inside.clone();
                std::thread::spawn(move || {
                    while let Ok(entered) = gate.enter() {
                        inside.fetch_add(1, Ordering::SeqCst);
                        for _ in 0..100 {
                            std::hint::spin_loop();
                        }
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(entered);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        close_for(profiler as *const c_void);
        assert_eq!(inside.load(Ordering::SeqCst), 0, "a call was in flight when close returned");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(inside.load(Ordering::SeqCst), 0, "a call entered after close returned");
        for c in callers {
            c.join().unwrap();
        }
    }

    /// The gate alone, outside a runtime: ns per enter/leave pair against an empty loop and a
    /// shared atomic `fetch_add`/`fetch_sub` pair, interleaved rounds. `cargo test --release --lib
    /// gate_cost -- --ignored --nocapture` (scripts/bench-gate runs it).
    #[test]
    #[ignore]
    fn gate_cost() {
        use std::hint::black_box;
        static SHARED: AtomicUsize = AtomicUsize::new(0);
        const N: u32 = 50_000_000;
        let gate = new_gate(0x7000);
        let time = |which: u32| {
            let start = Instant::now();
            for i in 0..N {
                match which {
                    0 => drop(black_box(black_box(gate).enter())),
                    1 => {
                        SHARED.fetch_add(1, Ordering::SeqCst);
                        black_box(i);
                        SHARED.fetch_sub(1, Ordering::SeqCst);
                    }
                    _ => drop(black_box(i)),
                }
            }
            start.elapsed().as_nanos() as f64 / f64::from(N)
        };
        let (mut gated, mut shared, mut empty) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..9 {
            for k in 0..3 {
                let t = time((round + k) % 3);
                [&mut gated, &mut shared, &mut empty][((round + k) % 3) as usize].push(t);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "gate_cost: empty {:.2} ns, gated {:.2} ns, shared {:.2} ns per iteration (medians of 9 rounds of {N})",
            median(&mut empty),
            median(&mut gated),
            median(&mut shared)
        );
    }
}
