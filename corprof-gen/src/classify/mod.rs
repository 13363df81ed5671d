//! [`Api`] → each parameter's and return's kind, computed once (like windows-rs's
//! `ParamHint`/`ReturnHint`). Also the C → Rust spelling of raw types. Later stages only read
//! these kinds; they never look at C types or annotations again.

use crate::annotations::{Direction, ParamSpec};
use crate::diag::{Diagnostic, Errors};
use crate::ir::CType;
use crate::resolve::{ApiMethod, ApiParam};

pub mod call;

/// How a parameter appears in a safe callback signature and how the thunk converts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Passed through as is (IDs, enums, counts).
    Value { ty: String },
    /// A `BOOL`, given to Rust as `bool`.
    Bool,
    /// A DWORD annotated `flags: T`, given to Rust as the flag enum `T`.
    Flags { ty: String },
    /// A `BOOL *` the callee writes: `Out<'_, bool>`, which writes a whole `BOOL`.
    OutBool,
    /// An `HRESULT` value, given to Rust as `HResult`.
    HResult,
    /// `&T`, or `Option<&T>` when optional.
    InRef { ty: String, optional: bool },
    /// A COM interface the callee may call: `&IFoo`, or `Option<&IFoo>`.
    InInterface { ty: String, optional: bool },
    /// `void *` and other untyped pointers stay raw.
    Opaque { ty: String },
    /// `&[T]` of `len` elements (a null pointer gives an empty slice).
    InSlice { ty: String, len: String },
    /// `void *` + a byte count read by the callee: `&[u8]` (a null pointer gives an empty slice).
    InBytes { len: String },
    /// UTF-16 text: NUL-terminated, or `len` code units.
    InStr { len: Option<String>, optional: bool },
    /// Written by the callee through `Out<'_, T>`.
    Out { ty: String },
    /// `&mut T`, or `Option<&mut T>`.
    Ref { ty: String, optional: bool },
    /// A count that a slice or string of this method consumes: not in the safe signature.
    Length,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReturnKind {
    /// `HRESULT`, given to Rust as `Result<()>`.
    HResult,
}

/// The Rust spelling of a C type in raw (FFI) signatures.
pub fn rust_type(ty: &CType) -> String {
    match ty {
        CType::Void => "::core::ffi::c_void".to_string(),
        CType::Builtin(n) => builtin(n).to_string(),
        CType::Named(n) | CType::Interface(n) => n.clone(),
        // bindgen spells the typedef itself as `Option<unsafe extern fn(…)>`.
        CType::FnPtr { typedef, .. } => typedef.clone(),
        CType::Pointer { pointee, is_const } => {
            let inner = rust_type(pointee);
            if *is_const { format!("*const {inner}") } else { format!("*mut {inner}") }
        }
    }
}

fn builtin(c: &str) -> &'static str {
    match c {
        "int" => "::core::ffi::c_int",
        "unsigned int" => "::core::ffi::c_uint",
        "long" => "::core::ffi::c_long",
        "unsigned long" => "::core::ffi::c_ulong",
        "long long" => "::core::ffi::c_longlong",
        "unsigned long long" => "::core::ffi::c_ulonglong",
        "short" => "::core::ffi::c_short",
        "unsigned short" => "::core::ffi::c_ushort",
        "char" => "::core::ffi::c_char",
        "signed char" => "::core::ffi::c_schar",
        "unsigned char" => "::core::ffi::c_uchar",
        "char16_t" => "u16",
        "float" => "f32",
        "double" => "f64",
        "bool" => "bool",
        _ => "::core::ffi::c_int",
    }
}

/// Kinds for one callback method's parameters and return, or why it cannot be mapped.
pub fn classify_method(iface: &str, m: &ApiMethod) -> Result<(Vec<ParamKind>, ReturnKind), Errors> {
    let mut errors = Errors::default();
    if !matches!(&m.ir.ret, CType::Named(n) if n == "HRESULT") {
        errors.push(
            Diagnostic::error(format!("{iface}::{} returns `{}`; callbacks must return HRESULT", m.ir.name, m.ir.ret))
                .declared_at(&m.ir.loc),
        );
    }
    let lengths: Vec<&str> = m.params.iter().filter_map(|p| p.spec.as_ref()?.len.as_deref()).collect();
    let kinds = m
        .params
        .iter()
        .map(|p| {
            if lengths.contains(&p.ir.name.as_str()) {
                return ParamKind::Length;
            }
            match &p.spec {
                None => value_kind(&p.ir.ty),
                Some(spec) if !p.ir.ty.is_pointer() => match &spec.flags {
                    Some(ty) => ParamKind::Flags { ty: ty.clone() },
                    None => value_kind(&p.ir.ty),
                },
                Some(spec) => pointer_kind(iface, m, p, spec, &mut errors),
            }
        })
        .collect();
    errors.check()?;
    Ok((kinds, ReturnKind::HResult))
}

/// `BOOL` as the header spells it (`typedef int BOOL`): `bool` in safe signatures.
pub fn is_bool(ty: &CType) -> bool {
    matches!(ty, CType::Named(n) if n == "BOOL")
}

fn value_kind(ty: &CType) -> ParamKind {
    match ty {
        CType::Named(n) if n == "HRESULT" => ParamKind::HResult,
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

    fn callback(ret: CType, params: Vec<ApiParam>) -> ApiMethod {
        ApiMethod {
            ir: Method { name: "M".into(), ret, params: vec![], loc: Loc::default() },
            params,
            s_false: None,
            wrapper: Default::default(),
            suspends: false,
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
            assert_eq!(spelled(c), rust, "C `{c}`");
        }
    }

    /// The shapes `each_annotation_becomes_one_kind` leaves out: each one's guard in
    /// `value_kind`/`pointer_kind` decides it, and a neighbour's kind would be wrong.
    #[test]
    fn values_interfaces_and_outs_get_their_own_kinds() {
        let iface = |n: &str| CType::Interface(n.into());
        let m = callback(
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
        let refused = |ret: CType, p: ApiParam| match classify_method("I", &callback(ret, vec![p])) {
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

    #[test]
    fn c_types_map_to_rust_spellings() {
        assert_eq!(rust_type(&ptr(named("GUID"), true)), "*const GUID");
        assert_eq!(rust_type(&ptr(ptr(CType::Void, false), false)), "*mut *mut ::core::ffi::c_void");
        assert_eq!(rust_type(&CType::Builtin("int".into())), "::core::ffi::c_int");
        assert_eq!(rust_type(&CType::Interface("IUnknown".into())), "IUnknown");
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
                param("pNew", CType::FnPtr { typedef: "SomeNewCallback".into(), star: false }, None),
            ],
            s_false: None,
            wrapper: Default::default(),
            suspends: false,
        };
        let (kinds, _) = classify_call(&crate::resolve::Api { interfaces: vec![] }, "I", &m).unwrap();
        let contracts: Vec<FnContract> = kinds
            .iter()
            .map(|k| match k {
                CallKind::FnPtr { contract, .. } => *contract,
                other => panic!("not a function pointer: {other:?}"),
            })
            .collect();
        assert_eq!(
            contracts,
            [FnContract::EltHook, FnContract::IdMapper, FnContract::StackSnapshot, FnContract::Callback]
        );
        assert_eq!(rust_type(&fnptr("FunctionEnter3")), "FunctionEnter3", "bindgen's Option<fn> typedef");
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
        };
        let (kinds, _) = classify_call(&crate::resolve::Api { interfaces: vec![] }, "I", &m).unwrap();
        assert_eq!(
            kinds,
            [
                CallKind::LiveId { ty: "ThreadID".into(), contract: IdContract::Thread },
                CallKind::LiveId { ty: "ObjectID".into(), contract: IdContract::Object },
                CallKind::Value { ty: "ClassID".into() },
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
}
