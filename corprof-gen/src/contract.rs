//! What the header itself says about one parameter, read from the IR's MIDL attributes
//! (`/* [size_is][out] */`, cor.h's `// [IN|OUT]`), SAL (`_Out_writes_to_(cchName, *pcchName)`)
//! and, where MIDL's C output dropped the count expression, the IDL beside the header
//! (`[in, size_is(cbMetadataBlob)]`, see [`crate::idl`]). Takes an [`ir::Param`](crate::ir::Param),
//! gives a [`Contract`]: `infer` drafts annotations from it and `resolve` checks written
//! annotations against it, so both read the header the same way.

use crate::annotations::Direction;
use crate::idl::IdlParam;
use crate::ir::Param;

/// A fact with the header text that states it, for messages (`[out]`, `_In_reads_opt_(cchName)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said<T> {
    pub value: T,
    pub quote: String,
}

/// An element count SAL or MIDL's `[size_is(cap)]`/`[length_is(len)]` gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Count {
    /// `_In_reads_(n)`: the callee reads `n` elements.
    Reads { len: String },
    /// `_Out_writes_(cap)`, `_Out_writes_to_(cap, *len)`: room for `cap`, `len` written back.
    Writes { cap: String, len: Option<String> },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contract {
    /// From the MIDL attributes: `[in]`, `[out]`, `[in][out]` (`[IN|OUT]` in cor.h).
    pub midl_dir: Option<Said<Direction>>,
    /// From SAL: `_In_…`, `_Out_…`/`_COM_Outptr_`, `_Inout_…`.
    pub sal_dir: Option<Said<Direction>>,
    pub count: Option<Said<Count>>,
    /// Which text states `count`, for messages: `the header's SAL`, `the header's MIDL`,
    /// `corprof.idl:2582`.
    pub count_by: String,
    /// `[size_is]`/`[length_is]`: an array (its count, when the text shows it, is in `count`).
    pub sized: Option<Said<()>>,
    /// `[string]`: NUL-terminated text.
    pub string: Option<Said<()>>,
    /// SAL `_opt_` or cor.h's `OPTIONAL`: null is allowed.
    pub optional: Option<Said<()>>,
}

impl Contract {
    /// The direction the header states, MIDL first (every corprof.h parameter has one).
    pub fn dir(&self) -> Option<&Said<Direction>> {
        self.midl_dir.as_ref().or(self.sal_dir.as_ref())
    }

    /// The parameters SAL names as this one's counts.
    pub fn count_names(&self) -> Vec<&str> {
        match self.count.as_ref().map(|c| &c.value) {
            Some(Count::Reads { len }) => vec![len.as_str()],
            Some(Count::Writes { cap, len }) => {
                [Some(cap), len.as_ref()].into_iter().flatten().map(|s| s.as_str()).collect()
            }
            None => Vec::new(),
        }
    }
}

/// Reads the header's statements about `p`, and the IDL's about the same parameter when the
/// header folder has one: its count, where SAL and the C header's comment give none.
pub fn contract_with_idl(p: &Param, idl: Option<&IdlParam>) -> Contract {
    let mut c = Contract::default();
    let attrs = p.midl.iter().map(|a| a.to_ascii_lowercase()).collect::<Vec<_>>();
    // `size_is(cb)` is the attribute `size_is`.
    let has = |a: &str| attrs.iter().any(|m| m.split('|').any(|part| attr_name(part) == a));
    let quote = format!("[{}]", p.midl.join("]["));
    c.midl_dir = match (has("in"), has("out")) {
        (true, true) => Some(Direction::Ref),
        (false, true) => Some(Direction::Out),
        (true, false) => Some(Direction::In),
        (false, false) => None,
    }
    .map(|value| Said { value, quote: quote.clone() });
    let flag = |on: bool| on.then(|| Said { value: (), quote: quote.clone() });
    c.sized = flag(has("size_is") || has("length_is"));
    c.string = flag(has("string"));
    c.optional = flag(has("optional"));
    for sal in &p.sal {
        let (name, args) = split_sal(sal);
        let dir = if name.starts_with("_Inout") {
            Some(Direction::Ref)
        } else if name.starts_with("_Out") || name.starts_with("_COM_Outptr") {
            Some(Direction::Out)
        } else if name.starts_with("_In") {
            Some(Direction::In)
        } else {
            None
        };
        if let Some(d) = dir {
            c.sal_dir = said(d, sal);
        }
        if name.contains("_opt_") {
            c.optional = said((), sal);
        }
        c.count = match (dir, args.as_slice()) {
            (Some(Direction::In), [n]) => said(Count::Reads { len: n.clone() }, sal),
            (Some(Direction::Out | Direction::Ref), [cap]) => said(Count::Writes { cap: cap.clone(), len: None }, sal),
            (Some(Direction::Out | Direction::Ref), [cap, len]) => {
                said(Count::Writes { cap: cap.clone(), len: Some(len.clone()) }, sal)
            }
            _ => c.count,
        };
        if c.count.is_some() {
            c.count_by = "the header's SAL".to_string();
        }
    }
    if c.count.is_none() {
        let dir = c.dir().map(|d| d.value);
        if let Some(count) = midl_count(&p.midl, dir) {
            c.count = said(count, &quote);
            c.count_by = "the header's MIDL".to_string();
        } else if let Some(i) = idl {
            let idl_dir = contract_with_idl(&Param { midl: i.attrs.clone(), sal: Vec::new(), ..p.clone() }, None);
            let dir = dir.or(idl_dir.midl_dir.map(|d| d.value));
            if let Some(count) = midl_count(&i.attrs, dir) {
                c.count = said(count, &i.quote());
                c.count_by = i.loc.to_string();
            }
        }
    }
    c
}

/// `size_is(cb)` → `size_is`; `in` → `in`.
fn attr_name(attr: &str) -> &str {
    attr.split('(').next().unwrap_or("").trim()
}

/// The count MIDL's `size_is(cap)`/`length_is(len)` give a parameter passed `dir`: for an `in`
/// array the elements passed (`length_is` when given, else `size_is`), for an `out` one the room
/// and the count written back. Only a parameter name (or `*name`) counts; an expression such as
/// `size_is(cb * 2)` says nothing checkable.
fn midl_count(attrs: &[String], dir: Option<Direction>) -> Option<Count> {
    let arg = |name: &str| {
        let found = attrs.iter().find(|a| attr_name(a).eq_ignore_ascii_case(name))?;
        let inner = found.split_once('(')?.1.strip_suffix(')')?.trim();
        let inner = inner.strip_prefix('*').unwrap_or(inner).trim();
        let ident = !inner.is_empty()
            && !inner.starts_with(|c: char| c.is_ascii_digit())
            && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        ident.then(|| inner.to_string())
    };
    match dir? {
        Direction::In => arg("length_is").or_else(|| arg("size_is")).map(|len| Count::Reads { len }),
        Direction::Out | Direction::Ref => arg("size_is").map(|cap| Count::Writes { cap, len: arg("length_is") }),
    }
}

fn said<T>(value: T, quote: &str) -> Option<Said<T>> {
    Some(Said { value, quote: quote.to_string() })
}

/// `_Out_writes_to_(cchName,*pcchName)` → (`_Out_writes_to_`, [`cchName`, `pcchName`]).
fn split_sal(sal: &str) -> (&str, Vec<String>) {
    match sal.split_once('(') {
        Some((name, rest)) => {
            let args = rest
                .trim_end_matches(')')
                .split(',')
                .map(|a| a.trim().trim_start_matches('*').trim().to_string())
                .filter(|a| !a.is_empty())
                .collect();
            (name, args)
        }
        None => (sal, Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CType, Loc};

    /// The header's statements alone, without an IDL beside it.
    fn contract(p: &Param) -> Contract {
        contract_with_idl(p, None)
    }

    fn param(midl: &[&str], sal: &[&str]) -> Param {
        Param {
            name: "p".into(),
            ty: CType::Pointer { pointee: Box::new(CType::Named("ULONG".into())), is_const: false },
            midl: midl.iter().map(|s| s.to_string()).collect(),
            sal: sal.iter().map(|s| s.to_string()).collect(),
            declared_array: false,
            is_count: true,
            loc: Loc::default(),
        }
    }

    #[test]
    fn midl_directions_and_flags() {
        assert_eq!(contract(&param(&["out", "in"], &[])).dir().unwrap().value, Direction::Ref);
        assert_eq!(contract(&param(&["in|out"], &[])).dir().unwrap().value, Direction::Ref);
        let c = contract(&param(&["size_is", "out"], &[]));
        assert_eq!(c.dir().unwrap().quote, "[size_is][out]");
        assert!(c.sized.is_some() && c.string.is_none());
        assert!(contract(&param(&["out", "optional"], &[])).optional.is_some());
        assert!(contract(&param(&[], &[])).dir().is_none());
    }

    #[test]
    fn sal_counts_directions_and_optional() {
        let c = contract(&param(&["annotation", "out"], &["_Out_writes_to_(cchName, *pcchName)"]));
        assert_eq!(c.count.unwrap().value, Count::Writes { cap: "cchName".into(), len: Some("pcchName".into()) });
        assert_eq!(c.sal_dir.unwrap().value, Direction::Out);
        let c = contract(&param(&["annotation", "in"], &["_In_reads_opt_(cchName)"]));
        assert_eq!(c.count.as_ref().unwrap().value, Count::Reads { len: "cchName".into() });
        assert_eq!(c.optional.unwrap().quote, "_In_reads_opt_(cchName)");
        assert_eq!(contract(&param(&[], &["_COM_Outptr_"])).dir().unwrap().value, Direction::Out);
        // Room only: nothing written back is counted.
        let c = contract(&param(&["annotation", "out"], &["_Out_writes_(cchName)"]));
        assert_eq!(c.count.unwrap().value, Count::Writes { cap: "cchName".into(), len: None });
        let c = contract(&param(&["annotation", "in", "out"], &["_Inout_updates_(cItems)"]));
        assert_eq!(c.count.unwrap().value, Count::Writes { cap: "cItems".into(), len: None });
    }

    #[test]
    fn midl_counts_from_the_comment_or_the_idl() {
        // The C header's comment, when it shows the expression.
        let c = contract(&param(&["size_is(cb)", "in"], &[]));
        assert_eq!(c.count.unwrap().value, Count::Reads { len: "cb".into() });
        assert_eq!(c.count_by, "the header's MIDL");
        assert!(c.sized.is_some());
        // MIDL's own C output drops it: the IDL has it.
        let idl = |attrs: &[&str]| IdlParam {
            attrs: attrs.iter().map(|s| s.to_string()).collect(),
            loc: crate::ir::Loc { file: "corprof.idl".into(), line: 7, col: 0 },
        };
        let sized = param(&["size_is", "out"], &[]);
        assert!(contract(&sized).count.is_none());
        let c = contract_with_idl(&sized, Some(&idl(&["out", "size_is(cMap)", "length_is(*pcMap)"])));
        assert_eq!(c.count.as_ref().unwrap().value, Count::Writes { cap: "cMap".into(), len: Some("pcMap".into()) });
        assert_eq!(
            (c.count_by.as_str(), c.count.unwrap().quote.as_str()),
            ("corprof.idl:7", "[out, size_is(cMap), length_is(*pcMap)]")
        );
        let c = contract_with_idl(&param(&["length_is", "in"], &[]), Some(&idl(&["in", "length_is(n)"])));
        assert_eq!(c.count.unwrap().value, Count::Reads { len: "n".into() });
        // SAL first; an expression is no parameter name.
        let c = contract_with_idl(&param(&["in"], &["_In_reads_(a)"]), Some(&idl(&["in", "size_is(b)"])));
        assert_eq!(
            (c.count.unwrap().value, c.count_by.as_str()),
            (Count::Reads { len: "a".into() }, "the header's SAL")
        );
        assert!(contract(&param(&["size_is(cb * 2)", "in"], &[])).count.is_none());
        // A header stating no direction (cor.h's parameters may not): the IDL's says which
        // count its `size_is` is.
        let c = contract_with_idl(&param(&["size_is"], &[]), Some(&idl(&["out", "size_is(cMax)"])));
        assert_eq!(c.count.unwrap().value, Count::Writes { cap: "cMax".into(), len: None });
    }
}
