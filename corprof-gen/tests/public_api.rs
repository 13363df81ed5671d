//! corprof-gen's public API, listed from its sources and compared with `public_api.txt`: every
//! `pub` item reachable through `pub mod`s from lib.rs (functions and methods with their
//! signatures, types with their public fields and variants, constants, re-exports, trait impls).
//! An item added, removed or changed makes this test fail until the list is rewritten
//! (`CORPROF_BLESS=1`), so a change to what users call is deliberate and shows in review; the
//! stages stay `pub(crate)` and never appear here.

use quote::ToTokens;
use std::path::{Path, PathBuf};

/// The checked-in list.
const LIST: &str = "tests/public_api.txt";

/// One line per public item of `items`, declared in module `path` (`corprof_gen::diag`), whose
/// source file is `file` (for `mod x;` declared there).
fn list_items(items: &[syn::Item], path: &str, file: &Path, out: &mut Vec<String>) {
    for item in items {
        if is_test_only(item) {
            continue;
        }
        match item {
            syn::Item::Fn(f) if is_pub(&f.vis) => out.push(signature(path, &f.sig)),
            syn::Item::Const(c) if is_pub(&c.vis) => out.push(format!("const {path}::{}: {}", c.ident, tokens(&c.ty))),
            syn::Item::Static(s) if is_pub(&s.vis) => {
                out.push(format!("static {path}::{}: {}", s.ident, tokens(&s.ty)))
            }
            syn::Item::Type(t) if is_pub(&t.vis) => out.push(format!("type {path}::{} = {}", t.ident, tokens(&t.ty))),
            syn::Item::Trait(t) if is_pub(&t.vis) => out.push(format!("trait {path}::{}", t.ident)),
            syn::Item::Use(u) if is_pub(&u.vis) => out.push(format!("use {path}::{{{}}}", tokens(&u.tree))),
            syn::Item::Struct(s) if is_pub(&s.vis) => {
                out.push(format!("struct {path}::{}{}", s.ident, tokens(&s.generics)));
                for (i, field) in s.fields.iter().enumerate().filter(|(_, f)| is_pub(&f.vis)) {
                    let name = field.ident.as_ref().map_or(i.to_string(), ToString::to_string);
                    out.push(format!("field {path}::{}.{name}: {}", s.ident, tokens(&field.ty)));
                }
            }
            syn::Item::Enum(e) if is_pub(&e.vis) => {
                out.push(format!("enum {path}::{}{}", e.ident, tokens(&e.generics)));
                for v in &e.variants {
                    out.push(format!("variant {path}::{}::{}{}", e.ident, v.ident, tokens(&v.fields)));
                }
            }
            syn::Item::Impl(imp) => {
                let ty = tokens(&imp.self_ty);
                if let Some((_, tr, _)) = &imp.trait_ {
                    out.push(format!("impl {path}: {} for {ty}", tokens(tr)));
                    continue;
                }
                for inner in &imp.items {
                    match inner {
                        syn::ImplItem::Fn(f) if is_pub(&f.vis) => out.push(signature(&format!("{path}::{ty}"), &f.sig)),
                        syn::ImplItem::Const(c) if is_pub(&c.vis) => {
                            out.push(format!("const {path}::{ty}::{}: {}", c.ident, tokens(&c.ty)))
                        }
                        _ => {}
                    }
                }
            }
            syn::Item::Mod(m) if is_pub(&m.vis) => {
                let inner = format!("{path}::{}", m.ident);
                out.push(format!("mod {inner}"));
                match &m.content {
                    Some((_, items)) => list_items(items, &inner, file, out),
                    None => {
                        let sub = module_file(file, &m.ident.to_string());
                        let text = std::fs::read_to_string(&sub).unwrap_or_else(|e| panic!("{}: {e}", sub.display()));
                        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", sub.display()));
                        list_items(&parsed.items, &inner, &sub, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `pub` alone: `pub(crate)` and `pub(super)` are no API.
fn is_pub(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

fn is_test_only(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => return false,
    };
    attrs.iter().any(|a| a.path().is_ident("cfg") && tokens(&a.meta).contains("test"))
}

/// The file of `mod name;` declared in `file`: beside lib.rs and mod.rs, else in the folder
/// named after the declaring file.
fn module_file(file: &Path, name: &str) -> PathBuf {
    let dir = match file.file_stem().and_then(|s| s.to_str()) {
        Some("lib" | "mod") => file.parent().unwrap().to_path_buf(),
        Some(stem) => file.parent().unwrap().join(stem),
        None => panic!("{}", file.display()),
    };
    let flat = dir.join(format!("{name}.rs"));
    if flat.is_file() { flat } else { dir.join(name).join("mod.rs") }
}

/// `fn corprof_gen::x::f(a: A) -> R` (with `const`, `unsafe` before `fn`), for `f` in `path`.
fn signature(path: &str, sig: &syn::Signature) -> String {
    let mut sig = sig.clone();
    // Parameter patterns are no API (`mut cfg` and `cfg` take the same argument).
    for input in sig.inputs.iter_mut() {
        match input {
            syn::FnArg::Typed(t) => {
                if let syn::Pat::Ident(p) = &mut *t.pat {
                    p.mutability = None;
                }
            }
            syn::FnArg::Receiver(r) => r.mutability = None,
        }
    }
    let (name, sig) = (sig.ident.to_string(), tokens(&sig));
    let fn_name = format!("fn {name}");
    match sig.find(&fn_name) {
        Some(at) => format!("{}fn {path}::{}", &sig[..at], &sig[at + 3..]),
        None => format!("fn {path}::{sig}"),
    }
}

/// Tokens as one line, spaced as Rust is usually written (`fn f(x: &str) -> Vec<u8>`).
fn tokens(t: &impl ToTokens) -> String {
    let mut out = String::new();
    write_tokens(t.to_token_stream(), &mut out);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn write_tokens(stream: proc_macro2::TokenStream, out: &mut String) {
    use proc_macro2::{Delimiter, Spacing, TokenTree};
    // After an identifier or literal, the next word needs a space; after `-` of `->`, `>` ends
    // the arrow; after `:` of `::`, the next `:` closes it.
    let (mut word, mut arrow, mut path) = (false, false, false);
    for tree in stream {
        let (was_arrow, was_path) = (std::mem::take(&mut arrow), std::mem::take(&mut path));
        match tree {
            TokenTree::Ident(_) | TokenTree::Literal(_) => {
                if word {
                    out.push(' ');
                }
                out.push_str(&tree.to_string());
                word = true;
                continue;
            }
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => (" { ", " }"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                write_tokens(g.stream(), out);
                out.push_str(close);
            }
            TokenTree::Punct(p) => match p.as_char() {
                ',' | ';' => out.push_str(&format!("{} ", p.as_char())),
                '-' if p.spacing() == Spacing::Joint => {
                    out.push_str(" -");
                    arrow = true;
                }
                '>' if was_arrow => out.push_str("> "),
                ':' if p.spacing() == Spacing::Joint => {
                    out.push(':');
                    path = true;
                }
                ':' if was_path => out.push(':'),
                ':' => out.push_str(": "),
                '=' | '+' => out.push_str(&format!(" {} ", p.as_char())),
                c => out.push(c),
            },
        }
        word = false;
    }
}

/// The public API of the crate whose lib.rs is `lib`.
fn public_api(lib: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(lib).unwrap();
    let file = syn::parse_file(&text).unwrap();
    let mut out = Vec::new();
    list_items(&file.items, "corprof_gen", lib, &mut out);
    out
}

#[test]
fn the_public_api_is_the_listed_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let actual = public_api(&root.join("src/lib.rs")).join("\n") + "\n";
    if std::env::var_os("CORPROF_BLESS").is_some() {
        std::fs::write(root.join(LIST), &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(root.join(LIST)).unwrap_or_default();
    let (old, new): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let removed: Vec<&&str> = old.iter().filter(|l| !new.contains(l)).collect();
    let added: Vec<&&str> = new.iter().filter(|l| !old.contains(l)).collect();
    assert!(
        expected == actual,
        "corprof-gen's public API changed (rewrite {LIST} with CORPROF_BLESS=1 if that is meant):\n\
         removed: {removed:#?}\nadded: {added:#?}"
    );
}

/// The lister sees what it must: a `pub` item added to a public module is a new line, a
/// `pub(crate)` one, a private module's and a test's are none.
#[test]
fn the_list_has_public_items_only() {
    let dir = std::env::temp_dir().join(format!("corprof-public-api-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("shown")).unwrap();
    let lib = dir.join("lib.rs");
    std::fs::write(
        &lib,
        "pub mod shown; mod hidden; pub(crate) fn inner() {}\n\
         pub struct S { pub a: u32, b: u32 }\n\
         impl S { pub fn get(&self) -> u32 { self.a } fn private(&self) {} }\n\
         #[cfg(test)] pub fn only_in_tests() {}\n",
    )
    .unwrap();
    std::fs::write(dir.join("shown.rs"), "pub mod deeper; pub const N: usize = 1;\n").unwrap();
    std::fs::write(dir.join("shown/deeper.rs"), "pub fn f(mut x: u8) -> u8 { x }\n").unwrap();
    let api = public_api(&lib);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        api,
        [
            "mod corprof_gen::shown",
            "mod corprof_gen::shown::deeper",
            "fn corprof_gen::shown::deeper::f(x: u8) -> u8",
            "const corprof_gen::shown::N: usize",
            "struct corprof_gen::S",
            "field corprof_gen::S.a: u32",
            "fn corprof_gen::S::get(&self) -> u32",
        ]
    );
}
