//! One annotation against what the header says about the same parameter ([`contract`]): the
//! direction against MIDL's `[in]`/`[out]` and SAL, counts against SAL's `_In_reads_(n)` /
//! `_Out_writes_to_(cap, *len)` and MIDL's `[size_is(cap)]`/`[length_is(len)]` (from the comment,
//! or the IDL beside the header when the comment dropped the expression), arrays against
//! `[size_is]`, `string` against `[string]`, and null-ness of
//! callback parameters against `_opt_`. A disagreement is an error quoting the header, unless the
//! entry carries `override: "<reason>"`; then it is a note (`corprof-gen check` lists them all).
//! A callback parameter that points to const cannot be `out`/`ref`, override or not: the thunk
//! would not compile.

use crate::annotations::{Direction, ParamAnn};
use crate::contract::{Count, contract_with_idl};
use crate::diag::{Diagnostic, Errors};
use crate::idl::IdlParam;
use crate::ir::{CType, Param};

/// Where the parameter sits, for messages.
pub struct Place<'a> {
    /// `ICorProfilerInfo::GetFunctionInfo`
    pub qualified: &'a str,
    pub is_callback: bool,
    /// The parameter as the IDL beside the header declares it, when there is one.
    pub idl: Option<&'a IdlParam>,
}

/// Checks `pa` against the header; returns what the header says (`[size_is][in]`) when it marks
/// the parameter counted without stating by what, so the entry's `len`/`cap` went unconfirmed.
pub fn check(place: &Place<'_>, param: &Param, pa: &ParamAnn, errors: &mut Errors) -> Option<String> {
    let spec = &pa.spec;
    let at = |msg: String| Diagnostic::error(msg).at(pa.loc.clone()).declared_at(&param.loc);
    // (what the header says, what to write instead)
    let mut disagree: Vec<(String, String)> = Vec::new();
    let writes_const = spec.dir != Direction::In && matches!(param.ty, CType::Pointer { is_const: true, .. });
    if writes_const {
        let what = format!("is annotated `{}`, but it points to const (`{}`)", dir_name(spec.dir), param.ty);
        if place.is_callback {
            // The thunk would hand the profiler a writable view of a const pointer: no override.
            errors.push(at(format!("`{}` of {} {what}", pa.name, place.qualified)).help("write `in`"));
        } else {
            // cor.h declares some out buffers `LPCWSTR`; the wrapper passes its own buffer.
            disagree.push((what, "write `in`".to_string()));
        }
    }

    let said = contract_with_idl(param, place.idl);
    // MIDL first; SAL only when MIDL is silent or agrees (one message per parameter, and none
    // when the const error above already says to write `in`).
    let stated = [&said.midl_dir, &said.sal_dir].into_iter().flatten().find(|d| d.value != spec.dir);
    if let Some(d) = stated.filter(|_| !(writes_const && place.is_callback)) {
        {
            disagree.push((
                format!("is annotated `{}`, but the header says `{}`", dir_name(spec.dir), d.quote),
                format!("write `dir: {}`", dir_name(d.value)),
            ));
        }
    }
    if !spec.raw {
        match said.count.as_ref().map(|c| (&c.value, &c.quote)) {
            Some((Count::Reads { len }, quote)) if spec.len.as_deref() != Some(len) => disagree.push((
                format!("has {}, but {} says `{quote}`", shown("len", &spec.len), said.count_by),
                format!("write `len: {len}`"),
            )),
            Some((Count::Writes { cap, len }, quote)) => {
                if spec.cap.as_deref() != Some(cap) {
                    disagree.push((
                        format!("has {}, but {} says `{quote}`", shown("cap", &spec.cap), said.count_by),
                        format!("write `cap: {cap}`"),
                    ));
                }
                if let Some(len) = len.as_ref().filter(|l| spec.len.as_deref() != Some(l.as_str())) {
                    disagree.push((
                        format!("has {}, but {} says `{quote}`", shown("len", &spec.len), said.count_by),
                        format!("write `len: {len}`"),
                    ));
                }
            }
            _ => {}
        }
        // `[size_is]`, or `T name[]` (counted by something, unless it is NUL-terminated text).
        let array = match &said.sized {
            Some(sized) => Some(format!("the header says `{}`", sized.quote)),
            None => (param.declared_array && !spec.string).then(|| format!("it is declared `{}[]`", param.name)),
        };
        if let Some(why) = array.filter(|_| said.count.is_none() && spec.len.is_none() && spec.cap.is_none()) {
            disagree.push((
                format!("is an array ({why}) but has no length parameter"),
                "add `len: <count parameter>` (and `cap:` for out buffers), or `raw: true`".to_string(),
            ));
        }
        if let Some(string) = said.string.as_ref().filter(|_| !spec.string) {
            disagree.push((
                format!("is not marked `string`, but the header says `{}`: NUL-terminated text", string.quote),
                "add `string: true`".to_string(),
            ));
        }
        if let Some(opt) = said.optional.as_ref().filter(|_| place.is_callback && !spec.optional) {
            disagree.push((
                format!("is not `optional`, but the header says `{}`: the runtime may pass null", opt.quote),
                "add `optional: true` (a required pointer that arrives null fails the callback with E_POINTER)"
                    .to_string(),
            ));
        }
    }

    // Without `len`/`cap` the entry is an error above (or `raw`): nothing went unconfirmed.
    let counted = spec.len.is_some() || spec.cap.is_some();
    let unstated =
        said.sized.as_ref().filter(|_| said.count.is_none() && !spec.raw && counted).map(|s| s.quote.clone());
    match &spec.override_reason {
        None => {
            for (what, help) in disagree {
                errors.push(
                    at(format!("`{}` of {} {what}", pa.name, place.qualified))
                        .help(format!("{help}, or keep this entry with `override: \"<why the header is wrong>\"`")),
                );
            }
        }
        Some(reason) => {
            let mut d = Diagnostic::info(format!("override: `{}` of {}: {reason}", pa.name, place.qualified))
                .at(pa.loc.clone())
                .declared_at(&param.loc);
            if disagree.is_empty() {
                d = d.note("this header agrees with the entry: the override is not needed here");
            }
            for (what, _) in disagree {
                d = d.note(format!("disagreement accepted: `{}` {what}", pa.name));
            }
            errors.push(d);
        }
    }
    unstated
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::In => "in",
        Direction::Out => "out",
        Direction::Ref => "ref",
    }
}

fn shown(key: &str, value: &Option<String>) -> String {
    match value {
        Some(v) => format!("`{key}: {v}`"),
        None => format!("no `{key}`"),
    }
}
