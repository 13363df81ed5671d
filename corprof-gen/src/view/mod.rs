//! Classified API → view models: one struct per template, every string precomputed ("add a
//! field, not a filter"), so templates only loop and test simple flags.

use crate::classify::call::is_free_threaded;
use crate::classify::{ParamKind, classify_method, info_object_param, rust_return, rust_type};
use crate::diag::Errors;
use crate::ir::Loc;
use crate::resolve::{Api, ApiInterface, doc_url, numbered};
use askama::Template;

mod check;
mod docs;
pub mod names;
mod wrappers;
use names::ident;
pub use wrappers::{CallMethodView, ExportsView, FieldView, IteratorView, MemberView, ResultView, WrapperView};

/// The whole generated file.
#[derive(Template)]
#[template(path = "bindings.rs.jinja", escape = "none")]
pub struct BindingsView {
    /// Path of the runtime crate in the generated code: `crate` inside corprof, `::corprof` elsewhere.
    pub root: String,
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
    pub generics: String,
    /// `__BindgenBitfieldUnit<Storage>` or `COR_PRF_CODE_INFO`.
    pub ty: String,
    /// `where UINT_PTR: ::corprof::imp::Zeroable, …`: rustc re-checks each field.
    pub bounds: String,
}

pub struct InterfaceView {
    pub name: String,
    /// Documented free-threaded (ICorProfilerInfo, metadata): `unsafe impl FreeThreaded`.
    pub free_threaded: bool,
    pub vtbl: String,
    pub iid_const: String,
    pub iid_u128: String,
    pub iid_text: String,
    pub base: String,
    pub base_vtbl: String,
    pub loc: String,
    /// The declaring header, relative to the header folder.
    pub file: String,
    pub methods: Vec<RawMethodView>,
}

pub struct RawMethodView {
    pub name: String,
    /// `this__: *mut IFoo, a: A, b: B`
    pub slot_params: String,
    /// `a: A, b: B`
    pub params: String,
    /// `a, b`
    pub args: String,
    pub ret: String,
    pub loc: String,
}

#[derive(Default)]
pub struct CallbacksView {
    pub versions: String,
    pub highest: String,
    pub highest_vtbl: String,
    pub iid_consts: Vec<String>,
    pub methods: Vec<CallbackMethodView>,
    pub vtbls: Vec<VtblCtorView>,
}

pub struct CallbackMethodView {
    pub iface: String,
    /// The header's spelling, for `Callback::name()` and the vtable slot.
    pub name: String,
    /// The `Callback` variant: the header's name with its typos fixed.
    pub variant: String,
    pub snake: String,
    pub doc_url: String,
    /// The docs-table entry's rustdoc lines (empty: none).
    pub doc_lines: Vec<String>,
    pub loc: String,
    pub c_signature: String,
    /// `a: &[A], b: Out<'_, B>`
    pub trait_params: String,
    pub thunk: String,
    /// `this__: *mut IFoo, a: *mut A, n: ULONG`
    pub thunk_params: String,
    /// `root::imp::raw::in_slice(a, n), …`
    pub call_args: String,
    /// For `Initialize`/`InitializeForAttach`, the thunk parameter holding the runtime's Info
    /// object (the first interface parameter), whose gate the thunk opens; empty otherwise.
    pub info_arg: String,
    /// Whether the callback lends objects (a `LiveObject` parameter): the thunk holds a lending
    /// scope for the call, which a call that may trigger a GC marks.
    pub lends: bool,
    /// The IDs of unloadable code the callback lends to its thread (`a.as_raw() as usize, …`);
    /// empty: none.
    pub lent_ids: String,
    /// Whether the callback is about an unload: the IDs it lends are not noted for
    /// classification (they may be of what unloads).
    pub unloading: bool,
    /// For the load and unload callbacks corprof tracks: the `imp::Tracked` variant, and the
    /// ID parameter it reports (its own method runs only when the profiler's mask asked for it).
    pub tracked: String,
    pub tracked_id: String,
    /// For the callbacks corprof answers first (`GetReJITParameters`: the ReJITs its
    /// instrumentation asked for), the `imp` call that answers, with the thunk's arguments; the
    /// profiler's own method runs when that call answers `None`. Empty: none.
    pub answered_by: String,
}

pub struct VtblCtorView {
    pub vtbl: String,
    pub base_ctor: String,
    pub slots: Vec<SlotView>,
}

pub struct SlotView {
    pub name: String,
    pub thunk: String,
}

fn loc(l: &Loc) -> String {
    format!("{}:{}", l.file, l.line)
}

fn iid_u128(iid: &str) -> String {
    let hex: String = iid.chars().filter(|c| *c != '-').collect::<String>().to_ascii_uppercase();
    format!("0x{}_{}_{}_{}_{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// Builds the view of the whole file; `types` is bindgen's output for the plain data types.
pub fn build(api: &Api, root: &str, types: crate::types::Types) -> Result<BindingsView, Errors> {
    let interfaces: Vec<InterfaceView> = api.interfaces.iter().map(|i| interface_view(api, i)).collect();
    let zeroables: Vec<ZeroableView> = types.zeroable.iter().map(|z| zeroable_view(root, z)).collect();
    let mut errors = Errors::default();
    for d in interfaces.iter().filter_map(check::interface).chain(zeroables.iter().filter_map(check::zeroable)) {
        errors.push(d);
    }
    errors.check()?;
    let (callbacks, (wrappers, exports)) =
        crate::diag::both(callbacks_view(api, root), wrappers::wrappers_view(api, root, &types.pointer_records))?;
    let problems =
        [check::whole_file(root, &callbacks, &exports)].into_iter().chain(wrappers.iter().map(check::family));
    for d in problems.flatten() {
        errors.push(d);
    }
    errors.check()?;
    Ok(BindingsView {
        exports,
        wrappers,
        root: root.to_string(),
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

fn zeroable_view(root: &str, z: &crate::types::ZeroableType) -> ZeroableView {
    let bound = format!("{root}::imp::Zeroable");
    let (generics, ty) = if z.params.is_empty() {
        (String::new(), z.name.clone())
    } else {
        let bounded: Vec<String> = z.params.iter().map(|p| format!("{p}: {bound}")).collect();
        (format!("<{}>", bounded.join(", ")), format!("{}<{}>", z.name, z.params.join(", ")))
    };
    let bounds: Vec<String> = z.fields.iter().map(|f| format!("{f}: {bound}")).collect();
    ZeroableView {
        generics,
        ty,
        bounds: if bounds.is_empty() { String::new() } else { format!("where {}", bounds.join(", ")) },
    }
}

fn interface_view(api: &Api, iface: &ApiInterface) -> InterfaceView {
    let name = iface.ir.name.clone();
    let methods = iface
        .methods
        .iter()
        .map(|m| {
            let typed: Vec<String> =
                m.ir.params.iter().map(|p| format!("{}: {}", ident(&p.name), rust_type(&p.ty))).collect();
            let mut slot = vec![format!("this__: *mut {name}")];
            slot.extend(typed.iter().cloned());
            RawMethodView {
                name: m.ir.name.clone(),
                slot_params: slot.join(", "),
                params: typed.join(", "),
                args: m.ir.params.iter().map(|p| ident(&p.name)).collect::<Vec<_>>().join(", "),
                ret: rust_return(&m.ir.ret),
                loc: loc(&m.ir.loc),
            }
        })
        .collect();
    let base = base_of(iface);
    InterfaceView {
        // Only the families with a safe layer: the documented ones (not IMetaDataError, which a
        // client implements, nor the dispenser and table interfaces no wrapper reaches).
        free_threaded: iface.gets_wrapper() && is_free_threaded(api.family_root(&name)),
        vtbl: names::vtbl(&name),
        iid_const: names::iid_const(&name),
        iid_u128: iid_u128(&iface.ir.iid),
        iid_text: iface.ir.iid.to_ascii_uppercase(),
        base_vtbl: names::vtbl(&base),
        base,
        loc: loc(&iface.ir.loc),
        file: iface.ir.loc.file.clone(),
        name,
        methods,
    }
}

fn callbacks_view(api: &Api, root: &str) -> Result<CallbacksView, Errors> {
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
            let thunk = names::thunk(&iface.ir.name, &m.ir.name);
            let mut trait_params = Vec::new();
            let mut call_args = Vec::new();
            let mut thunk_params = vec![format!("this__: *mut {}", iface.ir.name)];
            let c_names: Vec<&str> = m.params.iter().map(|p| p.ir.name.as_str()).collect();
            let shown: Vec<bool> = kinds.iter().map(|k| *k != ParamKind::Length).collect();
            let mut doc_lines = docs::doc_lines(m.docs.as_ref());
            for ((p, kind), rust) in m.params.iter().zip(&kinds).zip(names::param_names(&c_names, &shown)) {
                let raw_name = ident(&p.ir.name);
                thunk_params.push(format!("{raw_name}: {}", rust_type(&p.ir.ty)));
                if let ParamKind::LiveObject { why } | ParamKind::LiveObjects { why, .. } = kind {
                    // Why the lent object is sound, where the profiler reads the signature.
                    docs::push_paragraph(&mut doc_lines, &format!("`{rust}` is lent for this call only: {why}."));
                }
                if let Some((ty, arg)) = safe_param(root, &raw_name, kind) {
                    trait_params.push(format!("{rust}: {ty}"));
                    call_args.push(arg);
                }
            }
            let c_params: Vec<String> = m.ir.params.iter().map(|p| format!("{} {}", p.ty, p.name)).collect();
            methods.push(CallbackMethodView {
                iface: iface.ir.name.clone(),
                name: m.ir.name.clone(),
                variant: names::pascal_fixed(&m.ir.name),
                snake: names::method_name(&m.ir.name),
                doc_url: doc_url(&iface.ir.name, &m.ir.name),
                doc_lines,
                loc: loc(&m.ir.loc),
                c_signature: format!("HRESULT {}({})", m.ir.name, c_params.join(", ")),
                trait_params: trait_params.join(", "),
                thunk: thunk.clone(),
                thunk_params: thunk_params.join(", "),
                call_args: call_args.join(", "),
                info_arg: info_object_param(m).map(ident).unwrap_or_default(),
                lends: kinds.iter().any(|k| matches!(k, ParamKind::LiveObject { .. } | ParamKind::LiveObjects { .. })),
                lent_ids: m
                    .params
                    .iter()
                    .zip(&kinds)
                    .filter(|(_, k)| matches!(k, ParamKind::LentId { .. }))
                    .filter_map(|(p, _)| {
                        let kind = crate::classify::call::Unload::of(&p.ir.ty)?.kind();
                        Some(format!("({}.as_raw() as usize, {root}::imp::IdKind::{kind})", ident(&p.ir.name)))
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                unloading: m.ir.name.contains("Unload"),
                tracked: tracked_callback(&m.ir.name).map(str::to_string).unwrap_or_default(),
                tracked_id: tracked_callback(&m.ir.name)
                    .and_then(|_| m.params.iter().find(|p| crate::classify::call::Unload::of(&p.ir.ty).is_some()))
                    .map(|p| format!("{}.as_raw() as usize", ident(&p.ir.name)))
                    .unwrap_or_default(),
                answered_by: answered_first(root, m),
            });
            let view = methods.last().expect("just pushed");
            if let Some(d) = check::callback(&format!("{}::{}", iface.ir.name, m.ir.name), view) {
                errors.push(d);
            }
            slots.push(SlotView { name: m.ir.name.clone(), thunk });
        }
        let base_ctor = match iface.ir.base.as_deref() {
            Some(b) if api.interface(b).is_some_and(|bi| bi.is_callback) => {
                format!("{}::new::<T>()", names::vtbl(b))
            }
            _ => format!("{root}::imp::{}::new::<CallbackClass<T>>()", names::vtbl("IUnknown")),
        };
        let vtbl = VtblCtorView { vtbl: names::vtbl(&iface.ir.name), base_ctor, slots };
        if let Some(d) = check::vtbl_ctor(&iface.ir.name, &vtbl) {
            errors.push(d);
        }
        vtbls.push(vtbl);
    }
    errors.check()?;
    let versions = numbered(&chain);
    let first = versions.first().map_or(1, |(v, _)| *v);
    let last = versions.last().map_or(1, |(v, _)| *v);
    Ok(CallbacksView {
        versions: if first == last { format!("{first}") } else { format!("{first}–{last}") },
        highest: highest.ir.name.clone(),
        highest_vtbl: names::vtbl(&highest.ir.name),
        iid_consts: chain.iter().map(|i| names::iid_const(&i.ir.name)).collect(),
        methods,
        vtbls,
    })
}

/// The safe parameter type and the thunk expression that builds it, or `None` for hidden counts.
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

/// The `imp` call that answers a callback before the profiler's method, for the callbacks
/// corprof answers first: `GetReJITParameters(ModuleID, mdMethodDef, ICorProfilerFunctionControl *)`,
/// whose ReJITs of methods corprof's instrumentation asked for it gives their new body itself
/// (so that a method's body can only go to that method's ReJIT). Passed as plain integers and an
/// untyped pointer: a crate generating its own bindings has its own types for them.
fn answered_first(root: &str, m: &crate::resolve::ApiMethod) -> String {
    match (m.ir.name.as_str(), m.params.as_slice()) {
        ("GetReJITParameters", [module, method, control]) => format!(
            "{root}::imp::rejit_parameters({}.as_raw() as usize, {} as u32, {}.cast())",
            ident(&module.ir.name),
            ident(&method.ir.name),
            ident(&control.ir.name)
        ),
        _ => String::new(),
    }
}

fn safe_param(root: &str, raw: &str, kind: &ParamKind) -> Option<(String, String)> {
    let conv = format!("{root}::imp::raw");
    Some(match kind {
        ParamKind::Length => return None,
        ParamKind::Value { ty } | ParamKind::Opaque { ty } | ParamKind::LentId { ty } => (ty.clone(), raw.to_string()),
        ParamKind::HResult => (format!("{root}::HResult"), format!("{root}::HResult({raw})")),
        ParamKind::Bool => ("bool".to_string(), format!("{raw} != 0")),
        // The flag enum's field is the DWORD's width (both `u32` on the wire).
        ParamKind::Flags { ty } => (ty.clone(), format!("{ty}({raw} as _)")),
        ParamKind::OutBool => (format!("{root}::Out<'_, bool>"), format!("{conv}::out_bool({raw})?")),
        ParamKind::InRef { ty, optional: false } | ParamKind::InInterface { ty, optional: false } => {
            (format!("&{ty}"), format!("{conv}::in_ref({raw})?"))
        }
        ParamKind::InRef { ty, optional: true } | ParamKind::InInterface { ty, optional: true } => {
            (format!("Option<&{ty}>"), format!("{conv}::in_opt({raw})"))
        }
        ParamKind::InSlice { ty, len } => (format!("&[{ty}]"), format!("{conv}::in_slice({raw}, {})?", ident(len))),
        ParamKind::InBytes { len } => {
            ("&[u8]".to_string(), format!("{conv}::in_slice({raw}.cast::<u8>(), {})?", ident(len)))
        }
        ParamKind::InStr { len, optional } => {
            let len =
                len.as_deref().map(|l| format!("Some({})", ident(l))).unwrap_or_else(|| "None::<u32>".to_string());
            if *optional {
                (format!("Option<{root}::WStr<'_>>"), format!("{conv}::in_wstr_opt({raw}, {len})"))
            } else {
                (format!("{root}::WStr<'_>"), format!("{conv}::in_wstr({raw}, {len})?"))
            }
        }
        ParamKind::Out { ty } => (format!("{root}::Out<'_, {ty}>"), format!("{conv}::out({raw})?")),
        ParamKind::Ref { ty, optional: false } => (format!("&mut {ty}"), format!("{conv}::ref_mut({raw})?")),
        ParamKind::Ref { ty, optional: true } => (format!("Option<&mut {ty}>"), format!("{conv}::ref_opt({raw})")),
        // As bits: a crate generating its own bindings (`root: "::corprof"`) has an `ObjectID` of
        // its own, of the same representation (a `#[repr(transparent)]` `UINT_PTR`).
        ParamKind::LiveObject { .. } => {
            (format!("{root}::LiveObject<'_>"), format!("{conv}::live_object({raw}.as_raw())"))
        }
        ParamKind::LiveObjects { len, .. } => (
            format!("&[{root}::LiveObject<'_>]"),
            format!("{conv}::live_objects({raw}.cast::<usize>(), {})?", ident(len)),
        ),
    })
}

#[cfg(test)]
mod tests {
    const TEMPLATE: &str = include_str!("../../../templates/bindings.rs.jinja");
    const VIEWS: [&str; 2] = [include_str!("mod.rs"), include_str!("wrappers.rs")];

    /// The template prints what the view computed: no version from a loop's position, no name put
    /// together from pieces (`IID_{{ … }}`, `{{ … }}_Vtbl`), no partition of its own.
    #[test]
    fn the_template_builds_no_names_and_no_numbers() {
        for built in ["loop.", "IID_{{", "}}_Vtbl", "is_metadata"] {
            assert!(!TEMPLATE.contains(built), "the template uses `{built}`");
        }
    }

    /// Item names come from `names.rs`: the view's own sources hold none of the spellings that
    /// used to be repeated in them (and in the template, test above).
    #[test]
    fn the_view_spells_no_names() {
        for view in VIEWS {
            let code = view.split("#[cfg(test)]").next().unwrap_or_default();
            for spelling in
                ["\"IID_", "_Vtbl\"", "_Vtbl::", "strip_prefix(\"Get\")", "_com\"", "strip_prefix('I')", "{}_{}__"]
            {
                assert!(!code.contains(spelling), "the view spells `{spelling}` itself");
            }
        }
    }

    /// Every field of a view struct is printed (or tested) by the template: a field it never reads
    /// is a second home for something, or dead.
    #[test]
    fn the_template_reads_every_view_field() {
        let mut unread = Vec::new();
        for view in VIEWS {
            let mut in_view = false;
            for line in view.lines() {
                if line.starts_with("pub struct ") {
                    in_view = line.contains("View ");
                } else if line.starts_with('}') {
                    in_view = false;
                } else if in_view && let Some(field) = line.trim().strip_prefix("pub ").and_then(|f| f.split_once(':'))
                {
                    let field = field.0;
                    if ![
                        format!(".{field} "),
                        format!(".{field}."),
                        format!(".{field}}}"),
                        format!("{{{{ {field} "),
                        format!(" {field}."),
                    ]
                    .iter()
                    .any(|use_| TEMPLATE.contains(use_.as_str()))
                        && !TEMPLATE.contains(&format!(" {field} %}}"))
                    {
                        unread.push(field.to_string());
                    }
                }
            }
        }
        assert!(unread.is_empty(), "view fields the template never reads: {unread:?}");
    }
}
