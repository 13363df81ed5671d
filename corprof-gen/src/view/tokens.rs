//! Where names become tokens. The view builds every Rust fragment with `quote!`, so a fragment
//! that is not Rust cannot be written; what can still be wrong is a name from the header or the
//! annotations that is no identifier (`flags: "COR PRF"`). [`Tokens`] turns names and types into
//! tokens for one method (or interface, or type) and collects every name that is no identifier;
//! [`Tokens::finish`] reports them as one error naming that place, so a generator bug is reported
//! at the method that has it, not as a parse error somewhere in a 40,000-line file.

use crate::classify::RustType;
use crate::diag::Diagnostic;
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

/// The names and types of one place, turned into tokens; the names that are no identifiers.
pub struct Tokens {
    /// `IFoo::Bar`: what an error names.
    at: String,
    problems: Vec<String>,
}

/// Keywords that are no identifier even raw (`r#self` is not Rust).
const NOT_RAW: &[&str] = &["crate", "self", "super", "Self", "_"];

impl Tokens {
    pub fn new(at: impl Into<String>) -> Self {
        Tokens { at: at.into(), problems: Vec::new() }
    }

    /// `name` as an identifier: raw (`r#type`) when it is spelled so or is a keyword
    /// ([`super::names::ident`] decides which names are). A name that is none is a problem of
    /// `role`, and gives a stand-in so the view can go on to find the others.
    pub fn ident(&mut self, role: &str, name: &str) -> Ident {
        match ident_of(name) {
            Some(ident) => ident,
            None => {
                self.problems.push(format!("{role} `{name}` is not a Rust identifier"));
                Ident::new("invalid__", Span::call_site())
            }
        }
    }

    /// `ty` as tokens (`*mut ::core::ffi::c_void`, `ClassID`).
    pub fn ty(&mut self, role: &str, ty: &RustType) -> TokenStream {
        match ty {
            RustType::Unit => quote!(()),
            RustType::Named(name) => {
                let name = self.ident(role, name);
                quote!(#name)
            }
            RustType::CoreFfi(name) => {
                let name = self.ident(role, name);
                quote!(::core::ffi::#name)
            }
            RustType::Pointer { is_const: true, pointee } => {
                let pointee = self.ty(role, pointee);
                quote!(*const #pointee)
            }
            RustType::Pointer { is_const: false, pointee } => {
                let pointee = self.ty(role, pointee);
                quote!(*mut #pointee)
            }
        }
    }

    /// An integer literal written as `text` (`0x0102_0304`, kept in hex as the header's IIDs
    /// are read); a text that is no integer literal is a problem of `role`.
    pub fn int(&mut self, role: &str, text: &str) -> Literal {
        match text.parse::<Literal>() {
            Ok(lit) if text.starts_with(|c: char| c.is_ascii_digit()) => lit,
            _ => {
                self.problems.push(format!("{role} `{text}` is not an integer literal"));
                Literal::u8_unsuffixed(0)
            }
        }
    }

    /// An error naming the place and every name that is no identifier, if any.
    pub fn finish(&mut self) -> Option<Diagnostic> {
        if self.problems.is_empty() {
            return None;
        }
        let mut d = Diagnostic::error(format!("generator bug: {} makes Rust from names that are not Rust", self.at));
        for p in self.problems.drain(..) {
            d = d.note(p);
        }
        Some(d.help("a fault of corprof-gen's view stage (view/), not of the header or the annotations"))
    }
}

/// `name` as an identifier, if it is one (ASCII, as every name of the header is).
fn ident_of(name: &str) -> Option<Ident> {
    let (raw, bare) = match name.strip_prefix("r#") {
        Some(bare) => (true, bare),
        None => (super::names::is_keyword(name), name),
    };
    let mut chars = bare.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !starts || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') || NOT_RAW.contains(&bare) {
        return None;
    }
    Some(if raw { Ident::new_raw(bare, Span::call_site()) } else { Ident::new(bare, Span::call_site()) })
}

/// The statement `__safety__!("why");`, which formatting turns into `// SAFETY: why`
/// ([`crate::SAFETY_MARKER`], [`crate::restore_comments`]).
pub fn safety(why: &str) -> TokenStream {
    quote!(__safety__!(#why);)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_identifiers_raw_where_they_must() {
        let mut t = Tokens::new("IFoo::Bar");
        assert_eq!(t.ident("a", "pClassId").to_string(), "pClassId");
        assert_eq!(t.ident("a", "type").to_string(), "r#type");
        assert_eq!(t.ident("a", "r#match").to_string(), "r#match");
        let ty = RustType::Pointer { is_const: false, pointee: Box::new(RustType::CoreFfi("c_void")) };
        assert_eq!(t.ty("t", &ty).to_string(), quote!(*mut ::core::ffi::c_void).to_string());
        assert_eq!(t.int("i", "0x0102_0304").to_string(), "0x0102_0304");
        assert!(t.finish().is_none());
    }

    #[test]
    fn a_name_that_is_no_identifier_is_reported_with_its_place_and_role() {
        let mut t = Tokens::new("IFoo::Bar");
        t.ty("flag type", &RustType::named("COR PRF"));
        t.ident("parameter", "r#self");
        t.ident("parameter", "");
        t.int("IID", "ABC");
        let text = t.finish().expect("an error").to_string();
        assert!(text.contains("generator bug: IFoo::Bar makes Rust from names that are not Rust"), "{text}");
        for note in ["flag type `COR PRF`", "parameter `r#self`", "parameter ``", "IID `ABC` is not an integer"] {
            assert!(text.contains(note), "{note}: {text}");
        }
    }

    #[test]
    fn a_safety_statement_becomes_a_comment_after_formatting() {
        let body = safety("the `why`, with \"quotes\"");
        let code = crate::format_rust(&quote!(fn f() { #body unsafe { g() } }).to_string()).unwrap();
        assert!(code.contains("    // SAFETY: the `why`, with \"quotes\"\n    unsafe {"), "{code}");
    }
}
