//! View models of the calling side: one safe wrapper per interface family (ICorProfilerInfo 1–N
//! → `ProfilerInfo`), with every statement of every method body built as tokens.

use super::loc;
use super::names;
use super::tokens::{Tokens, safety};
use crate::annotations::Context;
use crate::classify::RustType;
use crate::classify::call::{
    CallKind, CallReturn, FnContract, IdContract, can_ask_thread, classify_call, count_type, is_free_threaded,
};
use crate::classify::enumerators::{IteratorNext, NextArg, close_enum_interface, enum_controls, iterator_next};
use crate::diag::{Diagnostic, Errors};
use crate::resolve::{Api, ApiMethod, WrapperRule, doc_url, numbered};
use proc_macro2::{Ident, TokenStream};
use quote::quote;
use std::collections::HashMap;

pub struct WrapperView {
    pub name: Ident,
    /// The module holding the family's result structs (`profiler_info`), so that their names
    /// depend on the family's methods only, never on another family's.
    pub module: Ident,
    pub doc_range: String,
    pub iid_consts: Vec<Ident>,
    /// The root interface's IID constant (`IID_ICorProfilerInfo`), the `Wrapper::ROOT_IID`.
    pub root_iid: Ident,
    /// The family's interfaces, oldest first, each with its version number.
    pub members: Vec<MemberView>,
    pub methods: Vec<CallMethodView>,
    pub results: Vec<ResultView>,
    pub has_iterator: bool,
    pub iterator: IteratorView,
    /// Documented free-threaded: the wrapper is `Send + Sync`.
    pub free_threaded: bool,
    /// `#[derive(Clone)]`: not for enumerators, whose clones would share one cursor.
    pub cloneable: bool,
    /// The Info family, whose object the runtime hands to `initialize` and lets go of at
    /// detach and shutdown: its docs say what the clones do then.
    pub is_info: bool,
}

/// One interface of a family and its version ([`crate::resolve::numbered`]).
pub struct MemberView {
    pub name: Ident,
    pub version: u32,
}

/// The wrappers split once into the profiling API's and the metadata API's
/// ([`crate::resolve::is_metadata`]), as the modules re-exporting them list them.
#[derive(Default)]
pub struct ExportsView {
    /// `corprof::info`: the profiling API's wrappers and their result modules' contents.
    pub info: Vec<TokenStream>,
    /// `corprof::metadata`: the metadata wrappers and their result modules' contents.
    pub metadata: Vec<TokenStream>,
    /// The metadata wrappers alone, re-exported at the crate root.
    pub metadata_wrappers: Vec<TokenStream>,
}

impl ExportsView {
    fn add(&mut self, w: &WrapperView, is_metadata: bool) {
        let list = if is_metadata { &mut self.metadata } else { &mut self.info };
        let (name, module) = (&w.name, &w.module);
        list.push(quote!(#name));
        if !w.results.is_empty() {
            list.push(quote!(#module::*));
        }
        if is_metadata {
            self.metadata_wrappers.push(quote!(#name));
        }
    }
}

#[derive(Default)]
pub struct IteratorView {
    pub item: TokenStream,
    pub iface: TokenStream,
    pub args: TokenStream,
}

pub struct ResultView {
    pub name: Ident,
    /// `<W__>` when a field's type is picked by the caller (an IID-named interface).
    pub generics: TokenStream,
    pub doc: String,
    pub fields: Vec<FieldView>,
}

pub struct FieldView {
    pub name: Ident,
    pub ty: TokenStream,
    pub doc: String,
}

pub struct CallMethodView {
    pub name: Ident,
    /// What S_FALSE returns and means, for the docs; empty when S_FALSE is just success.
    pub s_false_doc: String,
    /// Takes raw pointers the callee reads or writes, or functions the runtime calls: the wrapper
    /// is an `unsafe fn`.
    pub is_unsafe: bool,
    /// The `# Safety` section's lines, when `is_unsafe`.
    pub safety: Vec<String>,
    pub snake: Ident,
    pub iface: Ident,
    pub doc_url: String,
    /// The docs-table entry's rustdoc lines (empty: none).
    pub doc_lines: Vec<String>,
    pub loc: String,
    pub generics: TokenStream,
    pub params: TokenStream,
    pub ret_ty: TokenStream,
    /// Statements before the call.
    pub setup: Vec<TokenStream>,
    /// Statements after the HRESULT check, before the result is built.
    pub finish: Vec<TokenStream>,
    /// Out values the call writes (`let mut pClassId__: ClassID = zeroed();`).
    pub locals: Vec<TokenStream>,
    pub args: TokenStream,
    /// The call's return value is kept in `hr__` (`let hr__ = …`): every method but a `void` one.
    pub binds_hr: bool,
    pub check: TokenStream,
    pub result: TokenStream,
    /// Has out buffers: the call runs inside `imp::ask_then_fill`.
    pub has_buffers: bool,
    /// The buffers' tuple: `(Buffer::<u16>::new(),)`.
    pub buffers: TokenStream,
    /// Their names, as a pattern: `(szName__,)`.
    pub buffer_names: TokenStream,
    /// The needed counts, one per buffer: `pcchName__ as usize`.
    pub needed: TokenStream,
    /// What the call's closure hands back: `(hr__, pcchName__, pClassId__,)`.
    pub returned: TokenStream,
    pub is_enum: bool,
    pub enum_item: TokenStream,
    /// The family's interface holding `CloseEnum`, which `CorEnum` calls when done.
    pub close_iface: TokenStream,
    /// The closing interface also counts the items (`CountEnum`), which `CorEnum::total` calls;
    /// without it `CorEnum` gets `E_NOTIMPL`.
    pub counts: bool,
    /// The closing interface also moves the cursor (`ResetEnum`), which `CorEnum::reset` calls.
    pub resets: bool,
}

pub fn wrappers_view(
    api: &Api,
    root: &TokenStream,
    pointer_records: &HashMap<String, Vec<String>>,
) -> Result<(Vec<WrapperView>, ExportsView), Errors> {
    let mut errors = Errors::default();
    let mut out = Vec::new();
    let mut exports = ExportsView::default();
    for chain in api.wrapper_families() {
        let Some(family) = chain.first().map(|i| i.ir.name.as_str()) else { continue };
        let name = names::wrapper_name(family);
        let module = names::results_module(&name);
        // The family's own items: its type, results module, IIDs and members.
        let mut t = Tokens::new(&name);
        let module_ident = t.ident("results module", &module);
        let cx = FamilyCx { root, family, wrapper: &name, module: &module_ident, pointer_records };
        let mut methods = Vec::new();
        let mut results = Vec::new();
        let mut result_names: Vec<String> = Vec::new();
        let mut iterator = None;
        let close = close_enum_interface(&chain);
        for iface in &chain {
            for m in &iface.methods {
                if matches!(m.wrapper, WrapperRule::Manual(_)) {
                    continue;
                }
                let (kinds, ret) = match classify_call(api, &iface.ir.name, m) {
                    Ok(k) => k,
                    Err(e) => {
                        errors.extend(e);
                        continue;
                    }
                };
                // What a generator bug in this method's names is reported at.
                let at = format!("{}::{}", iface.ir.name, m.ir.name);
                if iterator.is_none()
                    && let Some(next) = iterator_next(m, &kinds)
                {
                    let mut it_tokens = Tokens::new(&at);
                    iterator = Some(iterator_view(&iface.ir.name, next, &mut it_tokens));
                    if let Some(d) = it_tokens.finish() {
                        errors.push(d);
                    }
                    continue;
                }
                if m.refuse_in.contains(&Context::UnknownThread) && !can_ask_thread(family) {
                    errors.push(Diagnostic::error(format!(
                        "`refuse_in: [unknown_thread]` of {}::{}: the guard asks ICorProfilerInfo::GetCurrentThreadID, \
                         which only ICorProfilerInfo's family has",
                        iface.ir.name, m.ir.name
                    )));
                    continue;
                }
                let (mut mv, result) = match method_view(&cx, &at, &iface.ir.name, m, &kinds, &ret) {
                    Ok(view) => view,
                    Err(d) => {
                        errors.push(d);
                        continue;
                    }
                };
                if let Some((result_name, r)) = result {
                    if result_names.contains(&result_name) {
                        errors.push(Diagnostic::error(format!(
                            "{}::{} would return `{module}::{result_name}`, which another method of the family returns",
                            iface.ir.name, m.ir.name
                        )));
                    }
                    result_names.push(result_name);
                    results.push(r);
                }
                if mv.is_enum {
                    match close {
                        Some(ci) => {
                            let controls = enum_controls(&chain, ci);
                            let mut ct = Tokens::new(&at);
                            let ci = ct.ident("CloseEnum's interface", ci);
                            if let Some(d) = ct.finish() {
                                errors.push(d);
                            }
                            mv.close_iface = quote!(#ci);
                            (mv.counts, mv.resets) = (controls.count, controls.reset);
                        }
                        None => {
                            errors.push(Diagnostic::error(format!(
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
        let w = WrapperView {
            module: module_ident.clone(),
            doc_range: if first == last { format!("`{first}`") } else { format!("`{first}` … `{last}`") },
            name: t.ident("wrapper", &name),
            iid_consts: chain.iter().map(|i| t.ident("IID constant", &names::iid_const(&i.ir.name))).collect(),
            root_iid: t.ident("root IID", &names::iid_const(family)),
            members: numbered(&chain)
                .into_iter()
                .map(|(version, i)| MemberView { name: t.ident("member interface", &i.ir.name), version })
                .collect(),
            methods,
            results,
            has_iterator: iterator.is_some(),
            cloneable: iterator.is_none(),
            iterator: iterator.unwrap_or_default(),
            free_threaded: is_free_threaded(family),
            // Free-threaded and not metadata: ICorProfilerInfo (`is_free_threaded`).
            is_info: is_free_threaded(family) && !crate::resolve::is_metadata(family),
        };
        if let Some(d) = t.finish() {
            errors.push(d);
        }
        exports.add(&w, crate::resolve::is_metadata(family));
        out.push(w);
    }
    errors.check()?;
    Ok((out, exports))
}

/// The `Iterator` of an enumerator wrapper: `Next` (classify's [`IteratorNext`]) asked for one
/// item into `item__`, its count read back into `fetched__`.
fn iterator_view(iface: &str, next: IteratorNext, t: &mut Tokens) -> IteratorView {
    let args = next.args.iter().map(|a| match a {
        NextArg::Item => quote!(&mut item__),
        NextArg::One => quote!(1),
        NextArg::Fetched => quote!(&mut fetched__),
        NextArg::Null => quote!(::core::ptr::null_mut()),
    });
    let iface = t.ident("interface", iface);
    IteratorView { item: t.ty("item", &next.item), iface: quote!(#iface), args: quote!(#(#args),*) }
}

/// One method's lowering: what each parameter contributes, filled in by the per-concern
/// functions below ([`lower_input`], [`lower_output`], [`lower_buffer`]) and read by
/// [`result_of`] and [`method_view`].
struct Lowering<'a> {
    root: &'a TokenStream,
    m: &'a ApiMethod,
    /// The method's names as identifiers, and those that are none.
    t: Tokens,
    is_enum: bool,
    /// Rust parameters of the wrapper (`name: Type`).
    params: Vec<TokenStream>,
    /// Argument per C parameter; counts and IIDs are set by the parameter that uses them.
    args: Vec<TokenStream>,
    /// Statements before the call (UTF-16 conversions, slice-length checks).
    setup: Vec<TokenStream>,
    /// Statements after the HRESULT check (taking over returned interfaces).
    finish: Vec<TokenStream>,
    /// Out values the call writes, declared right before it.
    locals: Vec<Local>,
    /// Out buffers, grown by `imp::ask_then_fill`.
    buffers: Vec<BufferUse>,
    /// What the method returns, in parameter order.
    outputs: Vec<Output<'a>>,
    generics: TokenStream,
    safety: Vec<String>,
    enum_item: TokenStream,
    /// Slice counts already given by a slice: (count parameter, the first slice's length).
    slice_lens: Vec<(String, TokenStream)>,
}

struct Local {
    name: Ident,
    decl: TokenStream,
}

struct BufferUse {
    /// `szName__`
    name: Ident,
    /// `::corprof::imp::Buffer::<u16>::new()`
    new: TokenStream,
    /// The local holding the needed count (`pchName__`).
    needed: Ident,
}

struct Output<'a> {
    c_name: &'a str,
    is_text: bool,
    ty: TokenStream,
    value: TokenStream,
    /// The caller picks the type (`W__`, an IID-named interface): a result struct holding it is
    /// generic.
    picked_by_caller: bool,
}

impl<'a> Lowering<'a> {
    fn index(&self, name: &str) -> Option<usize> {
        self.m.params.iter().position(|p| p.ir.name == name)
    }

    /// Sets the argument of parameter `name`, if the method has it.
    fn set_arg(&mut self, name: &str, arg: TokenStream) {
        if let Some(i) = self.index(name) {
            self.args[i] = arg;
        }
    }

    /// A local `<c_name>__` the call writes.
    fn local(&mut self, c_name: &str, ty: TokenStream, init: TokenStream) -> Ident {
        let name = self.t.ident("local", &format!("{c_name}__"));
        self.locals.push(Local { decl: quote!(let mut #name: #ty = #init;), name: name.clone() });
        name
    }

    fn output(&mut self, c_name: &'a str, ty: TokenStream, value: TokenStream) {
        self.outputs.push(Output { c_name, is_text: false, ty, value, picked_by_caller: false });
    }
}

/// Inputs: how a value, reference, slice, text or function pointer is taken and passed.
/// The flag type of the low event mask: corprof keeps the bits it sees unloads with set in what
/// `SetEventMask(2)` passes on, and shows the profiler only those it asked for in what
/// `GetEventMask(2)` returns (`imp::keep_tracked`, `imp::view_tracked`).
const EVENT_MASK: &str = "COR_PRF_MONITOR";

fn lower_input(l: &mut Lowering<'_>, i: usize, rust: String, kind: &CallKind) {
    let root = l.root;
    let name = l.t.ident("parameter", &rust);
    let (param, arg) = match kind {
        CallKind::Value { ty } | CallKind::Raw { ty } => {
            let ty = l.t.ty("parameter type", ty);
            (quote!(#name: #ty), quote!(#name))
        }
        CallKind::Unloadable { ty, id } => {
            let guard = l.t.ident("guard", id.guard());
            let why = safety(&format!("`{rust}` is typed: safe code gets one only from the runtime."));
            l.setup.push(quote!(#why unsafe { #root::imp::#guard(#name.as_raw() as usize) }?;));
            let ty = l.t.ty("parameter type", ty);
            (quote!(#name: #ty), quote!(#name))
        }
        CallKind::HResult => (quote!(#name: #root::HResult), quote!(#name.0)),
        CallKind::Bool => (quote!(#name: bool), quote!(BOOL::from(#name))),
        CallKind::Flags { ty } => {
            let is_event_mask = ty.name() == Some(EVENT_MASK);
            let ty = l.t.ty("flag type", ty);
            if is_event_mask {
                l.setup.push(quote!(let #name = #ty(#root::imp::keep_tracked(&self.inner, #name.0 as u32) as _);));
            }
            (quote!(#name: #ty), quote!(#name.0 as _))
        }
        CallKind::FnPtr { ty, contract } => {
            l.safety.push(fn_safety(&rust, ty, *contract));
            let ty = l.t.ty("parameter type", ty);
            (quote!(#name: #ty), quote!(#name))
        }
        CallKind::LiveId { ty, contract } => {
            l.safety.push(id_safety(&rust, *contract));
            let ty = l.t.ty("parameter type", ty);
            (quote!(#name: #ty), quote!(#name))
        }
        CallKind::InRef { ty, optional: true } => {
            let ty = l.t.ty("parameter type", ty);
            (quote!(#name: Option<&#ty>), quote!(#name.map_or(::core::ptr::null(), ::core::ptr::from_ref) as _))
        }
        CallKind::InRef { ty, optional: false } => {
            let ty = l.t.ty("parameter type", ty);
            (quote!(#name: &#ty), quote!(::core::ptr::from_ref(#name) as _))
        }
        CallKind::Ref { ty, optional: true } => {
            let ty = l.t.ty("parameter type", ty);
            (quote!(#name: Option<&mut #ty>), quote!(#name.map_or(::core::ptr::null_mut(), ::core::ptr::from_mut) as _))
        }
        CallKind::Ref { ty, optional: false } => {
            let ty = l.t.ty("parameter type", ty);
            (quote!(#name: &mut #ty), quote!(::core::ptr::from_mut(#name) as _))
        }
        CallKind::InSlice { ty, len, optional, unload } => {
            if let Some(id) = unload {
                let guard = l.t.ident("guard", id.guard());
                let each = if *optional { quote!(#name.unwrap_or(&[])) } else { quote!(#name) };
                let why = safety("each element is typed: safe code gets one only from the runtime.");
                l.setup.push(quote! {
                    for id__ in #each {
                        #why
                        unsafe { #root::imp::#guard(id__.as_raw() as usize) }?;
                    }
                });
            }
            let ty = l.t.ty("element type", ty);
            let (param, ptr, count) = if *optional {
                (
                    quote!(#name: Option<&[#ty]>),
                    quote!(#name.map_or(::core::ptr::null(), <[_]>::as_ptr) as _),
                    quote!(#name.map_or(0, <[_]>::len)),
                )
            } else {
                (quote!(#name: &[#ty]), quote!(#name.as_ptr() as _), quote!(#name.len()))
            };
            // Slices sharing one count must agree on it; the first one passes it.
            match l.slice_lens.iter().find(|(c, _)| c == len) {
                Some((_, first)) => {
                    let check = quote!(if #count != #first { return Err(#root::HResult::E_INVALIDARG); });
                    l.setup.push(check);
                }
                None => {
                    l.set_arg(len, quote!(#count as _));
                    l.slice_lens.push((len.clone(), count));
                }
            }
            (param, ptr)
        }
        CallKind::InStr { len, optional } => {
            let w = l.t.ident("local", &format!("{}__", l.m.params[i].ir.name));
            let conv = if len.is_some() { quote!(wide_counted) } else { quote!(wide) };
            let (param, ptr, count) = if *optional {
                l.setup.push(quote!(let #w = #name.map(#root::imp::#conv);));
                (
                    quote!(#name: Option<&str>),
                    quote!(#w.as_ref().map_or(::core::ptr::null(), |w| w.as_ptr()) as _),
                    quote!(#w.as_ref().map_or(0, |w| w.len()) as _),
                )
            } else {
                l.setup.push(quote!(let #w = #root::imp::#conv(#name);));
                (quote!(#name: &str), quote!(#w.as_ptr() as _), quote!(#w.len() as _))
            };
            if let Some(len) = len {
                l.set_arg(len, count);
            }
            (param, ptr)
        }
        _ => unreachable!("lower_input takes inputs only"),
    };
    l.params.push(param);
    l.args[i] = arg;
}

/// Single outputs: a value, an interface (wrapped or as a `ComPtr`), or an interface the caller
/// names by type (`W__: Wrapper`, passing `W__::ROOT_IID`).
fn lower_output<'a>(l: &mut Lowering<'a>, i: usize, kind: &CallKind) {
    let root = l.root;
    let c_name = l.m.params[i].ir.name.as_str();
    match kind {
        CallKind::Out { ty, unload } => {
            let ty = l.t.ty("output type", ty);
            let v = l.local(c_name, ty.clone(), quote!(#root::imp::zeroed()));
            l.args[i] = quote!(&mut #v);
            if let Some(id) = unload.filter(|u| u.lent_as_output()) {
                let kind = l.t.ident("ID kind", id.kind());
                let why = safety(&format!("the call has just returned `{v}`, successfully."));
                l.finish.push(quote! {
                    #why
                    unsafe { #root::imp::lend_output(#v.as_raw() as usize, #root::imp::IdKind::#kind) };
                });
            }
            l.output(c_name, ty, quote!(#v));
        }
        CallKind::OutBool => {
            let v = l.local(c_name, quote!(BOOL), quote!(0));
            l.args[i] = quote!(&mut #v);
            l.output(c_name, quote!(bool), quote!(#v != 0));
        }
        CallKind::OutFlags { ty, raw } => {
            let raw = l.t.ty("output type", raw);
            let v = l.local(c_name, raw, quote!(#root::imp::zeroed()));
            l.args[i] = quote!(&mut #v);
            let is_event_mask = ty.name() == Some(EVENT_MASK);
            let ty = l.t.ty("flag type", ty);
            let value = if is_event_mask {
                quote!(#ty(#root::imp::view_tracked(&self.inner, #v as u32) as _))
            } else {
                quote!(#ty(#v as _))
            };
            l.output(c_name, ty, value);
        }
        CallKind::OutInterface { iface, family } => {
            let iface = l.t.ty("interface", &RustType::named(iface));
            let v = l.local(c_name, quote!(*mut #iface), quote!(::core::ptr::null_mut()));
            l.args[i] = quote!(&mut #v);
            let (ty, value) = match family.as_deref().map(names::wrapper_name) {
                Some(w) => {
                    let w = l.t.ident("wrapper", &w);
                    (quote!(#w), quote!(unsafe { #root::imp::wrap_out::<#w>(#v.cast()) }?))
                }
                None => (
                    quote!(#root::ComPtr<#iface>),
                    quote!(unsafe { #root::ComPtr::from_raw(#v) }.ok_or(#root::HResult::E_POINTER)?),
                ),
            };
            let value = take_over(l, &v, value);
            l.output(c_name, ty, value);
        }
        CallKind::OutIid { iid } => {
            l.generics = quote!(<W__: #root::Wrapper>);
            let v = l.local(c_name, quote!(*mut ::core::ffi::c_void), quote!(::core::ptr::null_mut()));
            l.args[i] = quote!((&mut #v) as *mut *mut ::core::ffi::c_void as _);
            l.set_arg(iid, quote!(&W__::ROOT_IID as *const GUID as _));
            let value = take_over(l, &v, quote!(unsafe { #root::imp::wrap_out::<W__>(#v.cast()) }?));
            l.outputs.push(Output { c_name, is_text: false, ty: quote!(W__), value, picked_by_caller: true });
        }
        _ => unreachable!("lower_output takes single outputs only"),
    }
}

/// Takes over the reference a successful call returned in `local`, after the HRESULT check, in
/// a statement of its own (so its `// SAFETY:` line sits right above its `unsafe`).
fn take_over(l: &mut Lowering<'_>, local: &Ident, expr: TokenStream) -> TokenStream {
    let owned = l.t.ident("local", &format!("{local}owned"));
    l.finish.push(safety(&format!(
        "the call succeeded, so `{local}` is null or an interface reference it handed over, released by nothing else."
    )));
    l.finish.push(quote!(let #owned = #expr;));
    quote!(#owned)
}

/// Sized outputs (text or array, with capacity and written-count parameters): a `Buffer` grown by
/// `imp::ask_then_fill`, or, in an HCORENUM method, the batch `CorEnum` hands the call.
fn lower_buffer<'a>(l: &mut Lowering<'a>, i: usize, kind: &CallKind) {
    let root = l.root;
    let m = l.m;
    let (elem, conv, out_ty, cap, len) = match kind {
        CallKind::OutArray { ty, cap, len, .. } => {
            let elem = l.t.ty("element type", ty);
            (elem.clone(), quote!(to_vec), quote!(Vec<#elem>), cap, len)
        }
        CallKind::OutString { cap, len } => (quote!(u16), quote!(to_string), quote!(String), cap, len),
        _ => unreachable!("lower_buffer takes buffers only"),
    };
    if l.is_enum {
        l.enum_item = elem;
        l.args[i] = quote!(buf__.as_mut_ptr() as _);
        l.set_arg(cap, quote!(buf__.len() as _));
        l.set_arg(len, quote!(n__));
        return;
    }
    let c_name = m.params[i].ir.name.as_str();
    let count_ty = l.t.ty("count type", &count_type(m, len));
    let n = l.local(len, count_ty, quote!(0));
    let b = l.t.ident("buffer", &format!("{c_name}__"));
    l.args[i] = quote!(#b.ptr() as _);
    l.set_arg(cap, quote!(#b.cap() as _));
    l.set_arg(len, quote!(&mut #n));
    l.buffers.push(BufferUse { name: b.clone(), new: quote!(#root::imp::Buffer::<#elem>::new()), needed: n.clone() });
    if let CallKind::OutArray { unload: Some(id), .. } = kind
        && id.lent_as_output()
    {
        let kind = l.t.ident("ID kind", id.kind());
        let why = safety("the call has just returned these, successfully.");
        l.finish.push(quote! {
            for id__ in #b.slice(#n as usize) {
                #why
                unsafe { #root::imp::lend_output(id__.as_raw() as usize, #root::imp::IdKind::#kind) };
            }
        });
    }
    let is_text = matches!(kind, CallKind::OutString { .. });
    let value = quote!(#b.#conv(#n as usize));
    l.outputs.push(Output { c_name, is_text, ty: out_ty, value, picked_by_caller: false });
}

/// What the method returns: `()`, the return value, the one output, or a struct of the outputs
/// named after the method (in the family's module, so no other method renames it), with the
/// struct's name.
fn result_of(
    l: &mut Lowering<'_>,
    ret: &CallReturn,
    wrapper: &str,
    module: &Ident,
) -> (TokenStream, TokenStream, Option<(String, ResultView)>) {
    let m = l.m;
    match (ret, l.outputs.as_slice()) {
        (CallReturn::Void, _) => (quote!(()), quote!(()), None),
        (CallReturn::Value { ty }, _) => (l.t.ty("return type", ty), quote!(hr__), None),
        (_, []) => (quote!(()), quote!(()), None),
        (_, [one]) => (one.ty.clone(), one.value.clone(), None),
        (_, outputs) => {
            let struct_name = names::result_struct(&m.ir.name);
            let name = l.t.ident("result struct", &struct_name);
            let outs: Vec<names::Output<'_>> =
                outputs.iter().map(|o| names::Output { c_name: o.c_name, is_text: o.is_text }).collect();
            let fields: Vec<FieldView> = names::field_names(&m.ir.name, &outs)
                .into_iter()
                .zip(outputs)
                .map(|(field, o)| FieldView {
                    name: l.t.ident("result field", &field),
                    ty: o.ty.clone(),
                    doc: format!("What `{}` wrote to `{}`.", m.ir.name, o.c_name),
                })
                .collect();
            let inits = fields.iter().zip(outputs).map(|(f, o)| {
                let (field, value) = (&f.name, &o.value);
                quote!(#field: #value)
            });
            let generics = if outputs.iter().any(|o| o.picked_by_caller) { quote!(<W__>) } else { TokenStream::new() };
            let (ret_ty, result) = (quote!(#module::#name #generics), quote!(#module::#name { #(#inits),* }));
            let view = ResultView {
                generics,
                name,
                doc: format!("What [`super::{wrapper}::{}`] returns.", names::wrapper_method(&m.ir.name)),
                fields,
            };
            (ret_ty, result, Some((struct_name, view)))
        }
    }
}

/// `lines` with a paragraph saying where the wrapper refuses the call (`refuse_in`), so that the
/// rustdoc of every such wrapper says it, from the one list the guards come from.
fn with_refusals(mut lines: Vec<String>, refuse_in: &[Context], checks_ids: bool) -> Vec<String> {
    if refuse_in.is_empty() && !checks_ids {
        return lines;
    }
    lines.push(String::new());
    lines.push("**Refused by corprof** (the runtime would take the call and crash):".to_string());
    let unloaded = checks_ids.then_some(
        "- with an ID of code that unloaded (a collectible `AssemblyLoadContext`), with \
         `COR_E_APPDOMAINUNLOADED`: the runtime would read freed memory. A class or function ID \
         not seen before an unload began, nor lent to the running callback, is refused too \
         (guide: \"IDs that die\").",
    );
    for item in refuse_in
        .iter()
        .map(|context| match context {
            Context::Hook => {
                "- inside a fast-mode hook (`HookMode::Fast`), with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`: the call \
                 may trigger a GC, and the hook's thread runs managed code with no frame."
            }
            Context::UnknownThread => {
                "- on a thread the runtime has no Thread object for (one the profiler started), with \
                 `CORPROF_E_NOT_MANAGED_THREAD`: the call loads types, which needs one."
            }
        })
        .chain(unloaded)
    {
        let mut item = super::docs::wrap(item, super::docs::WIDTH);
        for continued in item.iter_mut().skip(1) {
            continued.insert_str(0, "  ");
        }
        lines.extend(item);
    }
    lines
}

/// What every method of one family shares.
struct FamilyCx<'a> {
    /// The runtime crate's path in generated code.
    root: &'a TokenStream,
    /// The family's root interface (`ICorProfilerInfo`).
    family: &'a str,
    /// `ProfilerInfo`
    wrapper: &'a str,
    /// `profiler_info`: where the result structs go.
    module: &'a Ident,
    /// Structs holding raw pointers, with those fields (see `types::Types::pointer_records`).
    pointer_records: &'a HashMap<String, Vec<String>>,
}

/// The method and, when it returns several values, its result struct (with its name); an error
/// at `at` when a name of the method is no identifier.
type MethodViews = (CallMethodView, Option<(String, ResultView)>);

/// The view of one method and, when it returns several values, its result struct.
fn method_view(
    cx: &FamilyCx<'_>,
    at: &str,
    iface: &str,
    m: &ApiMethod,
    kinds: &[CallKind],
    ret: &CallReturn,
) -> Result<MethodViews, Diagnostic> {
    let FamilyCx { root, family, wrapper, module, pointer_records } = *cx;
    let c_names: Vec<&str> = m.params.iter().map(|p| p.ir.name.as_str()).collect();
    let shown: Vec<bool> = kinds.iter().map(|k| !matches!(k, CallKind::Consumed | CallKind::CorEnum)).collect();
    let rust_names = names::param_names(&c_names, &shown);
    let mut t = Tokens::new(at);
    let args = m
        .params
        .iter()
        .map(|p| {
            let arg = t.ident("parameter", &p.ir.name);
            quote!(#arg)
        })
        .collect();
    let mut l = Lowering {
        root,
        m,
        t,
        is_enum: kinds.contains(&CallKind::CorEnum),
        params: Vec::new(),
        args,
        setup: Vec::new(),
        finish: Vec::new(),
        locals: Vec::new(),
        buffers: Vec::new(),
        outputs: Vec::new(),
        generics: TokenStream::new(),
        safety: Vec::new(),
        enum_item: TokenStream::new(),
        slice_lens: Vec::new(),
    };
    for (i, (kind, rust)) in kinds.iter().zip(rust_names).enumerate() {
        match kind {
            CallKind::Consumed => {}
            CallKind::CorEnum => l.args[i] = quote!(h__),
            CallKind::Out { .. }
            | CallKind::OutBool
            | CallKind::OutFlags { .. }
            | CallKind::OutInterface { .. }
            | CallKind::OutIid { .. } => lower_output(&mut l, i, kind),
            CallKind::OutString { .. } | CallKind::OutArray { .. } => lower_buffer(&mut l, i, kind),
            _ => {
                if let Some(safety) = pointer_record_safety(&rust, kind, pointer_records) {
                    l.safety.push(safety);
                }
                lower_input(&mut l, i, rust, kind)
            }
        }
    }
    if m.suspends {
        l.setup.insert(0, quote!(#root::imp::refuse_on_suspending_thread()?;));
    }
    // Before anything reaches the runtime, cheapest first.
    for context in m.refuse_in.iter().rev() {
        let guard = match context {
            Context::Hook => quote!(#root::imp::refuse_in_hook()?;),
            Context::UnknownThread => {
                let family = l.t.ident("family", family);
                let why = safety(
                    "`thread__` is this wrapper's own object, its gate entered; GetCurrentThreadID writes one \
                     ThreadID to a local, and may be called on any thread.",
                );
                quote! {
                    let thread__ = self.get::<#family>()?;
                    #root::imp::refuse_on_unknown_thread(|| {
                        let mut id__ = #root::imp::zeroed();
                        #why
                        unsafe { thread__.GetCurrentThreadID(&mut id__) }
                    })?;
                }
            }
        };
        l.setup.insert(0, guard);
    }
    if let WrapperRule::Unsafe(why) = &m.wrapper {
        l.safety.insert(0, format!("- {}", why.trim()));
    }
    if kinds.iter().any(|k| matches!(k, CallKind::Raw { .. })) {
        l.safety
            .insert(0, "- The raw pointer arguments must be valid as the method's documentation requires.".to_string());
    }
    let (ret_ty, result, result_view) = result_of(&mut l, ret, wrapper, module);
    // S_FALSE as "no": `false` for a method without outputs, `None` instead of them otherwise.
    let (ret_ty, result, s_false_doc, no) = match ret {
        CallReturn::HResultOrFalse { meaning } if l.outputs.is_empty() => (
            quote!(bool),
            quote!(true),
            format!("Returns `false` when the runtime answers S_FALSE: {meaning}."),
            quote!(false),
        ),
        CallReturn::HResultOrFalse { meaning } => (
            quote!(Option<#ret_ty>),
            quote!(Some(#result)),
            format!("Returns `None` when the runtime answers S_FALSE: {meaning}."),
            quote!(None),
        ),
        _ => (ret_ty, result, String::new(), TokenStream::new()),
    };
    let check = match ret {
        CallReturn::HResult => quote!(#root::HResult(hr__).ok()?;),
        CallReturn::HResultOrFalse { .. } => quote! {
            #root::HResult(hr__).ok()?;
            if hr__ == #root::HResult::S_FALSE.0 { return Ok(#no); }
        },
        CallReturn::Value { .. } | CallReturn::Void => TokenStream::new(),
    };
    let returned = l.locals.iter().map(|v| &v.name);
    let buffers = l.buffers.iter().map(|b| &b.new);
    let buffer_names = l.buffers.iter().map(|b| &b.name);
    let needed = l.buffers.iter().map(|b| &b.needed);
    let (params, args, enum_item) = (&l.params, &l.args, &l.enum_item);
    let view = CallMethodView {
        s_false_doc,
        is_unsafe: !l.safety.is_empty(),
        name: l.t.ident("slot", &m.ir.name),
        snake: l.t.ident("method", &names::wrapper_method(&m.ir.name)),
        iface: l.t.ident("interface", iface),
        doc_url: doc_url(iface, &m.ir.name),
        doc_lines: with_refusals(
            super::docs::doc_lines(m.docs.as_ref()),
            &m.refuse_in,
            kinds.iter().any(|k| matches!(k, CallKind::Unloadable { .. } | CallKind::InSlice { unload: Some(_), .. })),
        ),
        loc: loc(&m.ir.loc),
        params: quote!(#(#params),*),
        ret_ty: if l.is_enum { quote!(#root::imp::CorEnum<'_, #enum_item>) } else { ret_ty },
        setup: l.setup,
        finish: l.finish,
        locals: l.locals.iter().map(|v| v.decl.clone()).collect(),
        args: quote!(#(#args),*),
        binds_hr: !matches!(ret, CallReturn::Void),
        check,
        result,
        has_buffers: !l.buffers.is_empty(),
        buffers: quote!((#(#buffers,)*)),
        buffer_names: quote!((#(#buffer_names,)*)),
        needed: quote!(#(#needed as usize),*),
        returned: quote!((hr__, #(#returned,)*)),
        is_enum: l.is_enum,
        enum_item: l.enum_item.clone(),
        generics: l.generics,
        safety: l.safety,
        close_iface: TokenStream::new(),
        counts: false,
        resets: false,
    };
    match l.t.finish() {
        Some(d) => Err(d),
        None => Ok((view, result_view)),
    }
}

/// The `# Safety` line of an input whose struct holds raw pointers the runtime reads through
/// (`COR_PRF_EVENTPIPE_PROVIDER_CONFIG::providerName`): safe code could fill them with anything.
fn pointer_record_safety(param: &str, kind: &CallKind, records: &HashMap<String, Vec<String>>) -> Option<String> {
    let ty = match kind {
        CallKind::Value { ty }
        | CallKind::InRef { ty, .. }
        | CallKind::InSlice { ty, .. }
        | CallKind::Ref { ty, .. } => ty,
        _ => return None,
    };
    let fields = records.get(ty.name()?)?;
    let fields: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
    Some(format!(
        "- The pointers inside `{param}` ({ty}: {}) must each be null where the method allows it, or point to \
         valid memory of what the method documents (for text, a NUL-terminated UTF-16 string) for the whole call: the \
         runtime reads through them.",
        fields.join(", ")
    ))
}

/// The `# Safety` line for a function pointer the runtime will call, by what its typedef is for.
fn fn_safety(param: &str, typedef: &RustType, contract: FnContract) -> String {
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
        FnContract::HeapWalk => {
            "is called once per object of the GC heap, on this thread, before this call returns: it must be a \
             valid `extern \"system\"` function of this signature that does not unwind, and `callback_state` \
             must be what it expects; the ObjectIDs it gets are valid only until the call returns (the runtime \
             must stay suspended, or the next GC may move them)"
        }
        FnContract::ProviderCallback => {
            "is called by the runtime whenever an EventPipe session enables or disables the provider, on the \
             thread that starts or stops the session (during this call, if a session already enables the \
             provider), for the rest of the process: a provider is never deleted. It must be a valid \
             `extern \"system\"` function of this signature that does not unwind and stays valid that long; \
             the runtime passes it a null `callback_data`, so it cannot tell two providers apart by that"
        }
        FnContract::Callback => {
            "is called by the runtime: it must be a valid `extern \"system\"` function of this signature \
             for as long as the runtime may call it (the profiler's lifetime unless documented \
             otherwise) and must not unwind; any client data passed with it must stay valid as long"
        }
    };
    format!("- `{param}` (`{typedef}`) {what}.")
}

/// The `# Safety` line for an ID the runtime dereferences and that dies while a profiler may hold
/// it, by what kills it.
fn id_safety(param: &str, contract: IdContract) -> String {
    match contract {
        IdContract::Thread => format!(
            "- `{param}` must be a thread the runtime has not destroyed, and will not destroy during the call: \
             the runtime reads its Thread object, freed once `ThreadDestroyed` for it has returned. Alive for \
             certain: the calling thread (`get_current_thread_id`), the thread a callback is about while that \
             callback runs, and every thread enumerated while the profiler holds the runtime suspended \
             (`suspend_runtime`), until it resumes."
        ),
        IdContract::Object => format!(
            "- `{param}` must be the current address of a live object, and no garbage collection may run before \
             this call returns: an `ObjectID` is valid from the runtime handing it out until the next GC, which may \
             move or free the object. That holds inside the callback that gave it (for a managed thread), under a \
             runtime suspension the profiler holds, and always for a non-GC-heap (frozen) object; an ObjectID kept \
             across a GC may point into another object or into freed memory."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iterator_passes_one_item_and_reads_the_count_back() {
        let next = IteratorNext {
            item: RustType::named("ClassID"),
            args: vec![NextArg::One, NextArg::Item, NextArg::Fetched, NextArg::Null],
        };
        let mut t = Tokens::new("IFixEnum::Next");
        let it = iterator_view("IFixEnum", next, &mut t);
        assert!(t.finish().is_none());
        assert_eq!(it.item.to_string(), "ClassID");
        assert_eq!(it.iface.to_string(), "IFixEnum");
        assert_eq!(it.args.to_string(), quote!(1, &mut item__, &mut fetched__, ::core::ptr::null_mut()).to_string());
    }

    /// A name the view cannot make an identifier of is reported at its method, with the name,
    /// before any text is rendered: here a flag type the annotations spelled as no Rust type (resolve would
    /// refuse it; the view is handed it directly, as a generator bug would hand it over).
    #[test]
    fn a_broken_fragment_names_its_method() {
        use crate::annotations::{Direction, ParamSpec};
        use crate::ir::{CType, Interface, Loc, Method, Param};
        use crate::resolve::{ApiInterface, ApiParam};
        let mut spec = ParamSpec::direction(Direction::In);
        spec.flags = Some("COR PRF".into());
        let flags = ApiParam {
            ir: Param {
                name: "dwFlags".into(),
                ty: CType::Named("DWORD".into()),
                midl: vec![],
                sal: vec![],
                declared_array: false,
                is_count: false,
                loc: Loc::default(),
            },
            spec: Some(spec),
            spec_loc: None,
        };
        let method = ApiMethod {
            ir: Method {
                name: "SetFlags".into(),
                ret: CType::Named("HRESULT".into()),
                params: vec![],
                loc: Loc::default(),
            },
            params: vec![flags],
            s_false: None,
            wrapper: Default::default(),
            suspends: false,
            refuse_in: Vec::new(),
            docs: None,
            answered_by: None,
        };
        let iface = ApiInterface {
            ir: Interface {
                name: "IFixInfo".into(),
                iid: "00000000-0000-0000-0000-000000000001".into(),
                base: Some("IUnknown".into()),
                methods: vec![],
                loc: Loc::default(),
            },
            is_callback: false,
            safe: true,
            methods: vec![method],
        };
        let api = Api::new(vec![iface]);
        let e = wrappers_view(&api, &quote!(crate), &HashMap::new()).err().expect("refused").to_string();
        assert!(e.contains("generator bug: IFixInfo::SetFlags makes Rust from names that are not Rust"), "{e}");
        assert!(e.contains("flag type `COR PRF` is not a Rust identifier"), "{e}");
    }
}
