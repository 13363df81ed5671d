//! elt-tracer: counts, per method, the calls that enter it, leave it normally, leave it through a
//! tail call and leave it by an exception unwinding out of it, through corprof's function hooks
//! ([`corprof::FunctionHooks`]) — without a line of `unsafe`.
//!
//! Load with `CORECLR_PROFILER={D1E5A2C7-6B3F-4E81-9C0D-7A2B4E6F8135}`. Settings:
//!
//! - `CORPROF_ELT_MODE=fast|info` (fast by default): the hook mode. In `info` mode the first call
//!   of each hooked method whose parameters and return are all primitive also gives a line
//!   `ARGS <Namespace.Type::Method>(<arg>, …) = <return>` (`= void` for void methods).
//! - `CORPROF_ELT_FILTER=<prefix>`: hook only the methods whose type's full name starts with
//!   the prefix (the mapper declines the others, which then cost nothing).
//! - `CORPROF_ELT_OUT=<file>`: where the lines go at Shutdown (else stderr): one
//!   `<Namespace.Type::Method> <enters> <leaves> <tailcalls> <unwinds>` per method name with
//!   calls, sorted (overloads and generic instantiations of a name are summed), then the `ARGS`
//!   lines, sorted.
//! - `CORPROF_ELT_PANIC=enter|leave|tailcall|mapper`: that hook panics on every call (after
//!   counting), to show that corprof catches it and the call proceeds.
#![deny(unsafe_code)]

use corprof::hooks::{self, HookFrame, HookTable, MethodSignature};
use corprof::types::{COR_PRF_MONITOR, CorOpenFlags, FunctionID, mdTypeDef};
use corprof::{CorProfilerCallback, FunctionHooks, HResult, HookMode, IUnknown, MetaDataImport, ProfilerInfo, Result};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("D1E5A2C7-6B3F-4E81-9C0D-7A2B4E6F8135");

/// What a hooked function's hooks update: the mapper's client data is its index in [`Table`].
struct Entry {
    name: String,
    enters: AtomicU64,
    leaves: AtomicU64,
    tailcalls: AtomicU64,
    unwinds: AtomicU64,
    /// The signature, when its parameters and return are all primitive (info mode only).
    primitive_sig: Option<MethodSignature>,
    /// Whether a call already took this method's `ARGS` line.
    args_taken: AtomicBool,
}

/// A hooked call on this thread's stack (info mode): the entry, and the `ARGS` text of its
/// arguments when this call takes the method's line.
struct Call {
    index: usize,
    args: Option<String>,
}

thread_local! {
    /// Info mode: the hooked calls in progress, innermost last.
    static CALLS: RefCell<Vec<Call>> = const { RefCell::new(Vec::new()) };
    /// The functions an exception is unwinding on this thread, innermost last: their entry
    /// index when hooked.
    static UNWINDING: RefCell<Vec<Option<usize>>> = const { RefCell::new(Vec::new()) };
}

pub struct EltTracer {
    info: OnceLock<ProfilerInfo>,
    mode: HookMode,
    filter: Option<String>,
    panic_in: Option<String>,
    table: HookTable<Entry>,
    /// FunctionID → entry, for the unwind callbacks (which name a function, not client data).
    by_function: Mutex<HashMap<FunctionID, usize>>,
    args_lines: Mutex<Vec<String>>,
}

impl Default for EltTracer {
    fn default() -> Self {
        let mode = match std::env::var("CORPROF_ELT_MODE").as_deref() {
            Ok("info") => HookMode::WithInfo,
            _ => HookMode::Fast,
        };
        EltTracer {
            info: OnceLock::new(),
            mode,
            filter: std::env::var("CORPROF_ELT_FILTER").ok().filter(|f| !f.is_empty()),
            panic_in: std::env::var("CORPROF_ELT_PANIC").ok(),
            table: HookTable::default(),
            by_function: Mutex::new(HashMap::new()),
            args_lines: Mutex::new(Vec::new()),
        }
    }
}

/// The full name of a type definition: `Namespace.Outer+Inner`.
fn type_name(import: &MetaDataImport, td: mdTypeDef) -> Result<String> {
    corprof::sig::type_path(import, corprof::sig::Token(td)).ok_or(HResult::CLDB_E_RECORD_NOTFOUND)
}

impl EltTracer {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(HResult::E_UNEXPECTED)
    }

    fn maybe_panic(&self, hook: &str) {
        if self.panic_in.as_deref() == Some(hook) {
            panic!("elt-tracer: {hook} panics as asked");
        }
    }

    /// The type's full name, the method's name and (in info mode) its signature.
    fn describe(&self, function: FunctionID) -> Result<(String, String, Option<MethodSignature>)> {
        let info = self.info()?;
        let f = info.get_function_info(function)?;
        let import = info.get_module_metadata::<MetaDataImport>(f.module_id, CorOpenFlags::ofRead)?;
        let method = import.get_method_props(f.token)?;
        let ty = type_name(&import, method.class)?;
        let sig = match self.mode {
            HookMode::WithInfo => Some(MethodSignature::of_function(info, function)?),
            HookMode::Fast => None,
        };
        Ok((ty, method.name, sig))
    }

    fn count(&self, index: usize, pick: fn(&Entry) -> &AtomicU64) {
        if let Some(entry) = self.table.get(index) {
            pick(entry).fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Info mode, leave or unwind: pops this thread's innermost call; a call that took its
    /// method's `ARGS` line records it with `ret` (`None` after an unwind: no line then).
    fn pop_call(&self, ret: Option<String>) {
        let Some(call) = CALLS.with(|c| c.borrow_mut().pop()) else { return };
        if let (Some(args), Some(ret), Some(entry)) = (call.args, ret, self.table.get(call.index)) {
            self.args_lines.lock().unwrap().push(format!("ARGS {}({args}) = {ret}", entry.name));
        }
    }

    fn write_report(&self) -> std::io::Result<()> {
        let mut sums: BTreeMap<&str, [u64; 4]> = BTreeMap::new();
        for e in self.table.iter() {
            let counts = [&e.enters, &e.leaves, &e.tailcalls, &e.unwinds].map(|c| c.load(Ordering::Relaxed));
            if counts.iter().any(|&c| c > 0) {
                let sum = sums.entry(&e.name).or_default();
                for (s, c) in sum.iter_mut().zip(counts) {
                    *s += c;
                }
            }
        }
        let mut text = String::new();
        for (name, [enters, leaves, tailcalls, unwinds]) in sums {
            text.push_str(&format!("{name} {enters} {leaves} {tailcalls} {unwinds}\n"));
        }
        let mut args = self.args_lines.lock().unwrap().clone();
        args.sort();
        for line in args {
            text.push_str(&line);
            text.push('\n');
        }
        match std::env::var_os("CORPROF_ELT_OUT") {
            Some(path) => corprof::files::write_regular(path.as_ref(), text.as_bytes()),
            None => std::io::stderr().lock().write_all(text.as_bytes()),
        }
    }
}

impl FunctionHooks for EltTracer {
    type Data = usize;

    fn map_function(&self, function: FunctionID) -> Option<usize> {
        self.maybe_panic("mapper");
        let (ty, method, sig) = self.describe(function).ok()?;
        if self.filter.as_deref().is_some_and(|prefix| !ty.starts_with(prefix)) {
            return None;
        }
        let primitive_sig = sig.filter(|s| {
            s.params().iter().all(|p| p.is_primitive())
                && (s.return_type().is_primitive() || s.return_type() == hooks::ElementType::Void)
        });
        let entry = Entry {
            name: format!("{ty}::{method}"),
            enters: AtomicU64::new(0),
            leaves: AtomicU64::new(0),
            tailcalls: AtomicU64::new(0),
            unwinds: AtomicU64::new(0),
            primitive_sig,
            args_taken: AtomicBool::new(false),
        };
        let index = self.table.push(entry)?;
        self.by_function.lock().unwrap().insert(function, index);
        Some(index)
    }

    fn enter(&self, index: usize, frame: &HookFrame<'_>) {
        self.count(index, |e| &e.enters);
        if self.mode == HookMode::WithInfo {
            let args = self.table.get(index).and_then(|entry| {
                let sig = entry.primitive_sig.as_ref()?;
                if entry.args_taken.swap(true, Ordering::Relaxed) {
                    return None;
                }
                let values = frame.arguments().ok()?.values(sig);
                let text: Option<Vec<String>> = values.iter().map(|v| v.map(|v| v.to_string())).collect();
                Some(text.unwrap_or_else(|| vec!["?".to_string()]).join(", "))
            });
            CALLS.with(|c| c.borrow_mut().push(Call { index, args }));
        }
        self.maybe_panic("enter");
    }

    fn leave(&self, index: usize, frame: &HookFrame<'_>) {
        self.count(index, |e| &e.leaves);
        if self.mode == HookMode::WithInfo {
            let ret = self.table.get(index).and_then(|e| e.primitive_sig.as_ref()).map(|sig| {
                if sig.return_type() == hooks::ElementType::Void {
                    "void".to_string()
                } else {
                    match frame.return_value_as(sig) {
                        Ok(Some(v)) => v.to_string(),
                        _ => "?".to_string(),
                    }
                }
            });
            self.pop_call(ret);
        }
        self.maybe_panic("leave");
    }

    fn tailcall(&self, index: usize, _frame: &HookFrame<'_>) {
        self.count(index, |e| &e.tailcalls);
        if self.mode == HookMode::WithInfo {
            self.pop_call(None);
        }
        self.maybe_panic("tailcall");
    }
}

impl CorProfilerCallback for EltTracer {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::EXCEPTIONS)?;
        let info = self.info.get_or_init(|| info);
        hooks::install(self, info, self.mode)
    }

    fn exception_unwind_function_enter(&self, function_id: FunctionID) -> Result<()> {
        let index = self.by_function.lock().unwrap().get(&function_id).copied();
        UNWINDING.with(|u| u.borrow_mut().push(index));
        Ok(())
    }

    fn exception_unwind_function_leave(&self) -> Result<()> {
        if let Some(Some(index)) = UNWINDING.with(|u| u.borrow_mut().pop()) {
            self.count(index, |e| &e.unwinds);
            if self.mode == HookMode::WithInfo {
                self.pop_call(None);
            }
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Err(e) = self.write_report() {
            eprintln!("elt-tracer: cannot write the report: {e}");
        }
        Ok(())
    }
}

corprof::export_profiler!(EltTracer, CLSID);
