//! IR + annotations → [`Api`]: every interface of the header with each parameter's annotation
//! attached. Validates the merge and collects every problem before failing: names that do not
//! exist (with a suggestion), directions on non-pointers, bad `len`/`string` uses, and pointer
//! parameters of a generated-safe interface that have no direction.

use crate::annotations::{Annotations, InterfaceAnn, ParamSpec};
use crate::diag::{Diagnostic, Errors, suggest};
use crate::ir::{CType, Header, Interface, Loc, Method, Param};

#[derive(Clone, Debug)]
pub struct Api {
    pub interfaces: Vec<ApiInterface>,
}

#[derive(Clone, Debug)]
pub struct ApiInterface {
    pub ir: Interface,
    /// Part of the ICorProfilerCallback family: gets a safe trait, so every pointer is annotated.
    pub is_callback: bool,
    pub methods: Vec<ApiMethod>,
}

#[derive(Clone, Debug)]
pub struct ApiMethod {
    pub ir: Method,
    pub params: Vec<ApiParam>,
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
pub fn resolve(header: &Header, ann: &Annotations) -> Result<(Api, Errors), Errors> {
    let mut errors = Errors::default();
    for iface_ann in &ann.interfaces {
        check_interface_entry(header, iface_ann, &mut errors);
    }
    let interfaces = header
        .interfaces
        .iter()
        .map(|iface| {
            let is_callback = header.is_callback(iface);
            let iface_ann = ann.interface(&iface.name);
            let methods = iface
                .methods
                .iter()
                .map(|m| {
                    let method_ann = iface_ann.and_then(|ia| ia.methods.iter().find(|ma| ma.name == m.name));
                    let params = m
                        .params
                        .iter()
                        .map(|p| {
                            let pa = method_ann.and_then(|ma| ma.params.iter().find(|pa| pa.name == p.name));
                            if is_callback && p.ty.is_pointer() && pa.is_none() {
                                let at = method_ann.map(|ma| ma.loc.clone()).or_else(|| iface_ann.map(|ia| ia.loc.clone()));
                                errors.push(missing_direction(iface, m, p, at));
                            }
                            if let Some(pa) = pa.filter(|pa| pa.spec.draft) {
                                errors.push(
                                    Diagnostic::warning(format!(
                                        "draft annotation for `{}` of {}::{} is not reviewed yet",
                                        p.name, iface.name, m.name
                                    ))
                                    .at(pa.loc.clone())
                                    .help("check it against the documentation, then remove `draft: true`"),
                                );
                            }
                            ApiParam { ir: p.clone(), spec: pa.map(|pa| pa.spec.clone()), spec_loc: pa.map(|pa| pa.loc.clone()) }
                        })
                        .collect();
                    ApiMethod { ir: m.clone(), params }
                })
                .collect();
            ApiInterface { ir: iface.clone(), is_callback, methods }
        })
        .collect();
    errors.check()?;
    Ok((Api { interfaces }, errors))
}

/// `ICorProfilerCallback12` → `ICorProfilerCallback`: entries for a later (or earlier) version of
/// a family the header declares are skipped, so one annotation set serves several SDK headers.
fn family(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit())
}

fn check_interface_entry(header: &Header, ia: &InterfaceAnn, errors: &mut Errors) {
    let Some(iface) = header.interface(&ia.name) else {
        if header
            .interfaces
            .iter()
            .any(|i| family(&i.name) == family(&ia.name))
        {
            errors.push(
                Diagnostic::warning(format!(
                    "interface `{}` is not declared by this header; its entries are skipped",
                    ia.name
                ))
                .at(ia.loc.clone()),
            );
        } else {
            let mut d =
                Diagnostic::error(format!("unknown interface `{}`", ia.name)).at(ia.loc.clone());
            if let Some(s) = suggest(&ia.name, header.interfaces.iter().map(|i| i.name.as_str())) {
                d = d.help(format!("did you mean `{s}`?"));
            }
            errors.push(d);
        }
        return;
    };
    for ma in &ia.methods {
        let Some(method) = iface.methods.iter().find(|m| m.name == ma.name) else {
            let mut d = Diagnostic::error(format!(
                "unknown method `{}` in interface `{}`",
                ma.name, iface.name
            ))
            .at(ma.loc.clone())
            .declared_at(&iface.loc);
            if let Some(owner) = header
                .chain(iface)
                .into_iter()
                .skip(1)
                .find(|b| b.methods.iter().any(|m| m.name == ma.name))
            {
                d = d.help(format!(
                    "`{}` is declared by `{}`: annotate it there",
                    ma.name, owner.name
                ));
            } else if let Some(s) = suggest(&ma.name, iface.methods.iter().map(|m| m.name.as_str()))
            {
                d = d.help(format!("did you mean `{s}`?"));
            }
            errors.push(d);
            continue;
        };
        for pa in &ma.params {
            let qualified = format!("{}::{}", iface.name, method.name);
            let Some(param) = method.params.iter().find(|p| p.name == pa.name) else {
                let mut d =
                    Diagnostic::error(format!("unknown parameter `{}` of {qualified}", pa.name))
                        .at(pa.loc.clone())
                        .declared_at(&method.loc);
                if let Some(s) = suggest(&pa.name, method.params.iter().map(|p| p.name.as_str())) {
                    d = d.help(format!("did you mean `{s}`?"));
                }
                errors.push(d);
                continue;
            };
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
            if let Some(len) = &pa.spec.len {
                match method.params.iter().find(|p| &p.name == len) {
                    None => errors.push(
                        Diagnostic::error(format!(
                            "length parameter `{len}` of `{}` does not exist in {qualified}",
                            pa.name
                        ))
                        .at(pa.loc.clone())
                        .declared_at(&method.loc),
                    ),
                    Some(lp) if lp.ty.is_pointer() => errors.push(
                        Diagnostic::error(format!(
                            "length parameter `{len}` of `{}` is a pointer (`{}`)",
                            pa.name, lp.ty
                        ))
                        .at(pa.loc.clone())
                        .declared_at(&lp.loc),
                    ),
                    Some(_) => {}
                }
            }
            if pa.spec.string && !matches!(pointee, CType::Named(n) if n == "WCHAR") {
                errors.push(
                    Diagnostic::error(format!("`{}` of {qualified} is marked `string` but points to `{pointee}`, not WCHAR", pa.name))
                        .at(pa.loc.clone())
                        .declared_at(&param.loc),
                );
            }
        }
    }
}

fn missing_direction(iface: &Interface, m: &Method, p: &Param, at: Option<Loc>) -> Diagnostic {
    let hint = if p.midl.is_empty() {
        String::new()
    } else {
        format!(
            " (the header's MIDL attributes say [{}])",
            p.midl.join("][")
        )
    };
    Diagnostic::error(format!(
        "pointer parameter `{}` of {}::{} has no direction",
        p.name, iface.name, m.name
    ))
    .at_opt(at)
    .declared_at(&p.loc)
    .help(format!(
        "add `{}: in`, `out` or `ref` under `{}:` → `{}:` in an annotation file{hint}",
        p.name, iface.name, m.name
    ))
}
