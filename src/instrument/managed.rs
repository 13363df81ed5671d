//! Handlers in C#: the CallTarget contract of the APM agents, through corprof's own assembly
//! `Corprof.Instrumentation` (C# in `managed/Corprof.Instrumentation`).
//!
//! A method wrapped for a [`ManagedHandler`] gets, inside [`Wrapper`]'s shape, begin code calling
//! `CallTargetInvoker.BeginMethod<THandler, TTarget, TArg1…>(instance, ref arg1, …)` and end code
//! calling `CallTargetInvoker.EndMethod<THandler, TTarget[, TReturn]>(instance[, ret], ex, state)`,
//! whose value goes back into the return local; the invoker finds the handler's `OnMethodBegin`
//! and `OnMethodEnd` by reflection once per instantiation. The JIT resolves those references when
//! it compiles the wrapped body, and the runtime binds an AssemblyRef only from the app's list of
//! trusted assemblies, or through the app's resolve events: a body naming the invoker compiled
//! before the assemblies were loaded would throw inside the app's call. So a wrapped body is
//! given to the runtime only after the startup code said which handlers it loaded, and only
//! through ReJIT: corprof puts a `<Module>..cctor` calling `Startup.Start` (through
//! `Assembly.LoadFrom` and reflection, with references to `mscorlib` alone, which every CoreCLR
//! resolves) into each module whose code the JIT compiles that loads before the startup ran; the
//! first of them whose code runs calls it, and it ends calling [`startup_done`] with the handlers
//! it found. Their methods are requested for ReJIT from then on; the others are refused. In a
//! module loaded before `start` (an attach), whose initializer ran long ago, the startup code
//! ([`StartupCode`]) goes before the own code of each method waiting for it instead, through a
//! first ReJIT, so the first call of any of them runs it; `GetReJITParameters` gives that body
//! until the startup found the method's handler, the wrapped one after.

use super::*;
use crate::sig::MethodSpec;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// How many handler types (`ManagedHandler`s with distinct assembly and type) a process can
/// register (each is a bit of what `Startup.Start` answers; the last bit says the assembly
/// resolves).
pub const MAX_MANAGED_HANDLERS: usize = 63;

/// The bit of `Startup.Start`'s answer saying that `Corprof.Instrumentation` resolves for the
/// app's code (the startup watches assembly resolution): what the methods ending at their task's
/// completion wait for.
pub(super) const RESOLVABLE_BIT: u32 = 63;

/// The largest assembly file [`Instrumentation::wrap_managed`] takes.
pub const MAX_ASSEMBLY_BYTES: u64 = 64 << 20;

/// The most arguments a method wrapped for a managed handler may take (the invoker has a
/// `BeginMethod` for 0 to 8).
pub const MAX_MANAGED_ARGUMENTS: usize = 8;

/// The simple name of corprof's assembly (the file is `Corprof.Instrumentation.dll`).
pub const INVOKER_ASSEMBLY: &str = "Corprof.Instrumentation";

/// A handler written in C#: a class of the user's assembly (which references
/// `Corprof.Instrumentation.dll`) with static `OnMethodBegin` and `OnMethodEnd` methods, see the
/// [module](crate::instrument) and the guide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedHandler {
    pub(super) assembly: PathBuf,
    pub(super) type_name: String,
}

impl ManagedHandler {
    /// The class `type_name` (`Namespace.Type`, a nested one `Namespace.Outer+Inner`) of the
    /// assembly at `assembly`, whose file name is the assembly's simple name
    /// (`MyHandlers.dll` for the assembly `MyHandlers`).
    pub fn new(assembly: impl Into<PathBuf>, type_name: &str) -> ManagedHandler {
        ManagedHandler { assembly: assembly.into(), type_name: type_name.to_owned() }
    }
}

/// Why a managed handler, or corprof's assembly, was not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManagedError {
    /// [`Instrumentation::managed_invoker`] was not called first.
    NoInvoker,
    /// The assembly file cannot be used, for this reason.
    File {
        /// The path given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The handler's type name cannot be written in a TypeRef.
    TypeName(String),
    /// More than [`MAX_MANAGED_HANDLERS`] handler types.
    TooManyHandlers,
    /// More than [`MAX_DEFINITIONS`] handlers of both kinds.
    TooManyDefinitions,
}

impl fmt::Display for ManagedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManagedError::NoInvoker => f.write_str(
                "say where Corprof.Instrumentation.dll is (managed_invoker) before wrapping with a managed handler",
            ),
            ManagedError::File { path, reason } => write!(f, "{}: {reason}", path.display()),
            ManagedError::TypeName(name) => {
                write!(f, "{name:?} is no type name: write Namespace.Type or Namespace.Outer+Inner")
            }
            ManagedError::TooManyHandlers => write!(f, "more than {MAX_MANAGED_HANDLERS} managed handler types"),
            ManagedError::TooManyDefinitions => TooManyDefinitions.fmt(f),
        }
    }
}

impl std::error::Error for ManagedError {}

/// A managed definition, as the registry keeps it.
#[derive(Debug)]
pub(super) struct Managed {
    /// The handler assembly's simple name.
    pub(super) assembly: String,
    pub(super) type_name: String,
    /// The handler's number: its bit in what `Startup.Start` answers.
    pub(super) bit: u32,
}

/// A handler called from the registry for a managed definition: never, as no method of a
/// managed definition calls the native entry points.
pub(super) struct Inert;

impl Handler for Inert {}

/// What the startup of the managed side has come to.
#[derive(Default)]
pub(super) struct Startup {
    /// What `Startup.Start` answered: the bits of the handlers found, once it ran.
    pub(super) done: Option<u64>,
    /// The methods prepared before it ran, with their handler's bit.
    pub(super) waiting: Vec<(ModuleID, mdMethodDef, u32)>,
    /// The modules given the startup code.
    pub(super) injected: HashSet<usize>,
}

/// The path, checked: a regular file (a link followed) of at most [`MAX_ASSEMBLY_BYTES`],
/// starting as a PE file does, whose name can be said in the startup's configuration; with its
/// simple name (the file's stem).
pub(super) fn checked_assembly(path: &Path) -> Result<(PathBuf, String), ManagedError> {
    let bad = |reason: String| ManagedError::File { path: path.to_owned(), reason };
    let full = path.canonicalize().map_err(|e| bad(format!("cannot be found: {e}")))?;
    let meta = std::fs::metadata(&full).map_err(|e| bad(format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    let mut file = crate::files::open_regular(&full).map_err(|e| bad(format!("cannot be opened: {e}")))?;
    let meta = file.metadata().map_err(|e| bad(format!("cannot be read: {e}")))?;
    if meta.len() > MAX_ASSEMBLY_BYTES {
        return Err(bad(format!("is larger than {MAX_ASSEMBLY_BYTES} bytes")));
    }
    let mut magic = [0u8; 2];
    if std::io::Read::read_exact(&mut file, &mut magic).is_err() || magic != *b"MZ" {
        return Err(bad("is not a PE file (an assembly)".into()));
    }
    let text = full.to_str().ok_or_else(|| bad("is not UTF-8".into()))?;
    if text.chars().any(char::is_control) {
        return Err(bad("holds a control character".into()));
    }
    let stem = full.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    if stem.is_empty() || !full.extension().is_some_and(|e| e.eq_ignore_ascii_case("dll")) {
        return Err(bad("is not named <AssemblyName>.dll".into()));
    }
    Ok((full.clone(), stem.to_owned()))
}

/// Whether `name` can name a type in a TypeRef: `Namespace.Type`, nested `Outer+Inner`, no
/// generic arity, assembly or space.
pub(super) fn checked_type_name(name: &str) -> Result<(), ManagedError> {
    let ok = !name.is_empty()
        && name.split('+').all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with('.'))
        && !name.chars().any(|c| c.is_control() || c.is_whitespace() || matches!(c, ',' | '[' | ']' | '`' | '&' | '*'));
    if ok { Ok(()) } else { Err(ManagedError::TypeName(name.to_owned())) }
}

/// `mscorlib`'s public key token: every CoreCLR ships an `mscorlib` facade forwarding its types.
const MSCORLIB_TOKEN: [u8; 8] = [0xb7, 0x7a, 0x5c, 0x56, 0x19, 0x34, 0xe0, 0x89];

/// The module's AssemblyRef to `name`: one it has, or a new one (the runtime does not look for
/// duplicates of AssemblyRefs).
#[cfg(corprof_iface = "IMetaDataAssemblyEmit")]
fn assembly_ref(
    info: &ProfilerInfo,
    module: ModuleID,
    name: &str,
    version: (u16, u16, u16, u16),
    token: &[u8],
) -> Result<Token, String> {
    let import = info
        .get_module_metadata::<crate::MetaDataAssemblyImport>(module, CorOpenFlags::ofRead)
        .map_err(|e| format!("the module's assembly references: {e}"))?;
    if let Ok(refs) = import.enum_assembly_refs() {
        for r in refs {
            if import.get_assembly_ref_props(r).is_ok_and(|p| p.name == name) {
                return Ok(Token(r));
            }
        }
    }
    let emit = info
        .get_module_metadata::<crate::MetaDataAssemblyEmit>(module, CorOpenFlags::ofWrite)
        .map_err(|e| format!("the module's assembly references cannot be written: {e}"))?;
    emit.define_assembly_ref_by_name(name, version, token).map(Token).map_err(|e| format!("a reference to {name}: {e}"))
}

#[cfg(not(corprof_iface = "IMetaDataAssemblyEmit"))]
fn assembly_ref(_: &ProfilerInfo, _: ModuleID, _: &str, _: (u16, u16, u16, u16), _: &[u8]) -> Result<Token, String> {
    Err("the headers corprof was built with have no IMetaDataAssemblyEmit".into())
}

/// A TypeRef for `Namespace.Outer+Inner` in `scope`.
fn type_ref(emit: &MetaDataEmit, scope: Token, name: &str) -> Result<Token, String> {
    let mut parent = scope;
    for part in name.split('+') {
        parent =
            Token(emit.define_type_ref_by_name(parent.0, part).map_err(|e| format!("a reference to {name}: {e}"))?);
    }
    Ok(parent)
}

fn member_ref(emit: &MetaDataEmit, parent: Token, name: &str, sig: &MethodSig) -> Result<Token, String> {
    let bytes = sig.encode().map_err(|e| e.to_string())?;
    emit.define_member_ref(parent.0, name, &bytes).map(Token).map_err(|e| format!("a reference to {name}: {e}"))
}

fn method_spec(emit: &MetaDataEmit, parent: Token, args: Vec<Type>) -> Result<Token, String> {
    let bytes = MethodSpec { args }.encode().map_err(|e| e.to_string())?;
    emit.define_method_spec(parent.0, &bytes).map(Token).map_err(|e| format!("an instantiation: {e}"))
}

fn type_spec(emit: &MetaDataEmit, ty: &Type) -> Result<Token, String> {
    let bytes = ty.encode().map_err(|e| e.to_string())?;
    emit.get_token_from_type_spec(&bytes).map(Token).map_err(|e| format!("a type specification: {e}"))
}

/// The name a TypeDef or TypeRef token stands for, and for a TypeRef its resolution scope.
fn type_name_of(import: &MetaDataImport, token: Token) -> Option<(String, Option<Token>)> {
    match token.table() {
        Token::TYPE_DEF => Some((import.get_type_def_props(token.0).ok()?.name, None)),
        Token::TYPE_REF => {
            let p = import.get_type_ref_props(token.0).ok()?;
            Some((p.name, Some(Token(p.resolution_scope))))
        }
        _ => None,
    }
}

/// Structs of the framework that are no ref structs, which a TypeRef may name as a generic
/// argument: whether another assembly's struct is a ref struct (which no generic argument may
/// be, and the JIT would refuse the wrapped body inside the app's call) cannot be read from this
/// module.
const FRAMEWORK_STRUCTS: [&str; 16] = [
    "System.DateTime",
    "System.DateTimeOffset",
    "System.TimeSpan",
    "System.Guid",
    "System.Decimal",
    "System.Nullable`1",
    "System.IntPtr",
    "System.UIntPtr",
    "System.Threading.CancellationToken",
    "System.Collections.Generic.KeyValuePair`2",
    "System.Threading.Tasks.ValueTask",
    "System.Threading.Tasks.ValueTask`1",
    "System.ValueTuple`2",
    "System.ValueTuple`3",
    "System.RuntimeTypeHandle",
    "System.RuntimeMethodHandle",
];

/// The framework's assemblies, as an AssemblyRef names them.
const FRAMEWORK: [&str; 4] = ["mscorlib", "System.Runtime", "System.Private.CoreLib", "netstandard"];

/// `None` when `ty` may be a generic argument here, else why not; `framework` lists the
/// module's AssemblyRefs to the framework's assemblies.
fn generic_argument(import: &MetaDataImport, framework: &[u32], ty: &Type) -> Option<String> {
    match ty {
        Type::Boolean
        | Type::Char
        | Type::I1
        | Type::U1
        | Type::I2
        | Type::U2
        | Type::I4
        | Type::U4
        | Type::I8
        | Type::U8
        | Type::R4
        | Type::R8
        | Type::I
        | Type::U
        | Type::String
        | Type::Object
        | Type::Class(_)
        | Type::Var(_)
        | Type::MVar(_)
        | Type::SzArray(_)
        | Type::Array(..) => None,
        Type::GenericInst { value_type: false, .. } => None,
        Type::Modified { ty, .. } => generic_argument(import, framework, ty),
        Type::ValueType(token) | Type::GenericInst { value_type: true, generic: token, .. } => {
            let args = match ty {
                Type::GenericInst { args, .. } => args.as_slice(),
                _ => &[],
            };
            if let Some(why) = args.iter().find_map(|a| generic_argument(import, framework, a)) {
                return Some(why);
            }
            let Some((name, scope)) = type_name_of(import, *token) else {
                return Some("a struct whose name cannot be read".into());
            };
            match scope {
                // A struct of this module: a ref struct carries IsByRefLikeAttribute.
                None => import
                    .get_custom_attribute_by_name(token.0, "System.Runtime.CompilerServices.IsByRefLikeAttribute")
                    .ok()
                    .flatten()
                    .map(|_| format!("{name} is a ref struct, which cannot be a generic argument")),
                Some(scope) => {
                    let known = framework.contains(&scope.0) && FRAMEWORK_STRUCTS.contains(&name.as_str());
                    (!known).then(|| {
                        format!(
                            "{name} is a struct of another assembly, which may be a ref struct (no generic argument) \
                             as far as this module can tell"
                        )
                    })
                }
            }
        }
        other => Some(format!("{other:?} cannot be a generic argument")),
    }
}

/// The module's AssemblyRefs to the framework's assemblies.
#[cfg(corprof_iface = "IMetaDataAssemblyEmit")]
fn framework_refs(info: &ProfilerInfo, module: ModuleID) -> Vec<u32> {
    let Ok(import) = info.get_module_metadata::<crate::MetaDataAssemblyImport>(module, CorOpenFlags::ofRead) else {
        return Vec::new();
    };
    let Ok(refs) = import.enum_assembly_refs() else { return Vec::new() };
    let refs: Vec<u32> = refs.collect();
    refs.into_iter()
        .filter(|r| import.get_assembly_ref_props(*r).is_ok_and(|p| FRAMEWORK.contains(&p.name.as_str())))
        .collect()
}

#[cfg(not(corprof_iface = "IMetaDataAssemblyEmit"))]
fn framework_refs(_: &ProfilerInfo, _: ModuleID) -> Vec<u32> {
    Vec::new()
}

/// Whether the TypeDef `td` of the module is a value type (it extends System.ValueType or
/// System.Enum).
fn is_value_type(import: &MetaDataImport, td: mdTypeDef) -> bool {
    let Ok(props) = import.get_type_def_props(td) else { return false };
    matches!(
        type_name_of(import, Token(props.extends)).map(|(n, _)| n).as_deref(),
        Some("System.ValueType" | "System.Enum")
    ) && type_name_of(import, Token(td)).is_some_and(|(n, _)| n != "System.Enum")
}

/// What a method returns, when it is a task whose completion a handler can wait for.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum TaskReturn {
    /// `System.Threading.Tasks.Task`.
    Task,
    /// `System.Threading.Tasks.Task<T>`, with `T` as the module writes it.
    Of(Type),
    /// `System.Threading.Tasks.ValueTask`, with its type as the module writes it.
    Value(Type),
    /// `System.Threading.Tasks.ValueTask<T>`: its type, and `T`.
    ValueOf(Type, Type),
}

impl TaskReturn {
    /// The task's result type (`None` for `Task` and `ValueTask`).
    pub(super) fn result(&self) -> Option<&Type> {
        match self {
            TaskReturn::Task | TaskReturn::Value(_) => None,
            TaskReturn::Of(t) | TaskReturn::ValueOf(_, t) => Some(t),
        }
    }
}

/// The framework's assemblies a TypeRef to `Task` or `ValueTask` may name (the reference
/// assemblies', the facades', CoreLib).
const TASK_SCOPES: [&str; 6] = [
    "mscorlib",
    "System.Runtime",
    "System.Private.CoreLib",
    "netstandard",
    "System.Threading.Tasks",
    "System.Threading.Tasks.Extensions",
];

/// Whether `ret` (a method's return type) is `Task` or `Task<T>` of the framework.
pub(super) fn task_return(
    info: &ProfilerInfo,
    import: &MetaDataImport,
    module: ModuleID,
    ret: &Type,
) -> Option<TaskReturn> {
    let mut ret = ret;
    while let Type::Modified { ty, .. } = ret {
        ret = ty;
    }
    let (token, wanted, of) = match ret {
        Type::Class(t) => (*t, "System.Threading.Tasks.Task", None),
        Type::GenericInst { value_type: false, generic, args } if args.len() == 1 => {
            (*generic, "System.Threading.Tasks.Task`1", Some(args[0].clone()))
        }
        Type::ValueType(t) => (*t, "System.Threading.Tasks.ValueTask", None),
        Type::GenericInst { value_type: true, generic, args } if args.len() == 1 => {
            (*generic, "System.Threading.Tasks.ValueTask`1", Some(args[0].clone()))
        }
        _ => return None,
    };
    let (name, scope) = type_name_of(import, token)?;
    if name != wanted {
        return None;
    }
    let framework = match scope {
        // A TypeDef: only CoreLib defines the framework's Task.
        None => info
            .get_module_info2(module)
            .ok()
            .and_then(|m| info.get_assembly_info(m.assembly_id).ok())
            .is_some_and(|a| a.name == "System.Private.CoreLib"),
        Some(scope) => task_scope(info, module, scope),
    };
    let value = matches!(ret, Type::ValueType(_) | Type::GenericInst { value_type: true, .. });
    framework.then(|| match (value, of) {
        (false, None) => TaskReturn::Task,
        (false, Some(of)) => TaskReturn::Of(of),
        (true, None) => TaskReturn::Value(ret.clone()),
        (true, Some(of)) => TaskReturn::ValueOf(ret.clone(), of),
    })
}

/// Whether `scope` is an AssemblyRef of the module to one of [`TASK_SCOPES`].
#[cfg(corprof_iface = "IMetaDataAssemblyEmit")]
fn task_scope(info: &ProfilerInfo, module: ModuleID, scope: Token) -> bool {
    // The AssemblyRef table (0x23).
    scope.table() == 0x23
        && info
            .get_module_metadata::<crate::MetaDataAssemblyImport>(module, CorOpenFlags::ofRead)
            .ok()
            .and_then(|import| import.get_assembly_ref_props(scope.0).ok())
            .is_some_and(|p| TASK_SCOPES.contains(&p.name.as_str()))
}

#[cfg(not(corprof_iface = "IMetaDataAssemblyEmit"))]
fn task_scope(_: &ProfilerInfo, _: ModuleID, _: Token) -> bool {
    false
}

/// The call ending a task-returning method: `Corprof.Instrumentation.AsyncEnd.EndTask(object
/// task, object exception, int32 method, int64 state, native int entry)`, `EndTaskOf<T>` with
/// the same parameters for a `Task<T>`, `EndValueTask` and `EndValueTaskOf<T>` for a
/// `ValueTask` and a `ValueTask<T>`; its token in the module, its signature, and for a
/// `ValueTask` the token to `box` the value with before the call.
pub(super) fn task_end_call(
    info: &ProfilerInfo,
    emit: &MetaDataEmit,
    module: ModuleID,
    task: &TaskReturn,
) -> Result<(Token, MethodSig, Option<Token>), String> {
    let scope = assembly_ref(info, module, INVOKER_ASSEMBLY, (0, 0, 0, 0), &[])?;
    let async_end = type_ref(emit, scope, "Corprof.Instrumentation.AsyncEnd")?;
    let params = vec![Type::Object, Type::Object, Type::I4, Type::I8, Type::I];
    let (name, generic) = match task {
        TaskReturn::Task => ("EndTask", false),
        TaskReturn::Of(_) => ("EndTaskOf", true),
        TaskReturn::Value(_) => ("EndValueTask", false),
        TaskReturn::ValueOf(..) => ("EndValueTaskOf", true),
    };
    let sig = if generic {
        MethodSig::generic(CallConv::DEFAULT, 1, Type::Void, params)
    } else {
        MethodSig::new(CallConv::DEFAULT, Type::Void, params)
    };
    let method = member_ref(emit, async_end, name, &sig)?;
    let call = match task.result() {
        Some(result) => method_spec(emit, method, vec![result.clone()])?,
        None => method,
    };
    let boxed = match task {
        TaskReturn::Value(Type::ValueType(t)) => Some(*t),
        TaskReturn::Value(ty) | TaskReturn::ValueOf(ty, _) => Some(type_spec(emit, ty)?),
        TaskReturn::Task | TaskReturn::Of(_) => None,
    };
    Ok((call, sig, boxed))
}

/// The tokens of corprof's assembly in one module.
struct Invoker {
    invoker: Token,
    state: Token,
}

fn invoker(info: &ProfilerInfo, emit: &MetaDataEmit, module: ModuleID) -> Result<Invoker, String> {
    let scope = assembly_ref(info, module, INVOKER_ASSEMBLY, (0, 0, 0, 0), &[])?;
    Ok(Invoker {
        invoker: type_ref(emit, scope, "Corprof.Instrumentation.CallTargetInvoker")?,
        state: type_ref(emit, scope, "Corprof.Instrumentation.CallTargetState")?,
    })
}

/// `method`'s body wrapped for the managed handler `handler`, checked; `Err` says why it keeps
/// its own.
pub(super) fn managed_body(
    info: &ProfilerInfo,
    import: &MetaDataImport,
    module: ModuleID,
    method: mdMethodDef,
    handler: &Managed,
    budget: Option<&mut Budget>,
) -> Result<MethodBody, String> {
    let props = import.get_method_props(method).map_err(|e| format!("its metadata: {e}"))?;
    if props.code_rva == 0 || props.impl_flags & 0x3 != 0 || props.attr & 0x2000 != 0 {
        return Err("it has no IL body".into());
    }
    if props.name == ".ctor" || props.name == ".cctor" {
        return Err("a constructor is not wrapped for a managed handler (OnMethodBegin would see an object not \
                    constructed yet)"
            .into());
    }
    // SAFETY: GetMethodProps succeeded: the blob is `sig_blob_size` bytes of the module's
    // metadata, alive while `import` is; copied at once.
    let sig_bytes = unsafe { copy_blob(props.sig_blob, props.sig_blob_size) };
    let sig = MethodSig::decode(&sig_bytes).map_err(|e| format!("its signature: {e}"))?;
    if sig.call_conv.kind() == CallConv::VARARG || sig.call_conv.explicit_this() {
        return Err("a vararg or explicit-this method is not wrapped for a managed handler".into());
    }
    if sig.params.len() > MAX_MANAGED_ARGUMENTS {
        return Err(format!("it takes more than {MAX_MANAGED_ARGUMENTS} arguments, the most a managed handler gets"));
    }
    // The arguments' types, a `ref`/`out` one's element type (passed as the reference it is).
    let framework = framework_refs(info, module);
    let mut args = Vec::new();
    for (i, p) in sig.params.iter().enumerate() {
        let mut p = p;
        while let Type::Modified { ty, .. } = p {
            p = ty;
        }
        let (ty, by_ref) = match p {
            Type::ByRef(t) => (t.as_ref().clone(), true),
            t => (t.clone(), false),
        };
        if let Some(why) = generic_argument(import, &framework, &ty) {
            return Err(format!("its argument {}: {why}", i + 1));
        }
        args.push((ty, by_ref));
    }
    let mut ret = &sig.ret;
    while let Type::Modified { ty, .. } = ret {
        ret = ty;
    }
    let returns = match ret {
        Type::Void => None,
        t => {
            if let Some(why) = generic_argument(import, &framework, t) {
                return Err(format!("its return type: {why}"));
            }
            Some(t.clone())
        }
    };
    // TTarget: the declaring type (with its own generic parameters) for an instance method and
    // for a static method of a class (passed null), `object` for a static method of a struct.
    let class = props.class;
    let value_type = is_value_type(import, class);
    let arity = import.enum_generic_params(class).map(|e| e.count()).unwrap_or(0);
    let declaring = if arity == 0 {
        if value_type { Type::ValueType(Token(class)) } else { Type::Class(Token(class)) }
    } else {
        Type::GenericInst { value_type, generic: Token(class), args: (0..arity as u32).map(Type::Var).collect() }
    };
    let instance = sig.call_conv.has_this();
    let target = if instance || !value_type { declaring.clone() } else { Type::Object };

    let body = info.il_body(module, method).map_err(|e| format!("its body: {e}"))?;
    let locals = locals_of(import, &body)?;
    if let Some(budget) = budget {
        budget.take_managed(sig_bytes.len(), locals.as_ref().map_or(0, Vec::len))?;
    }
    let emit = writable(info, module)?;
    let tokens = invoker(info, &emit, module)?;
    let handler_scope = assembly_ref(info, module, &handler.assembly, (0, 0, 0, 0), &[])?;
    let handler_type = type_ref(&emit, handler_scope, &handler.type_name)?;
    let state_type = Type::ValueType(tokens.state);

    // CallTargetState BeginMethod<THandler, TTarget, TArg1…>(!!1 instance, ref !!2 arg1, …)
    let n = args.len() as u32;
    let begin_sig = MethodSig::generic(
        CallConv::DEFAULT,
        n + 2,
        state_type.clone(),
        std::iter::once(Type::MVar(1)).chain((0..n).map(|i| Type::ByRef(Box::new(Type::MVar(i + 2))))).collect(),
    );
    let begin_ref = member_ref(&emit, tokens.invoker, "BeginMethod", &begin_sig)?;
    let mut begin_args = vec![Type::Class(handler_type), target.clone()];
    begin_args.extend(args.iter().map(|(t, _)| t.clone()));
    let begin_spec = method_spec(&emit, begin_ref, begin_args)?;
    // !!2 EndMethod<THandler, TTarget, TReturn>(!!1, !!2, object, CallTargetState), or
    // void EndMethod<THandler, TTarget>(!!1, object, CallTargetState).
    let end_sig = match &returns {
        Some(_) => MethodSig::generic(
            CallConv::DEFAULT,
            3,
            Type::MVar(2),
            vec![Type::MVar(1), Type::MVar(2), Type::Object, state_type.clone()],
        ),
        None => {
            MethodSig::generic(CallConv::DEFAULT, 2, Type::Void, vec![Type::MVar(1), Type::Object, state_type.clone()])
        }
    };
    let end_ref = member_ref(&emit, tokens.invoker, "EndMethod", &end_sig)?;
    let mut end_args = vec![Type::Class(handler_type), target.clone()];
    end_args.extend(returns.clone());
    let end_spec = method_spec(&emit, end_ref, end_args)?;

    let mut wrapper = Wrapper::new(&body, &sig, locals.as_deref()).map_err(|e| e.to_string())?;
    let state = wrapper.add_local(state_type).map_err(|e| e.to_string())?;
    // The instance: `this` (a struct's copied from its address), or null.
    let load_instance = || -> Result<Vec<Instruction>, String> {
        Ok(match (instance, value_type) {
            (true, false) => vec![Instruction::ldarg(0)],
            (true, true) => {
                let token = match &declaring {
                    Type::ValueType(t) => *t,
                    generic => type_spec(&emit, generic)?,
                };
                vec![Instruction::ldarg(0), Instruction::token(OpCode::LDOBJ, token)]
            }
            (false, _) => vec![Instruction::simple(OpCode::LDNULL)],
        })
    };
    let mut begin = load_instance()?;
    let first = u16::from(instance);
    for (i, (_, by_ref)) in args.iter().enumerate() {
        let i = first + i as u16;
        begin.push(if *by_ref { Instruction::ldarg(i) } else { Instruction::ldarga(i) });
    }
    begin.extend([Instruction::token(OpCode::CALL, begin_spec), Instruction::stloc(state)]);
    let mut end = load_instance()?;
    let ret = wrapper.return_local();
    if let Some(r) = ret {
        end.push(Instruction::ldloc(r));
    }
    end.extend([
        Instruction::ldloc(wrapper.exception_local()),
        Instruction::ldloc(state),
        Instruction::token(OpCode::CALL, end_spec),
    ]);
    if let Some(r) = ret {
        end.push(Instruction::stloc(r));
    }
    let call_sig = |t: Token| {
        if t == begin_spec {
            Some(begin_sig.clone())
        } else if t == end_spec {
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
    Ok(wrapped.into_body(Token(locals_token)))
}

/// The startup code of one module: load corprof's assembly by path and call
/// `Corprof.Instrumentation.Startup.Start(config)` through reflection, then [`startup_done`]
/// with its answer. Every reference is to `mscorlib` (and to nothing of corprof's, which the
/// runtime could not bind yet). Made once per module (its strings and references are added to
/// the module's metadata each time), put before the code of any number of its methods.
pub(super) struct StartupCode {
    code: Vec<Instruction>,
    /// The signature behind each call's token in `code`.
    calls: Vec<(Token, MethodSig)>,
}

/// What the startup code adds to a module's metadata: the rows (an AssemblyRef, six TypeRefs,
/// four MemberRefs, a signature) and, at most, the bytes of its strings (UTF-16) and signatures.
pub(super) fn startup_growth(invoker_path: &str, config: &str) -> (usize, usize) {
    (16, 2 * (invoker_path.len() + config.len() + "Corprof.Instrumentation.Startup".len() + 8) + 256)
}

impl StartupCode {
    pub(super) fn new(info: &ProfilerInfo, module: ModuleID, invoker_path: &str, config: &str) -> Result<Self, String> {
        let emit = writable(info, module)?;
        let corlib = assembly_ref(info, module, "mscorlib", (4, 0, 0, 0), &MSCORLIB_TOKEN)?;
        let named = |name: &str| type_ref(&emit, corlib, name);
        let (assembly, ty, method_base, object, int64) = (
            named("System.Reflection.Assembly")?,
            named("System.Type")?,
            named("System.Reflection.MethodBase")?,
            named("System.Object")?,
            named("System.Int64")?,
        );
        let method_info = named("System.Reflection.MethodInfo")?;
        let load_from_sig = plain_sig(false, Type::Class(assembly), vec![Type::String]);
        let get_type_sig = plain_sig(true, Type::Class(ty), vec![Type::String]);
        let get_method_sig = plain_sig(true, Type::Class(method_info), vec![Type::String]);
        let invoke_sig = plain_sig(true, Type::Object, vec![Type::Object, Type::SzArray(Box::new(Type::Object))]);
        let load_from = member_ref(&emit, assembly, "LoadFrom", &load_from_sig)?;
        let get_type = member_ref(&emit, assembly, "GetType", &get_type_sig)?;
        let get_method = member_ref(&emit, ty, "GetMethod", &get_method_sig)?;
        let invoke = member_ref(&emit, method_base, "Invoke", &invoke_sig)?;
        let done_sig = MethodSig::new(CallConv::C, Type::Void, vec![Type::I8]);
        let done_token = Token(
            emit.get_token_from_sig(&done_sig.encode().map_err(|e| e.to_string())?)
                .map_err(|e| format!("a signature token: {e}"))?,
        );
        let string = |s: &str| -> Result<Instruction, String> {
            let t = emit.define_user_string(s).map_err(|e| format!("a string: {e}"))?;
            Ok(Instruction::token(OpCode::LDSTR, Token(t)))
        };
        let code = vec![
            string(invoker_path)?,
            Instruction::token(OpCode::CALL, load_from),
            string("Corprof.Instrumentation.Startup")?,
            Instruction::token(OpCode::CALLVIRT, get_type),
            string("Start")?,
            Instruction::token(OpCode::CALLVIRT, get_method),
            Instruction::simple(OpCode::LDNULL),
            Instruction::ldc_i4(1),
            Instruction::token(OpCode::NEWARR, object),
            Instruction::simple(OpCode::DUP),
            Instruction::ldc_i4(0),
            string(config)?,
            Instruction::simple(OpCode::STELEM_REF),
            Instruction::token(OpCode::CALLVIRT, invoke),
            Instruction::token(OpCode::UNBOX_ANY, int64),
            Instruction {
                opcode: OpCode::LDC_I8,
                operand: Operand::I64(startup_done as extern "C" fn(i64) as usize as i64),
            },
            Instruction::simple(OpCode::CONV_I),
            Instruction::token(OpCode::CALLI, done_token),
        ];
        let calls = vec![
            (load_from, load_from_sig),
            (get_type, get_type_sig),
            (get_method, get_method_sig),
            (invoke, invoke_sig),
            (done_token, done_sig),
        ];
        Ok(StartupCode { code, calls })
    }

    /// `body` (of a method whose signature is `sig` and locals `locals`) with the startup code
    /// before it, guarded: a failure of the startup is swallowed, and the method's own code runs
    /// after it as written. Checked; its locals' token made in the module.
    pub(super) fn before(
        &self,
        info: &ProfilerInfo,
        import: &MetaDataImport,
        module: ModuleID,
        body: &MethodBody,
        sig: &MethodSig,
        locals: Option<&[u8]>,
    ) -> Result<MethodBody, String> {
        let wrapper = Wrapper::new(body, sig, locals).map_err(|e| e.to_string())?;
        let call_sig = |t: Token| {
            self.calls.iter().find(|(c, _)| *c == t).map(|(_, s)| s.clone()).or_else(|| signature_of(import, t))
        };
        let wrapped = wrapper.finish(self.code.iter().cloned(), [], call_sig).map_err(|e| e.to_string())?;
        let emit = writable(info, module)?;
        let locals_token =
            emit.get_token_from_sig(wrapped.locals_signature()).map_err(|e| format!("the locals' token: {e}"))?;
        crate::info_gate::pin_library();
        Ok(wrapped.into_body(Token(locals_token)))
    }
}

/// A signature of no generic parameters, with `this` or static.
fn plain_sig(this: bool, ret: Type, params: Vec<Type>) -> MethodSig {
    MethodSig::new(if this { CallConv::HAS_THIS } else { CallConv::DEFAULT }, ret, params)
}

/// Gives `module` a `<Module>..cctor` whose first act is the [`StartupCode`]; a failure is
/// swallowed by the wrapper's guard (and the methods then stay unwrapped).
pub(super) fn inject_startup(
    info: &ProfilerInfo,
    import: &MetaDataImport,
    module: ModuleID,
    invoker_path: &str,
    config: &str,
) -> Result<(), String> {
    let startup = StartupCode::new(info, module, invoker_path, config)?;
    // `<Module>`'s `.cctor`, if it has one, is wrapped, else one is added with a body of `ret`.
    let void_sig = plain_sig(false, Type::Void, Vec::new());
    let void_bytes = void_sig.encode().map_err(|e| e.to_string())?;
    let cctor = import
        .find_method(MODULE_TYPE, ".cctor", &void_bytes)
        .ok()
        .filter(|m| import.get_method_props(*m).is_ok_and(|p| p.code_rva != 0));
    let (cctor, body, locals) = match cctor {
        Some(m) => {
            let body = info.il_body(module, m).map_err(|e| format!("its module initializer: {e}"))?;
            let locals = locals_of(import, &body)?;
            (m, body, locals)
        }
        None => {
            let emit = writable(info, module)?;
            // private static specialname rtspecialname hidebysig; IL, managed.
            let m = emit
                .define_method(MODULE_TYPE, ".cctor", 0x1891, &void_bytes, 0, 0)
                .map_err(|e| format!("a module initializer: {e}"))?;
            let body = MethodBody::parse(&[0x06, 0x2a]).map_err(|e| e.to_string())?;
            (m, body, None)
        }
    };
    let body = startup.before(info, import, module, &body, &void_sig, locals.as_deref())?;
    // SAFETY: the body is the module initializer's own (or `ret`) behind the startup code,
    // verified by `before`; the startup calls `startup_done`, an extern "C" fn(i64) of this
    // library (pinned by `before`), through `calli` with exactly that unmanaged signature, and
    // otherwise only mscorlib's methods by their own signatures.
    unsafe { info.set_il_body(module, cctor, &body) }.map_err(|e| format!("the runtime refused the startup: {e}"))
}

/// Called once by the startup code, with the handlers `Startup.Start` found.
pub(super) extern "C" fn startup_done(found: i64) {
    if let Some(this) = STARTED.get() {
        let _ = catch_unwind(AssertUnwindSafe(|| this.startup_finished(found as u64)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_checked() {
        for good in ["Handlers.Recorder", "A.B+C", "Plain"] {
            assert_eq!(checked_type_name(good), Ok(()), "{good}");
        }
        for bad in ["", "A.B, Asm", "A.B`1", "A. B", "A+", ".A", "A.B\n", "A[]"] {
            assert!(checked_type_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn assembly_paths_are_checked() {
        let dir = std::env::temp_dir().join(format!("corprof-managed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let reason = |p: &Path| match checked_assembly(p) {
            Err(ManagedError::File { reason, .. }) => reason,
            other => panic!("{}: {other:?}", p.display()),
        };
        assert!(reason(&dir.join("Missing.dll")).starts_with("cannot be found"));
        assert_eq!(reason(&dir), "is not a regular file");
        let text = dir.join("Text.dll");
        std::fs::write(&text, "not a PE file").unwrap();
        assert_eq!(reason(&text), "is not a PE file (an assembly)");
        let named = dir.join("Handlers.exe");
        std::fs::write(&named, "MZ").unwrap();
        assert_eq!(reason(&named), "is not named <AssemblyName>.dll");
        let good = dir.join("Handlers.dll");
        std::fs::write(&good, "MZ").unwrap();
        let (path, name) = checked_assembly(&good).unwrap();
        assert_eq!((path, name.as_str()), (good.canonicalize().unwrap(), "Handlers"));
        let big = dir.join("Big.dll");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_ASSEMBLY_BYTES + 1).unwrap();
        assert!(reason(&big).starts_with("is larger than"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
