//! Wrapping methods of the app with handlers written in Rust: each call of a wrapped method
//! runs the handler's [`begin`](Handler::begin) first and its [`end`](Handler::end) however
//! the call ends (a value returned, or an exception thrown), with no managed code of the
//! profiler's and no `unsafe` in the profiler.
//!
//! ```no_run
//! use corprof::instrument::{Handler, Instrumentation, Method, Outcome, Target};
//! use corprof::types::{COR_PRF_MONITOR, ModuleID};
//! use corprof::{CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
//! use std::sync::OnceLock;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! /// Counts the calls of the wrapped methods, and those that threw.
//! #[derive(Default)]
//! struct Count { calls: AtomicU64, threw: AtomicU64 }
//!
//! impl Handler for Count {
//!     fn begin(&self, _: &Method) -> u64 {
//!         self.calls.fetch_add(1, Ordering::Relaxed);
//!         0
//!     }
//!     fn end(&self, _: &Method, _state: u64, outcome: Outcome) {
//!         if outcome == Outcome::Threw {
//!             self.threw.fetch_add(1, Ordering::Relaxed);
//!         }
//!     }
//! }
//!
//! struct Profiler { info: OnceLock<ProfilerInfo>, wrapping: OnceLock<Instrumentation> }
//!
//! impl CorProfilerCallback for Profiler {
//!     fn initialize(&self, unknown: &IUnknown) -> Result<()> {
//!         let info = ProfilerInfo::from_unknown(unknown)?;
//!         info.set_event_mask(Instrumentation::EVENT_MASK)?;
//!         let mut wrapping = Instrumentation::new();
//!         wrapping.wrap(Target::method("Shop.Cart", "Checkout"), Count::default()).map_err(|_| HResult::E_FAIL)?;
//!         let _ = (self.info.set(info), self.wrapping.set(wrapping));
//!         Ok(())
//!     }
//!     fn module_load_finished(&self, module: ModuleID, _status: HResult) -> Result<()> {
//!         if let (Some(info), Some(wrapping)) = (self.info.get(), self.wrapping.get()) {
//!             wrapping.module_load_finished(info, module);
//!         }
//!         Ok(())
//!     }
//! }
//! ```
//!
//! # How
//! When a module loads, [`Instrumentation::module_load_finished`] finds the methods each
//! [`Target`] names in it and gives each a new body before any of it is compiled
//! (`SetILFunctionBody`): the method's own IL inside [`crate::il::Wrapper`]'s shape, whose begin
//! and end code call corprof's two native entry points through `calli` with the method's
//! number. Those look up the [`Method`] and call the handler, catching its panics (a handler
//! that panics is reported once and not called again). The body is checked by
//! [`MethodBody::verify`](crate::il::MethodBody::verify) before the runtime sees it; what the
//! wrapping cannot keep (a body using `jmp`, say) is refused and said in [`decisions`](Instrumentation::decisions),
//! and the method runs as written. Methods with exception regions are never inlined, so a
//! wrapped method runs its wrapper wherever it is called from.
//!
//! # Limits of this version
//! Methods are wrapped as their module loads, so a profiler attached later, and code compiled
//! ahead of time (ReadyToRun, such as the framework's own assemblies), are not wrapped yet:
//! both need ReJIT. Handlers see the method and the returned value when it is a primitive;
//! arguments are not passed yet.
//!
//! # What a handler may do
//! Handlers run on the app's threads, in the middle of its code, as a P/Invoke target would:
//! they may take time and locks of their own, but must not wait for the app (a lock an app
//! thread holds while calling a wrapped method deadlocks). They get no `ProfilerInfo`: the
//! runtime refuses most of its calls from such a place.
//!
//! The registry of handlers and wrapped methods lives as long as the process: wrapped code may
//! run until the very end, so neither handlers nor the library holding the entry points are
//! ever freed (the library is pinned in memory).

use crate::il::{Instruction, MethodBody, OpCode, Operand, WrapError, Wrapper};
use crate::sig::{CallConv, MethodSig, Token, Type};
use crate::types::{COR_PRF_MONITOR, CorOpenFlags, ModuleID, mdMethodDef, mdTypeDef};
use crate::{MetaDataEmit, MetaDataImport, ProfilerInfo};
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// How many handlers a process can register, over every [`Instrumentation`].
pub const MAX_DEFINITIONS: usize = 1024;
/// How many methods a process can wrap.
pub const MAX_METHODS: usize = 1 << 16;

/// Which methods to wrap: a type by its full name and a method name, optionally only in one
/// assembly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    assembly: Option<String>,
    type_name: String,
    method: Option<String>,
}

impl Target {
    /// The methods named `method` (every overload) of the type `type_name`, written as the
    /// runtime names it: `Namespace.Type`, a nested type `Namespace.Outer+Inner`. A method of
    /// `"_"` means every method of the type that has IL.
    pub fn method(type_name: &str, method: &str) -> Target {
        Target { assembly: None, type_name: type_name.to_owned(), method: (method != "_").then(|| method.to_owned()) }
    }

    /// The same methods, only in the assembly of this simple name (`System.Private.CoreLib`,
    /// `Shop`).
    pub fn in_assembly(mut self, name: &str) -> Target {
        self.assembly = Some(name.to_owned());
        self
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(a) = &self.assembly {
            write!(f, "[{a}]")?;
        }
        write!(f, "{}::{}", self.type_name, self.method.as_deref().unwrap_or("_"))
    }
}

/// A registered handler's number, as [`Method::definition`] gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DefinitionId(u32);

impl DefinitionId {
    /// The number, from 0 in the order handlers were registered in the process.
    pub fn index(self) -> u32 {
        self.0
    }
}

/// A wrapped method, as its handler sees it.
#[derive(Debug)]
pub struct Method {
    index: u32,
    definition: DefinitionId,
    name: String,
    returns: ReturnKind,
}

impl Method {
    /// The method's number, from 0 in the order methods were wrapped in the process.
    pub fn index(&self) -> u32 {
        self.index
    }
    /// The handler registration that wrapped it.
    pub fn definition(&self) -> DefinitionId {
        self.definition
    }
    /// `Namespace.Type::Method`.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// How a call of a wrapped method ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// It returned this value.
    Returned(Value),
    /// An exception left it (the caller gets the exception, as without the wrapping).
    Threw,
}

/// A returned value.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// The method returns `void`.
    Void,
    /// `sbyte`, `short`, `int`, `long` or `nint`, widened.
    Int(i64),
    /// `byte`, `ushort`, `uint`, `ulong` or `nuint`, widened.
    UInt(u64),
    /// `bool`.
    Bool(bool),
    /// `char`, a UTF-16 code unit.
    Char(u16),
    /// `float` or `double`, widened.
    Float(f64),
    /// Any other type (objects, structs, references): not passed.
    Other,
}

/// What a wrapped method's return value is, as the end code passes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReturnKind {
    Void,
    Int,
    UInt,
    Bool,
    Char,
    Float,
    Other,
}

impl ReturnKind {
    fn of(ret: &Type) -> ReturnKind {
        let mut ret = ret;
        while let Type::Modified { ty, .. } = ret {
            ret = ty;
        }
        match ret {
            Type::Void => ReturnKind::Void,
            Type::I1 | Type::I2 | Type::I4 | Type::I8 | Type::I => ReturnKind::Int,
            Type::U1 | Type::U2 | Type::U4 | Type::U8 | Type::U => ReturnKind::UInt,
            Type::Boolean => ReturnKind::Bool,
            Type::Char => ReturnKind::Char,
            Type::R4 | Type::R8 => ReturnKind::Float,
            _ => ReturnKind::Other,
        }
    }

    fn value(self, int: i64, float: f64) -> Value {
        match self {
            ReturnKind::Void => Value::Void,
            ReturnKind::Int => Value::Int(int),
            ReturnKind::UInt => Value::UInt(int as u64),
            ReturnKind::Bool => Value::Bool(int != 0),
            ReturnKind::Char => Value::Char(int as u16),
            ReturnKind::Float => Value::Float(float),
            ReturnKind::Other => Value::Other,
        }
    }
}

/// What runs around each call of the methods a [`Target`] names.
///
/// Both methods run on the app's thread, inside the call; see the [module](self) for what they
/// may do. A panic is caught: it is reported on stderr, once, and the handler is not called
/// again (the methods run on, unwrapped in effect).
pub trait Handler: Send + Sync + 'static {
    /// Called first, before the method's own code; returns a state the matching
    /// [`end`](Self::end) receives (a start time, an index into a table of the handler's).
    fn begin(&self, method: &Method) -> u64 {
        let _ = method;
        0
    }
    /// Called last, however the call ended, with what [`begin`](Self::begin) returned (0 when
    /// it panicked).
    fn end(&self, method: &Method, state: u64, outcome: Outcome) {
        let _ = (method, state, outcome);
    }
}

/// A registered handler.
struct Definition {
    handler: Box<dyn Handler>,
    target: String,
    /// Set when the handler panicked: it is not called again.
    off: AtomicBool,
}

/// Everything registered, for the process's life: the entry points find a method by its
/// number with one load, no lock.
struct Registry {
    definitions: Box<[OnceLock<Definition>]>,
    methods: Box<[OnceLock<Method>]>,
    next_definition: AtomicUsize,
    next_method: AtomicUsize,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        definitions: (0..MAX_DEFINITIONS).map(|_| OnceLock::new()).collect(),
        methods: (0..MAX_METHODS).map(|_| OnceLock::new()).collect(),
        next_definition: AtomicUsize::new(0),
        next_method: AtomicUsize::new(0),
    })
}

/// Claims the next free slot of `slots` (counted by `next`) for what `make` makes of its index.
fn claim<T>(slots: &[OnceLock<T>], next: &AtomicUsize, make: impl FnOnce(u32) -> T) -> Option<u32> {
    let index = next.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < slots.len()).then_some(n + 1)).ok()?;
    // The slot was claimed by this call alone, so it is empty.
    let _ = slots[index].set(make(index as u32));
    Some(index as u32)
}

/// The method `index` names, with its definition, if both were registered (the index comes
/// from IL of ours, but is checked like any input).
fn lookup(index: u32) -> Option<(&'static Method, &'static Definition)> {
    let r = registry();
    let method = r.methods.get(index as usize)?.get()?;
    let definition = r.definitions.get(method.definition.0 as usize)?.get()?;
    (!definition.off.load(Ordering::Relaxed)).then_some((method, definition))
}

fn handler_panicked(method: &Method, definition: &Definition, payload: Box<dyn std::any::Any + Send>) {
    if !definition.off.swap(true, Ordering::AcqRel) {
        crate::report::log_panic(
            &format_args!("instrument handler for {} (in {})", definition.target, method.name),
            payload,
            "it is not called again",
        );
    } else {
        crate::report::drop_payload(payload);
    }
}

/// The begin code's native entry point: `uint64 (int32 method)`, cdecl.
extern "C" fn begin_entry(method: u32) -> u64 {
    let Some((m, d)) = lookup(method) else { return 0 };
    match catch_unwind(AssertUnwindSafe(|| d.handler.begin(m))) {
        Ok(state) => state,
        Err(payload) => {
            handler_panicked(m, d, payload);
            0
        }
    }
}

/// The end code's native entry point:
/// `void (int32 method, uint64 state, int32 threw, int64 int, float64 float)`, cdecl.
extern "C" fn end_entry(method: u32, state: u64, threw: i32, int: i64, float: f64) {
    let Some((m, d)) = lookup(method) else { return };
    let outcome = if threw != 0 { Outcome::Threw } else { Outcome::Returned(m.returns.value(int, float)) };
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| d.handler.end(m, state, outcome))) {
        handler_panicked(m, d, payload);
    }
}

/// The entry points' signatures, as `calli` takes them (unmanaged cdecl).
fn begin_sig() -> MethodSig {
    MethodSig {
        call_conv: CallConv(CallConv::C),
        generic_params: 0,
        ret: Type::U8,
        params: vec![Type::I4],
        sentinel: None,
    }
}

fn end_sig() -> MethodSig {
    MethodSig {
        call_conv: CallConv(CallConv::C),
        generic_params: 0,
        ret: Type::Void,
        params: vec![Type::I4, Type::U8, Type::I4, Type::I8, Type::R8],
        sentinel: None,
    }
}

/// Registering more than [`MAX_DEFINITIONS`] handlers in a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyDefinitions;

impl fmt::Display for TooManyDefinitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "more than {MAX_DEFINITIONS} instrumentation handlers in one process")
    }
}

impl std::error::Error for TooManyDefinitions {}

/// What [`Instrumentation::module_load_finished`] did with a method a target named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The method is wrapped from its first call on.
    Wrapped {
        /// `Namespace.Type::Method`.
        method: String,
        /// The target that named it.
        target: String,
    },
    /// The method runs as written, for this reason.
    Refused {
        /// `Namespace.Type::Method`, or the target when no method could be named.
        method: String,
        /// The target that named it.
        target: String,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Wrapped { method, target } => write!(f, "wrapped {method} (target {target})"),
            Decision::Refused { method, target, reason } => {
                write!(f, "not wrapped {method} (target {target}): {reason}")
            }
        }
    }
}

/// The methods to wrap and their handlers; see the [module](self).
#[derive(Default)]
pub struct Instrumentation {
    targets: Vec<(Target, DefinitionId, AtomicBool)>,
    /// Each method wrapped or refused, with the indexes of the targets that named it, the one
    /// whose handler it has first.
    done: Mutex<HashMap<(ModuleID, mdMethodDef), Vec<usize>>>,
    decisions: Mutex<Vec<Decision>>,
}

impl fmt::Debug for Instrumentation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let targets: Vec<&Target> = self.targets.iter().map(|(t, ..)| t).collect();
        f.debug_struct("Instrumentation").field("targets", &targets).finish_non_exhaustive()
    }
}

impl Instrumentation {
    /// The events the runtime must report for [`module_load_finished`](Self::module_load_finished)
    /// to be called: add them to the profiler's mask in `initialize`.
    pub const EVENT_MASK: COR_PRF_MONITOR = COR_PRF_MONITOR::MODULE_LOADS;

    /// No targets yet.
    pub fn new() -> Instrumentation {
        Instrumentation::default()
    }

    /// Wraps the methods `target` names with `handler`, in modules that load from now on.
    /// The handler is kept for the process's life.
    pub fn wrap(&mut self, target: Target, handler: impl Handler) -> Result<DefinitionId, TooManyDefinitions> {
        let r = registry();
        let definition =
            Definition { handler: Box::new(handler), target: target.to_string(), off: AtomicBool::new(false) };
        let id = claim(&r.definitions, &r.next_definition, |_| definition).ok_or(TooManyDefinitions)?;
        let id = DefinitionId(id);
        self.targets.push((target, id, AtomicBool::new(false)));
        Ok(id)
    }

    /// What was wrapped and refused so far, in order.
    pub fn decisions(&self) -> Vec<Decision> {
        self.decisions.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Forgets what was done in `module`: call it from `module_unload_started`, so that a new
    /// module the runtime later gives the same `ModuleID` is wrapped too (without it, such a
    /// module's methods are taken as done and run unwrapped).
    pub fn module_unload_started(&self, module: ModuleID) {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).retain(|(m, _), _| *m != module);
    }

    /// The targets that have named no method in any module loaded so far.
    pub fn unmatched(&self) -> Vec<Target> {
        self.targets.iter().filter(|(_, _, m)| !m.load(Ordering::Relaxed)).map(|(t, ..)| t.clone()).collect()
    }

    fn note(&self, decision: Decision) {
        self.decisions.lock().unwrap_or_else(|p| p.into_inner()).push(decision);
    }

    /// Wraps what the targets name in `module`: call it from `module_load_finished`. Each
    /// method is wrapped once, however often this is called for its module; what was done is
    /// added to [`decisions`](Self::decisions).
    pub fn module_load_finished(&self, info: &ProfilerInfo, module: ModuleID) {
        if self.targets.is_empty() {
            return;
        }
        let assembly = info
            .get_module_info(module)
            .and_then(|m| info.get_assembly_info(m.assembly_id))
            .map(|a| a.name)
            .unwrap_or_default();
        let mut import = None;
        for (t, (target, definition, matched)) in self.targets.iter().enumerate() {
            if target.assembly.as_ref().is_some_and(|a| *a != assembly) {
                continue;
            }
            if import.is_none() {
                match info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead) {
                    Ok(i) => import = Some(i),
                    // A module without metadata (dynamic, resource-only) has nothing to wrap.
                    Err(_) => return,
                }
            }
            let Some(import) = import.as_ref() else { return };
            let Some(type_def) = find_type(import, &target.type_name) else { continue };
            let methods: Vec<mdMethodDef> = match import.enum_methods_with_name(type_def, target.method.as_deref()) {
                Ok(e) => e.collect(),
                Err(_) => continue,
            };
            for method in methods {
                matched.store(true, Ordering::Relaxed);
                let first = {
                    let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
                    match done.get_mut(&(module, method)) {
                        // Asked again for the same module: said already.
                        Some(by) if by.contains(&t) => continue,
                        Some(by) => {
                            by.push(t);
                            Err(format!("target {} named it first: a method gets one handler", self.targets[by[0]].0))
                        }
                        None => {
                            done.insert((module, method), vec![t]);
                            Ok(())
                        }
                    }
                };
                let name = format!(
                    "{}::{}",
                    target.type_name,
                    import.get_method_props(method).map(|p| p.name).unwrap_or_default()
                );
                let decision = match first.and_then(|()| wrap_method(info, import, module, method, *definition, &name))
                {
                    Ok(()) => Decision::Wrapped { method: name, target: target.to_string() },
                    Err(reason) => Decision::Refused { method: name, target: target.to_string(), reason },
                };
                self.note(decision);
            }
        }
    }
}

/// The TypeDef named `Namespace.Outer+Inner` in the module.
fn find_type(import: &MetaDataImport, name: &str) -> Option<mdTypeDef> {
    let mut enclosing = 0;
    for part in name.split('+') {
        enclosing = import.find_type_def_by_name(part, enclosing).ok()?;
    }
    Some(enclosing)
}

/// Copies `len` bytes of metadata at `ptr`.
///
/// # Safety
/// `ptr` is null or points at `len` readable bytes.
unsafe fn copy_blob(ptr: *const u8, len: u32) -> Vec<u8> {
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len as usize) }.to_vec()
}

/// The signature a token of the module's code stands for: a method's or member's for a call
/// (through a MethodSpec to its generic method), a standalone one for `calli`.
fn signature_of(import: &MetaDataImport, token: Token) -> Option<MethodSig> {
    let blob = match token.table() {
        Token::METHOD_DEF => {
            let p = import.get_method_props(token.0).ok()?;
            // SAFETY: GetMethodProps succeeded: the blob is `sig_blob_size` bytes of the
            // module's metadata, alive while `import` is; copied at once.
            unsafe { copy_blob(p.sig_blob, p.sig_blob_size) }
        }
        Token::MEMBER_REF => {
            let p = import.get_member_ref_props(token.0).ok()?;
            // SAFETY: as above, for GetMemberRefProps.
            unsafe { copy_blob(p.sig_blob, p.sig) }
        }
        Token::METHOD_SPEC => {
            let p = import.get_method_spec_props(token.0).ok()?;
            return signature_of(import, Token(p.parent));
        }
        Token::STANDALONE_SIG => {
            let p = import.get_sig_from_token(token.0).ok()?;
            // SAFETY: as above, for GetSigFromToken.
            unsafe { copy_blob(p.sig, p.sig_size) }
        }
        _ => return None,
    };
    MethodSig::decode(&blob).ok()
}

/// Gives `method` its wrapped body; `Err` says why it keeps its own.
fn wrap_method(
    info: &ProfilerInfo,
    import: &MetaDataImport,
    module: ModuleID,
    method: mdMethodDef,
    definition: DefinitionId,
    name: &str,
) -> Result<(), String> {
    let props = import.get_method_props(method).map_err(|e| format!("its metadata: {e}"))?;
    // IL only: not abstract (no RVA), not P/Invoke or runtime-provided (impl flags 0x3, 0x2000).
    if props.code_rva == 0 || props.impl_flags & 0x3 != 0 || props.attr & 0x2000 != 0 {
        return Err("it has no IL body".into());
    }
    // SAFETY: GetMethodProps succeeded: the blob is `sig_blob_size` bytes of the module's
    // metadata, alive while `import` is; copied at once.
    let sig_bytes = unsafe { copy_blob(props.sig_blob, props.sig_blob_size) };
    let sig = MethodSig::decode(&sig_bytes).map_err(|e| format!("its signature: {e}"))?;
    let body = info.il_body(module, method).map_err(|e| format!("its body: {e}"))?;
    let locals = match body.local_var_sig() {
        Some(t) => {
            let p = import.get_sig_from_token(t.0).map_err(|e| format!("its locals: {e}"))?;
            // SAFETY: GetSigFromToken succeeded: `sig_size` bytes of metadata, copied at once.
            Some(unsafe { copy_blob(p.sig, p.sig_size) })
        }
        None => None,
    };
    let emit = info
        .get_module_metadata::<MetaDataEmit>(module, CorOpenFlags::ofWrite)
        .map_err(|e| format!("the module's metadata cannot be written: {e}"))?;
    let sig_token = |s: &MethodSig| -> Result<Token, String> {
        let bytes = s.encode().map_err(|e| e.to_string())?;
        emit.get_token_from_sig(&bytes).map(Token).map_err(|e| format!("a signature token: {e}"))
    };
    let (begin_token, end_token) = (sig_token(&begin_sig())?, sig_token(&end_sig())?);

    let mut wrapper = Wrapper::new(&body, &sig, locals.as_deref()).map_err(|e| e.to_string())?;
    let state = wrapper.add_local(Type::U8).map_err(|e| e.to_string())?;
    let returns = ReturnKind::of(&sig.ret);
    let r = registry();
    let index = claim(&r.methods, &r.next_method, |index| Method { index, definition, name: name.to_owned(), returns })
        .ok_or_else(|| format!("more than {MAX_METHODS} methods wrapped in this process"))?;
    let address = |f: usize| {
        [Instruction { opcode: OpCode::LDC_I8, operand: Operand::I64(f as i64) }, Instruction::simple(OpCode::CONV_I)]
    };
    let mut begin = vec![Instruction::ldc_i4(index as i32)];
    begin.extend(address(begin_entry as extern "C" fn(u32) -> u64 as usize));
    begin.extend([Instruction::token(OpCode::CALLI, begin_token), Instruction::stloc(state)]);
    let mut end = vec![
        Instruction::ldc_i4(index as i32),
        Instruction::ldloc(state),
        Instruction::ldloc(wrapper.exception_local()),
        Instruction::simple(OpCode::LDNULL),
        Instruction::simple(OpCode::CGT_UN),
    ];
    let ret = wrapper.return_local();
    match (returns, ret) {
        (ReturnKind::Int, Some(r)) => end.extend([Instruction::ldloc(r), Instruction::simple(OpCode::CONV_I8)]),
        (ReturnKind::UInt | ReturnKind::Bool | ReturnKind::Char, Some(r)) => {
            end.extend([Instruction::ldloc(r), Instruction::simple(OpCode::CONV_U8)])
        }
        _ => end.push(Instruction { opcode: OpCode::LDC_I8, operand: Operand::I64(0) }),
    }
    match (returns, ret) {
        (ReturnKind::Float, Some(r)) => end.extend([Instruction::ldloc(r), Instruction::simple(OpCode::CONV_R8)]),
        _ => end.push(Instruction { opcode: OpCode::LDC_R8, operand: Operand::F64(0.0) }),
    }
    end.extend(address(end_entry as extern "C" fn(u32, u64, i32, i64, f64) as usize));
    end.push(Instruction::token(OpCode::CALLI, end_token));

    let (begin_sig, end_sig) = (begin_sig(), end_sig());
    let call_sig = |t: Token| {
        if t == begin_token {
            Some(begin_sig.clone())
        } else if t == end_token {
            Some(end_sig.clone())
        } else {
            signature_of(import, t)
        }
    };
    let wrapped = wrapper.finish(begin, end, call_sig).map_err(|e| match e {
        WrapError::Refused(r) => r.to_string(),
        e => e.to_string(),
    })?;
    let locals_token =
        emit.get_token_from_sig(wrapped.locals_signature()).map_err(|e| format!("the locals' token: {e}"))?;
    let body: MethodBody = wrapped.into_body(Token(locals_token));
    // The new code calls into this library for the process's life.
    crate::info_gate::pin_library();
    // SAFETY: the body is the method's own IL inside `Wrapper`'s shape, checked by `verify`
    // (stack, regions, indexes); the added code calls, through `calli` with the module's
    // StandAloneSig tokens for exactly their signatures (unmanaged cdecl), `begin_entry` and
    // `end_entry`, extern "C" functions of this library, which is pinned so the addresses stay
    // valid; it passes them the method's index (checked again by `lookup`), the state local
    // (uint64), `ex != null` (int32) and the return value converted to int64 and float64 as
    // `returns` says; the locals token names the wrapper's local signature, made in this module.
    unsafe { info.set_il_body(module, method, &body) }.map_err(|e| format!("the runtime refused the body: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    /// Counts calls, and panics in `begin` once asked to.
    struct Probe {
        begins: Arc<AtomicU64>,
        ends: Arc<AtomicU64>,
        panic: bool,
    }

    impl Handler for Probe {
        fn begin(&self, _: &Method) -> u64 {
            self.begins.fetch_add(1, Ordering::Relaxed);
            if self.panic {
                panic!("probe");
            }
            7
        }
        fn end(&self, _: &Method, state: u64, outcome: Outcome) {
            assert_eq!((state, outcome), (7, Outcome::Returned(Value::Int(-2))));
            self.ends.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Registers a probe and one method for it, as `wrap_method` would.
    fn registered(panic: bool) -> (u32, Arc<AtomicU64>, Arc<AtomicU64>) {
        let (begins, ends) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut i = Instrumentation::new();
        let probe = Probe { begins: begins.clone(), ends: ends.clone(), panic };
        let definition = i.wrap(Target::method("T", "M"), probe).unwrap();
        let r = registry();
        let index = claim(&r.methods, &r.next_method, |index| Method {
            index,
            definition,
            name: "T::M".into(),
            returns: ReturnKind::Int,
        })
        .unwrap();
        (index, begins, ends)
    }

    #[test]
    fn the_entry_points_reach_the_handler_with_its_state_and_the_value() {
        let (index, begins, ends) = registered(false);
        assert_eq!(begin_entry(index), 7);
        end_entry(index, 7, 0, -2, 0.0);
        assert_eq!((begins.load(Ordering::Relaxed), ends.load(Ordering::Relaxed)), (1, 1));
    }

    #[test]
    fn a_number_no_method_has_reaches_nothing() {
        for index in [u32::MAX, MAX_METHODS as u32, (MAX_METHODS - 1) as u32] {
            assert_eq!(begin_entry(index), 0);
            end_entry(index, 1, 1, 1, 1.0);
        }
    }

    #[test]
    fn a_handler_that_panics_is_not_called_again() {
        crate::report::set_quiet(true);
        let (index, begins, ends) = registered(true);
        assert_eq!(begin_entry(index), 0);
        assert_eq!(begin_entry(index), 0);
        end_entry(index, 7, 0, -2, 0.0);
        assert_eq!((begins.load(Ordering::Relaxed), ends.load(Ordering::Relaxed)), (1, 0));
    }

    #[test]
    fn returned_values_are_read_as_the_signature_says() {
        let cases = [
            (Type::Void, Value::Void),
            (Type::I2, Value::Int(-1)),
            (Type::U8, Value::UInt(u64::MAX)),
            (Type::Boolean, Value::Bool(true)),
            (Type::Char, Value::Char(0xffff)),
            (Type::R4, Value::Float(0.5)),
            (Type::String, Value::Other),
            (
                Type::Modified { required: true, modifier: Token::new(Token::TYPE_REF, 1), ty: Box::new(Type::I4) },
                Value::Int(-1),
            ),
        ];
        for (ty, value) in cases {
            assert_eq!(ReturnKind::of(&ty).value(-1, 0.5), value, "{ty:?}");
        }
    }

    #[test]
    fn targets_print_as_written() {
        assert_eq!(Target::method("A.B+C", "_").to_string(), "A.B+C::_");
        assert_eq!(Target::method("A.B", "M").in_assembly("Shop").to_string(), "[Shop]A.B::M");
    }
}
