//! The cpu mode's signal sampler: each managed thread is interrupted alone, by a timer of its
//! own, and its frames are read in a signal handler; no other thread stops.
//!
//! Every managed thread, once the runtime says which OS thread it runs on
//! (ThreadAssignedToOSThread, which the runtime calls on that thread), gets a slot in a fixed
//! table ([`SLOTS`]) and a POSIX timer that sends [`signal`] to that thread alone
//! (`SIGEV_THREAD_ID`): on the thread's own CPU clock with `--clock cpu` (it fires only while the
//! thread runs, once per interval of its CPU time), on the monotonic clock with `--clock wall`.
//! A timer holds the thread itself, not its number: a signal can never reach another thread that
//! reused the number after the first ended.
//!
//! The handler ([`on_signal`]) reads the interrupted RIP, RSP and RBP from the ucontext and walks
//! the RBP chain (the JIT's x64 methods keep RBP frames; libcoreclr is built with frame pointers
//! too) into the thread's ring of fixed-size records. It allocates nothing, takes no lock and
//! calls nothing of the runtime's; every word it reads lies between the interrupted RSP and the
//! top of the thread's stack (taken on the thread itself, before its first sample; for a thread
//! found running at an attach, from where its first sample's RSP lies in the process's mappings,
//! that sample keeping its address only), on the thread's own stack, so a broken chain ends the
//! walk instead of faulting. A full ring drops the sample and counts it.
//!
//! The sampler thread drains the rings every [`DRAIN_EVERY`], resolves each address through
//! `GetFunctionFromIP` (a return address as the call before it) and adds the stack to the same
//! [`Profile`] as the suspension sampler builds: `[thread <name>]` first, then the frames
//! outermost first, a run of native frames as one `[native]`.
//!
//! With `--native` ([`native`]), the walk also unwinds a library's frames by its `.eh_frame`
//! (frames that keep no RBP frame included), and every native frame is kept and named by its
//! library (`lib!symbol` or `lib`) instead of folded.

use crate::Clock;
use crate::cpu::{MAX_STACKS, Names, Stop, thread_cpu_clock, thread_cpu_ns};
use crate::frames::{self, Frame};
use crate::native::{self, Regs};
use crate::pauses::Pauses;
use crate::{Context, Recording, Started, write_atomically};
use corprof::sync::lock;
use corprof::threads::ThreadNames;
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, DWORD, ThreadID};
use corprof::{CorProfilerCallback, ProfilerInfo};
use corprof_record::profile::{Profile, Unit};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The signal is `SIGRTMIN + SIGNAL_OFFSET`. CoreCLR takes SIGRTMIN itself (activation
/// injection: `INJECT_ACTIVATION_SIGNAL`) and glibc the two below it; nothing in either runtime
/// catches SIGRTMIN+6 (40 on glibc), and the sampler refuses to start if something already does.
pub(crate) const SIGNAL_OFFSET: libc::c_int = 6;
/// The most threads sampled at once; a thread beyond it is not sampled (and counted).
const MAX_SLOTS: usize = 1024;
/// Samples a thread's ring holds between two drains: at 1 kHz, three times what a drain every
/// [`DRAIN_EVERY`] needs.
const RING: usize = 32;
/// Frames kept per sample (the innermost ones: the walk starts there).
const MAX_FRAMES: usize = 256;
/// How often the sampler thread empties the rings.
const DRAIN_EVERY: Duration = Duration::from_millis(10);
/// How often the sampler looks for threads that ended without a ThreadDestroyed yet.
const REAP_EVERY: Duration = Duration::from_secs(1);
/// How often the address cache starts over (code can be unloaded and its addresses reused).
const FORGET_ADDRESSES_EVERY: Duration = Duration::from_secs(1);
/// `--native`: how often the sampler thread reads the process's mappings again.
const REFRESH_MAPS_EVERY: Duration = Duration::from_secs(1);
/// How long stopping waits for a handler still running (it runs for microseconds).
const HANDLER_GRACE: Duration = Duration::from_secs(2);

/// One sample as the handler writes it.
#[derive(Clone, Copy)]
#[repr(C)]
struct Record {
    /// Frames in `ips`: the interrupted address, then the return addresses, innermost first.
    len: usize,
    /// The samples it stands for: 1, plus the timer's expiries missed while it was pending.
    weight: u32,
    /// Nanoseconds from the handler's start to its end.
    handler_ns: u64,
    ips: [usize; MAX_FRAMES],
}

impl Record {
    const EMPTY: Record = Record { len: 0, weight: 0, handler_ns: 0, ips: [0; MAX_FRAMES] };

    /// The record as the sampler thread keeps it: only the frames it has.
    fn sample(&self) -> Sample {
        Sample { weight: self.weight, handler_ns: self.handler_ns, ips: self.ips[..self.len.min(MAX_FRAMES)].to_vec() }
    }
}

/// A record copied out of a ring, without the unused part of its frames: a drain copies a few
/// words per sample instead of the whole record (2 KiB), which matters when hundreds of threads
/// are sampled and the sampler thread gets little of the CPU.
struct Sample {
    weight: u32,
    handler_ns: u64,
    ips: Vec<usize>,
}

/// One sampled thread's state, shared by its handler and the sampler thread.
struct Slot {
    /// Odd while a thread owns the slot; each owner has its own number, which its timer's signal
    /// carries, so a signal queued for an earlier owner is recognised and ignored.
    generation: AtomicU64,
    /// Set while a handler works in the slot (releasing the slot waits for it to clear).
    busy: AtomicBool,
    /// The owner's OS thread ID (checked against `gettid()` in the handler).
    tid: AtomicI32,
    /// The owner's stack: the lowest address and one past the highest; `stack_hi` 0 while they
    /// are not known (a thread found at an attach, until the sampler thread has placed the
    /// stack pointer of its first sample in the process's mappings).
    stack_lo: AtomicUsize,
    stack_hi: AtomicUsize,
    /// The interrupted RSP and the thread pointer (`pthread_self`) of the first sample taken
    /// while the bounds were unknown, for the sampler thread to find the stack by; 0 before.
    seen_sp: AtomicUsize,
    seen_tp: AtomicUsize,
    /// [`RING`] records, allocated outside any handler; null before the first owner.
    ring: AtomicPtr<Record>,
    /// `--native`: the unwinder's working memory, allocated with the ring; null without.
    unwinder: AtomicPtr<native::Context>,
    /// Records written (by the handler) and read (by the sampler thread), counted from 0.
    head: AtomicUsize,
    tail: AtomicUsize,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            generation: AtomicU64::new(0),
            busy: AtomicBool::new(false),
            tid: AtomicI32::new(0),
            stack_lo: AtomicUsize::new(0),
            stack_hi: AtomicUsize::new(0),
            seen_sp: AtomicUsize::new(0),
            seen_tp: AtomicUsize::new(0),
            ring: AtomicPtr::new(std::ptr::null_mut()),
            unwinder: AtomicPtr::new(std::ptr::null_mut()),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
        }
    }
}

/// The slots, static so the handler reaches them by index without a pointer that could dangle.
static SLOTS: [Slot; MAX_SLOTS] = [const { Slot::new() }; MAX_SLOTS];
/// Handlers running now, in any thread (stopping waits for none before the library may go).
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// How many on-stack-replacement return addresses the handler knows ([`OSR_RETURNS`]).
const MAX_OSR_RETURNS: usize = 64;
/// How far above an OSR frame the handler looks for its Tier0 frame's saved RBP, in words.
const OSR_SCAN_WORDS: usize = 1024;
/// Return addresses that are the pseudo returns of on-stack-replaced frames, learned by the
/// sampler thread (see [`Drainer::learn_osr`]): an x64 OSR method chains its frame to a *copy*
/// of its Tier0 frame's saved RBP, with the patchpoint's return into the Tier0 code above it, so
/// a plain RBP walk reads the loop twice and misses its caller. Written by the sampler thread
/// only (an entry, then the count, Release); read by the handler (the count, Acquire). Entries
/// stay: code of a non-collectible module is never freed.
static OSR_RETURNS: [AtomicUsize; MAX_OSR_RETURNS] = [const { AtomicUsize::new(0) }; MAX_OSR_RETURNS];
static OSR_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Whether `ret` is a learned OSR pseudo return. Loads only: callable from the handler.
fn is_osr_return(ret: usize) -> bool {
    let n = OSR_COUNT.load(Ordering::Acquire).min(MAX_OSR_RETURNS);
    OSR_RETURNS[..n].iter().any(|r| r.load(Ordering::Relaxed) == ret)
}

/// Adds `ret` to [`OSR_RETURNS`] (the sampler thread only; full: left out).
fn learn_osr_return(ret: usize) {
    if ret == 0 || is_osr_return(ret) {
        return;
    }
    let n = OSR_COUNT.load(Ordering::Relaxed);
    if n < MAX_OSR_RETURNS {
        OSR_RETURNS[n].store(ret, Ordering::Relaxed);
        OSR_COUNT.store(n + 1, Ordering::Release);
    }
}
/// Whether native frames are unwound by their call frame information (`--native`).
static NATIVE: AtomicBool = AtomicBool::new(false);
/// Samples dropped because their thread's ring was full.
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Whether a signal sampler runs in this process (there is one table).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The sampler's signal number.
pub(crate) fn signal() -> libc::c_int {
    libc::SIGRTMIN() + SIGNAL_OFFSET
}

/// The value a timer's signal carries: the slot and its owner's generation.
fn token(index: usize, generation: u64) -> usize {
    (generation as usize) << 16 | index
}

/// The signal handler. Async-signal-safe: atomics, `gettid`, `clock_gettime`, `pthread_self`
/// (glibc reads the thread pointer) and reads of the interrupted thread's own stack within its
/// bounds.
extern "C" fn on_signal(_signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    IN_HANDLER.fetch_add(1, Ordering::SeqCst);
    // SAFETY: `__errno_location` gives this thread's errno, valid for the thread's life; the
    // handler puts back what it found, so the interrupted code never sees it change.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: the kernel hands a SA_SIGINFO handler a valid siginfo and ucontext for this
    // delivery (null checked inside anyway).
    unsafe { sample(info, context) };
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    IN_HANDLER.fetch_sub(1, Ordering::SeqCst);
}

/// The handler's work: find the slot the signal names, check it is this thread's, record.
///
/// # Safety
/// `info` and `context` are what the kernel passed a SA_SIGINFO handler on this thread.
unsafe fn sample(info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    if info.is_null() || context.is_null() {
        return;
    }
    // SAFETY: `info` is the kernel's siginfo for this delivery.
    let info = unsafe { &*info };
    // Only the sampler's own timers: anything else sending this signal (kill, sigqueue) carries
    // a value the sampler did not make.
    if info.si_code != libc::SI_TIMER {
        return;
    }
    // SAFETY: a timer's siginfo carries its sigevent value and its overrun count.
    let (value, overrun) = unsafe { (info.si_value().sival_ptr as usize, info.si_overrun()) };
    let Some(slot) = SLOTS.get(value & 0xffff) else { return };
    if slot.busy.swap(true, Ordering::SeqCst) {
        return; // a stale signal of an earlier owner, racing the current one's
    }
    // SAFETY: gettid takes no arguments and cannot fail.
    let me = unsafe { libc::gettid() };
    if slot.generation.load(Ordering::SeqCst) == (value >> 16) as u64 && slot.tid.load(Ordering::SeqCst) == me {
        // SAFETY: the slot is this thread's (generation and thread checked), so its stack bounds
        // are this thread's stack; `context` is this delivery's ucontext.
        unsafe { record(slot, context.cast(), overrun) };
    }
    slot.busy.store(false, Ordering::SeqCst);
}

/// Monotonic nanoseconds (vDSO clock_gettime: async-signal-safe).
fn now_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Writes one sample of the interrupted thread into its slot's ring, or counts it dropped.
///
/// # Safety
/// Runs on the slot's own thread, in the handler, with `context` the ucontext of this delivery.
unsafe fn record(slot: &Slot, context: *const libc::ucontext_t, overrun: libc::c_int) {
    let started = now_ns();
    let head = slot.head.load(Ordering::Relaxed);
    let tail = slot.tail.load(Ordering::Acquire);
    let ring = slot.ring.load(Ordering::Acquire);
    if ring.is_null() || head.wrapping_sub(tail) >= RING {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: the kernel's ucontext for this delivery.
    let uc = unsafe { &*context };
    let regs = &uc.uc_mcontext.gregs;
    let (ip, sp, fp) = (
        regs[libc::REG_RIP as usize] as usize,
        regs[libc::REG_RSP as usize] as usize,
        regs[libc::REG_RBP as usize] as usize,
    );
    // SAFETY: `head - tail < RING`, so the record at `head % RING` is one the sampler thread
    // has read already (or never written) and will not read until `head` moves past it; the
    // ring holds RING records and lives until every handler has stopped.
    let out = unsafe { &mut *ring.add(head % RING) };
    // The kernel says whether the interrupted RSP is on the alternate signal stack (the runtime
    // runs its fault handler there): then only the address is kept, the stack being another.
    let on_alternate = uc.uc_stack.ss_flags & libc::SS_ONSTACK != 0;
    // `stack_hi` is stored after `stack_lo` (Release), so bounds seen here are whole.
    let hi = slot.stack_hi.load(Ordering::Acquire);
    let lo = slot.stack_lo.load(Ordering::Acquire);
    let len = if on_alternate {
        out.ips[0] = ip;
        1
    } else if hi == 0 {
        // Bounds not known yet: only the address, and where the stack is for the sampler thread
        // to look up. `pthread_self` reads the thread pointer (one load through %fs in glibc).
        if slot.seen_sp.load(Ordering::Relaxed) == 0 {
            // SAFETY: pthread_self takes no arguments and only reads the thread pointer.
            slot.seen_tp.store(unsafe { libc::pthread_self() } as usize, Ordering::Relaxed);
            slot.seen_sp.store(sp, Ordering::Release);
        }
        out.ips[0] = ip;
        1
    } else {
        // SeqCst, as the count's increment and the resolver's swap and count: of this load and
        // the resolver's look at the count after its swap, one sees the other (an acquire load
        // could still read a table the resolver then frees).
        let table = native::UNWIND.load(Ordering::SeqCst);
        let unwinder = slot.unwinder.load(Ordering::Acquire);
        if NATIVE.load(Ordering::Relaxed) && !table.is_null() && !unwinder.is_null() {
            // SAFETY: the table stays allocated while a handler runs (the resolver frees a
            // replaced one only once none does, IN_HANDLER counting this one since before the
            // load); the unwinder is the slot's, used by its owner's handler alone (`busy`).
            let (table, unwinder) = unsafe { (&*table, &mut *unwinder) };
            let cfi = |lookup: usize, regs: Regs, read: &dyn Fn(usize) -> Option<usize>| {
                native::step(table, unwinder, lookup, regs, read)
            };
            // SAFETY: [lo, hi) is this thread's own stack (taken on the thread itself), and the
            // thread is the one interrupted: its live part [sp, hi) is mapped while it runs.
            unsafe { walk(ip, sp, fp, (lo, hi), &mut out.ips, is_osr_return, cfi) }
        } else {
            // SAFETY: [lo, hi) is this thread's own stack (taken on the thread itself), and the
            // thread is the one interrupted: its live part [sp, hi) is mapped while it runs.
            unsafe { walk(ip, sp, fp, (lo, hi), &mut out.ips, is_osr_return, no_cfi) }
        }
    };
    out.len = len;
    out.weight = 1 + overrun.max(0) as u32;
    out.handler_ns = now_ns().saturating_sub(started);
    slot.head.store(head.wrapping_add(1), Ordering::Release);
}

/// Walks the RBP chain of a thread stopped at `ip` with `sp` and `fp`, into `out`: the address,
/// then each frame's return address, innermost first; gives how many it wrote. Reads only
/// aligned words in `[sp, hi)`, and only if `sp` lies in `[lo, hi)`; each frame must lie above
/// the one before, so a broken or looping chain ends the walk. At a return address `osr` says is
/// an OSR pseudo return, the frame's caller is read from its Tier0 frame instead: the first word
/// above it (within [`OSR_SCAN_WORDS`], below the next frame) holding the same saved RBP is that
/// frame's, and the word after it the real return.
///
/// `cfi` (`--native`) is asked first for each frame: given the frame's lookup address (its
/// address, or its return address less one, which lies in the call), its registers and a reader
/// of stack words (within `[frame's sp, hi)`, aligned), it gives the caller's registers by the
/// frame's call frame information, or `None` for the RBP step.
///
/// # Safety
/// If `sp` lies in `[lo, hi)`, every byte of `[sp, hi)` must be readable for the call.
unsafe fn walk(
    ip: usize,
    sp: usize,
    fp: usize,
    (lo, hi): (usize, usize),
    out: &mut [usize],
    osr: impl Fn(usize) -> bool,
    mut cfi: impl FnMut(usize, Regs, &dyn Fn(usize) -> Option<usize>) -> Option<Regs>,
) -> usize {
    let Some(first) = out.first_mut() else { return 0 };
    *first = ip;
    let mut len = 1;
    if !(lo <= sp && sp < hi && hi >= 16) {
        return len;
    }
    // The frame being unwound: its address, the lowest stack address it may own (the
    // interrupted RSP, then each caller's stack pointer) and its RBP.
    let mut regs = Regs { ip, sp, fp };
    while len < out.len() {
        let (floor, fp) = (regs.sp, regs.fp);
        let lookup = if len == 1 { regs.ip } else { regs.ip.wrapping_sub(1) };
        let read = |addr: usize| -> Option<usize> {
            if !(addr >= floor && addr <= hi - 8 && addr.is_multiple_of(8)) {
                return None;
            }
            // SAFETY: an aligned word within [floor, hi), a part of [sp, hi) (`floor` never falls
            // below the interrupted `sp`).
            Some(unsafe { std::ptr::read_volatile(addr as *const usize) })
        };
        if let Some(caller) = cfi(lookup, regs, &read) {
            // A caller lies above the frame and within the stack, or the walk ends.
            if caller.ip == 0 || caller.sp <= floor || caller.sp > hi {
                break;
            }
            out[len] = caller.ip;
            len += 1;
            regs = caller;
            continue;
        }
        if !(fp >= floor && fp <= hi - 16 && fp.is_multiple_of(8)) {
            break;
        }
        // SAFETY: `fp` and `fp + 8` are aligned words within [sp, hi), checked above.
        let (next, ret) =
            unsafe { (std::ptr::read_volatile(fp as *const usize), std::ptr::read_volatile((fp + 8) as *const usize)) };
        if ret == 0 {
            break;
        }
        let mut ret = ret;
        if next > fp && osr(ret) {
            let mut slot = fp + 16;
            let last = next.min(hi - 16);
            let mut words = 0;
            while slot < last && words < OSR_SCAN_WORDS {
                // SAFETY: `slot` is aligned (fp is, and it moves by words), above `fp` and at most
                // `hi - 16`, so it and the word after it lie within [sp, hi).
                if unsafe { std::ptr::read_volatile(slot as *const usize) } == next {
                    // SAFETY: as above, `slot + 8` lies within [sp, hi).
                    ret = unsafe { std::ptr::read_volatile((slot + 8) as *const usize) };
                    break;
                }
                slot += 8;
                words += 1;
            }
        }
        out[len] = ret;
        len += 1;
        if next <= fp {
            break;
        }
        regs = Regs { ip: ret, sp: fp + 16, fp: next };
    }
    len
}

/// No call frame information: the plain RBP walk.
fn no_cfi(_: usize, _: Regs, _: &dyn Fn(usize) -> Option<usize>) -> Option<Regs> {
    None
}

/// Installs the handler; refuses if anything else handles the signal already.
fn install() -> Result<(), String> {
    let sig = signal();
    // SAFETY: a zeroed sigaction is a valid out-parameter; sigaction only reads the signal's
    // current action into it.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `old` is a valid, writable sigaction; a null new action changes nothing.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
        return Err(format!("cannot read the action of signal {sig}: {}", std::io::Error::last_os_error()));
    }
    if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
        return Err(format!(
            "signal SIGRTMIN+{SIGNAL_OFFSET} ({sig}) has a handler already: the signal sampler cannot use it"
        ));
    }
    // SAFETY: as above, a zeroed sigaction filled in below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as *const () as usize;
    // SA_RESTART: a system call the signal interrupts is restarted where the kernel can; the
    // handler itself is short and chains to nothing.
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: `sa_mask` is a valid sigset_t in `action`.
    unsafe {
        // Other asynchronous signals (the runtime's activation signal among them) wait until the
        // handler returns; faults are left unblocked so they are never silently held.
        libc::sigfillset(&mut action.sa_mask);
        for fault in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGTRAP] {
            libc::sigdelset(&mut action.sa_mask, fault);
        }
    }
    // SAFETY: `action` is a complete sigaction whose handler is async-signal-safe.
    if unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) } != 0 {
        return Err(format!("cannot install the handler of signal {sig}: {}", std::io::Error::last_os_error()));
    }
    hold_off_alternate_stacks(sig);
    Ok(())
}

/// Adds `sig` to the mask of every handler that runs on the alternate signal stack
/// (`SA_ONSTACK`: CoreCLR's SIGSEGV handler, which makes NullReferenceException). That stack is
/// small (16 KiB in CoreCLR 8, a guard page included) and the runtime's handler uses most of
/// it; the kernel puts a signal that comes meanwhile on the same stack, and when the sampler's
/// frame (the registers and the vector state, over 3 KiB with AVX-512) no longer fits, it kills
/// the thread's handler with SIGSEGV and the app with it. Masked there, the sample waits until
/// the handler leaves the alternate stack (CoreCLR restores the interrupted code's mask once
/// it is back on the thread's own stack) or returns.
fn hold_off_alternate_stacks(sig: libc::c_int) {
    for other in 1..=libc::SIGRTMAX() {
        if other == sig || other == libc::SIGKILL || other == libc::SIGSTOP {
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action changes nothing.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: `action` is valid and writable; only the current action is read into it.
        if unsafe { libc::sigaction(other, std::ptr::null(), &mut action) } != 0 {
            continue;
        }
        let handled = action.sa_sigaction != libc::SIG_DFL && action.sa_sigaction != libc::SIG_IGN;
        // SAFETY: `sa_mask` is a valid sigset_t read back from the kernel.
        let masked = unsafe { libc::sigismember(&action.sa_mask, sig) } == 1;
        if handled && action.sa_flags & libc::SA_ONSTACK != 0 && !masked {
            // SAFETY: `action` is the signal's own action, complete, with one more signal
            // masked; its handler, flags and the rest are as the owner set them.
            unsafe {
                libc::sigaddset(&mut action.sa_mask, sig);
                libc::sigaction(other, &action, std::ptr::null_mut());
            }
        }
    }
}

/// Ignores the signal again (a pending one is discarded) and waits for running handlers to end,
/// so the library may be unloaded after.
fn uninstall() {
    // SAFETY: a zeroed sigaction with SIG_IGN is a complete action.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = libc::SIG_IGN;
    // SAFETY: `action` is complete; the old action is not asked for.
    unsafe { libc::sigaction(signal(), &action, std::ptr::null_mut()) };
    let deadline = Instant::now() + HANDLER_GRACE;
    while IN_HANDLER.load(Ordering::SeqCst) != 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
}

/// This thread's stack, `[lo, hi)`, from its own pthread attributes.
fn own_stack() -> Option<(usize, usize)> {
    // SAFETY: a zeroed pthread_attr_t is filled by pthread_getattr_np before any read, and
    // destroyed after; `pthread_self()` is the calling thread, alive for the call.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (rc == 0 && !addr.is_null() && size > 0).then(|| (addr as usize, addr as usize + size))
    }
}

/// The kernel's name of thread `tid` of this process (`/proc/self/task/<tid>/comm`), if the
/// thread was given one: a thread starts with its process's name (`/proc/self/comm`), which
/// CoreCLR 3.1 leaves to every thread (it names none), so that name says nothing.
fn os_thread_name(tid: i32) -> Option<Arc<str>> {
    let read = |path: &str| {
        let bytes = corprof_record::files::read_regular(Path::new(path), 64).ok()??;
        let name = String::from_utf8_lossy(&bytes).trim_end_matches('\n').to_string();
        (!name.is_empty()).then_some(name)
    };
    let name = read(&format!("/proc/self/task/{tid}/comm"))?;
    (Some(&name) != read("/proc/self/comm").as_ref()).then(|| Arc::from(name))
}

/// The most of `/proc/self/maps` read (a process has one line per mapping, under 200 bytes each).
const MAX_MAPS_BYTES: u64 = 64 << 20;

/// The stack bounds of a thread that was interrupted at `sp` with thread pointer `tp`, from
/// `maps` (the text of `/proc/self/maps`): the readable and writable mapping that holds `sp`,
/// up to `tp` if the mapping holds that too (glibc puts a thread's descriptor at the top of the
/// block its stack was made in, so the stack lies below it, all of it mapped while the thread
/// lives), or up to the mapping's end if it is the main thread's `[stack]`. `None` for anything
/// else: such a thread is sampled by its address only.
fn stack_bounds(maps: &str, sp: usize, tp: usize) -> Option<(usize, usize)> {
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
        let Some((start, end)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
            continue;
        };
        if !(start <= sp && sp < end) {
            continue;
        }
        if !perms.starts_with("rw") {
            return None;
        }
        let name = fields.nth(3).unwrap_or("");
        return if sp < tp && tp <= end {
            Some((start, tp))
        } else if name == "[stack]" {
            Some((start, end))
        } else {
            None
        };
    }
    None
}

/// A sampled thread, as the sampler thread knows it.
struct Owner {
    tid: i32,
    thread: Option<ThreadID>,
    /// The kernel timer (a `timer_t`), deleted when the thread is let go.
    timer: usize,
    /// ThreadDestroyed came: drained once more, then the slot is freed.
    retiring: bool,
    /// The thread's name when it was destroyed (its last samples are named after).
    last_name: Option<Arc<str>>,
    /// A thread found at an attach: the name the kernel has for it (`comm`, which .NET sets
    /// from `Thread.Name`, cut to 15 bytes), used while the runtime has named it to no callback.
    os_name: Option<Arc<str>>,
    /// A thread found at an attach: its stack was looked up (found or not).
    looked_up: bool,
    /// cpu clock: the thread's CPU time not counted from (0: from its start; the main thread,
    /// taken at Initialize, from then).
    cpu_from: u64,
    /// Samples drained so far (each standing for an interval of the thread's CPU time).
    counted: u64,
    /// Samples added at the thread's end for the CPU time no expiry stood for.
    extra: u64,
}

/// The sampled threads. The handler never touches it; callbacks and the sampler thread do,
/// under its mutex. Each change to it is whole before anything could panic, so a poisoned
/// registry is still good: it is taken with `corprof::sync::lock`.
struct Registry {
    clock: Clock,
    interval: Duration,
    owners: Vec<Option<Owner>>,
    by_tid: HashMap<i32, usize>,
    by_thread: HashMap<ThreadID, usize>,
    /// Threads not sampled: no stack bounds (not called on the thread), no slot or no timer.
    unsampled: u64,
    /// Threads sampled at some point.
    sampled: u64,
    stopped: bool,
    /// cpu clock: ended threads' CPU time not yet counted, in nanoseconds below one interval.
    carry_ns: u64,
}

/// Samples copied out of a ring: the thread and its records.
struct Drained {
    tid: i32,
    /// The thread's name when its records were copied.
    name: Option<Arc<str>>,
    records: Vec<Sample>,
}

impl Registry {
    /// Starts sampling OS thread `tid`, optionally known as `thread`: the calling thread itself
    /// (`found` false: its stack bounds are taken here, its CPU time counted from its start if
    /// the runtime named it), or a thread found running at an attach (`found` true: bounds from
    /// its first sample, see [`Slot::seen_sp`], its CPU time counted from now).
    fn add(&mut self, tid: i32, thread: Option<ThreadID>, found: bool) {
        if self.stopped {
            return;
        }
        if let Some(&index) = self.by_tid.get(&tid) {
            // The same thread named again (the main thread, taken at Initialize), or a new one
            // with an ended thread's number whose slot is not let go yet: that one is retired
            // and the new thread gets its own slot.
            let same = self.owners[index]
                .as_ref()
                .is_some_and(|o| !o.retiring && (o.thread.is_none() || thread.is_none() || o.thread == thread));
            if same {
                if let (Some(thread), Some(owner)) = (thread, self.owners[index].as_mut()) {
                    owner.thread = Some(thread);
                    self.by_thread.insert(thread, index);
                }
                return;
            }
            self.retire_slot(index);
        }
        let (lo, hi) = if found {
            (0, 0)
        } else {
            // SAFETY: gettid takes no arguments.
            let (Some(bounds), true) = (own_stack(), unsafe { libc::gettid() } == tid) else {
                self.unsampled += 1;
                return;
            };
            bounds
        };
        let Some(index) = self.owners.iter().position(Option::is_none) else {
            self.unsampled += 1;
            return;
        };
        let slot = &SLOTS[index];
        if slot.ring.load(Ordering::Acquire).is_null() {
            let ring: Box<[Record]> = vec![Record::EMPTY; RING].into_boxed_slice();
            slot.ring.store(Box::into_raw(ring).cast(), Ordering::Release);
        }
        if NATIVE.load(Ordering::Relaxed) && slot.unwinder.load(Ordering::Acquire).is_null() {
            slot.unwinder.store(Box::into_raw(native::Context::new()), Ordering::Release);
        }
        // The slot is free: no handler works in it (released with its busy flag clear).
        slot.head.store(0, Ordering::SeqCst);
        slot.tail.store(0, Ordering::SeqCst);
        slot.tid.store(tid, Ordering::SeqCst);
        slot.stack_lo.store(lo, Ordering::SeqCst);
        slot.stack_hi.store(hi, Ordering::SeqCst);
        slot.seen_sp.store(0, Ordering::SeqCst);
        slot.seen_tp.store(0, Ordering::SeqCst);
        let generation = (slot.generation.load(Ordering::SeqCst) + 1) | 1;
        slot.generation.store(generation, Ordering::SeqCst);
        let Some(timer) = self.timer(tid, token(index, generation & 0xffff_ffff_ffff)) else {
            release(slot);
            self.unsampled += 1;
            return;
        };
        // A thread announced by the runtime is counted from its start: the CPU time it used in
        // the runtime before its timer began is its own. The main thread, taken at Initialize,
        // and a thread found at an attach, from then (before it, the runtime started up, or
        // nobody recorded).
        let cpu_from = if thread.is_some() && !found { 0 } else { thread_cpu_ns(tid as u32).unwrap_or(0) };
        self.owners[index] = Some(Owner {
            tid,
            thread,
            timer,
            retiring: false,
            last_name: None,
            os_name: None,
            looked_up: false,
            cpu_from,
            counted: 0,
            extra: 0,
        });
        self.by_tid.insert(tid, index);
        if let Some(thread) = thread {
            self.by_thread.insert(thread, index);
        }
        self.sampled += 1;
    }

    /// A timer sending the signal, carrying `value`, to thread `tid` every interval of its clock.
    fn timer(&self, tid: i32, value: usize) -> Option<usize> {
        let clock = match self.clock {
            Clock::Cpu => thread_cpu_clock(tid as u32)?,
            Clock::Wall => libc::CLOCK_MONOTONIC,
        };
        // SAFETY: a zeroed sigevent is valid; the fields that matter are set below.
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signal();
        event.sigev_notify_thread_id = tid;
        event.sigev_value = libc::sigval { sival_ptr: value as *mut libc::c_void };
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `event` and `timer` are valid; the kernel checks the clock and the thread
        // (which must be of this process).
        if unsafe { libc::timer_create(clock, &mut event, &mut timer) } != 0 {
            return None;
        }
        let timespec = |d: Duration| libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        };
        // On the monotonic clock the first expiry comes at a random point of the first interval,
        // as a tick shared by all threads would: a thread that lives less than an interval is
        // then sampled with the chance its lifetime gives, where a first expiry one whole interval
        // after its start would never see it. (On the CPU clock, a thread's unseen time is
        // counted at its end instead; see `retire`.)
        let first = match self.clock {
            Clock::Wall => first_expiry(self.interval, value as u64 ^ now_ns()),
            Clock::Cpu => self.interval,
        };
        let spec = libc::itimerspec { it_interval: timespec(self.interval), it_value: timespec(first) };
        // SAFETY: `timer` was just made; `spec` is a valid itimerspec.
        if unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) } != 0 {
            // SAFETY: `timer` was just made and is deleted once.
            unsafe { libc::timer_delete(timer) };
            return None;
        }
        Some(timer as usize)
    }

    /// ThreadDestroyed: stops `thread`'s timer; its slot is freed after a last drain, its
    /// samples named `name`. Called on the thread itself (as the runtime does for a thread that
    /// ends), with the cpu clock, the CPU time of the thread that no timer expiry stood for is
    /// counted: a thread that ran less than an interval, or ended between two expiries, would
    /// otherwise leave its time unseen (the kernel checks CPU timers at its scheduler tick, so a
    /// short thread may never see its timer fire at all).
    fn retire(&mut self, thread: ThreadID, name: Option<Arc<str>>) {
        let Some(index) = self.by_thread.remove(&thread) else { return };
        self.retire_slot(index);
        let interval = self.interval.as_nanos().max(1) as u64;
        let cpu = self.clock == Clock::Cpu;
        let Some(owner) = self.owners[index].as_mut() else { return };
        owner.last_name = name;
        // SAFETY: gettid takes no arguments.
        if !cpu || unsafe { libc::gettid() } != owner.tid {
            return;
        }
        // The timer is deleted and any signal it had pending was delivered as the deletion
        // returned (on this thread): the ring does not move now, and the drainer waits for the
        // registry's lock, held here.
        let slot = &SLOTS[index];
        let (ring, head, tail) =
            (slot.ring.load(Ordering::Acquire), slot.head.load(Ordering::Acquire), slot.tail.load(Ordering::Acquire));
        let mut pending = 0u64;
        let mut at = tail;
        while at != head && !ring.is_null() {
            // SAFETY: records in [tail, head) are complete and nothing writes them now (above).
            pending += u64::from(unsafe { (*ring.add(at % RING)).weight });
            at = at.wrapping_add(1);
        }
        let Some(now) = thread_cpu_ns(owner.tid as u32) else { return };
        let counted_ns = (owner.counted + pending).saturating_mul(interval);
        let unseen = now.saturating_sub(owner.cpu_from).saturating_sub(counted_ns);
        // Carried from thread to thread, so the time of many short threads adds up to whole
        // samples instead of each one's part being rounded away.
        let carry = self.carry_ns + unseen;
        owner.extra = carry / interval;
        self.carry_ns = carry % interval;
    }

    fn retire_slot(&mut self, index: usize) {
        if let Some(owner) = self.owners[index].as_mut()
            && !owner.retiring
        {
            owner.retiring = true;
            // SAFETY: the timer was made by `timer` and is deleted once (retiring is set).
            unsafe { libc::timer_delete(owner.timer as libc::timer_t) };
        }
    }

    /// Copies every ring's new records out with their thread's name, and frees the slots of
    /// retired threads. The name is taken here, under the registry's lock: ThreadDestroyed
    /// retires the thread under the same lock before the thread table forgets it, so a thread
    /// not retired yet is still in `names`, and a retired one has its name kept. (Looked up after
    /// the lock, a thread destroyed meanwhile lost its name, and all its samples went under
    /// `[thread <number>]`.)
    fn drain(&mut self, names: &ThreadNames) -> Vec<Drained> {
        let mut drained = Vec::new();
        for (index, slot) in SLOTS.iter().enumerate().take(self.owners.len()) {
            let Some(owner) = &self.owners[index] else { continue };
            if owner.retiring {
                // No handler works in the slot from here on; what it wrote is read below.
                release(slot);
            }
            let mut records = take(slot);
            if let Some(owner) = self.owners[index].as_mut() {
                owner.counted += records.iter().map(|r| u64::from(r.weight)).sum::<u64>();
            }
            let Some(owner) = &self.owners[index] else { continue };
            if owner.retiring && owner.extra > 0 {
                // The thread's last samples stand for its uncounted time too: its last stack is
                // the best guess of where that time went (none: the thread alone).
                match records.last_mut() {
                    Some(last) => last.weight += owner.extra as u32,
                    None => records.push(last_record(slot, owner.extra as u32).sample()),
                }
            }
            if !records.is_empty() {
                let name = owner
                    .last_name
                    .clone()
                    .or_else(|| owner.thread.and_then(|thread| names.name(thread)))
                    .or_else(|| owner.os_name.clone());
                drained.push(Drained { tid: owner.tid, name, records });
            }
            if owner.retiring {
                // Only if they still name this slot: a new thread may have the ended one's
                // number, or its ThreadID (the runtime reuses both), and a slot of its own.
                if self.by_tid.get(&owner.tid) == Some(&index) {
                    self.by_tid.remove(&owner.tid);
                }
                if let Some(thread) = owner.thread
                    && self.by_thread.get(&thread) == Some(&index)
                {
                    self.by_thread.remove(&thread);
                }
                self.owners[index] = None;
            }
        }
        drained
    }

    /// Threads found at an attach whose first sample has said where their stack is: each
    /// one's slot, owner's generation, and the RSP and thread pointer of that sample.
    fn unbounded(&self) -> Vec<(usize, u64, usize, usize)> {
        (0..self.owners.len())
            .filter(|&index| self.owners[index].as_ref().is_some_and(|o| !o.retiring && !o.looked_up))
            .filter_map(|index| {
                let slot = &SLOTS[index];
                let sp = slot.seen_sp.load(Ordering::Acquire);
                (slot.stack_hi.load(Ordering::Acquire) == 0 && sp != 0)
                    .then(|| (index, slot.generation.load(Ordering::SeqCst), sp, slot.seen_tp.load(Ordering::Relaxed)))
            })
            .collect()
    }

    /// Gives the slot's thread its stack bounds (`None`: none found, it stays sampled by its
    /// address), if the slot still has the owner they were looked up for.
    fn bound(&mut self, index: usize, generation: u64, bounds: Option<(usize, usize)>) {
        let slot = &SLOTS[index];
        let Some(owner) = self.owners[index].as_mut().filter(|o| !o.retiring) else { return };
        if slot.generation.load(Ordering::SeqCst) != generation {
            return;
        }
        owner.looked_up = true;
        if let Some((lo, hi)) = bounds {
            slot.stack_lo.store(lo, Ordering::Release);
            slot.stack_hi.store(hi, Ordering::Release);
        }
    }

    /// Starts sampling the threads found running at an attach, each named as the kernel has it.
    fn add_found(&mut self, found: &[(ThreadID, i32)]) {
        for &(thread, tid) in found {
            self.add(tid, Some(thread), true);
            if let Some(owner) = self.by_tid.get(&tid).and_then(|&index| self.owners[index].as_mut())
                && owner.os_name.is_none()
            {
                owner.os_name = os_thread_name(tid);
            }
        }
    }

    /// Retires the threads that have ended (no ThreadDestroyed needed).
    fn reap(&mut self) {
        let gone: Vec<usize> = self
            .owners
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.as_ref().filter(|o| !o.retiring).map(|o| (i, o.tid)))
            .filter(|(_, tid)| !Path::new(&format!("/proc/self/task/{tid}")).exists())
            .map(|(i, _)| i)
            .collect();
        for index in gone {
            self.retire_slot(index);
        }
    }

    /// Stops every timer (no new sample is made after).
    fn stop(&mut self) {
        self.stopped = true;
        for index in 0..self.owners.len() {
            self.retire_slot(index);
        }
    }
}

/// Ends the slot's current ownership: a handler that enters after sees another generation and
/// leaves; one already inside is waited for.
fn release(slot: &Slot) {
    let generation = slot.generation.load(Ordering::SeqCst);
    if generation % 2 == 1 {
        slot.generation.store(generation + 1, Ordering::SeqCst);
    }
    let deadline = Instant::now() + HANDLER_GRACE;
    while slot.busy.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::yield_now();
    }
}

/// A point in `(0, interval]` drawn from `seed` (splitmix64's finalizer spreads any seed over the
/// range; the monotonic clock's nanoseconds make it differ from thread to thread).
fn first_expiry(interval: Duration, seed: u64) -> Duration {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let ns = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX).max(1);
    Duration::from_nanos(1 + z % ns)
}

/// A copy of the last record the slot's thread wrote (or one of no frame), weighing `weight`.
fn last_record(slot: &Slot, weight: u32) -> Record {
    let ring = slot.ring.load(Ordering::Acquire);
    let head = slot.head.load(Ordering::Acquire);
    let mut record = if head == 0 || ring.is_null() {
        Record::EMPTY
    } else {
        // SAFETY: the record before `head` is complete, and the slot's thread has ended its
        // sampling (retiring): nothing writes it.
        unsafe { *ring.add(head.wrapping_sub(1) % RING) }
    };
    record.weight = weight;
    record.handler_ns = 0;
    record
}

/// The records written since the last take.
fn take(slot: &Slot) -> Vec<Sample> {
    let ring = slot.ring.load(Ordering::Acquire);
    let head = slot.head.load(Ordering::Acquire);
    let mut tail = slot.tail.load(Ordering::Relaxed);
    let mut out = Vec::with_capacity(head.wrapping_sub(tail));
    while tail != head && !ring.is_null() {
        // SAFETY: records in [tail, head) are complete (head was stored with Release after the
        // write) and the handler does not write them again until tail moves past.
        out.push(unsafe { &*ring.add(tail % RING) }.sample());
        tail = tail.wrapping_add(1);
    }
    slot.tail.store(tail, Ordering::Release);
    out
}

/// Starts the signal sampler: the handler, the calling thread if it is the app's main thread,
/// and the sampler thread.
pub(crate) fn start(ctx: &Context<'_>) -> Result<Started, String> {
    if ACTIVE.swap(true, Ordering::SeqCst) {
        return Err("a signal sampler runs in this process already".to_string());
    }
    // Before the handler: slots made from here on get their unwinder's memory, and the
    // libraries loaded now are read before the first sample (a sampler thread busy reading them
    // would leave the rings to fill).
    NATIVE.store(ctx.settings.native(), Ordering::SeqCst);
    let resolver = ctx.settings.native().then(|| {
        let mut resolver = native::Resolver::new();
        resolver.refresh(|| IN_HANDLER.load(Ordering::SeqCst) == 0);
        resolver
    });
    // Unpublishes and frees the unwind tables of a start that fails (no handler runs then).
    let drop_tables = |resolver: Option<native::Resolver>| {
        if let Some(mut resolver) = resolver {
            resolver.stop(IN_HANDLER.load(Ordering::SeqCst) == 0);
        }
    };
    if let Err(e) = install() {
        drop_tables(resolver);
        ACTIVE.store(false, Ordering::SeqCst);
        return Err(e);
    }
    let registry = Arc::new(Mutex::new(Registry {
        clock: ctx.settings.clock,
        interval: Duration::from_millis(ctx.settings.interval_ms),
        owners: (0..MAX_SLOTS).map(|_| None).collect(),
        by_tid: HashMap::new(),
        by_thread: HashMap::new(),
        unsampled: 0,
        sampled: 0,
        stopped: false,
        carry_ns: 0,
    }));
    // At launch the runtime initializes the profiler on the app's main thread, whose managed
    // thread may have been announced before: it is taken here, on itself.
    // SAFETY: gettid and getpid take no arguments.
    if unsafe { libc::gettid() == libc::getpid() } {
        lock(&registry).add(std::process::id() as i32, None, false);
    }
    let stop = Arc::new(Stop::default());
    let find = Arc::new(AtomicBool::new(false));
    let drainer = Drainer {
        info: ctx.info.clone(),
        threads: Arc::clone(&ctx.threads),
        registry: Arc::clone(&registry),
        stop: Arc::clone(&stop),
        find: Arc::clone(&find),
        resolver,
    };
    let thread = std::thread::Builder::new()
        .name("corprof-signal-sampler".to_string())
        .spawn(move || drainer.run())
        .map_err(|e| format!("cannot start the sampler thread: {e}"));
    let thread = match thread {
        Ok(thread) => thread,
        Err(e) => {
            lock(&registry).stop();
            uninstall();
            // The resolver went with the thread's closure; its last table is left allocated.
            native::UNWIND.store(std::ptr::null_mut(), Ordering::SeqCst);
            ACTIVE.store(false, Ordering::SeqCst);
            return Err(e);
        }
    };
    Ok(Started {
        recording: Box::new(SignalCpu {
            threads: Arc::clone(&ctx.threads),
            registry,
            stop,
            clock: ctx.settings.clock,
            thread: Mutex::new(Some(thread)),
            attached: ctx.attached,
            find,
        }),
        // ExceptionThrown: see `exception_thrown`.
        events: COR_PRF_MONITOR::EXCEPTIONS,
        events_high: COR_PRF_HIGH_MONITOR(0),
    })
}

/// The running signal sampler.
struct SignalCpu {
    threads: Arc<ThreadNames>,
    registry: Arc<Mutex<Registry>>,
    stop: Arc<Stop>,
    clock: Clock,
    thread: Mutex<Option<JoinHandle<(Profile, Pauses)>>>,
    /// Attached: the threads running before are found once the event mask is taken.
    attached: bool,
    /// Set for the sampler thread to find the running threads ([`Drainer::find_running`]).
    find: Arc<AtomicBool>,
}

impl SignalCpu {
    /// Stops the timers and the handler, then the sampler thread (which drains the rest), and
    /// takes what it recorded (`None` if it stopped already or panicked).
    fn stop(&self) -> Option<(Profile, Pauses)> {
        let thread = self.thread.lock().ok()?.take()?;
        lock(&self.registry).stop();
        uninstall();
        self.stop.raise();
        let result = thread.join().ok();
        ACTIVE.store(false, Ordering::SeqCst);
        result
    }
}

impl CorProfilerCallback for SignalCpu {
    fn thread_assigned_to_os_thread(&self, thread: ThreadID, os_thread: DWORD) -> corprof::Result<()> {
        #[allow(clippy::unnecessary_cast)]
        lock(&self.registry).add(os_thread as i32, Some(thread), false);
        Ok(())
    }

    /// The runtime's SIGSEGV handler masks the sampling signal (see
    /// [`hold_off_alternate_stacks`]), and for a NullReferenceException it does not return: it
    /// leaves the alternate stack and throws, unmasking only its own activation signal. The
    /// exception reaches this callback on the same thread, on its own stack: the sampling signal
    /// is unmasked here, or the thread would not be sampled again.
    fn exception_thrown(&self, _thrown: corprof::LiveObject<'_>) -> corprof::Result<()> {
        // SAFETY: a zeroed sigset_t is filled by sigemptyset before use; pthread_sigmask changes
        // only this thread's mask, and only to let the sampler's signal through.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal());
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
        Ok(())
    }

    fn thread_destroyed(&self, thread: ThreadID) -> corprof::Result<()> {
        // Called before the thread table forgets the thread.
        lock(&self.registry).retire(thread, self.threads.name(thread));
        Ok(())
    }
}

impl Recording for SignalCpu {
    /// Attached, the threads that were running before are found now: from here on the runtime
    /// announces every new thread (ThreadAssignedToOSThread), so none falls between the two.
    fn after_mask(&self) -> Result<(), String> {
        if self.attached {
            self.find.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    fn finish(&self, out: &Path) -> std::io::Result<()> {
        let (profile, pauses) = self.stop().ok_or_else(|| std::io::Error::other("the sampler thread failed"))?;
        let (sampled, unsampled) = {
            let registry = lock(&self.registry);
            (registry.sampled, registry.unsampled)
        };
        let clock = match self.clock {
            Clock::Cpu => "its CPU-time clock",
            Clock::Wall => "the monotonic clock",
        };
        let line = format!(
            "cpu: {} samples by the signal sampler (SIGRTMIN+{SIGNAL_OFFSET}, a timer on {clock} per thread); the \
             sampled thread paused per sample (signal handler) {}; no other thread stopped; {} threads sampled, {} \
             not sampled, {} samples dropped (ring full)\n",
            pauses.count(),
            pauses.quantiles(),
            sampled,
            unsampled,
            DROPPED.load(Ordering::Relaxed),
        );
        let mut stats = out.as_os_str().to_owned();
        stats.push(corprof_record::settings::STATS_SUFFIX);
        // Before the profile, whose appearance tells the command the recording is complete.
        write_atomically(Path::new(&stats), line.as_bytes())?;
        write_atomically(out, profile.to_text().as_bytes())
    }
}

impl Drop for SignalCpu {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The sampler thread: drains the rings and builds the profile.
struct Drainer {
    info: ProfilerInfo,
    threads: Arc<ThreadNames>,
    registry: Arc<Mutex<Registry>>,
    stop: Arc<Stop>,
    /// Set after an attach's event mask: find the threads that were running (once).
    find: Arc<AtomicBool>,
    /// `--native`: names native frames by their libraries and keeps the handler's unwind
    /// table; `None`: runs of native frames fold into `[native]`.
    resolver: Option<native::Resolver>,
}

impl Drainer {
    /// The managed threads running now, each with its OS thread, read under a short suspension
    /// of the runtime (the only time a listed thread is sure to live while the runtime is asked
    /// about it), and given their timers after it.
    fn find_running(&self) {
        let found: Vec<(ThreadID, i32)> = match self.info.suspend_runtime() {
            Ok(suspension) => match suspension.threads() {
                Ok(threads) => threads
                    .filter_map(|thread| Some((thread.id(), suspension.os_thread_id(thread).ok()? as i32)))
                    .collect(),
                Err(_) => Vec::new(),
            },
            Err(_) => Vec::new(),
        };
        lock(&self.registry).add_found(&found);
    }

    /// Gives the threads found at an attach their stack bounds, once their first sample has said
    /// where the stack is (see [`stack_bounds`]).
    fn bound_found(&self) {
        let unbounded = lock(&self.registry).unbounded();
        if unbounded.is_empty() {
            return;
        }
        let Ok(Some(maps)) = corprof_record::files::read_regular(Path::new("/proc/self/maps"), MAX_MAPS_BYTES) else {
            return;
        };
        let maps = String::from_utf8_lossy(&maps);
        let mut registry = lock(&self.registry);
        for (index, generation, sp, tp) in unbounded {
            registry.bound(index, generation, stack_bounds(&maps, sp, tp));
        }
    }

    fn run(mut self) -> (Profile, Pauses) {
        let mut thread_ready = false;
        let mut profile = Profile::new(Unit::Samples);
        let mut pauses = Pauses::default();
        let mut names = Names::new(&self.info);
        let mut functions: HashMap<usize, Frame> = HashMap::new();
        let mut forgot = Instant::now();
        let mut reaped = Instant::now();
        // `--native`: the libraries' names and unwind tables, and the names given to addresses.
        let mut resolver = self.resolver.take();
        let mut native_names: HashMap<usize, String> = HashMap::new();
        // The resolver comes with the mappings read once (`start`).
        let mut refreshed = Instant::now();
        let idle = || IN_HANDLER.load(Ordering::SeqCst) == 0;
        loop {
            let stopped = self.stop.wait_until(Instant::now() + DRAIN_EVERY);
            if !thread_ready {
                thread_ready = self.info.initialize_current_thread().is_ok();
            }
            if thread_ready && self.find.swap(false, Ordering::SeqCst) {
                self.find_running();
            }
            self.bound_found();
            if reaped.elapsed() >= REAP_EVERY {
                lock(&self.registry).reap();
                reaped = Instant::now();
            }
            // Copied under the lock, resolved after it: the runtime is never called with it held.
            let drained = lock(&self.registry).drain(&self.threads);
            if forgot.elapsed() >= FORGET_ADDRESSES_EVERY {
                functions.clear();
                native_names.clear();
                forgot = Instant::now();
            }
            // The mappings read again now and then (libraries loaded since), and at once when a
            // sample holds an address in none of them (below).
            let mut fresh = false;
            if let Some(resolver) = resolver.as_mut()
                && refreshed.elapsed() >= REFRESH_MAPS_EVERY
            {
                resolver.refresh(idle);
                refreshed = Instant::now();
                fresh = true;
            }
            for batch in drained {
                let root = match &batch.name {
                    Some(name) => format!("[thread {name}]"),
                    None => format!("[thread {}]", batch.tid),
                };
                // Samples of the same frames are resolved once: a thread in a loop gives the
                // same few stacks again and again.
                let mut weights: HashMap<&[usize], u64> = HashMap::new();
                for record in &batch.records {
                    // A record of a thread's uncounted time at its end was made by no handler.
                    if record.handler_ns > 0 {
                        pauses.add(Duration::from_micros(record.handler_ns.div_ceil(1000)));
                    }
                    *weights.entry(&record.ips).or_default() += u64::from(record.weight);
                }
                for (ips, weight) in weights {
                    let mut stack: Vec<Frame> = Vec::with_capacity(ips.len());
                    // `--native`: every frame named, innermost first.
                    let mut named: Vec<String> = Vec::new();
                    let mut before: Option<(usize, Frame)> = None;
                    for (i, &ip) in ips.iter().enumerate() {
                        // A return address is the instruction after the call: look up the call.
                        let at = if i == 0 { ip } else { ip.wrapping_sub(1) };
                        let frame = *functions.entry(at).or_insert_with(|| self.function(at));
                        if let (Some((inner, Some(f))), Some(g)) = (before, frame)
                            && f == g
                        {
                            self.learn_osr(f, inner, at, ip);
                        }
                        before = Some((at, frame));
                        match (resolver.as_mut(), frame) {
                            (None, _) => frames::push(&mut stack, frame),
                            (Some(_), Some(function)) => named.push(names.name(function)),
                            (Some(resolver), None) => {
                                let name = native_names.entry(at).or_insert_with(|| {
                                    let mut native = resolver.name(at);
                                    if native == native::Native::Other("[unknown]") && !fresh {
                                        // A library loaded since the last look: look again,
                                        // once per drain.
                                        resolver.refresh(idle);
                                        refreshed = Instant::now();
                                        fresh = true;
                                        native = resolver.name(at);
                                    }
                                    native.frame()
                                });
                                named.push(name.clone());
                            }
                        }
                    }
                    let path: Vec<String> = if resolver.is_some() {
                        std::iter::once(root.clone()).chain(named.into_iter().rev()).collect()
                    } else {
                        std::iter::once(root.clone()).chain(frames::folded(&stack, |f| names.name(f))).collect()
                    };
                    let path = if profile.stacks.len() >= MAX_STACKS && !profile.stacks.contains_key(&path) {
                        vec![root.clone(), "[truncated]".to_string()]
                    } else {
                        path
                    };
                    profile.add(&path, weight, 0);
                    crate::progress::add_samples(weight);
                }
            }
            if stopped {
                // One last drain after the stop, for what the handlers wrote before it.
                if self.stop.is_raised() && lock(&self.registry).owners.iter().all(Option::is_none) {
                    break;
                }
            }
        }
        if let Some(resolver) = resolver.as_mut() {
            // The handler is uninstalled by now (stopping does that first); a table is freed
            // only if no handler still runs.
            resolver.stop(idle());
        }
        (profile, pauses)
    }

    /// The managed function at `ip`, `None` for native code (or code the runtime does not name).
    /// Two frames of `function` one above the other (`inner` below `outer`, code addresses):
    /// recursion if both lie in one native code version, else on-stack replacement (an OSR
    /// version's frame over its Tier0 version's, CoreCLR 7 and later), and then `ret`, the
    /// outer frame's return address, is the OSR frame's pseudo return, which the handler learns.
    fn learn_osr(&self, function: corprof::types::FunctionID, inner: usize, outer: usize, ret: usize) {
        if is_osr_return(ret) {
            return;
        }
        // SAFETY: the runtime only looks the address up in its code ranges.
        let Ok(found) = (unsafe { self.info.get_function_from_ip2(outer as *const corprof::types::BYTE) }) else {
            return;
        };
        let Ok(starts) = self.info.get_native_code_start_addresses(function, found.rejit_id) else { return };
        let version = |at: usize| {
            starts.iter().position(|&start| {
                self.info.get_code_info4(start).is_ok_and(|ranges| {
                    ranges.iter().any(|r| (r.startAddress..r.startAddress.saturating_add(r.size)).contains(&at))
                })
            })
        };
        if let (Some(a), Some(b)) = (version(inner), version(outer))
            && a != b
        {
            learn_osr_return(ret);
        }
    }

    fn function(&self, ip: usize) -> Frame {
        // SAFETY: the runtime only looks the address up in its code ranges; it does not read
        // memory at it.
        unsafe { self.info.get_function_from_ip(ip as *const corprof::types::BYTE) }.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake stack of 64 words; `frame(i, next, ret)` writes a frame record at word `i`.
    struct Stack([usize; 64]);

    impl Stack {
        fn at(&self, i: usize) -> usize {
            &self.0[i] as *const usize as usize
        }
        fn frame(&mut self, i: usize, next: usize, ret: usize) {
            self.0[i] = next;
            self.0[i + 1] = ret;
        }
        fn walk(&self, sp_word: usize, fp: usize, bounds: (usize, usize)) -> Vec<usize> {
            self.walk_osr(sp_word, fp, bounds, &[])
        }
        fn walk_osr(&self, sp_word: usize, fp: usize, bounds: (usize, usize), osr: &[usize]) -> Vec<usize> {
            let mut out = [0usize; 8];
            // SAFETY: every bound the tests give lies within this stack's 64 words.
            let len = unsafe { walk(0x1000, self.at(sp_word), fp, bounds, &mut out, |r| osr.contains(&r), no_cfi) };
            out[..len].to_vec()
        }
        fn bounds(&self) -> (usize, usize) {
            (self.at(0), self.at(63) + 8)
        }
    }

    #[test]
    fn a_chain_is_walked_innermost_first_to_its_end() {
        let mut s = Stack([0; 64]);
        s.frame(10, s.at(20), 0xa);
        s.frame(20, s.at(30), 0xb);
        s.frame(30, 0, 0xc); // the outermost frame: its next is null
        assert_eq!(s.walk(4, s.at(10), s.bounds()), [0x1000, 0xa, 0xb, 0xc]);
    }

    #[test]
    fn a_broken_chain_ends_the_walk_instead_of_reading_outside_the_stack() {
        let mut s = Stack([0; 64]);
        let b = s.bounds();
        // Pointing below the interrupted RSP, beyond the stack's top, unaligned, or back down:
        // each ends the walk with what came before.
        s.frame(10, s.at(2), 0xa);
        assert_eq!(s.walk(4, s.at(10), b), [0x1000, 0xa], "down the stack");
        s.frame(10, usize::MAX - 7, 0xa);
        assert_eq!(s.walk(4, s.at(10), b), [0x1000, 0xa], "far beyond the top");
        assert_eq!(s.walk(4, s.at(62) + 8, b), [0x1000], "a record that would cross the top");
        assert_eq!(s.walk(4, s.at(10) + 3, b), [0x1000], "unaligned");
        s.frame(10, s.at(10), 0xa);
        assert_eq!(s.walk(4, s.at(10), b), [0x1000, 0xa], "a frame pointing at itself");
        assert_eq!(s.walk(4, s.at(3), b), [0x1000], "a frame pointer below RSP");
        assert_eq!(s.walk(4, 0, b), [0x1000], "null");
    }

    #[test]
    fn an_osr_frame_is_walked_through_its_tier0_frame() {
        let mut s = Stack([0; 64]);
        // A helper's frame (word 4) over an OSR frame (10), whose saved RBP is a copy of its
        // Tier0 frame's (20: Main's frame, 30) and whose return is the patchpoint's (0xbad); the
        // Tier0 frame's own saved RBP and Main's return (0xc) at 20; Main's frame at 30.
        s.frame(4, s.at(10), 0xa);
        s.frame(10, s.at(30), 0xbad);
        s.0[14] = 0x77; // a Tier0 local
        s.frame(20, s.at(30), 0xc);
        s.frame(30, s.at(40), 0xd);
        let b = s.bounds();
        assert_eq!(s.walk(4, s.at(4), b), [0x1000, 0xa, 0xbad, 0xd], "not known as OSR: the plain chain");
        assert_eq!(s.walk_osr(4, s.at(4), b, &[0xbad]), [0x1000, 0xa, 0xc, 0xd], "through the Tier0 frame");
        // No saved RBP to find below the next frame: the pseudo return is kept.
        s.frame(20, 0x1234, 0xc);
        assert_eq!(s.walk_osr(4, s.at(4), b, &[0xbad]), [0x1000, 0xa, 0xbad, 0xd]);
        // The search stops below the next frame: its own word (here pointing at itself, which
        // also ends the walk there) is not taken for the Tier0 frame's.
        s.0[30] = s.at(30);
        assert_eq!(s.walk_osr(4, s.at(4), b, &[0xbad]), [0x1000, 0xa, 0xbad, 0xd]);
    }

    #[test]
    fn frames_with_call_frame_information_are_unwound_by_it_the_others_by_rbp() {
        let mut s = Stack([0; 64]);
        // A frameless leaf at 0x1000 (its return address 0xe at word 6, RBP untouched), called by
        // a frameless function at 0xe (return 0xf at word 8), called by a chain of RBP frames at
        // words 10 and 20.
        s.0[6] = 0xe;
        s.0[8] = 0xf;
        s.frame(10, s.at(20), 0xa);
        s.frame(20, 0, 0xb);
        let b = s.bounds();
        let (at6, at8) = (s.at(6), s.at(8));
        let cfi = |lookup: usize, regs: Regs, read: &dyn Fn(usize) -> Option<usize>| match lookup {
            0x1000 => Some(Regs { ip: read(at6)?, sp: at6 + 8, fp: regs.fp }),
            0xd => Some(Regs { ip: read(at8)?, sp: at8 + 8, fp: regs.fp }),
            _ => None,
        };
        let mut out = [0usize; 8];
        // SAFETY: the bounds lie within the fake stack.
        let len = unsafe { walk(0x1000, s.at(4), s.at(10), b, &mut out, |_| false, cfi) };
        assert_eq!(out[..len], [0x1000, 0xe, 0xf, 0xa, 0xb]);
        // Without it, the two frameless frames are lost.
        // SAFETY: as above.
        let len = unsafe { walk(0x1000, s.at(4), s.at(10), b, &mut out, |_| false, no_cfi) };
        assert_eq!(out[..len], [0x1000, 0xa, 0xb]);
        // A caller below the frame, or reads outside the stack, end the walk or fall back to RBP.
        let down =
            |_: usize, regs: Regs, _: &dyn Fn(usize) -> Option<usize>| Some(Regs { ip: 0xe, sp: regs.sp, fp: 0 });
        // SAFETY: as above.
        let len = unsafe { walk(0x1000, s.at(4), s.at(10), b, &mut out, |_| false, down) };
        assert_eq!(out[..len], [0x1000]);
        let outside = |_: usize, _: Regs, read: &dyn Fn(usize) -> Option<usize>| {
            assert_eq!(read(s.at(2)), None, "below the frame");
            assert_eq!(read(b.1), None, "above the stack");
            assert_eq!(read(s.at(6) + 1), None, "unaligned");
            None
        };
        // SAFETY: as above.
        let len = unsafe { walk(0x1000, s.at(4), s.at(10), b, &mut out, |_| false, outside) };
        assert_eq!(out[..len], [0x1000, 0xa, 0xb]);
    }

    #[test]
    fn an_rsp_off_the_stack_walks_nothing() {
        let mut s = Stack([0; 64]);
        s.frame(10, 0, 0xa);
        let (lo, hi) = s.bounds();
        // The thread runs on another stack (an alternate signal stack): no word is read.
        assert_eq!(s.walk(4, s.at(10), (lo + 8 * 8, hi)), [0x1000]);
        assert_eq!(s.walk(4, s.at(10), (lo, lo + 8 * 4)), [0x1000]);
        assert_eq!(s.walk(4, s.at(10), (0, 0)), [0x1000]);
    }

    #[test]
    fn the_walk_stops_at_the_records_size() {
        let mut s = Stack([0; 64]);
        for i in 0..10 {
            s.frame(10 + 4 * i, s.at(14 + 4 * i), 0x10 + i);
        }
        assert_eq!(s.walk(4, s.at(10), s.bounds()).len(), 8);
    }

    #[test]
    fn a_found_threads_stack_is_the_mapping_of_its_sp_up_to_its_thread_pointer() {
        let maps = "\
55d0a0000000-55d0a0021000 r-xp 00000000 08:01 1234 /usr/bin/dotnet
7f0000000000-7f0000001000 ---p 00000000 00:00 0
7f0000001000-7f0000801000 rw-p 00000000 00:00 0
7f0000801000-7f0000802000 r--p 00000000 00:00 0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
";
        // A thread's stack: from the mapping's start up to its descriptor (the thread pointer).
        assert_eq!(stack_bounds(maps, 0x7f00_0070_0000, 0x7f00_0080_0000), Some((0x7f00_0000_1000, 0x7f00_0080_0000)));
        // The main thread, whose thread pointer lies elsewhere: the whole [stack] mapping.
        assert_eq!(stack_bounds(maps, 0x7ffd_0002_0000, 0x7f00_0080_0000), Some((0x7ffd_0000_0000, 0x7ffd_0002_1000)));
        // A thread pointer outside the mapping of the SP, an SP in no mapping, in one that cannot
        // be read and written, or at the thread pointer itself: no bounds.
        assert_eq!(stack_bounds(maps, 0x7f00_0070_0000, 0x7f00_0090_0000), None);
        assert_eq!(stack_bounds(maps, 0x7f00_0090_0000, 0x7f00_0095_0000), None);
        assert_eq!(stack_bounds(maps, 0x55d0_a000_1000, 0x55d0_a000_2000), None);
        assert_eq!(stack_bounds(maps, 0x7f00_0080_0000, 0x7f00_0080_0000), None);
        assert_eq!(stack_bounds("", 1, 2), None);
        assert_eq!(stack_bounds("garbage\nzz-yy rw-p\n", 1, 2), None);
    }

    #[test]
    fn a_first_expiry_lies_in_the_first_interval_and_spreads_over_it() {
        let interval = Duration::from_millis(1);
        let firsts: Vec<Duration> = (0..1000u64).map(|seed| first_expiry(interval, seed)).collect();
        assert!(firsts.iter().all(|f| *f > Duration::ZERO && *f <= interval));
        // A tenth of the interval each: every part of it is drawn about equally often.
        let mut tenths = [0u32; 10];
        for f in &firsts {
            tenths[((f.as_nanos() - 1) * 10 / interval.as_nanos()) as usize] += 1;
        }
        assert!(tenths.iter().all(|&n| (50..=150).contains(&n)), "{tenths:?}");
        assert_eq!(first_expiry(Duration::from_nanos(1), 12345), Duration::from_nanos(1));
    }

    #[test]
    fn a_token_names_its_slot_and_generation() {
        assert_eq!(token(5, 3) & 0xffff, 5);
        assert_eq!(token(5, 3) >> 16, 3);
        assert_eq!(token(MAX_SLOTS - 1, 1 << 40) >> 16, 1 << 40);
    }
}
