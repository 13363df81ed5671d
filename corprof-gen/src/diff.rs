//! What changes from one parsed header to another, as `corprof-gen diff` prints it: takes two
//! [`Header`]s and gives one line per change (a method's old signature on a second line).
//!
//! The format, one change per line, each starting with `+` (added), `-` (removed) or `~` (changed):
//!
//! ```text
//! + interface ICorProfilerInfo15 (1 methods, base ICorProfilerInfo14)
//! + method ICorProfilerInfo15::HRESULT EnumerateGCHeapObjects(ObjectCallback callback, void * callbackState)
//! - interface IFoo
//! + method ICorProfilerInfo14::HRESULT EventPipeCreateProvider2(const WCHAR * providerName, …)
//! - method IFoo::Bar
//! ~ method IFoo::HRESULT Bar(ULONG x)
//!     was HRESULT Bar(DWORD x)
//! ~ method ICorProfilerCallback11::LoadAsNotficationOnly renamed LoadAsNotificationOnly (same slot, same parameters)
//! + type COR_PRF_FILTER_DATA (struct, 3 fields)
//! + type EventPipeProviderCallback (function type)
//! + type ObjectCallback (function pointer)
//! - type OLD_STRUCT (struct, 2 fields)
//! ~ type COR_PRF_X (struct, 2 fields → struct, 3 fields)
//! ~ type COR_PRF_Y (struct, 2 fields; declaration changed)
//! + const COR_PRF_HIGH_MONITOR_GC_SKIP_ALLOCATED_BY_CLASS_STATISTIC 0x200
//! - const COR_PRF_OLD 0x10
//! ~ const COR_PRF_MONITOR_IMMUTABLE 0xeef8cc00 → 0xee98cc00
//! ```
//!
//! Sections in that order: interfaces and their methods (a new interface's methods listed after
//! it, each as an added method), then types, then constants (C
//! enumerators: hex when their enum is a flag enum, decimal otherwise). Inside a section,
//! additions and changes follow the new header's order, removals the old header's, after them;
//! a method at the same slot with the same parameters under a new name is a rename, not a `-`/`+`
//! pair. A type is a struct (`struct, N fields`), an `enum`, a `function type` (`typedef void
//! F(…)`, passed as `F *`), a `function pointer` (`typedef R (*F)(…)`) or another typedef
//! (`typedef of T`); interfaces' forward typedefs are left to the interface lines. An enum's new
//! or changed values show as constants, not as a changed type.

use crate::ir::{Constant, Header, Interface, Method, TypeDecl};
use std::fmt::Write as _;

/// Every change from `old` to `new`, in the module's format (empty when none).
pub fn changes(old: &Header, new: &Header) -> String {
    let mut out = String::new();
    interfaces(&mut out, old, new);
    types(&mut out, &old.types, &new.types);
    constants(&mut out, &old.constants, &new.constants);
    out
}

fn interfaces(out: &mut String, old_h: &Header, new_h: &Header) {
    for i in &new_h.interfaces {
        match old_h.interface(&i.name) {
            None => {
                let base = i.base.as_deref().unwrap_or("-");
                let _ = writeln!(out, "+ interface {} ({} methods, base {base})", i.name, i.methods.len());
                // Each new method with its signature, as for a method added to an interface the
                // old header has: what a bump must annotate is on the page.
                for m in &i.methods {
                    let _ = writeln!(out, "+ method {}::{}", i.name, signature(m));
                }
            }
            Some(o) => methods(out, o, i),
        }
    }
    for o in old_h.interfaces.iter().filter(|o| new_h.interface(&o.name).is_none()) {
        let _ = writeln!(out, "- interface {}", o.name);
    }
}

fn methods(out: &mut String, o: &Interface, i: &Interface) {
    let gone = |name: &str| !i.methods.iter().any(|m| m.name == name);
    // A method at the same slot with the same parameters but a name the new header no longer
    // has is a rename (like the Callback11 typo fix), not a +/- pair.
    let renamed_from = |slot: usize, m: &Method| {
        o.methods.get(slot).filter(|om| gone(&om.name) && same_shape(om, m)).map(|om| om.name.as_str())
    };
    for (slot, m) in i.methods.iter().enumerate() {
        match o.methods.iter().find(|om| om.name == m.name) {
            None => match renamed_from(slot, m) {
                Some(old_name) => {
                    let _ = writeln!(
                        out,
                        "~ method {}::{old_name} renamed {} (same slot, same parameters)",
                        i.name, m.name
                    );
                }
                None => {
                    let _ = writeln!(out, "+ method {}::{}", i.name, signature(m));
                }
            },
            Some(om) if signature(om) != signature(m) => {
                let _ = writeln!(out, "~ method {}::{}\n    was {}", i.name, signature(m), signature(om));
            }
            Some(_) => {}
        }
    }
    for (slot, om) in o.methods.iter().enumerate().filter(|(_, om)| gone(&om.name)) {
        let is_renamed = i.methods.get(slot).is_some_and(|m| renamed_from(slot, m).is_some());
        if !is_renamed {
            let _ = writeln!(out, "- method {}::{}", i.name, om.name);
        }
    }
}

fn types(out: &mut String, old: &[TypeDecl], new: &[TypeDecl]) {
    for t in new {
        match old.iter().find(|o| o.name == t.name) {
            None => {
                let _ = writeln!(out, "+ type {} ({})", t.name, t.shape);
            }
            Some(o) if o.shape != t.shape => {
                let _ = writeln!(out, "~ type {} ({} → {})", t.name, o.shape, t.shape);
            }
            Some(o) if o.detail != t.detail => {
                let _ = writeln!(out, "~ type {} ({}; declaration changed)", t.name, t.shape);
            }
            Some(_) => {}
        }
    }
    for o in old.iter().filter(|o| !new.iter().any(|t| t.name == o.name)) {
        let _ = writeln!(out, "- type {} ({})", o.name, o.shape);
    }
}

fn constants(out: &mut String, old: &[Constant], new: &[Constant]) {
    for c in new {
        match old.iter().find(|o| o.name == c.name) {
            None => {
                let _ = writeln!(out, "+ const {} {}", c.name, value(c));
            }
            Some(o) if o.value != c.value => {
                let _ = writeln!(out, "~ const {} {} → {}", c.name, value(o), value(c));
            }
            Some(_) => {}
        }
    }
    for o in old.iter().filter(|o| !new.iter().any(|c| c.name == o.name)) {
        let _ = writeln!(out, "- const {} {}", o.name, value(o));
    }
}

/// Hex for a flag enum's bits (negative values, rare, stay decimal).
fn value(c: &Constant) -> String {
    if c.hex && c.value >= 0 { format!("{:#x}", c.value) } else { c.value.to_string() }
}

/// The method's C signature, as the diff shows it.
fn signature(m: &Method) -> String {
    let params: Vec<String> = m.params.iter().map(|p| format!("{} {}", p.ty, p.name)).collect();
    format!("{} {}({})", m.ret, m.name, params.join(", "))
}

/// Same return and parameter types and names: all but the method's name agree.
fn same_shape(a: &Method, b: &Method) -> bool {
    let params = |m: &Method| m.params.iter().map(|p| (p.ty.to_string(), p.name.clone())).collect::<Vec<_>>();
    a.ret.to_string() == b.ret.to_string() && params(a) == params(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(name: &str, shape: &str, detail: &str) -> TypeDecl {
        TypeDecl { name: name.into(), shape: shape.into(), detail: detail.into() }
    }

    fn constant(name: &str, value: i128, hex: bool) -> Constant {
        Constant { name: name.into(), value, hex }
    }

    #[test]
    fn types_and_constants_added_removed_and_changed_in_a_stable_order() {
        let old = Header {
            types: vec![
                ty("Gone", "struct, 1 field", "int a"),
                ty("Grown", "struct, 1 field", "int a"),
                ty("Retyped", "struct, 1 field", "int a"),
                ty("Same", "enum", "enum"),
            ],
            constants: vec![constant("OLD", 16, true), constant("MASK", 0xeef8cc00, true), constant("N", 3, false)],
            ..Header::default()
        };
        let new = Header {
            types: vec![
                ty("Same", "enum", "enum"),
                ty("Retyped", "struct, 1 field", "long a"),
                ty("Grown", "struct, 2 fields", "int a; int b"),
                ty("Callback", "function type", "void (int)"),
            ],
            constants: vec![
                constant("N", -1, false),
                constant("MASK", 0xee98cc00, true),
                constant("NEW", 0x200, true),
                constant("NEG", -2, true),
            ],
            ..Header::default()
        };
        assert_eq!(
            changes(&old, &new),
            "~ type Retyped (struct, 1 field; declaration changed)\n\
             ~ type Grown (struct, 1 field → struct, 2 fields)\n\
             + type Callback (function type)\n\
             - type Gone (struct, 1 field)\n\
             ~ const N 3 → -1\n\
             ~ const MASK 0xeef8cc00 → 0xee98cc00\n\
             + const NEW 0x200\n\
             + const NEG -2\n\
             - const OLD 0x10\n"
        );
        assert_eq!(changes(&new, &new), "", "no change, no line");
    }

    /// A new interface is listed with each of its methods, as added methods with their
    /// signatures, so a bump's review sees what to annotate.
    #[test]
    fn a_new_interface_lists_its_methods() {
        use crate::ir::{CType, Loc, Param};
        let param = |name: &str, ty: &str| Param {
            name: name.into(),
            ty: CType::Named(ty.into()),
            midl: vec![],
            sal: vec![],
            declared_array: false,
            is_count: false,
            loc: Loc::default(),
        };
        let method = |name: &str, params: Vec<Param>| Method {
            name: name.into(),
            ret: CType::Named("HRESULT".into()),
            params,
            loc: Loc::default(),
        };
        let iface = Interface {
            name: "IFixInfo2".into(),
            iid: String::new(),
            base: Some("IFixInfo".into()),
            methods: vec![
                method("EnumerateObjects", vec![param("callback", "ObjectCallback"), param("state", "ULONG")]),
                method("Reset", vec![]),
            ],
            loc: Loc::default(),
        };
        let new = Header { interfaces: vec![iface], ..Header::default() };
        assert_eq!(
            changes(&Header::default(), &new),
            "+ interface IFixInfo2 (2 methods, base IFixInfo)\n\
             + method IFixInfo2::HRESULT EnumerateObjects(ObjectCallback callback, ULONG state)\n\
             + method IFixInfo2::HRESULT Reset()\n"
        );
    }
}
