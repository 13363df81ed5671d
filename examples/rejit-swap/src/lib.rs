//! `rejit-swap`: a profiler that ReJITs a chosen method so that its string literals become
//! another one, and later reverts it, when the app asks. No `unsafe`.
//!
//! **The trigger.** The profiler's library exports two C functions that the app calls through
//! P/Invoke (the runtime finds the library by name on `LD_LIBRARY_PATH`, where the profiler's
//! folder must be, and both loads are the same library):
//!
//! ```csharp
//! [DllImport("librejit_swap.so")] static extern int rejit_swap_request(); // ReJIT the method
//! [DllImport("librejit_swap.so")] static extern int rejit_swap_revert();  // back to the original
//! ```
//!
//! Each returns an HRESULT (0 when the runtime accepted the request) once the request is made;
//! calls to the method from then on run the new (or original) code. The method should be
//! `[MethodImpl(MethodImplOptions.NoInlining)]`: a caller that inlined it keeps the old code.
//!
//! **Settings** (environment): `REJIT_SWAP_METHOD`, the method as `Namespace.Type::Method`
//! (default `RejitSwapApp.Program::Greeting`; the first method of that name in the first loaded
//! module that has the type); `REJIT_SWAP_TEXT`, the new literal (default
//! `swapped by rejit-swap`); `REJIT_SWAP_LOG`, a file for the log lines, else stderr.
//!
//! **The log**, one line per event, in order: `request <method>: <HRESULT>`,
//! `GetReJITParameters <method>: <n> ldstr replaced`, `ReJITCompilationStarted <method>`,
//! `ReJITCompilationFinished <method>: <HRESULT>`, `ReJITError …`, `revert <method>: <status>`.
//!
//! ```sh
//! cargo build -p rejit-swap
//! LD_LIBRARY_PATH=$PWD/target/debug CORECLR_ENABLE_PROFILING=1 \
//! CORECLR_PROFILER='{4F8E2A6C-1D3B-4C5A-9E7F-0B2D4C6E8A13}' \
//! CORECLR_PROFILER_PATH=$PWD/target/debug/librejit_swap.so scripts/dotnet-run 8 RejitSwap
//! ```

use corprof::il::{Instruction, OpCode, Operand};
use corprof::interfaces::ICorProfilerFunctionControl;
use corprof::rewrite::{self, RewriteError};
use corprof::sig::Token;
use corprof::sync::lock;
use corprof::types::{COR_PRF_MONITOR, CorOpenFlags, FunctionID, ModuleID, ReJITID, mdMethodDef};
use corprof::{CorProfilerCallback, HResult, IUnknown, MetaDataEmit, MetaDataImport, ProfilerInfo, Result};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// The CLSID to give `CORECLR_PROFILER`.
pub const CLSID: corprof::GUID = corprof::GUID::parse("4F8E2A6C-1D3B-4C5A-9E7F-0B2D4C6E8A13");

/// What the exported trigger functions share with the profiler object: the runtime loads the
/// library once, so the app's P/Invoke reaches the same statics.
struct Swap {
    info: ProfilerInfo,
    /// `Namespace.Type::Method`.
    method: String,
    text: String,
    log: Mutex<Option<std::fs::File>>,
    /// The method's module and token, once found by name.
    target: Mutex<Option<(ModuleID, mdMethodDef)>>,
}

static SWAP: OnceLock<Swap> = OnceLock::new();

impl Swap {
    fn say(&self, line: String) {
        match &mut *lock(&self.log) {
            Some(file) => {
                let _ = writeln!(file, "{line}");
            }
            None => eprintln!("rejit-swap: {line}"),
        }
    }

    /// The configured method: the first loaded module whose metadata has the type and a method
    /// of that name.
    fn find_target(&self) -> Result<(ModuleID, mdMethodDef)> {
        let mut target = lock(&self.target);
        if let Some(found) = *target {
            return Ok(found);
        }
        let (type_name, method_name) = self.method.split_once("::").ok_or(HResult::E_INVALIDARG)?;
        for module in self.info.enum_modules()? {
            // Modules without metadata (dynamic ones, say) answer an error: not the one.
            let Ok(import) = self.info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead) else {
                continue;
            };
            let Ok(td) = import.find_type_def_by_name(type_name, 0) else { continue };
            if let Some(md) = import.enum_methods_with_name(td, Some(method_name))?.next() {
                *target = Some((module, md));
                return Ok((module, md));
            }
        }
        Err(HResult::ERROR_NOT_FOUND)
    }

    fn request(&self) -> Result<()> {
        let (module, method) = self.find_target()?;
        let result = self.info.request_rejit(&[module], &[method]);
        self.say(format!("request {}: {}", self.method, result.err().unwrap_or(HResult::S_OK)));
        result
    }

    fn revert(&self) -> Result<()> {
        let (module, method) = self.find_target()?;
        let result = self.info.revert_methods(&[module], &[method]);
        let status = match &result {
            Ok(status) => status.first().copied().unwrap_or(HResult::E_UNEXPECTED),
            Err(hr) => *hr,
        };
        self.say(format!("revert {}: {status}", self.method));
        result.and(status.ok())
    }

    /// Whether `function` is the configured method.
    fn is_target(&self, function: FunctionID) -> bool {
        let target = *lock(&self.target);
        let Ok(f) = self.info.get_function_info(function) else { return false };
        target == Some((f.module_id, f.token))
    }

    /// The method's original body with every `ldstr` loading the new text instead.
    fn swap_body(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        control: &ICorProfilerFunctionControl,
    ) -> std::result::Result<usize, RewriteError> {
        let mut body = self.info.il_body(module, method)?;
        let emit = self.info.get_module_metadata::<MetaDataEmit>(module, CorOpenFlags::ofWrite)?;
        let text = Token(emit.define_user_string(&self.text)?);
        let literals: Vec<_> = body.iter().filter(|(_, ins)| ins.opcode == OpCode::LDSTR).map(|(l, _)| l).collect();
        for label in &literals {
            body.replace(*label, [Instruction { opcode: OpCode::LDSTR, operand: Operand::Token(text) }])?;
        }
        // SAFETY: the body is the method's own IL with each `ldstr` operand replaced by another
        // string token of the same module: every instruction keeps its operand types.
        unsafe { rewrite::set_rejit_body(control, &body)? };
        Ok(literals.len())
    }
}

/// The app's trigger: ReJIT the configured method. Returns the HRESULT (0: requested).
#[unsafe(no_mangle)]
pub extern "C" fn rejit_swap_request() -> i32 {
    trigger(Swap::request)
}

/// The app's trigger: revert the configured method to its original code. Returns the HRESULT
/// (0: reverted).
#[unsafe(no_mangle)]
pub extern "C" fn rejit_swap_revert() -> i32 {
    trigger(Swap::revert)
}

/// Runs a trigger for the app on a thread of the profiler's own, and waits for it.
///
/// RequestReJIT, RequestRevert and the lookups before them are "synchronous" profiling calls:
/// the runtime takes them inside a callback or on a thread it does not manage, and answers
/// `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` on the app's thread, which is in a P/Invoke, not a
/// callback. A thread started here is unknown to the runtime. Joining it also keeps a panic
/// from unwinding into the runtime.
fn trigger(f: fn(&Swap) -> Result<()>) -> i32 {
    let Some(swap) = SWAP.get() else { return HResult::E_UNEXPECTED.0 };
    let worker = std::thread::spawn(move || {
        // Recommended for a profiler's own thread before calls that may suspend the runtime.
        swap.info.initialize_current_thread()?;
        f(swap)
    });
    match worker.join() {
        Ok(Ok(())) => 0,
        Ok(Err(hr)) => hr.0,
        Err(_) => HResult::E_FAIL.0,
    }
}

/// The profiler object; its state is in [`SWAP`], which the trigger functions reach too.
#[derive(Default)]
pub struct RejitSwap;

impl RejitSwap {
    fn swap(&self) -> Result<&'static Swap> {
        SWAP.get().ok_or(HResult::E_UNEXPECTED)
    }
}

impl CorProfilerCallback for RejitSwap {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        // ReJIT enabled here, where every runtime takes it; the ReJIT compilation callbacks come with
        // the JIT ones.
        info.set_event_mask(COR_PRF_MONITOR::ENABLE_REJIT | COR_PRF_MONITOR::JIT_COMPILATION)?;
        let log = match std::env::var_os("REJIT_SWAP_LOG") {
            Some(path) => Some(std::fs::File::create(path).map_err(|_| HResult::E_FAIL)?),
            None => None,
        };
        let swap = Swap {
            info,
            method: std::env::var("REJIT_SWAP_METHOD").unwrap_or_else(|_| "RejitSwapApp.Program::Greeting".into()),
            text: std::env::var("REJIT_SWAP_TEXT").unwrap_or_else(|_| "swapped by rejit-swap".into()),
            log: Mutex::new(log),
            target: Mutex::new(None),
        };
        SWAP.set(swap).map_err(|_| HResult::E_UNEXPECTED)
    }

    fn get_rejit_parameters(
        &self,
        module_id: ModuleID,
        method_id: mdMethodDef,
        function_control: &ICorProfilerFunctionControl,
    ) -> Result<()> {
        let swap = self.swap()?;
        match swap.swap_body(module_id, method_id, function_control) {
            Ok(n) => swap.say(format!("GetReJITParameters {}: {n} ldstr replaced", swap.method)),
            Err(e) => {
                swap.say(format!("GetReJITParameters {}: {e}", swap.method));
                return Err(e.into());
            }
        }
        Ok(())
    }

    fn rejit_compilation_started(&self, function_id: FunctionID, _rejit_id: ReJITID, _safe: bool) -> Result<()> {
        let swap = self.swap()?;
        if swap.is_target(function_id) {
            swap.say(format!("ReJITCompilationStarted {}", swap.method));
        }
        Ok(())
    }

    fn rejit_compilation_finished(
        &self,
        function_id: FunctionID,
        _rejit_id: ReJITID,
        hr_status: HResult,
        _safe: bool,
    ) -> Result<()> {
        let swap = self.swap()?;
        if swap.is_target(function_id) {
            swap.say(format!("ReJITCompilationFinished {}: {hr_status}", swap.method));
        }
        Ok(())
    }

    fn rejit_error(
        &self,
        _module_id: ModuleID,
        method_id: mdMethodDef,
        _function_id: FunctionID,
        hr_status: HResult,
    ) -> Result<()> {
        let swap = self.swap()?;
        swap.say(format!("ReJITError {method_id:#x}: {hr_status}"));
        Ok(())
    }
}

corprof::export_profiler!(RejitSwap, CLSID);
