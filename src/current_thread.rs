//! The calling thread as a token ([`CurrentThread`]) that cannot outlive the thread's managed
//! Thread object: lent to a closure by [`ProfilerInfo::with_current_thread`].
//!
//! A `ThreadID` is a pointer to the runtime's Thread object, freed once `ThreadDestroyed` for it
//! has returned, so every method taking one is `unsafe` (docs/guide/reliability.md, "IDs that
//! die"). The calling thread's own object is alive for certain while the thread runs the closure
//! (the thread is busy there; the runtime cannot finish destroying it), and the token can neither
//! leave the closure (its lifetime is the closure's) nor the thread (`!Send`, `!Sync`).

use crate::types::{AppDomainID, ClassID, ContextID, HANDLE, ThreadID, mdFieldDef};
use crate::{HResult, ProfilerInfo, Result};
use std::fmt;
use std::marker::PhantomData;

/// The calling managed thread, for the duration of [`ProfilerInfo::with_current_thread`]'s
/// closure: the questions the `unsafe` `ThreadID` methods answer, asked safely.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CurrentThread<'t> {
    id: ThreadID,
    /// The closure's lifetime, and `!Send + !Sync` (a raw pointer's auto traits).
    _here: PhantomData<(&'t (), *const ())>,
}

impl ProfilerInfo {
    /// Runs `f` with the calling thread's token
    /// ([`GetCurrentThreadID`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo-getcurrentthreadid-method)).
    /// `Err(CORPROF_E_NOT_MANAGED_THREAD)` on a thread the runtime does not know (a thread of
    /// your own, a GC thread), and `f` is not run.
    ///
    /// The token cannot escape `f` (`f` takes it for any lifetime, so neither its result nor a
    /// `static` or `thread_local!` can hold it), so it cannot be used after the thread's
    /// `ThreadDestroyed`.
    pub fn with_current_thread<R>(&self, f: impl for<'t> FnOnce(CurrentThread<'t>) -> R) -> Result<R> {
        let id = self.get_current_thread_id()?;
        if id.is_null() {
            return Err(HResult::CORPROF_E_NOT_MANAGED_THREAD);
        }
        Ok(f(CurrentThread { id, _here: PhantomData }))
    }
}

impl CurrentThread<'_> {
    /// The `ThreadID`, as a plain value (for tables and logs). Handing it back to the runtime
    /// after the closure is `unsafe`: the thread may have been destroyed by then.
    pub fn id(self) -> ThreadID {
        self.id
    }

    /// The operating system's thread ID
    /// ([`GetThreadInfo`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo-getthreadinfo-method)).
    pub fn os_thread_id(self, info: &ProfilerInfo) -> Result<u32> {
        // SAFETY: the calling thread, alive while it runs the closure `self` cannot leave.
        unsafe { info.get_thread_info(self.id) }
    }

    /// The AppDomain the thread runs in
    /// ([`GetThreadAppDomain`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo2-getthreadappdomain-method)).
    pub fn app_domain(self, info: &ProfilerInfo) -> Result<AppDomainID> {
        // SAFETY: as in `os_thread_id`.
        unsafe { info.get_thread_app_domain(self.id) }
    }

    /// The runtime's handle of the thread
    /// ([`GetHandleFromThread`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo-gethandlefromthread-method));
    /// on Linux the runtime's own (PAL) handle, which no OS call accepts.
    pub fn handle(self, info: &ProfilerInfo) -> Result<HANDLE> {
        // SAFETY: as in `os_thread_id`.
        unsafe { info.get_handle_from_thread(self.id) }
    }

    /// The thread's context
    /// ([`GetThreadContext`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo-getthreadcontext-method));
    /// CoreCLR has no remoting contexts: the value is the thread's AppDomain.
    pub fn context(self, info: &ProfilerInfo) -> Result<ContextID> {
        // SAFETY: as in `os_thread_id`.
        unsafe { info.get_thread_context(self.id) }
    }

    /// The address of this thread's value of a thread-static field
    /// ([`GetThreadStaticAddress`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo2-getthreadstaticaddress-method)).
    /// A plain address: reading through it is `unsafe`.
    pub fn static_address(
        self,
        info: &ProfilerInfo,
        class: ClassID,
        field: mdFieldDef,
    ) -> Result<*mut std::ffi::c_void> {
        // SAFETY: as in `os_thread_id`.
        unsafe { info.get_thread_static_address(class, field, self.id) }
    }

    /// As [`static_address`](Self::static_address), in an AppDomain
    /// ([`GetThreadStaticAddress2`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo3-getthreadstaticaddress2-method)).
    pub fn static_address_in(
        self,
        info: &ProfilerInfo,
        class: ClassID,
        field: mdFieldDef,
        app_domain: AppDomainID,
    ) -> Result<*mut std::ffi::c_void> {
        // SAFETY: as in `os_thread_id`.
        unsafe { info.get_thread_static_address2(class, field, app_domain, self.id) }
    }
}

impl fmt::Debug for CurrentThread<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CurrentThread({})", self.id)
    }
}
