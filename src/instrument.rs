//! Wrapping methods of the app with handlers written in Rust: each call of a wrapped method
//! runs the handler's [`begin`](Handler::begin) first and its [`end`](Handler::end) however
//! the call ends (a value returned, or an exception thrown), with no managed code of the
//! profiler's and no `unsafe` in the profiler.
//!
//! ```no_run
//! use corprof::instrument::{Call, Handler, Instrumentation, Method, Outcome, Target};
//! use corprof::types::COR_PRF_MONITOR;
//! use corprof::{CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! /// Counts the calls of the wrapped methods, and those that threw.
//! #[derive(Default)]
//! struct Count { calls: AtomicU64, threw: AtomicU64 }
//!
//! impl Handler for Count {
//!     fn begin(&self, _: &Call<'_>) -> u64 {
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
//! struct Profiler;
//!
//! impl CorProfilerCallback for Profiler {
//!     fn initialize(&self, unknown: &IUnknown) -> Result<()> {
//!         let info = ProfilerInfo::from_unknown(unknown)?;
//!         info.set_event_mask(COR_PRF_MONITOR::NONE)?;
//!         let mut wrapping = Instrumentation::new();
//!         wrapping.wrap(Target::method("Shop.Cart", "Checkout"), Count::default()).map_err(|_| HResult::E_FAIL)?;
//!         wrapping.start(&info).map_err(|_| HResult::E_FAIL)?;
//!         Ok(())
//!     }
//! }
//! ```
//!
//! # How
//! From [`Instrumentation::start`] on, corprof sees every module load (it keeps those
//! callbacks for itself, whatever the profiler's mask) and finds in it the methods each
//! [`Target`] names. A method of a module whose code the JIT compiles gets its new body at once,
//! before any of it is compiled (`SetILFunctionBody`); one of precompiled (ReadyToRun) code, or
//! of a module loaded before `start` (a profiler attached to a running app), through ReJIT,
//! requested from a thread of corprof's own, whose `GetReJITParameters` corprof answers itself
//! (the profiler's `get_rejit_parameters` sees only the ReJITs it asked for). The new body is the
//! method's own IL inside [`crate::il::Wrapper`]'s shape, whose begin and end code call
//! corprof's two native entry points through `calli` with the method's number. Those look up the
//! [`Method`] and call the handler, catching its panics (a handler that panics is reported once
//! and not called again). The body is checked by
//! [`MethodBody::verify`](crate::il::MethodBody::verify) before the runtime sees it; what the
//! wrapping cannot keep (a body using `jmp`, say) is refused and said in
//! [`decisions`](Instrumentation::decisions), and the method runs as written. Methods with
//! exception regions are never inlined, so a wrapped method runs its wrapper wherever it is
//! called from; the methods that inlined one before its ReJIT are compiled again with it
//! (`RequestReJITWithInliners`, .NET 8).
//!
//! # Modules loaded before start
//! Wrapping a method adds a few rows and signatures to its module's metadata. CoreCLR keeps a
//! module's writable metadata in a small form until a row number passes 2047 or a heap offset
//! 32767; the next write then rebuilds every table and frees the old ones, which the runtime's
//! own threads may be reading without a lock at that moment (dotnet/runtime#127957; seen as a
//! rare crash in CoreLib's signature reader on CoreCLR 8.0.4). For a module loading after
//! `start` corprof makes that rebuild happen while the module loads, when nothing else reads it.
//! For a module loaded before `start`, whose code may be running, corprof wraps methods only
//! while its additions keep the metadata in the small form (the module file's largest table and
//! heap, and each method's signature and locals, counted with a margin: a small app module
//! takes about a hundred methods), and refuses the others with the reason — CoreLib's and most
//! of the framework's at once. [`Instrumentation::allow_growing_loaded_metadata`] lifts that
//! limit for a profiler that takes the risk.
//!
//! # Handlers in C#
//! [`Instrumentation::wrap_managed`] wraps methods with a [`ManagedHandler`] instead: a C# class
//! with static `OnMethodBegin`/`OnMethodEnd` (the CallTarget contract: `CallTargetState`,
//! `CallTargetReturn<T>`, in corprof's `Corprof.Instrumentation.dll`, which
//! [`Instrumentation::managed_invoker`] locates). The assemblies are loaded by startup code
//! corprof puts into the `<Module>..cctor` of the modules that load first (after an attach,
//! before the own code of the methods to wrap, through a first ReJIT), and the methods are
//! wrapped through ReJIT once it ran; a handler with an `OnAsyncMethodEnd` sees a returned
//! `Task`'s completion too. See `docs/guide/instrumentation.md` for the contract and what is
//! refused.
//!
//! # `async` methods
//! A method returning a task ends, by default, when it returns the task. A handler whose
//! [`Handler::ends_when_task_completes`] says `true` ends such methods when their task
//! completes, with its result or [`Outcome::Threw`], through a continuation that
//! `Corprof.Instrumentation` registers (so it needs [`Instrumentation::managed_invoker`], and the
//! methods are wrapped once the startup has loaded that assembly); see the trait method.
//!
//! # Limits of this version
//! Handlers see primitive arguments and return values; objects are not passed. A method wrapped
//! through ReJIT runs unwrapped until its request is made
//! ([`pending_rejit_requests`](Instrumentation::pending_rejit_requests)), and on runtimes before
//! .NET 8, where the inliners cannot be asked for with it, precompiled code that inlined it stays
//! as it is. [`Instrumentation::revert`] takes the whole wrapping back.
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
use crate::sig::runtime::copy_blob;
use crate::sig::{CallConv, MethodSig, Token, Type};
use crate::sync::lock;
use crate::types::{COR_PRF_MODULE_FLAGS, COR_PRF_MONITOR, CorOpenFlags, ModuleID, mdMethodDef, mdTypeDef};
use crate::{HResult, MetaDataEmit, MetaDataImport, ProfilerInfo};
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

mod managed;
pub use managed::{
    INVOKER_ASSEMBLY, MAX_ASSEMBLY_BYTES, MAX_MANAGED_ARGUMENTS, MAX_MANAGED_HANDLERS, ManagedError, ManagedHandler,
};

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
    /// runtime names it: `Namespace.Type`, a nested type `Namespace.Outer+Inner`, a generic
    /// type with its arity, `Namespace.Box`1`. A method of `"_"` means every method of the type
    /// that has IL. A `*` in either stands for any run of characters (`Shop.*`, `Get*`): such a
    /// type pattern is matched against every type of every module that loads (each type's name
    /// read once per module), an exact name is looked up.
    pub fn method(type_name: &str, method: &str) -> Target {
        Target {
            assembly: None,
            type_name: type_name.to_owned(),
            method: (method != "_" && method != "*").then(|| method.to_owned()),
        }
    }

    /// A target written `Namespace.Type::Method`, with [`method`](Self::method)'s names and
    /// wildcards (`Shop.*::Get*`, `Shop.Cart::_`).
    pub fn parse(text: &str) -> Result<Target, PatternError> {
        let bad = |why: &str| {
            PatternError(format!("{text:?} {why}: write Namespace.Type::Method (`*` for any run of characters)"))
        };
        let (type_name, method) = text.rsplit_once("::").ok_or_else(|| bad("has no `::`"))?;
        if type_name.is_empty() || method.is_empty() {
            return Err(bad("names no type or no method"));
        }
        if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad("holds a space or control character"));
        }
        Ok(Target::method(type_name, method))
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

/// A target text [`Target::parse`] cannot read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError(String);

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PatternError {}

/// Whether `text` is `pattern`, where `*` stands for any run of characters (none included).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    // The last `*` seen, and where in `text` its run now ends.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((s, end)) = star {
            // The `*` takes one more character.
            pi = s + 1;
            ti = end + 1;
            star = Some((s, end + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
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
    returns: Kind,
    /// The arguments' kinds, `this` first for an instance method.
    args: Vec<Kind>,
    /// Whether the entry points are called without the GC transition.
    no_transition: bool,
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
    /// Whether its handler is called without the transition to preemptive mode (a handler
    /// that does not [block](Handler::may_block), on a runtime that has `SuppressGCTransition`).
    pub fn without_gc_transition(&self) -> bool {
        self.no_transition
    }
}

/// How a call of a wrapped method ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// It returned this value.
    Returned(CallValue),
    /// An exception left it (the caller gets the exception, as without the wrapping).
    Threw,
}

/// An argument or return value of a wrapped call ([`Call::arguments`], [`Outcome::Returned`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum CallValue {
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

/// The name [`CallValue`] had before (CHANGELOG.md).
#[doc(hidden)]
#[deprecated(note = "renamed `CallValue`")]
pub type Value = CallValue;

/// What a wrapped method's return value or argument is, as the IL passes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Void,
    Int,
    UInt,
    Bool,
    Char,
    Float,
    Other,
}

impl Kind {
    fn of(ret: &Type) -> Kind {
        let mut ret = ret;
        while let Type::Modified { ty, .. } = ret {
            ret = ty;
        }
        match ret {
            Type::Void => Kind::Void,
            Type::I1 | Type::I2 | Type::I4 | Type::I8 | Type::I => Kind::Int,
            Type::U1 | Type::U2 | Type::U4 | Type::U8 | Type::U => Kind::UInt,
            Type::Boolean => Kind::Bool,
            Type::Char => Kind::Char,
            Type::R4 | Type::R8 => Kind::Float,
            _ => Kind::Other,
        }
    }

    fn value(self, int: i64, float: f64) -> CallValue {
        match self {
            Kind::Void => CallValue::Void,
            Kind::Int => CallValue::Int(int),
            Kind::UInt => CallValue::UInt(int as u64),
            Kind::Bool => CallValue::Bool(int != 0),
            Kind::Char => CallValue::Char(int as u16),
            Kind::Float => CallValue::Float(float),
            Kind::Other => CallValue::Other,
        }
    }
}

/// One call of a wrapped method, as [`Handler::begin`] sees it.
#[derive(Debug)]
pub struct Call<'a> {
    method: &'a Method,
    args: &'a [CallValue],
}

impl Call<'_> {
    /// The method called.
    pub fn method(&self) -> &Method {
        self.method
    }
    /// The arguments as they came in, `this` first for an instance method (as
    /// [`CallValue::Other`]), when the handler [wants them](Handler::wants_arguments); else empty.
    /// Primitives are passed widened, as return values are; anything else, `ref` and `out`
    /// arguments included, is [`CallValue::Other`].
    pub fn arguments(&self) -> &[CallValue] {
        self.args
    }
}

/// What runs around each call of the methods a [`Target`] names.
///
/// Both methods run on the app's thread, inside the call (but `end` of a task-returning method
/// whose handler [ends at the task's completion](Self::ends_when_task_completes), on the thread
/// that completes the task); see the [module](self) for what they
/// may do. A panic is caught: it is reported on stderr, once, and the handler is not called
/// again (the methods run on, unwrapped in effect).
pub trait Handler: Send + Sync + 'static {
    /// Whether [`begin`](Self::begin) gets the arguments ([`Call::arguments`]): asked once,
    /// when the handler is registered. Passing them costs each call a few nanoseconds more.
    fn wants_arguments(&self) -> bool {
        false
    }
    /// Whether the handler may block: wait for a lock another thread may hold while it waits
    /// for the runtime (a GC, a ReJIT request, a runtime suspension), or for I/O. Asked once,
    /// when the handler is registered. A handler that says `false` is called, on runtimes that
    /// have it (.NET 5+), without the transition to preemptive mode and back
    /// (`SuppressGCTransition`): cheaper, but it then runs in cooperative mode, so a GC waits for
    /// it to return; if it waited for a thread that waits for that GC, the app would hang.
    fn may_block(&self) -> bool {
        true
    }
    /// Whether [`end`](Self::end) of a method returning a task (`System.Threading.Tasks.Task`
    /// or `Task<T>`) waits for the task to complete, instead of running when the method returns
    /// it: asked once, when the handler is registered; other methods end at their return either
    /// way.
    ///
    /// When `true`, such a method's `end` runs once its task completes, on the thread that
    /// completes it (or at the return, on the caller's, when it completed already): with
    /// [`Outcome::Returned`] and the result for a task that ran to completion (`CallValue::Void`
    /// for `Task`, the value of a primitive `T`, else `CallValue::Other`; `CallValue::Other` when
    /// the method returned no task at all), and [`Outcome::Threw`] for a task that faulted or was
    /// cancelled, and for a method that threw before returning a task (at once). The `state` from
    /// [`begin`](Self::begin) reaches it. The app's task is left as it is: its result, its
    /// exception (never read, so never marked observed), and when and where its own
    /// continuations run (`end` runs from a continuation of the default scheduler, synchronously
    /// on the completing thread, never on a `SynchronizationContext`; it delays the app's
    /// continuations by its own time). A task that never completes never ends.
    ///
    /// It takes corprof's managed assembly ([`Instrumentation::managed_invoker`]), which the
    /// end code calls; the methods are wrapped through ReJIT once the startup has loaded it, so
    /// calls made before run unwrapped (after an attach, the first call of such a method runs
    /// the startup, as for [`ManagedHandler`]s). Refused, with the reason in
    /// [`Instrumentation::decisions`]: without `managed_invoker`, and for methods of
    /// `System.Private.CoreLib` (whose tasks the end code itself uses). A `ValueTask` or
    /// `ValueTask<T>` holding a task ends with that task, one complete when made at once (with
    /// its result); one holding an `IValueTaskSource` ends at its return with
    /// `CallValue::Other`: such a source allows one continuation, the app's.
    fn ends_when_task_completes(&self) -> bool {
        false
    }
    /// Called first, before the method's own code; returns a state the matching
    /// [`end`](Self::end) receives (a start time, an index into a table of the handler's).
    fn begin(&self, call: &Call<'_>) -> u64 {
        let _ = call;
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
    /// What the handler's `wants_arguments` said.
    arguments: bool,
    /// What the handler's `may_block` said.
    may_block: bool,
    /// What the handler's `ends_when_task_completes` said.
    task_end: bool,
    /// Set when the handler panicked: it is not called again.
    off: AtomicBool,
    /// A handler in C#: its methods call corprof's managed invoker, not the native entry points.
    managed: Option<managed::Managed>,
}

/// Everything registered, for the process's life: the entry points find a method by its
/// number with one load, no lock.
struct Registry {
    definitions: Box<[OnceLock<Definition>]>,
    /// The methods in chunks of [`CHUNK`], each allocated when its first method is wrapped (all
    /// of [`MAX_METHODS`] at once cost every start-up megabytes of fresh memory).
    methods: Box<[OnceLock<Chunk>]>,
    next_definition: AtomicUsize,
    next_method: AtomicUsize,
}

/// Methods per chunk of the registry.
const CHUNK: usize = 256;

/// [`CHUNK`] method slots.
type Chunk = Box<[OnceLock<Method>]>;

/// The managed side of a definition, if it is a handler in C#.
fn managed_of(definition: DefinitionId) -> Option<&'static managed::Managed> {
    registry().definitions.get(definition.0 as usize)?.get()?.managed.as_ref()
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        definitions: (0..MAX_DEFINITIONS).map(|_| OnceLock::new()).collect(),
        methods: (0..MAX_METHODS.div_ceil(CHUNK)).map(|_| OnceLock::new()).collect(),
        next_definition: AtomicUsize::new(0),
        next_method: AtomicUsize::new(0),
    })
}

impl Registry {
    /// The method slot `index`, if one was wrapped there (no chunk is allocated).
    fn method(&self, index: usize) -> Option<&Method> {
        self.methods.get(index / CHUNK)?.get()?.get(index % CHUNK)?.get()
    }

    /// Claims the next method slot for what `make` makes of its index.
    fn claim_method(&self, make: impl FnOnce(u32) -> Method) -> Option<u32> {
        let index = self
            .next_method
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_METHODS).then_some(n + 1))
            .ok()?;
        let chunk = self.methods.get(index / CHUNK)?.get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
        // The slot was claimed by this call alone, so it is empty.
        let _ = chunk.get(index % CHUNK)?.set(make(index as u32));
        Some(index as u32)
    }
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
    if REVERTED.load(Ordering::Relaxed) {
        return None;
    }
    let r = registry();
    let method = r.method(index as usize)?;
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
    begin(m, d, &[])
}

/// The begin code's native entry point when the handler wants the arguments:
/// `uint64 (int32 method, native int args, int32 count)`, cdecl; `args` points at `count`
/// 8-byte slots the IL filled (an integer widened to 64 bits, or a float64's bits, by the
/// argument's kind).
extern "C" fn begin_arguments_entry(method: u32, args: *const u64, count: u32) -> u64 {
    let Some((m, d)) = lookup(method) else { return 0 };
    // Only IL of ours calls this, with the method's own count; checked anyway, before reading.
    if count as usize != m.args.len() || (count > 0 && args.is_null()) {
        return 0;
    }
    let mut small = [CallValue::Other; 16];
    let mut large = Vec::new();
    let values: &mut [CallValue] = if m.args.len() <= small.len() {
        &mut small[..m.args.len()]
    } else {
        large.resize(m.args.len(), CallValue::Other);
        &mut large
    };
    for (i, (kind, value)) in m.args.iter().zip(values.iter_mut()).enumerate() {
        // SAFETY: `args` points at `count` 8-byte slots the wrapped method's IL allocated
        // (`localloc`, in its frame, alive during this call) and filled; `i < count`.
        let bits = unsafe { args.add(i).read_unaligned() };
        *value = kind.value(bits as i64, f64::from_bits(bits));
    }
    begin(m, d, values)
}

fn begin(m: &Method, d: &Definition, args: &[CallValue]) -> u64 {
    let call = Call { method: m, args };
    match catch_unwind(AssertUnwindSafe(|| d.handler.begin(&call))) {
        Ok(state) => state,
        Err(payload) => {
            handler_panicked(m, d, payload);
            0
        }
    }
}

/// The end code's native entry point: `void (int32 method, uint64 state, int32 returned, int64
/// value)`, cdecl; `returned` is 0 when an exception is leaving the method, the value an integer
/// result widened (0 for a method whose result is not an integer).
extern "C" fn end_entry(method: u32, state: u64, returned: i32, value: i64) {
    end(method, state, returned, value, 0.0);
}

/// The end code's native entry point for a method returning a floating-point number:
/// `void (int32 method, uint64 state, int32 returned, float64 value)`, cdecl.
extern "C" fn end_float_entry(method: u32, state: u64, returned: i32, value: f64) {
    end(method, state, returned, 0, value);
}

fn end(method: u32, state: u64, returned: i32, int: i64, float: f64) {
    let Some((m, d)) = lookup(method) else { return };
    let outcome = if returned == 0 { Outcome::Threw } else { Outcome::Returned(m.returns.value(int, float)) };
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| d.handler.end(m, state, outcome))) {
        handler_panicked(m, d, payload);
    }
}

/// How a task-returning method ended, as `Corprof.Instrumentation.AsyncEnd` says it.
const TASK_COMPLETED: i32 = 0;
const TASK_FAULTED: i32 = 1;
const TASK_CANCELED: i32 = 2;
const TASK_NONE: i32 = 3;

/// The native entry `Corprof.Instrumentation.AsyncEnd` calls when a task-returning method has
/// ended: `void (int32 method, int64 state, int32 how, int64 int, float64 float)`, cdecl; `how`
/// is one of the `TASK_*` above (the method threw before returning a task: faulted), the value
/// is a completed `Task<T>`'s result as `end_entry` takes it.
extern "C" fn task_end_entry(method: u32, state: u64, how: i32, int: i64, float: f64) {
    let Some((m, d)) = lookup(method) else { return };
    let outcome = match how {
        TASK_COMPLETED => Outcome::Returned(m.returns.value(int, float)),
        TASK_FAULTED | TASK_CANCELED => Outcome::Threw,
        TASK_NONE => Outcome::Returned(CallValue::Other),
        // From no code of corprof's.
        _ => return,
    };
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| d.handler.end(m, state, outcome))) {
        handler_panicked(m, d, payload);
    }
}

/// The entry points' signatures, as `calli` takes them (unmanaged cdecl).
fn begin_sig() -> MethodSig {
    MethodSig::new(CallConv::C, Type::U8, vec![Type::I4])
}

fn begin_arguments_sig() -> MethodSig {
    MethodSig::new(CallConv::C, Type::U8, vec![Type::I4, Type::I, Type::I4])
}

/// `end_entry`'s signature, or `end_float_entry`'s with `float`.
fn end_sig(float: bool) -> MethodSig {
    MethodSig::new(CallConv::C, Type::Void, vec![Type::I4, Type::U8, Type::I4, if float { Type::R8 } else { Type::I8 }])
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

/// What the instrumentation did with a method a target named.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// The method is wrapped from its first call on.
    Wrapped {
        /// `Namespace.Type::Method`.
        method: String,
        /// The target that named it.
        target: String,
    },
    /// The method's wrapping was taken back ([`Instrumentation::revert`]): its own code runs
    /// again.
    Reverted {
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
            Decision::Reverted { method, target } => write!(f, "reverted {method} (target {target})"),
            Decision::Refused { method, target, reason } => {
                write!(f, "not wrapped {method} (target {target}): {reason}")
            }
        }
    }
}

/// Why [`Instrumentation::start`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartError {
    /// An instrumentation was started already in this process (one per process).
    AlreadyStarted,
    /// The runtime refused a call `start` makes (its event mask).
    Runtime(HResult),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyStarted => f.write_str("an instrumentation was started already in this process"),
            StartError::Runtime(hr) => write!(f, "the runtime refused: {}", hr.describe()),
        }
    }
}

impl std::error::Error for StartError {}

impl From<HResult> for StartError {
    fn from(hr: HResult) -> Self {
        StartError::Runtime(hr)
    }
}

/// How long the worker asks again for ReJITs the runtime says are not enabled yet (an attach
/// not finished: see `request`).
const ATTACH_WAIT: Duration = Duration::from_secs(10);

/// The worker thread's work.
enum Job {
    /// Request the ReJIT of a method whose body is prepared.
    Rejit(ModuleID, mdMethodDef),
    /// Request the revert of every method ReJITted.
    Revert,
    /// Request the revert of one method given the startup code whose handler was not found.
    Restore(ModuleID, mdMethodDef),
}

/// Set by [`Instrumentation::revert`]: the entry points call no handler, no method is wrapped.
static REVERTED: AtomicBool = AtomicBool::new(false);

/// A wrapped body for a ReJIT, and what to say once it is requested.
struct Prepared {
    body: MethodBody,
    /// For a method of a module loaded before `start` waiting for the managed startup: its own
    /// body behind the startup code, given to its first ReJIT until the startup has found the
    /// handler whose bit is here (a module initializer, which carries the startup at launch,
    /// has run long before).
    bootstrap: Option<(MethodBody, u32)>,
    /// Whether its `Wrapped` decision was said (a method given the startup code is requested
    /// twice).
    said: bool,
    name: String,
    target: String,
}

impl Prepared {
    /// Whether a ReJIT now gets the startup code, the startup having answered `answer` so far
    /// (`None`: it has not run).
    fn starts_up(&self, answer: Option<u64>) -> bool {
        matches!(&self.bootstrap, Some((_, bit)) if answer.is_none_or(|found| found & (1 << bit) == 0))
    }

    /// The body for a ReJIT now (see [`starts_up`](Self::starts_up)).
    fn body_for(&self, answer: Option<u64>) -> &MethodBody {
        match &self.bootstrap {
            Some((boot, _)) if self.starts_up(answer) => boot,
            _ => &self.body,
        }
    }
}

/// The methods to wrap and their handlers; see the [module](self).
#[derive(Default)]
pub struct Instrumentation {
    targets: Vec<(Target, DefinitionId, AtomicBool)>,
    info: OnceLock<ProfilerInfo>,
    /// Whether ReJIT is on (`COR_PRF_ENABLE_REJIT` could be set): precompiled code and modules
    /// loaded before `start` can be wrapped.
    rejit: AtomicBool,
    /// Whether the runtime knows `SuppressGCTransition` on unmanaged calls (.NET 5+).
    no_transition: AtomicBool,
    /// Each method wrapped or refused, with the indexes of the targets that named it, the one
    /// whose handler it has first.
    done: Mutex<HashMap<(ModuleID, mdMethodDef), Vec<usize>>>,
    /// Bodies for the ReJITs asked for, by raw module ID and method token.
    prepared: Mutex<HashMap<(usize, u32), Prepared>>,
    decisions: Mutex<Vec<Decision>>,
    /// The ReJITs the runtime reported failed, said once each.
    failed: Mutex<std::collections::HashSet<(usize, u32)>>,
    /// The worker thread's queue of ReJITs to request, and how many are not requested yet.
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    pending: AtomicUsize,
    /// The runtime's major version.
    major: std::sync::atomic::AtomicU16,
    /// Where Corprof.Instrumentation.dll is, for managed handlers.
    invoker: Option<std::path::PathBuf>,
    /// The managed handlers' (assembly path, assembly name, type), each at its bit.
    managed_handlers: Vec<(std::path::PathBuf, String, String)>,
    /// The managed side's startup.
    startup: Mutex<managed::Startup>,
    /// Whether modules loaded before `start` are wrapped whatever their metadata's size (see
    /// [`allow_growing_loaded_metadata`](Self::allow_growing_loaded_metadata)).
    grow_loaded: bool,
}

impl fmt::Debug for Instrumentation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let targets: Vec<&Target> = self.targets.iter().map(|(t, ..)| t).collect();
        f.debug_struct("Instrumentation").field("targets", &targets).finish_non_exhaustive()
    }
}

/// The instrumentation of the process, once started.
static STARTED: OnceLock<&'static Instrumentation> = OnceLock::new();

impl Instrumentation {
    /// No targets yet.
    pub fn new() -> Instrumentation {
        Instrumentation::default()
    }

    /// Lets the methods of large modules loaded before [`start`](Self::start) be wrapped too
    /// (CoreLib, the framework's, an app's own with more than about a thousand rows in a table or
    /// 16 KiB in a heap), which corprof refuses by default: see [Modules loaded before
    /// start](crate::instrument#modules-loaded-before-start).
    ///
    /// # Safety
    ///
    /// Wrapping a method adds to its module's metadata. The first addition to a large module
    /// makes CoreCLR (8.0.4 and 3.1.23, and every runtime without the fix of
    /// dotnet/runtime#127957) rebuild that module's metadata tables and free the old ones, while its own
    /// threads may be reading them without a lock: the app can crash, rarely (once in about
    /// 1,500 runs of a test that wrapped a CoreLib method after the app started). Call it only
    /// where that risk is accepted, or where the runtime is known to have the fix.
    pub unsafe fn allow_growing_loaded_metadata(&mut self) {
        self.grow_loaded = true;
    }

    /// Wraps the methods `target` names with `handler`. The handler is kept for the process's
    /// life.
    pub fn wrap(&mut self, target: Target, handler: impl Handler) -> Result<DefinitionId, TooManyDefinitions> {
        let r = registry();
        let (arguments, may_block) = (handler.wants_arguments(), handler.may_block());
        let task_end = handler.ends_when_task_completes();
        let definition = Definition {
            handler: Box::new(handler),
            target: target.to_string(),
            arguments,
            may_block,
            task_end,
            off: AtomicBool::new(false),
            managed: None,
        };
        let id = claim(&r.definitions, &r.next_definition, |_| definition).ok_or(TooManyDefinitions)?;
        let id = DefinitionId(id);
        self.targets.push((target, id, AtomicBool::new(false)));
        Ok(id)
    }

    /// Says where corprof's `Corprof.Instrumentation.dll` is (built from
    /// `managed/Corprof.Instrumentation` by `scripts/setup`), which methods wrapped for a
    /// [`ManagedHandler`] call; checked as [`wrap_managed`](Self::wrap_managed) checks a handler's
    /// assembly, and its file must be named `Corprof.Instrumentation.dll`.
    pub fn managed_invoker(&mut self, path: impl AsRef<std::path::Path>) -> Result<(), ManagedError> {
        let (path, name) = managed::checked_assembly(path.as_ref())?;
        if name != INVOKER_ASSEMBLY {
            return Err(ManagedError::File { path, reason: format!("is not {INVOKER_ASSEMBLY}.dll") });
        }
        self.invoker = Some(path);
        Ok(())
    }

    /// Wraps the methods `target` names with a handler written in C# (the CallTarget contract:
    /// see the [module](self)). The assembly's path is checked now: a regular file (a link
    /// followed) of at most [`MAX_ASSEMBLY_BYTES`], a PE file named `<AssemblyName>.dll`;
    /// whether the type and its methods are there is known only once the app runs, and said on
    /// stderr then. Needs [`managed_invoker`](Self::managed_invoker) first.
    pub fn wrap_managed(&mut self, target: Target, handler: ManagedHandler) -> Result<DefinitionId, ManagedError> {
        if self.invoker.is_none() {
            return Err(ManagedError::NoInvoker);
        }
        managed::checked_type_name(&handler.type_name)?;
        let (path, assembly) = managed::checked_assembly(&handler.assembly)?;
        if assembly == INVOKER_ASSEMBLY {
            return Err(ManagedError::File { path, reason: format!("is {INVOKER_ASSEMBLY}, not a handler assembly") });
        }
        let bit = match self.managed_handlers.iter().position(|(p, _, t)| *p == path && *t == handler.type_name) {
            Some(bit) => bit,
            None if self.managed_handlers.len() < MAX_MANAGED_HANDLERS => {
                self.managed_handlers.push((path, assembly.clone(), handler.type_name.clone()));
                self.managed_handlers.len() - 1
            }
            None => return Err(ManagedError::TooManyHandlers),
        };
        let r = registry();
        let definition = Definition {
            handler: Box::new(managed::Inert),
            target: target.to_string(),
            arguments: false,
            may_block: true,
            task_end: false,
            off: AtomicBool::new(false),
            managed: Some(managed::Managed { assembly, type_name: handler.type_name, bit: bit as u32 }),
        };
        let id = claim(&r.definitions, &r.next_definition, |_| definition).ok_or(ManagedError::TooManyDefinitions)?;
        let id = DefinitionId(id);
        self.targets.push((target, id, AtomicBool::new(false)));
        Ok(id)
    }

    /// Whether the app needs the managed startup: managed handlers, or a handler ending at its
    /// tasks' completion with corprof's assembly located.
    fn needs_startup(&self) -> bool {
        let task_end = |d: DefinitionId| {
            registry().definitions.get(d.0 as usize).and_then(OnceLock::get).is_some_and(|d| d.task_end)
        };
        !self.managed_handlers.is_empty()
            || (self.invoker.is_some() && self.targets.iter().any(|(_, d, _)| task_end(*d)))
    }

    /// Whether a method of `assembly` may end at its task's completion, or why not.
    fn task_end_allowed(&self, assembly: &str, managed_code: bool) -> Result<(), String> {
        if self.invoker.is_none() {
            Err(format!(
                "that takes corprof's managed assembly: call managed_invoker with {INVOKER_ASSEMBLY}.dll's path"
            ))
        } else if managed_code {
            Err("it is managed code of corprof's or of a handler's, which would call itself".into())
        } else if assembly == "System.Private.CoreLib" {
            Err("System.Private.CoreLib's tasks are what that end code itself uses".into())
        } else {
            Ok(())
        }
    }

    /// What `Startup.Start` reads: one line per managed handler, `handler`, its bit, its
    /// assembly's path, its type and the targets it wraps (for its messages).
    fn startup_config(&self) -> String {
        let mut config = String::new();
        for (bit, (path, _, type_name)) in self.managed_handlers.iter().enumerate() {
            let targets: Vec<String> = self
                .targets
                .iter()
                .filter(|(_, d, _)| managed_of(*d).is_some_and(|m| m.bit as usize == bit))
                .map(|(t, ..)| t.to_string())
                .collect();
            config += &format!("handler\t{bit}\t{}\t{type_name}\t{}\n", path.display(), targets.join(", "));
        }
        config
    }

    /// The startup code ran, and found the handlers whose bits are in `found`: the methods
    /// waiting for it are requested for ReJIT, or refused.
    fn startup_finished(&self, found: u64) {
        let waiting = {
            let mut startup = lock(&self.startup);
            if startup.done.is_some() {
                return;
            }
            startup.done = Some(found);
            std::mem::take(&mut startup.waiting)
        };
        for (module, method, bit) in waiting {
            self.release(module, method, bit, found);
        }
    }

    /// Requests the ReJIT of a method prepared for a managed handler, counted in `pending`
    /// already, if the startup found its handler; else refuses it.
    fn release(&self, module: ModuleID, method: mdMethodDef, bit: u32, found: u64) {
        let key = (module.as_raw(), method);
        // Not asked for when the method is gone (unloaded, or its first ReJIT refused).
        if found & (1 << bit) != 0
            && !REVERTED.load(Ordering::Acquire)
            && lock(&self.prepared).contains_key(&key)
            && let Some(queue) = lock(&self.queue).as_ref()
            && queue.send(Job::Rejit(module, method)).is_ok()
        {
            return;
        }
        let prepared = lock(&self.prepared).remove(&key);
        // A method given the startup code goes back to its own (the job counted in `pending`
        // instead of the ReJIT that will not be).
        let restore = prepared.as_ref().is_some_and(|p| p.bootstrap.is_some())
            && lock(&self.queue).as_ref().is_some_and(|q| q.send(Job::Restore(module, method)).is_ok());
        if !restore {
            self.pending.fetch_sub(1, Ordering::AcqRel);
        }
        if REVERTED.load(Ordering::Acquire) {
            return;
        }
        if let Some(p) = prepared {
            let reason = match self.managed_handlers.get(bit as usize) {
                Some((path, _, type_name)) => {
                    format!("its managed handler {type_name} was not loaded from {} (see stderr)", path.display())
                }
                None => format!("{INVOKER_ASSEMBLY} could not be made to resolve in the app (see stderr)"),
            };
            self.note(Decision::Refused { method: p.name, target: p.target, reason });
        }
    }

    /// Starts wrapping, for the rest of the process: call it from `initialize` (or
    /// `initialize_for_attach`), after setting the profiler's event mask. It adds
    /// `COR_PRF_ENABLE_REJIT` to the mask (should the runtime refuse it, precompiled code and
    /// modules loaded before this call are refused, with that reason; CoreCLR 8.0.4 and 3.1.23
    /// take it from a later callback too, where `start` works as well), wraps what the targets
    /// name in every module loaded from now on (corprof sees each load whatever the profiler's
    /// mask) and, from a thread of its own, in the modules loaded already; and it answers the
    /// runtime's `GetReJITParameters` for the methods it asked to ReJIT (the profiler's
    /// `get_rejit_parameters` is called for the others). One instrumentation per process.
    pub fn start(self, info: &ProfilerInfo) -> Result<&'static Instrumentation, StartError> {
        if STARTED.get().is_some() {
            return Err(StartError::AlreadyStarted);
        }
        let mask = info.get_event_mask()?;
        let rejit = info.set_event_mask(mask.union(COR_PRF_MONITOR::ENABLE_REJIT)).is_ok();
        self.rejit.store(rejit, Ordering::Relaxed);
        let major = info.get_runtime_information().map_or(0, |r| r.major_version);
        self.no_transition.store(major >= 5, Ordering::Relaxed);
        self.major.store(major, Ordering::Relaxed);
        let _ = self.info.set(info.clone());
        let this: &'static Instrumentation = Box::leak(Box::new(self));
        if STARTED.set(this).is_err() {
            return Err(StartError::AlreadyStarted);
        }
        if !this.targets.is_empty() {
            let (send, receive) = mpsc::channel();
            *lock(&this.queue) = Some(send);
            // The worker: the ReJIT requests (the runtime suspends itself for them, which a
            // callback's thread must not wait for), after the modules loaded already.
            let worker = info.clone();
            crate::info_gate::pin_library();
            // The modules loaded already count as one pending request until the worker has
            // queued theirs. Listed here, not on the worker: a module that finishes loading once
            // `start` has returned is the load callback's (wrapped as it loads), never taken
            // for one loaded before (which only ReJIT, within its metadata's budget, can wrap).
            let loaded = info.enum_modules().map(|m| m.collect::<Vec<ModuleID>>()).unwrap_or_default();
            this.pending.fetch_add(1, Ordering::AcqRel);
            std::thread::Builder::new()
                .name("corprof-instrument".into())
                .spawn(move || this.work(&worker, loaded, receive))
                .map_err(|_| StartError::Runtime(HResult::E_FAIL))?;
        }
        Ok(this)
    }

    /// The worker thread's life: the modules already loaded, then ReJIT requests in batches.
    fn work(&self, info: &ProfilerInfo, loaded: Vec<ModuleID>, queue: mpsc::Receiver<Job>) {
        let _ = info.initialize_current_thread();
        for module in loaded {
            self.module(info, module, true);
        }
        self.pending.fetch_sub(1, Ordering::AcqRel);
        while let Ok(first) = queue.recv() {
            let jobs: Vec<Job> = std::iter::once(first).chain(queue.try_iter()).collect();
            let batch: Vec<(ModuleID, mdMethodDef)> = jobs
                .iter()
                .filter_map(|j| match j {
                    Job::Rejit(module, method) => Some((*module, *method)),
                    Job::Revert | Job::Restore(..) => None,
                })
                .collect();
            if !batch.is_empty() {
                self.request(info, &batch);
            }
            let (modules, methods): (Vec<ModuleID>, Vec<mdMethodDef>) = jobs
                .iter()
                .filter_map(|j| match j {
                    Job::Restore(module, method) => Some((*module, *method)),
                    _ => None,
                })
                .unzip();
            if !modules.is_empty() {
                // Their handler was not found (said then); a failure leaves the startup code
                // before their own, which runs as written.
                let _ = info.revert_methods(&modules, &methods);
            }
            if jobs.iter().any(|j| matches!(j, Job::Revert)) {
                self.revert_all(info);
            }
            self.pending.fetch_sub(jobs.len(), Ordering::AcqRel);
        }
    }

    /// Requests the ReJITs of `batch` and says what came of each.
    fn request(&self, info: &ProfilerInfo, batch: &[(ModuleID, mdMethodDef)]) {
        let (modules, methods): (Vec<ModuleID>, Vec<mdMethodDef>) = batch.iter().copied().unzip();
        // CoreCLR 3.1.23 crashed (exit 139, in ReJitManager::UpdateJitInlinerActiveILVersions,
        // or on corprof's thread at the request) asked for the inliners of a method wrapped for a
        // managed handler in a module given the startup, and of an app's method from a profiler
        // started after `initialize`; it refuses the call for precompiled code. Before .NET 8 the
        // methods are requested alone.
        let alone = self.major.load(Ordering::Relaxed) < 8;
        let ask =
            || if alone { info.request_rejit(&modules, &methods) } else { request_rejit(info, &modules, &methods) };
        let mut requested = ask();
        // Started from `initialize_for_attach`, the worker may ask before the runtime has
        // finished the attach: CoreCLR 3.1.23 counts ReJIT as enabled only once the profiler is
        // active, and says it is not until then (seen under load). The mask was taken, so it
        // will be: ask again, for a bounded time.
        let mut wait = Duration::from_millis(1);
        let mut waited = Duration::ZERO;
        while requested == Err(HResult::CORPROF_E_REJIT_NOT_ENABLED)
            && self.rejit.load(Ordering::Relaxed)
            && waited < ATTACH_WAIT
        {
            std::thread::sleep(wait);
            waited += wait;
            wait = (wait * 2).min(Duration::from_millis(100));
            requested = ask();
        }
        if requested.is_err() && batch.len() > 1 {
            // One method's refusal (its module unloading, say) must not cost the others theirs.
            for one in batch {
                self.request(info, std::slice::from_ref(one));
            }
            return;
        }
        let answer = lock(&self.startup).done;
        let mut prepared = lock(&self.prepared);
        for (module, method) in batch {
            let key = (module.as_raw(), *method);
            let decision = match (&requested, prepared.get_mut(&key)) {
                // Unloaded meanwhile: nothing to say.
                (_, None) => continue,
                // Said once; not while it gets the startup code.
                (Ok(()), Some(p)) if p.said || p.starts_up(answer) => continue,
                (Ok(()), Some(p)) => {
                    p.said = true;
                    Decision::Wrapped { method: p.name.clone(), target: p.target.clone() }
                }
                (Err(e), Some(p)) => Decision::Refused {
                    method: p.name.clone(),
                    target: p.target.clone(),
                    reason: format!("the runtime refused its ReJIT: {e}"),
                },
            };
            if requested.is_err() {
                prepared.remove(&key);
            }
            self.note(decision);
        }
    }

    /// Requests the revert of every method wrapped through ReJIT and says what came of each.
    fn revert_all(&self, info: &ProfilerInfo) {
        let taken: Vec<((usize, u32), Prepared)> = lock(&self.prepared).drain().collect();
        if taken.is_empty() {
            return;
        }
        // SAFETY: the raw IDs were the runtime's ModuleIDs, kept while their modules are loaded
        // (an unloading module's are removed first); the wrapper checks each again.
        let modules: Vec<ModuleID> = taken.iter().map(|((m, _), _)| unsafe { ModuleID::from_raw(*m) }).collect();
        let methods: Vec<mdMethodDef> = taken.iter().map(|((_, m), _)| *m).collect();
        let statuses = info.revert_methods(&modules, &methods);
        for (i, (_, p)) in taken.into_iter().enumerate() {
            // A method that had only the startup code was never said wrapped: its own code back
            // is nothing to say.
            if p.bootstrap.is_some() && !p.said {
                continue;
            }
            let status = match &statuses {
                Ok(each) => each.get(i).copied().unwrap_or(HResult::E_UNEXPECTED),
                Err(e) => *e,
            };
            self.note(if status.is_ok() {
                Decision::Reverted { method: p.name, target: p.target }
            } else {
                Decision::Refused {
                    method: p.name,
                    target: p.target,
                    reason: format!("its revert failed: {}", status.describe()),
                }
            });
        }
    }

    /// Takes the wrapping back, for the rest of the process: from now on no handler is called
    /// (calls already inside one finish), no method is wrapped any more, and the methods wrapped
    /// through ReJIT go back to their own code (`RequestRevert`, from corprof's thread: they run
    /// their wrapped code, without handlers, until it is made; see
    /// [`pending_rejit_requests`](Self::pending_rejit_requests)). Methods given their new body at
    /// load keep it for the module's life, with no handler called; methods still waiting for
    /// the managed startup are never requested. Safe to call from anywhere, a handler included;
    /// calls after the first do nothing.
    pub fn revert(&self) {
        if REVERTED.swap(true, Ordering::AcqRel) {
            return;
        }
        // The methods waiting for the managed startup will not be requested.
        let waiting = std::mem::take(&mut lock(&self.startup).waiting);
        self.pending.fetch_sub(waiting.len(), Ordering::AcqRel);
        if let Some(queue) = lock(&self.queue).as_ref() {
            self.pending.fetch_add(1, Ordering::AcqRel);
            if queue.send(Job::Revert).is_err() {
                self.pending.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Whether the startup of the managed side has run in the app (it loads the managed
    /// handlers; the methods wrapped for them are requested for ReJIT from then on).
    pub fn managed_startup_ran(&self) -> bool {
        lock(&self.startup).done.is_some()
    }

    /// How many methods wait for the startup of the managed side before their wrapped body is
    /// requested (counted in [`pending_rejit_requests`](Self::pending_rejit_requests) too); 0
    /// once it ran. After an attach, the startup runs at the first call of one of them: each
    /// first gets a ReJIT putting the startup code before its own (also counted there), so
    /// `pending_rejit_requests() == waiting_for_managed_startup()` says those are requested.
    pub fn waiting_for_managed_startup(&self) -> usize {
        lock(&self.startup).waiting.len()
    }

    /// What was wrapped and refused so far, in order. A method wrapped through ReJIT whose ReJIT
    /// the runtime later reports failed (`ReJITError`, seen by corprof before the profiler's
    /// `rejit_error`) has a second decision, `Refused`, with the runtime's reason.
    pub fn decisions(&self) -> Vec<Decision> {
        lock(&self.decisions).clone()
    }

    /// How many ReJITs are waiting to be requested from the runtime (a method of precompiled
    /// code, or of a module loaded before [`start`](Self::start), is wrapped from the calls
    /// made after its request; 0 when all are requested).
    pub fn pending_rejit_requests(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// The targets that have named no method in any module seen so far.
    pub fn unmatched(&self) -> Vec<Target> {
        self.targets.iter().filter(|(_, _, m)| !m.load(Ordering::Relaxed)).map(|(t, ..)| t.clone()).collect()
    }

    fn note(&self, decision: Decision) {
        lock(&self.decisions).push(decision);
    }

    /// Wraps what the targets name in `module`: at once (`SetILFunctionBody`) for a module
    /// whose code the JIT compiles and none of which ran yet, through ReJIT for precompiled
    /// code or when `loaded` (code may have run).
    fn module(&self, info: &ProfilerInfo, module: ModuleID, loaded: bool) {
        if REVERTED.load(Ordering::Acquire) {
            return;
        }
        let Ok(m) = info.get_module_info2(module) else { return };
        let assembly = info.get_assembly_info(m.assembly_id).map(|a| a.name).unwrap_or_default();
        let precompiled = m.module_flags.contains(COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_NGEN);
        let collectible = m.module_flags.contains(COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_COLLECTIBLE);
        // The assemblies of corprof's and the handlers' managed code: never given the startup,
        // never wrapped for a managed handler (whose calls would come back to it).
        let managed_code =
            assembly == INVOKER_ASSEMBLY || self.managed_handlers.iter().any(|(_, name, _)| *name == assembly);
        if self.needs_startup() && !loaded && !managed_code {
            let plain = !m.module_flags.intersects(
                COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_NGEN
                    | COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_DYNAMIC
                    | COR_PRF_MODULE_FLAGS::COR_PRF_MODULE_RESOURCE,
            );
            self.startup(info, module, plain && assembly != "System.Private.CoreLib");
        }
        let mut import = None;
        // Opened once per module, for the Rust handlers' bodies.
        let mut emit: Option<Result<MetaDataEmit, String>> = None;
        let mut entries = Entries::default();
        let mut tokens = SigTokens::default();
        // Every type's full name, read once per module when a target's type has a `*`.
        let mut types: Option<Vec<(mdTypeDef, String)>> = None;
        // The names of the types the module's file defines, read from the file: the module's
        // metadata import is opened only when one of them is a target's. Opening it makes the
        // runtime read that module's metadata more slowly from then on (CoreLib's: 2 ms of an
        // app's start-up on CoreCLR 8.0.4); `None` when the file cannot be read so, and the
        // import answers.
        let mut defined: Option<Option<corprof_sig::image::TypeNames>> = None;
        // Whether the file defines a target's type, by type name: many targets name one type.
        let mut answers: HashMap<&str, bool> = HashMap::new();
        // The TypeDef of a target's type, by type name, once found in the import.
        let mut found: HashMap<&str, Option<mdTypeDef>> = HashMap::new();
        // What a module loaded before `start` can still take (see `Budget`).
        let mut budget: Option<Budget> = None;
        // The ReJITs to request (with the startup bit found, for a managed handler's): asked for
        // once everything is added to the module's metadata and its rebuild made, so that the
        // runtime does not read the metadata for them while it is being written.
        let mut requests: Vec<(mdMethodDef, Option<(u32, u64)>)> = Vec::new();
        // Whether anything was added to the module's metadata.
        let mut emitted = false;
        // The managed startup code, made once for the methods of a module loaded before `start`
        // that wait for it.
        let mut startup_code: Option<Result<managed::StartupCode, String>> = None;
        for (t, (target, definition, matched)) in self.targets.iter().enumerate() {
            if target.assembly.as_ref().is_some_and(|a| *a != assembly) {
                continue;
            }
            if let Some(names) = defined.get_or_insert_with(|| file_type_names(&m.name))
                && !*answers.entry(target.type_name.as_str()).or_insert_with(|| defines(names, &target.type_name))
            {
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
            let named: Vec<(mdTypeDef, String)> = if target.type_name.contains('*') {
                let all = types.get_or_insert_with(|| all_types(import));
                all.iter().filter(|(_, name)| glob(&target.type_name, name)).cloned().collect()
            } else {
                let td =
                    *found.entry(target.type_name.as_str()).or_insert_with(|| find_type(import, &target.type_name));
                td.map(|td| (td, target.type_name.clone())).into_iter().collect()
            };
            let (exact, pattern) = match target.method.as_deref() {
                Some(m) if m.contains('*') => (None, Some(m)),
                m => (m, None),
            };
            let methods = named.iter().flat_map(|(type_def, type_name)| {
                let methods: Vec<mdMethodDef> =
                    import.enum_methods_with_name(*type_def, exact).map(|e| e.collect()).unwrap_or_default();
                methods.into_iter().map(move |m| (type_name, m))
            });
            for (type_name, method) in methods {
                let props = import.get_method_props(method);
                let method_name = props.as_ref().map(|p| p.name.clone()).unwrap_or_default();
                if pattern.is_some_and(|p| !glob(p, &method_name)) {
                    continue;
                }
                matched.store(true, Ordering::Relaxed);
                let first = {
                    let mut done = lock(&self.done);
                    match done.get_mut(&(module, method)) {
                        // Seen already, from the load and the worker's list both: said already.
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
                let name = format!("{type_name}::{method_name}");
                let managed = managed_of(*definition);
                // The startup bit a body waits for before its ReJIT is requested: its managed
                // handler's, or the one saying corprof's assembly resolves.
                let body = first.and_then(|()| match managed {
                    Some(_) if managed_code => {
                        Err("it is managed code of corprof's or of a handler's, which would call itself".into())
                    }
                    Some(m) => {
                        emitted = true;
                        let budget = (loaded && !self.grow_loaded).then(|| {
                            budget.get_or_insert_with(|| Budget::of(defined.as_ref().and_then(Option::as_ref)))
                        });
                        managed::managed_body(info, import, module, method, m, budget).map(|b| (b, Some(m.bit)))
                    }
                    None => {
                        let no_transition = self.no_transition.load(Ordering::Relaxed);
                        let task_end = self.task_end_allowed(&assembly, managed_code);
                        // A module loading now, whose code the JIT compiles, gets entry methods.
                        let entries = (!precompiled && !loaded).then_some(&mut entries);
                        let budget = (loaded && !self.grow_loaded).then(|| {
                            budget.get_or_insert_with(|| Budget::of(defined.as_ref().and_then(Option::as_ref)))
                        });
                        emitted = true;
                        let emit = emit.get_or_insert_with(|| writable(info, module));
                        let props = props.as_ref().map_err(|e| format!("its metadata: {e}"));
                        props
                            .and_then(|props| {
                                wrapped_body(
                                    info,
                                    import,
                                    emit.as_ref().map_err(Clone::clone)?,
                                    module,
                                    method,
                                    props,
                                    *definition,
                                    &name,
                                    no_transition,
                                    &task_end,
                                    entries,
                                    budget,
                                    &mut tokens,
                                )
                            })
                            .map(|(b, task)| (b, task.then_some(managed::RESOLVABLE_BIT)))
                    }
                });
                let decision = match body {
                    Err(reason) => Decision::Refused { method: name, target: target.to_string(), reason },
                    Ok((body, None)) if !precompiled && !loaded => {
                        // SAFETY: `wrapped_body` made it for this method of this module, and
                        // checked it (see there for what the new code calls).
                        match unsafe { info.set_il_body(module, method, &body) } {
                            Ok(()) => Decision::Wrapped { method: name, target: target.to_string() },
                            Err(e) => Decision::Refused {
                                method: name,
                                target: target.to_string(),
                                reason: format!("the runtime refused the body: {e}"),
                            },
                        }
                    }
                    // The runtime versions no code of a collectible context: a ReJIT of it is
                    // taken and does nothing (CoreCLR 8.0.4 and 3.1.23, no ReJITError).
                    Ok(_) if collectible => Decision::Refused {
                        method: name,
                        target: target.to_string(),
                        reason: "its module is in a collectible context, whose code the runtime does not ReJIT \
                                 (only such a module's methods compiled after start, and not for a managed \
                                 handler or an end at a task's completion, can be wrapped)"
                            .to_owned(),
                    },
                    Ok(_) if !self.rejit.load(Ordering::Relaxed) => Decision::Refused {
                        method: name,
                        target: target.to_string(),
                        reason: (if precompiled { "precompiled (ReadyToRun) code" } else { "loaded before start" })
                            .to_owned()
                            + " is wrapped through ReJIT, which is off (COR_PRF_ENABLE_REJIT could not be set: \
                               call start from initialize)",
                    },
                    Ok((body, gate)) => {
                        // In a module loaded before `start`, whose initializer ran long ago, the
                        // startup code goes before the method's own until the startup ran: its
                        // first call runs it.
                        let bootstrap = match gate {
                            Some(bit)
                                if loaded
                                    && assembly != "System.Private.CoreLib"
                                    && lock(&self.startup).done.is_none() =>
                            {
                                let budget = (!self.grow_loaded).then(|| {
                                    budget.get_or_insert_with(|| Budget::of(defined.as_ref().and_then(Option::as_ref)))
                                });
                                match self.bootstrap(info, import, module, method, &mut startup_code, budget) {
                                    Ok(boot) => Some((boot, bit)),
                                    Err(why) => {
                                        crate::report::write_line(&format!(
                                            "corprof: instrument: no managed startup in {name}, which waits for \
                                             another method's: {why}"
                                        ));
                                        None
                                    }
                                }
                            }
                            _ => None,
                        };
                        let first_request = bootstrap.is_some();
                        let prepared = Prepared { body, bootstrap, said: false, name, target: target.to_string() };
                        lock(&self.prepared).insert((module.as_raw(), method), prepared);
                        self.pending.fetch_add(1 + usize::from(first_request), Ordering::AcqRel);
                        if first_request {
                            requests.push((method, None));
                        }
                        match gate {
                            // Requested once the startup has loaded the handlers (or corprof's
                            // assembly).
                            Some(bit) => {
                                let done = {
                                    let mut startup = lock(&self.startup);
                                    if startup.done.is_none() {
                                        // After a revert (which let go of those waiting) it
                                        // waits for nothing.
                                        if REVERTED.load(Ordering::Acquire) {
                                            self.pending.fetch_sub(1, Ordering::AcqRel);
                                        } else {
                                            startup.waiting.push((module, method, bit));
                                        }
                                    }
                                    startup.done
                                };
                                if let Some(found) = done {
                                    requests.push((method, Some((bit, found))));
                                }
                            }
                            None => requests.push((method, None)),
                        }
                        continue;
                    }
                };
                self.note(decision);
            }
        }
        if emitted && !loaded {
            finish_growth(info, module);
        }
        for (method, gate) in requests {
            match gate {
                Some((bit, found)) => self.release(module, method, bit, found),
                None => {
                    if let Some(queue) = lock(&self.queue).as_ref() {
                        let _ = queue.send(Job::Rejit(module, method));
                    }
                }
            }
        }
    }

    /// `method`'s own body behind the startup `code` (made once per module, within `budget`).
    fn bootstrap(
        &self,
        info: &ProfilerInfo,
        import: &MetaDataImport,
        module: ModuleID,
        method: mdMethodDef,
        code: &mut Option<Result<managed::StartupCode, String>>,
        mut budget: Option<&mut Budget>,
    ) -> Result<MethodBody, String> {
        let code = match code {
            Some(code) => code,
            None => {
                let invoker = self
                    .invoker
                    .as_ref()
                    .and_then(|p| p.to_str())
                    .ok_or_else(|| format!("the path of {INVOKER_ASSEMBLY}.dll is not UTF-8 (or was not given)"))?;
                let config = self.startup_config();
                if let Some(budget) = budget.as_deref_mut() {
                    let (rows, bytes) = managed::startup_growth(invoker, &config);
                    budget.take_exact(rows, bytes)?;
                }
                code.insert(managed::StartupCode::new(info, module, invoker, &config))
            }
        };
        let code = code.as_ref().map_err(Clone::clone)?;
        let props = import.get_method_props(method).map_err(|e| format!("its metadata: {e}"))?;
        // SAFETY: GetMethodProps succeeded: the blob is `sig_blob_size` bytes of the module's
        // metadata, alive while `import` is; copied at once.
        let sig_bytes = unsafe { copy_blob(props.sig_blob, props.sig_blob_size) };
        let sig = MethodSig::decode(&sig_bytes).map_err(|e| format!("its signature: {e}"))?;
        let body = info.il_body(module, method).map_err(|e| format!("its body: {e}"))?;
        let locals = locals_of(import, &body)?;
        if let Some(budget) = budget {
            // The new locals' signature.
            budget.take_exact(1, locals.as_ref().map_or(0, Vec::len) + 64)?;
        }
        code.before(info, import, module, &body, &sig, locals.as_deref())
    }

    /// Gives `module` the startup of the managed side (once; `eligible`: a module of code the
    /// JIT compiles, other than CoreLib), if the startup has not run yet.
    fn startup(&self, info: &ProfilerInfo, module: ModuleID, eligible: bool) {
        {
            let mut startup = lock(&self.startup);
            if !eligible || startup.done.is_some() || !startup.injected.insert(module.as_raw()) {
                return;
            }
        }
        let Some(invoker) = self.invoker.as_ref().and_then(|p| p.to_str()) else { return };
        let Ok(import) = info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead) else { return };
        if let Err(why) = managed::inject_startup(info, &import, module, invoker, &self.startup_config()) {
            let name = info.get_module_info(module).map(|m| m.name).unwrap_or_default();
            crate::report::write_line(&format!("corprof: instrument: no managed startup in {name}: {why}"));
        }
        finish_growth(info, module);
    }

    fn module_unloading(&self, module: ModuleID) {
        lock(&self.done).retain(|(m, _), _| *m != module);
        lock(&self.prepared).retain(|(m, _), _| *m != module.as_raw());
    }
}

/// Asks the runtime to ReJIT the methods, and the methods that inlined them
/// (`RequestReJITWithInliners` with `COR_PRF_REJIT_BLOCK_INLINING`: they are compiled again,
/// calling the method instead of their copy of its old body, and the method is inlined nowhere
/// from then on); where the runtime has no such call, tracks no inlining, or cannot take
/// precompiled code there (before .NET 8), the methods alone.
fn request_rejit(info: &ProfilerInfo, modules: &[ModuleID], methods: &[mdMethodDef]) -> crate::Result<()> {
    #[cfg(corprof_iface = "ICorProfilerInfo10")]
    {
        let flags = crate::types::COR_PRF_REJIT_FLAGS::COR_PRF_REJIT_BLOCK_INLINING;
        match info.request_rejit_with_inliners(flags, modules, methods) {
            // No such call, no inlining tracked, or (before .NET 8) precompiled code, on which
            // the runtime would crash: the methods alone.
            Err(hr)
                if hr == HResult::E_NOINTERFACE
                    || hr == HResult::CORPROF_E_REJIT_INLINING_DISABLED
                    || hr == HResult::COR_E_NOTSUPPORTED => {}
            other => return other,
        }
    }
    info.request_rejit(modules, methods)
}

/// A module finished loading (from `unloads::track`, with the runtime's ID): wraps what the
/// targets name in it.
pub(crate) fn module_loaded(module: usize) {
    let Some(this) = STARTED.get() else { return };
    let Some(info) = this.info.get() else { return };
    // SAFETY: the ID the runtime passed ModuleLoadFinished, of a module loaded now.
    let module = unsafe { ModuleID::from_raw(module) };
    this.module(info, module, false);
}

/// A module begins to unload (from `unloads::track`): its methods are forgotten, so a module
/// later given the same ID is wrapped too.
pub(crate) fn module_unloading(module: usize) {
    if let Some(this) = STARTED.get() {
        // SAFETY: the ID the runtime passed ModuleUnloadStarted; only compared, never passed on.
        this.module_unloading(unsafe { ModuleID::from_raw(module) });
    }
}

/// Answers `GetReJITParameters` for a method the instrumentation asked to ReJIT; `None` for
/// any other.
///
/// # Safety
/// `module`, `method` and `control` are the runtime's arguments to the `GetReJITParameters`
/// callback running now.
pub(crate) unsafe fn rejit_parameters(
    module: usize,
    method: u32,
    control: *mut std::ffi::c_void,
) -> Option<crate::Result<()>> {
    let this = STARTED.get()?;
    let answer = lock(&this.startup).done;
    let prepared = lock(&this.prepared);
    let p = prepared.get(&(module, method))?;
    if control.is_null() {
        return Some(Err(HResult::E_POINTER));
    }
    // SAFETY: the caller's contract: the runtime's function-control object of this callback,
    // for the ReJIT of this very method, alive while it runs.
    let control = unsafe { &*control.cast::<crate::interfaces::ICorProfilerFunctionControl>() };
    // SAFETY: the body was made for this method of this module by `wrapped_body`,
    // `managed_body` or `StartupCode::before` and checked there (see them for what the new code
    // calls); it goes to this method's ReJIT only. A managed handler's body, which names
    // assemblies the startup makes resolve, is given only once the startup found its handler.
    Some(unsafe { crate::rewrite::set_rejit_body(control, p.body_for(answer)) }.map_err(HResult::from))
}

/// A ReJIT the runtime reported failed (`ReJITError`): one corprof asked for is said once in the
/// decisions, with the runtime's reason; the method keeps the code it had.
pub(crate) fn rejit_failed(module: usize, method: u32, status: HResult) {
    let Some(this) = STARTED.get() else { return };
    let said = {
        let prepared = lock(&this.prepared);
        let Some(p) = prepared.get(&(module, method)) else { return };
        if !lock(&this.failed).insert((module, method)) {
            return;
        }
        Decision::Refused {
            method: p.name.clone(),
            target: p.target.clone(),
            reason: format!("its ReJIT failed: {}", status.describe()),
        }
    };
    this.note(said);
}

/// A module's entry methods: static methods of its `<Module>` type, each passing its arguments
/// on to one of corprof's native entry points through `calli`. Wrapped bodies call them with a
/// plain `call`, which the JIT compiles far faster than an unmanaged `calli` at each call site
/// (BENCHMARKS.md §12); optimized code keeps the call (CoreCLR 8.0.4 does not inline them).
/// Made only while the module
/// loads, before any of its code ran; made once per module, entry and signature.
#[derive(Default)]
struct Entries {
    made: Vec<(usize, Token, Token, MethodSig)>,
}

impl Entries {
    /// The method passing its arguments to the entry at `target` through `calli` with
    /// `unmanaged` (whose token is `token`), and its signature: made on first use; `None` when
    /// the module takes no new method (the call sites then use `calli` themselves).
    fn method(
        &mut self,
        info: &ProfilerInfo,
        emit: &MetaDataEmit,
        module: ModuleID,
        target: usize,
        unmanaged: &MethodSig,
        token: Token,
    ) -> Option<(Token, MethodSig)> {
        if let Some((.., method, sig)) = self.made.iter().find(|(t, k, ..)| *t == target && *k == token) {
            return Some((*method, sig.clone()));
        }
        let mut ret = unmanaged.ret.clone();
        while let Type::Modified { ty, .. } = ret {
            ret = *ty;
        }
        let managed = MethodSig::new(CallConv::DEFAULT, ret, unmanaged.params.clone());
        let name = format!("<corprof>entry{}", self.made.len());
        // assembly static hidebysig; IL, managed, aggressive inlining.
        let method = emit.define_method(MODULE_TYPE, &name, 0x0093, &managed.encode().ok()?, 0, 0x0100).ok()?;
        let mut body = MethodBody::new();
        for i in 0..managed.params.len() {
            body.push(Instruction::ldarg(u16::try_from(i).ok()?));
        }
        body.push(Instruction { opcode: OpCode::LDC_I8, operand: Operand::I64(target as i64) });
        body.push(Instruction::simple(OpCode::CONV_I));
        body.push(Instruction::token(OpCode::CALLI, token));
        body.push(Instruction::simple(OpCode::RET));
        let max =
            body.verify(crate::il::Frame::of(&managed, None), |t| (t == token).then(|| unmanaged.clone())).ok()?;
        body.set_max_stack(max);
        crate::info_gate::pin_library();
        // SAFETY: the method was just defined with the signature `managed`; the body passes its
        // arguments unchanged to `target`, an extern "C" fn of this library (pinned just above)
        // taking exactly them (`unmanaged`, the same parameters), and returns its result; it
        // passed `verify` above.
        unsafe { info.set_il_body(module, method, &body) }.ok()?;
        self.made.push((target, token, Token(method), managed.clone()));
        Some((Token(method), managed))
    }
}

/// The signature tokens made in one module, by their bytes: its wrapped methods share most of
/// them (the entries' signatures, locals of the same shape), and each `GetTokenFromSig` is a
/// search of the module's metadata and may add to it.
#[derive(Default)]
struct SigTokens(HashMap<Vec<u8>, Token>);

impl SigTokens {
    fn get(&mut self, emit: &MetaDataEmit, bytes: &[u8]) -> crate::Result<Token> {
        if let Some(token) = self.0.get(bytes) {
            return Ok(*token);
        }
        let token = Token(emit.get_token_from_sig(bytes)?);
        self.0.insert(bytes.to_vec(), token);
        Ok(token)
    }
}

/// `<Module>`, the type of a module's global functions: its first TypeDef.
const MODULE_TYPE: mdTypeDef = 0x0200_0001;

/// The bytes of `body`'s locals signature (`None`: no locals), copied out of the metadata.
fn locals_of(import: &MetaDataImport, body: &MethodBody) -> Result<Option<Vec<u8>>, String> {
    let Some(t) = body.local_var_sig() else { return Ok(None) };
    let p = import.get_sig_from_token(t.0).map_err(|e| format!("its locals: {e}"))?;
    // SAFETY: GetSigFromToken succeeded: `sig_size` bytes of metadata, copied at once.
    Ok(Some(unsafe { copy_blob(p.sig, p.sig_size) }))
}

/// Makes CoreCLR rebuild `module`'s metadata tables now, while the module is loading and no
/// other thread reads them, if what was added so far has made that rebuild due. The runtime
/// keeps a module's writable metadata in a small form until a row number passes 2047 or a heap
/// offset 32767, and rebuilds every table (once) at the next write after that, freeing the old
/// ones under readers it does not lock (dotnet/runtime#127957: a crash in CoreLib's readers if
/// that write came later, from a ReJIT while the app runs). `SetModuleProps(NULL)` changes
/// nothing, but is such a write.
fn finish_growth(info: &ProfilerInfo, module: ModuleID) {
    if let Ok(emit) = writable(info, module) {
        let _ = emit.set_module_props(None);
    }
}

/// What corprof may still add to the metadata of a module loaded before `start`, whose code may
/// be running: its additions must keep the metadata in the small form [`finish_growth`] tells of,
/// since the rebuild that ends it would come while the app's threads read the tables. Counted
/// from the module file's largest table and heap, with a margin for what is added once per
/// module (an assembly reference, a few type references); per wrapped method at most
/// [`ROWS_PER_METHOD`](Self::ROWS_PER_METHOD) rows, and in any heap its signature twice, its
/// locals and [`BYTES_PER_METHOD`](Self::BYTES_PER_METHOD) bytes.
#[derive(Debug)]
struct Budget {
    rows: usize,
    bytes: usize,
}

impl Budget {
    /// The highest row number and heap offset of the small form (CoreCLR's `m_limRid`, `m_limIx`).
    const SMALL_ROWS: usize = 2047;
    const SMALL_HEAP: usize = 32767;
    const MARGIN_ROWS: usize = 64;
    const MARGIN_BYTES: usize = 2048;
    const ROWS_PER_METHOD: usize = 8;
    const BYTES_PER_METHOD: usize = 256;

    /// The budget of a module whose file reads as `names`; none when it could not be read.
    fn of(names: Option<&corprof_sig::image::TypeNames>) -> Budget {
        match names {
            Some(n) => Budget {
                rows: Self::SMALL_ROWS.saturating_sub(Self::MARGIN_ROWS + n.largest_table_rows()),
                bytes: Self::SMALL_HEAP.saturating_sub(Self::MARGIN_BYTES + n.largest_heap_bytes()),
            },
            None => Budget { rows: 0, bytes: 0 },
        }
    }

    /// Takes one method's share (its signature's and locals' sizes in bytes), or says why not.
    fn take(&mut self, signature: usize, locals: usize) -> Result<(), String> {
        let bytes = signature.saturating_mul(2).saturating_add(locals).saturating_add(Self::BYTES_PER_METHOD);
        self.take_exact(Self::ROWS_PER_METHOD, bytes)
    }

    /// Takes a method's share for a managed handler: twice a Rust handler's (a generic
    /// instantiation of the invoker's begin and end methods, a type for each argument).
    fn take_managed(&mut self, signature: usize, locals: usize) -> Result<(), String> {
        let bytes = signature.saturating_mul(4).saturating_add(locals).saturating_add(2 * Self::BYTES_PER_METHOD);
        self.take_exact(2 * Self::ROWS_PER_METHOD, bytes)
    }

    /// Takes `rows` rows and `bytes` bytes, or says why not (taking nothing).
    fn take_exact(&mut self, rows: usize, bytes: usize) -> Result<(), String> {
        if self.rows < rows || self.bytes < bytes {
            return Err("its module was loaded before start, and wrapping it there would grow the module's metadata \
                        past the small form that CoreCLR rebuilds under its own unlocked readers (a rare crash, \
                        dotnet/runtime#127957): call start from initialize, or see \
                        Instrumentation::allow_growing_loaded_metadata"
                .into());
        }
        self.rows -= rows;
        self.bytes -= bytes;
        Ok(())
    }
}

/// `module`'s metadata opened for writing.
fn writable(info: &ProfilerInfo, module: ModuleID) -> Result<MetaDataEmit, String> {
    info.get_module_metadata::<MetaDataEmit>(module, CorOpenFlags::ofWrite)
        .map_err(|e| format!("the module's metadata cannot be written: {e}"))
}

/// `System.Runtime.CompilerServices.CallConvSuppressGCTransition` as a token of `module`: its
/// TypeDef in CoreLib, else a TypeRef through an AssemblyRef to `System.Runtime` (which forwards
/// it to CoreLib; made once, or found: the module's metadata has no duplicates).
fn suppress_gc_transition(
    info: &ProfilerInfo,
    import: &MetaDataImport,
    emit: &MetaDataEmit,
    module: ModuleID,
) -> Option<Token> {
    const NAME: &str = "System.Runtime.CompilerServices.CallConvSuppressGCTransition";
    if let Ok(td) = import.find_type_def_by_name(NAME, 0) {
        return Some(Token(td));
    }
    #[cfg(corprof_iface = "IMetaDataAssemblyEmit")]
    {
        let assembly = info.get_module_metadata::<crate::MetaDataAssemblyEmit>(module, CorOpenFlags::ofWrite).ok()?;
        // System.Runtime's public key token, the same in every version.
        const TOKEN: [u8; 8] = [0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a];
        let scope = assembly.define_assembly_ref_by_name("System.Runtime", (4, 0, 0, 0), &TOKEN).ok()?;
        emit.define_type_ref_by_name(scope, NAME).ok().map(Token)
    }
    #[cfg(not(corprof_iface = "IMetaDataAssemblyEmit"))]
    {
        let _ = (info, emit, module);
        None
    }
}

/// The full names of the types the module file at `path` defines (`None`: not a regular file,
/// or not one [`corprof_sig::image::type_names_of`] can read).
fn file_type_names(path: &str) -> Option<corprof_sig::image::TypeNames> {
    let file = crate::files::open_regular(std::path::Path::new(path)).ok()?;
    corprof_sig::image::type_names_of(&file).ok()
}

/// Whether the module defines a type a target's type (a name, or a pattern with `*`) names.
fn defines(names: &corprof_sig::image::TypeNames, target: &str) -> bool {
    if target.contains('*') { names.iter().any(|n| glob(target, &n)) } else { names.contains(target) }
}

/// Every TypeDef of the module with its full name (`Namespace.Outer+Inner`).
fn all_types(import: &MetaDataImport) -> Vec<(mdTypeDef, String)> {
    let Ok(types) = import.enum_type_defs() else { return Vec::new() };
    types.filter_map(|td| Some((td, full_type_name(import, td, 0)?))).collect()
}

/// `Namespace.Outer+Inner` for a TypeDef; `None` past 64 levels of nesting (a chain that loops,
/// in metadata no compiler wrote).
fn full_type_name(import: &MetaDataImport, td: mdTypeDef, depth: usize) -> Option<String> {
    if depth > 64 {
        return None;
    }
    let name = import.get_type_def_props(td).ok()?.name;
    match import.get_nested_class_props(td) {
        Ok(enclosing) if enclosing != 0 && enclosing != td => {
            Some(format!("{}+{name}", full_type_name(import, enclosing, depth + 1)?))
        }
        _ => Some(name),
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

/// `method`'s body wrapped, checked; `Err` says why it keeps its own.
///
/// The new code calls, through `calli` with StandAloneSig tokens of the module for exactly
/// their signatures (unmanaged cdecl), `begin_entry` and `end_entry`, extern "C" functions of
/// this library, which is pinned so the addresses stay valid; it passes them the method's index
/// (checked again by `lookup`), the state local (uint64), `ex != null` (int32) and the return
/// value converted to int64 and float64 as its type says; for a handler that wants the
/// arguments, the begin code first allocates 8 bytes per argument in the frame (`localloc`, in
/// the begin guard's try, where the rules allow it), writes each primitive argument widened into
/// its slot and passes the slots' address and their count, which `begin_arguments_entry`
/// checks against the method's before it reads; the locals token names the wrapper's
/// local signature, made in this module; `Wrapper::finish` verified the whole body.
///
/// For a method returning a task whose handler [ends at its completion](Handler::ends_when_task_completes),
/// the end code calls `Corprof.Instrumentation.AsyncEnd.EndTask[Of<T>]` instead, by its
/// MemberRef (the call is checked against that signature), passing the address of
/// `task_end_entry`, which the managed side calls through a delegate of exactly its signature
/// (`void (int32, int64, int32, int64, float64)`, cdecl); `task_end` says whether that may be
/// done here, or why not. The answer's `bool` says the body names that assembly: it goes to the
/// runtime only through ReJIT, once the startup has made the assembly resolve.
#[allow(clippy::too_many_arguments)]
fn wrapped_body(
    info: &ProfilerInfo,
    import: &MetaDataImport,
    emit: &MetaDataEmit,
    module: ModuleID,
    method: mdMethodDef,
    props: &crate::bindings::wrappers::metadata_import::MethodProps,
    definition: DefinitionId,
    name: &str,
    no_transition: bool,
    task_end: &Result<(), String>,
    mut entries: Option<&mut Entries>,
    mut budget: Option<&mut Budget>,
    tokens: &mut SigTokens,
) -> Result<(MethodBody, bool), String> {
    // IL only: not abstract (no RVA), not P/Invoke or runtime-provided (impl flags 0x3, 0x2000).
    if props.code_rva == 0 || props.impl_flags & 0x3 != 0 || props.attr & 0x2000 != 0 {
        return Err("it has no IL body".into());
    }
    // SAFETY: GetMethodProps succeeded: the blob is `sig_blob_size` bytes of the module's
    // metadata, alive while `import` is; copied at once.
    let sig_bytes = unsafe { copy_blob(props.sig_blob, props.sig_blob_size) };
    let sig = MethodSig::decode(&sig_bytes).map_err(|e| format!("its signature: {e}"))?;
    let body = info.il_body(module, method).map_err(|e| format!("its body: {e}"))?;
    let locals = locals_of(import, &body)?;
    if let Some(budget) = budget.as_deref_mut() {
        budget.take(sig_bytes.len(), locals.as_ref().map_or(0, Vec::len))?;
    }
    let mut sig_token = |s: &MethodSig| -> Result<Token, String> {
        let bytes = s.encode().map_err(|e| e.to_string())?;
        tokens.get(emit, &bytes).map_err(|e| format!("a signature token: {e}"))
    };
    let d = registry().definitions.get(definition.0 as usize).and_then(OnceLock::get);
    let task = if d.is_some_and(|d| d.task_end) { managed::task_return(info, import, module, &sig.ret) } else { None };
    if task.is_some()
        && let Err(why) = task_end
    {
        return Err(format!("it returns a task, and its handler ends at the task's completion: {why}"));
    }
    // The end at the task's completion: references to corprof's assembly, and an instantiation.
    if task.is_some()
        && let Some(budget) = budget
    {
        budget.take(sig_bytes.len(), 0)?;
    }
    let arguments = d.is_some_and(|d| d.arguments);
    let mut begin_signature = if arguments { begin_arguments_sig() } else { begin_sig() };
    let returns = match &task {
        None => Kind::of(&sig.ret),
        Some(t) => t.result().map_or(Kind::Void, Kind::of),
    };
    let float = returns == Kind::Float && task.is_none();
    let mut end_signature = end_sig(float);
    // Without the GC transition, for a handler that never blocks: `unmanaged` with
    // modopt(CallConvSuppressGCTransition) on the return type, as C# writes
    // `delegate* unmanaged[SuppressGCTransition]`. If the type cannot be named in this module,
    // the calls keep their transitions.
    let mut without_transition = false;
    if no_transition
        && d.is_some_and(|d| !d.may_block)
        && let Some(modifier) = suppress_gc_transition(info, import, emit, module)
    {
        without_transition = true;
        for s in [&mut begin_signature, &mut end_signature] {
            s.call_conv = CallConv(CallConv::UNMANAGED);
            let ret = std::mem::replace(&mut s.ret, Type::Void);
            s.ret = Type::Modified { required: false, modifier, ty: Box::new(ret) };
        }
    }
    let (begin_token, end_token) = (sig_token(&begin_signature)?, sig_token(&end_signature)?);

    let mut wrapper = Wrapper::new(&body, &sig, locals.as_deref()).map_err(|e| e.to_string())?;
    let state = wrapper.add_local(Type::U8).map_err(|e| e.to_string())?;
    let task_call = match &task {
        Some(t) => Some(managed::task_end_call(info, emit, module, t)?),
        None => None,
    };
    let this = sig.call_conv.has_this() && !sig.call_conv.explicit_this();
    let args: Vec<Kind> =
        std::iter::repeat_n(Kind::Other, usize::from(this)).chain(sig.params.iter().map(Kind::of)).collect();
    let slots = if arguments { Some(wrapper.add_local(Type::I).map_err(|e| e.to_string())?) } else { None };
    let count = args.len();
    let r = registry();
    let index = r
        .claim_method(|index| Method {
            index,
            definition,
            name: name.to_owned(),
            returns,
            args: if arguments { args.clone() } else { Vec::new() },
            no_transition: without_transition,
        })
        .ok_or_else(|| format!("more than {MAX_METHODS} methods wrapped in this process"))?;
    let address = |f: usize| {
        [Instruction { opcode: OpCode::LDC_I8, operand: Operand::I64(f as i64) }, Instruction::simple(OpCode::CONV_I)]
    };
    let begin_target = match slots {
        None => begin_entry as extern "C" fn(u32) -> u64 as usize,
        Some(_) => begin_arguments_entry as extern "C" fn(u32, *const u64, u32) -> u64 as usize,
    };
    let end_target = if float {
        end_float_entry as extern "C" fn(u32, u64, i32, f64) as usize
    } else {
        end_entry as extern "C" fn(u32, u64, i32, i64) as usize
    };
    // Through the module's own entry methods where it has them (`call`, cheap for the JIT),
    // else straight to the entry (`calli`).
    let via = |entries: Option<&mut Entries>, target: usize, signature: &MethodSig, token: Token| {
        entries.and_then(|e| e.method(info, emit, module, target, signature, token))
    };
    let begin_via = via(entries.as_deref_mut(), begin_target, &begin_signature, begin_token);
    let end_via = via(entries, end_target, &end_signature, end_token);
    let call = |made: &Option<(Token, MethodSig)>, target: usize, token: Token| match made {
        Some((method, _)) => vec![Instruction::token(OpCode::CALL, *method)],
        None => {
            let mut code = address(target).to_vec();
            code.push(Instruction::token(OpCode::CALLI, token));
            code
        }
    };
    let (begin_call, end_call) = (call(&begin_via, begin_target, begin_token), call(&end_via, end_target, end_token));
    let mut begin = Vec::new();
    match slots {
        None => begin.push(Instruction::ldc_i4(index as i32)),
        Some(slots) => {
            // 8 bytes per argument in the frame (zeroed: the body inits its locals), each
            // primitive written widened, then (method, slots, count).
            let bytes = i32::try_from(count * 8).map_err(|_| "too many arguments to pass".to_owned())?;
            begin.extend([
                Instruction::ldc_i4(bytes),
                Instruction::simple(OpCode::CONV_U),
                Instruction::simple(OpCode::LOCALLOC),
                Instruction::stloc(slots),
            ]);
            for (i, kind) in args.iter().enumerate() {
                let (convert, store) = match kind {
                    Kind::Int => (OpCode::CONV_I8, OpCode::STIND_I8),
                    Kind::UInt | Kind::Bool | Kind::Char => (OpCode::CONV_U8, OpCode::STIND_I8),
                    Kind::Float => (OpCode::CONV_R8, OpCode::STIND_R8),
                    Kind::Void | Kind::Other => continue,
                };
                begin.push(Instruction::ldloc(slots));
                if i > 0 {
                    begin.extend([Instruction::ldc_i4((i * 8) as i32), Instruction::simple(OpCode::ADD)]);
                }
                let i = u16::try_from(i).map_err(|_| "too many arguments to pass".to_owned())?;
                begin.extend([Instruction::ldarg(i), Instruction::simple(convert), Instruction::simple(store)]);
            }
            begin.extend([
                Instruction::ldc_i4(index as i32),
                Instruction::ldloc(slots),
                Instruction::ldc_i4(count as i32),
            ]);
        }
    }
    begin.extend(begin_call);
    begin.push(Instruction::stloc(state));
    let ret = wrapper.return_local();
    let call_sig = |t: Token| {
        if let Some((_, sig)) = [&begin_via, &end_via].into_iter().flatten().find(|(m, _)| *m == t) {
            Some(sig.clone())
        } else if t == begin_token {
            Some(begin_signature.clone())
        } else if t == end_token {
            Some(end_signature.clone())
        } else if let Some((_, sig, _)) = task_call.as_ref().filter(|(call, ..)| *call == t) {
            Some(sig.clone())
        } else {
            signature_of(import, t)
        }
    };
    let wrapped = if let (Some((call, _, boxed)), Some(r)) = (&task_call, ret) {
        // AsyncEnd.End[Value]Task[Of<T>](task, ex, method, state, task_end_entry): a managed
        // call, which hands the task's completion to the native entry; guarded, as managed code
        // may throw. A ValueTask goes boxed.
        let mut end = vec![Instruction::ldloc(r)];
        if let Some(boxed) = boxed {
            end.push(Instruction::token(OpCode::BOX, *boxed));
        }
        end.extend([
            Instruction::ldloc(wrapper.exception_local()),
            Instruction::ldc_i4(index as i32),
            Instruction::ldloc(state),
        ]);
        end.extend(address(task_end_entry as extern "C" fn(u32, u64, i32, i64, f64) as usize));
        end.push(Instruction::token(OpCode::CALL, *call));
        wrapper.finish(begin, end, call_sig)
    } else {
        // Native entries catch the handler's panics: nothing they do throws, so the shape with
        // one exception region and one end, less for the JIT to compile than guards it would
        // never use.
        let end = |returned: u16| {
            let mut end =
                vec![Instruction::ldc_i4(index as i32), Instruction::ldloc(state), Instruction::ldloc(returned)];
            match (returns, ret) {
                (Kind::Int, Some(r)) => end.extend([Instruction::ldloc(r), Instruction::simple(OpCode::CONV_I8)]),
                (Kind::UInt | Kind::Bool | Kind::Char, Some(r)) => {
                    end.extend([Instruction::ldloc(r), Instruction::simple(OpCode::CONV_U8)])
                }
                (Kind::Float, Some(r)) => end.extend([Instruction::ldloc(r), Instruction::simple(OpCode::CONV_R8)]),
                _ => end.push(Instruction { opcode: OpCode::LDC_I8, operand: Operand::I64(0) }),
            }
            end.extend(end_call.iter().cloned());
            end
        };
        wrapper.finish_unguarded(begin, end, call_sig)
    };
    let wrapped = wrapped.map_err(|e| match e {
        WrapError::Refused(r) => r.to_string(),
        e => e.to_string(),
    })?;
    let locals_token = tokens.get(emit, wrapped.locals_signature()).map_err(|e| format!("the locals' token: {e}"))?.0;
    // The new code calls into this library for the process's life.
    crate::info_gate::pin_library();
    Ok((wrapped.into_body(Token(locals_token)), task_call.is_some()))
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
        fn begin(&self, _: &Call<'_>) -> u64 {
            self.begins.fetch_add(1, Ordering::Relaxed);
            if self.panic {
                panic!("probe");
            }
            7
        }
        fn end(&self, _: &Method, state: u64, outcome: Outcome) {
            assert_eq!((state, outcome), (7, Outcome::Returned(CallValue::Int(-2))));
            self.ends.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Registers a probe and one method for it, as `wrap_method` would.
    fn registered(panic: bool) -> (u32, Arc<AtomicU64>, Arc<AtomicU64>) {
        let (begins, ends) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut i = Instrumentation::new();
        let probe = Probe { begins: begins.clone(), ends: ends.clone(), panic };
        let definition = i.wrap(Target::method("T", "M"), probe).unwrap();
        let index = method_of(definition, Kind::Int, vec![Kind::Other, Kind::Int, Kind::Float, Kind::Bool]);
        (index, begins, ends)
    }

    /// A method of `definition` in the registry, as `wrapped_body` registers one.
    fn method_of(definition: DefinitionId, returns: Kind, args: Vec<Kind>) -> u32 {
        let make = |index| Method { index, definition, name: "T::M".into(), returns, args, no_transition: false };
        registry().claim_method(make).unwrap()
    }

    #[test]
    fn the_entry_points_reach_the_handler_with_its_state_and_the_value() {
        let (index, begins, ends) = registered(false);
        assert_eq!(begin_entry(index), 7);
        end_entry(index, 7, 1, -2);
        assert_eq!((begins.load(Ordering::Relaxed), ends.load(Ordering::Relaxed)), (1, 1));
    }

    /// Keeps every outcome `end` is given, with its state.
    struct Ends(Mutex<Vec<(u64, Outcome)>>);

    impl Handler for &'static Ends {
        fn ends_when_task_completes(&self) -> bool {
            true
        }
        fn end(&self, _: &Method, state: u64, outcome: Outcome) {
            self.0.lock().unwrap().push((state, outcome));
        }
    }

    #[test]
    fn task_ends_are_read_as_the_managed_side_says() {
        static SEEN: Ends = Ends(Mutex::new(Vec::new()));
        let mut i = Instrumentation::new();
        let definition = i.wrap(Target::method("T", "Async"), &SEEN).unwrap();
        // A Task<int>: the result is read as an int.
        let index = method_of(definition, Kind::Int, Vec::new());
        task_end_entry(index, 1, TASK_COMPLETED, 42, 0.0);
        task_end_entry(index, 2, TASK_FAULTED, 0, 0.0);
        task_end_entry(index, 3, TASK_CANCELED, 0, 0.0);
        task_end_entry(index, 4, TASK_NONE, 9, 0.0);
        // A code no code of corprof's sends: the handler is not called.
        task_end_entry(index, 5, 17, 0, 0.0);
        assert_eq!(
            *SEEN.0.lock().unwrap(),
            [
                (1, Outcome::Returned(CallValue::Int(42))),
                (2, Outcome::Threw),
                (3, Outcome::Threw),
                (4, Outcome::Returned(CallValue::Other)),
            ]
        );
        task_end_entry(u32::MAX, 6, TASK_COMPLETED, 0, 0.0);
        assert_eq!(SEEN.0.lock().unwrap().len(), 4);
    }

    #[test]
    fn end_entries_say_how_the_method_ended_and_its_value() {
        static SEEN: Ends = Ends(Mutex::new(Vec::new()));
        let mut i = Instrumentation::new();
        let definition = i.wrap(Target::method("T", "Ends"), &SEEN).unwrap();
        let int = method_of(definition, Kind::Int, Vec::new());
        let float = method_of(definition, Kind::Float, Vec::new());
        end_entry(int, 1, 1, -5);
        end_entry(int, 2, 0, 0);
        end_float_entry(float, 3, 1, 2.5);
        end_float_entry(float, 4, 0, 0.0);
        assert_eq!(
            *SEEN.0.lock().unwrap(),
            [
                (1, Outcome::Returned(CallValue::Int(-5))),
                (2, Outcome::Threw),
                (3, Outcome::Returned(CallValue::Float(2.5))),
                (4, Outcome::Threw),
            ]
        );
    }

    /// Keeps the arguments `begin` is given.
    struct Arguments(Mutex<Vec<Vec<CallValue>>>);

    impl Handler for &'static Arguments {
        fn wants_arguments(&self) -> bool {
            true
        }
        fn begin(&self, call: &Call<'_>) -> u64 {
            self.0.lock().unwrap().push(call.arguments().to_vec());
            1
        }
    }

    #[test]
    fn arguments_are_read_by_their_kinds_and_only_by_the_methods_count() {
        static SEEN: Arguments = Arguments(Mutex::new(Vec::new()));
        let mut i = Instrumentation::new();
        let definition = i.wrap(Target::method("T", "A"), &SEEN).unwrap();
        let index =
            method_of(definition, Kind::Void, vec![Kind::Other, Kind::Int, Kind::Float, Kind::Bool, Kind::UInt]);
        let slots: [u64; 5] = [0xdead, (-5i64) as u64, 2.5f64.to_bits(), 1, u64::MAX];
        assert_eq!(begin_arguments_entry(index, slots.as_ptr(), 5), 1);
        // A count other than the method's, or no slots: nothing read, the handler not called.
        assert_eq!(begin_arguments_entry(index, slots.as_ptr(), 4), 0);
        assert_eq!(begin_arguments_entry(index, std::ptr::null(), 5), 0);
        assert_eq!(
            *SEEN.0.lock().unwrap(),
            [vec![
                CallValue::Other,
                CallValue::Int(-5),
                CallValue::Float(2.5),
                CallValue::Bool(true),
                CallValue::UInt(u64::MAX)
            ]]
        );
    }

    /// Modules are looked into through their files first: CoreLib's names are read from its file
    /// (both runtimes), exact names and patterns are found in them, and what cannot be read so
    /// (no file, a folder, a FIFO) leaves it to the metadata import.
    #[test]
    fn module_files_say_which_types_they_define() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".runtimes");
        for corelib in [
            "dotnet-8/shared/Microsoft.NETCore.App/8.0.4/System.Private.CoreLib.dll",
            "dotnet-3/shared/Microsoft.NETCore.App/3.1.23/System.Private.CoreLib.dll",
        ] {
            let path = root.join(corelib);
            let names = file_type_names(path.to_str().unwrap()).unwrap_or_else(|| panic!("{}", path.display()));
            assert!(names.len() > 1000, "{corelib}");
            for (target, defined) in [
                ("System.Convert", true),
                ("System.Environment+SpecialFolder", true),
                ("System.Conv*", true),
                ("*+SpecialFolder", true),
                ("Nowhere.Type", false),
                ("Nowhere.*", false),
                ("Convert", false),
            ] {
                assert_eq!(defines(&names, target), defined, "{corelib}: {target}");
            }
        }
        assert!(file_type_names("").is_none());
        assert!(file_type_names(root.to_str().unwrap()).is_none());
        // What a module loaded before `start` may take: nothing for a CoreLib (its metadata is
        // past the small form already) or a file that cannot be read; a small app's module, a
        // bounded number of methods.
        for corelib in [
            "dotnet-8/shared/Microsoft.NETCore.App/8.0.4/System.Private.CoreLib.dll",
            "dotnet-3/shared/Microsoft.NETCore.App/3.1.23/System.Private.CoreLib.dll",
        ] {
            let names = file_type_names(root.join(corelib).to_str().unwrap());
            assert!(Budget::of(names.as_ref()).take(4, 0).is_err(), "{corelib}");
        }
        assert!(Budget::of(None).take(4, 0).is_err());
        let app = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/apps/Instrument/bin/Instrument.dll");
        let names = file_type_names(app).unwrap_or_else(|| panic!("{app}"));
        assert!(names.largest_table_rows() < 200 && names.largest_heap_bytes() < 8192, "{app}");
        let mut budget = Budget::of(Some(&names));
        let mut methods = 0;
        while budget.take(10, 20).is_ok() {
            methods += 1;
        }
        let err = budget.take(10, 20).unwrap_err();
        assert!(err.contains("dotnet/runtime#127957"), "{err}");
        // As many as the rows or the heap bytes left allow, whichever runs out first.
        let rows = (Budget::SMALL_ROWS - Budget::MARGIN_ROWS - names.largest_table_rows()) / Budget::ROWS_PER_METHOD;
        let bytes = (Budget::SMALL_HEAP - Budget::MARGIN_BYTES - names.largest_heap_bytes())
            / (2 * 10 + 20 + Budget::BYTES_PER_METHOD);
        assert!(methods > 50, "{methods}");
        assert_eq!(methods, rows.min(bytes));
        // Locals count against the heaps.
        let mut budget = Budget::of(Some(&names));
        assert!(budget.take(10, 40_000).is_err());
        assert!(budget.take(10, 20).is_ok());
        assert!(file_type_names("/dev/zero").is_none());
        assert!(file_type_names(env!("CARGO_MANIFEST_DIR")).is_none());
        assert!(file_type_names(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).is_none());
    }

    #[test]
    fn managed_shares_and_the_startup_take_their_own_sizes() {
        let rows = Budget::ROWS_PER_METHOD;
        // Exactly what is left: taken; one more: refused, taking nothing.
        let mut budget = Budget { rows: 2 * rows, bytes: 4 * 10 + 20 + 2 * Budget::BYTES_PER_METHOD };
        assert!(budget.take_managed(10, 20).is_ok());
        assert_eq!((budget.rows, budget.bytes), (0, 0));
        let mut budget = Budget { rows: 2 * rows - 1, bytes: 10_000 };
        assert!(budget.take_managed(10, 20).is_err());
        assert!(budget.take(10, 20).is_ok(), "a Rust handler's share still fits");
        let mut budget = Budget { rows: 100, bytes: 4 * 10 + 20 + 2 * Budget::BYTES_PER_METHOD - 1 };
        assert!(budget.take_managed(10, 20).is_err());
        assert_eq!((budget.rows, budget.bytes), (100, 4 * 10 + 20 + 2 * Budget::BYTES_PER_METHOD - 1));
        // The startup's strings count twice (UTF-16), its references once per module.
        let (r, b) = managed::startup_growth("/a/Corprof.Instrumentation.dll", "handler\t0\t/h.dll\tT\tX::Y\n");
        assert!(r >= 12 && b > 2 * ("/a/Corprof.Instrumentation.dll".len() + 20), "{r} {b}");
        let long = "x".repeat(10_000);
        assert!(managed::startup_growth(&long, "").1 > 20_000);
    }

    #[test]
    fn a_waiting_method_gets_the_startup_code_until_its_handler_is_found() {
        let body = |b: u8| MethodBody::parse(&[0x0a, 0x00, b, 0x2a]).unwrap();
        let bit = 3;
        let prepared = Prepared {
            body: body(0x00),
            bootstrap: Some((body(0x26), bit)),
            said: false,
            name: String::new(),
            target: String::new(),
        };
        let is_boot = |answer| std::ptr::eq(prepared.body_for(answer), &prepared.bootstrap.as_ref().unwrap().0);
        for (answer, boot) in
            [(None, true), (Some(0), true), (Some(1 << 2), true), (Some(1 << bit), false), (Some(!0), false)]
        {
            assert_eq!(prepared.starts_up(answer), boot, "{answer:?}");
            assert_eq!(is_boot(answer), boot, "{answer:?}");
        }
        let plain = Prepared { bootstrap: None, ..prepared };
        assert!(!plain.starts_up(None));
        assert!(std::ptr::eq(plain.body_for(None), &plain.body));
    }

    #[test]
    fn patterns_match_any_run_of_characters() {
        for (pattern, text, expected) in [
            ("Shop.*", "Shop.Cart", true),
            ("Shop.*", "Shop.", true),
            ("Shop.*", "Shopping.Cart", false),
            ("*.Cart", "Shop.Cart", true),
            ("Get*Async", "GetItemsAsync", true),
            ("Get*Async", "GetAsyncItems", false),
            ("*", "", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("Box`1", "Box`1", true),
        ] {
            assert_eq!(glob(pattern, text), expected, "{pattern} ~ {text}");
        }
    }

    #[test]
    fn targets_are_parsed_with_their_reasons() {
        assert_eq!(Target::parse("Shop.*::Get*").unwrap(), Target::method("Shop.*", "Get*"));
        assert_eq!(Target::parse("A.B+C::_").unwrap(), Target::method("A.B+C", "_"));
        assert_eq!(Target::parse("A::*").unwrap().to_string(), "A::_");
        for bad in ["Shop.Cart", "::M", "T::", "T :: M", "T::M\n"] {
            let e = Target::parse(bad).unwrap_err();
            assert!(e.to_string().contains("Namespace.Type::Method"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_number_no_method_has_reaches_nothing() {
        for index in [u32::MAX, MAX_METHODS as u32, (MAX_METHODS - 1) as u32] {
            assert_eq!(begin_entry(index), 0);
            assert_eq!(begin_arguments_entry(index, std::ptr::null(), 3), 0);
            end_entry(index, 1, 1, 1);
            end_float_entry(index, 1, 0, 1.0);
        }
    }

    #[test]
    fn a_handler_that_panics_is_not_called_again() {
        crate::report::set_quiet(true);
        let (index, begins, ends) = registered(true);
        assert_eq!(begin_entry(index), 0);
        assert_eq!(begin_entry(index), 0);
        end_entry(index, 7, 1, -2);
        assert_eq!((begins.load(Ordering::Relaxed), ends.load(Ordering::Relaxed)), (1, 0));
    }

    #[test]
    fn returned_values_are_read_as_the_signature_says() {
        let cases = [
            (Type::Void, CallValue::Void),
            (Type::ByRef(Box::new(Type::I4)), CallValue::Other),
            (Type::I2, CallValue::Int(-1)),
            (Type::U8, CallValue::UInt(u64::MAX)),
            (Type::Boolean, CallValue::Bool(true)),
            (Type::Char, CallValue::Char(0xffff)),
            (Type::R4, CallValue::Float(0.5)),
            (Type::String, CallValue::Other),
            (
                Type::Modified { required: true, modifier: Token::new(Token::TYPE_REF, 1), ty: Box::new(Type::I4) },
                CallValue::Int(-1),
            ),
        ];
        for (ty, value) in cases {
            assert_eq!(Kind::of(&ty).value(-1, 0.5), value, "{ty:?}");
        }
    }

    #[test]
    fn targets_print_as_written() {
        assert_eq!(Target::method("A.B+C", "_").to_string(), "A.B+C::_");
        assert_eq!(Target::method("A.B", "M").in_assembly("Shop").to_string(), "[Shop]A.B::M");
    }
}
