//! The plumbing generated code and [`export_profiler!`](crate::export_profiler) reach by path,
//! gathered in one hidden module (the shape of windows-core's `imp`).
//!
//! Generated bindings (this crate's, and those of crates that generate their own with
//! `root: "::corprof"`, like tests/future-header) name the runtime support they call as
//! `{root}::imp::…` and nothing else below the crate root, so the modules behind it can move
//! without a template change. No profiler should call it: what a profiler needs is re-exported at
//! the root, and the rest are unsafe contracts between generator and runtime (dispatch, vtable
//! construction, out-pointer conversions, buffers).

pub use crate::com::{ComClass, ComObject, IUnknown_Vtbl};
pub use crate::context::{refuse_in_hook, refuse_on_unknown_thread};
pub use crate::entry::{
    IClassFactory_Vtbl, IID_ICLASSFACTORY, ProfilerFactory, dispatch, dispatch_initialize, dll_get_class_object,
    new_profiler_object,
};
pub use crate::lending::{Lending, lend};
pub use crate::pointer_params::raw;
pub use crate::suspend::refuse_on_suspending_thread;
pub use crate::unloads::{
    Kind as IdKind, LentScope, Tracked, alive_assembly, alive_class, alive_function, alive_module, keep_tracked,
    lend_ids, lend_output, track, view_tracked,
};
pub use crate::wrapper_support::{
    Buffer, CorEnum, EnumOp, HCORENUM, MAX_CALLS, Negotiated, Zeroable, ask_then_fill, fmt_enum, wide, wide_counted,
    wrap_out, zeroed,
};

/// Sees `ReJITError` first: a failure of a ReJIT corprof's instrumentation asked for is said in
/// its decisions. Always `None`: the profiler's `rejit_error` sees every failure.
#[doc(hidden)]
pub fn rejit_error(module: usize, method: u32, function: usize, status: i32) -> Option<crate::Result<()>> {
    let _ = function;
    #[cfg(all(corprof_iface = "IMetaDataImport", corprof_iface = "IMetaDataEmit"))]
    crate::instrument::rejit_failed(module, method, crate::HResult(status));
    #[cfg(not(all(corprof_iface = "IMetaDataImport", corprof_iface = "IMetaDataEmit")))]
    let _ = (module, method, status);
    None
}

/// Answers `GetReJITParameters` for the ReJITs corprof's instrumentation asked for (the new body
/// of a wrapped method, given through `control`): `Some` with the answer for one of those, `None`
/// for any other method, whose ReJIT is the profiler's own.
///
/// # Safety
/// Only the thunk of `GetReJITParameters` calls it, with the arguments the runtime passed it,
/// unchanged, while the callback runs: `control` is then the runtime's function-control object
/// for the ReJIT of exactly that method.
#[doc(hidden)]
pub unsafe fn rejit_parameters(
    module: usize,
    method: u32,
    control: *mut std::ffi::c_void,
) -> Option<crate::Result<()>> {
    #[cfg(all(corprof_iface = "IMetaDataImport", corprof_iface = "IMetaDataEmit"))]
    {
        // SAFETY: the caller's contract, passed on.
        unsafe { crate::instrument::rejit_parameters(module, method, control) }
    }
    #[cfg(not(all(corprof_iface = "IMetaDataImport", corprof_iface = "IMetaDataEmit")))]
    {
        let _ = (module, method, control);
        None
    }
}
