//! Classified API → view models: one struct per template, every fragment precomputed ("add a
//! field, not a filter"), so templates only loop and test simple flags. Rust fragments are tokens
//! built with `quote!` (names become identifiers in [`tokens`]); the template prints them, and
//! `format_rust` formats the whole file once.

use crate::classify::call::is_free_threaded;
use crate::classify::{ParamKind, RustType, classify_method, info_object_param, rust_return, rust_type};
use crate::diag::{Diagnostic, Errors};
use crate::ir::Loc;
use crate::resolve::{Api, ApiInterface, doc_url, numbered};
use askama::Template;
use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;
use syn::parse::Parser;

mod docs;
pub mod names;
mod tokens;
mod wrappers;
use tokens::Tokens;
use wrappers::{ExportsView, WrapperView};

/// The whole generated file.
#[derive(Template)]
#[template(path = "bindings.rs.jinja", escape = "none")]
pub struct BindingsView {
    /// Path of the runtime crate in the generated code: `crate` inside corprof, `::corprof` elsewhere.
    pub root: TokenStream,
    pub types: String,
    /// `unsafe impl Zeroable` for the plain-data types of `types`.
    pub zeroables: Vec<ZeroableView>,
    /// The ID newtypes (`FunctionID`, …).
    pub ids: Vec<crate::ir::IdType>,
    /// The header's enums, for `Display` (and the flag methods of flag enums).
    pub enums: Vec<crate::types::EnumType>,
    pub interfaces: Vec<InterfaceView>,
    pub has_callbacks: bool,
    pub callbacks: CallbacksView,
    pub wrappers: Vec<WrapperView>,
    /// What `info`, `metadata` and `root_wrappers__` re-export from `wrappers`.
    pub exports: ExportsView,
}

pub struct ZeroableView {
    /// `<Storage: ::corprof::imp::Zeroable>` or empty.
    pub generics: TokenStream,
    /// `__BindgenBitfieldUnit<Storage>` or `COR_PRF_CODE_INFO`.
    pub ty: TokenStream,
    /// `where UINT_PTR: ::corprof::imp::Zeroable, …`: rustc re-checks each field.
    pub bounds: TokenStream,
}

pub struct InterfaceView {
    pub name: Ident,
    /// Documented free-threaded (ICorProfilerInfo, metadata): `unsafe impl FreeThreaded`.
    pub free_threaded: bool,
    pub vtbl: Ident,
    pub iid_const: Ident,
    pub iid_u128: Literal,
    pub iid_text: String,
    pub base: Ident,
    pub base_vtbl: Ident,
    pub loc: String,
    /// The declaring header, relative to the header folder.
    pub file: String,
    pub methods: Vec<RawMethodView>,
}

pub struct RawMethodView {
    pub name: Ident,
    /// `this__: *mut IFoo, a: A, b: B`
    pub slot_params: TokenStream,
    /// `a: A, b: B`
    pub params: TokenStream,
    /// `a, b`
    pub args: TokenStream,
    pub ret: TokenStream,
    pub loc: String,
}

#[derive(Default)]
pub struct CallbacksView {
    pub versions: String,
    pub highest: TokenStream,
    pub highest_vtbl: TokenStream,
    pub iid_consts: Vec<Ident>,
    pub methods: Vec<CallbackMethodView>,
    pub vtbls: Vec<VtblCtorView>,
}

pub struct CallbackMethodView {
    pub iface: Ident,
    /// The header's spelling, for `Callback::name()` and the vtable slot.
    pub name: Ident,
    /// The `Callback` variant: the header's name with its typos fixed.
    pub variant: Ident,
    pub snake: Ident,
    pub doc_url: String,
    /// The docs-table entry's rustdoc lines (empty: none).
    pub doc_lines: Vec<String>,
    pub loc: String,
    pub c_signature: String,
    /// `a: &[A], b: Out<'_, B>`
    pub trait_params: TokenStream,
    pub thunk: Ident,
    /// `this__: *mut IFoo, a: *mut A, n: ULONG`
    pub thunk_params: TokenStream,
    /// `root::imp::raw::in_slice(a, n), …`
    pub call_args: TokenStream,
    /// For `Initialize`/`InitializeForAttach`, the thunk parameter holding the runtime's Info
    /// object (the first interface parameter), whose gate the thunk opens; empty otherwise.
    pub info_arg: TokenStream,
    /// Whether the callback lends objects (a `LiveObject` parameter): the thunk holds a lending
    /// scope for the call, which a call that may trigger a GC marks.
    pub lends: bool,
    /// The IDs of unloadable code the callback lends to its thread (`a.as_raw() as usize, …`);
    /// empty: none.
    pub lent_ids: TokenStream,
    /// Whether the callback is about an unload: the IDs it lends are not noted for
    /// classification (they may be of what unloads).
    pub unloading: bool,
    /// For the load and unload callbacks corprof tracks: the `imp::Tracked` variant, and the
    /// ID parameter it reports (its own method runs only when the profiler's mask asked for it).
    pub tracked: TokenStream,
    pub tracked_id: TokenStream,
    /// For the callbacks corprof answers first (`GetReJITParameters`: the ReJITs its
    /// instrumentation asked for), the `imp` call that answers, with the thunk's arguments; the
    /// profiler's own method runs when that call answers `None`. Empty: none.
    pub answered_by: TokenStream,
}

pub struct VtblCtorView {
    pub vtbl: Ident,
    pub base_ctor: TokenStream,
    pub slots: Vec<SlotView>,
}

pub struct SlotView {
    pub name: Ident,
    pub thunk: Ident,
}

fn loc(l: &Loc) -> String {
    format!("{}:{}", l.file, l.line)
}

/// The IID as the literal `GUID::from_u128` takes, grouped as the IID is written
/// (`0x8C2B9A2E_5C4F_4E0B_9B1A_2E7C1D4F6A11`).
fn iid_u128(iid: &str) -> String {
    let hex: String = iid.chars().filter(|c| *c != '-').collect::<String>().to_ascii_uppercase();
    match (hex.len(), hex.chars().all(|c| c.is_ascii_hexdigit())) {
        (32, true) => {
            format!("0x{}_{}_{}_{}_{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
        }
        _ => hex,
    }
}

/// The runtime crate's path (`crate`, `::corprof`), given by the build as text.
fn root_path(root: &str) -> Result<TokenStream, Errors> {
    match syn::Path::parse_mod_style.parse_str(root) {
        Ok(path) => Ok(quote!(#path)),
        Err(e) => Err(Diagnostic::error(format!("the runtime crate's path `{root}` is not a Rust path: {e}"))
            .help("`crate` inside corprof, `::corprof` in a crate of its own")
            .into()),
    }
}

/// Builds the view of the whole file; `types` is bindgen's output for the plain data types.
pub fn build(api: &Api, root: &str, types: crate::types::Types) -> Result<BindingsView, Errors> {
    let root = root_path(root)?;
    let mut errors = Errors::default();
    let interfaces: Vec<InterfaceView> =
        api.interfaces.iter().filter_map(|i| interface_view(api, i).map_err(|d| errors.push(d)).ok()).collect();
    let zeroables: Vec<ZeroableView> =
        types.zeroable.iter().filter_map(|z| zeroable_view(&root, z).map_err(|d| errors.push(d)).ok()).collect();
    errors.check()?;
    let id_names: Vec<String> = types.ids.iter().map(|i| i.name.clone()).collect();
    let (callbacks, (wrappers, exports)) = crate::diag::both(
        callbacks_view(api, &root, &id_names),
        wrappers::wrappers_view(api, &root, &types.pointer_records),
    )?;
    Ok(BindingsView {
        exports,
        wrappers,
        root,
        types: types.code,
        zeroables,
        ids: types.ids,
        enums: types.enums,
        interfaces,
        has_callbacks: !callbacks.vtbls.is_empty(),
        callbacks,
    })
}

fn base_of(iface: &ApiInterface) -> String {
    iface.ir.base.clone().unwrap_or_else(|| "IUnknown".to_string())
}

fn zeroable_view(root: &TokenStream, z: &crate::types::ZeroableType) -> Result<ZeroableView, Diagnostic> {
    let mut t = Tokens::new(&z.name);
    let bound = quote!(#root::imp::Zeroable);
    let name = t.ident("type", &z.name);
    let params: Vec<Ident> = z.params.iter().map(|p| t.ident("type parameter", p)).collect();
    let (generics, ty) = if params.is_empty() {
        (TokenStream::new(), quote!(#name))
    } else {
        (quote!(<#(#params: #bound),*>), quote!(#name<#(#params),*>))
    };
    let fields = &z.fields;
    let bounds = if fields.is_empty() { TokenStream::new() } else { quote!(where #(#fields: #bound),*) };
    match t.finish() {
        Some(d) => Err(d),
        None => Ok(ZeroableView { generics, ty, bounds }),
    }
}

fn interface_view(api: &Api, iface: &ApiInterface) -> Result<InterfaceView, Diagnostic> {
    let name = iface.ir.name.clone();
    let mut t = Tokens::new(&name);
    let this = t.ident("interface", &name);
    let methods = iface
        .methods
        .iter()
        .map(|m| {
            let names: Vec<Ident> = m.ir.params.iter().map(|p| t.ident("parameter", &p.name)).collect();
            let types: Vec<TokenStream> =
                m.ir.params.iter().map(|p| t.ty("parameter type", &rust_type(&p.ty))).collect();
            RawMethodView {
                name: t.ident("slot", &m.ir.name),
                slot_params: quote!(this__: *mut #this, #(#names: #types),*),
                params: quote!(#(#names: #types),*),
                args: quote!(#(#names),*),
                ret: t.ty("return type", &rust_return(&m.ir.ret)),
                loc: loc(&m.ir.loc),
            }
        })
        .collect();
    let base = base_of(iface);
    let view = InterfaceView {
        // Only the families with a safe layer: the documented ones (not IMetaDataError, which a
        // client implements, nor the dispenser and table interfaces no wrapper reaches).
        free_threaded: iface.gets_wrapper() && is_free_threaded(api.family_root(&name)),
        vtbl: t.ident("vtable", &names::vtbl(&name)),
        iid_const: t.ident("IID constant", &names::iid_const(&name)),
        iid_u128: t.int("IID", &iid_u128(&iface.ir.iid)),
        iid_text: iface.ir.iid.to_ascii_uppercase(),
        base_vtbl: t.ident("base vtable", &names::vtbl(&base)),
        base: t.ident("base", &base),
        loc: loc(&iface.ir.loc),
        file: iface.ir.loc.file.to_string(),
        name: this,
        methods,
    };
    match t.finish() {
        Some(d) => Err(d),
        None => Ok(view),
    }
}

fn callbacks_view(api: &Api, root: &TokenStream, id_names: &[String]) -> Result<CallbacksView, Errors> {
    // Vtable order: root first, then each derived version.
    let chain = api.callback_chain();
    let Some(highest) = chain.last().copied() else {
        return Ok(CallbacksView::default());
    };

    let mut errors = Errors::default();
    let mut methods = Vec::new();
    let mut vtbls = Vec::new();
    for iface in &chain {
        let mut slots = Vec::new();
        for m in &iface.methods {
            let kinds = match classify_method(&iface.ir.name, m) {
                Ok((kinds, _)) => kinds,
                Err(e) => {
                    errors.extend(e);
                    continue;
                }
            };
            let mut t = Tokens::new(format!("{}::{}", iface.ir.name, m.ir.name));
            let this = t.ident("interface", &iface.ir.name);
            let thunk = t.ident("thunk", &names::thunk(&iface.ir.name, &m.ir.name));
            let mut trait_params = Vec::new();
            let mut call_args = Vec::new();
            let mut thunk_params = vec![quote!(this__: *mut #this)];
            let c_names: Vec<&str> = m.params.iter().map(|p| p.ir.name.as_str()).collect();
            let shown: Vec<bool> = kinds.iter().map(|k| *k != ParamKind::Length).collect();
            let mut doc_lines = docs::doc_lines(m.docs.as_ref());
            for ((p, kind), rust) in m.params.iter().zip(&kinds).zip(names::param_names(&c_names, &shown)) {
                let raw = t.ident("parameter", &p.ir.name);
                let raw_ty = t.ty("parameter type", &rust_type(&p.ir.ty));
                thunk_params.push(quote!(#raw: #raw_ty));
                if let ParamKind::LiveObject { why } | ParamKind::LiveObjects { why, .. } = kind {
                    // Why the lent object is sound, where the profiler reads the signature.
                    docs::push_paragraph(&mut doc_lines, &format!("`{rust}` is lent for this call only: {why}."));
                }
                if let Some((ty, arg)) = safe_param(root, &raw, kind, &mut t) {
                    let rust = t.ident("parameter", &rust);
                    trait_params.push(quote!(#rust: #ty));
                    call_args.push(arg);
                }
            }
            let c_params: Vec<String> = m.ir.params.iter().map(|p| format!("{} {}", p.ty, p.name)).collect();
            let lent_ids = m.params.iter().zip(&kinds).filter(|(_, k)| matches!(k, ParamKind::LentId { .. }));
            let lent_ids: Vec<TokenStream> = lent_ids
                .filter_map(|(p, _)| {
                    let kind = crate::classify::call::Unload::of(&p.ir.ty)?.kind();
                    let (id, kind) = (t.ident("parameter", &p.ir.name), t.ident("ID kind", kind));
                    Some(quote!((#id.as_raw() as usize, #root::imp::IdKind::#kind)))
                })
                .collect();
            let tracked = tracked_callback(&m.ir.name);
            let tracked_id = tracked
                .and_then(|_| m.params.iter().find(|p| crate::classify::call::Unload::of(&p.ir.ty).is_some()))
                .map(|p| {
                    let id = t.ident("parameter", &p.ir.name);
                    quote!(#id.as_raw() as usize)
                });
            let info_arg = info_object_param(m).map(|p| {
                let p = t.ident("Info object parameter", p);
                quote!(#p)
            });
            let view = CallbackMethodView {
                iface: this,
                name: t.ident("slot", &m.ir.name),
                variant: t.ident("variant", &names::pascal_fixed(&m.ir.name)),
                snake: t.ident("trait method", &names::method_name(&m.ir.name)),
                doc_url: doc_url(&iface.ir.name, &m.ir.name),
                doc_lines,
                loc: loc(&m.ir.loc),
                c_signature: format!("HRESULT {}({})", m.ir.name, c_params.join(", ")),
                trait_params: quote!(#(#trait_params),*),
                thunk: thunk.clone(),
                thunk_params: quote!(#(#thunk_params),*),
                call_args: quote!(#(#call_args),*),
                info_arg: info_arg.unwrap_or_default(),
                lends: kinds.iter().any(|k| matches!(k, ParamKind::LiveObject { .. } | ParamKind::LiveObjects { .. })),
                lent_ids: quote!(#(#lent_ids),*),
                unloading: m.ir.name.contains("Unload"),
                tracked: tracked
                    .map(|name| {
                        let name = t.ident("tracked callback", name);
                        quote!(#name)
                    })
                    .unwrap_or_default(),
                tracked_id: tracked_id.unwrap_or_default(),
                answered_by: answered_first(root, m, id_names, &mut t),
            };
            if let Some(d) = t.finish() {
                errors.push(d);
                continue;
            }
            slots.push(SlotView { name: view.name.clone(), thunk });
            methods.push(view);
        }
        let mut t = Tokens::new(&iface.ir.name);
        let base_ctor = match iface.ir.base.as_deref() {
            Some(b) if api.interface(b).is_some_and(|bi| bi.is_callback) => {
                let base = t.ident("base vtable", &names::vtbl(b));
                quote!(#base::new::<T>())
            }
            _ => {
                let base = t.ident("base vtable", &names::vtbl("IUnknown"));
                quote!(#root::imp::#base::new::<CallbackClass<T>>())
            }
        };
        let vtbl = VtblCtorView { vtbl: t.ident("vtable", &names::vtbl(&iface.ir.name)), base_ctor, slots };
        if let Some(d) = t.finish() {
            errors.push(d);
        }
        vtbls.push(vtbl);
    }
    let mut t = Tokens::new("the callbacks");
    let (highest_name, highest_vtbl) = (
        t.ident("newest callback", &highest.ir.name),
        t.ident("newest callback vtable", &names::vtbl(&highest.ir.name)),
    );
    let iid_consts = chain.iter().map(|i| t.ident("callback IID constant", &names::iid_const(&i.ir.name))).collect();
    if let Some(d) = t.finish() {
        errors.push(d);
    }
    errors.check()?;
    let versions = numbered(&chain);
    let first = versions.first().map_or(1, |(v, _)| *v);
    let last = versions.last().map_or(1, |(v, _)| *v);
    Ok(CallbacksView {
        versions: if first == last { format!("{first}") } else { format!("{first}–{last}") },
        highest: quote!(#highest_name),
        highest_vtbl: quote!(#highest_vtbl),
        iid_consts,
        methods,
        vtbls,
    })
}

/// The load and unload callbacks corprof keeps its mask bits for (`imp::Tracked`, named as the
/// callback), to see collectible code unload.
fn tracked_callback(name: &str) -> Option<&'static str> {
    const TRACKED: [&str; 9] = [
        "AssemblyLoadStarted",
        "AssemblyLoadFinished",
        "AssemblyUnloadStarted",
        "AssemblyUnloadFinished",
        "ModuleLoadStarted",
        "ModuleLoadFinished",
        "ModuleUnloadStarted",
        "ModuleUnloadFinished",
        "ModuleAttachedToAssembly",
    ];
    TRACKED.into_iter().find(|t| *t == name)
}

/// The `imp` call that sees a callback before the profiler's method (annotation `answered_by:`),
/// with the runtime's own arguments as plain values: an ID as its raw integer, a pointer
/// untyped, any other value as the integer it is (each converted to what the function takes). A
/// crate generating its own bindings has its own types for them, so none is passed as such.
fn answered_first(root: &TokenStream, m: &crate::resolve::ApiMethod, ids: &[String], t: &mut Tokens) -> TokenStream {
    let Some(function) = &m.answered_by else { return TokenStream::new() };
    let function = t.ident("imp function", function);
    let args: Vec<TokenStream> = m
        .params
        .iter()
        .map(|p| {
            let raw = t.ident("parameter", &p.ir.name);
            match rust_type(&p.ir.ty) {
                RustType::Pointer { .. } => quote!(#raw.cast()),
                RustType::Named(n) if ids.contains(&n) => quote!(#raw.as_raw() as _),
                _ => quote!(#raw as _),
            }
        })
        .collect();
    quote!(#root::imp::#function(#(#args),*))
}

/// The safe parameter type and the thunk expression that builds it, or `None` for hidden counts.
/// What a parameter type is reported as.
const P: &str = "parameter type";

fn safe_param(root: &TokenStream, raw: &Ident, kind: &ParamKind, t: &mut Tokens) -> Option<(TokenStream, TokenStream)> {
    let conv = quote!(#root::imp::raw);
    Some(match kind {
        ParamKind::Length => return None,
        ParamKind::Value { ty: v } | ParamKind::Opaque { ty: v } | ParamKind::LentId { ty: v } => {
            (t.ty(P, v), quote!(#raw))
        }
        ParamKind::HResult => (quote!(#root::HResult), quote!(#root::HResult(#raw))),
        ParamKind::Bool => (quote!(bool), quote!(#raw != 0)),
        // The flag enum's field is the DWORD's width (both `u32` on the wire).
        ParamKind::Flags { ty: f } => {
            let f = t.ty(P, f);
            (f.clone(), quote!(#f(#raw as _)))
        }
        ParamKind::OutBool => (quote!(#root::Out<'_, bool>), quote!(#conv::out_bool(#raw)?)),
        ParamKind::InRef { ty: r, optional: false } | ParamKind::InInterface { ty: r, optional: false } => {
            let r = t.ty(P, r);
            (quote!(&#r), quote!(#conv::in_ref(#raw)?))
        }
        ParamKind::InRef { ty: r, optional: true } | ParamKind::InInterface { ty: r, optional: true } => {
            let r = t.ty(P, r);
            (quote!(Option<&#r>), quote!(#conv::in_opt(#raw)))
        }
        ParamKind::InSlice { ty: e, len } => {
            let (e, len) = (t.ty(P, e), t.ident("parameter", len));
            (quote!(&[#e]), quote!(#conv::in_slice(#raw, #len)?))
        }
        ParamKind::InBytes { len } => {
            let len = t.ident("parameter", len);
            (quote!(&[u8]), quote!(#conv::in_slice(#raw.cast::<u8>(), #len)?))
        }
        ParamKind::InStr { len, optional } => {
            let len = match len {
                Some(l) => {
                    let l = t.ident("parameter", l);
                    quote!(Some(#l))
                }
                None => quote!(None::<u32>),
            };
            if *optional {
                (quote!(Option<#root::WStr<'_>>), quote!(#conv::in_wstr_opt(#raw, #len)))
            } else {
                (quote!(#root::WStr<'_>), quote!(#conv::in_wstr(#raw, #len)?))
            }
        }
        ParamKind::Out { ty: o } => {
            let o = t.ty(P, o);
            (quote!(#root::Out<'_, #o>), quote!(#conv::out(#raw)?))
        }
        ParamKind::Ref { ty: r, optional: false } => {
            let r = t.ty(P, r);
            (quote!(&mut #r), quote!(#conv::ref_mut(#raw)?))
        }
        ParamKind::Ref { ty: r, optional: true } => {
            let r = t.ty(P, r);
            (quote!(Option<&mut #r>), quote!(#conv::ref_opt(#raw)))
        }
        // As bits: a crate generating its own bindings (`root: "::corprof"`) has an `ObjectID` of
        // its own, of the same representation (a `#[repr(transparent)]` `UINT_PTR`).
        ParamKind::LiveObject { .. } => (quote!(#root::LiveObject<'_>), quote!(#conv::live_object(#raw.as_raw()))),
        ParamKind::LiveObjects { len, .. } => {
            let len = t.ident("parameter", len);
            (quote!(&[#root::LiveObject<'_>]), quote!(#conv::live_objects(#raw.cast::<usize>(), #len)?))
        }
    })
}
