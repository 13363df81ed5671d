//! [`Api`](crate::resolve::Api) → each parameter's and return's kind, computed once (like windows-rs's
//! `ParamHint`/`ReturnHint`). Also the C → Rust spelling of raw types ([`rust_type`],
//! [`rust_return`]), the Info object of an initialize callback ([`info_object_param`]) and, in
//! [`enumerators`], which methods make a wrapper an iterator. Later stages read these kinds and
//! ask these functions; they decide nothing from C types or annotations themselves (the view
//! prints a C signature in docs, and spells raw types only through `rust_type`).

use crate::annotations::{Direction, ParamSpec};
use crate::diag::{Diagnostic, Errors};
use crate::ir::CType;
use crate::resolve::{ApiMethod, ApiParam};

pub mod call;
pub mod enumerators;

/// How a parameter appears in a safe callback signature and how the thunk converts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Passed through as is (IDs, enums, counts).
    Value { ty: RustType },
    /// A `BOOL`, given to Rust as `bool`.
    Bool,
    /// A DWORD annotated `flags: T`, given to Rust as the flag enum `T`.
    Flags { ty: RustType },
    /// A `BOOL *` the callee writes: `Out<'_, bool>`, which writes a whole `BOOL`.
    OutBool,
    /// An `HRESULT` value, given to Rust as `HResult`.
    HResult,
    /// `&T`, or `Option<&T>` when optional.
    InRef { ty: RustType, optional: bool },
    /// A COM interface the callee may call: `&IFoo`, or `Option<&IFoo>`.
    InInterface { ty: RustType, optional: bool },
    /// `void *` and other untyped pointers stay raw.
    Opaque { ty: RustType },
    /// `&[T]` of `len` elements (empty for no elements; a null pointer with a positive count is
    /// refused with `E_POINTER`).
    InSlice { ty: RustType, len: String },
    /// `void *` + a byte count read by the callee: `&[u8]` (as `InSlice`).
    InBytes { len: String },
    /// UTF-16 text: NUL-terminated, or `len` code units.
    InStr { len: Option<String>, optional: bool },
    /// Written by the callee through `Out<'_, T>`.
    Out { ty: RustType },
    /// `&mut T`, or `Option<&mut T>`.
    Ref { ty: RustType, optional: bool },
    /// A count that a slice or string of this method consumes: not in the safe signature.
    Length,
    /// An `ObjectID` annotated `live`: lent as `LiveObject<'_>`, valid for the callback only
    /// (`why` says why the object cannot move while the callback runs; it goes into the docs).
    LiveObject { why: String },
    /// An `in` array of `ObjectID`s annotated `live`: `&[LiveObject<'_>]` of `len` elements,
    /// checked as `InSlice`.
    LiveObjects { len: String, why: String },
    /// A `ModuleID`, `AssemblyID`, `ClassID` or `FunctionID` the callback hands over while its
    /// code is loaded: given as a value and lent to the thread for the callback, so that the
    /// wrappers take it even after some collectible code unloaded (corprof's `unloads` module).
    LentId { ty: RustType },
}

/// Whether a callback's unloadable IDs are of code already gone when it runs: the runtime
/// documents an ID as invalid once its `*UnloadStarted` callback returned, so the `Finished`
/// callbacks (and the unload of a function, whose memory goes with it) lend nothing.
pub fn hands_over_dead_ids(callback: &str) -> bool {
    callback.ends_with("UnloadFinished") || matches!(callback, "FunctionUnloadStarted" | "DynamicMethodUnloaded")
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReturnKind {
    /// `HRESULT`, given to Rust as `Result<()>`.
    HResult,
}

/// A Rust type as raw (FFI) signatures spell it, held by its structure: the view turns it into
/// tokens, and nothing reads a type back from its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RustType {
    /// `()`: what a `void` function returns.
    Unit,
    /// A type by its name: a typedef, record, interface, flag enum or primitive (`ClassID`, `u16`).
    Named(String),
    /// `::core::ffi::<name>` (`c_void`, `c_int`, …).
    CoreFfi(&'static str),
    /// `*const T` / `*mut T`.
    Pointer { is_const: bool, pointee: Box<RustType> },
}

impl RustType {
    pub fn named(name: impl Into<String>) -> Self {
        RustType::Named(name.into())
    }

    /// The name of a type given by name (`ClassID`), for looking it up among the header's
    /// records; `None` for pointers and the others.
    pub fn name(&self) -> Option<&str> {
        match self {
            RustType::Named(n) => Some(n),
            _ => None,
        }
    }
}

/// The spelling the generated code has, for docs and messages.
impl std::fmt::Display for RustType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RustType::Unit => f.write_str("()"),
            RustType::Named(n) => f.write_str(n),
            RustType::CoreFfi(n) => write!(f, "::core::ffi::{n}"),
            RustType::Pointer { is_const: true, pointee } => write!(f, "*const {pointee}"),
            RustType::Pointer { is_const: false, pointee } => write!(f, "*mut {pointee}"),
        }
    }
}

/// Tests write expected kinds as the generated code spells their types (`"*mut ULONG"`).
#[cfg(test)]
impl From<&str> for RustType {
    fn from(text: &str) -> Self {
        if text == "()" {
            RustType::Unit
        } else if let Some(rest) = text.strip_prefix("*const ") {
            RustType::Pointer { is_const: true, pointee: Box::new(rest.into()) }
        } else if let Some(rest) = text.strip_prefix("*mut ") {
            RustType::Pointer { is_const: false, pointee: Box::new(rest.into()) }
        } else if let Some(rest) = text.strip_prefix("::core::ffi::") {
            RustType::CoreFfi(Box::leak(rest.to_string().into_boxed_str()))
        } else {
            RustType::named(text)
        }
    }
}

/// The Rust type of a C type in raw (FFI) signatures.
pub fn rust_type(ty: &CType) -> RustType {
    match ty {
        CType::Void => RustType::CoreFfi("c_void"),
        CType::Builtin(n) => builtin(n),
        CType::Named(n) | CType::Interface(n) => RustType::named(n),
        // bindgen spells the typedef itself as `Option<unsafe extern fn(…)>`.
        CType::FnPtr { typedef, .. } => RustType::named(typedef),
        CType::Pointer { pointee, is_const } => {
            RustType::Pointer { is_const: *is_const, pointee: Box::new(rust_type(pointee)) }
        }
    }
}

/// The Rust return type of a raw slot: `void` returns `()` (`c_void` is a type, not "no value").
pub fn rust_return(ty: &CType) -> RustType {
    if *ty == CType::Void { RustType::Unit } else { rust_type(ty) }
}

/// For `Initialize`/`InitializeForAttach`, the parameter holding the runtime's Info object (the
/// first interface parameter), whose gate the thunk opens; `None` for every other callback.
pub fn info_object_param(m: &ApiMethod) -> Option<&str> {
    if !matches!(m.ir.name.as_str(), "Initialize" | "InitializeForAttach") {
        return None;
    }
    let is_interface =
        |ty: &CType| matches!(ty, CType::Pointer { pointee, .. } if matches!(**pointee, CType::Interface(_)));
    m.params.iter().find(|p| is_interface(&p.ir.ty)).map(|p| p.ir.name.as_str())
}

fn builtin(c: &str) -> RustType {
    match c {
        "int" => RustType::CoreFfi("c_int"),
        "unsigned int" => RustType::CoreFfi("c_uint"),
        "long" => RustType::CoreFfi("c_long"),
        "unsigned long" => RustType::CoreFfi("c_ulong"),
        "long long" => RustType::CoreFfi("c_longlong"),
        "unsigned long long" => RustType::CoreFfi("c_ulonglong"),
        "short" => RustType::CoreFfi("c_short"),
        "unsigned short" => RustType::CoreFfi("c_ushort"),
        "char" => RustType::CoreFfi("c_char"),
        "signed char" => RustType::CoreFfi("c_schar"),
        "unsigned char" => RustType::CoreFfi("c_uchar"),
        "char16_t" => RustType::named("u16"),
        "float" => RustType::named("f32"),
        "double" => RustType::named("f64"),
        "bool" => RustType::named("bool"),
        _ => RustType::CoreFfi("c_int"),
    }
}

/// Kinds for one callback method's parameters and return, or why it cannot be mapped.
pub fn classify_method(iface: &str, m: &ApiMethod) -> Result<(Vec<ParamKind>, ReturnKind), Errors> {
    let mut errors = Errors::default();
    if !m.ir.ret.is_hresult() {
        errors.push(
            Diagnostic::error(format!("{iface}::{} returns `{}`; callbacks must return HRESULT", m.ir.name, m.ir.ret))
                .declared_at(&m.ir.loc),
        );
    }
    // One rule for what a parameter's annotation fills itself, on both sides (`ApiMethod::consumed`).
    let consumed = m.consumed();
    let kinds = m
        .params
        .iter()
        .map(|p| {
            if consumed.contains(&p.ir.name.as_str()) {
                return ParamKind::Length;
            }
            let lends = !hands_over_dead_ids(&m.ir.name);
            match &p.spec {
                None if lends && call::Unload::of(&p.ir.ty).is_some() => ParamKind::LentId { ty: rust_type(&p.ir.ty) },
                None => value_kind(&p.ir.ty),
                Some(spec) if !p.ir.ty.is_pointer() => match (&spec.flags, &spec.live) {
                    (None, Some(why)) if is_object_id(&p.ir.ty) => ParamKind::LiveObject { why: why.clone() },
                    (_, Some(_)) => {
                        errors.push(not_an_object(iface, m, p));
                        value_kind(&p.ir.ty)
                    }
                    (Some(ty), None) => ParamKind::Flags { ty: RustType::named(ty) },
                    (None, None) => value_kind(&p.ir.ty),
                },
                Some(spec) => pointer_kind(iface, m, p, spec, &mut errors),
            }
        })
        .collect();
    errors.check()?;
    Ok((kinds, ReturnKind::HResult))
}

/// `ObjectID`, the one ID a callback may lend for its own duration (annotation `live`).
fn is_object_id(ty: &CType) -> bool {
    matches!(ty, CType::Named(n) if n == "ObjectID")
}

fn not_an_object(iface: &str, m: &ApiMethod, p: &ApiParam) -> Diagnostic {
    Diagnostic::error(format!(
        "`live` on `{}` of {iface}::{}: only an `ObjectID`, or an `in` array of them, can be lent for the callback (the parameter is `{}`)",
        p.ir.name, m.ir.name, p.ir.ty
    ))
    .at_opt(p.spec_loc.clone())
    .declared_at(&p.ir.loc)
}

/// `BOOL` as the header spells it (`typedef int BOOL`): `bool` in safe signatures.
pub fn is_bool(ty: &CType) -> bool {
    matches!(ty, CType::Named(n) if n == "BOOL")
}

fn value_kind(ty: &CType) -> ParamKind {
    match ty {
        ty if ty.is_hresult() => ParamKind::HResult,
        ty if is_bool(ty) => ParamKind::Bool,
        // Reached only for pointers of interfaces that need no annotations.
        other => ParamKind::Value { ty: rust_type(other) },
    }
}

fn pointer_kind(iface: &str, m: &ApiMethod, p: &ApiParam, spec: &ParamSpec, errors: &mut Errors) -> ParamKind {
    let pointee = p.ir.ty.pointee().expect("resolve checked that annotated parameters are pointers");
    let target = rust_type(pointee);
    let unsupported = |what: &str| {
        Diagnostic::error(format!("`{}` of {iface}::{}: {what} is not supported in callbacks", p.ir.name, m.ir.name))
            .at_opt(p.spec_loc.clone())
            .declared_at(&p.ir.loc)
    };
    if spec.flags.is_some() {
        errors.push(unsupported("`flags` on a pointer"));
    }
    if let Some(why) = &spec.live {
        return match (spec.dir, &spec.len) {
            (Direction::In, Some(len)) if !spec.raw && !spec.string && !spec.optional && is_object_id(pointee) => {
                ParamKind::LiveObjects { len: len.clone(), why: why.clone() }
            }
            _ => {
                errors.push(not_an_object(iface, m, p));
                ParamKind::Opaque { ty: rust_type(&p.ir.ty) }
            }
        };
    }
    match spec.dir {
        // `void *pv, UINT cb` read by the callee: bytes, as on the calling side.
        Direction::In if !spec.raw && matches!(pointee, CType::Void) && spec.len.is_some() => {
            ParamKind::InBytes { len: spec.len.clone().unwrap() }
        }
        _ if spec.raw || matches!(pointee, CType::Void) || pointee.is_pointer() => {
            ParamKind::Opaque { ty: rust_type(&p.ir.ty) }
        }
        // `&mut IFoo` would let safe code swap two objects' vtable pointers: interfaces are only
        // ever lent shared.
        Direction::Out | Direction::Ref if matches!(pointee, CType::Interface(_)) => {
            ParamKind::Opaque { ty: rust_type(&p.ir.ty) }
        }
        Direction::In if spec.string => ParamKind::InStr { len: spec.len.clone(), optional: spec.optional },
        Direction::In if spec.len.is_some() => ParamKind::InSlice { ty: target, len: spec.len.clone().unwrap() },
        Direction::In if matches!(pointee, CType::Interface(_)) => {
            ParamKind::InInterface { ty: target, optional: spec.optional }
        }
        Direction::In => ParamKind::InRef { ty: target, optional: spec.optional },
        Direction::Out | Direction::Ref if spec.len.is_some() || spec.string => {
            errors.push(unsupported("an array written by the profiler"));
            ParamKind::Opaque { ty: rust_type(&p.ir.ty) }
        }
        Direction::Out if is_bool(pointee) => ParamKind::OutBool,
        Direction::Out => ParamKind::Out { ty: target },
        Direction::Ref => ParamKind::Ref { ty: target, optional: spec.optional },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Loc, Method, Param};

    fn named(n: &str) -> CType {
        CType::Named(n.into())
    }

    fn ptr(t: CType, is_const: bool) -> CType {
        CType::Pointer { pointee: Box::new(t), is_const }
    }

    fn param(name: &str, ty: CType, spec: Option<ParamSpec>) -> ApiParam {
        let ir = Param {
            name: name.into(),
            ty,
            midl: vec![],
            sal: vec![],
            declared_array: false,
            is_count: false,
            loc: Loc::default(),
        };
        ApiParam { ir, spec, spec_loc: None }
    }

    fn spec(dir: Direction, f: fn(&mut ParamSpec)) -> Option<ParamSpec> {
        let mut s = ParamSpec::direction(dir);
        f(&mut s);
        Some(s)
    }

    /// A method `M` of these parameters (a callback or one the profiler calls).
    fn method(ret: CType, params: Vec<ApiParam>) -> ApiMethod {
        ApiMethod {
            ir: Method { name: "M".into(), ret, params: vec![], loc: Loc::default() },
            params,
            s_false: None,
            wrapper: Default::default(),
            suspends: false,
            refuse_in: Vec::new(),
            docs: None,
            answered_by: None,
        }
    }

    #[test]
    fn every_c_builtin_has_its_own_rust_spelling() {
        let spelled = |c: &str| rust_type(&CType::Builtin(c.into()));
        for (c, rust) in [
            ("unsigned int", "::core::ffi::c_uint"),
            ("long", "::core::ffi::c_long"),
            ("unsigned long", "::core::ffi::c_ulong"),
            ("long long", "::core::ffi::c_longlong"),
            ("unsigned long long", "::core::ffi::c_ulonglong"),
            ("short", "::core::ffi::c_short"),
            ("unsigned short", "::core::ffi::c_ushort"),
            ("char", "::core::ffi::c_char"),
            ("signed char", "::core::ffi::c_schar"),
            ("unsigned char", "::core::ffi::c_uchar"),
            ("char16_t", "u16"),
            ("float", "f32"),
            ("double", "f64"),
            ("bool", "bool"),
        ] {
            assert_eq!(spelled(c).to_string(), rust, "C `{c}`");
        }
    }

    /// The shapes `each_annotation_becomes_one_kind` leaves out: each one's guard in
    /// `value_kind`/`pointer_kind` decides it, and a neighbour's kind would be wrong.
    #[test]
    fn values_interfaces_and_outs_get_their_own_kinds() {
        let iface = |n: &str| CType::Interface(n.into());
        let m = method(
            named("HRESULT"),
            vec![
                param("fSafe", named("BOOL"), None),
                param("dwEvents", named("DWORD"), spec(Direction::In, |s| s.flags = Some("COR_PRF_MONITOR".into()))),
                param("cItems", named("ULONG"), spec(Direction::In, |_| {})),
                param("pInfo", ptr(iface("IInfo"), false), spec(Direction::In, |_| {})),
                param("pGuid", ptr(named("GUID"), true), spec(Direction::In, |_| {})),
                param("pOut", ptr(iface("IInfo"), false), spec(Direction::Out, |_| {})),
                param("pRef", ptr(iface("IInfo"), false), spec(Direction::Ref, |_| {})),
                param("pValue", ptr(named("ULONG"), false), spec(Direction::Out, |_| {})),
                param("pState", ptr(named("ULONG"), false), spec(Direction::Ref, |_| {})),
            ],
        );
        let (kinds, _) = classify_method("I", &m).unwrap();
        assert_eq!(
            kinds,
            vec![
                ParamKind::Bool,
                ParamKind::Flags { ty: "COR_PRF_MONITOR".into() },
                ParamKind::Value { ty: "ULONG".into() },
                ParamKind::InInterface { ty: "IInfo".into(), optional: false },
                ParamKind::InRef { ty: "GUID".into(), optional: false },
                ParamKind::Opaque { ty: "*mut IInfo".into() },
                ParamKind::Opaque { ty: "*mut IInfo".into() },
                ParamKind::Out { ty: "ULONG".into() },
                ParamKind::Ref { ty: "ULONG".into(), optional: false },
            ]
        );
    }

    #[test]
    fn callbacks_refuse_what_a_thunk_cannot_convert() {
        let refused = |ret: CType, p: ApiParam| match classify_method("I", &method(ret, vec![p])) {
            Ok(kinds) => panic!("accepted as {kinds:?}"),
            Err(e) => e.to_string(),
        };
        let ulong_ptr = || ptr(named("ULONG"), false);
        let e =
            refused(named("HRESULT"), param("pIds", ulong_ptr(), spec(Direction::Out, |s| s.len = Some("c".into()))));
        assert!(e.contains("`pIds` of I::M: an array written by the profiler is not supported"), "{e}");
        let e = refused(
            named("HRESULT"),
            param("wsz", ptr(named("WCHAR"), false), spec(Direction::Ref, |s| s.string = true)),
        );
        assert!(e.contains("`wsz` of I::M: an array written by the profiler"), "{e}");
        let e = refused(named("HRESULT"), param("p", ulong_ptr(), spec(Direction::In, |s| s.flags = Some("F".into()))));
        assert!(e.contains("`p` of I::M: `flags` on a pointer is not supported"), "{e}");
        let e = refused(named("ULONG"), param("n", named("ULONG"), None));
        assert!(e.contains("I::M returns `ULONG`; callbacks must return HRESULT"), "{e}");
    }

    /// `live` lends an `ObjectID` value or `in` array of them for the callback, and nothing else:
    /// a ThreadID, an array of counts, an out ObjectID, a raw or optional array, `flags` beside it,
    /// or a parameter of a method the profiler calls.
    #[test]
    fn only_callback_objects_are_lent() {
        let live = |s: &mut ParamSpec| s.live = Some("why".into());
        let oid_array = || ptr(named("ObjectID"), false);
        let m = method(
            named("HRESULT"),
            vec![
                param("objectId", named("ObjectID"), spec(Direction::In, live)),
                param("cRefs", named("ULONG"), None),
                param(
                    "refs",
                    oid_array(),
                    spec(Direction::In, |s| {
                        s.len = Some("cRefs".into());
                        s.live = Some("during a GC".into());
                    }),
                ),
                param("kept", named("ObjectID"), None),
            ],
        );
        let (kinds, _) = classify_method("I", &m).expect("classifies");
        assert_eq!(
            kinds,
            [
                ParamKind::LiveObject { why: "why".into() },
                ParamKind::Length,
                ParamKind::LiveObjects { len: "cRefs".into(), why: "during a GC".into() },
                ParamKind::Value { ty: "ObjectID".into() },
            ]
        );
        let refused = |p: ApiParam| match classify_method("I", &method(named("HRESULT"), vec![p])) {
            Ok(kinds) => panic!("accepted as {kinds:?}"),
            Err(e) => e.to_string(),
        };
        let counted_live = |extra: fn(&mut ParamSpec)| {
            let mut s = ParamSpec::direction(Direction::In);
            s.live = Some("x".into());
            s.len = Some("c".into());
            extra(&mut s);
            Some(s)
        };
        for (p, ty) in [
            (param("threadId", named("ThreadID"), spec(Direction::In, live)), "ThreadID"),
            (
                param(
                    "o",
                    named("ObjectID"),
                    counted_live(|s| s.len = None).map(|s| ParamSpec { flags: Some("F".into()), ..s }),
                ),
                "ObjectID",
            ),
            (param("o", oid_array(), spec(Direction::Out, live)), "ObjectID *"),
            (param("o", oid_array(), spec(Direction::In, live)), "ObjectID *"),
            (param("o", oid_array(), counted_live(|s| s.raw = true)), "ObjectID *"),
            (param("o", oid_array(), counted_live(|s| s.optional = true)), "ObjectID *"),
            (param("o", oid_array(), counted_live(|s| s.string = true)), "ObjectID *"),
            (param("counts", ptr(named("ULONG"), false), counted_live(|_| {})), "ULONG *"),
        ] {
            let e = refused(p);
            assert!(e.contains("can be lent for the callback (the parameter is `") && e.contains(ty), "{e}");
        }
        let api = crate::resolve::Api::new(vec![]);
        let call = method(named("HRESULT"), vec![param("objectId", named("ObjectID"), spec(Direction::In, live))]);
        let e = call::classify_call(&api, "I", &call).map(|_| ()).expect_err("refused").to_string();
        assert!(e.contains("`live` on `objectId` of I::M: only callback parameters are lent"), "{e}");
    }

    /// Every parameter shape of a method the profiler calls, one per guard of `classify_call` and
    /// `call::pointer_kind`.
    #[test]
    fn every_call_shape_has_its_kind() {
        use call::{CallKind, CallReturn, classify_call};
        let api = crate::resolve::Api::new(vec![]);
        let ulong_ptr = || ptr(named("ULONG"), false);
        let void_ptr = || ptr(CType::Void, false);
        let m = method(
            named("HRESULT"),
            vec![
                param("hrStatus", named("HRESULT"), None),
                param("fEnable", named("BOOL"), None),
                param("ulValue", named("ULONG"), None),
                param("pRaw", ulong_ptr(), None),
                param("dwEvents", named("DWORD"), spec(Direction::In, |s| s.flags = Some("F".into()))),
                param("cbExtra", named("ULONG"), spec(Direction::In, |_| {})),
                param("pRawIn", ulong_ptr(), spec(Direction::In, |s| s.raw = true)),
                param("wszName", ptr(named("WCHAR"), true), spec(Direction::In, |s| s.optional = true)),
                param("wszText", ptr(named("WCHAR"), true), spec(Direction::In, |s| s.string = true)),
                param("pvData", void_ptr(), spec(Direction::In, |s| s.len = Some("cbData".into()))),
                param("cbData", named("ULONG"), None),
                param("pvAny", void_ptr(), spec(Direction::In, |_| {})),
                param("ppIn", ptr(ulong_ptr(), false), spec(Direction::In, |_| {})),
                param("ids", ptr(named("FunctionID"), true), spec(Direction::In, |s| s.len = Some("cIds".into()))),
                param("cIds", named("ULONG"), None),
                param("riid", named("REFIID"), None),
                param("ppv", ptr(void_ptr(), false), spec(Direction::Out, |s| s.iid = Some("riid".into()))),
                param(
                    "ppUnk",
                    ptr(ptr(CType::Interface("IUnknown".into()), false), false),
                    spec(Direction::Out, |_| {}),
                ),
                param("ppData", ptr(ulong_ptr(), false), spec(Direction::Out, |_| {})),
                param("pdwFlags", ptr(named("DWORD"), false), spec(Direction::Out, |s| s.flags = Some("F".into()))),
                param("pfDone", ptr(named("BOOL"), false), spec(Direction::Out, |_| {})),
                param("pValue", ulong_ptr(), spec(Direction::Out, |_| {})),
                param("pState", ulong_ptr(), spec(Direction::Ref, |_| {})),
                param("pvState", void_ptr(), spec(Direction::Ref, |_| {})),
            ],
        );
        let (kinds, ret) = classify_call(&api, "I", &m).unwrap();
        assert_eq!(ret, CallReturn::HResult);
        assert_eq!(
            kinds,
            vec![
                CallKind::HResult,
                CallKind::Bool,
                CallKind::Value { ty: "ULONG".into() },
                CallKind::Raw { ty: "*mut ULONG".into() },
                CallKind::Flags { ty: "F".into() },
                CallKind::Value { ty: "ULONG".into() },
                CallKind::Raw { ty: "*mut ULONG".into() },
                CallKind::InRef { ty: "WCHAR".into(), optional: true },
                CallKind::InStr { len: None, optional: false },
                CallKind::InSlice { ty: "u8".into(), len: "cbData".into(), optional: false, unload: None },
                CallKind::Consumed,
                CallKind::Raw { ty: "*mut ::core::ffi::c_void".into() },
                CallKind::Raw { ty: "*mut *mut ULONG".into() },
                CallKind::InSlice {
                    ty: "FunctionID".into(),
                    len: "cIds".into(),
                    optional: false,
                    unload: Some(call::Unload::Function),
                },
                CallKind::Consumed,
                CallKind::Consumed,
                CallKind::OutIid { iid: "riid".into() },
                CallKind::OutInterface { iface: "IUnknown".into(), family: None },
                CallKind::Out { ty: "*mut ULONG".into(), unload: None },
                CallKind::OutFlags { ty: "F".into(), raw: "DWORD".into() },
                CallKind::OutBool,
                CallKind::Out { ty: "ULONG".into(), unload: None },
                CallKind::Ref { ty: "ULONG".into(), optional: false },
                CallKind::Raw { ty: "*mut ::core::ffi::c_void".into() },
            ]
        );
        let outputs: Vec<bool> = kinds.iter().map(CallKind::is_output).collect();
        let mut expected = vec![false; kinds.len()];
        expected[16..22].fill(true);
        assert_eq!(outputs, expected, "is_output of {kinds:?}");
        let buffers = [
            CallKind::OutString { cap: "c".into(), len: "pc".into() },
            CallKind::OutArray { ty: "T".into(), cap: "c".into(), len: "pc".into(), unload: None },
        ];
        assert!(buffers.iter().all(CallKind::is_output));
    }

    #[test]
    fn calls_return_what_the_header_and_s_false_say() {
        use call::{CallReturn, classify_call};
        let api = crate::resolve::Api::new(vec![]);
        let ret = |ret: CType, s_false: Option<&str>| {
            let mut m = method(ret, vec![]);
            m.s_false = s_false.map(String::from);
            classify_call(&api, "I", &m).unwrap().1
        };
        assert_eq!(ret(named("HRESULT"), None), CallReturn::HResult);
        assert_eq!(ret(named("HRESULT"), Some("no")), CallReturn::HResultOrFalse { meaning: "no".into() });
        assert_eq!(ret(CType::Void, None), CallReturn::Void);
        assert_eq!(ret(named("ULONG"), None), CallReturn::Value { ty: "ULONG".into() });
    }

    #[test]
    fn calls_refuse_shapes_a_wrapper_cannot_take() {
        use call::classify_call;
        let api = crate::resolve::Api::new(vec![]);
        let refused = |ret: CType, params: Vec<ApiParam>| match classify_call(&api, "I", &method(ret, params)) {
            Ok(kinds) => panic!("accepted as {kinds:?}"),
            Err(e) => e.to_string(),
        };
        let hr = || named("HRESULT");
        let ulong_ptr = || ptr(named("ULONG"), false);
        let out_array = |name: &str| {
            param(name, ulong_ptr(), spec(Direction::Out, |s| (s.cap, s.len) = (Some("c".into()), Some("pc".into()))))
        };
        let corenum = || param("phEnum", ptr(named("HCORENUM"), false), spec(Direction::Ref, |s| s.corenum = true));

        let e = refused(hr(), vec![param("pv", ptr(CType::Void, false), spec(Direction::Out, |_| {}))]);
        assert!(e.contains("`pv` of I::M: `void *` outs need `iid` or `raw: true`"), "{e}");
        let e = refused(hr(), vec![param("p", ulong_ptr(), spec(Direction::Out, |s| s.cap = Some("c".into())))]);
        assert!(e.contains("`p` of I::M: an out buffer needs both `cap`"), "{e}");
        let e = refused(hr(), vec![param("p", ulong_ptr(), spec(Direction::Out, |s| s.len = Some("c".into())))]);
        assert!(e.contains("`p` of I::M: an out buffer needs both `cap`"), "{e}");
        let e = refused(hr(), vec![param("p", ulong_ptr(), spec(Direction::Ref, |s| s.len = Some("c".into())))]);
        assert!(e.contains("`p` of I::M: in-out arrays are not supported"), "{e}");
        let e = refused(hr(), vec![param("p", ptr(named("WCHAR"), false), spec(Direction::Ref, |s| s.string = true))]);
        assert!(e.contains("`p` of I::M: in-out arrays are not supported"), "{e}");
        let e = refused(named("ULONG"), vec![param("p", ulong_ptr(), spec(Direction::Out, |_| {}))]);
        assert!(e.contains("I::M has outputs but does not return HRESULT"), "{e}");
        let e = refused(CType::Void, vec![param("p", ptr(named("BOOL"), false), spec(Direction::Out, |_| {}))]);
        assert!(e.contains("I::M has outputs but does not return HRESULT"), "{e}");
        let e = refused(hr(), vec![corenum()]);
        assert!(e.contains("I::M: a `corenum` method needs exactly one out array"), "{e}");
        let e = refused(hr(), vec![corenum(), out_array("rA"), out_array("rB")]);
        assert!(e.contains("I::M: a `corenum` method needs exactly one out array"), "{e}");

        // What stays accepted next to the refusals: one out array beside the handle, and a
        // value-returning method without outputs.
        assert!(classify_call(&api, "I", &method(hr(), vec![corenum(), out_array("rA")])).is_ok());
        let counted = method(named("ULONG"), vec![param("p", ulong_ptr(), spec(Direction::In, |_| {}))]);
        assert!(classify_call(&api, "I", &counted).is_ok());
    }

    #[test]
    fn only_info_and_metadata_families_are_free_threaded() {
        use call::is_free_threaded;
        assert!(is_free_threaded("ICorProfilerInfo"));
        assert!(is_free_threaded("IMetaDataImport"));
        assert!(!is_free_threaded("ICorProfilerMethodEnum"));
        assert!(!is_free_threaded("IMethodMalloc"));
    }

    #[test]
    fn c_types_map_to_rust_spellings() {
        assert_eq!(rust_type(&ptr(named("GUID"), true)).to_string(), "*const GUID");
        assert_eq!(rust_type(&ptr(ptr(CType::Void, false), false)).to_string(), "*mut *mut ::core::ffi::c_void");
        assert_eq!(rust_type(&CType::Builtin("int".into())).to_string(), "::core::ffi::c_int");
        assert_eq!(rust_type(&CType::Interface("IUnknown".into())).to_string(), "IUnknown");
    }

    #[test]
    fn function_pointers_the_runtime_calls_carry_their_typedefs_contract() {
        use call::{CallKind, FnContract, classify_call};
        let fnptr = |t: &str| CType::FnPtr { typedef: t.into(), star: true };
        let m = ApiMethod {
            ir: Method { name: "SetHooks".into(), ret: named("HRESULT"), params: vec![], loc: Loc::default() },
            params: vec![
                param("pEnter", fnptr("FunctionEnter3"), None),
                param("pMapper", fnptr("FunctionIDMapper2"), None),
                param("cb", fnptr("StackSnapshotCallback"), None),
                param("objects", CType::FnPtr { typedef: "ObjectCallback".into(), star: false }, None),
                param("pCallback", fnptr("EventPipeProviderCallback"), None),
                param("pNew", CType::FnPtr { typedef: "SomeNewCallback".into(), star: false }, None),
            ],
            s_false: None,
            wrapper: Default::default(),
            suspends: false,
            refuse_in: Vec::new(),
            docs: None,
            answered_by: None,
        };
        let (kinds, _) = classify_call(&crate::resolve::Api::new(vec![]), "I", &m).unwrap();
        let contracts: Vec<FnContract> = kinds
            .iter()
            .map(|k| match k {
                CallKind::FnPtr { contract, .. } => *contract,
                other => panic!("not a function pointer: {other:?}"),
            })
            .collect();
        assert_eq!(
            contracts,
            [
                FnContract::EltHook,
                FnContract::IdMapper,
                FnContract::StackSnapshot,
                FnContract::HeapWalk,
                FnContract::ProviderCallback,
                FnContract::Callback
            ]
        );
        assert_eq!(rust_type(&fnptr("FunctionEnter3")).to_string(), "FunctionEnter3", "bindgen's Option<fn> typedef");
    }

    #[test]
    fn ids_that_die_make_the_wrapper_state_when_they_are_alive() {
        use call::{CallKind, IdContract, classify_call};
        let m = ApiMethod {
            ir: Method { name: "M".into(), ret: named("HRESULT"), params: vec![], loc: Loc::default() },
            params: vec![
                param("threadId", named("ThreadID"), None),
                param("objectId", named("ObjectID"), None),
                param("classId", named("ClassID"), None),
            ],
            s_false: None,
            wrapper: Default::default(),
            suspends: false,
            refuse_in: Vec::new(),
            docs: None,
            answered_by: None,
        };
        let (kinds, _) = classify_call(&crate::resolve::Api::new(vec![]), "I", &m).unwrap();
        assert_eq!(
            kinds,
            [
                CallKind::LiveId { ty: "ThreadID".into(), contract: IdContract::Thread },
                CallKind::LiveId { ty: "ObjectID".into(), contract: IdContract::Object },
                CallKind::Unloadable { ty: "ClassID".into(), id: call::Unload::Class },
            ]
        );
    }

    #[test]
    fn each_annotation_becomes_one_kind() {
        let spec = |dir, f: fn(&mut ParamSpec)| {
            let mut s = ParamSpec::direction(dir);
            f(&mut s);
            Some(s)
        };
        let m = ApiMethod {
            ir: Method { name: "M".into(), ret: named("HRESULT"), params: vec![], loc: Loc::default() },
            s_false: None,
            wrapper: Default::default(),
            suspends: false,
            refuse_in: Vec::new(),
            docs: None,
            answered_by: None,
            params: vec![
                param("hr", named("HRESULT"), None),
                param("cIds", named("ULONG"), None),
                param("ids", ptr(named("FunctionID"), false), spec(Direction::In, |s| s.len = Some("cIds".into()))),
                param("pDone", ptr(named("BOOL"), false), spec(Direction::Out, |_| {})),
                param("pCount", ptr(named("ULONG"), false), spec(Direction::Ref, |s| s.optional = true)),
                param("wsz", ptr(named("WCHAR"), true), spec(Direction::In, |s| s.string = true)),
                param("pv", ptr(CType::Void, false), spec(Direction::In, |_| {})),
                param("cb", named("UINT"), None),
                param("pvData", ptr(CType::Void, false), spec(Direction::In, |s| s.len = Some("cb".into()))),
            ],
        };
        let (kinds, ret) = classify_method("I", &m).unwrap();
        assert_eq!(ret, ReturnKind::HResult);
        assert_eq!(
            kinds,
            vec![
                ParamKind::HResult,
                ParamKind::Length,
                ParamKind::InSlice { ty: "FunctionID".into(), len: "cIds".into() },
                ParamKind::OutBool,
                ParamKind::Ref { ty: "ULONG".into(), optional: true },
                ParamKind::InStr { len: None, optional: false },
                ParamKind::Opaque { ty: "*mut ::core::ffi::c_void".into() },
                ParamKind::Length,
                ParamKind::InBytes { len: "cb".into() },
            ]
        );
    }

    /// The former homes of "a parameter another one fills": the callback side's own `lengths`
    /// (every `len`, even a `raw` one's, never `cap` or `iid`) and `ApiMethod::consumed` (the
    /// calling side's). Now both sides hide exactly what `consumed` names, on every case where
    /// they disagreed: a `cap`, an `iid`, and the `len` of a `raw` parameter (which stays the
    /// caller's to pass). Neither the goldens nor runtime-info15's bindings had such a callback.
    #[test]
    fn callbacks_and_calls_hide_the_same_counts() {
        use call::{CallKind, classify_call};
        let api = crate::resolve::Api::new(vec![]);
        let ulong_ptr = || ptr(named("ULONG"), false);
        let m = method(
            named("HRESULT"),
            vec![
                param("ids", ptr(named("FunctionID"), true), spec(Direction::In, |s| s.len = Some("cIds".into()))),
                param("cIds", named("ULONG"), None),
                param(
                    "pRaw",
                    ulong_ptr(),
                    spec(Direction::In, |s| {
                        s.raw = true;
                        s.len = Some("cRaw".into());
                    }),
                ),
                param("cRaw", named("ULONG"), None),
                param("cap", named("ULONG"), None),
                param("riid", named("REFIID"), None),
            ],
        );
        // What the annotations of a callback could say, kept to specs `classify_method` accepts
        // (`cap`/`iid` name parameters the way the calling side's out buffers do).
        let mut with_cap = m.clone();
        with_cap.params[0].spec.as_mut().unwrap().cap = Some("cap".into());
        with_cap.params[0].spec.as_mut().unwrap().iid = Some("riid".into());
        let consumed = with_cap.consumed();
        assert_eq!(consumed, ["cIds", "cap", "riid"]);
        let (callback, _) = classify_method("I", &with_cap).expect("classified");
        let hidden: Vec<&str> = with_cap
            .params
            .iter()
            .zip(&callback)
            .filter(|(_, k)| **k == ParamKind::Length)
            .map(|(p, _)| p.ir.name.as_str())
            .collect();
        assert_eq!(hidden, consumed, "the callback side hides what `consumed` names");
        let (call, _) = classify_call(&api, "I", &with_cap).expect("classified");
        let hidden: Vec<&str> = with_cap
            .params
            .iter()
            .zip(&call)
            .filter(|(_, k)| **k == CallKind::Consumed)
            .map(|(p, _)| p.ir.name.as_str())
            .collect();
        assert_eq!(hidden, consumed, "the calling side hides what `consumed` names");
    }
}
