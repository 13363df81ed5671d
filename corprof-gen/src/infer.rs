//! Draft annotations inferred from the header (for `corprof-gen bootstrap`): MIDL attribute
//! comments (`[in]`, `[out]`, `[out][in]`), SAL annotations (`_Out_writes_to_(cap, *len)`,
//! `_In_reads_opt_(n)`, `_COM_Outptr_`), cor.h's `// [IN]` comments and the C types. Every
//! result is marked `draft: true`: a person (or a reviewer) checks it against the documentation.

use crate::annotations::{Direction, ParamSpec};
use crate::contract::{Contract, Count, contract_with_idl};
use crate::idl::IdlParam;
use crate::ir::{CType, Method, Param};
use std::fmt::Write;

/// What the IDL beside the header says of a parameter of the method being drafted, by name
/// (`corprof.idl`'s `[in, size_is(n)]`, which MIDL's C header drops).
pub type IdlOf<'a> = &'a dyn Fn(&str) -> Option<&'a IdlParam>;

/// The inferred annotation of one pointer parameter; `None` when it is consumed by another
/// parameter (a count, capacity or IID) or is not a pointer. `idl` gives the IDL's attributes of
/// the method's parameters where the header folder has one (`|_| None` otherwise).
pub fn infer(method: &Method, param: &Param, idl: IdlOf<'_>) -> Option<ParamSpec> {
    let pointee = param.ty.pointee()?;
    if consumed_by_others(method, idl).contains(&param.name.as_str()) {
        return None;
    }
    let mut spec = ParamSpec::direction(direction(param, idl));
    spec.draft = true;
    if matches!(pointee, CType::Named(n) if n == "HCORENUM") {
        spec.dir = Direction::Ref;
        spec.corenum = true;
        return Some(spec);
    }
    if pointee.is_untyped_interface_pointer()
        && let Some(riid) = method.params.iter().find(|p| is_iid(&p.ty))
    {
        spec.dir = Direction::Out;
        spec.iid = Some(riid.name.clone());
        return Some(spec);
    }
    spec.string = matches!(pointee, CType::Named(n) if n == "WCHAR");
    let said = said(param, idl);
    spec.optional = said.optional.is_some();
    match said.count.map(|c| c.value) {
        Some(Count::Writes { cap, len }) => {
            spec.cap = Some(cap);
            spec.len = len;
        }
        Some(Count::Reads { len }) => spec.len = Some(len),
        None => {}
    }
    // `pcFoo` is the count of `rFoo`, not an array counted by `cFoo`.
    let is_count = param.name.starts_with("pc");
    let is_array = said.sized.is_some()
        || param.declared_array
        || (!spec.string && !is_count && counted_by_name(method, param).is_some());
    if is_array && spec.len.is_none() && spec.cap.is_none() {
        guess_counts(method, param, &mut spec);
    }
    if spec.dir != Direction::In && spec.string && spec.cap.is_none() {
        guess_counts(method, param, &mut spec);
    }
    // Shapes the safe layer cannot size: in-out arrays, out buffers without a written-back
    // count, arrays of interface pointers. Drafted raw, so the draft builds and a reviewer sees.
    let interface_array =
        is_array && matches!(pointee, CType::Pointer { pointee, .. } if matches!(**pointee, CType::Interface(_)));
    let unsized_out = spec.dir == Direction::Out && spec.cap.is_some() && spec.len.is_none();
    let in_out_array = spec.dir == Direction::Ref && (spec.len.is_some() || spec.cap.is_some());
    if interface_array || unsized_out || in_out_array {
        spec = ParamSpec { raw: true, draft: true, ..ParamSpec::direction(spec.dir) };
    }
    Some(spec)
}

fn is_iid(ty: &CType) -> bool {
    matches!(ty.pointee(), Some(CType::Named(n)) if n == "IID" || n == "GUID")
}

/// What the header, and the IDL beside it, say of `p`.
fn said(p: &Param, idl: IdlOf<'_>) -> Contract {
    contract_with_idl(p, idl(&p.name))
}

fn direction(p: &Param, idl: IdlOf<'_>) -> Direction {
    if let Some(said) = said(p, idl).dir() {
        return said.value;
    }
    if matches!(&p.ty, CType::Pointer { is_const: true, .. }) || matches!(p.ty.pointee(), Some(CType::Void)) {
        // Unmarked `void *` is client data or a buffer handed in: nothing comes back through it.
        Direction::In
    } else {
        // Unmarked non-const pointers are usually results (cor.h leaves many unmarked).
        Direction::Out
    }
}

/// Names used as counts by the method's SAL annotations, and the REFIID of a `void **` out.
fn consumed_by_others<'m>(method: &'m Method, idl: IdlOf<'_>) -> Vec<&'m str> {
    let mut out = Vec::new();
    let has_void_out = method.params.iter().any(|p| p.ty.pointee().is_some_and(CType::is_untyped_interface_pointer));
    if has_void_out {
        out.extend(method.params.iter().filter(|p| is_iid(&p.ty)).map(|p| p.name.as_str()));
    }
    for p in &method.params {
        for name in said(p, idl).count_names() {
            if let Some(q) = method.params.iter().find(|q| q.name == name) {
                out.push(q.name.as_str());
            }
        }
    }
    out
}

/// `cMax`, `cchName`, `cbData`: a count by its name.
fn looks_like_count(name: &str) -> bool {
    let rest = name.strip_prefix("cch").or_else(|| name.strip_prefix("cb")).or_else(|| name.strip_prefix('c'));
    rest.and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_uppercase())
}

/// `pvSigBlob` → `SigBlob`: the name without its Hungarian prefix.
fn stem(name: &str) -> &str {
    name.trim_start_matches(|c: char| c.is_ascii_lowercase())
}

/// A value parameter named after this one (`cbSigBlob` for `pvSigBlob`, `cMax`-style aside).
fn counted_by_name<'m>(method: &'m Method, param: &Param) -> Option<&'m Param> {
    let wanted = stem(&param.name);
    (!wanted.is_empty()).then_some(())?;
    method
        .params
        .iter()
        .find(|p| !p.ty.is_pointer() && p.name != param.name && stem(&p.name) == wanted && p.name.starts_with('c'))
}

/// For arrays without SAL: a count named after the array (`cbSigBlob` for `pvSigBlob`), else
/// the nearest value parameter named `c…`; for outs the `pc…` pointer is the actual count.
fn guess_counts(method: &Method, param: &Param, spec: &mut ParamSpec) {
    let at = method.params.iter().position(|p| p.name == param.name).unwrap_or(0);
    let named = counted_by_name(method, param).map(|p| p.name.clone());
    // The nearest count-like value (`cMax`, `cchName`, `cbData`; not a token like `cl`): MIDL
    // puts an in array's count before it and an out buffer's capacity after it.
    let before = method.params[..at].iter().rev();
    let after = method.params[at + 1..].iter();
    let order: Vec<&Param> =
        if spec.dir == Direction::In { before.chain(after).collect() } else { after.chain(before).collect() };
    let value_count = named.or_else(|| {
        order.into_iter().find(|p| !p.ty.is_pointer() && looks_like_count(&p.name)).map(|p| p.name.clone())
    });
    if spec.dir == Direction::In {
        spec.len = value_count;
        return;
    }
    spec.cap = value_count;
    let pc = |p: &&Param| p.ty.is_pointer() && p.name.starts_with("pc");
    spec.len = method.params[at..]
        .iter()
        .find(|p| pc(p) && stem(&p.name) == stem(&param.name))
        .or_else(|| method.params.iter().find(pc))
        .map(|p| p.name.clone());
}

/// YAML for one interface's drafts: `Method:` → `param: { … }`, in declaration order.
pub fn draft_yaml(interface: &str, methods: &[(String, Vec<(String, ParamSpec)>)]) -> String {
    let mut out = format!("{interface}:\n");
    for (method, params) in methods {
        let _ = writeln!(out, "  {method}:");
        for (name, spec) in params {
            let _ = writeln!(out, "    {name}: {}", spec_yaml(spec));
        }
    }
    out
}

/// The shortest YAML for a spec: a bare direction when nothing else is set.
pub fn spec_yaml(spec: &ParamSpec) -> String {
    let dir = match spec.dir {
        Direction::In => "in",
        Direction::Out => "out",
        Direction::Ref => "ref",
    };
    let mut fields = vec![format!("dir: {dir}")];
    for (key, value) in [("len", &spec.len), ("cap", &spec.cap), ("iid", &spec.iid)] {
        if let Some(v) = value {
            fields.push(format!("{key}: {v}"));
        }
    }
    let flags = [
        ("string", spec.string),
        ("optional", spec.optional),
        ("corenum", spec.corenum),
        ("raw", spec.raw),
        ("draft", spec.draft),
    ];
    for (key, on) in flags {
        if on {
            fields.push(format!("{key}: true"));
        }
    }
    if fields.len() == 1 { dir.to_string() } else { format!("{{ {} }}", fields.join(", ")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Loc;

    fn param(name: &str, ty: CType, midl: &[&str], sal: &[&str]) -> Param {
        Param {
            name: name.into(),
            ty,
            midl: midl.iter().map(|s| s.to_string()).collect(),
            sal: sal.iter().map(|s| s.to_string()).collect(),
            declared_array: false,
            is_count: false,
            loc: Loc::default(),
        }
    }

    fn ptr(t: CType) -> CType {
        CType::Pointer { pointee: Box::new(t), is_const: false }
    }

    fn named(n: &str) -> CType {
        CType::Named(n.into())
    }

    #[test]
    fn sal_string_buffers_become_cap_len_strings() {
        let m = Method {
            name: "GetModuleInfo".into(),
            ret: named("HRESULT"),
            params: vec![
                param("cchName", named("ULONG"), &["in"], &[]),
                param("pcchName", ptr(named("ULONG")), &["out"], &[]),
                param("szName", ptr(named("WCHAR")), &["annotation", "out"], &["_Out_writes_to_(cchName,*pcchName)"]),
            ],
            loc: Loc::default(),
        };
        assert_eq!(infer(&m, &m.params[1], &|_| None), None, "the count is consumed");
        let spec = infer(&m, &m.params[2], &|_| None).unwrap();
        assert_eq!(spec_yaml(&spec), "{ dir: out, len: pcchName, cap: cchName, string: true, draft: true }");
    }

    #[test]
    fn iid_outs_enums_and_plain_directions() {
        let m = Method {
            name: "GetModuleMetaData".into(),
            ret: named("HRESULT"),
            params: vec![
                param("riid", CType::Pointer { pointee: Box::new(named("IID")), is_const: true }, &["in"], &[]),
                param("ppOut", ptr(ptr(CType::Void)), &["out"], &[]),
                param("phEnum", ptr(named("HCORENUM")), &[], &[]),
                param("pBoth", ptr(named("ULONG")), &["out", "in"], &[]),
            ],
            loc: Loc::default(),
        };
        assert_eq!(spec_yaml(&infer(&m, &m.params[1], &|_| None).unwrap()), "{ dir: out, iid: riid, draft: true }");
        assert_eq!(spec_yaml(&infer(&m, &m.params[2], &|_| None).unwrap()), "{ dir: ref, corenum: true, draft: true }");
        assert_eq!(spec_yaml(&infer(&m, &m.params[3], &|_| None).unwrap()), "{ dir: ref, draft: true }");
    }

    #[test]
    fn capacities_follow_the_array_and_tokens_are_not_counts() {
        let m = Method {
            name: "EnumMembers".into(),
            ret: named("HRESULT"),
            params: vec![
                param("phEnum", ptr(named("HCORENUM")), &["in", "out"], &[]),
                param("cl", named("mdTypeDef"), &["in"], &[]),
                param("rMembers", ptr(named("mdToken")), &["out"], &[]),
                param("cMax", named("ULONG"), &["in"], &[]),
                param("pcTokens", ptr(named("ULONG")), &["out"], &[]),
            ],
            loc: Loc::default(),
        };
        let mut arr = m.params[2].clone();
        arr.declared_array = true;
        assert_eq!(
            spec_yaml(&infer(&m, &arr, &|_| None).unwrap()),
            "{ dir: out, len: pcTokens, cap: cMax, draft: true }"
        );
        assert!(looks_like_count("cchName") && looks_like_count("cbData") && looks_like_count("cMax"));
        assert!(!looks_like_count("cl") && !looks_like_count("class"));
    }

    #[test]
    fn the_idl_beside_the_header_names_the_count() {
        // EventPipeEventDelivered as MIDL's C header has it: `[length_is][size_is][in]`, no count
        // named; the nearest count-like value is the wrong one. The IDL says which.
        let m = Method {
            name: "EventPipeEventDelivered".into(),
            ret: named("HRESULT"),
            params: vec![
                param("cbEventData", named("ULONG"), &["in"], &[]),
                param("eventData", ptr(named("BYTE")), &["size_is", "in"], &[]),
                param("numStackFrames", named("ULONG"), &["in"], &[]),
                param("stackFrames", ptr(named("UINT_PTR")), &["length_is", "size_is", "in"], &[]),
            ],
            loc: Loc::default(),
        };
        let frames = IdlParam {
            attrs: vec!["in".into(), "size_is(numStackFrames)".into(), "length_is(numStackFrames)".into()],
            loc: Loc { file: "corprof.idl".into(), line: 2589, col: 0 },
        };
        let idl: IdlOf<'_> = &|name| (name == "stackFrames").then_some(&frames);
        assert_eq!(spec_yaml(&infer(&m, &m.params[3], idl).unwrap()), "{ dir: in, len: numStackFrames, draft: true }");
        assert_eq!(spec_yaml(&infer(&m, &m.params[1], idl).unwrap()), "{ dir: in, len: cbEventData, draft: true }");
    }

    #[test]
    fn unsizable_shapes_are_drafted_raw() {
        let m = Method {
            name: "GetSizes".into(),
            ret: named("HRESULT"),
            params: vec![
                param("cDims", named("ULONG"), &["in"], &[]),
                param("pSizes", ptr(named("ULONG")), &["size_is", "out"], &[]),
                param("pv", ptr(CType::Void), &[], &[]),
            ],
            loc: Loc::default(),
        };
        assert_eq!(spec_yaml(&infer(&m, &m.params[1], &|_| None).unwrap()), "{ dir: out, raw: true, draft: true }");
        assert_eq!(spec_yaml(&infer(&m, &m.params[2], &|_| None).unwrap()), "{ dir: in, draft: true }");
    }
}
