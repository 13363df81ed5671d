//! Rewriting method bodies in the runtime: read a method's IL, edit it with [`crate::il`], and
//! hand the edited body back, at JIT time or through ReJIT, each with one call: reading is safe,
//! handing code to the runtime is `unsafe` (it runs unverified; see [`ProfilerInfo::set_il_body`]).
//!
//! - **Read**: [`ProfilerInfo::il_body`] copies a method's body out of the runtime
//!   (`GetILFunctionBody`) and parses it into a [`MethodBody`]; [`ProfilerInfo::il_body_bytes`]
//!   gives the bytes.
//! - **At JIT time**: [`ProfilerInfo::set_il_body`] encodes the body, allocates it from the
//!   module's `IMethodMalloc` and calls `SetILFunctionBody`. Call it from
//!   `jit_compilation_started` for the method being compiled (event mask
//!   `COR_PRF_MONITOR_JIT_COMPILATION`), or earlier, e.g. in `module_load_finished`; it
//!   replaces the IL for the rest of the module's life, so later compilations of the method
//!   (tier-up, say) see the new body too: rewrite each method once. Methods precompiled
//!   ReadyToRun are not JIT-compiled, so there is nothing to rewrite (add
//!   `COR_PRF_DISABLE_ALL_NGEN_IMAGES` to the mask to have them JIT-compiled); a method already
//!   compiled keeps its code: use ReJIT.
//! - **Through ReJIT**: set `COR_PRF_ENABLE_REJIT` in `initialize` (CoreCLR 3.0 and later also
//!   take it from a later callback, their `ProfAPI_ReJitOnAttach` being on by default);
//!   call [`ProfilerInfo::request_rejit`] (or [`request_rejit_with_inliners`](ProfilerInfo::request_rejit_with_inliners))
//!   for `(module, method)` pairs; the runtime then calls `get_rejit_parameters`, where
//!   [`set_rejit_body`] hands over the new body through the callback's `function_control`
//!   ([`ProfilerFunctionControl::set_il_body`] does the same for the wrapper). Calls made after
//!   the ReJIT run the new code; [`ProfilerInfo::revert_methods`] goes back to the original
//!   (`RequestRevert`, with each method's status). Both are "synchronous" profiling calls: the
//!   runtime takes them inside a callback (`jit_compilation_finished` of a trigger method, say)
//!   or on a thread it does not manage, one the profiler started; on an app thread outside a
//!   callback, such as a P/Invoke into the profiler's library, it answers
//!   `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` (`examples/rejit-swap` hands the request to a thread
//!   of its own and waits for it). Both suspend the runtime, which can deadlock against a lock
//!   the calling callback's thread holds (it has been seen from `module_load_finished`): a
//!   thread of the profiler's own is the safe place.
//! - **New tokens** for the body come from the module's metadata,
//!   `info.get_module_metadata::<MetaDataEmit>(module, CorOpenFlags::ofWrite)`: a string
//!   literal for `ldstr` from `define_user_string`, a type from `define_type_ref_by_name` (scoped
//!   by an AssemblyRef the module has, or by a new one from `MetaDataAssemblyEmit`'s
//!   `define_assembly_ref_by_name`), a method or field of another type from `define_member_ref`
//!   (with a signature from [`crate::sig`]); wrap each in [`Token`](crate::sig::Token) for the
//!   instruction.
//!
//! The runtime reads exactly the bytes the body's header and sections announce: before
//! anything reaches the runtime, the encoded bytes are parsed back, so a body that does not
//! hold together is an [`Err`], never a read past the end. What the IL *does* is another matter:
//! the runtime compiles it as it compiles the app's own code, and IL that the runtime would
//! reject fails there (`InvalidProgramException` when the method is called, or `rejit_error`),
//! while unverifiable IL (say, `ldind` through a made-up address) runs with the same power as
//! unsafe C# in the app. Keep the stack balanced and the tokens real; set the max stack the new
//! code needs ([`MethodBody::compute_max_stack`]).
//!
//! ```no_run
//! use corprof::il::{Instruction, MethodBody, OpCode};
//! use corprof::rewrite::RewriteError;
//! use corprof::types::{FunctionID, ModuleID, mdMethodDef};
//! use corprof::ProfilerInfo;
//!
//! /// Makes `method` (an `int` method) return 42, at JIT time.
//! fn answer_42(info: &ProfilerInfo, module: ModuleID, method: mdMethodDef) -> Result<(), RewriteError> {
//!     let mut body = MethodBody::new();
//!     body.push(Instruction::ldc_i4(42));
//!     body.push(Instruction::simple(OpCode::RET));
//!     // SAFETY: `ldc.i4 42; ret` is a whole body for a method returning `int`.
//!     unsafe { info.set_il_body(module, method, &body) }
//! }
//! ```

use crate::HResult;
use crate::il::{IlError, MethodBody};
use crate::info::ProfilerFunctionControl;
use crate::interfaces::ICorProfilerFunctionControl;
use crate::types::{ModuleID, mdMethodDef};
use crate::{HRESULT, ProfilerInfo};
use std::fmt;

/// Why a body could not be read from or given to the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RewriteError {
    /// The runtime refused the call (e.g. `CORPROF_E_FUNCTION_NOT_IL` for a method without IL,
    /// `E_OUTOFMEMORY` when the module's allocator gave nothing).
    Runtime(HResult),
    /// The body could not be parsed (as read) or encoded (as edited).
    Il(IlError),
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::Runtime(hr) => write!(f, "{hr}"),
            RewriteError::Il(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RewriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RewriteError::Runtime(hr) => Some(hr),
            RewriteError::Il(e) => Some(e),
        }
    }
}

impl From<HResult> for RewriteError {
    fn from(hr: HResult) -> Self {
        RewriteError::Runtime(hr)
    }
}

impl From<IlError> for RewriteError {
    fn from(e: IlError) -> Self {
        RewriteError::Il(e)
    }
}

/// What a callback returns for a [`RewriteError`]: the runtime's code, or `E_FAIL` for a body
/// that does not encode (so `?` works in a callback).
impl From<RewriteError> for HResult {
    fn from(e: RewriteError) -> Self {
        match e {
            RewriteError::Runtime(hr) => hr,
            RewriteError::Il(_) => HResult::E_FAIL,
        }
    }
}

/// The body's bytes, checked to hold everything their header and sections announce: they
/// parse back. The runtime reads a body by its header, so this is what keeps it inside them.
fn checked_bytes(body: &MethodBody) -> Result<Vec<u8>, RewriteError> {
    let bytes = body.encode()?;
    MethodBody::parse(&bytes)?;
    Ok(bytes)
}

/// Gives the ReJIT that `get_rejit_parameters` is about its new IL, through the callback's own
/// `function_control` parameter: encodes `body`, checks it, and hands the bytes to
/// `SetILFunctionBody` (the runtime copies them). Call it inside that callback: the ReJIT reads
/// what was set when the callback returns.
///
/// # Safety
/// The runtime compiles the new body without verifying it and runs it as the method's code, so
/// it must be IL the method could have been compiled from: each instruction finds operands of
/// the types it expects on the stack, tokens and branch targets are valid, calls get the
/// arguments their signatures take, and no address is made up from an integer and then read,
/// written or called through (`ldind`/`stind`/`cpblk`/`calli`). Unverifiable IL of that kind
/// reads or writes any memory of the process when the method runs. What is checked here is the
/// encoding (a body that does not hold together is an `Err`), not what the code does.
pub unsafe fn set_rejit_body(
    function_control: &ICorProfilerFunctionControl,
    body: &MethodBody,
) -> Result<(), RewriteError> {
    let bytes = checked_bytes(body)?;
    let size = u32::try_from(bytes.len()).map_err(|_| HResult::E_INVALIDARG)?;
    // SAFETY: `function_control` is a live object, borrowed for the call; the runtime copies
    // `size` bytes from `bytes`, which hold exactly that many, and later reads the copy by its
    // header, which `checked_bytes` made sure stays within them; the caller vouches for the code.
    let hr = unsafe { function_control.SetILFunctionBody(size, bytes.as_ptr()) };
    HResult(hr).ok()?;
    Ok(())
}

impl ProfilerInfo {
    /// A copy of the IL body of `method` in `module`, header and exception sections included:
    /// the original one, or the last one given with [`set_il_body`](Self::set_il_body).
    /// `Err(CORPROF_E_FUNCTION_NOT_IL)` for a method without IL.
    pub fn il_body_bytes(&self, module: ModuleID, method: mdMethodDef) -> crate::Result<Vec<u8>> {
        let body = self.get_il_function_body(module, method)?;
        if body.method_header.is_null() || body.method_size == 0 {
            return Err(HResult::CORPROF_E_FUNCTION_NOT_IL);
        }
        // SAFETY: the call succeeded (and the pointer is not null), so the runtime says
        // `method_header` points at the body's `method_size` bytes, in the module's image or in
        // memory from its IMethodMalloc, both of which live as long as the module; the module
        // was loaded for the call, and the bytes are copied at once, before this fn returns.
        let bytes = unsafe { std::slice::from_raw_parts(body.method_header, body.method_size as usize) };
        Ok(bytes.to_vec())
    }

    /// The IL body of `method` in `module`, parsed: see [`il_body_bytes`](Self::il_body_bytes).
    pub fn il_body(&self, module: ModuleID, method: mdMethodDef) -> Result<MethodBody, RewriteError> {
        Ok(MethodBody::parse(&self.il_body_bytes(module, method)?)?)
    }

    /// Replaces the IL of `method` in `module` with `body`, at JIT time: encodes it, copies it
    /// into memory from the module's `IMethodMalloc` (the runtime keeps that memory for the
    /// module's life) and calls `SetILFunctionBody`. See the [module](crate::rewrite) for when
    /// the runtime accepts it; otherwise its refusal comes back as [`RewriteError::Runtime`].
    ///
    /// # Safety
    /// The runtime compiles the new body without verifying it and runs it as the method's code, so
    /// it must be IL the method could have been compiled from: each instruction finds operands of
    /// the types it expects on the stack, tokens and branch targets are valid, calls get the
    /// arguments their signatures take, and no address is made up from an integer and then read,
    /// written or called through (`ldind`/`stind`/`cpblk`/`calli`). Unverifiable IL of that kind
    /// reads or writes any memory of the process when the method runs. What is checked here is the
    /// encoding (a body that does not hold together is an `Err`), not what the code does.
    pub unsafe fn set_il_body(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        body: &MethodBody,
    ) -> Result<(), RewriteError> {
        let bytes = checked_bytes(body)?;
        let size = u32::try_from(bytes.len()).map_err(|_| HResult::E_INVALIDARG)?;
        let allocator = self.get_il_function_body_allocator(module)?;
        let memory = allocator.alloc(size)?.cast::<u8>();
        if memory.is_null() {
            return Err(HResult::E_OUTOFMEMORY.into());
        }
        // SAFETY: `memory` is a fresh allocation of `size` = `bytes.len()` bytes from the
        // allocator (not null, checked above), which cannot overlap `bytes`, a Vec of ours.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), memory, bytes.len()) };
        // SAFETY: `memory` comes from this module's IMethodMalloc, as SetILFunctionBody
        // requires, and holds a whole body: `checked_bytes` parsed it back, so the code and
        // every section its header announces lie within these bytes; the caller vouches for the
        // code. The runtime owns the memory from here (it is never freed by us).
        unsafe { self.set_il_function_body(module, method, memory) }?;
        Ok(())
    }

    /// `RequestRevert`: the methods (pairs of `module_ids[i]`, `method_ids[i]`) go back to their
    /// original IL for calls made from now on. The outer `Err` is the call's failure (lengths
    /// that differ are `E_INVALIDARG`); otherwise each method's status, in order (`S_OK`, or
    /// why that one could not be reverted).
    pub fn revert_methods(&self, module_ids: &[ModuleID], method_ids: &[mdMethodDef]) -> crate::Result<Vec<HResult>> {
        if module_ids.len() != method_ids.len() {
            return Err(HResult::E_INVALIDARG);
        }
        let mut status: Vec<HRESULT> = vec![0; method_ids.len()];
        // SAFETY: `status` has room for one HRESULT per method, which is what RequestRevert
        // writes, and lives across the call.
        unsafe { self.request_revert(module_ids, method_ids, status.as_mut_ptr()) }?;
        Ok(status.into_iter().map(HResult).collect())
    }
}

#[cfg(corprof_iface = "ICorProfilerInfo10")]
impl ProfilerInfo {
    /// [`ICorProfilerInfo10::RequestReJITWithInliners`](https://learn.microsoft.com/dotnet/core/unmanaged-api/profiling/icorprofilerinfo10-requestrejitwithinliners-method):
    /// like [`request_rejit`](Self::request_rejit), but also recompiles every method that inlined
    /// the requested ones (pairs of `module_ids[i]`, `method_ids[i]`), and with
    /// `COR_PRF_REJIT_BLOCK_INLINING` keeps them from being inlined again, so that the new code is
    /// used everywhere. Per-method failures arrive through `rejit_error`.
    ///
    /// **Needs:** `COR_PRF_REJIT_BLOCK_INLINING` in the flags; `COR_PRF_ENABLE_REJIT` set in
    /// `initialize`; main profiler only. From a callback that may trigger a GC or a thread of the
    /// profiler's own, not while this thread holds a runtime suspension.
    ///
    /// **Errors:** `E_INVALIDARG` (lengths that differ, no methods, flags without
    /// `COR_PRF_REJIT_BLOCK_INLINING`), `CORPROF_E_REJIT_NOT_ENABLED`,
    /// `CORPROF_E_REJIT_INLINING_DISABLED`, `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` (called where a
    /// GC may not be triggered), `E_NOINTERFACE` before CoreCLR 3.0.
    ///
    /// **Refused by corprof** (the runtime would take the call and crash):
    /// - on a runtime before .NET 8, a method of precompiled (ReadyToRun) code (its module has
    ///   `COR_PRF_MODULE_NGEN`: the framework's assemblies) or of a collectible context
    ///   (`COR_PRF_MODULE_COLLECTIBLE`), with `COR_E_NOTSUPPORTED`: CoreCLR 3.1.23 crashed walking
    ///   their inliners (`ReJitManager::UpdateJitInlinerActiveILVersions`; the runtime's fixes to
    ///   that walk: .NET 7, dotnet/runtime#69634, and 8, #88924). It crashed there too for a
    ///   method of a module corprof's instrumentation had given a new module initializer, which
    ///   this call cannot tell: before .NET 8, ask for the inliners only of plain JIT code you
    ///   know, and request the others with `request_rejit` (inliners keep their copy).
    /// - inside a fast-mode hook (`HookMode::Fast`), with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`:
    ///   the call may trigger a GC, and the hook's thread runs managed code with no frame.
    /// - on the thread that holds a [`Suspension`](crate::suspend::Suspension), with
    ///   `CORPROF_E_SUSPENSION_IN_PROGRESS`: the runtime suspends itself for the call.
    /// - with an ID of code that unloaded (a collectible `AssemblyLoadContext`), with
    ///   `COR_E_APPDOMAINUNLOADED`.
    pub fn request_rejit_with_inliners(
        &self,
        rejit_flags: crate::types::COR_PRF_REJIT_FLAGS,
        module_ids: &[ModuleID],
        method_ids: &[mdMethodDef],
    ) -> crate::Result<()> {
        // Held through the raw call: the runtime's object cannot be let go under it (info_gate).
        let _entered = self.negotiated().enter()?;
        let raw = self.get::<crate::interfaces::ICorProfilerInfo10>()?;
        crate::context::refuse_in_hook()?;
        crate::suspend::refuse_on_suspending_thread()?;
        for module in module_ids {
            // SAFETY: a typed ID: safe code gets one only from the runtime.
            unsafe { crate::unloads::alive_module(module.as_raw()) }?;
        }
        if method_ids.len() != module_ids.len() {
            return Err(HResult::E_INVALIDARG);
        }
        // Before .NET 8 the runtime's walk of the inliners (ReJitManager::
        // UpdateJitInlinerActiveILVersions) crashed CoreCLR 3.1.23 for a method of precompiled
        // code and for one of a collectible context: both refused there.
        if self.get_runtime_information().map_or(true, |r| r.major_version < 8) {
            use crate::types::COR_PRF_MODULE_FLAGS as F;
            for module in module_ids {
                let flags = self.get_module_info2(*module)?.module_flags;
                if flags.contains(F::COR_PRF_MODULE_NGEN) || flags.contains(F::COR_PRF_MODULE_COLLECTIBLE) {
                    return Err(HResult::COR_E_NOTSUPPORTED);
                }
            }
        }
        let count = u32::try_from(module_ids.len()).map_err(|_| HResult::E_INVALIDARG)?;
        // SAFETY: `raw` is borrowed from this wrapper's object, whose gate is held; the arrays hold
        // `count` IDs each, live across the call, which only reads them; every module is alive,
        // and none is precompiled where the runtime cannot take one.
        let hr = unsafe {
            raw.RequestReJITWithInliners(rejit_flags.0 as _, count, module_ids.as_ptr() as _, method_ids.as_ptr() as _)
        };
        HResult(hr).ok()
    }
}

impl ProfilerFunctionControl {
    /// Gives the ReJIT of the method `get_rejit_parameters` is about its new IL: encodes `body`
    /// and hands the bytes to `SetILFunctionBody` (the runtime copies them).
    ///
    /// # Safety
    /// The runtime compiles the new body without verifying it and runs it as the method's code, so
    /// it must be IL the method could have been compiled from: each instruction finds operands of
    /// the types it expects on the stack, tokens and branch targets are valid, calls get the
    /// arguments their signatures take, and no address is made up from an integer and then read,
    /// written or called through (`ldind`/`stind`/`cpblk`/`calli`). Unverifiable IL of that kind
    /// reads or writes any memory of the process when the method runs. What is checked here is the
    /// encoding (a body that does not hold together is an `Err`), not what the code does.
    pub unsafe fn set_il_body(&self, body: &MethodBody) -> Result<(), RewriteError> {
        let bytes = checked_bytes(body)?;
        let size = u32::try_from(bytes.len()).map_err(|_| HResult::E_INVALIDARG)?;
        // SAFETY: the runtime copies `size` bytes from `bytes`, which hold exactly that many, and
        // later reads the copy by its header, which `checked_bytes` made sure stays within them;
        // the caller vouches for the code.
        unsafe { self.set_il_function_body(size, bytes.as_ptr()) }?;
        Ok(())
    }
}
