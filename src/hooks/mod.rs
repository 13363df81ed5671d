//! Enter/leave/tailcall hooks without `unsafe`: implement [`FunctionHooks`] on the profiler type
//! and call [`install`] from `initialize`.
//!
//! Two modes ([`HookMode`]):
//!
//! - [`HookMode::Fast`]: the JIT calls the hooks directly from the compiled method, saving no
//!   register. corprof installs a register-preserving assembly stub per hook and per profiler
//!   type (x86-64 System V only: Linux and the other Unix-likes), which calls the trait method.
//!   A call costs the stub, one load of the instance pointer and the trait method.
//! - [`HookMode::WithInfo`]: the runtime's own stub saves the registers and builds frame
//!   information, so [`HookFrame::arguments`] and [`HookFrame::return_value`] can read arguments and
//!   return values. Slower, but on every platform the runtime supports.
//!
//! In both modes a mapper ([`FunctionHooks::map_function`]) decides, once per function, whether
//! its calls are hooked at all and what data the hooks receive for it (typically an index into
//! the profiler's own table), so a hook needs no lookup and an unhooked method costs nothing.
//!
//! A panic in a hook or in the mapper is caught on the Rust side of the stub, logged once per
//! hook kind, and the call proceeds (the mapper's function is then not hooked).
//!
//! The hooks reach the profiler through a static that [`export_profiler!`](crate::export_profiler)
//! fills when the runtime creates the object, so only the exported profiler object can install
//! hooks. Installing keeps that object alive for the rest of the process: the runtime may call
//! hooks on any thread until the process ends, and it never says when the last one returned.

mod frame;
mod hook_table;
mod sig;
mod unwind;

pub use frame::{Arguments, HookFrame, HookKind};
pub use hook_table::HookTable;
pub use sig::{ElementType, ElementValue, MethodSignature};
pub use unwind::{exception_catcher_enter, exception_unwind_function_enter, exception_unwind_function_leave};

/// The name [`ElementValue`] had before (CHANGELOG.md).
#[doc(hidden)]
#[deprecated(note = "renamed `ElementValue`")]
pub type Value = ElementValue;

use crate::report::{drop_payload, log_panic};
use crate::types::{COR_PRF_ELT_INFO, COR_PRF_MONITOR, FunctionID, FunctionIDOrClientID};
use crate::{CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
use std::any::TypeId;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// How [`install`] sets the hooks up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookMode {
    /// Called directly from JIT-compiled code through corprof's register-preserving stubs; the
    /// [`HookFrame`] carries no information. x86-64 System V (Linux, the BSDs, macOS) only:
    /// [`install`] answers `ERROR_NOT_SUPPORTED` elsewhere.
    Fast,
    /// Called through the runtime's own stub with frame information: [`HookFrame::function`],
    /// [`HookFrame::arguments`] and [`HookFrame::return_value`] answer. Adds
    /// `COR_PRF_ENABLE_FRAME_INFO`, `COR_PRF_ENABLE_FUNCTION_ARGS` and
    /// `COR_PRF_ENABLE_FUNCTION_RETVAL` to the event mask.
    WithInfo,
}

/// What the mapper attaches to a hooked function and the hooks receive back on each call.
///
/// Sealed: implemented for [`FunctionID`] (hook calls then name the function), `usize` and `u32`
/// (an index into the profiler's own table, say). The value travels through the runtime as a
/// pointer-sized integer and comes back unchanged.
pub trait HookData: Copy + Send + Sync + 'static + sealed::Sealed {}

mod sealed {
    use crate::types::FunctionID;

    /// The conversions to and from the runtime's `UINT_PTR`, private so that no type whose
    /// values must not be made up from integers (other IDs, references) can be hook data.
    pub trait Sealed: Sized {
        fn into_raw(self) -> usize;
        /// Only ever called with a value `into_raw` returned for the same type.
        fn from_raw(raw: usize) -> Self;
    }

    impl Sealed for FunctionID {
        fn into_raw(self) -> usize {
            self.as_raw()
        }
        fn from_raw(raw: usize) -> Self {
            // SAFETY: `raw` is what `into_raw` returned for a FunctionID the runtime gave the
            // mapper (the module's only caller passes back what the mapper answered).
            unsafe { FunctionID::from_raw(raw) }
        }
    }

    impl Sealed for usize {
        fn into_raw(self) -> usize {
            self
        }
        fn from_raw(raw: usize) -> Self {
            raw
        }
    }

    impl Sealed for u32 {
        fn into_raw(self) -> usize {
            self as usize
        }
        fn from_raw(raw: usize) -> Self {
            raw as u32
        }
    }
}

impl HookData for FunctionID {}
impl HookData for usize {}
impl HookData for u32 {}

/// Enter/leave/tailcall hooks of a profiler, next to its [`CorProfilerCallback`] methods.
/// Installed by [`install`]; every method runs on the thread of the managed call.
///
/// A hook runs inside a managed method's prolog or epilog: the runtime cannot collect garbage
/// until it returns, so keep it short and never block on another managed thread.
pub trait FunctionHooks: CorProfilerCallback {
    /// What the mapper attaches to each hooked function: [`FunctionID`] to get the function
    /// itself, or an index (`usize`, `u32`) into the profiler's own table.
    type Data: HookData;

    /// Whether calls of `function` are hooked (`Some`) and with what data, asked once per
    /// function when the JIT compiles it (before any of its hooks can run). `None` leaves the
    /// function unhooked: its calls cost nothing.
    fn map_function(&self, function: FunctionID) -> Option<Self::Data>;

    /// A hooked function was entered.
    fn enter(&self, data: Self::Data, frame: &HookFrame<'_>) {
        let _ = (data, frame);
    }

    /// A hooked function returns normally (an exception unwinding out of it calls
    /// [`unwind`](Self::unwind) instead).
    fn leave(&self, data: Self::Data, frame: &HookFrame<'_>) {
        let _ = (data, frame);
    }

    /// An exception unwinds out of a hooked function: its last event, in place of `leave`, so a
    /// tracer sees one `leave`, `tailcall` or `unwind` for every `enter`. Runs on the thread of
    /// the exception, from the runtime's `ExceptionUnwindFunctionLeave` callback, which the
    /// profiler forwards (with two others) for it:
    ///
    /// ```
    /// # use corprof::types::FunctionID;
    /// # use corprof::{CorProfilerCallback, LiveObject, Result, hooks};
    /// # struct Tracer;
    /// # impl CorProfilerCallback for Tracer {
    /// // Initialize: COR_PRF_MONITOR_EXCEPTIONS in the event mask, then hooks::install.
    /// fn exception_unwind_function_enter(&self, function: FunctionID) -> Result<()> {
    ///     hooks::exception_unwind_function_enter(function);
    ///     Ok(())
    /// }
    /// fn exception_unwind_function_leave(&self) -> Result<()> {
    ///     hooks::exception_unwind_function_leave();
    ///     Ok(())
    /// }
    /// fn exception_catcher_enter(&self, function: FunctionID, _exception: LiveObject<'_>) -> Result<()> {
    ///     hooks::exception_catcher_enter(function);
    ///     Ok(())
    /// }
    /// # }
    /// ```
    ///
    /// The catching function gets no `unwind`: it goes on and returns later. A panic here is
    /// caught and logged like one in the other hooks.
    fn unwind(&self, data: Self::Data) {
        let _ = data;
    }

    /// A hooked function leaves through a tail call (an explicit `tail.` call, or a call in tail
    /// position the JIT turned into one): the callee's `enter` follows, and this function gets
    /// no `leave`.
    fn tailcall(&self, data: Self::Data, frame: &HookFrame<'_>) {
        let _ = (data, frame);
    }
}

/// Sets the profiler's [`FunctionHooks`] up; call it from `initialize` (the runtime accepts
/// hooks only there). Adds the event-mask bits the mode needs (`COR_PRF_MONITOR_ENTERLEAVE`,
/// and with [`HookMode::WithInfo`] the frame-information ones) to the mask already set.
///
/// Fails with `E_UNEXPECTED` when `profiler` is not the object
/// [`export_profiler!`](crate::export_profiler) created for the runtime (one built by hand, say),
/// `ERROR_ALREADY_EXISTS` when hooks are already installed, `ERROR_NOT_SUPPORTED` for
/// [`HookMode::Fast`] off x86-64 System V, `CORPROF_E_INCONSISTENT_WITH_FLAGS` for
/// [`HookMode::Fast`] when the mask asks for frame information, and with the runtime's answer
/// when it refuses a setter (outside `initialize`, say). Hooks are installed once per process:
/// after a failure past the first checks, they stay off.
pub fn install<P: FunctionHooks>(profiler: &P, info: &ProfilerInfo, mode: HookMode) -> Result<()> {
    let object = registered_object(profiler)?;
    let mask = info.get_event_mask()?;
    let frame_info = COR_PRF_MONITOR::ENABLE_FRAME_INFO
        | COR_PRF_MONITOR::ENABLE_FUNCTION_ARGS
        | COR_PRF_MONITOR::ENABLE_FUNCTION_RETVAL;
    let needed = match mode {
        HookMode::Fast => {
            if !stubs::SUPPORTED {
                return Err(HResult::ERROR_NOT_SUPPORTED);
            }
            // With any of these bits the runtime calls "fast" hooks through its own stub, as
            // ordinary functions, which the fast stubs do not expect (see `stubs`).
            if mask.0 & frame_info.0 != 0 {
                return Err(HResult::CORPROF_E_INCONSISTENT_WITH_FLAGS);
            }
            COR_PRF_MONITOR::ENTERLEAVE
        }
        HookMode::WithInfo => COR_PRF_MONITOR::ENTERLEAVE | frame_info,
    };
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return Err(HResult::ERROR_ALREADY_EXISTS);
    }
    // The hooks and the mapper read the instance from here; it never changes again. The object
    // gets a reference that is never given back (the module documentation says why).
    // SAFETY: `object` is the live COM object holding `profiler` (`registered_object` checked).
    unsafe { (*object).AddRef() };
    INSTANCE.store((profiler as *const P).cast_mut().cast(), Ordering::Release);
    unwind::set_profiler::<P>();
    let _ = INFO.set(info.clone());
    info.set_event_mask(COR_PRF_MONITOR(mask.0 | needed.0))?;
    let mapper_mode = match mode {
        HookMode::Fast => MAPPER_FAST,
        HookMode::WithInfo => MAPPER_WITH_INFO,
    };
    // SAFETY: `map::<P>` has FunctionIDMapper2's signature, catches every panic and lives as
    // long as the library; its client data is a plain integer it decodes, not a pointer.
    unsafe { info.set_function_id_mapper2(Some(map::<P>), mapper_mode as *mut c_void)? };
    match mode {
        HookMode::Fast => stubs::set_hooks::<P>(info),
        HookMode::WithInfo => {
            // CoreCLR 8's stub restores every argument register after the hook (its
            // ProfileEnterNaked: rdi–r9, xmm0–7); 3.1's only xmm0 and xmm1, so the hooks are
            // wrapped in the register-saving stubs there (and on the untested versions between).
            let runtime_restores = info.get_runtime_information().is_ok_and(|r| r.major_version >= 8);
            let (enter, leave, tailcall) = stubs::with_info_hooks::<P>(!runtime_restores);
            // SAFETY: with the frame-information bits just set, the runtime calls these through
            // its own register-saving stub as ordinary C functions of FunctionEnter3WithInfo's
            // (etc.) signature, which they have (wrapped in a stub that saves every volatile
            // register where the runtime's stub does not restore them all); they catch every
            // panic and live as long as the library.
            unsafe { info.set_enter_leave_function_hooks3_with_info(enter, leave, tailcall) }
        }
    }
}

/// The COM object `export_profiler!` created for the runtime (first successful creation only),
/// with its profiler type. Set by [`register_instance`].
static REGISTERED: OnceLock<Registered> = OnceLock::new();

/// Addresses only: the object may have been freed since (one the runtime let go of), and then
/// nothing dereferences them.
struct Registered {
    object: usize,
    value: usize,
    ty: TypeId,
}

/// The profiler the hooks call: null until [`install`] succeeds, then a `*const P` to the
/// registered object's value, which its leaked reference keeps alive.
static INSTANCE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The runtime's info interface, for [`HookFrame`]'s queries in with-info mode.
static INFO: OnceLock<ProfilerInfo> = OnceLock::new();

/// Records the profiler object the class factory hands to the runtime, so that [`install`] can
/// recognise it. Only the first registration counts: the runtime creates one profiler.
///
/// # Safety
/// `object` must be a live `ComObject<CallbackClass<P>>` whose value is `value`, just handed to
/// the runtime (what `export_profiler!`'s class factory passes): [`install`] trusts it.
#[doc(hidden)]
pub unsafe fn register_instance<P: CorProfilerCallback>(object: *mut IUnknown, value: &P) {
    let _ = REGISTERED.set(Registered {
        object: object as usize,
        value: value as *const P as usize,
        ty: TypeId::of::<P>(),
    });
}

/// The registered COM object when `profiler` is its value.
fn registered_object<P: FunctionHooks>(profiler: &P) -> Result<*mut IUnknown> {
    let registered = REGISTERED.get().ok_or(HResult::E_UNEXPECTED)?;
    // If `profiler` lives at the registered value's address with the registered type, it is that
    // object's value, and the object is alive, since a `&P` into it exists.
    if registered.ty != TypeId::of::<P>() || registered.value != profiler as *const P as usize {
        return Err(HResult::E_UNEXPECTED);
    }
    Ok(registered.object as *mut IUnknown)
}

/// The installed profiler, for a hook of type `P`.
#[inline(always)]
fn instance<'a, P>() -> Option<&'a P> {
    let ptr = INSTANCE.load(Ordering::Acquire).cast_const().cast::<P>();
    // SAFETY: `INSTANCE` is null or was set once by `install::<P>` to a `P` that a leaked COM
    // reference keeps alive until the process ends; hooks and mappers of type `P` are only
    // handed to the runtime by that same `install::<P>`, after the store.
    unsafe { ptr.as_ref() }
}

const MAPPER_FAST: usize = 0;
const MAPPER_WITH_INFO: usize = 1;

/// What the runtime hands the with-info hooks for a function the mapper hooked: the frame
/// queries need the FunctionID, and the user's data rides along. Leaked: one per hooked
/// function, alive as long as its hooks may run.
struct WithInfoEntry {
    function: FunctionID,
    data: usize,
}

/// `FunctionIDMapper2` for `P`: asks [`FunctionHooks::map_function`].
unsafe extern "C" fn map<P: FunctionHooks>(function: FunctionID, mode: *mut c_void, hook: *mut i32) -> usize {
    // The function is about to run its hooks: alive, and lent to the mapper like a callback's.
    // SAFETY: the runtime hands `function` to this mapper, which runs until `_lent` drops.
    let _lent = unsafe { crate::unloads::lend_ids(&[(function.as_raw(), crate::unloads::Kind::Function)], false) };
    let answer = catch_unwind(AssertUnwindSafe(|| instance::<P>().and_then(|p| p.map_function(function))));
    let data = match answer {
        Ok(data) => data,
        Err(payload) => {
            report_hook_panic(&MAPPER_PANICKED, "mapper", payload);
            None
        }
    };
    let raw = match (data, mode as usize) {
        (None, _) => None,
        (Some(data), MAPPER_FAST) => fast_allowed().then(|| sealed::Sealed::into_raw(data)),
        (Some(data), _) => {
            let entry = Box::new(WithInfoEntry { function, data: sealed::Sealed::into_raw(data) });
            Some(Box::into_raw(entry) as usize)
        }
    };
    if let Some(data) = data.filter(|_| raw.is_some()) {
        // The unwind callbacks name the function, not the client data: kept by FunctionID.
        unwind::record(function, sealed::Sealed::into_raw(data));
    }
    if !hook.is_null() {
        // SAFETY: the runtime passes a valid BOOL to write the answer to.
        unsafe { *hook = raw.is_some() as i32 };
    }
    raw.unwrap_or(0)
}

/// Whether fast hooks may still be attached to a function: not when the event mask asks for
/// frame information (possible if `initialize` set it after [`install`]), since the runtime
/// would then call the fast stubs as ordinary functions and they would read a wrong register.
fn fast_allowed() -> bool {
    let frame_info = COR_PRF_MONITOR::ENABLE_FRAME_INFO.0
        | COR_PRF_MONITOR::ENABLE_FUNCTION_ARGS.0
        | COR_PRF_MONITOR::ENABLE_FUNCTION_RETVAL.0;
    INFO.get().and_then(|info| info.get_event_mask().ok()).is_some_and(|mask| mask.0 & frame_info == 0)
}

const ENTER: u8 = 0;
const LEAVE: u8 = 1;
const TAILCALL: u8 = 2;

static MAPPER_PANICKED: AtomicBool = AtomicBool::new(false);
static PANICKED: [AtomicBool; 3] = [AtomicBool::new(false), AtomicBool::new(false), AtomicBool::new(false)];

/// Logs the first panic of a hook kind; later ones pass silently (a hook runs on every call).
#[cold]
#[inline(never)]
fn report_hook_panic(flag: &AtomicBool, name: &str, payload: Box<dyn std::any::Any + Send>) {
    if flag.swap(true, Ordering::Relaxed) {
        drop_payload(payload);
        return;
    }
    let then = if name == "mapper" {
        "the function is not hooked; later panics here are not logged"
    } else {
        "the call proceeds; later panics in this hook are not logged"
    };
    log_panic(&format_args!("hook {name}"), payload, then);
}

/// Runs hook `KIND` of the installed `P` on `data`, catching a panic.
///
/// # Safety
/// Only from a hook of `P` the runtime calls: it calls hooks only for functions the mapper
/// hooked, and `map::<P>` hooks one only after reading a non-null `INSTANCE`.
#[inline(always)]
unsafe fn run_hook<P: FunctionHooks, const KIND: u8>(data: P::Data, frame: &HookFrame<'_>) {
    // SAFETY: per this function's contract `INSTANCE` was set (once, by `install::<P>`, to a `P`
    // kept alive until the process ends) before the mapper hooked the function this hook runs
    // for; the hot path of every hooked call skips the null check.
    let profiler = unsafe { &*INSTANCE.load(Ordering::Acquire).cast_const().cast::<P>() };
    run_hook_on::<P, KIND>(profiler, data, frame);
}

/// [`run_hook`] with the instance already read.
#[inline(always)]
fn run_hook_on<P: FunctionHooks, const KIND: u8>(profiler: &P, data: P::Data, frame: &HookFrame<'_>) {
    let result = catch_unwind(AssertUnwindSafe(|| match KIND {
        ENTER => profiler.enter(data, frame),
        LEAVE => profiler.leave(data, frame),
        _ => profiler.tailcall(data, frame),
    }));
    if let Err(payload) = result {
        let name = ["enter", "leave", "tailcall"][KIND as usize];
        report_hook_panic(&PANICKED[KIND as usize], name, payload);
    }
}

fn kind_of(kind: u8) -> HookKind {
    match kind {
        ENTER => HookKind::Enter,
        LEAVE => HookKind::Leave,
        _ => HookKind::Tailcall,
    }
}

/// The with-info hooks, called by the runtime's stub as ordinary C functions.
///
/// # Safety
/// Only for the runtime, as a with-info hook of a function `map::<P>` hooked in with-info mode:
/// `id` is then the client data that mapper returned, `elt` the frame handle of this call.
unsafe extern "C" fn with_info<P: FunctionHooks, const KIND: u8>(id: FunctionIDOrClientID, elt: COR_PRF_ELT_INFO) {
    // SAFETY: the mapper hooked this function, so the runtime passes back its client data: a
    // pointer to a leaked `WithInfoEntry` (the mapper of with-info mode makes nothing else).
    let entry = unsafe { &*(id.clientID as *const WithInfoEntry) };
    let Some(info) = INFO.get() else { return };
    // SAFETY: `elt` is the runtime's frame handle for this very call, valid until it returns,
    // and `entry.function` the function it belongs to.
    let frame = unsafe { HookFrame::with_info(kind_of(KIND), entry.function, elt, info) };
    // SAFETY: the runtime calls this with-info hook of `P` only for a function `map::<P>` hooked.
    unsafe { run_hook::<P, KIND>(sealed::Sealed::from_raw(entry.data), &frame) };
}

/// The Rust side of the fast stubs: `raw` is the client data the mapper returned.
///
/// # Safety
/// Only for the fast stubs of `P`: `raw` must be what `map::<P>` returned in fast mode.
/// `instance` is `INSTANCE` as the stub read it.
unsafe extern "C" fn fast_hook<P: FunctionHooks, const KIND: u8>(raw: usize, instance: *const c_void) {
    // SAFETY: per this function's contract the stub of `P` calls it for a function `map::<P>`
    // hooked, so `instance` is what `install::<P>` stored before: a `P` alive until the process
    // ends. The stub's plain read of the static is ordered after that store as `run_hook`'s
    // acquire load is: the mapper read the instance before the runtime could call this hook.
    let profiler = unsafe { &*instance.cast::<P>() };
    // Calls that may trigger a GC are refused until the hook returns (`crate::context`).
    let _in_hook = crate::context::InFastHook::enter();
    run_hook_on::<P, KIND>(profiler, sealed::Sealed::from_raw(raw), &HookFrame::fast(kind_of(KIND)));
}

#[cfg(all(target_arch = "x86_64", unix))]
mod stubs {
    //! The hooks' register-saving stubs. The JIT calls the hook as a helper that may clobber only what it
    //! says: the function's argument registers are live at enter, its return registers at
    //! leave, so everything volatile is saved. The hook's argument arrives in a register of
    //! its own: r14 for enter (with the caller's SP in r15), rdi for leave and tailcall (with
    //! the caller's SP in rsi) — dotnet/runtime's `genProfilingEnterCallback` and
    //! `genProfilingLeaveCallback` for UNIX_AMD64_ABI.

    use super::{ENTER, FunctionHooks, LEAVE, TAILCALL, fast_hook, with_info};
    use crate::types::{
        COR_PRF_ELT_INFO, FunctionEnter3WithInfo, FunctionIDOrClientID, FunctionLeave3WithInfo,
        FunctionTailcall3WithInfo,
    };
    use crate::{ProfilerInfo, Result};

    pub const SUPPORTED: bool = true;

    /// One stub: saves rax, rcx, rdx, rsi, rdi, r8–r11 and xmm0–15 (rbx, rbp, r12–r15 are
    /// callee-saved in the Rust function), aligns the stack to 16, passes the argument register
    /// in rdi to the Rust side, restores everything and returns. Flags are not preserved (the
    /// JIT does not expect them to be).
    macro_rules! stub {
        // Fast stubs: the hook's data in rdi, and in rsi the installed instance, read here
        // RIP-relative (a Rust function would reach the static through the GOT: one more load
        // in front of every hook's work).
        ($name:ident($($param:ident: $ty:ty),*) -> $target:ident::<$kind:ident>, $arg:literal, instance) => {
            stub!(@emit $name($($param: $ty),*) -> $target::<$kind>,
                concat!("mov rdi, ", $arg, "\nmov rsi, qword ptr [rip + {instance}]"), instance = sym super::INSTANCE);
        };
        ($name:ident($($param:ident: $ty:ty),*) -> $target:ident::<$kind:ident>, $arg:literal) => {
            stub!(@emit $name($($param: $ty),*) -> $target::<$kind>, concat!("mov rdi, ", $arg));
        };
        (@emit $name:ident($($param:ident: $ty:ty),*) -> $target:ident::<$kind:ident>, $load:expr $(, $op:ident = sym $path:path)?) => {
            #[unsafe(naked)]
            pub unsafe extern "C" fn $name<P: FunctionHooks>($($param: $ty),*) {
                core::arch::naked_asm!(
                    // Call-frame information, so that debuggers and unwinders (a stack
                    // snapshot taken inside a hook, say) can walk through the stub.
                    ".cfi_startproc",
                    "push rbp",
                    ".cfi_def_cfa_offset 16",
                    ".cfi_offset rbp, -16",
                    "mov rbp, rsp",
                    ".cfi_def_cfa_register rbp",
                    // One aligned area: the integer registers at its bottom (9 slots rounded
                    // up to 80 bytes), then xmm0–15. Not pushed: with the integer registers
                    // right under the return address (pushed or moved there alike) a hook cost
                    // up to 1 ns more on the benchmark machine (BENCHMARKS.md §6).
                    "and rsp, -16",
                    "sub rsp, 336",
                    "mov [rsp + 0], rax",
                    "mov [rsp + 8], rcx",
                    "mov [rsp + 16], rdx",
                    "mov [rsp + 24], rsi",
                    "mov [rsp + 32], rdi",
                    "mov [rsp + 40], r8",
                    "mov [rsp + 48], r9",
                    "mov [rsp + 56], r10",
                    "mov [rsp + 64], r11",
                    "movaps [rsp + 80], xmm0",
                    "movaps [rsp + 96], xmm1",
                    "movaps [rsp + 112], xmm2",
                    "movaps [rsp + 128], xmm3",
                    "movaps [rsp + 144], xmm4",
                    "movaps [rsp + 160], xmm5",
                    "movaps [rsp + 176], xmm6",
                    "movaps [rsp + 192], xmm7",
                    "movaps [rsp + 208], xmm8",
                    "movaps [rsp + 224], xmm9",
                    "movaps [rsp + 240], xmm10",
                    "movaps [rsp + 256], xmm11",
                    "movaps [rsp + 272], xmm12",
                    "movaps [rsp + 288], xmm13",
                    "movaps [rsp + 304], xmm14",
                    "movaps [rsp + 320], xmm15",
                    $load,
                    "call {hook}",
                    "mov rax, [rsp + 0]",
                    "mov rcx, [rsp + 8]",
                    "mov rdx, [rsp + 16]",
                    "mov rsi, [rsp + 24]",
                    "mov rdi, [rsp + 32]",
                    "mov r8, [rsp + 40]",
                    "mov r9, [rsp + 48]",
                    "mov r10, [rsp + 56]",
                    "mov r11, [rsp + 64]",
                    "movaps xmm0, [rsp + 80]",
                    "movaps xmm1, [rsp + 96]",
                    "movaps xmm2, [rsp + 112]",
                    "movaps xmm3, [rsp + 128]",
                    "movaps xmm4, [rsp + 144]",
                    "movaps xmm5, [rsp + 160]",
                    "movaps xmm6, [rsp + 176]",
                    "movaps xmm7, [rsp + 192]",
                    "movaps xmm8, [rsp + 208]",
                    "movaps xmm9, [rsp + 224]",
                    "movaps xmm10, [rsp + 240]",
                    "movaps xmm11, [rsp + 256]",
                    "movaps xmm12, [rsp + 272]",
                    "movaps xmm13, [rsp + 288]",
                    "movaps xmm14, [rsp + 304]",
                    "movaps xmm15, [rsp + 320]",
                    "mov rsp, rbp",
                    "pop rbp",
                    ".cfi_def_cfa rsp, 8",
                    "ret",
                    ".cfi_endproc",
                    hook = sym $target::<P, $kind>,
                    $($op = sym $path,)?
                )
            }
        };
    }

    stub!(enter_stub(_id: FunctionIDOrClientID) -> fast_hook::<ENTER>, "r14", instance);
    stub!(leave_stub(_id: FunctionIDOrClientID) -> fast_hook::<LEAVE>, "rdi", instance);
    stub!(tailcall_stub(_id: FunctionIDOrClientID) -> fast_hook::<TAILCALL>, "rdi", instance);
    // The with-info hooks are ordinary C functions (rdi, rsi) called from the runtime's stub,
    // wrapped where that stub does not restore every argument register: CoreCLR 3.1's restores
    // only xmm0 and xmm1 after the hook, so a hook that used xmm2–xmm7 (as
    // GetFunctionEnter3Info itself does) would change the method's floating-point arguments.
    // The wrappers pass rdi and rsi through unchanged.
    stub!(enter_info_stub(_id: FunctionIDOrClientID, _elt: COR_PRF_ELT_INFO) -> with_info::<ENTER>, "rdi");
    stub!(leave_info_stub(_id: FunctionIDOrClientID, _elt: COR_PRF_ELT_INFO) -> with_info::<LEAVE>, "rdi");
    stub!(tailcall_info_stub(_id: FunctionIDOrClientID, _elt: COR_PRF_ELT_INFO) -> with_info::<TAILCALL>, "rdi");

    /// The with-info hooks to hand the runtime: wrapped in a register-saving stub when `wrap`.
    pub fn with_info_hooks<P: FunctionHooks>(
        wrap: bool,
    ) -> (FunctionEnter3WithInfo, FunctionLeave3WithInfo, FunctionTailcall3WithInfo) {
        if wrap {
            (Some(enter_info_stub::<P>), Some(leave_info_stub::<P>), Some(tailcall_info_stub::<P>))
        } else {
            (Some(with_info::<P, ENTER>), Some(with_info::<P, LEAVE>), Some(with_info::<P, TAILCALL>))
        }
    }

    pub fn set_hooks<P: FunctionHooks>(info: &ProfilerInfo) -> Result<()> {
        // SAFETY: the stubs preserve every register the JIT expects preserved, read the argument
        // where the JIT puts it (module documentation), catch every panic on the Rust side and
        // live as long as the library. `install` checked that the event mask asks for no frame
        // information, so the JIT calls them directly (and the mapper hooks no function if that
        // changes).
        unsafe {
            info.set_enter_leave_function_hooks3(Some(enter_stub::<P>), Some(leave_stub::<P>), Some(tailcall_stub::<P>))
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", unix)))]
mod stubs {
    use super::{ENTER, FunctionHooks, LEAVE, TAILCALL, with_info};
    use crate::types::{FunctionEnter3WithInfo, FunctionLeave3WithInfo, FunctionTailcall3WithInfo};
    use crate::{HResult, ProfilerInfo, Result};

    pub const SUPPORTED: bool = false;

    /// The with-info hooks to hand the runtime: its stub saves the registers (no platform
    /// here has a register-saving stub of corprof's to `wrap` them in).
    pub fn with_info_hooks<P: FunctionHooks>(
        _wrap: bool,
    ) -> (FunctionEnter3WithInfo, FunctionLeave3WithInfo, FunctionTailcall3WithInfo) {
        (Some(with_info::<P, ENTER>), Some(with_info::<P, LEAVE>), Some(with_info::<P, TAILCALL>))
    }

    pub fn set_hooks<P: FunctionHooks>(_info: &ProfilerInfo) -> Result<()> {
        let _ = super::fast_hook::<P, { super::ENTER }>;
        Err(HResult::ERROR_NOT_SUPPORTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CallbackClass;
    use crate::com::ComObject;
    use crate::entry::new_profiler_object;

    #[derive(Default)]
    struct Hooked;

    impl CorProfilerCallback for Hooked {}

    impl FunctionHooks for Hooked {
        type Data = u32;
        fn map_function(&self, _function: FunctionID) -> Option<u32> {
            None
        }
    }

    /// The value inside a profiler object made by `new_profiler_object`.
    fn value_of(object: *mut IUnknown) -> &'static Hooked {
        // SAFETY: `object` is a live `ComObject<CallbackClass<Hooked>>` that the test never
        // releases, so its value lives as long as the process.
        unsafe { ComObject::<CallbackClass<Hooked>>::value(object.cast()) }
    }

    /// Only the registered object is accepted by `install`, and only as the registered type.
    #[test]
    fn install_accepts_only_the_registered_object() {
        let first = new_profiler_object(Hooked);
        assert_eq!(registered_object(value_of(first)).err(), Some(HResult::E_UNEXPECTED), "nothing registered");
        let second = new_profiler_object(Hooked);
        // SAFETY: `second` is a live profiler object of this type, with `value_of(second)` its value.
        unsafe { register_instance(second, value_of(second)) };
        assert_eq!(registered_object(value_of(second)).ok(), Some(second));
        assert_eq!(registered_object(value_of(first)).err(), Some(HResult::E_UNEXPECTED), "another object");
        // A later registration does not replace the first.
        // SAFETY: as above, for `first`.
        unsafe { register_instance(first, value_of(first)) };
        assert_eq!(registered_object(value_of(first)).err(), Some(HResult::E_UNEXPECTED));
        assert_eq!(instance::<Hooked>().map(|p| p as *const Hooked), None, "no hooks before install");
    }

    /// A payload whose `Drop` panics with `Chain(n - 1)` until `Chain(0)`.
    struct Chain(u32);

    impl Drop for Chain {
        fn drop(&mut self) {
            if self.0 > 0 {
                std::panic::panic_any(Chain(self.0 - 1));
            }
        }
    }

    struct ChainInEnter;

    impl CorProfilerCallback for ChainInEnter {}

    impl FunctionHooks for ChainInEnter {
        type Data = u32;
        fn map_function(&self, _function: FunctionID) -> Option<u32> {
            None
        }
        fn enter(&self, _data: u32, _frame: &HookFrame<'_>) {
            std::panic::panic_any(Chain(2));
        }
    }

    /// The fast enter hook, entered the way the stub enters it, with a payload whose drops panic
    /// in a chain: the first report and the silent later drops both drop every link. A panic
    /// escaping the `extern "C"` hook aborts, so the case runs in a child process (this test
    /// binary again) and the parent checks that it ended well.
    #[test]
    fn a_payload_chain_from_the_fast_enter_hook_is_contained() {
        const CHILD: &str = "CORPROF_HOOKS_CHILD";
        const NAME: &str = "hooks::tests::a_payload_chain_from_the_fast_enter_hook_is_contained";
        if std::env::var_os(CHILD).is_none() {
            let exe = std::env::current_exe().unwrap();
            let out = std::process::Command::new(exe)
                .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD, "1")
                .env_remove("CORPROF_QUIET")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success() && stdout.contains("1 passed"), "{:?}\n{stdout}\n{stderr}", out.status);
            let reports: Vec<&str> = stderr.lines().filter(|l| l.starts_with("corprof: ")).collect();
            let line = "corprof: hook enter panicked: (non-string panic payload); \
                        the call proceeds; later panics in this hook are not logged";
            assert_eq!(reports, [line], "{stderr}");
            return;
        }
        let profiler = ChainInEnter;
        for _ in 0..2 {
            // SAFETY: `instance` points to a live `ChainInEnter`, what the stub passes for `P`.
            unsafe { fast_hook::<ChainInEnter, ENTER>(0, (&raw const profiler).cast()) };
        }
    }

    #[test]
    fn hook_data_round_trips() {
        use sealed::Sealed;
        assert_eq!(u32::from_raw(7u32.into_raw()), 7);
        assert_eq!(usize::from_raw(usize::MAX.into_raw()), usize::MAX);
    }
}
