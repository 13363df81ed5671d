//! The calling contexts in which the runtime takes a call without refusing it and then crashes,
//! and the guards the generated wrappers run first (annotation `wrapper: { refuse_in: [...] }`,
//! each wrapper's rustdoc says which).
//!
//! - **Inside a fast-mode hook** ([`HookMode::Fast`](crate::HookMode::Fast)): the JIT-compiled
//!   method calls the hook in its prolog or epilog, in cooperative mode, with no frame pushed
//!   and no profiler callback state set. CoreCLR refuses its SYNC methods there (they expect the
//!   callback state), but not the ASYNC ones that may trigger a GC (`kP2EETriggers` in
//!   `proftoeeinterfaceimpl.cpp`: `ForceGC`, the EventPipe session calls, …): `force_gc` from a
//!   fast enter hook answered `Ok` once, and the app crashed at the next (CoreCLR 8.0.4 and
//!   3.1.23). Such calls are refused with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`, the code the
//!   runtime gives them where it checks (inside a callback). The fast stubs mark the hook on the
//!   thread for its duration: one thread-local access per hooked call (BENCHMARKS.md §6).
//!   With-info hooks run under the runtime's own frame and callback state, where the runtime
//!   itself answers.
//! - **On a thread the runtime does not know**: a thread the profiler started has no `Thread`
//!   object until something makes one, and `ICorProfilerInfo4::InitializeCurrentThread` does not
//!   (it sets up TLS only: `SetupTLSForThread`). The runtime lets SYNC calls through on such a
//!   thread ("if there's no EE Thread, the SYNC call is allowed"), and the ones that load types
//!   (`GetClassFromToken`, `GetClassFromTokenAndTypeArgs`, `GetFunctionFromTokenAndTypeArgs`:
//!   `ClassLoader`, which uses the current Thread) crashed there. They are refused with
//!   `CORPROF_E_NOT_MANAGED_THREAD`, after asking the runtime (`GetCurrentThreadID`); a thread
//!   found known is remembered, so the question costs one call per thread. Calls the runtime
//!   makes valid on such a thread itself (`force_gc` and `request_rejit` create the Thread
//!   object) are left alone.

use crate::{HRESULT, HResult, Result};
use std::cell::Cell;

/// Refuses, with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`, a call that may trigger a GC when made
/// inside a fast-mode hook on this thread (annotation `refuse_in: [hook]`). The generated
/// wrappers call it first. Elsewhere it lets the call through and marks the objects lent to the
/// callbacks running on this thread as possibly moved ([`LiveObject`](crate::LiveObject)).
#[inline]
pub fn refuse_in_hook() -> Result<()> {
    if in_fast_hook() {
        return Err(HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE);
    }
    // Allowed here, the call may move the objects a running callback lent on this thread.
    crate::lending::gc_may_run();
    Ok(())
}

/// Refuses, with `CORPROF_E_NOT_MANAGED_THREAD`, a call that needs the runtime's Thread object of
/// the calling thread when there is none (annotation `refuse_in: [unknown_thread]`), as `ask`
/// says: the wrapper's `ICorProfilerInfo::GetCurrentThreadID`, whose HRESULT it returns. A
/// thread once found known is not asked about again. Another failure of the question
/// (`CORPROF_E_PROFILER_DETACHING`) is returned as is.
pub fn refuse_on_unknown_thread(ask: impl FnOnce() -> HRESULT) -> Result<()> {
    thread_local! {
        /// The runtime has a Thread object for this thread (it keeps it until the thread ends).
        static KNOWN: Cell<bool> = const { Cell::new(false) };
    }
    if KNOWN.with(Cell::get) {
        return Ok(());
    }
    HResult(ask()).ok()?;
    KNOWN.with(|k| k.set(true));
    Ok(())
}

/// Whether this thread is inside a fast-mode hook.
#[inline]
pub(crate) fn in_fast_hook() -> bool {
    mark::get() != 0
}

/// Marks this thread as inside a fast-mode hook until dropped (an unwind included): the one
/// thread-local access of a hooked call, three instructions on x86-64 Linux (the variable's
/// offset read once, an increment and a decrement of the thread's counter through `%fs`).
pub(crate) struct InFastHook {
    place: mark::Place,
    /// A raw pointer's auto traits: the mark belongs to the thread that made it.
    _here: std::marker::PhantomData<*const ()>,
}

impl InFastHook {
    #[inline(always)]
    pub(crate) fn enter() -> InFastHook {
        let place = mark::place();
        mark::increment(place);
        InFastHook { place, _here: std::marker::PhantomData }
    }
}

impl Drop for InFastHook {
    #[inline(always)]
    fn drop(&mut self) {
        // The counter `enter` incremented, on this same thread (the guard is neither `Send` nor
        // `Sync`).
        mark::decrement(self.place);
    }
}

/// This thread's hook depth. On x86-64 Linux an initial-exec thread-local declared in assembly,
/// as `info_gate`'s slot, reached `%fs`-relative (a `thread_local!` in a `cdylib` calls
/// `__tls_get_addr` on every access, about what a whole hooked call costs).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod mark {
    // Hidden, so that the profiler library does not export it.
    std::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl corprof_in_fast_hook_v1",
        ".hidden corprof_in_fast_hook_v1",
        "corprof_in_fast_hook_v1:",
        ".zero 8",
        ".popsection",
    );

    /// The variable's offset from the thread pointer (the same for every thread).
    pub type Place = usize;

    #[inline(always)]
    pub fn place() -> Place {
        let offset: usize;
        // SAFETY: reads the GOT entry the GOTTPOFF relocation names, which the loader filled with
        // the variable's offset from the thread pointer (the x86-64 TLS ABI). Reads only.
        unsafe {
            std::arch::asm!(
                "mov {o}, qword ptr [rip + corprof_in_fast_hook_v1@GOTTPOFF]",
                o = out(reg) offset,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        offset
    }

    #[inline(always)]
    pub fn increment(offset: Place) {
        // SAFETY: `%fs:offset` is this thread's 8-byte variable declared above (`%fs` holds the
        // thread pointer), live for the thread's life and touched by no other thread.
        unsafe { std::arch::asm!("inc qword ptr fs:[{o}]", o = in(reg) offset, options(nostack)) }
    }

    #[inline(always)]
    pub fn decrement(offset: Place) {
        // SAFETY: as for `increment`.
        unsafe { std::arch::asm!("dec qword ptr fs:[{o}]", o = in(reg) offset, options(nostack)) }
    }

    #[inline(always)]
    pub fn get() -> usize {
        let offset = place();
        let depth: usize;
        // SAFETY: as for `increment`; reads only.
        unsafe {
            std::arch::asm!(
                "mov {d}, qword ptr fs:[{o}]",
                o = in(reg) offset,
                d = out(reg) depth,
                options(readonly, nostack, preserves_flags),
            );
        }
        depth
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod mark {
    use std::cell::Cell;

    thread_local! {
        // A `const` initializer without drop glue: no lazy-init check on access.
        static DEPTH: Cell<usize> = const { Cell::new(0) };
    }

    pub type Place = ();

    #[inline(always)]
    pub fn place() -> Place {}

    #[inline(always)]
    pub fn increment((): Place) {
        DEPTH.with(|d| d.set(d.get() + 1));
    }

    #[inline(always)]
    pub fn decrement((): Place) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }

    #[inline(always)]
    pub fn get() -> usize {
        DEPTH.with(Cell::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_lasts_as_long_as_the_guard_and_is_per_thread() {
        assert_eq!(refuse_in_hook(), Ok(()));
        {
            let _outer = InFastHook::enter();
            let _inner = InFastHook::enter();
            assert_eq!(refuse_in_hook(), Err(HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE));
            std::thread::spawn(|| assert_eq!(refuse_in_hook(), Ok(()), "another thread is not in the hook"))
                .join()
                .unwrap();
        }
        assert_eq!(refuse_in_hook(), Ok(()));
        let unwound = std::panic::catch_unwind(|| {
            let _hook = InFastHook::enter();
            panic!("a hook's panic");
        });
        assert!(unwound.is_err());
        assert_eq!(refuse_in_hook(), Ok(()), "cleared by the unwind");
    }
}
