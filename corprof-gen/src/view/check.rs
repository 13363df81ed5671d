//! Each Rust fragment the view makes, parsed by syn as what the template puts it in (a type, a
//! parameter list, expressions, statements, generics, a pattern), right after the view of its
//! method is built. Takes the fragments and the place they were made for (`IFoo::Bar`); gives an
//! error naming that place, the fragment's role and its text, so a generator bug is reported at
//! the method that has it, not as a parse error somewhere in a 40,000-line file.

use super::{
    CallMethodView, CallbackMethodView, CallbacksView, ExportsView, InterfaceView, IteratorView, ResultView,
    VtblCtorView, WrapperView, ZeroableView,
};
use crate::diag::Diagnostic;
use syn::Token;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;

/// The fragments of one method (or interface, or type), checked one by one.
pub struct Fragments {
    /// `IFoo::Bar`: what an error names.
    at: String,
    problems: Vec<String>,
}

impl Fragments {
    pub fn new(at: impl Into<String>) -> Self {
        Fragments { at: at.into(), problems: Vec::new() }
    }

    fn parse<T>(&mut self, role: &str, text: &str, parser: impl Parser<Output = T>) -> &mut Self {
        if let Err(e) = parser.parse_str(text) {
            self.problems.push(format!("{role} `{text}`: {e}"));
        }
        self
    }

    /// A type (`Option<&ClassID>`).
    pub fn ty(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, syn::Type::parse)
    }

    /// One expression.
    pub fn expr(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, syn::Expr::parse)
    }

    /// Comma-separated expressions, as call arguments (empty is none).
    pub fn exprs(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, Punctuated::<syn::Expr, Token![,]>::parse_terminated)
    }

    /// A parameter list (`a: A, b: &[B]`), as a fn signature has it after `&self, `.
    pub fn params(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, Punctuated::<syn::FnArg, Token![,]>::parse_terminated)
    }

    /// Statements, as a block holds them (empty is none).
    pub fn stmts(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, |input: ParseStream<'_>| syn::Block::parse_within(input))
    }

    /// Generic parameters (`<W__: Wrapper>`), or nothing.
    pub fn generics(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, syn::Generics::parse)
    }

    /// A `where` clause, or nothing.
    pub fn where_clause(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, Option::<syn::WhereClause>::parse)
    }

    /// A pattern (`(szName__, pcchName__,)`).
    pub fn pat(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, syn::Pat::parse_single)
    }

    /// An identifier (a keyword is not one: `r#type` is).
    pub fn ident(&mut self, role: &str, text: &str) -> &mut Self {
        self.parse(role, text, syn::Ident::parse)
    }

    /// An error naming the place and every fragment that is not Rust, if any.
    pub fn finish(&mut self) -> Option<Diagnostic> {
        if self.problems.is_empty() {
            return None;
        }
        let mut d = Diagnostic::error(format!("generator bug: {} makes Rust that does not parse", self.at));
        for p in self.problems.drain(..) {
            d = d.note(p);
        }
        Some(d.help("a fault of corprof-gen's view stage (view/), not of the header or the annotations"))
    }
}

/// A method the profiler calls, as `wrappers` in the template uses it.
pub fn call_method(at: &str, m: &CallMethodView) -> Option<Diagnostic> {
    let mut f = Fragments::new(at);
    f.ident("method", &m.snake).ident("slot", &m.name).ident("interface", &m.iface);
    f.generics("generics", &m.generics).params("parameters", &m.params).ty("return type", &m.ret_ty);
    for s in m.setup.iter().chain(&m.locals).chain(&m.finish).chain([&m.check]) {
        f.stmts("statement", s);
    }
    f.exprs("arguments", &m.args).expr("result", &m.result);
    if m.has_buffers {
        f.expr("buffers", &m.buffers).pat("buffer names", &m.buffer_names).exprs("needed counts", &m.needed);
        f.pat("returned values", &m.returned).expr("returned values", &m.returned);
    }
    if m.is_enum {
        f.ty("enumerated item", &m.enum_item).ident("CloseEnum's interface", &m.close_iface);
    }
    f.finish()
}

/// The struct of a method's results.
pub fn result(at: &str, r: &ResultView) -> Option<Diagnostic> {
    let mut f = Fragments::new(at);
    f.ident("result struct", &r.name).generics("result generics", &r.generics);
    for field in &r.fields {
        f.ident("result field", &field.name).ty("result field type", &field.ty);
    }
    f.finish()
}

/// An enumerator's `Iterator::next`.
pub fn iterator(at: &str, it: &IteratorView) -> Option<Diagnostic> {
    Fragments::new(at).ty("item", &it.item).ident("interface", &it.iface).exprs("Next's arguments", &it.args).finish()
}

/// A callback: the trait method, its thunk and its vtable slot.
pub fn callback(at: &str, m: &CallbackMethodView) -> Option<Diagnostic> {
    let mut f = Fragments::new(at);
    f.ident("trait method", &m.snake).ident("variant", &m.variant).ident("thunk", &m.thunk);
    f.params("trait parameters", &m.trait_params).params("thunk parameters", &m.thunk_params);
    f.exprs("trait call arguments", &m.call_args);
    if !m.info_arg.is_empty() {
        f.ident("Info object parameter", &m.info_arg);
    }
    f.finish()
}

/// A callback vtable's constructor.
pub fn vtbl_ctor(at: &str, v: &VtblCtorView) -> Option<Diagnostic> {
    let mut f = Fragments::new(at);
    f.ident("vtable", &v.vtbl).expr("base vtable", &v.base_ctor);
    for s in &v.slots {
        f.ident("slot", &s.name).ident("thunk", &s.thunk);
    }
    f.finish()
}

/// A raw interface: its IID constant, vtable and slot methods.
pub fn interface(i: &InterfaceView) -> Option<Diagnostic> {
    let mut f = Fragments::new(&i.name);
    f.ident("interface", &i.name).ident("vtable", &i.vtbl).ident("IID constant", &i.iid_const);
    f.expr("IID", &i.iid_u128).ident("base", &i.base).ident("base vtable", &i.base_vtbl);
    for m in &i.methods {
        f.ident("slot", &m.name).params("slot parameters", &m.slot_params).params("parameters", &m.params);
        f.exprs("arguments", &m.args).ty("return type", &m.ret);
    }
    f.finish()
}

/// A plain-data type's `Zeroable` impl.
pub fn zeroable(z: &ZeroableView) -> Option<Diagnostic> {
    Fragments::new(&z.ty).generics("generics", &z.generics).ty("type", &z.ty).where_clause("bounds", &z.bounds).finish()
}

/// A wrapper family's items: its type, results module, IIDs and members.
pub fn family(w: &WrapperView) -> Option<Diagnostic> {
    let mut f = Fragments::new(&w.name);
    f.ident("wrapper", &w.name).ident("results module", &w.module).ident("root IID", &w.root_iid);
    for c in &w.iid_consts {
        f.ident("IID constant", c);
    }
    for m in &w.members {
        f.ident("member interface", &m.name);
    }
    f.finish()
}

/// What the whole file shares: the runtime crate's path, the callback vtables' names and IIDs,
/// and the re-export lists.
pub fn whole_file(root: &str, callbacks: &CallbacksView, exports: &ExportsView) -> Option<Diagnostic> {
    let mut f = Fragments::new("the bindings");
    f.parse("runtime crate path", root, syn::Path::parse_mod_style);
    if !callbacks.highest.is_empty() {
        f.ident("newest callback", &callbacks.highest).ident("newest callback vtable", &callbacks.highest_vtbl);
    }
    for c in &callbacks.iid_consts {
        f.ident("callback IID constant", c);
    }
    for e in exports.info.iter().chain(&exports.metadata).chain(&exports.metadata_wrappers) {
        f.parse("re-export", e, syn::UseTree::parse);
    }
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_grammar_takes_its_fragment() {
        let mut f = Fragments::new("IFoo::Bar");
        f.ty("t", "Option<&[u16]>")
            .expr("e", "x.map_or(0, <[_]>::len) as _")
            .exprs("a", "a, &mut b__, ")
            .exprs("none", "")
            .params("p", "a: u32, b: &[ClassID]")
            .stmts("s", "let w__ = wide(s); __safety__!(\"why\"); if a != b { return Err(E); }")
            .generics("g", "<W__: crate::Wrapper>")
            .generics("no g", "")
            .where_clause("w", "where T: Zeroable, U: Zeroable")
            .where_clause("no w", "")
            .pat("pat", "(a__, b__,)")
            .ident("i", "r#type");
        assert!(f.finish().is_none());
    }

    #[test]
    fn a_broken_fragment_is_reported_with_its_place_role_and_text() {
        let d = Fragments::new("IFoo::Bar").ty("return type", "Vec<u32").params("params", "a u32").finish();
        let text = d.expect("an error").to_string();
        assert!(text.contains("generator bug: IFoo::Bar makes Rust that does not parse"), "{text}");
        assert!(text.contains("return type `Vec<u32`"), "{text}");
        assert!(text.contains("params `a u32`"), "{text}");
    }
}
