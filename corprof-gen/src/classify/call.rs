//! Kinds for the calling side: how each parameter of a method the profiler *calls* (ICorProfilerInfo,
//! IMetaDataImport, …) appears in the safe wrapper, and what the method returns.

use super::{RustType, rust_type};
use crate::annotations::Direction;
use crate::diag::{Diagnostic, Errors};
use crate::ir::CType;
use crate::resolve::{Api, ApiMethod, ApiParam};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// Passed by value.
    Value { ty: RustType },
    /// A `BOOL` taken as `bool`.
    Bool,
    /// A DWORD annotated `flags: T`, taken as the flag enum `T`.
    Flags { ty: RustType },
    /// A `BOOL` the callee writes: returned as `bool`.
    OutBool,
    /// A DWORD annotated `flags: T` the callee writes (`raw` is its C type): returned as `T`.
    OutFlags { ty: RustType, raw: RustType },
    /// An `HRESULT` value, passed as `HResult`.
    HResult,
    /// `&T` / `Option<&T>`.
    InRef { ty: RustType, optional: bool },
    /// Stays a raw pointer (`raw: true`, `void *`, pointers to pointers).
    Raw { ty: RustType },
    /// `&[T]` / `Option<&[T]>`; the count parameter is filled from the slice. Elements that are
    /// IDs of unloadable code are each checked (`unload`).
    InSlice { ty: RustType, len: String, optional: bool, unload: Option<Unload> },
    /// `&str` / `Option<&str>`, passed as UTF-16 (NUL-terminated, or counted by `len`).
    InStr { len: Option<String>, optional: bool },
    /// A value the callee writes: returned. An ID of unloadable code is lent to a lending
    /// callback it was asked in (`unload`).
    Out { ty: RustType, unload: Option<Unload> },
    /// An interface the callee returns (`IFoo **`): returned as the wrapper of its family (`family`
    /// names the family's root interface), or a `ComPtr` when it has none.
    OutInterface { iface: String, family: Option<String> },
    /// `void **` named by a REFIID parameter: the caller picks the type (`W: Wrapper`).
    OutIid { iid: String },
    /// A UTF-16 buffer with capacity and actual-length parameters: returned as `String`.
    OutString { cap: String, len: String },
    /// An array with capacity and actual-count parameters: returned as `Vec<T>` (IDs of
    /// unloadable code lent as `Out`'s).
    OutArray { ty: RustType, cap: String, len: String, unload: Option<Unload> },
    /// `&mut T` / `Option<&mut T>`.
    Ref { ty: RustType, optional: bool },
    /// An `HCORENUM *` handle: the method becomes an iterator.
    CorEnum,
    /// A count, capacity or IID that the wrapper fills in.
    Consumed,
    /// A function pointer the runtime will call (`FunctionEnter3 *`, `StackSnapshotCallback *`):
    /// passed as its bindgen typedef; the wrapper is an `unsafe fn` stating `contract`.
    FnPtr { ty: RustType, contract: FnContract },
    /// A runtime ID passed by value that the runtime dereferences and that dies while a profiler
    /// may still hold it (a `ThreadID` after ThreadDestroyed, an `ObjectID` after the next GC):
    /// passed like a value; the wrapper is an `unsafe fn` stating `contract`.
    LiveId { ty: RustType, contract: IdContract },
    /// An ID of code a collectible `AssemblyLoadContext` may unload, passed by value: the
    /// wrapper stays safe and refuses one that unloaded (`corprof`'s `unloads` module).
    Unloadable { ty: RustType, id: Unload },
}

/// The IDs the runtime frees when a collectible `AssemblyLoadContext` unloads, by typedef: a
/// wrapper taking one checks it first (`imp::alive_*`), and one a lending callback gets back is
/// lent to it (`imp::lend_output`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unload {
    Module,
    Assembly,
    Class,
    Function,
}

impl Unload {
    pub fn of(c_type: &CType) -> Option<Unload> {
        match c_type {
            CType::Named(n) => match n.as_str() {
                "ModuleID" => Some(Unload::Module),
                "AssemblyID" => Some(Unload::Assembly),
                "ClassID" => Some(Unload::Class),
                "FunctionID" => Some(Unload::Function),
                _ => None,
            },
            _ => None,
        }
    }

    /// The `imp` function that refuses an ID of this kind that unloaded.
    pub fn guard(self) -> &'static str {
        match self {
            Unload::Module => "alive_module",
            Unload::Assembly => "alive_assembly",
            Unload::Class => "alive_class",
            Unload::Function => "alive_function",
        }
    }

    /// Whether an output of this kind is noted and lent to the callback it was asked in (module
    /// and assembly IDs are tracked exactly, and need neither).
    pub fn lent_as_output(self) -> bool {
        matches!(self, Unload::Class | Unload::Function)
    }

    /// The `imp::IdKind` variant this kind is checked, noted and lent as.
    pub fn kind(self) -> &'static str {
        match self {
            Unload::Module | Unload::Assembly => "Exact",
            Unload::Class => "Class",
            Unload::Function => "Function",
        }
    }
}

/// When an ID the runtime dereferences is still alive, by the ID's typedef. IDs not listed here
/// (ClassID, ModuleID, FunctionID, AppDomainID, …) are taken as alive for as long as a profiler
/// can name them; "What no guard can catch" in docs/guide/reliability.md says why and where that stops holding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdContract {
    /// `ThreadID`: a pointer to the runtime's Thread object, freed after ThreadDestroyed.
    Thread,
    /// `ObjectID`: an object's address, which the next GC may move or free.
    Object,
}

impl IdContract {
    pub fn of(c_type: &CType) -> Option<IdContract> {
        match c_type {
            CType::Named(n) if n == "ThreadID" => Some(IdContract::Thread),
            CType::Named(n) if n == "ObjectID" => Some(IdContract::Object),
            _ => None,
        }
    }
}

/// What the runtime requires of a function pointer a profiler hands it, by the pointer's typedef.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnContract {
    /// Enter/Leave/Tailcall hooks (1, 2, 3, 3WithInfo): called straight from JIT-compiled code.
    EltHook,
    /// `FunctionIDMapper`/`FunctionIDMapper2`: called whenever the runtime sets up a function's hooks.
    IdMapper,
    /// `StackSnapshotCallback`: called once per frame, before `DoStackSnapshot` returns.
    StackSnapshot,
    /// `ObjectCallback`: called once per object of the GC heap, before `EnumerateGCHeapObjects`
    /// returns; its BOOL answer says whether to go on.
    HeapWalk,
    /// `EventPipeProviderCallback` (a function type, passed as `EventPipeProviderCallback *`):
    /// called whenever a session enables or disables the provider, for the rest of the process
    /// (a provider is never deleted), with a null `callback_data`.
    ProviderCallback,
    /// Any other function-pointer typedef (EventPipe callbacks, a newer header's): the generic contract.
    Callback,
}

impl FnContract {
    pub fn of(typedef: &str) -> FnContract {
        match typedef {
            "FunctionEnter"
            | "FunctionLeave"
            | "FunctionTailcall"
            | "FunctionEnter2"
            | "FunctionLeave2"
            | "FunctionTailcall2"
            | "FunctionEnter3"
            | "FunctionLeave3"
            | "FunctionTailcall3"
            | "FunctionEnter3WithInfo"
            | "FunctionLeave3WithInfo"
            | "FunctionTailcall3WithInfo" => FnContract::EltHook,
            "FunctionIDMapper" | "FunctionIDMapper2" => FnContract::IdMapper,
            "StackSnapshotCallback" => FnContract::StackSnapshot,
            "ObjectCallback" => FnContract::HeapWalk,
            "EventPipeProviderCallback" => FnContract::ProviderCallback,
            _ => FnContract::Callback,
        }
    }
}

/// Families whose objects the runtime documents as free-threaded (callable from any thread at
/// once): ICorProfilerInfo and the metadata interfaces. Others (enumerators, IMethodMalloc, …) are
/// neither `Send` nor `Sync`.
pub fn is_free_threaded(family_root: &str) -> bool {
    family_root == "ICorProfilerInfo" || crate::resolve::is_metadata(family_root)
}

/// Whether a family's root interface can say if the calling thread is one the runtime knows
/// (`ICorProfilerInfo::GetCurrentThreadID`, which `refuse_in: [unknown_thread]`'s guard calls).
pub fn can_ask_thread(family_root: &str) -> bool {
    family_root == "ICorProfilerInfo"
}

impl CallKind {
    pub fn is_output(&self) -> bool {
        matches!(
            self,
            CallKind::Out { .. }
                | CallKind::OutBool
                | CallKind::OutFlags { .. }
                | CallKind::OutInterface { .. }
                | CallKind::OutIid { .. }
                | CallKind::OutString { .. }
                | CallKind::OutArray { .. }
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallReturn {
    /// `HRESULT`: failures become `Err`.
    HResult,
    /// `HRESULT` whose S_FALSE means "no": `false`, or `None` instead of the outputs.
    HResultOrFalse {
        meaning: String,
    },
    /// Any other return value is handed back as is (`ULONG`, `BOOL`, `PVOID`).
    Value {
        ty: RustType,
    },
    Void,
}

/// The Rust type of the count an out buffer's `len` parameter points to (`ULONG` of
/// `ULONG *pcchName`); `u32` when the method has no such parameter.
pub fn count_type(m: &ApiMethod, len: &str) -> RustType {
    m.params
        .iter()
        .find(|p| p.ir.name == len)
        .and_then(|p| p.ir.ty.pointee().map(rust_type))
        .unwrap_or_else(|| RustType::named("u32"))
}

pub fn classify_call(api: &Api, iface: &str, m: &ApiMethod) -> Result<(Vec<CallKind>, CallReturn), Errors> {
    let mut errors = Errors::default();
    let consumed = m.consumed();
    let kinds: Vec<CallKind> = m
        .params
        .iter()
        .map(|p| {
            if consumed.contains(&p.ir.name.as_str()) {
                return CallKind::Consumed;
            }
            match &p.spec {
                None if p.ir.ty.is_pointer() => CallKind::Raw { ty: rust_type(&p.ir.ty) },
                // A handle the callee dereferences (`HCORENUM hEnum`): a raw pointer by value.
                _ if p.ir.ty.is_opaque_pointer() => CallKind::Raw { ty: rust_type(&p.ir.ty) },
                None => match &p.ir.ty {
                    ty if ty.is_hresult() => CallKind::HResult,
                    ty @ CType::FnPtr { typedef, .. } => {
                        CallKind::FnPtr { ty: rust_type(ty), contract: FnContract::of(typedef) }
                    }
                    ty if super::is_bool(ty) => CallKind::Bool,
                    ty => match (IdContract::of(ty), Unload::of(ty)) {
                        (Some(contract), _) => CallKind::LiveId { ty: rust_type(ty), contract },
                        (None, Some(id)) => CallKind::Unloadable { ty: rust_type(ty), id },
                        (None, None) => CallKind::Value { ty: rust_type(ty) },
                    },
                },
                // Lending an object for a call's duration is the runtime's to do, in a callback:
                // a method the profiler calls gets its ObjectIDs from the profiler.
                Some(spec) if spec.live.is_some() => {
                    errors.push(
                        Diagnostic::error(format!(
                            "`live` on `{}` of {iface}::{}: only callback parameters are lent for the callback",
                            p.ir.name, m.ir.name
                        ))
                        .at_opt(p.spec_loc.clone())
                        .declared_at(&p.ir.loc),
                    );
                    CallKind::Raw { ty: rust_type(&p.ir.ty) }
                }
                Some(spec) if !p.ir.ty.is_pointer() => match (&spec.flags, Unload::of(&p.ir.ty)) {
                    (Some(ty), _) => CallKind::Flags { ty: RustType::named(ty) },
                    (None, Some(id)) => CallKind::Unloadable { ty: rust_type(&p.ir.ty), id },
                    (None, None) => CallKind::Value { ty: rust_type(&p.ir.ty) },
                },
                Some(_) => pointer_kind(api, iface, m, p, &mut errors),
            }
        })
        .collect();
    let ret = match &m.ir.ret {
        ty if ty.is_hresult() => match &m.s_false {
            Some(meaning) => CallReturn::HResultOrFalse { meaning: meaning.clone() },
            None => CallReturn::HResult,
        },
        CType::Void => CallReturn::Void,
        other => CallReturn::Value { ty: rust_type(other) },
    };
    let returns_hresult = matches!(ret, CallReturn::HResult | CallReturn::HResultOrFalse { .. });
    if !returns_hresult && kinds.iter().any(CallKind::is_output) {
        errors.push(
            Diagnostic::error(format!("{iface}::{} has outputs but does not return HRESULT", m.ir.name))
                .declared_at(&m.ir.loc),
        );
    }
    if kinds.contains(&CallKind::CorEnum)
        && kinds.iter().filter(|k| matches!(k, CallKind::OutArray { .. })).count() != 1
    {
        errors.push(
            Diagnostic::error(format!("{iface}::{}: a `corenum` method needs exactly one out array", m.ir.name))
                .declared_at(&m.ir.loc),
        );
    }
    errors.check()?;
    Ok((kinds, ret))
}

fn pointer_kind(api: &Api, iface: &str, m: &ApiMethod, p: &ApiParam, errors: &mut Errors) -> CallKind {
    let spec = p.spec.as_ref().expect("annotated");
    let pointee = p.ir.ty.pointee().expect("resolve checked that annotated parameters are pointers");
    let raw = || CallKind::Raw { ty: rust_type(&p.ir.ty) };
    let mut fail = |what: &str| {
        errors.push(
            Diagnostic::error(format!("`{}` of {iface}::{}: {what}", p.ir.name, m.ir.name))
                .at_opt(p.spec_loc.clone())
                .declared_at(&p.ir.loc),
        );
        raw()
    };
    if spec.raw {
        return raw();
    }
    if spec.corenum {
        return CallKind::CorEnum;
    }
    match spec.dir {
        Direction::In if spec.string => CallKind::InStr { len: spec.len.clone(), optional: spec.optional },
        // `const void *pv, ULONG cb`: bytes.
        Direction::In if matches!(pointee, CType::Void) && spec.len.is_some() => CallKind::InSlice {
            ty: RustType::named("u8"),
            len: spec.len.clone().unwrap_or_default(),
            optional: spec.optional,
            unload: None,
        },
        Direction::In if matches!(pointee, CType::Void) || pointee.is_pointer() => raw(),
        Direction::In if spec.len.is_some() => CallKind::InSlice {
            ty: rust_type(pointee),
            len: spec.len.clone().unwrap_or_default(),
            optional: spec.optional,
            unload: Unload::of(pointee),
        },
        Direction::In => CallKind::InRef { ty: rust_type(pointee), optional: spec.optional },
        Direction::Out if spec.iid.is_some() => CallKind::OutIid { iid: spec.iid.clone().unwrap_or_default() },
        Direction::Out if spec.cap.is_some() || spec.len.is_some() => match (&spec.cap, &spec.len) {
            (Some(cap), Some(len)) if spec.string => CallKind::OutString { cap: cap.clone(), len: len.clone() },
            (Some(cap), Some(len)) => CallKind::OutArray {
                ty: rust_type(pointee),
                cap: cap.clone(),
                len: len.clone(),
                unload: Unload::of(pointee),
            },
            _ => fail("an out buffer needs both `cap` (its capacity) and `len` (the count written back)"),
        },
        Direction::Out => match pointee {
            CType::Pointer { pointee: inner, .. } => match &**inner {
                CType::Interface(name) => {
                    let family =
                        api.interface(name).filter(|i| i.gets_wrapper()).map(|_| api.family_root(name).to_string());
                    CallKind::OutInterface { iface: name.clone(), family }
                }
                _ => CallKind::Out { ty: rust_type(pointee), unload: None },
            },
            CType::Void => fail("`void *` outs need `iid` or `raw: true`"),
            _ if spec.flags.is_some() => CallKind::OutFlags {
                ty: RustType::named(spec.flags.clone().unwrap_or_default()),
                raw: rust_type(pointee),
            },
            _ if super::is_bool(pointee) => CallKind::OutBool,
            _ => CallKind::Out { ty: rust_type(pointee), unload: Unload::of(pointee) },
        },
        Direction::Ref if spec.len.is_some() || spec.string => {
            fail("in-out arrays are not supported: mark it `raw: true`")
        }
        Direction::Ref if matches!(pointee, CType::Void) => raw(),
        Direction::Ref => CallKind::Ref { ty: rust_type(pointee), optional: spec.optional },
    }
}
