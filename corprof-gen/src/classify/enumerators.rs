//! Enumerators, decided here and nowhere else: which method makes a wrapper an `Iterator`
//! (`Next(celt, items[], pceltFetched)` of an enumerator interface, one item per call) and which
//! interface of a family closes the HCORENUM handles its `corenum` methods open (`CloseEnum`).
//! Takes a method with its [`CallKind`]s, or a family's chain; gives what the view needs, so the
//! view never recognises a method by its name.

use super::RustType;
use super::call::CallKind;
use crate::resolve::{ApiInterface, ApiMethod};

/// The method of an enumerator interface that yields its items.
const NEXT: &str = "Next";
/// The method of a metadata interface that frees an HCORENUM.
const CLOSE_ENUM: &str = "CloseEnum";
/// The method that counts an HCORENUM's items, beside `CloseEnum` (IMetaDataImport).
const COUNT_ENUM: &str = "CountEnum";
/// The method that moves an HCORENUM's cursor, beside `CloseEnum` (IMetaDataImport).
const RESET_ENUM: &str = "ResetEnum";

/// `Next` of an enumerator interface, as an `Iterator` calls it: one item at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IteratorNext {
    /// The item type (`ClassID`).
    pub item: RustType,
    /// Per parameter of `Next`, in order, what one-item call passes there.
    pub args: Vec<NextArg>,
}

/// What `Next` gets, per parameter, when an `Iterator` asks for one item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextArg {
    /// An item array: the one item's place.
    Item,
    /// The item array's capacity: 1.
    One,
    /// The item array's written count: where the fetched count goes.
    Fetched,
    /// Any other count (of a second array): null.
    Null,
}

/// `Next(celt, items[], pceltFetched)` → one item per call; `None` for any other method, or a
/// `Next` with anything but item arrays and their counts (which stays an ordinary method).
pub fn iterator_next(m: &ApiMethod, kinds: &[CallKind]) -> Option<IteratorNext> {
    if m.ir.name != NEXT {
        return None;
    }
    let (item, cap, len) = kinds.iter().find_map(|k| match k {
        CallKind::OutArray { ty, cap, len, .. } => Some((ty.clone(), cap.as_str(), len.as_str())),
        _ => None,
    })?;
    if kinds.iter().any(|k| !matches!(k, CallKind::OutArray { .. } | CallKind::Consumed)) {
        return None;
    }
    let args = m
        .params
        .iter()
        .zip(kinds)
        .map(|(p, k)| match k {
            CallKind::OutArray { .. } => NextArg::Item,
            _ if p.ir.name == cap => NextArg::One,
            _ if p.ir.name == len => NextArg::Fetched,
            _ => NextArg::Null,
        })
        .collect();
    Some(IteratorNext { item, args })
}

/// The interface of a family (its chain, root first) that closes HCORENUM handles: the first
/// declaring `CloseEnum`.
pub fn close_enum_interface<'a>(chain: &[&'a ApiInterface]) -> Option<&'a str> {
    chain.iter().find(|i| i.methods.iter().any(|m| m.ir.name == CLOSE_ENUM)).map(|i| i.ir.name.as_str())
}

/// What the interface closing a family's HCORENUMs (`close_iface`) also offers: `CountEnum` and
/// `ResetEnum` (IMetaDataImport has both, IMetaDataAssemblyImport neither). `CorEnum` answers
/// `E_NOTIMPL` for what it lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumControls {
    pub count: bool,
    pub reset: bool,
}

pub fn enum_controls(chain: &[&ApiInterface], close_iface: &str) -> EnumControls {
    let declares = |name: &str| {
        chain.iter().filter(|i| i.ir.name == close_iface).any(|i| i.methods.iter().any(|m| m.ir.name == name))
    };
    EnumControls { count: declares(COUNT_ENUM), reset: declares(RESET_ENUM) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CType, Interface, Loc, Method, Param};
    use crate::resolve::ApiParam;

    fn method(name: &str, params: &[&str]) -> ApiMethod {
        let param = |name: &&str| ApiParam {
            ir: Param {
                name: name.to_string(),
                ty: CType::Named("ULONG".into()),
                midl: vec![],
                sal: vec![],
                declared_array: false,
                is_count: false,
                loc: Loc::default(),
            },
            spec: None,
            spec_loc: None,
        };
        ApiMethod {
            ir: Method { name: name.into(), ret: CType::Named("HRESULT".into()), params: vec![], loc: Loc::default() },
            params: params.iter().map(param).collect(),
            s_false: None,
            wrapper: Default::default(),
            suspends: false,
            refuse_in: Vec::new(),
            docs: None,
            answered_by: None,
        }
    }

    /// `Next` asks for one item and reads the count back; a count that is not the item array's
    /// own (a second array's) is passed null. This was the view's `iterator_view` test, with the
    /// same cases: the decision moved, the answers did not.
    #[test]
    fn an_enumerators_next_fetches_one_item_at_a_time() {
        let items = |cap: &str, len: &str| CallKind::OutArray {
            ty: "ClassID".into(),
            cap: cap.into(),
            len: len.into(),
            unload: Some(crate::classify::call::Unload::Class),
        };
        let m = method("Next", &["celt", "ids", "pceltFetched", "others", "cOthers", "pcOthers"]);
        let kinds = [
            CallKind::Consumed,
            items("celt", "pceltFetched"),
            CallKind::Consumed,
            items("cOthers", "pcOthers"),
            CallKind::Consumed,
            CallKind::Consumed,
        ];
        let next = iterator_next(&m, &kinds).expect("an iterator");
        assert_eq!(next.item, RustType::named("ClassID"));
        use NextArg::*;
        assert_eq!(next.args, [One, Item, Fetched, Item, Null, Null]);
        // Anything but item arrays and their counts keeps `Next` a method.
        let m = method("Next", &["celt", "ids", "pceltFetched", "flags"]);
        let mixed = [CallKind::Consumed, items("celt", "pceltFetched"), CallKind::Consumed, CallKind::Bool];
        assert!(iterator_next(&m, &mixed).is_none());
        // So does any other name, whatever its shape.
        let m = method("Skip", &["celt", "ids", "pceltFetched"]);
        assert!(iterator_next(&m, &kinds[..3]).is_none());
    }

    #[test]
    fn the_first_interface_declaring_close_enum_closes_the_familys_enums() {
        let iface = |name: &str, methods: &[&str]| crate::resolve::ApiInterface {
            ir: Interface { name: name.into(), iid: String::new(), base: None, methods: vec![], loc: Loc::default() },
            is_callback: false,
            safe: true,
            methods: methods.iter().map(|m| method(m, &[])).collect(),
        };
        let (a, b, c) = (iface("IA", &["EnumX"]), iface("IA2", &["CloseEnum"]), iface("IA3", &["CloseEnum"]));
        assert_eq!(close_enum_interface(&[&a, &b, &c]), Some("IA2"));
        assert_eq!(close_enum_interface(&[&a]), None);
    }
}
