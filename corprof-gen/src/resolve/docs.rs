//! The docs table against the header: each entry names a method the header declares (or one an
//! annotation knows by another name, `aka:`), and every method with a safe layer has an entry.
//! Takes the [`DocsTable`] and the header; gives each method its entry (through
//! [`entry_for`]), and errors and a warning into the resolve stage's list.

use crate::annotations::docs::{DocsTable, MethodDocs};
use crate::annotations::{Annotations, MethodAnn};
use crate::diag::{Diagnostic, Errors, suggest};
use crate::ir::Header;

/// The entry for `method` of `iface`: by its name, else by the names its annotation gives it.
pub fn entry_for<'a>(
    docs: &'a DocsTable,
    iface: &str,
    method: &str,
    method_ann: Option<&MethodAnn>,
) -> Option<&'a MethodDocs> {
    docs.get(iface, method).or_else(|| {
        let ma = method_ann?;
        std::iter::once(&ma.name).chain(ma.aka.iter().map(|(name, _)| name)).find_map(|name| docs.get(iface, name))
    })
}

/// Entries naming a method the header's interface does not declare are errors, unless the
/// annotations know that method (a method a later header adds to the interface); entries for an
/// interface this header lacks are skipped, as annotations are (one table serves several
/// headers).
pub fn check_names(header: &Header, ann: &Annotations, errors: &mut Errors) {
    for entry in &ann.docs.methods {
        let Some(iface) = header.interface(&entry.iface) else { continue };
        let method_ann =
            ann.interface(&iface.name).and_then(|ia| ia.methods.iter().find(|ma| ma.is_for(&entry.method)));
        let known = method_ann.is_some() || iface.methods.iter().any(|m| m.name == entry.method);
        if !known {
            let mut d = Diagnostic::error(format!("`{}` has no method `{}`", entry.iface, entry.method))
                .at(entry.loc.clone())
                .declared_at(&iface.loc);
            if let Some(s) = suggest(&entry.method, iface.methods.iter().map(|m| m.name.as_str())) {
                d = d.help(format!("did you mean `{s}`?"));
            }
            errors.push(d);
        }
    }
}

/// One warning listing the methods with a safe layer and no entry (their rustdoc would say only
/// where they come from).
pub fn warn_undocumented(missing: &[String], errors: &mut Errors) {
    if missing.is_empty() {
        return;
    }
    let shown: Vec<&str> = missing.iter().take(8).map(String::as_str).collect();
    let more =
        if missing.len() > shown.len() { format!(" and {} more", missing.len() - shown.len()) } else { String::new() };
    errors.push(
        Diagnostic::warning(format!(
            "{} method(s) have no entry in the docs table: {}{more}",
            missing.len(),
            shown.join(", ")
        ))
        .help("add them to annotations/docs/*.yaml: `doc`, and `needs`, `errors`, `returns` where they apply"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warning(n: usize) -> Option<String> {
        let missing: Vec<String> = (0..n).map(|i| format!("I::M{i}")).collect();
        let mut errors = Errors::default();
        warn_undocumented(&missing, &mut errors);
        assert!(errors.items.len() <= 1);
        errors.items.pop().map(|d| d.message)
    }

    #[test]
    fn undocumented_methods_are_listed_up_to_eight() {
        assert_eq!(warning(0), None);
        assert_eq!(warning(2).as_deref(), Some("2 method(s) have no entry in the docs table: I::M0, I::M1"));
        let eight = warning(8).unwrap();
        assert!(eight.ends_with("I::M7") && !eight.contains("more"), "{eight}");
        let ten = warning(10).unwrap();
        assert!(ten.starts_with("10 method(s)") && ten.ends_with("I::M7 and 2 more") && !ten.contains("M8"), "{ten}");
    }
}
