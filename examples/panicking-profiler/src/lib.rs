//! panicking-profiler: a profiler that panics, on purpose, in many callbacks.
//!
//! It shows (and the end-to-end tests check) that corprof catches every panic at the FFI
//! boundary, logs it as `corprof: callback <Name> panicked: <msg>; returned E_FAIL to the
//! runtime` on stderr, and hands `E_FAIL` to the runtime instead of unwinding into it — whatever
//! the payload: a string literal, a formatted `String`, a non-string value, a payload whose own
//! `Drop` panics with another such payload, a `resume_unwind` (no panic hook), or an ordinary
//! bug (index out of bounds, division by zero, `unwrap` on an `Err`). Its panic hook prints each
//! panic as one `panicking-profiler: panic at <file:line>: <msg>` line (see `log_panic`).
//!
//! Load it with `CORECLR_ENABLE_PROFILING=1`, `CORECLR_PROFILER={CLSID}` and
//! `CORECLR_PROFILER_PATH=…/libpanicking_profiler.so`. Settings:
//! - `CORPROF_PANICS_OUT`: where Shutdown writes `<CallbackName> <panics>` lines, one per callback
//!   that panicked at least once (default: stderr). Shutdown itself never panics.
//! - `PANICKY_INIT_FAIL=1`: Initialize returns `E_FAIL` instead, so the runtime drops the profiler
//!   and runs the program without it; `PANICKY_INIT_FAIL=0x80131374` (any HRESULT in hex) returns
//!   that code.
//! - `PANICKY_DROP_PANIC=1`: the profiler's `Drop` panics too, when the runtime releases it (at
//!   shutdown, or right after a failed Initialize). corprof logs it as `corprof: drop of
//!   panicking_profiler::Panicker panicked: …` and frees the object; the app must not notice.

use corprof::LiveObject;
use corprof::types::{AssemblyID, BOOL, COR_PRF_GC_REASON, COR_PRF_MONITOR, ClassID, FunctionID, ModuleID, ThreadID};
use corprof::{Callback, CallbackCounts, CorProfilerCallback, HResult, IUnknown, Out, ProfilerInfo, Result};
use std::hint::black_box;
use std::io::Write;
use std::sync::Once;

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("A3ACAAE4-6124-487E-9CF5-68F88E605DFA");

/// JIT compilation, exceptions, class, module and assembly loads, threads and GC.
pub const MASK: COR_PRF_MONITOR = COR_PRF_MONITOR::JIT_COMPILATION
    .union(COR_PRF_MONITOR::EXCEPTIONS)
    .union(COR_PRF_MONITOR::CLASS_LOADS)
    .union(COR_PRF_MONITOR::MODULE_LOADS)
    .union(COR_PRF_MONITOR::ASSEMBLY_LOADS)
    .union(COR_PRF_MONITOR::THREADS)
    .union(COR_PRF_MONITOR::GC);

/// The callbacks this profiler panics in, every time the runtime calls them.
pub const PANICKING: &[Callback] = &[
    Callback::JITCompilationStarted,
    Callback::JITInlining,
    Callback::ClassLoadFinished,
    Callback::ModuleLoadFinished,
    Callback::AssemblyLoadFinished,
    Callback::ThreadCreated,
    Callback::ExceptionThrown,
    Callback::ExceptionCatcherEnter,
    Callback::GarbageCollectionStarted,
    Callback::ObjectReferences,
];

/// The non-string payload `ExceptionThrown` panics with.
pub const EXCEPTION_PAYLOAD: u32 = 42;

/// A panic payload whose `Drop` panics too, in a chain: `DropBomb(n)` panics with `DropBomb(n - 1)`
/// and `DropBomb(0)` with a message. The library must drop every payload of the chain without
/// letting any of those panics unwind into the runtime (or abort the process).
struct DropBomb(u32);

impl Drop for DropBomb {
    fn drop(&mut self) {
        match self.0 {
            0 => panic!("DropBomb: the panic payload panicked while being dropped"),
            n => std::panic::panic_any(DropBomb(n - 1)),
        }
    }
}

/// The panic hook this profiler installs: one line per panic, written under the stderr lock.
///
/// Rust's default hook writes its report in several pieces to an unlocked stderr, so with
/// panics on several threads at once (the runtime JIT-compiles on background threads too) its
/// text can land in the middle of corprof's `corprof: callback … panicked` line. Taking the
/// lock serializes it with corprof's `eprintln!`, which takes the same lock: every line stays
/// whole.
fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let msg = info.payload_as_str().unwrap_or("(non-string payload)");
    let line = match info.location() {
        Some(at) => format!("panicking-profiler: panic at {at}: {msg}\n"),
        None => format!("panicking-profiler: panic: {msg}\n"),
    };
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// The message `Drop` panics with under `PANICKY_DROP_PANIC=1`.
pub const DROP_PANIC_MESSAGE: &str = "Panicker dropped with PANICKY_DROP_PANIC=1";

/// One panic counter per callback.
#[derive(Default)]
pub struct Panicker {
    panics: CallbackCounts,
    /// `PANICKY_DROP_PANIC=1`.
    panic_in_drop: bool,
}

impl Drop for Panicker {
    fn drop(&mut self) {
        if self.panic_in_drop {
            panic!("{DROP_PANIC_MESSAGE}");
        }
    }
}

/// `PANICKY_INIT_FAIL` as the HRESULT Initialize returns: `1` for `E_FAIL`, or a code in hex.
fn init_failure() -> Option<(String, HResult)> {
    let v = std::env::var("PANICKY_INIT_FAIL").ok()?;
    let hr = if v == "1" {
        HResult::E_FAIL
    } else {
        // Anything else that is not `0x` + hex fails with E_INVALIDARG, so a typo still shows.
        let code = v.strip_prefix("0x").and_then(|hex| u32::from_str_radix(hex, 16).ok());
        code.map_or(HResult::E_INVALIDARG, |c| HResult(c as i32))
    };
    Some((v, hr))
}

impl Panicker {
    /// The profiler the runtime gets: settings from the environment, and the one-line panic hook
    /// installed before anything can panic (`Drop` included).
    pub fn from_env() -> Panicker {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| std::panic::set_hook(Box::new(log_panic)));
        Panicker {
            panics: CallbackCounts::default(),
            panic_in_drop: std::env::var_os("PANICKY_DROP_PANIC").is_some_and(|v| v == "1"),
        }
    }

    /// Counts a panic about to be raised in `callback`; call it right before panicking.
    fn arm(&self, callback: Callback) {
        self.panics.bump(callback);
    }

    /// `(callback, panics)` for every callback that panicked, in vtable order.
    pub fn raised(&self) -> Vec<(Callback, u64)> {
        self.panics.nonzero()
    }
}

impl CorProfilerCallback for Panicker {
    fn initialize(&self, info: &IUnknown) -> Result<()> {
        if let Some((setting, hr)) = init_failure() {
            eprintln!("panicking-profiler: PANICKY_INIT_FAIL={setting}, failing Initialize with {hr}");
            return Err(hr);
        }
        ProfilerInfo::from_unknown(info)?.set_event_mask(MASK)
    }

    fn shutdown(&self) -> Result<()> {
        self.panics.write_to_env_file("CORPROF_PANICS_OUT").map_err(|e| {
            eprintln!("panicking-profiler: cannot write the panic counts: {e}");
            HResult::E_FAIL
        })
    }

    /// A `&'static str` payload.
    fn jit_compilation_started(&self, _function_id: FunctionID, _safe: bool) -> Result<()> {
        self.arm(Callback::JITCompilationStarted);
        panic!("JITCompilationStarted always panics in this profiler");
    }

    /// Panics before writing its `[out]` parameter.
    fn jit_inlining(
        &self,
        _caller_id: FunctionID,
        _callee_id: FunctionID,
        _should_inline: Out<'_, bool>,
    ) -> Result<()> {
        self.arm(Callback::JITInlining);
        panic!("JITInlining panics before writing pfShouldInline");
    }

    /// A formatted `String` payload.
    fn class_load_finished(&self, class_id: ClassID, hr_status: HResult) -> Result<()> {
        self.arm(Callback::ClassLoadFinished);
        panic!("class {class_id:#x} finished loading with {hr_status}, and that is a panic");
    }

    /// An index out of bounds.
    fn module_load_finished(&self, module_id: ModuleID, _hr_status: HResult) -> Result<()> {
        let table = [0usize; 4];
        self.arm(Callback::ModuleLoadFinished);
        black_box(table[black_box(table.len() + module_id.as_raw() % 4)]);
        Ok(())
    }

    /// A division by zero (panics in release builds too).
    fn assembly_load_finished(&self, assembly_id: AssemblyID, _hr_status: HResult) -> Result<()> {
        self.arm(Callback::AssemblyLoadFinished);
        black_box(assembly_id.as_raw() / black_box(0));
        Ok(())
    }

    /// A non-string payload whose `Drop` panics as well, three times over.
    fn thread_created(&self, _thread_id: ThreadID) -> Result<()> {
        self.arm(Callback::ThreadCreated);
        std::panic::panic_any(DropBomb(2));
    }

    /// A non-string payload: the library logs `(non-string panic payload)`.
    fn exception_thrown(&self, _thrown_object_id: LiveObject<'_>) -> Result<()> {
        self.arm(Callback::ExceptionThrown);
        std::panic::panic_any(EXCEPTION_PAYLOAD);
    }

    /// `unwrap` on an `Err`.
    fn exception_catcher_enter(&self, _function_id: FunctionID, _object_id: LiveObject<'_>) -> Result<()> {
        self.arm(Callback::ExceptionCatcherEnter);
        black_box(black_box("forty-two").parse::<u32>().unwrap());
        Ok(())
    }

    /// `resume_unwind`: unwinds without running the panic hook (nothing printed but corprof's line).
    fn garbage_collection_started(&self, generation_collected: &[BOOL], reason: COR_PRF_GC_REASON) -> Result<()> {
        self.arm(Callback::GarbageCollectionStarted);
        let collected = generation_collected.iter().filter(|g| **g != 0).count();
        std::panic::resume_unwind(Box::new(format!(
            "GC (reason {reason}) of {collected} of {} generations resumed an unwind",
            generation_collected.len()
        )));
    }

    /// Called for every live object of a heap walk after each GC.
    fn object_references(
        &self,
        _object_id: LiveObject<'_>,
        _class_id: ClassID,
        object_ref_ids: &[LiveObject<'_>],
    ) -> Result<()> {
        self.arm(Callback::ObjectReferences);
        panic!("ObjectReferences: object with {} references", object_ref_ids.len());
    }
}

corprof::export_profiler!(Panicker, CLSID, Panicker::from_env);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_are_counted_per_callback() {
        let p = Panicker::default();
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = std::panic::catch_unwind(|| p.exception_thrown(LiveObject::NULL));
        let payload = r.expect_err("exception_thrown must panic");
        assert_eq!(payload.downcast_ref::<u32>(), Some(&EXCEPTION_PAYLOAD));
        assert!(std::panic::catch_unwind(|| p.jit_compilation_started(FunctionID::NULL, true)).is_err());
        assert!(std::panic::catch_unwind(|| p.jit_compilation_started(FunctionID::NULL, false)).is_err());
        std::panic::set_hook(hook);
        assert_eq!(p.raised(), vec![(Callback::JITCompilationStarted, 2), (Callback::ExceptionThrown, 1)]);
    }
}
