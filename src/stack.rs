//! Stack walks with a closure: [`ProfilerInfo::do_stack_snapshot_with`] (the current thread, safe)
//! and [`ProfilerInfo::do_stack_snapshot_of`] (any thread, `unsafe`), over
//! [`ICorProfilerInfo2::DoStackSnapshot`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo2-dostacksnapshot-method).
//!
//! The generated [`ProfilerInfo::do_stack_snapshot`] stays what the header declares: an `unsafe`
//! call taking a `StackSnapshotCallback` function pointer and a `void *` for it. These two methods
//! put a trampoline of their own in that slot and hand each frame to a closure instead, so the
//! names say "the same call, with a closure" (`_with`) and "the same call, of another thread"
//! (`_of`).
//!
//! # What the runtime allows (CoreCLR on Linux)
//!
//! - The event mask must include `COR_PRF_ENABLE_STACK_SNAPSHOT`, else the walk fails with
//!   `CORPROF_E_INCONSISTENT_WITH_FLAGS`.
//! - **The current thread** can be walked from inside any callback. From a thread the runtime does
//!   not manage (one the profiler created) the walk succeeds with no frame.
//! - **Another thread** can be walked on Linux only while the profiler itself has suspended the
//!   runtime (`ICorProfilerInfo10::SuspendRuntime`, [`ProfilerInfo::suspend_runtime`], whose
//!   guard walks the threads it lists safely: [`Suspension::walk`](crate::Suspension::walk)):
//!   the Unix runtime cannot suspend a single thread safely, so outside such a suspension it
//!   refuses with `E_NOTIMPL` (`proftoeeinterfaceimpl.cpp`, `DoStackSnapshot`, built without
//!   `PLATFORM_SUPPORTS_SAFE_THREADSUSPEND`). A suspension the runtime started for a GC does not
//!   count. Windows suspends the target thread for the walk instead.
//! - Before the runtime has started, while the target is in a region where walking could
//!   deadlock, or for a walk started inside the closure of another walk of the same thread, it
//!   refuses with `CORPROF_E_STACKSNAPSHOT_UNSAFE`.
//! - A seed context (the raw method's `context` argument) is not offered here: the runtime reads a
//!   whole `CONTEXT` from it whatever size it is given. On Linux it could only matter for the
//!   current thread in cooperative mode: the runtime drops the seed for a thread in preemptive
//!   mode (a callback that may block, a thread stopped by a suspension), and refuses a cross-thread
//!   walk of a thread in cooperative mode with `E_NOTIMPL`. The raw method remains for it.
//!
//! Every refusal is an `Err` with the runtime's code; none of them touches the closure.

use crate::types::{BYTE, COR_PRF_FRAME_INFO, COR_PRF_SNAPSHOT_INFO, FunctionID, HRESULT, ThreadID, UINT_PTR, ULONG32};
use crate::{HResult, ProfilerInfo, Result};
use std::any::Any;
use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

/// Whether the runtime passes each frame's register context
/// (`COR_PRF_SNAPSHOT_REGISTER_CONTEXT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FrameContext {
    /// No register context: [`Frame::context`] is `None` (the cheaper walk).
    #[default]
    Without,
    /// Each managed frame comes with the runtime's `CONTEXT` for it, as bytes.
    With,
}

/// One frame of a stack walk, valid for the duration of the closure's call.
///
/// A run of native frames (the runtime's own code, the JIT, interop) is reported as one frame
/// without a function ID.
#[derive(Debug)]
pub struct Frame<'walk> {
    function_id: FunctionID,
    ip: UINT_PTR,
    frame_info: COR_PRF_FRAME_INFO,
    context: Option<&'walk [u8]>,
}

impl<'walk> Frame<'walk> {
    /// The managed function of this frame, or `None` for a run of native frames (the runtime
    /// reports those with FunctionID 0).
    pub fn function_id(&self) -> Option<FunctionID> {
        (!self.function_id.is_null()).then_some(self.function_id)
    }

    /// The instruction pointer in this frame: where it will resume (the return address) for every
    /// frame but the innermost one.
    pub fn ip(&self) -> UINT_PTR {
        self.ip
    }

    /// [`ProfilerInfo::get_function_info2`] for this frame's function, with the frame's own
    /// frame-info handle: a shared generic method's exact type arguments. The handle itself is
    /// not handed out: the runtime frees it when the walk's callback returns, and reads it.
    pub fn function_info(&self, info: &ProfilerInfo) -> Result<crate::info::FunctionInfo2> {
        let function = self.function_id().ok_or(HResult::E_INVALIDARG)?;
        info.get_function_info2(function, self.frame_info)
    }

    /// The register context of this frame when the walk asked for [`FrameContext::With`], else
    /// `None`: the runtime's `CONTEXT` (the Windows x64 layout its PAL defines, `Rip` at offset
    /// 0xF8) as bytes, 1232 of them on CoreCLR 3.1 and 3104 on 8.0, whose `CONTEXT` carries the
    /// extended register state. A run of native frames gets one too (the registers where the
    /// runtime found the run).
    pub fn context(&self) -> Option<&'walk [u8]> {
        self.context
    }
}

/// What the trampoline shares with the walking call: the closure, whether it asked to stop, and
/// a panic it raised.
struct Walk<'f> {
    visit: &'f mut dyn FnMut(&Frame<'_>) -> ControlFlow<()>,
    stopped: bool,
    panic: Option<Box<dyn Any + Send>>,
}

/// The `StackSnapshotCallback` the runtime calls once per frame, before `DoStackSnapshot`
/// returns, on the walking thread. `S_OK` continues the walk; any other value ends it and makes
/// `DoStackSnapshot` return `CORPROF_E_STACKSNAPSHOT_ABORTED`.
///
/// # Safety
/// `client_data` is the `Walk` that `snapshot` passed, alive and not otherwise borrowed for the
/// call; `context` is null or points to `context_size` readable bytes for the call.
unsafe extern "C" fn trampoline(
    function_id: FunctionID,
    ip: UINT_PTR,
    frame_info: COR_PRF_FRAME_INFO,
    context_size: ULONG32,
    context: *mut BYTE,
    client_data: *mut std::ffi::c_void,
) -> HRESULT {
    // SAFETY: `snapshot` passes a `&mut Walk` as the client data and holds no other borrow of it
    // while `DoStackSnapshot` runs; the runtime calls this function one frame at a time on the
    // walking thread, so this is the only reference.
    let walk = unsafe { &mut *client_data.cast::<Walk<'_>>() };
    if walk.panic.is_some() || walk.stopped {
        // Not reached (the walk ends at the first E_FAIL), kept so a runtime that calls again
        // never reruns a closure that has panicked or asked to stop.
        return HResult::E_FAIL.0;
    }
    let context = if context.is_null() || context_size == 0 {
        None
    } else {
        // SAFETY: the runtime passes its CONTEXT for this frame: `context_size` bytes it owns
        // until this callback returns; `Frame<'_>` is only lent to the closure for this call.
        Some(unsafe { std::slice::from_raw_parts(context.cast_const(), context_size as usize) })
    };
    let frame = Frame { function_id, ip, frame_info, context };
    // A frame's function is on the walked stack: alive, and lent to the closure for this frame.
    // SAFETY: the runtime hands `function_id` to this frame callback, which runs until `_lent`
    // drops.
    let _lent = unsafe { crate::unloads::lend_ids(&[(function_id.as_raw(), crate::unloads::Kind::Function)], false) };
    // The closure's panic must not unwind into the runtime's stack walker: catch it here, end the
    // walk, and let `snapshot` raise it again once the runtime has returned.
    match catch_unwind(AssertUnwindSafe(|| (walk.visit)(&frame))) {
        Ok(ControlFlow::Continue(())) => HResult::S_OK.0,
        Ok(ControlFlow::Break(())) => {
            walk.stopped = true;
            HResult::E_FAIL.0
        }
        Err(payload) => {
            walk.panic = Some(payload);
            HResult::E_FAIL.0
        }
    }
}

impl ProfilerInfo {
    /// Walks the current thread's stack, innermost frame first, calling `visit` for each managed
    /// frame and each run of native frames; `visit` returns [`ControlFlow::Break`] to stop early.
    ///
    /// The safe face of [`do_stack_snapshot`](ProfilerInfo::do_stack_snapshot) for the one case
    /// every platform allows: the current thread, from inside a callback (the module docs,
    /// [`crate::stack`], list what the runtime refuses and why).
    ///
    /// Returns `Ok(())` when the walk ran to the end or `visit` stopped it (the runtime's
    /// `CORPROF_E_STACKSNAPSHOT_ABORTED` then means "as asked"), and the runtime's code when it
    /// refused the walk (`CORPROF_E_INCONSISTENT_WITH_FLAGS` without
    /// `COR_PRF_ENABLE_STACK_SNAPSHOT` in the event mask, `CORPROF_E_STACKSNAPSHOT_UNSAFE`, …).
    ///
    /// # Panics
    /// A panic in `visit` is caught before it reaches the runtime, ends the walk, and is raised
    /// again from this call once the runtime has returned (as `std::thread::scope` does), so it
    /// unwinds through Rust frames only. Inside a callback, corprof's guard then logs it and
    /// answers `E_FAIL`, like any panic of that callback.
    pub fn do_stack_snapshot_with<F>(&self, context: FrameContext, mut visit: F) -> Result<()>
    where
        F: FnMut(&Frame<'_>) -> ControlFlow<()>,
    {
        // SAFETY: the null ThreadID asks for the current thread, which is alive for the call.
        unsafe { self.snapshot(ThreadID::NULL, context, &mut visit) }
    }

    /// [`do_stack_snapshot_with`](ProfilerInfo::do_stack_snapshot_with) for the stack of
    /// `thread`, which may be another thread (`visit` runs on the calling thread).
    ///
    /// On Linux the runtime walks another thread only while the profiler has suspended the runtime
    /// with [`suspend_runtime`](ProfilerInfo::suspend_runtime); otherwise it returns
    /// `Err(E_NOTIMPL)` without looking at that thread's stack.
    ///
    /// # Safety
    /// `thread` must be a managed thread that stays alive for the whole call: the runtime
    /// dereferences the ID before any check, so a thread that has been destroyed (after its
    /// `ThreadDestroyed` callback has returned) is a use after free. Hold `ThreadDestroyed` for a
    /// thread until its walks are over, or walk it through a [`Suspension`](crate::Suspension),
    /// which needs no `unsafe`.
    pub unsafe fn do_stack_snapshot_of<F>(&self, thread: ThreadID, context: FrameContext, mut visit: F) -> Result<()>
    where
        F: FnMut(&Frame<'_>) -> ControlFlow<()>,
    {
        // SAFETY: the caller vouches that `thread` stays alive for the call.
        unsafe { self.snapshot(thread, context, &mut visit) }
    }

    /// The walk behind both methods and [`Suspension::walk`](crate::Suspension::walk).
    ///
    /// # Safety
    /// `thread` is null (the current thread) or a thread alive for the call.
    pub(crate) unsafe fn snapshot(
        &self,
        thread: ThreadID,
        context: FrameContext,
        visit: &mut dyn FnMut(&Frame<'_>) -> ControlFlow<()>,
    ) -> Result<()> {
        let flags = match context {
            FrameContext::Without => COR_PRF_SNAPSHOT_INFO::COR_PRF_SNAPSHOT_DEFAULT,
            FrameContext::With => COR_PRF_SNAPSHOT_INFO::COR_PRF_SNAPSHOT_REGISTER_CONTEXT,
        };
        let mut walk = Walk { visit, stopped: false, panic: None };
        // SAFETY: `trampoline` is a `StackSnapshotCallback` that never unwinds (it catches the
        // closure's panics) and reads its client data as the `Walk` passed here, which outlives
        // the call (the runtime calls back only before `DoStackSnapshot` returns); no seed
        // context is passed; `thread` is null or alive, as this function's caller vouches.
        let result = unsafe { self.do_stack_snapshot(thread, Some(trampoline), flags, (&raw mut walk).cast(), None) };
        if let Some(payload) = walk.panic {
            resume_unwind(payload);
        }
        match result {
            Err(HResult::CORPROF_E_STACKSNAPSHOT_ABORTED) if walk.stopped => Ok(()),
            other => other,
        }
    }
}
