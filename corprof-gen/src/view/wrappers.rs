//! View models of the calling side: one safe wrapper per interface family (ICorProfilerInfo 1–N
//! → `ProfilerInfo`), with every statement of every method body precomputed as text.

use super::loc;
use super::names::{self, ident};
use crate::classify::call::{
    CallKind, CallReturn, FnContract, classify_call, family_root, is_free_threaded, wrapper_name,
};
use crate::classify::rust_type;
use crate::diag::Errors;
use crate::resolve::{Api, ApiInterface, ApiMethod};

pub struct WrapperView {
    pub name: String,
    /// The module holding the family's result structs (`profiler_info`), so that their names
    /// depend on the family's methods only, never on another family's.
    pub module: String,
    pub root: String,
    pub doc_range: String,
    pub iid_consts: Vec<String>,
    pub iface_names: Vec<String>,
    pub methods: Vec<CallMethodView>,
    pub results: Vec<ResultView>,
    pub has_iterator: bool,
    pub iterator: IteratorView,
    /// Documented free-threaded: the wrapper is `Send + Sync`.
    pub free_threaded: bool,
    /// `#[derive(Clone)]`: not for enumerators, whose clones would share one cursor.
    pub cloneable: bool,
}

#[derive(Default)]
pub struct IteratorView {
    pub item: String,
    pub iface: String,
    pub version: u32,
    pub args: String,
}

pub struct ResultView {
    pub name: String,
    /// `<W__>` when a field's type is picked by the caller (an IID-named interface).
    pub generics: String,
    pub doc: String,
    pub fields: Vec<FieldView>,
}

pub struct FieldView {
    pub name: String,
    pub ty: String,
    pub doc: String,
}

pub struct CallMethodView {
    pub name: String,
    /// What S_FALSE returns and means, for the docs; empty when S_FALSE is just success.
    pub s_false_doc: String,
    /// Takes raw pointers the callee reads or writes, or functions the runtime calls: the wrapper
    /// is an `unsafe fn`.
    pub is_unsafe: bool,
    /// The `# Safety` section's lines, when `is_unsafe`.
    pub safety: Vec<String>,
    pub snake: String,
    pub iface: String,
    pub version: u32,
    pub doc_url: String,
    pub loc: String,
    pub generics: String,
    pub params: String,
    pub ret_ty: String,
    pub setup: Vec<String>,
    pub locals: Vec<String>,
    pub args: String,
    pub call_binding: String,
    pub check: String,
    pub result: String,
    pub has_buffers: bool,
    pub all_fit: String,
    pub grow: Vec<String>,
    pub is_enum: bool,
    pub enum_item: String,
    pub close_iface: String,
    pub close_version: u32,
}

/// Names that would hide a trait method users expect on a wrapper.
const RESERVED: &[&str] =
    &["clone", "next", "drop", "into_iter", "eq", "fmt", "deref", "from", "into", "hash", "version", "get"];

fn doc_url(iface: &str, method: &str) -> String {
    let area = if iface.starts_with("IMetaData") { "metadata/interfaces" } else { "profiling" };
    format!(
        "https://learn.microsoft.com/dotnet/core/unmanaged-api/{area}/{}-{}-method",
        iface.to_ascii_lowercase(),
        method.to_ascii_lowercase()
    )
}

/// The chain of safe interfaces of one family, root first.
fn family_chain<'a>(api: &'a Api, root: &str) -> Vec<&'a ApiInterface> {
    let members: Vec<&ApiInterface> =
        api.interfaces.iter().filter(|i| i.safe && !i.is_callback && family_root(api, &i.ir.name) == root).collect();
    let highest = members.iter().copied().max_by_key(|i| chain_len(api, &i.ir.name)).expect("a family has its root");
    let mut chain = vec![highest];
    while let Some(base) = chain.last().and_then(|i| i.ir.base.as_deref()).and_then(|b| api.interface(b)) {
        chain.push(base);
    }
    chain.reverse();
    chain
}

fn chain_len(api: &Api, name: &str) -> usize {
    let mut n = 0;
    let mut cur = api.interface(name);
    while let Some(i) = cur {
        n += 1;
        cur = i.ir.base.as_deref().and_then(|b| api.interface(b));
    }
    n
}

pub fn wrappers_view(api: &Api, root: &str) -> Result<Vec<WrapperView>, Errors> {
    let mut errors = Errors::default();
    let mut roots: Vec<&str> = Vec::new();
    for i in api.interfaces.iter().filter(|i| i.safe && !i.is_callback) {
        let r = family_root(api, &i.ir.name);
        if !roots.contains(&r) {
            roots.push(r);
        }
    }
    let mut out = Vec::new();
    for family in roots {
        let chain = family_chain(api, family);
        let name = wrapper_name(family);
        let module = names::snake_case(&name);
        let mut result_names: Vec<String> = Vec::new();
        let mut methods = Vec::new();
        let mut results = Vec::new();
        let mut iterator = None;
        let close = chain
            .iter()
            .enumerate()
            .find(|(_, i)| i.methods.iter().any(|m| m.ir.name == "CloseEnum"))
            .map(|(v, i)| (i.ir.name.clone(), v as u32 + 1));
        for (v, iface) in chain.iter().enumerate() {
            let version = v as u32 + 1;
            for m in &iface.methods {
                let (kinds, ret) = match classify_call(api, &iface.ir.name, m) {
                    Ok(k) => k,
                    Err(e) => {
                        errors.extend(e);
                        continue;
                    }
                };
                if m.ir.name == "Next"
                    && iterator.is_none()
                    && let Some(it) = iterator_view(&iface.ir.name, version, m, &kinds)
                {
                    iterator = Some(it);
                    continue;
                }
                let mut mv = method_view(root, &iface.ir.name, version, m, &kinds, &ret, &mut results, &name, &module);
                if let Some(r) = results.last().filter(|r| mv.ret_ty.contains(&format!("{module}::{}", r.name))) {
                    if result_names.contains(&r.name) {
                        errors.push(crate::diag::Diagnostic::error(format!(
                            "{}::{} would return `{module}::{}`, which another method of the family returns",
                            iface.ir.name, m.ir.name, r.name
                        )));
                    }
                    result_names.push(r.name.clone());
                }
                if mv.is_enum {
                    match &close {
                        Some((ci, cv)) => {
                            mv.close_iface = ci.clone();
                            mv.close_version = *cv;
                        }
                        None => {
                            errors.push(crate::diag::Diagnostic::error(format!(
                                "{}::{} enumerates with HCORENUM but the family has no CloseEnum",
                                iface.ir.name, m.ir.name
                            )));
                            continue;
                        }
                    }
                }
                methods.push(mv);
            }
        }
        let first = chain.first().map(|i| i.ir.name.clone()).unwrap_or_default();
        let last = chain.last().map(|i| i.ir.name.clone()).unwrap_or_default();
        out.push(WrapperView {
            module,
            doc_range: if first == last { format!("`{first}`") } else { format!("`{first}` … `{last}`") },
            name,
            root: family.to_string(),
            iid_consts: chain.iter().map(|i| format!("IID_{}", i.ir.name)).collect(),
            iface_names: chain.iter().map(|i| i.ir.name.clone()).collect(),
            methods,
            results,
            has_iterator: iterator.is_some(),
            cloneable: iterator.is_none(),
            iterator: iterator.unwrap_or_default(),
            free_threaded: is_free_threaded(family),
        });
    }
    errors.check()?;
    Ok(out)
}

/// `Next(celt, items[], pceltFetched)` of an enumerator interface → one item per call.
fn iterator_view(iface: &str, version: u32, m: &ApiMethod, kinds: &[CallKind]) -> Option<IteratorView> {
    let (item, cap, len) = kinds.iter().find_map(|k| match k {
        CallKind::OutArray { ty, cap, len } => Some((ty.clone(), cap.clone(), len.clone())),
        _ => None,
    })?;
    if kinds.iter().any(|k| !matches!(k, CallKind::OutArray { .. } | CallKind::Consumed)) {
        return None;
    }
    let args: Vec<String> = m
        .params
        .iter()
        .zip(kinds)
        .map(|(p, k)| match k {
            CallKind::OutArray { .. } => "&mut item__".to_string(),
            _ if p.ir.name == cap => "1".to_string(),
            _ if p.ir.name == len => "&mut fetched__".to_string(),
            _ => "::core::ptr::null_mut()".to_string(),
        })
        .collect();
    Some(IteratorView { item, iface: iface.to_string(), version, args: args.join(", ") })
}

#[allow(clippy::too_many_arguments)]
fn method_view(
    root: &str,
    iface: &str,
    version: u32,
    m: &ApiMethod,
    kinds: &[CallKind],
    ret: &CallReturn,
    results: &mut Vec<ResultView>,
    wrapper: &str,
    module: &str,
) -> CallMethodView {
    let mut params = Vec::new();
    let mut setup = Vec::new();
    let mut locals = Vec::new();
    let mut grow = Vec::new();
    let mut fits = Vec::new();
    let mut outputs: Vec<(names::Output<'_>, String, String)> = Vec::new(); // (output, type, value)
    let mut generics = String::new();
    let mut safety = Vec::new();
    let is_enum = kinds.contains(&CallKind::CorEnum);
    let mut enum_item = String::new();
    // Argument text per parameter; counts and IIDs are filled in by the parameter that uses them.
    let mut args: Vec<String> = m.params.iter().map(|p| ident(&p.ir.name)).collect();
    let index = |name: &str| m.params.iter().position(|p| p.ir.name == name);
    let local = |name: &str| format!("{}__", name);
    let mut slice_len_owner: Vec<(String, String)> = Vec::new();
    let c_names: Vec<&str> = m.params.iter().map(|p| p.ir.name.as_str()).collect();
    let shown: Vec<bool> = kinds.iter().map(|k| !matches!(k, CallKind::Consumed | CallKind::CorEnum)).collect();
    let rust_names = names::param_names(&c_names, &shown);
    let output = |c_name| names::Output { c_name, is_text: false };

    for (i, (p, kind)) in m.params.iter().zip(kinds).enumerate() {
        let rust = rust_names[i].clone();
        match kind {
            CallKind::Consumed => {}
            CallKind::Value { ty } => {
                params.push(format!("{rust}: {ty}"));
                args[i] = rust;
            }
            CallKind::HResult => {
                params.push(format!("{rust}: {root}::HResult"));
                args[i] = format!("{rust}.0");
            }
            CallKind::Raw { ty } => {
                params.push(format!("{rust}: {ty}"));
                args[i] = rust;
            }
            CallKind::FnPtr { ty, contract } => {
                safety.push(fn_safety(&rust, ty, *contract));
                params.push(format!("{rust}: {ty}"));
                args[i] = rust;
            }
            CallKind::InRef { ty, optional } => {
                if *optional {
                    params.push(format!("{rust}: Option<&{ty}>"));
                    args[i] = format!("{rust}.map_or(::core::ptr::null(), ::core::ptr::from_ref) as _");
                } else {
                    params.push(format!("{rust}: &{ty}"));
                    args[i] = format!("::core::ptr::from_ref({rust}) as _");
                }
            }
            CallKind::Ref { ty, optional } => {
                if *optional {
                    params.push(format!("{rust}: Option<&mut {ty}>"));
                    args[i] = format!("{rust}.map_or(::core::ptr::null_mut(), ::core::ptr::from_mut) as _");
                } else {
                    params.push(format!("{rust}: &mut {ty}"));
                    args[i] = format!("::core::ptr::from_mut({rust}) as _");
                }
            }
            CallKind::InSlice { ty, len, optional } => {
                let (ptr, count) = if *optional {
                    params.push(format!("{rust}: Option<&[{ty}]>"));
                    (
                        format!("{rust}.map_or(::core::ptr::null(), <[_]>::as_ptr) as _"),
                        format!("{rust}.map_or(0, <[_]>::len)"),
                    )
                } else {
                    params.push(format!("{rust}: &[{ty}]"));
                    (format!("{rust}.as_ptr() as _"), format!("{rust}.len()"))
                };
                args[i] = ptr;
                match slice_len_owner.iter().find(|(l, _)| l == len) {
                    Some((_, first)) => {
                        setup.push(format!("if {count} != {first} {{ return Err({root}::HResult::E_INVALIDARG); }}"))
                    }
                    None => {
                        if let Some(li) = index(len) {
                            args[li] = format!("{count} as _");
                        }
                        slice_len_owner.push((len.clone(), count));
                    }
                }
            }
            CallKind::InStr { len, optional } => {
                let w = local(&p.ir.name);
                let conv = if len.is_some() { "wide_counted" } else { "wide" };
                if *optional {
                    params.push(format!("{rust}: Option<&str>"));
                    setup.push(format!("let {w} = {rust}.map({root}::wrap::{conv});"));
                    args[i] = format!("{w}.as_ref().map_or(::core::ptr::null(), |w| w.as_ptr()) as _");
                    if let Some(li) = len.as_deref().and_then(index) {
                        args[li] = format!("{w}.as_ref().map_or(0, |w| w.len()) as _");
                    }
                } else {
                    params.push(format!("{rust}: &str"));
                    setup.push(format!("let {w} = {root}::wrap::{conv}({rust});"));
                    args[i] = format!("{w}.as_ptr() as _");
                    if let Some(li) = len.as_deref().and_then(index) {
                        args[li] = format!("{w}.len() as _");
                    }
                }
            }
            CallKind::Out { ty } => {
                let l = local(&p.ir.name);
                locals.push(format!("let mut {l}: {ty} = {root}::wrap::zeroed();"));
                args[i] = format!("&mut {l}");
                outputs.push((output(&p.ir.name), ty.clone(), l));
            }
            CallKind::OutInterface { iface: target, wrapper: w } => {
                let l = local(&p.ir.name);
                locals.push(format!("let mut {l}: *mut {target} = ::core::ptr::null_mut();"));
                args[i] = format!("&mut {l}");
                match w {
                    Some(w) => outputs.push((
                        output(&p.ir.name),
                        w.clone(),
                        format!("unsafe {{ {root}::wrap::wrap_out::<{w}>({l}.cast()) }}?"),
                    )),
                    None => outputs.push((
                        output(&p.ir.name),
                        format!("{root}::ComPtr<{target}>"),
                        format!("unsafe {{ {root}::ComPtr::from_raw({l}) }}.ok_or({root}::HResult::E_POINTER)?"),
                    )),
                }
            }
            CallKind::OutIid { iid } => {
                let l = local(&p.ir.name);
                generics = format!("<W__: {root}::wrap::Wrapper>");
                locals.push(format!("let mut {l}: *mut ::core::ffi::c_void = ::core::ptr::null_mut();"));
                args[i] = format!("(&mut {l}) as *mut *mut ::core::ffi::c_void as _");
                if let Some(ii) = index(iid) {
                    args[ii] = "&W__::ROOT_IID as *const GUID as _".to_string();
                }
                outputs.push((
                    output(&p.ir.name),
                    "W__".to_string(),
                    format!("unsafe {{ {root}::wrap::wrap_out::<W__>({l}.cast()) }}?"),
                ));
            }
            CallKind::OutString { cap, len } | CallKind::OutArray { cap, len, .. } => {
                let (elem, conv, out_ty) = match kind {
                    CallKind::OutArray { ty, .. } => (ty.clone(), "to_vec", format!("Vec<{ty}>")),
                    _ => ("u16".to_string(), "to_string", "String".to_string()),
                };
                let b = local(&p.ir.name);
                let n = local(len);
                let len_ty = index(len)
                    .and_then(|li| m.params[li].ir.ty.pointee().map(rust_type))
                    .unwrap_or_else(|| "u32".to_string());
                setup.push(format!("let mut {b} = {root}::wrap::Buffer::<{elem}>::new();"));
                locals.push(format!("let mut {n}: {len_ty} = 0;"));
                args[i] = format!("{b}.ptr() as _");
                if let Some(ci) = index(cap) {
                    args[ci] = format!("{b}.cap() as _");
                }
                if let Some(li) = index(len) {
                    args[li] = format!("&mut {n}");
                }
                fits.push(format!("{b}.fits({n} as usize)"));
                grow.push(format!("{b}.grow({n} as usize);"));
                if is_enum {
                    enum_item = elem;
                    args[i] = "buf__.as_mut_ptr() as _".to_string();
                    if let Some(ci) = index(cap) {
                        args[ci] = "buf__.len() as _".to_string();
                    }
                    if let Some(li) = index(len) {
                        args[li] = "n__".to_string();
                    }
                } else {
                    let is_text = matches!(kind, CallKind::OutString { .. });
                    outputs.push((
                        names::Output { c_name: &p.ir.name, is_text },
                        out_ty,
                        format!("{b}.{conv}({n} as usize)"),
                    ));
                }
            }
            CallKind::CorEnum => args[i] = "h__".to_string(),
        }
    }

    let (ret_ty, result) = match (ret, outputs.len()) {
        (CallReturn::Void, _) => ("()".to_string(), "()".to_string()),
        (CallReturn::Value { ty }, _) => (ty.clone(), "hr__".to_string()),
        (CallReturn::HResult | CallReturn::HResultOrFalse { .. }, 0) => ("()".to_string(), "()".to_string()),
        (CallReturn::HResult | CallReturn::HResultOrFalse { .. }, 1) => (outputs[0].1.clone(), outputs[0].2.clone()),
        (CallReturn::HResult | CallReturn::HResultOrFalse { .. }, _) => {
            // Named after the method alone, in the family's module: stable whatever else the
            // header declares (a clash inside the family is an error, not a rename).
            let struct_name = names::pascal_fixed(m.ir.name.strip_prefix("Get").unwrap_or(&m.ir.name));
            let outs: Vec<names::Output<'_>> =
                outputs.iter().map(|(o, _, _)| names::Output { c_name: o.c_name, is_text: o.is_text }).collect();
            let fields: Vec<FieldView> = names::field_names(&m.ir.name, &outs)
                .into_iter()
                .zip(&outputs)
                .map(|(name, (_, ty, _))| FieldView { name, ty: ty.clone(), doc: String::new() })
                .collect();
            let value = format!(
                "{module}::{struct_name} {{ {} }}",
                fields
                    .iter()
                    .zip(&outputs)
                    .map(|(f, (_, _, v))| format!("{}: {v}", f.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let generics = if outputs.iter().any(|(_, ty, _)| ty == "W__") { "<W__>" } else { "" }.to_string();
            results.push(ResultView {
                generics: generics.clone(),
                name: struct_name.clone(),
                doc: format!("What [`super::{wrapper}::{}`] returns.", snake_method(&m.ir.name)),
                fields,
            });
            (format!("{module}::{struct_name}{generics}"), value)
        }
    };
    // S_FALSE as "no": `false` for a method without outputs, `None` instead of them otherwise.
    let (ret_ty, result, s_false_doc, no) = match ret {
        CallReturn::HResultOrFalse { meaning } if outputs.is_empty() => (
            "bool".to_string(),
            "true".to_string(),
            format!("Returns `false` when the runtime answers S_FALSE: {meaning}."),
            "false",
        ),
        CallReturn::HResultOrFalse { meaning } => (
            format!("Option<{ret_ty}>"),
            format!("Some({result})"),
            format!("Returns `None` when the runtime answers S_FALSE: {meaning}."),
            "None",
        ),
        _ => (ret_ty, result, String::new(), ""),
    };
    let (call_binding, check) = match ret {
        CallReturn::HResult => ("let hr__ =".to_string(), format!("{root}::HResult(hr__).ok()?;")),
        CallReturn::HResultOrFalse { .. } => (
            "let hr__ =".to_string(),
            format!("{root}::HResult(hr__).ok()?; if hr__ == {root}::HResult::S_FALSE.0 {{ return Ok({no}); }}"),
        ),
        CallReturn::Value { .. } => ("let hr__ =".to_string(), String::new()),
        CallReturn::Void => (String::new(), String::new()),
    };
    let has_buffers = !fits.is_empty() && !is_enum;
    if kinds.iter().any(|k| matches!(k, CallKind::Raw { .. })) {
        safety
            .insert(0, "- The raw pointer arguments must be valid as the method's documentation requires.".to_string());
    }
    CallMethodView {
        s_false_doc,
        is_unsafe: !safety.is_empty(),
        safety,
        name: m.ir.name.clone(),
        snake: snake_method(&m.ir.name),
        iface: iface.to_string(),
        version,
        doc_url: doc_url(iface, &m.ir.name),
        loc: loc(&m.ir.loc),
        generics,
        params: params.join(", "),
        ret_ty: if is_enum { format!("{root}::wrap::CorEnum<'_, {enum_item}>") } else { ret_ty },
        setup: if is_enum { setup.into_iter().filter(|s| !s.contains("Buffer::")).collect() } else { setup },
        locals,
        args: args.join(", "),
        call_binding,
        check,
        result,
        has_buffers,
        all_fit: if fits.is_empty() { "true".to_string() } else { fits.join(" && ") },
        grow,
        is_enum,
        enum_item,
        close_iface: String::new(),
        close_version: 0,
    }
}

/// The `# Safety` line for a function pointer the runtime will call, by what its typedef is for.
fn fn_safety(param: &str, typedef: &str, contract: FnContract) -> String {
    let what = match contract {
        FnContract::EltHook => {
            "is called from JIT'd code with no registers saved (unless COR_PRF_ENABLE_FRAME_INFO, \
             COR_PRF_ENABLE_FUNCTION_ARGS or COR_PRF_ENABLE_FUNCTION_RETVAL are set): it must preserve \
             every register and must not unwind, so it is an assembly stub, never an ordinary Rust \
             function; it must stay valid for the profiler's lifetime"
        }
        FnContract::IdMapper => {
            "is called by the runtime, on any thread, for each function whose hooks it sets up: it must \
             be a valid `extern \"system\"` function of this signature for the profiler's lifetime and \
             must not unwind; the client data it is given must stay valid as long"
        }
        FnContract::StackSnapshot => {
            "is called once per frame before this call returns: it must be a valid `extern \"system\"` \
             function of this signature that does not unwind, and `client_data` must be what it expects"
        }
        FnContract::Callback => {
            "is called by the runtime: it must be a valid `extern \"system\"` function of this signature \
             for as long as the runtime may call it (the profiler's lifetime unless documented \
             otherwise) and must not unwind; any client data passed with it must stay valid as long"
        }
    };
    format!("- `{param}` (`{typedef}`) {what}.")
}

fn snake_method(name: &str) -> String {
    let s = names::method_name(name);
    if RESERVED.contains(&s.as_str()) { format!("{s}_com") } else { s }
}
