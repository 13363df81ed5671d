//! IR + annotations → [`Api`]: every interface of the header with each parameter's annotation
//! attached. Validates the merge and collects every problem before failing: names that do not
//! exist (with a suggestion), directions on non-pointers, bad `len`/`string` uses, and pointer
//! parameters of a generated-safe interface that have no direction.

use crate::annotations::{Annotations, Direction, InterfaceAnn, ParamAnn, ParamSpec};
use crate::diag::{Diagnostic, Errors, suggest};
use crate::ir::{CALLBACK_ROOT, CType, Header, Interface, Loc, Method, Param};

mod agree;

#[derive(Clone, Debug)]
pub struct Api {
    pub interfaces: Vec<ApiInterface>,
}

#[derive(Clone, Debug)]
pub struct ApiInterface {
    pub ir: Interface,
    /// Part of the ICorProfilerCallback family: gets the safe trait.
    pub is_callback: bool,
    /// Gets a safe layer (trait or wrapper), so every pointer parameter is annotated.
    pub safe: bool,
    pub methods: Vec<ApiMethod>,
}

#[derive(Clone, Debug)]
pub struct ApiMethod {
    pub ir: Method,
    pub params: Vec<ApiParam>,
    /// What S_FALSE means, when the method answers "no" with it (annotation `return:`).
    pub s_false: Option<String>,
}

#[derive(Clone, Debug)]
pub struct ApiParam {
    pub ir: Param,
    pub spec: Option<ParamSpec>,
    /// Where the annotation was written.
    pub spec_loc: Option<Loc>,
}

impl Api {
    pub fn interface(&self, name: &str) -> Option<&ApiInterface> {
        self.interfaces.iter().find(|i| i.ir.name == name)
    }
}

/// Merges and validates. `Ok` carries the warnings too (drafts, interfaces this header lacks).
///
/// An interface gets the safe layer (and so needs every pointer parameter annotated) when it is
/// a callback, is declared by the main header (corprof.h), or is named in the annotations.
pub fn resolve(header: &Header, ann: &Annotations) -> Result<(Api, Errors), Errors> {
    let mut errors = Errors::default();
    check_header(header, &mut errors);
    for iface_ann in &ann.interfaces {
        check_interface_entry(header, iface_ann, &mut errors);
    }
    let mut drafts: Vec<&Loc> = Vec::new();
    let mut interfaces = Vec::new();
    for iface in &header.interfaces {
        let is_callback = header.is_callback(iface);
        let iface_ann = ann.interface(&iface.name);
        let safe = is_callback || iface.loc.file == header.main_header || iface_ann.is_some();
        let mut methods = Vec::new();
        for m in &iface.methods {
            let method_ann = iface_ann.and_then(|ia| ia.methods.iter().find(|ma| ma.name == m.name));
            let find = |name: &str| method_ann.and_then(|ma| ma.params.iter().find(|pa| pa.name == name));
            let consumed: Vec<&str> = method_ann
                .map(|ma| ma.params.iter().filter(|pa| !pa.spec.raw).flat_map(|pa| pa.spec.consumes()).collect())
                .unwrap_or_default();
            let mut params = Vec::new();
            for p in &m.params {
                let pa = find(&p.name);
                if safe && p.ty.is_pointer() && pa.is_none() && !consumed.contains(&p.name.as_str()) {
                    let at = method_ann.map(|ma| ma.loc.clone()).or_else(|| iface_ann.map(|ia| ia.loc.clone()));
                    errors.push(missing_direction(iface, m, p, at));
                }
                if let Some(pa) = pa.filter(|pa| pa.spec.draft) {
                    drafts.push(&pa.loc);
                }
                // `flags` naming an enum this header lacks leaves the C type (noted in the check).
                let spec = pa.map(|pa| {
                    let mut spec = pa.spec.clone();
                    spec.flags = spec.flags.filter(|f| header.enums.iter().any(|e| e.is_named(f) && e.flags));
                    spec
                });
                params.push(ApiParam { ir: p.clone(), spec, spec_loc: pa.map(|pa| pa.loc.clone()) });
            }
            let s_false = method_ann.and_then(|ma| ma.ret.as_ref()).and_then(|(r, _)| r.s_false.clone());
            methods.push(ApiMethod { ir: m.clone(), params, s_false });
        }
        interfaces.push(ApiInterface { ir: iface.clone(), is_callback, safe, methods });
    }
    // One warning per file, not one per entry: a fresh bootstrap drafts hundreds.
    let mut files: Vec<&str> = drafts.iter().map(|l| l.file.as_str()).collect();
    files.dedup();
    for file in files {
        let here: Vec<&&Loc> = drafts.iter().filter(|l| l.file == file).collect();
        errors.push(
            Diagnostic::warning(format!("{} draft annotation(s) in {file} are not reviewed yet", here.len()))
                .at((*here[0]).clone())
                .help("check each against the documentation, then remove `draft: true`"),
        );
    }
    errors.check()?;
    Ok((Api { interfaces }, errors))
}

/// `ICorProfilerCallback12` → `ICorProfilerCallback`: entries for a later (or earlier) version of
/// a family the header declares are skipped, so one annotation set serves several SDK headers.
fn family(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// What would otherwise fail in rustc: no callback interface to implement (the corprof crate
/// re-exports the trait), a base interface that gets no binding (the vtable embeds the base's).
fn check_header(header: &Header, errors: &mut Errors) {
    if !header.interfaces.iter().any(|i| header.is_callback(i)) {
        let at = Loc { file: header.main_header.clone(), line: 1, col: 0 };
        errors.push(
            Diagnostic::error(format!(
                "{} declares no callback interface (`{CALLBACK_ROOT}` or one derived from it)",
                header.main_header
            ))
            .at(at)
            .help(format!(
                "a profiler implements {CALLBACK_ROOT}: point CORPROF_INCLUDE_DIR at the runtime's corprof.h"
            )),
        );
    }
    for iface in &header.interfaces {
        let Some(base) = iface.base.as_deref().filter(|b| *b != "IUnknown" && header.interface(b).is_none()) else {
            continue;
        };
        let mut d = Diagnostic::error(format!("`{}` derives from `{base}`, which gets no binding", iface.name))
            .at(iface.loc.clone());
        if let Some((_, loc)) = header.without_iid.iter().find(|(n, _)| n == base) {
            d = d.note(format!("`{base}` is declared at {loc} without an IID")).help(IID_HELP);
        }
        errors.push(d);
    }
}

const IID_HELP: &str = "declare it with `MIDL_INTERFACE(\"<iid>\")` or an `IID_<name>` GUID constant";

fn check_interface_entry(header: &Header, ia: &InterfaceAnn, errors: &mut Errors) {
    if let Some((_, loc)) = header.without_iid.iter().find(|(n, _)| *n == ia.name) {
        errors.push(
            Diagnostic::error(format!(
                "interface `{}` has no IID, so it gets no binding and its entries cannot apply",
                ia.name
            ))
            .at(ia.loc.clone())
            .declared_at(loc)
            .help(IID_HELP),
        );
        return;
    }
    let Some(iface) = header.interface(&ia.name) else {
        // Another version of a family the header has, or a name close to none: an interface this
        // header version lacks (skipped). A name close to a declared one: a typo (error).
        let same_family = header.interfaces.iter().any(|i| family(&i.name) == family(&ia.name));
        let close = suggest(&ia.name, header.interfaces.iter().map(|i| i.name.as_str()));
        match close {
            Some(s) if !same_family => errors.push(
                Diagnostic::error(format!("unknown interface `{}`", ia.name))
                    .at(ia.loc.clone())
                    .help(format!("did you mean `{s}`?")),
            ),
            _ => errors.push(
                Diagnostic::info(format!(
                    "interface `{}` is not declared by this header; its entries are skipped",
                    ia.name
                ))
                .at(ia.loc.clone()),
            ),
        }
        return;
    };
    for ma in &ia.methods {
        let Some(method) = iface.methods.iter().find(|m| m.name == ma.name) else {
            let mut d = Diagnostic::error(format!("unknown method `{}` in interface `{}`", ma.name, iface.name))
                .at(ma.loc.clone())
                .declared_at(&iface.loc);
            if let Some(owner) =
                header.chain(iface).into_iter().skip(1).find(|b| b.methods.iter().any(|m| m.name == ma.name))
            {
                d = d.help(format!("`{}` is declared by `{}`: annotate it there", ma.name, owner.name));
            } else if let Some(s) = suggest(&ma.name, iface.methods.iter().map(|m| m.name.as_str())) {
                d = d.help(format!("did you mean `{s}`?"));
            }
            errors.push(d);
            continue;
        };
        if let Some((_, loc)) = &ma.ret {
            let returns_hresult = matches!(&method.ret, CType::Named(n) if n == "HRESULT");
            if header.is_callback(iface) || !returns_hresult {
                errors.push(
                    Diagnostic::error(format!(
                        "`return:` of {}::{} describes the answer of a method the profiler calls and that returns HRESULT",
                        iface.name, method.name
                    ))
                    .at(loc.clone())
                    .declared_at(&method.loc),
                );
            }
        }
        for pa in &ma.params {
            let qualified = format!("{}::{}", iface.name, method.name);
            let Some(param) = method.params.iter().find(|p| p.name == pa.name) else {
                let mut d = Diagnostic::error(format!("unknown parameter `{}` of {qualified}", pa.name))
                    .at(pa.loc.clone())
                    .declared_at(&method.loc);
                if let Some(s) = suggest(&pa.name, method.params.iter().map(|p| p.name.as_str())) {
                    d = d.help(format!("did you mean `{s}`?"));
                }
                errors.push(d);
                continue;
            };
            if let Some(flags) = &pa.spec.flags {
                check_flags(header, &qualified, param, pa, flags, errors);
            }
            let value_flags = pa.spec.flags.is_some()
                && pa.spec.dir == Direction::In
                && pa.spec.consumes().next().is_none()
                && !(pa.spec.corenum || pa.spec.raw || pa.spec.optional || pa.spec.string);
            if !param.ty.is_pointer() && value_flags {
                continue;
            }
            let Some(pointee) = param.ty.pointee() else {
                errors.push(
                    Diagnostic::error(format!(
                        "`{}` of {qualified} is not a pointer (its type is `{}`): only pointer parameters take a direction",
                        pa.name, param.ty
                    ))
                    .at(pa.loc.clone())
                    .declared_at(&param.loc),
                );
                continue;
            };
            let at = |msg: String, decl: &Loc| Diagnostic::error(msg).at(pa.loc.clone()).declared_at(decl);
            let other = |name: &str| method.params.iter().find(|p| p.name == name);
            // Counts of `in` arrays and capacities are values; counts of `out` buffers are
            // written back, so they are pointers.
            let wants_pointer_len = pa.spec.dir != Direction::In;
            for (role, name, want_pointer) in [
                ("length", &pa.spec.len, wants_pointer_len),
                ("capacity", &pa.spec.cap, false),
                ("IID", &pa.spec.iid, true),
            ] {
                let Some(name) = name else { continue };
                if *name == pa.name {
                    errors.push(at(format!("`{}` cannot be its own {role} parameter", pa.name), &param.loc));
                    continue;
                }
                match other(name) {
                    None => errors.push(at(
                        format!("{role} parameter `{name}` of `{}` does not exist in {qualified}", pa.name),
                        &method.loc,
                    )),
                    Some(lp) if role != "IID" && !lp.is_count => errors.push(at(
                        format!(
                            "{role} parameter `{name}` of `{}` is `{}`, not an integer: it cannot count elements",
                            pa.name, lp.ty
                        ),
                        &lp.loc,
                    )),
                    Some(lp) if lp.ty.is_pointer() != want_pointer => errors.push(at(
                        format!(
                            "{role} parameter `{name}` of `{}` {} a pointer (`{}`)",
                            pa.name,
                            if want_pointer { "must be" } else { "is" },
                            lp.ty
                        ),
                        &lp.loc,
                    )),
                    Some(_) => {}
                }
            }
            if pa.spec.cap.is_some() && pa.spec.dir == Direction::In {
                errors.push(at(format!("`cap` of `{}` belongs to `out` buffers, not `in` ones", pa.name), &param.loc));
            }
            if pa.spec.corenum && !matches!(pointee, CType::Named(n) if n == "HCORENUM") {
                errors.push(at(
                    format!("`{}` is marked `corenum` but points to `{pointee}`, not HCORENUM", pa.name),
                    &param.loc,
                ));
            }
            if pa.spec.iid.is_some() && !pointee.is_untyped_interface_pointer() {
                errors.push(at(
                    format!("`{}` has an `iid` but is `{}`, not `void **`/`IUnknown **`", pa.name, param.ty),
                    &param.loc,
                ));
            }
            let place = agree::Place { qualified: &qualified, is_callback: header.is_callback(iface) };
            agree::check(&place, param, pa, errors);
            if pa.spec.string && !matches!(pointee, CType::Named(n) if n == "WCHAR") {
                errors.push(
                    Diagnostic::error(format!(
                        "`{}` of {qualified} is marked `string` but points to `{pointee}`, not WCHAR",
                        pa.name
                    ))
                    .at(pa.loc.clone())
                    .declared_at(&param.loc),
                );
            }
        }
    }
}

/// `flags: T` names a flag enum of the header, on an integer (or a pointer to one) of its size.
fn check_flags(header: &Header, qualified: &str, param: &Param, pa: &ParamAnn, flags: &str, errors: &mut Errors) {
    let at = |msg: String| Diagnostic::error(msg).at(pa.loc.clone()).declared_at(&param.loc);
    match header.enums.iter().find(|e| e.is_named(flags)) {
        // A name close to a declared enum is a typo; another one names a type of a header not
        // parsed this time (cor.h's `CorOpenFlags` when only corprof.h is): the parameter keeps
        // its C type, with a note.
        None => match suggest(flags, header.enums.iter().filter(|e| e.flags).map(|e| e.name.as_str())) {
            Some(s) => errors.push(
                at(format!("`flags: {flags}` of `{}` in {qualified}: the header declares no enum `{flags}`", pa.name))
                    .help(format!("did you mean `{s}`?")),
            ),
            None => errors.push(
                Diagnostic::info(format!(
                    "`flags: {flags}` of `{}` in {qualified}: this header declares no enum `{flags}`; the parameter keeps its C type",
                    pa.name
                ))
                .at(pa.loc.clone()),
            ),
        },
        Some(e) if !e.flags => errors.push(
            at(format!("`flags: {flags}` of `{}` in {qualified}: `{flags}` is not a flag enum", pa.name))
                .note(format!("`{flags}` is declared at {}", e.loc))
                .note(
                    "a flag enum writes its enumerators as bits (hex, other enumerators, `|`), mostly single bits; \
                     this one is a list of values",
                ),
        ),
        Some(_) if !param.is_count => errors.push(at(format!(
            "`flags: {flags}` of `{}` in {qualified}: the parameter is `{}`, not an integer (or a pointer to one)",
            pa.name, param.ty
        ))),
        Some(_) => {}
    }
}

fn missing_direction(iface: &Interface, m: &Method, p: &Param, at: Option<Loc>) -> Diagnostic {
    let hint = if p.midl.is_empty() {
        String::new()
    } else {
        format!(" (the header's MIDL attributes say [{}])", p.midl.join("]["))
    };
    Diagnostic::error(format!("pointer parameter `{}` of {}::{} has no direction", p.name, iface.name, m.name))
        .at_opt(at)
        .declared_at(&p.loc)
        .help(format!(
            "add `{}: in`, `out` or `ref` under `{}:` → `{}:` in an annotation file{hint}",
            p.name, iface.name, m.name
        ))
}
