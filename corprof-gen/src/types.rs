//! The header's plain data types (ID typedefs, `COR_PRF_*` enums and structs) through bindgen,
//! which does that job well. Interfaces are blocklisted here: bindgen cannot lay out COM vtables
//! for classes with a base, so the interface stages own them.

use crate::diag::{Diagnostic, Errors};
use crate::extract::{UMBRELLA, clang_args, prelude_dir, umbrella};
use crate::ir::{Header, IdType};
use quote::ToTokens;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// bindgen's output, and what the generator learned from it.
pub struct Types {
    pub code: String,
    /// The structs and unions for which all-zero bytes are a valid value.
    pub zeroable: Vec<ZeroableType>,
    /// The ID typedefs, taken out of bindgen's output: the template writes their newtypes.
    pub ids: Vec<IdType>,
    /// The enums bindgen emitted as newtypes, with their enumerators (for `Display`).
    pub enums: Vec<EnumType>,
    /// The structs that hold raw pointers, directly or in a nested struct, with those fields'
    /// names: the runtime reads through them, so a method taking one is `unsafe`.
    pub pointer_records: HashMap<String, Vec<String>>,
}

/// A C enum as bindgen emitted it: `pub struct NAME(pub REPR)` with one associated constant per
/// enumerator.
pub struct EnumType {
    pub name: String,
    pub flags: bool,
    /// The enumerators' names, in header order.
    pub consts: Vec<String>,
    /// (short, full): `COR_PRF_MONITOR::JIT_COMPILATION` for `COR_PRF_MONITOR_JIT_COMPILATION`,
    /// the enumerators that repeat the type's name as a prefix, without it.
    pub short: Vec<(String, String)>,
}

/// A plain-data struct or union whose every field is zeroable: it gets an `unsafe impl Zeroable`,
/// with each field type as a `where` bound so rustc re-checks the reasoning.
pub struct ZeroableType {
    pub name: String,
    /// Type parameters (`__BindgenBitfieldUnit<Storage>`), each required zeroable.
    pub params: Vec<String>,
    /// The field types, deduplicated.
    pub fields: Vec<syn::Type>,
}

/// Gives MIDL's machine-made tags their typedef names.
#[derive(Debug)]
struct Renames(Vec<(String, String)>);

impl bindgen::callbacks::ParseCallbacks for Renames {
    fn item_name(&self, item: bindgen::callbacks::ItemInfo<'_>) -> Option<String> {
        self.0.iter().find(|(tag, _)| tag == item.name).map(|(_, name)| name.clone())
    }
}

/// After the renames bindgen still emits `pub use self::X as X;` / `pub type X = X;` for each
/// typedef: drop those self-aliases. The ID typedefs' aliases (`pub type FunctionID = UINT_PTR;`)
/// go too: the template declares those types as newtypes.
fn post_process(code: &str, header: &Header) -> Result<Types, Errors> {
    let mut file =
        syn::parse_file(code).map_err(|e| Diagnostic::error(format!("bindgen output does not parse: {e}")))?;
    let is_id = |name: &syn::Ident| header.id_types.iter().any(|i| name == &i.name);
    file.items.retain(|item| match item {
        syn::Item::Type(t) if is_id(&t.ident) => false,
        syn::Item::Use(u) => match &u.tree {
            syn::UseTree::Path(p) if p.ident == "self" => {
                !matches!(&*p.tree, syn::UseTree::Rename(r) if r.ident == r.rename)
            }
            _ => true,
        },
        syn::Item::Type(t) => match &*t.ty {
            syn::Type::Path(p) => !p.path.is_ident(&t.ident),
            _ => true,
        },
        // `extern { static GUID_ManagedName: GUID; }` (cor.h's EXTERN_GUIDs): no library a profiler
        // links provides these symbols, so any use would fail to link.
        syn::Item::ForeignMod(_) => false,
        _ => true,
    });
    for item in &mut file.items {
        if let syn::Item::Struct(s) = item
            && hidden_artifact(s)
        {
            s.attrs.push(syn::parse_quote!(#[doc(hidden)]));
        }
    }
    document_items(&mut file.items, header);
    let ids: Vec<String> = header.id_types.iter().map(|i| i.name.clone()).collect();
    let zeroable = zeroable_types(&file.items, &ids);
    justify_zeroed_defaults(&mut file.items, &zeroable);
    Ok(Types {
        zeroable,
        pointer_records: pointer_records(&file.items),
        enums: enum_types(&file.items, header),
        ids: header.id_types.clone(),
        code: prettyplease::unparse(&file),
    })
}

/// Gives every public item bindgen wrote a doc line saying which declaration of the header it
/// is (bindgen copies no comments: MIDL's headers have none worth copying), so that the corprof
/// crate can deny missing docs: structs, unions and typedefs with their shape, fields, enumerators
/// with their value, bitfield accessors.
fn document_items(items: &mut [syn::Item], header: &Header) {
    let has_doc = |attrs: &[syn::Attribute]| attrs.iter().any(|a| a.path().is_ident("doc"));
    // `///` writes its text after a space: the attribute form carries that space itself.
    let doc = |text: String| -> syn::Attribute {
        let text = format!(" {text}");
        syn::parse_quote!(#[doc = #text])
    };
    // Tables, not searches per item: a header of many declarations takes time in proportion to
    // their number. The first of a name wins, as a search would find it.
    let mut shapes = std::collections::HashMap::new();
    for t in &header.types {
        shapes.entry(t.name.as_str()).or_insert(t.shape.as_str());
    }
    let mut values = std::collections::HashMap::new();
    for c in &header.constants {
        values.entry(c.name.as_str()).or_insert(c);
    }
    let shape = |name: &str| shapes.get(name).map(|s| s.to_string());
    let value =
        |name: &str| values.get(name).map(|c| if c.hex { format!("{:#x}", c.value) } else { c.value.to_string() });
    for item in items.iter_mut() {
        match item {
            syn::Item::Struct(s) => {
                let name = s.ident.to_string();
                if !has_doc(&s.attrs) {
                    let what = shape(&name).unwrap_or_else(|| "type".to_string());
                    s.attrs.push(doc(format!("`{name}`: the header's {what}, laid out as C lays it out.")));
                }
                for f in s.fields.iter_mut().filter(|f| !has_doc(&f.attrs)) {
                    let field = f.ident.as_ref().map_or_else(|| "0".to_string(), |i| i.to_string());
                    f.attrs.push(doc(format!("The header's field `{field}` of `{name}`.")));
                }
            }
            syn::Item::Union(u) => {
                let name = u.ident.to_string();
                if !has_doc(&u.attrs) {
                    u.attrs.push(doc(format!("`{name}`: the header's union, laid out as C lays it out.")));
                }
                for f in u.fields.named.iter_mut().filter(|f| !has_doc(&f.attrs)) {
                    let field = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
                    f.attrs.push(doc(format!("The header's field `{field}` of `{name}`.")));
                }
            }
            syn::Item::Type(t) if !has_doc(&t.attrs) => {
                let name = t.ident.to_string();
                let what = shape(&name)
                    .unwrap_or_else(|| format!("typedef of `{}`", t.ty.to_token_stream().to_string().replace(' ', "")));
                t.attrs.push(doc(format!("`{name}`: the header's {what}.")));
            }
            syn::Item::Const(c) if !has_doc(&c.attrs) => {
                let name = c.ident.to_string();
                let v = value(&name).map(|v| format!(" = {v}")).unwrap_or_default();
                c.attrs.push(doc(format!("The header's constant `{name}`{v}.")));
            }
            syn::Item::Enum(e) => {
                let name = e.ident.to_string();
                if !has_doc(&e.attrs) {
                    e.attrs.push(doc(format!("`{name}`: the header's enum.")));
                }
                for v in e.variants.iter_mut().filter(|v| !has_doc(&v.attrs)) {
                    v.attrs.push(doc(format!("The header's enumerator `{}`.", v.ident)));
                }
            }
            syn::Item::Impl(imp) if imp.trait_.is_none() => {
                let ty = imp.self_ty.to_token_stream().to_string();
                for ii in &mut imp.items {
                    match ii {
                        syn::ImplItem::Const(c) if !has_doc(&c.attrs) => {
                            let name = c.ident.to_string();
                            let v = value(&name).map(|v| format!(" = {v}")).unwrap_or_default();
                            c.attrs.push(doc(format!("The header's enumerator `{name}` of `{ty}`{v}.")));
                        }
                        syn::ImplItem::Fn(f) if !has_doc(&f.attrs) => {
                            let name = f.sig.ident.to_string();
                            f.attrs.push(doc(format!("`{name}`: bindgen's accessor for a bitfield of `{ty}`.")));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

/// bindgen writes `impl Default` by zeroing the bytes (`unsafe { write_bytes(…); assume_init() }`)
/// for records it cannot derive `Default` for (raw pointers, unions). Where the zeroable analysis
/// agrees, the `unsafe` block gets its `// SAFETY:` comment (as a marker `restore_comments`
/// turns back into one); where it does not, the impl goes, since nothing here shows it sound.
fn justify_zeroed_defaults(items: &mut Vec<syn::Item>, zeroable: &[ZeroableType]) {
    let zeroed_default_of = |item: &syn::Item| -> Option<String> {
        let syn::Item::Impl(imp) = item else { return None };
        let (_, path, _) = imp.trait_.as_ref()?;
        let syn::Type::Path(ty) = &*imp.self_ty else { return None };
        let unsafe_body = imp.items.iter().any(|ii| {
            matches!(ii, syn::ImplItem::Fn(f) if f.block.stmts.iter().any(|st| matches!(st, syn::Stmt::Expr(syn::Expr::Unsafe(_), _))))
        });
        (path.is_ident("Default") && unsafe_body)
            .then(|| ty.path.segments.last().map(|s| s.ident.to_string()))
            .flatten()
    };
    items.retain(|item| zeroed_default_of(item).is_none_or(|name| zeroable.iter().any(|z| z.name == name)));
    for item in items.iter_mut() {
        let Some(name) = zeroed_default_of(item) else { continue };
        let syn::Item::Impl(imp) = item else { continue };
        let text = format!(
            "all-zero bytes are a valid `{name}`: every field is zeroable, as its `Zeroable` impl (whose `where` bounds rustc checks) says."
        );
        for ii in &mut imp.items {
            let syn::ImplItem::Fn(f) = ii else { continue };
            if let Some(at) = f.block.stmts.iter().position(|st| matches!(st, syn::Stmt::Expr(syn::Expr::Unsafe(_), _)))
            {
                let marker = format!("{}{:?});", crate::SAFETY_MARKER, text);
                f.block.stmts.insert(at, syn::parse_str(&marker).expect("a SAFETY marker parses as a statement"));
            }
        }
    }
}

/// The header's enums that bindgen emitted as newtype structs, with the constants of their
/// `impl` blocks.
fn enum_types(items: &[syn::Item], header: &Header) -> Vec<EnumType> {
    // The items read once into tables (an enum looked up in all items each was quadratic in a
    // header of many enums): the structs' names, and each type's inherent impl constants.
    let mut structs = HashSet::new();
    let mut impl_consts: HashMap<String, Vec<String>> = HashMap::new();
    for item in items {
        match item {
            syn::Item::Struct(st) => {
                structs.insert(st.ident.to_string());
            }
            syn::Item::Impl(imp) if imp.trait_.is_none() => {
                let syn::Type::Path(p) = &*imp.self_ty else { continue };
                let Some(ident) = p.path.get_ident() else { continue };
                let consts = impl_consts.entry(ident.to_string()).or_default();
                for ii in &imp.items {
                    if let syn::ImplItem::Const(c) = ii {
                        consts.push(c.ident.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    let mut out: Vec<EnumType> = Vec::new();
    let mut seen = HashSet::new();
    for e in &header.enums {
        if !structs.contains(&e.name) || !seen.insert(e.name.as_str()) {
            continue;
        }
        let consts = impl_consts.get(&e.name).cloned().unwrap_or_default();
        let short = short_names(&e.name, &consts);
        out.push(EnumType { name: e.name.clone(), flags: e.flags, consts, short });
    }
    out
}

/// bindgen's own helper for bitfields (`__BindgenBitfieldUnit`, reached through the generated
/// accessors) and its opaque stand-ins for types the header only points to (`IStream`: a struct
/// with one `_unused: [u8; 0]`): needed by the signatures, but nothing to document.
fn hidden_artifact(s: &syn::ItemStruct) -> bool {
    s.ident.to_string().starts_with("__Bindgen")
        || matches!(&s.fields, syn::Fields::Named(f) if f.named.len() == 1
            && f.named.first().and_then(|f| f.ident.as_ref()).is_some_and(|i| i == "_unused"))
}

/// Short names for enumerators that repeat their type's name, when the rest is an identifier and
/// no other enumerator (or short name) is spelled that way:
/// - `TYPE_NAME_REST` → `REST` (`COR_PRF_MONITOR_GC` → `COR_PRF_MONITOR::GC`), first, so these
///   win any clash;
/// - in the runtime's `COR_PRF_*` types, whose enumerators often share only part of the type's
///   name, the longest shared part ending in `_` (at least `COR_PRF_`) goes too:
///   `COR_PRF_ENABLE_STACK_SNAPSHOT` → `COR_PRF_MONITOR::ENABLE_STACK_SNAPSHOT`,
///   `COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES` → `COR_PRF_HIGH_MONITOR::ADD_ASSEMBLY_REFERENCES`.
fn short_names(ty: &str, consts: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    // Sets, not searches: an enum of many enumerators takes time in proportion to their number.
    let names: HashSet<&str> = consts.iter().map(String::as_str).collect();
    let mut shorts: HashSet<String> = HashSet::new();
    let mut add = |rest: &str, c: &String, out: &mut Vec<(String, String)>| {
        let starts_well = rest.chars().next().is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_');
        let taken = names.contains(rest) || shorts.contains(rest);
        if starts_well && !taken && syn::parse_str::<syn::Ident>(rest).is_ok() {
            shorts.insert(rest.to_string());
            out.push((rest.to_string(), c.clone()));
        }
    };
    let full = format!("{ty}_");
    for c in consts {
        if let Some(rest) = c.strip_prefix(&full) {
            add(rest, c, &mut out);
        }
    }
    if ty.starts_with(RUNTIME_PREFIX) {
        for c in consts.iter().filter(|c| !c.starts_with(&full)) {
            if let Some(rest) = c.strip_prefix(shared_prefix(ty, c)) {
                add(rest, c, &mut out);
            }
        }
    }
    out
}

/// The runtime's type and enumerator prefix: the least part of a type's name that short names
/// strip from its enumerators.
const RUNTIME_PREFIX: &str = "COR_PRF_";

/// The longest prefix of `ty` ending in `_` that `c` starts with, at least [`RUNTIME_PREFIX`]
/// (empty when `c` does not start with that).
fn shared_prefix<'a>(ty: &str, c: &'a str) -> &'a str {
    let mut best = "";
    for (at, _) in ty.match_indices('_') {
        let prefix = &ty[..=at];
        if prefix.len() >= RUNTIME_PREFIX.len() && c.starts_with(prefix) {
            best = &c[..prefix.len()];
        }
    }
    best
}

/// Names of types every value of which may be all-zero bytes, as bindgen spells them; corprof
/// implements `Zeroable` for these (`GUID` is corprof's own; `c_void` is not a value type).
const ZEROABLE_PRIMITIVES: &[&str] = &[
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "f32",
    "f64",
    "bool",
    "c_char",
    "c_schar",
    "c_uchar",
    "c_short",
    "c_ushort",
    "c_int",
    "c_uint",
    "c_long",
    "c_ulong",
    "c_longlong",
    "c_ulonglong",
    "c_float",
    "c_double",
    "GUID",
];

struct Record<'a> {
    name: String,
    params: Vec<String>,
    fields: Vec<&'a syn::Type>,
}

/// The structs and unions bindgen emitted whose every field is zeroable: primitives, raw pointers,
/// arrays of zeroable, aliases of those, and other such records. Rust enums, references, `fn`
/// pointers (`Option<fn>` can't be implemented outside core) and anything unknown are left out,
/// and so is every record containing one; and records without `Copy` (the trait requires it).
/// `ids` are the ID newtypes the template declares, zeroable too.
fn zeroable_types(items: &[syn::Item], ids: &[String]) -> Vec<ZeroableType> {
    let mut aliases: HashMap<String, syn::Type> = HashMap::new();
    let mut records: Vec<Record<'_>> = Vec::new();
    for item in items {
        match item {
            syn::Item::Type(t) if t.generics.params.is_empty() => {
                aliases.insert(t.ident.to_string(), (*t.ty).clone());
            }
            // `pub use self::_COR_PRF_SNAPSHOT_INFO as COR_PRF_SNAPSHOT_INFO;`
            syn::Item::Use(u) => {
                if let syn::UseTree::Path(p) = &u.tree
                    && p.ident == "self"
                    && let syn::UseTree::Rename(r) = &*p.tree
                {
                    let target = syn::TypePath { qself: None, path: r.ident.clone().into() };
                    aliases.insert(r.rename.to_string(), syn::Type::Path(target));
                }
            }
            syn::Item::Struct(st) if derives_copy(&st.attrs) => records.push(Record {
                name: st.ident.to_string(),
                params: type_params(&st.generics),
                fields: st.fields.iter().map(|f| &f.ty).collect(),
            }),
            syn::Item::Union(un) if derives_copy(&un.attrs) => records.push(Record {
                name: un.ident.to_string(),
                params: type_params(&un.generics),
                fields: un.fields.named.iter().map(|f| &f.ty).collect(),
            }),
            _ => {}
        }
    }
    // A record is zeroable once all its fields are: grow the set until it stops changing.
    let mut known: HashSet<String> = ids.iter().cloned().collect();
    loop {
        let before = known.len();
        for r in &records {
            if !known.contains(&r.name) && r.fields.iter().all(|f| zeroable(f, &r.params, &aliases, &known, 0)) {
                known.insert(r.name.clone());
            }
        }
        if known.len() == before {
            break;
        }
    }
    records
        .iter()
        .filter(|r| known.contains(&r.name))
        .map(|r| {
            let mut fields: Vec<syn::Type> = Vec::new();
            for f in &r.fields {
                if !fields.contains(f) {
                    fields.push((*f).clone());
                }
            }
            ZeroableType { name: r.name.clone(), params: r.params.clone(), fields }
        })
        .collect()
}

/// The structs bindgen emitted with a raw-pointer field (`*const WCHAR`, `*mut c_void`), or a
/// field of such a struct type (or an array of one), each with those fields' names. A field's
/// type is followed through the header's typedefs: `LPWSTR` (ASSEMBLYMETADATA's `szLocale`) and
/// `HCORENUM` are pointers although their Rust spelling is a name.
fn pointer_records(items: &[syn::Item]) -> HashMap<String, Vec<String>> {
    let aliases: HashMap<String, &syn::Type> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Type(t) if t.generics.params.is_empty() => Some((t.ident.to_string(), &*t.ty)),
            _ => None,
        })
        .collect();
    let structs: Vec<&syn::ItemStruct> =
        items.iter().filter_map(|i| if let syn::Item::Struct(s) = i { Some(s) } else { None }).collect();
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    loop {
        let before = out.len();
        for st in &structs {
            let fields: Vec<String> = st
                .fields
                .iter()
                .filter(|f| holds_pointer(&f.ty, &out, &aliases, 0))
                .filter_map(|f| f.ident.as_ref().map(ToString::to_string))
                .collect();
            if !fields.is_empty() {
                out.insert(st.ident.to_string(), fields);
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

fn holds_pointer(
    ty: &syn::Type,
    known: &HashMap<String, Vec<String>>,
    aliases: &HashMap<String, &syn::Type>,
    depth: u32,
) -> bool {
    // A typedef chain deeper than this is a cycle, which C does not allow: stop there.
    if depth > 32 {
        return false;
    }
    match ty {
        syn::Type::Ptr(_) => true,
        syn::Type::Array(a) => holds_pointer(&a.elem, known, aliases, depth + 1),
        syn::Type::Paren(p) => holds_pointer(&p.elem, known, aliases, depth + 1),
        syn::Type::Group(g) => holds_pointer(&g.elem, known, aliases, depth + 1),
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            let name = s.ident.to_string();
            known.contains_key(&name)
                || (p.path.segments.len() == 1
                    && aliases.get(&name).is_some_and(|t| holds_pointer(t, known, aliases, depth + 1)))
        }),
        _ => false,
    }
}

fn derives_copy(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("derive")).any(|a| {
        a.parse_args_with(syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
            .is_ok_and(|paths| paths.iter().any(|p| p.is_ident("Copy")))
    })
}

fn type_params(generics: &syn::Generics) -> Vec<String> {
    generics.type_params().map(|p| p.ident.to_string()).collect()
}

fn zeroable(
    ty: &syn::Type,
    params: &[String],
    aliases: &HashMap<String, syn::Type>,
    known: &HashSet<String>,
    depth: u32,
) -> bool {
    if depth > 32 {
        return false;
    }
    match ty {
        syn::Type::Ptr(_) => true,
        syn::Type::Array(a) => zeroable(&a.elem, params, aliases, known, depth + 1),
        syn::Type::Paren(p) => zeroable(&p.elem, params, aliases, known, depth + 1),
        syn::Type::Group(g) => zeroable(&g.elem, params, aliases, known, depth + 1),
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            match &last.arguments {
                // A generic record instance (`__BindgenBitfieldUnit<[u8; 4usize]>`).
                syn::PathArguments::AngleBracketed(args) => {
                    known.contains(&name)
                        && args.args.iter().all(|a| match a {
                            syn::GenericArgument::Type(t) => zeroable(t, params, aliases, known, depth + 1),
                            _ => false,
                        })
                }
                syn::PathArguments::Parenthesized(_) => false,
                syn::PathArguments::None => {
                    (p.path.segments.len() == 1 && params.contains(&name))
                        || ZEROABLE_PRIMITIVES.contains(&name.as_str())
                        || known.contains(&name)
                        || aliases.get(&name).is_some_and(|t| zeroable(t, params, aliases, known, depth + 1))
                }
            }
        }
        _ => false,
    }
}

/// A regular expression matching exactly `names` (identifiers), written as their prefix tree:
/// `I(?:A|B(?:Vtbl)?)`. bindgen tests every type against it with a matcher whose work per character
/// grows with the alternatives open at once; a flat `A|B|…` of every interface made a header of a
/// few thousand interfaces take minutes, the tree keeps the alternatives at one character's.
fn trie_regex(names: &[String]) -> String {
    // The tree in one vector (children by index), walked with a stack of its own: a name of any
    // length nests no Rust call or drop.
    #[derive(Default)]
    struct Node {
        end: bool,
        next: std::collections::BTreeMap<char, usize>,
    }
    let mut nodes = vec![Node::default()];
    for name in names {
        let mut at = 0;
        for c in name.chars() {
            let fresh = nodes.len();
            at = match nodes[at].next.get(&c) {
                Some(&child) => child,
                None => {
                    nodes[at].next.insert(c, fresh);
                    nodes.push(Node::default());
                    fresh
                }
            };
        }
        nodes[at].end = true;
    }
    enum Step {
        /// A node, inside this many groups.
        Node(usize, usize),
        Text(&'static str),
        Char(char),
    }
    let mut out = String::new();
    let mut deepest = 0;
    let mut stack = vec![Step::Node(0, 0)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(text) => out.push_str(text),
            Step::Char(c) => push_escaped(&mut out, c),
            Step::Node(at, depth) => {
                // The children as alternatives (each first character once), optional when a
                // name ends here; pushed last first.
                let node = &nodes[at];
                if node.next.is_empty() {
                    continue;
                }
                let group = node.next.len() > 1 || node.end;
                let inner = depth + usize::from(group);
                deepest = deepest.max(inner);
                if group {
                    stack.push(Step::Text(if node.end { ")?" } else { ")" }));
                }
                for (i, (&c, &child)) in node.next.iter().enumerate().rev() {
                    stack.push(Step::Node(child, inner));
                    stack.push(Step::Char(c));
                    if i > 0 {
                        stack.push(Step::Text("|"));
                    }
                }
                if group {
                    stack.push(Step::Text("(?:"));
                }
            }
        }
    }
    if deepest > MAX_REGEX_NESTING {
        // Names that are prefixes of one another, dozens deep: the tree would nest past what the
        // regex parser takes. The flat alternation nests nothing (and is slow).
        let mut flat = String::from("(?:");
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                flat.push('|');
            }
            name.chars().for_each(|c| push_escaped(&mut flat, c));
        }
        flat.push(')');
        return flat;
    }
    out
}

/// How deep [`trie_regex`] nests groups at most. The `regex` crate's parser allows 250 levels of
/// its syntax tree, and each `(?:…)?` within a concatenation takes three: 83 such groups parse, 84
/// do not (measured with regex 1.x, bindgen's).
const MAX_REGEX_NESTING: usize = 64;

fn escape(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        push_escaped(&mut out, c);
    }
    out
}

/// `c` as a regular expression matching it.
fn push_escaped(out: &mut String, c: char) {
    if "\\.+*?()|[]{}^$".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// bindgen's output for the types declared in the header folder and the prelude.
pub fn generate(
    include_dirs: &[PathBuf],
    headers: &[String],
    interfaces: &[&str],
    header: &Header,
) -> Result<Types, Errors> {
    let include_dir = include_dirs.first().map(PathBuf::as_path).unwrap_or(Path::new("."));
    let mut blocked: Vec<String> = interfaces.iter().flat_map(|i| [i.to_string(), format!("{i}Vtbl")]).collect();
    blocked.extend(["IUnknown", "IUnknownVtbl", "_GUID", "GUID", "IID", "CLSID"].map(String::from));
    let builder = bindgen::Builder::default()
        .header_contents(&include_dir.join(UMBRELLA).display().to_string(), &umbrella(headers))
        // C++ mode, as the interface walk: cor.h declares its interfaces only in C++ form.
        .clang_args(clang_args(include_dirs, true))
        .ignore_functions()
        .ignore_methods()
        .allowlist_file(format!("({})/.*", include_dirs.iter().map(|d| escape(d)).collect::<Vec<_>>().join("|")))
        .allowlist_file(format!("{}/.*", escape(&prelude_dir())))
        .blocklist_type(format!("^{}$", trie_regex(&blocked)))
        .blocklist_item("^(IID_.*|CLSID_.*|__MIDL_itf_.*|CORPROF_.*_H)$")
        // Newtypes keep unknown values (a newer runtime's) representable; only flag enums get
        // the bit operators.
        .default_enum_style(bindgen::EnumVariation::NewType { is_bitfield: false, is_global: false })
        .prepend_enum_name(false)
        .derive_default(true)
        .derive_eq(true)
        .derive_hash(true)
        .layout_tests(false)
        .generate_comments(false)
        .formatter(bindgen::Formatter::None)
        .parse_callbacks(Box::new(Renames(header.tag_names.clone())));
    // The flag enums under every name bindgen might match them by (MIDL tag or typedef).
    let mut builder = builder;
    for e in header.enums.iter().filter(|e| e.flags) {
        builder = builder.bitfield_enum(format!("^{}$", e.name));
        for (tag, name) in &header.tag_names {
            if *name == e.name {
                builder = builder.bitfield_enum(format!("^{tag}$"));
            }
        }
    }
    match builder.generate() {
        Ok(b) => post_process(&b.to_string(), header),
        Err(e) => Err(Diagnostic::error(format!("bindgen failed on {}: {e}", headers.join(", "))).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_names_are_one_prefix_tree() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(trie_regex(&names(&["IA", "IAVtbl", "IB", "GUID", "_GUID"])), "(?:GUID|I(?:A(?:Vtbl)?|B)|_GUID)");
        assert_eq!(trie_regex(&names(&["IA"])), "IA");
        assert_eq!(trie_regex(&names(&["A", "AB", "AC"])), "A(?:B|C)?");
        assert_eq!(trie_regex(&names(&["a.b"])), "a\\.b");
        // A name of any length nests no call: no stack to run out of.
        let long = "I".repeat(1 << 20);
        assert_eq!(trie_regex(&[long.clone(), format!("{long}Vtbl")]).len(), long.len() + "(?:Vtbl)?".len());
        // Names each the prefix of the next would nest a group per name: past the regex parser's
        // limit they are a flat alternation.
        let chain: Vec<String> = (1..=MAX_REGEX_NESTING + 2).map(|n| "A".repeat(n)).collect();
        let flat = trie_regex(&chain);
        assert_eq!(flat, format!("(?:{})", chain.join("|")));
        let nested = trie_regex(&chain[..=MAX_REGEX_NESTING]);
        assert_eq!(nested.matches("(?:").count(), MAX_REGEX_NESTING, "{nested}");
        // Each parses, as bindgen's set of one anchored pattern, and matches its names only.
        let mut mixed = names(&["ICorProfilerInfo", "ICorProfilerInfoVtbl", "ICorProfilerInfo2", "GUID", "_GUID"]);
        mixed.extend(chain.iter().take(MAX_REGEX_NESTING + 1).cloned());
        for set in [chain.clone(), chain[..=MAX_REGEX_NESTING].to_vec(), mixed] {
            let re = regex::RegexSet::new([format!("^{}$", trie_regex(&set))]).expect("the regex parses");
            assert!(set.iter().all(|n| re.is_match(n)));
            for other in ["ICorProfilerInfo3", "ICorProfiler", "GUIDs", "B", &"A".repeat(MAX_REGEX_NESTING + 3), ""] {
                assert!(!re.is_match(other), "{other}");
            }
        }
    }

    fn names(ty: &str, consts: &[&str]) -> Vec<(String, String)> {
        short_names(ty, &consts.iter().map(|c| c.to_string()).collect::<Vec<_>>())
    }

    /// The full type name goes first; in `COR_PRF_*` types the longest shared part goes too,
    /// never a name another enumerator or an earlier short name has, never a non-identifier.
    #[test]
    fn short_names_drop_what_repeats_the_type() {
        let pairs = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
        assert_eq!(
            names(
                "COR_PRF_MONITOR",
                &[
                    "COR_PRF_MONITOR_NONE",
                    "COR_PRF_MONITOR_GC",
                    "COR_PRF_ENABLE_STACK_SNAPSHOT",
                    "COR_PRF_ALL",
                    "COR_PRF_GC"
                ]
            ),
            pairs(&[
                ("NONE", "COR_PRF_MONITOR_NONE"),
                ("GC", "COR_PRF_MONITOR_GC"),
                ("ENABLE_STACK_SNAPSHOT", "COR_PRF_ENABLE_STACK_SNAPSHOT"),
                ("ALL", "COR_PRF_ALL"),
                // `COR_PRF_GC` would be `GC`, which COR_PRF_MONITOR_GC has already.
            ])
        );
        assert_eq!(
            names("COR_PRF_HIGH_MONITOR", &["COR_PRF_HIGH_MONITOR_EVENT_PIPE", "COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES"]),
            pairs(&[
                ("EVENT_PIPE", "COR_PRF_HIGH_MONITOR_EVENT_PIPE"),
                ("ADD_ASSEMBLY_REFERENCES", "COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES")
            ])
        );
        // Outside the runtime's types only the full name is stripped; a digit cannot start one.
        assert_eq!(
            names("CorElementType", &["ELEMENT_TYPE_I4", "CorElementType_X"]),
            pairs(&[("X", "CorElementType_X")])
        );
        assert_eq!(names("COR_PRF_GC_GENERATION", &["COR_PRF_GC_GEN_0"]), pairs(&[("GEN_0", "COR_PRF_GC_GEN_0")]));
        assert_eq!(names("COR_PRF_GC_GEN", &["COR_PRF_GC_GEN_0"]), pairs(&[]));
    }

    /// A pointer spelled through typedefs (`LPWSTR`, a chain of them, an array of one) makes a
    /// pointer record, as does a field of a struct typedef'd to one; plain typedefs do not.
    #[test]
    fn pointer_records_follow_typedefs() {
        let code = "
            pub type WCHAR = u16;
            pub type LPWSTR = *mut WCHAR;
            pub type LOCALE = LPWSTR;
            pub struct Md { pub major: u16, pub szLocale: LPWSTR, pub cb: u32 }
            pub struct Chained { pub names: [LOCALE; 2], pub n: WCHAR }
            pub type MD_ALIAS = Md;
            pub struct Outer { pub md: MD_ALIAS }
            pub struct Plain { pub c: WCHAR, pub n: u32 }
        ";
        let records = pointer_records(&syn::parse_file(code).unwrap().items);
        assert_eq!(records.get("Md"), Some(&vec!["szLocale".to_string()]));
        assert_eq!(records.get("Chained"), Some(&vec!["names".to_string()]));
        assert_eq!(records.get("Outer"), Some(&vec!["md".to_string()]));
        assert_eq!(records.get("Plain"), None);
    }

    /// A zeroing `Default` keeps its impl, with a SAFETY marker, only for a zeroable record.
    #[test]
    fn zeroed_defaults_are_justified_or_dropped() {
        let code = "
            pub struct Z { pub p: *mut u8 }
            pub struct F { pub p: *mut u8, pub f: fn() }
            impl Default for Z { fn default() -> Self { let mut s = ::std::mem::MaybeUninit::<Self>::uninit(); unsafe { s.assume_init() } } }
            impl Default for F { fn default() -> Self { let mut s = ::std::mem::MaybeUninit::<Self>::uninit(); unsafe { s.assume_init() } } }
        ";
        let mut items = syn::parse_file(code).unwrap().items;
        let zeroable = [ZeroableType { name: "Z".into(), params: vec![], fields: vec![syn::parse_quote!(*mut u8)] }];
        justify_zeroed_defaults(&mut items, &zeroable);
        let out = crate::restore_comments(&prettyplease::unparse(&syn::File { shebang: None, attrs: vec![], items }));
        assert!(out.contains("impl Default for Z"), "{out}");
        assert!(out.contains("// SAFETY: all-zero bytes are a valid `Z`"), "{out}");
        assert!(!out.contains("impl Default for F"), "no justification, no impl:\n{out}");
        assert!(out.contains("pub struct F"), "{out}");
    }

    #[test]
    fn only_records_of_zeroable_fields_are_zeroable() {
        let file: syn::File = syn::parse_str(
            r#"
            pub type ULONG = u32;
            #[derive(Copy, Clone)] pub struct Newtype(pub ::std::os::raw::c_uint);
            pub use self::Newtype as NEWTYPE;
            #[derive(Copy, Clone)] pub struct Plain { a: ULONG, b: [NEWTYPE; 2usize], c: *mut Plain, d: GUID }
            #[derive(Copy, Clone)] pub struct Unit<S> { s: S }
            #[derive(Copy, Clone)] pub struct Bits { u: Unit<[u8; 4usize]> }
            #[derive(Copy, Clone)] pub enum RustEnum { A = 1 }
            #[derive(Copy, Clone)] pub struct HasEnum { e: RustEnum }
            #[derive(Copy, Clone)] pub struct HasFn { f: ::std::option::Option<unsafe extern "C" fn()> }
            #[derive(Copy, Clone)] pub struct Outer { inner: HasEnum }
            pub struct NotCopy { a: u32 }
            "#,
        )
        .unwrap();
        let names: Vec<String> = zeroable_types(&file.items, &[]).into_iter().map(|z| z.name).collect();
        assert_eq!(names, ["Newtype", "Plain", "Unit", "Bits"]);
    }
}
