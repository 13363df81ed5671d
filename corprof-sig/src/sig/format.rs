//! Types and methods printed the way people read them:
//! `System.Collections.Generic.Dictionary<System.String, System.Int32>`, `Outer+Inner`,
//! `System.Int32[,]`, `T&`, and methods as `ReturnType Namespace.Type::Method(ParamType, …)`.
//!
//! The names behind tokens come from a [`NameResolver`], so the formatter runs without a runtime
//! (tests implement the trait over a table); corprof's `MetaDataImport` implements it, asking the
//! module's metadata on demand.
//!
//! The text is bounded by [`MAX_FORMATTED_LEN`], whatever the signature and the resolver say: a
//! malformed module can make type specifications refer to each other with a fan-out at every
//! level (12 arguments per level, 8 levels deep, is 12^8 leaves), or declare tens of thousands of
//! generic parameters. Past the limit the text is cut at a character boundary and ends with
//! [`TRUNCATED`], and the printer stops walking, so time is bounded too. Memory is the text, plus
//! one decoded type specification (bounded by its blob, see [`Type::decode`]) for each of the
//! eight levels of type specifications it follows, plus the resolver's answers.

use super::*;
use std::fmt::Write;

/// A type definition's or reference's name, as metadata stores it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TypeName {
    /// The namespace (empty for nested types and the global namespace).
    pub namespace: String,
    /// The name, with a generic type's arity suffix (`` Dictionary`2 ``).
    pub name: String,
    /// The enclosing type of a nested type.
    pub enclosing: Option<Token>,
}

/// What the formatter asks about tokens. Every method may answer `None`; the formatter then
/// prints the token (`[0x02000005]`) or the generic parameter's position (`!0`, `!!0`).
pub trait NameResolver {
    /// The name of a `TypeDef` or `TypeRef` token.
    fn type_name(&self, token: Token) -> Option<TypeName>;
    /// The name of generic parameter `index` of `owner` (a `TypeDef` or `MethodDef`).
    fn generic_param_name(&self, owner: Token, index: u32) -> Option<String> {
        let _ = (owner, index);
        None
    }
    /// The signature blob of a `TypeSpec` token.
    fn type_spec(&self, token: Token) -> Option<Vec<u8>> {
        let _ = token;
        None
    }
}

/// Where `!n` and `!!n` point: the type and method whose generic parameters they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Generics {
    /// The `TypeDef` owning `!n`.
    pub type_owner: Option<Token>,
    /// The `MethodDef` owning `!!n`.
    pub method_owner: Option<Token>,
}

/// How deep type specifications may refer to further type specifications before the formatter
/// prints the token instead (a malformed module could make them refer to each other).
const MAX_SPEC_DEPTH: usize = 8;
/// How many enclosing types the formatter follows.
const MAX_NESTING: usize = 32;

/// The longest text [`format_type`] and [`format_method`] return, in bytes, not counting the
/// [`TRUNCATED`] marker. Real names are far shorter (the longest in the .NET 8 shared framework
/// are a few hundred bytes).
pub const MAX_FORMATTED_LEN: usize = 64 * 1024;

/// What ends a text cut at [`MAX_FORMATTED_LEN`].
pub const TRUNCATED: &str = "…[truncated]";

/// A string that takes at most [`MAX_FORMATTED_LEN`] bytes, then remembers it was cut.
struct Bounded {
    text: String,
    full: bool,
}

impl Bounded {
    fn new() -> Self {
        Bounded { text: String::new(), full: false }
    }

    fn push_str(&mut self, s: &str) {
        if self.full {
            return;
        }
        let room = MAX_FORMATTED_LEN - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
        } else {
            let mut cut = room;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.push_str(&s[..cut]);
            self.full = true;
        }
    }

    fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }

    fn finish(mut self) -> String {
        if self.full {
            self.text.push_str(TRUNCATED);
        }
        self.text
    }
}

impl Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

struct Printer<'r, R: ?Sized> {
    resolver: &'r R,
    generics: Generics,
    out: Bounded,
    spec_depth: usize,
}

/// `ty` as people read it, names from `resolver`, `!n`/`!!n` named after `generics`' owners.
/// At most [`MAX_FORMATTED_LEN`] bytes, then [`TRUNCATED`].
pub fn format_type<R: NameResolver + ?Sized>(ty: &Type, resolver: &R, generics: Generics) -> String {
    let mut p = Printer { resolver, generics, out: Bounded::new(), spec_depth: 0 };
    p.ty(ty);
    p.out.finish()
}

/// A method as `ReturnType Namespace.Type::Name(ParamType, …)`: `owner` is its type (`TypeDef`,
/// `TypeRef` or `TypeSpec`), `method` its `MethodDef` when known, to name its generic
/// parameters. A generic definition's parameters follow the name (`Type<T>::Name<U>(…)`); a
/// varargs sentinel prints as `...`. At most [`MAX_FORMATTED_LEN`] bytes, then [`TRUNCATED`].
pub fn format_method<R: NameResolver + ?Sized>(
    resolver: &R,
    owner: Token,
    name: &str,
    sig: &MethodSig,
    method: Option<Token>,
) -> String {
    let type_owner = (owner.table() == Token::TYPE_DEF).then_some(owner);
    let mut p = Printer {
        resolver,
        generics: Generics { type_owner, method_owner: method },
        out: Bounded::new(),
        spec_depth: 0,
    };
    p.ty(&sig.ret);
    p.out.push(' ');
    p.type_token(owner, None);
    p.out.push_str("::");
    p.out.push_str(name);
    if sig.generic_params > 0 {
        p.out.push('<');
        for i in 0..sig.generic_params {
            if p.out.full {
                break;
            }
            if i > 0 {
                p.out.push_str(", ");
            }
            p.generic_param(false, i);
        }
        p.out.push('>');
    }
    p.params(&sig.params, sig.sentinel);
    p.out.finish()
}

/// The full name of a `TypeDef` or `TypeRef` as metadata spells it, each nested type after the
/// one enclosing it: `Namespace.Outer+Inner`, arity suffixes kept (``Shop.Box`1``); `None` when
/// the resolver does not know the token. What profilers print next to a method name
/// (`format!("{}::{}", type_path(&import, Token(class))?, method)`); [`format_type`] gives the
/// C# form with type arguments instead.
pub fn type_path<R: NameResolver + ?Sized>(resolver: &R, token: Token) -> Option<String> {
    let chain = nesting_chain(resolver, token)?;
    let mut out = String::new();
    for (i, level) in chain.iter().enumerate() {
        if i > 0 {
            out.push('+');
        } else if !level.namespace.is_empty() {
            out.push_str(&level.namespace);
            out.push('.');
        }
        out.push_str(&level.name);
    }
    Some(out)
}

/// `token`'s name and those of the types enclosing it, outermost first. Bounded, as a malformed
/// module may make enclosing types a cycle; an enclosing type the resolver does not know ends the
/// chain as its token (`[0x02000004]`).
fn nesting_chain<R: NameResolver + ?Sized>(resolver: &R, token: Token) -> Option<Vec<TypeName>> {
    let mut chain = vec![resolver.type_name(token)?];
    while let Some(outer) = chain.last().and_then(|n| n.enclosing) {
        if chain.len() >= MAX_NESTING {
            break;
        }
        match resolver.type_name(outer) {
            Some(n) => chain.push(n),
            None => {
                chain.push(TypeName { name: format!("[0x{:08x}]", outer.0), ..TypeName::default() });
                break;
            }
        }
    }
    chain.reverse();
    Some(chain)
}

/// The name without the arity suffix, and the arity (`` Dictionary`2 `` → `Dictionary`, 2).
/// A suffix above metadata's limit on generic parameters (16-bit numbers) is no arity: a
/// malformed name must not make the formatter ask for billions of parameter names.
fn split_arity(name: &str) -> (&str, u32) {
    match name.rsplit_once('`').map(|(base, n)| (base, n.parse::<u16>())) {
        Some((base, Ok(arity))) => (base, arity.into()),
        _ => (name, 0),
    }
}

impl<R: NameResolver + ?Sized> Printer<'_, R> {
    fn list(&mut self, types: &[Type]) {
        for (i, t) in types.iter().enumerate() {
            if self.out.full {
                return;
            }
            if i > 0 {
                self.out.push_str(", ");
            }
            self.ty(t);
        }
    }

    fn params(&mut self, params: &[Type], sentinel: Option<usize>) {
        self.out.push('(');
        for (i, t) in params.iter().enumerate() {
            if self.out.full {
                return;
            }
            if i > 0 {
                self.out.push_str(", ");
            }
            if sentinel == Some(i) {
                self.out.push_str("..., ");
            }
            self.ty(t);
        }
        if sentinel == Some(params.len()) {
            self.out.push_str(if params.is_empty() { "..." } else { ", ..." });
        }
        self.out.push(')');
    }

    fn generic_param(&mut self, of_type: bool, index: u32) {
        let owner = if of_type { self.generics.type_owner } else { self.generics.method_owner };
        match owner.and_then(|o| self.resolver.generic_param_name(o, index)) {
            Some(name) => self.out.push_str(&name),
            None => {
                let _ = write!(self.out, "{}{index}", if of_type { "!" } else { "!!" });
            }
        }
    }

    /// A type token's full name; `args` are its type arguments when instantiated. A bare
    /// generic definition gets its parameters' names, when the resolver knows them. Arguments
    /// go with the level of nesting that declares them, as C# writes them:
    /// `Dictionary<TKey, TValue>+Enumerator` (metadata gives the nested type all of them, the
    /// arity suffixes say who declared which).
    fn type_token(&mut self, token: Token, args: Option<&[Type]>) {
        if self.out.full {
            return;
        }
        if token.table() == Token::TYPE_SPEC
            && self.spec_depth < MAX_SPEC_DEPTH
            && let Some(spec) = self.resolver.type_spec(token).and_then(|b| TypeSpec::decode(&b).ok())
        {
            self.spec_depth += 1;
            self.ty(&spec.ty);
            self.spec_depth -= 1;
            return;
        }
        let Some(chain) = nesting_chain(self.resolver, token) else {
            let _ = write!(self.out, "[0x{:08x}]", token.0);
            return;
        };
        let mut next = 0usize;
        for (i, level) in chain.iter().enumerate() {
            if i > 0 {
                self.out.push('+');
            } else if !level.namespace.is_empty() {
                self.out.push_str(&level.namespace);
                self.out.push('.');
            }
            let (base, arity) = split_arity(&level.name);
            self.out.push_str(base);
            let range = next..next + arity as usize;
            next = range.end;
            match args {
                Some(args) => {
                    let mine = args.get(range.start.min(args.len())..range.end.min(args.len())).unwrap_or_default();
                    if !mine.is_empty() {
                        self.out.push('<');
                        self.list(mine);
                        self.out.push('>');
                    }
                }
                None if arity > 0 && token.table() == Token::TYPE_DEF => {
                    self.out.push('<');
                    for (k, index) in range.enumerate() {
                        if k > 0 {
                            self.out.push_str(", ");
                        }
                        match self.resolver.generic_param_name(token, index as u32) {
                            Some(n) => self.out.push_str(&n),
                            None => {
                                let _ = write!(self.out, "!{index}");
                            }
                        }
                    }
                    self.out.push('>');
                }
                None => {}
            }
        }
        // Arguments beyond what the arity suffixes declare (names without suffixes).
        if let Some(rest) = args.and_then(|a| a.get(next..)).filter(|r| !r.is_empty()) {
            self.out.push('<');
            self.list(rest);
            self.out.push('>');
        }
    }

    fn ty(&mut self, ty: &Type) {
        // Once the text is cut, nothing more shows: stop walking, which also bounds the time a
        // self-referencing type specification takes.
        if self.out.full {
            return;
        }
        let primitive = match ty {
            Type::Void => "System.Void",
            Type::Boolean => "System.Boolean",
            Type::Char => "System.Char",
            Type::I1 => "System.SByte",
            Type::U1 => "System.Byte",
            Type::I2 => "System.Int16",
            Type::U2 => "System.UInt16",
            Type::I4 => "System.Int32",
            Type::U4 => "System.UInt32",
            Type::I8 => "System.Int64",
            Type::U8 => "System.UInt64",
            Type::R4 => "System.Single",
            Type::R8 => "System.Double",
            Type::String => "System.String",
            Type::Object => "System.Object",
            Type::I => "System.IntPtr",
            Type::U => "System.UIntPtr",
            Type::TypedByRef => "System.TypedReference",
            Type::ValueType(t) | Type::Class(t) => return self.type_token(*t, None),
            Type::Var(i) => return self.generic_param(true, *i),
            Type::MVar(i) => return self.generic_param(false, *i),
            Type::GenericInst { generic, args, .. } => return self.type_token(*generic, Some(args)),
            Type::SzArray(elem) => {
                self.ty(elem);
                self.out.push_str("[]");
                return;
            }
            Type::Array(elem, shape) => {
                self.ty(elem);
                // As reflection prints them: a rank-1 general array is `T[*]`.
                self.out.push('[');
                if shape.rank == 1 {
                    self.out.push('*');
                }
                for _ in 1..shape.rank.min(32) {
                    self.out.push(',');
                }
                self.out.push(']');
                return;
            }
            Type::Ptr(elem) => {
                self.ty(elem);
                self.out.push('*');
                return;
            }
            Type::ByRef(elem) => {
                self.ty(elem);
                self.out.push('&');
                return;
            }
            Type::FnPtr(sig) => {
                self.out.push_str("method ");
                self.ty(&sig.ret);
                self.out.push_str(" *");
                self.params(&sig.params, sig.sentinel);
                return;
            }
            Type::Modified { required, modifier, ty } => {
                self.ty(ty);
                self.out.push_str(if *required { " modreq(" } else { " modopt(" });
                self.type_token(*modifier, None);
                self.out.push(')');
                return;
            }
            Type::Pinned(ty) => {
                self.ty(ty);
                self.out.push_str(" pinned");
                return;
            }
        };
        self.out.push_str(primitive);
    }
}
