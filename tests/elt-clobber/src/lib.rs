//! A test profiler for corprof's hook stubs: every hook (fast or with info, from
//! `CORPROF_ELT_MODE`) overwrites every volatile register, general and vector, before returning,
//! so any register a stub failed to preserve would change the app's arguments or results. In
//! info mode it also reads every return value, and the arguments of every method whose
//! parameters are primitives or references (CoreCLR 3.1 corrupts xmm0/xmm1 when asked for a
//! value type passed in registers: see `HookFrame::arguments`). `CLSID` below. At shutdown it
//! writes `enters <n> leaves <n> fib <enters> <leaves>` to the file named by
//! `CORPROF_CLOBBER_OUT` (all hooked calls, and those of the app's `Fib`), so that the test knows
//! the hooks ran.

use corprof::hooks::{self, ElementType, HookFrame, MethodSignature};
use corprof::types::{CorOpenFlags, FunctionID};
use corprof::{CorProfilerCallback, FunctionHooks, HookMode, IUnknown, MetaDataImport, ProfilerInfo, Result};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("6A0E2F4B-8C1D-4B7E-A3F5-9D2C7E1B4A68");

#[derive(Default)]
pub struct Clobber {
    info: OnceLock<ProfilerInfo>,
    enters: AtomicU64,
    leaves: AtomicU64,
    fib_enters: AtomicU64,
    fib_leaves: AtomicU64,
}

/// The bits of a hooked function's data: read its arguments; it is the app's `Fib`, whose calls
/// the app makes a known number of.
const READ_ARGUMENTS: u32 = 1;
const FIB: u32 = 2;

impl Clobber {
    /// Whether the function's arguments may be read: every parameter a primitive or a reference.
    fn plain_params(&self, function: FunctionID) -> Result<bool> {
        let info = self.info.get().ok_or(corprof::HResult::E_UNEXPECTED)?;
        let sig = MethodSignature::of_function(info, function)?;
        Ok(sig.params().iter().all(|p| p.is_primitive() || *p == ElementType::Reference))
    }

    /// Whether the function is a method named `Fib` (EltApp.Recursion's; the runtime has none).
    fn is_fib(&self, function: FunctionID) -> Result<bool> {
        let info = self.info.get().ok_or(corprof::HResult::E_UNEXPECTED)?;
        let f = info.get_function_info(function)?;
        let import = info.get_module_metadata::<MetaDataImport>(f.module_id, CorOpenFlags::ofRead)?;
        Ok(import.get_method_props(f.token)?.name == "Fib")
    }

    fn count(&self, data: u32, all: &AtomicU64, fib: &AtomicU64) {
        all.fetch_add(1, Ordering::Relaxed);
        if data & FIB != 0 {
            fib.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Writes garbage into rax, rcx, rdx, rsi, rdi, r8–r11 and xmm0–15.
#[inline(never)]
fn clobber() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the block only writes registers it declares as clobbered outputs; the compiler
    // saves whatever it needs across it.
    unsafe {
        std::arch::asm!(
            "mov rax, -1", "mov rcx, -1", "mov rdx, -1", "mov rsi, -1", "mov rdi, -1",
            "mov r8, -1", "mov r9, -1", "mov r10, -1", "mov r11, -1",
            "pcmpeqd xmm0, xmm0", "pcmpeqd xmm1, xmm1", "pcmpeqd xmm2, xmm2", "pcmpeqd xmm3, xmm3",
            "pcmpeqd xmm4, xmm4", "pcmpeqd xmm5, xmm5", "pcmpeqd xmm6, xmm6", "pcmpeqd xmm7, xmm7",
            "pcmpeqd xmm8, xmm8", "pcmpeqd xmm9, xmm9", "pcmpeqd xmm10, xmm10", "pcmpeqd xmm11, xmm11",
            "pcmpeqd xmm12, xmm12", "pcmpeqd xmm13, xmm13", "pcmpeqd xmm14, xmm14", "pcmpeqd xmm15, xmm15",
            out("rax") _, out("rcx") _, out("rdx") _, out("rsi") _, out("rdi") _,
            out("r8") _, out("r9") _, out("r10") _, out("r11") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
        );
    }
}

impl FunctionHooks for Clobber {
    /// Whether to read the function's arguments.
    type Data = u32;

    fn map_function(&self, function: FunctionID) -> Option<u32> {
        let read = if self.plain_params(function).unwrap_or(false) { READ_ARGUMENTS } else { 0 };
        let fib = if self.is_fib(function).unwrap_or(false) { FIB } else { 0 };
        Some(read | fib)
    }

    fn enter(&self, data: u32, frame: &HookFrame<'_>) {
        self.count(data, &self.enters, &self.fib_enters);
        // In info mode, ask the runtime too (CoreCLR 3.1's GetFunctionEnter3Info uses xmm2–7).
        if data & READ_ARGUMENTS != 0 {
            let _ = frame.arguments();
        }
        clobber();
    }

    fn leave(&self, data: u32, frame: &HookFrame<'_>) {
        self.count(data, &self.leaves, &self.fib_leaves);
        let _ = frame.return_value();
        clobber();
    }

    fn tailcall(&self, _data: u32, _frame: &HookFrame<'_>) {
        clobber();
    }
}

impl CorProfilerCallback for Clobber {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        let info = self.info.get_or_init(|| info);
        let mode = match std::env::var("CORPROF_ELT_MODE").as_deref() {
            Ok("info") => HookMode::WithInfo,
            _ => HookMode::Fast,
        };
        hooks::install(self, info, mode)
    }

    fn shutdown(&self) -> Result<()> {
        if let Some(path) = std::env::var_os("CORPROF_CLOBBER_OUT") {
            let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
            let line = format!(
                "enters {} leaves {} fib {} {}\n",
                n(&self.enters),
                n(&self.leaves),
                n(&self.fib_enters),
                n(&self.fib_leaves)
            );
            std::fs::write(path, line).map_err(|_| corprof::HResult::E_FAIL)?;
        }
        Ok(())
    }
}

corprof::export_profiler!(Clobber, CLSID);
