//! The runtime suspension as a guard: [`ProfilerInfo::suspend_runtime`] takes
//! [`ICorProfilerInfo10::SuspendRuntime`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo10-suspendruntime-method)
//! and gives a [`Suspension`], whose drop calls `ResumeRuntime`, during unwinding too. While it
//! is held, [`Suspension::threads`] lists the managed threads as [`SuspendedThread`] handles that
//! cannot outlive it, and [`Suspension::walk`] walks any of their stacks with a closure, so a
//! sampler needs no `unsafe`.
//!
//! ```no_run
//! use corprof::{FrameContext, ProfilerInfo, Result};
//! use std::ops::ControlFlow;
//!
//! /// How many frames each managed thread has right now (call it from a thread of your own).
//! fn sample(info: &ProfilerInfo) -> Result<Vec<usize>> {
//!     let suspension = info.suspend_runtime()?;
//!     let mut depths = Vec::new();
//!     for thread in suspension.threads()? {
//!         let mut depth = 0;
//!         suspension.walk(thread, FrameContext::Without, |_| {
//!             depth += 1;
//!             ControlFlow::Continue(())
//!         })?; // an early return resumes the runtime too
//!         depths.push(depth);
//!     }
//!     Ok(depths)
//! } // the runtime resumes here
//! ```
//!
//! # What the runtime does, and why this is sound (CoreCLR, `src/coreclr/vm`)
//!
//! - `SuspendRuntime` runs `ThreadSuspend::SuspendEE(SUSPEND_FOR_PROFILER)`, which takes the
//!   thread store lock and keeps it "until we restart the EE" (`threadsuspend.cpp`, `SuspendEE`);
//!   `ResumeRuntime` runs `ThreadSuspend::RestartEE`, which releases it (`UnlockThreadStore`). The
//!   lock belongs to the thread that took it, so `ResumeRuntime` must come from the thread that
//!   suspended: [`Suspension`] is neither `Send` nor `Sync`.
//! - A managed thread's `Thread` object (its ThreadID) is freed under the thread store lock: a
//!   dying thread's `Thread::OnThreadTerminate` takes the lock after its `ThreadDestroyed`
//!   callback and only then drops the last reference, whose `Thread::~Thread` takes it out of the
//!   store (`ThreadStore::RemoveThread`) and frees it (`threads.cpp`). So no thread the store
//!   holds can be freed while a [`Suspension`] is alive (a dying thread waits for the lock), and
//!   every ID `EnumThreads` gives under it stays valid until it drops. `EnumThreads`
//!   knows the lock is already held by a profiler suspension and lists the store's live threads
//!   without taking it again (`profilingenumerators.cpp`, `ProfilerThreadEnum::Init`).
//! - On Linux, `DoStackSnapshot` walks a thread other than the caller's only while the profiler
//!   holds such a suspension (`proftoeeinterfaceimpl.cpp`, `DoStackSnapshot`:
//!   `fProfilerRequestedRuntimeSuspend`); the threads are then stopped at safe places.
//!
//! What no guard can catch: a [`Suspension`] passed to `std::mem::forget` never resumes the
//! runtime, and the app then waits forever (safe Rust may leak; nothing is freed or corrupted).
//! The same for a call that makes the runtime suspend itself again, made on the suspending thread
//! while the guard is held: `force_gc` there never returns (CoreCLR 8.0.4), like locking a
//! `Mutex` twice on one thread.

use crate::interfaces::ICorProfilerInfo10;
use crate::stack::{Frame, FrameContext};
use crate::types::{AppDomainID, ThreadID};
use crate::{HResult, ProfilerInfo, Result, info::ProfilerThreadEnum};
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a [`Suspension`] of this library is alive, in any thread. The runtime does not refuse a
/// second `SuspendRuntime` while one is in progress: from the same thread it succeeds (tested on
/// CoreCLR 8.0.4: the inner ResumeRuntime then resumes the runtime and clears its flag, the outer
/// one fails with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`, and the app hangs); from another thread
/// the two race on the runtime's one flag. So a second guard is refused here, before the runtime
/// is asked.
static HELD: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Whether this thread holds the [`Suspension`]: the one thread on which a call that makes
    /// the runtime suspend itself would wait for itself forever.
    static HELD_HERE: Cell<bool> = const { Cell::new(false) };
}

/// Refuses, with `CORPROF_E_SUSPENSION_IN_PROGRESS`, a call for which the runtime suspends itself
/// (`force_gc`, `request_rejit`, `request_revert`, …: annotation `wrapper: { suspends: true }`)
/// when made on the thread that holds a [`Suspension`]: the runtime would wait on that thread
/// for the suspension to end, and it never would. On other threads such a call just waits until
/// the runtime resumes. The generated wrappers call it first.
#[inline]
pub fn refuse_on_suspending_thread() -> Result<()> {
    if HELD_HERE.with(Cell::get) { Err(HResult::CORPROF_E_SUSPENSION_IN_PROGRESS) } else { Ok(()) }
}

/// Runs `call`, for which the runtime suspends itself on this thread (ICorProfilerInfo15's heap
/// walk on its own), as a [`Suspension`] would hold it: refused with
/// `CORPROF_E_SUSPENSION_IN_PROGRESS` while a [`Suspension`] is alive (the runtime keeps one flag
/// for a profiler's suspension), and with calls that make the runtime suspend itself refused on
/// this thread until `call` returns or unwinds.
#[cfg_attr(not(corprof_iface = "ICorProfilerInfo15"), allow(dead_code))]
pub(crate) fn while_runtime_suspends_here<R>(call: impl FnOnce() -> Result<R>) -> Result<R> {
    /// Clears the flags on every way out of `call`, a panic raised again included.
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            HELD_HERE.with(|here| here.set(false));
            HELD.store(false, Ordering::Release);
        }
    }
    crate::context::refuse_in_hook()?;
    if HELD.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        return Err(HResult::CORPROF_E_SUSPENSION_IN_PROGRESS);
    }
    HELD_HERE.with(|here| here.set(true));
    let _release = Release;
    call()
}

/// The runtime, suspended by this profiler; dropping it resumes the runtime
/// (`ICorProfilerInfo10::ResumeRuntime`), on every path out of the scope that holds it: a return,
/// a `?`, a panic unwinding through it.
///
/// Neither `Send` nor `Sync`: the runtime must be resumed by the thread that suspended it, and
/// only that thread may use the thread handles ([`SuspendedThread`]) that borrow it.
#[must_use = "dropping the Suspension resumes the runtime at once"]
#[derive(Debug)]
pub struct Suspension<'info> {
    info: &'info ProfilerInfo,
    /// A raw pointer's auto traits: the guard stays on the suspending thread.
    _on_this_thread: PhantomData<*mut ()>,
}

impl ProfilerInfo {
    /// Suspends the runtime (`ICorProfilerInfo10::SuspendRuntime`, CoreCLR 3.0+) and returns the
    /// guard that resumes it when dropped. All managed threads are stopped at safe places until
    /// then; call it from a thread of your own, not from a callback the app's threads wait on.
    ///
    /// `Err(CORPROF_E_SUSPENSION_IN_PROGRESS)` while another [`Suspension`] is alive, in any
    /// thread (the runtime itself would accept it and then hang, see `HELD` in the source). Other
    /// errors are the runtime's: `E_NOINTERFACE` before CoreCLR 3.0 (no `ICorProfilerInfo10`),
    /// `CORPROF_E_RUNTIME_UNINITIALIZED` before the runtime has started.
    pub fn suspend_runtime(&self) -> Result<Suspension<'_>> {
        // Held through the raw call: the runtime's object cannot be let go under it (info_gate).
        let _entered = self.negotiated().enter()?;
        // A GC-triggering call, as `refuse_in: [hook]` methods are (`crate::context`).
        crate::context::refuse_in_hook()?;
        let raw = self.get::<ICorProfilerInfo10>()?;
        if HELD.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return Err(HResult::CORPROF_E_SUSPENSION_IN_PROGRESS);
        }
        // SAFETY: SuspendRuntime takes no arguments; no other suspension of this library is held
        // (`HELD`); the suspension it starts is ended by the guard returned below (its drop calls
        // ResumeRuntime on this thread, the guard being neither Send nor Sync), and by nothing
        // else in the safe API.
        if let Err(e) = HResult(unsafe { raw.SuspendRuntime() }).ok() {
            HELD.store(false, Ordering::Release);
            return Err(e);
        }
        HELD_HERE.with(|here| here.set(true));
        Ok(Suspension { info: self, _on_this_thread: PhantomData })
    }
}

impl<'info> Suspension<'info> {
    /// The profiler info this suspension came from.
    pub fn info(&self) -> &'info ProfilerInfo {
        self.info
    }

    /// Resumes the runtime now and returns what `ResumeRuntime` answered (dropping the guard does
    /// the same and ignores the answer).
    pub fn resume(self) -> Result<()> {
        let this = ManuallyDrop::new(self);
        this.resume_runtime()
    }

    /// The call behind [`resume`](Suspension::resume) and the drop.
    fn resume_runtime(&self) -> Result<()> {
        let resume = || {
            // Held through the raw call: the runtime's object cannot be let go under it (info_gate).
            let _entered = self.info.negotiated().enter()?;
            let raw = self.info.get::<ICorProfilerInfo10>()?;
            // SAFETY: this guard holds the suspension its SuspendRuntime started, on this thread
            // (the guard cannot leave it), and resumes it once: `resume` consumes the guard
            // without running its drop, the drop runs at most once.
            HResult(unsafe { raw.ResumeRuntime() }).ok()
        };
        let resumed = resume();
        HELD_HERE.with(|here| here.set(false));
        HELD.store(false, Ordering::Release);
        resumed
    }

    /// The managed threads (`ICorProfilerInfo4::EnumThreads`): each live thread the runtime
    /// knows, the suspending thread too if it is one, as handles for [`walk`](Suspension::walk)
    /// that cannot outlive this suspension.
    pub fn threads(&self) -> Result<SuspendedThreads<'_>> {
        Ok(SuspendedThreads { threads: self.info.enum_threads()?, guard: self })
    }

    /// Walks `thread`'s stack, innermost frame first, calling `visit` for each managed frame and
    /// each run of native frames (the thread is stopped, so the stack holds still); `visit`
    /// returns [`ControlFlow::Break`] to stop early. See
    /// [`ProfilerInfo::do_stack_snapshot_with`] for the frames, the results and what the runtime
    /// refuses; `E_INVALIDARG` if `thread` came from another suspension. Under a suspension the
    /// runtime still refuses some threads for their state: on Linux, a thread other than the
    /// caller stopped in cooperative mode (in managed code) with `E_NOTIMPL`, as the Unix runtime
    /// does not read another thread's register context (`DoStackSnapshot`); others with
    /// `E_FAIL` or `CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX` (seen by the sampler in
    /// `tests/runtime/stack.rs`, a few threads in each round).
    ///
    /// # Panics
    /// A panic in `visit` ends the walk and is raised again from this call once the runtime has
    /// returned; unwinding on through the scope that holds this guard resumes the runtime.
    pub fn walk<F>(&self, thread: SuspendedThread<'_>, context: FrameContext, mut visit: F) -> Result<()>
    where
        F: FnMut(&Frame<'_>) -> ControlFlow<()>,
    {
        let id = self.alive(thread)?;
        // SAFETY: `id` is alive for the call (`alive`).
        unsafe { self.info.snapshot(id, context, &mut visit) }
    }

    /// The operating system's ID of `thread` (`ICorProfilerInfo::GetThreadInfo`: its Win32
    /// thread ID, which the runtime's PAL provides on Linux); `E_INVALIDARG` if `thread` came
    /// from another suspension.
    pub fn os_thread_id(&self, thread: SuspendedThread<'_>) -> Result<u32> {
        let id = self.alive(thread)?;
        // SAFETY: `id` is alive for the call (`alive`).
        unsafe { self.info.get_thread_info(id) }
    }

    /// The app domain `thread` is running in (`ICorProfilerInfo2::GetThreadAppDomain`);
    /// `E_INVALIDARG` if `thread` came from another suspension.
    pub fn app_domain(&self, thread: SuspendedThread<'_>) -> Result<AppDomainID> {
        let id = self.alive(thread)?;
        // SAFETY: `id` is alive for the call (`alive`).
        unsafe { self.info.get_thread_app_domain(id) }
    }

    /// `thread`'s ID, which the runtime cannot free while `self` is held, or `E_INVALIDARG` for a
    /// handle another guard listed.
    fn alive(&self, thread: SuspendedThread<'_>) -> Result<ThreadID> {
        // `thread` was listed by EnumThreads while a guard held the suspension, and that guard is
        // still alive (the handle borrows it). If it is this one, the thread cannot be freed
        // until `self` drops: the suspension holds the thread store lock, and a Thread is freed
        // only under that lock (`Thread::OnThreadTerminate`, see the module docs). Only one
        // guard exists at a time (`HELD`), but the check keeps that argument local.
        if std::ptr::eq(thread.guard, (self as *const Self).cast()) {
            Ok(thread.id)
        } else {
            Err(HResult::E_INVALIDARG)
        }
    }
}

impl Drop for Suspension<'_> {
    fn drop(&mut self) {
        // Nothing to do with a failure here: the runtime answers CORPROF_E_UNSUPPORTED_CALL_SEQUENCE
        // only when no profiler suspension is in progress, which this guard's existence excludes.
        let _ = self.resume_runtime();
    }
}

/// A managed thread listed under a [`Suspension`]: its ID, valid (the thread cannot be freed) for
/// as long as the handle can exist, the suspension's borrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuspendedThread<'s> {
    id: ThreadID,
    /// The guard that listed it, to refuse a handle from another one.
    guard: *const (),
    _guard: PhantomData<&'s ()>,
}

impl SuspendedThread<'_> {
    /// The thread's ID (as `ThreadCreated` and `get_current_thread_id` give it).
    pub fn id(&self) -> ThreadID {
        self.id
    }
}

/// The managed threads of a [`Suspension`] ([`Suspension::threads`]).
#[derive(Debug)]
pub struct SuspendedThreads<'s> {
    threads: ProfilerThreadEnum,
    guard: &'s Suspension<'s>,
}

impl<'s> Iterator for SuspendedThreads<'s> {
    type Item = SuspendedThread<'s>;

    fn next(&mut self) -> Option<SuspendedThread<'s>> {
        let id = self.threads.next()?;
        Some(SuspendedThread { id, guard: (self.guard as *const Suspension<'_>).cast(), _guard: PhantomData })
    }
}
