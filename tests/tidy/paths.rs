//! Every `path::name` written in backticks names an item that exists: in the comments and docs
//! of every .rs file, and in the READMEs, docs/guide/*.md, ARCHITECTURE.md and TESTING.md. Names
//! drift when code moves (`wrap::Negotiated` after `Negotiated` moved to `wrapper_support`), and
//! nothing else reads plain backticks: rustdoc checks links only.
//!
//! A path resolves by a name index built from the sources (syn), not by rustc's resolution:
//! each module, type and trait is a container of the names declared in it (items, fields,
//! variants, methods of its impls, what its `use`s bring in, and through a glob, a trait impl or
//! a vtable's `base__`, another container's names); containers of the same name are one. So
//! `a::b::c` holds when `a` is a container holding `b` and `b` one holding `c`. The header's
//! interfaces and the wrappers' methods come from the bindings the crate generated; std, core
//! and alloc paths are read in the toolchain's own docs (the rust-docs component); the C# test
//! apps' classes from their sources; other crates' paths are taken as written.

use crate::lexer::{code_spans, comment_blocks, lex, markdown_blocks};
use crate::{Repo, Violation, package_dir, report};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Names of other code bases, written as those write them: CoreCLR's C++ (its `src/coreclr/vm`),
/// the runtime's C# and COM's own interfaces this repository does not declare.
const FOREIGN: &[&str] = &[
    "Thread::OnThreadTerminate",
    "ThreadStore::RemoveThread",
    "ThreadSuspend::RestartEE",
    "ReJitManager::UpdateJitInlinerActiveILVersions",
    "ProfilerThreadEnum::Init",
];

/// Spans that stand for any name, as a pattern does (`path::name` is this rule's own).
const PLACEHOLDERS: &[&str] =
    &["interface::method", "iface::method", "Interface::Method::param", "IFoo::Bar", "path::name"];

/// Generated text, whose names are its input's: neither read for spans nor indexed.
const GENERATED: &[&str] = &["corprof-gen/tests/fixtures/"];

/// Where the rule does not look besides: this test, whose docs and cases name made-up and drifted
/// paths on purpose.
const NOT_READ: &[&str] = &["corprof-gen/tests/fixtures/", "tests/tidy/"];

/// The Markdown files the rule reads, besides every .rs file's comments: the READMEs, the guide,
/// ARCHITECTURE.md and TESTING.md. Not CHANGELOG.md and BENCHMARKS.md, which are history (they
/// name items as they were), nor CONFORMANCE.md, which scripts/conformance-report writes.
fn markdown_files(repo: &Repo) -> Vec<&str> {
    let mut files: Vec<&str> = repo.files("docs/guide/", ".md").collect();
    files.extend(repo.files("", "README.md").filter(|f| !NOT_READ.iter().any(|n| f.starts_with(n))));
    files.extend(["ARCHITECTURE.md", "TESTING.md"]);
    files
}

/// The names the workspace declares, by container.
#[derive(Default)]
pub struct Index {
    members: HashMap<String, HashSet<String>>,
    /// A container's further names: those of these containers.
    more: HashMap<String, HashSet<String>>,
    containers: HashSet<String>,
}

/// The methods a `#[derive(…)]` of std gives.
const DERIVED: &[(&str, &[&str])] = &[
    ("Default", &["default"]),
    ("Clone", &["clone", "clone_from"]),
    ("Debug", &["fmt"]),
    ("PartialEq", &["eq", "ne"]),
    ("PartialOrd", &["partial_cmp", "lt", "le", "gt", "ge"]),
    ("Ord", &["cmp", "max", "min", "clamp"]),
    ("Hash", &["hash"]),
];

/// The last identifier of a type (`Foo` of `a::Foo<T>`, `&mut Foo`).
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        syn::Type::Group(g) => type_name(&g.elem),
        _ => None,
    }
}

impl Index {
    fn add(&mut self, container: &str, member: impl ToString) {
        self.members.entry(container.to_string()).or_default().insert(member.to_string());
    }

    fn container(&mut self, name: impl ToString) {
        self.containers.insert(name.to_string());
    }

    fn link(&mut self, container: &str, other: impl ToString) {
        self.more.entry(container.to_string()).or_default().insert(other.to_string());
    }

    pub fn is_container(&self, name: &str) -> bool {
        self.containers.contains(name)
    }

    /// Whether `container`, or a container it takes names from, holds `member`.
    pub fn has(&self, container: &str, member: &str) -> bool {
        let mut seen = HashSet::new();
        let mut todo = vec![container];
        while let Some(c) = todo.pop() {
            if !seen.insert(c) {
                continue;
            }
            if self.members.get(c).is_some_and(|m| m.contains(member)) {
                return true;
            }
            todo.extend(self.more.get(c).into_iter().flatten().map(String::as_str));
        }
        false
    }

    /// Whether any container holds `member`.
    pub fn anywhere(&self, member: &str) -> bool {
        self.containers.contains(member) || self.members.values().any(|m| m.contains(member))
    }

    fn derives(&mut self, ty: &str, attrs: &[syn::Attribute]) {
        for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
            let _ = attr.parse_nested_meta(|meta| {
                if let Some(name) = meta.path.segments.last().map(|s| s.ident.to_string())
                    && let Some((_, methods)) = DERIVED.iter().find(|(d, _)| *d == name)
                {
                    for m in *methods {
                        self.add(ty, m);
                    }
                }
                Ok(())
            });
        }
    }

    fn fields(&mut self, ty: &str, fields: &syn::Fields) {
        for f in fields {
            if let Some(name) = &f.ident {
                self.add(ty, name);
                // A vtable's first field is its base interface's vtable.
                if name == "base__"
                    && let Some(base) = type_name(&f.ty)
                {
                    self.link(ty, base);
                }
            }
        }
    }

    fn use_tree(&mut self, module: &str, crate_name: &str, tree: &syn::UseTree, last: Option<String>) {
        match tree {
            syn::UseTree::Path(p) => self.use_tree(module, crate_name, &p.tree, Some(p.ident.to_string())),
            syn::UseTree::Name(n) if n.ident == "self" => {
                if let Some(last) = last {
                    self.add(module, last);
                }
            }
            syn::UseTree::Name(n) => self.add(module, &n.ident),
            syn::UseTree::Rename(r) => {
                self.add(module, &r.rename);
                self.container(&r.rename);
                self.link(&r.rename.to_string(), &r.ident);
            }
            syn::UseTree::Glob(_) => match last.as_deref() {
                Some("super" | "self") | None => {}
                Some("crate") => self.link(module, crate_name),
                Some(from) => self.link(module, from),
            },
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(module, crate_name, t, last.clone());
                }
            }
        }
    }

    fn items(&mut self, module: &str, crate_name: &str, items: &[syn::Item]) {
        use syn::Item;
        self.container(module);
        for item in items {
            match item {
                Item::Fn(f) => self.add(module, &f.sig.ident),
                Item::Struct(s) => {
                    let name = s.ident.to_string();
                    self.add(module, &name);
                    self.container(&name);
                    self.fields(&name, &s.fields);
                    self.derives(&name, &s.attrs);
                    if let Some(iface) = name.strip_suffix("_Vtbl") {
                        self.container(iface);
                        self.link(iface, &name);
                    }
                }
                Item::Union(u) => {
                    let name = u.ident.to_string();
                    self.add(module, &name);
                    self.container(&name);
                    for f in &u.fields.named {
                        self.add(&name, f.ident.as_ref().expect("a named field"));
                    }
                }
                Item::Enum(e) => {
                    let name = e.ident.to_string();
                    self.add(module, &name);
                    self.container(&name);
                    self.derives(&name, &e.attrs);
                    for v in &e.variants {
                        self.add(&name, &v.ident);
                    }
                }
                Item::Trait(t) => {
                    let name = t.ident.to_string();
                    self.add(module, &name);
                    self.container(&name);
                    for i in &t.items {
                        match i {
                            syn::TraitItem::Fn(f) => self.add(&name, &f.sig.ident),
                            syn::TraitItem::Const(c) => self.add(&name, &c.ident),
                            syn::TraitItem::Type(ty) => self.add(&name, &ty.ident),
                            _ => {}
                        }
                    }
                    for bound in &t.supertraits {
                        if let syn::TypeParamBound::Trait(b) = bound
                            && let Some(s) = b.path.segments.last()
                        {
                            self.link(&name, &s.ident);
                        }
                    }
                }
                Item::Impl(i) => {
                    let Some(name) = type_name(&i.self_ty) else { continue };
                    self.container(&name);
                    if let Some((_, path, _)) = &i.trait_
                        && let Some(t) = path.segments.last()
                    {
                        self.link(&name, &t.ident);
                    }
                    for ii in &i.items {
                        match ii {
                            syn::ImplItem::Fn(f) => self.add(&name, &f.sig.ident),
                            syn::ImplItem::Const(c) => self.add(&name, &c.ident),
                            syn::ImplItem::Type(ty) => {
                                self.add(&name, &ty.ident);
                                // `Deref`'s target lends its names.
                                if ty.ident == "Target"
                                    && let Some(target) = type_name(&ty.ty)
                                {
                                    self.link(&name, target);
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Item::Mod(m) => {
                    let name = m.ident.to_string();
                    self.add(module, &name);
                    self.container(&name);
                    if let Some((_, content)) = &m.content {
                        self.items(&name, crate_name, content);
                    }
                }
                Item::Const(c) => self.add(module, &c.ident),
                Item::Static(s) => self.add(module, &s.ident),
                Item::Type(t) => {
                    self.add(module, &t.ident);
                    self.container(&t.ident);
                    if let Some(target) = type_name(&t.ty) {
                        self.link(&t.ident.to_string(), target);
                    }
                }
                Item::Macro(m) => {
                    if let Some(name) = &m.ident {
                        self.add(module, name);
                    }
                }
                Item::Use(u) => self.use_tree(module, crate_name, &u.tree, None),
                Item::ForeignMod(f) => {
                    for fi in &f.items {
                        match fi {
                            syn::ForeignItem::Fn(f) => self.add(module, &f.sig.ident),
                            syn::ForeignItem::Static(s) => self.add(module, &s.ident),
                            _ => {}
                        }
                    }
                }
                Item::ExternCrate(e) => self.add(module, e.rename.as_ref().map_or(&e.ident, |(_, r)| r)),
                _ => {}
            }
        }
    }
}

/// The crate `file` belongs to, as `crate::` names it: a test, bench or example target's own
/// name, else its package's library name.
pub fn crate_of(file: &str) -> String {
    let dir = package_dir(file);
    let rel = file[dir.len()..].trim_start_matches('/');
    for kind in ["tests/", "benches/", "examples/"] {
        if let Some(rest) = rel.strip_prefix(kind) {
            let target = rest.split('/').next().unwrap_or(rest);
            return target.trim_end_matches(".rs").replace('-', "_");
        }
    }
    package_crate(dir)
}

/// The library crate name of the package in `dir`.
fn package_crate(dir: &str) -> String {
    if dir.is_empty() {
        return "corprof".to_string();
    }
    let manifest = Repo::get().read(&format!("{dir}/Cargo.toml"));
    let mut section = "";
    let mut name = None;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if let Some(v) = line.strip_prefix("name").map(str::trim_start).and_then(|l| l.strip_prefix('=')) {
            let v = v.trim().trim_matches('"').replace('-', "_");
            if section == "[lib]" {
                return v;
            }
            if section == "[package]" {
                name = Some(v);
            }
        }
    }
    name.unwrap_or_default()
}

/// The module a file is: its crate for a crate root, its folder for a `mod.rs`, else its name.
fn module_of(file: &str) -> String {
    let path = std::path::Path::new(file);
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let parent = path.parent().and_then(|p| p.file_name()).and_then(|s| s.to_str()).unwrap_or_default();
    match stem {
        "lib" | "main" if parent == "src" => crate_of(file),
        "main" | "mod" => parent.replace('-', "_"),
        _ => stem.to_string(),
    }
}

/// The workspace's name index (what failed to parse is a violation of the rule).
fn index() -> &'static (Index, Vec<Violation>) {
    static INDEX: OnceLock<(Index, Vec<Violation>)> = OnceLock::new();
    INDEX.get_or_init(|| {
        let repo = Repo::get();
        let mut index = Index::default();
        let mut broken = Vec::new();
        for file in repo.files("", ".rs").filter(|f| !GENERATED.iter().any(|g| f.starts_with(g))) {
            match syn::parse_file(&repo.read(file)) {
                Ok(parsed) => index.items(&module_of(file), &crate_of(file), &parsed.items),
                Err(e) => broken.push(Violation::new(file, 1, format!("syn cannot parse it: {e}"))),
            }
        }
        let bindings = concat!(env!("OUT_DIR"), "/corprof_bindings.rs");
        let text = std::fs::read_to_string(bindings).expect("the generated bindings");
        let parsed = syn::parse_file(&text).expect("the generated bindings parse");
        index.items("bindings", "corprof", &parsed.items);
        // The C# apps' classes, each holding every name its file spells (methods, fields).
        for file in repo.files("", ".cs") {
            let text = repo.read(file);
            let words: Vec<&str> =
                text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
            for pair in words.windows(2) {
                if matches!(pair[0], "class" | "struct" | "interface" | "enum" | "record") {
                    index.container(pair[1]);
                    for w in &words {
                        index.add(pair[1], w);
                    }
                }
            }
        }
        (index, broken)
    })
}

/// Other crates' names (everything Cargo.lock holds that is not the workspace's): their paths are
/// not checked.
fn external_crates() -> &'static HashSet<String> {
    static CRATES: OnceLock<HashSet<String>> = OnceLock::new();
    CRATES.get_or_init(|| {
        let repo = Repo::get();
        let ours: HashSet<String> = repo.files("", "Cargo.toml").map(|m| package_crate(package_dir(m))).collect();
        repo.read("Cargo.lock")
            .lines()
            .filter_map(|l| l.strip_prefix("name = \""))
            .map(|n| n.trim_end_matches('"').replace('-', "_"))
            .filter(|n| !ours.contains(n))
            .collect()
    })
}

/// std, core and alloc as the toolchain's rust-docs describe them.
pub struct StdDocs {
    html: PathBuf,
    /// `(crate, "sync::Mutex")` → its page, relative to the crate's folder.
    items: HashMap<(String, String), String>,
    /// An item's last name → its `(crate, page)`s.
    by_name: HashMap<String, Vec<(String, String)>>,
    /// Pages read, by path.
    pages: Mutex<HashMap<PathBuf, String>>,
}

const STD_CRATES: [&str; 3] = ["std", "core", "alloc"];

impl StdDocs {
    fn load() -> Option<StdDocs> {
        let sysroot = std::process::Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
        let html = PathBuf::from(String::from_utf8(sysroot.stdout).ok()?.trim()).join("share/doc/rust/html");
        let mut docs = StdDocs { html, items: HashMap::new(), by_name: HashMap::new(), pages: Mutex::default() };
        for krate in STD_CRATES {
            let all = std::fs::read_to_string(docs.html.join(krate).join("all.html")).ok()?;
            for entry in all.split("<a href=\"").skip(1) {
                let Some((page, rest)) = entry.split_once("\">") else { continue };
                let Some((path, _)) = rest.split_once('<') else { continue };
                if !page.ends_with(".html") || page.contains("://") || path.contains(' ') {
                    continue;
                }
                let name = path.rsplit("::").next().unwrap_or(path).to_string();
                docs.items.insert((krate.to_string(), path.to_string()), page.to_string());
                docs.by_name.entry(name).or_default().push((krate.to_string(), page.to_string()));
            }
        }
        Some(docs)
    }

    /// Whether the page of `krate`'s item at `page` documents `member`.
    fn page_has(&self, krate: &str, page: &str, member: &str) -> bool {
        let path = self.html.join(krate).join(page);
        let mut pages = corprof::sync::lock(&self.pages);
        let text = pages.entry(path.clone()).or_insert_with(|| std::fs::read_to_string(&path).unwrap_or_default());
        ["method", "tymethod", "variant", "structfield", "associatedconstant", "associatedtype"]
            .iter()
            .any(|kind| text.contains(&format!("id=\"{kind}.{member}\"")))
    }

    /// `rest` under `krate` (`std::sync::Mutex::lock` as `("std", ["sync", "Mutex", "lock"])`).
    fn resolve(&self, krate: &str, rest: &[&str]) -> Result<(), String> {
        for i in (1..=rest.len()).rev() {
            let path = rest[..i].join("::");
            if let Some(page) = self.items.get(&(krate.to_string(), path.clone())) {
                return match &rest[i..] {
                    [] => Ok(()),
                    [member] if self.page_has(krate, page, member) => Ok(()),
                    _ => Err(format!("{krate}::{path} has no `{}`", rest[i..].join("::"))),
                };
            }
            let module = format!("{path}::");
            if self.items.keys().any(|(k, p)| k == krate && p.starts_with(&module)) {
                return match &rest[i..] {
                    [] => Ok(()),
                    _ => Err(format!("{krate}::{path} has no `{}`", rest[i..].join("::"))),
                };
            }
        }
        Err(format!("{krate} has no `{}`", rest.join("::")))
    }

    /// A path starting with a std item's own name (`Mutex::lock`).
    fn resolve_bare(&self, segs: &[&str]) -> Option<Result<(), String>> {
        let candidates = self.by_name.get(segs[0])?;
        Some(match segs {
            [_] => Ok(()),
            [_, member] if candidates.iter().any(|(k, page)| self.page_has(k, page, member)) => Ok(()),
            _ => Err(format!("no std item `{}`", segs.join("::"))),
        })
    }
}

fn std_docs() -> Option<&'static StdDocs> {
    static DOCS: OnceLock<Option<StdDocs>> = OnceLock::new();
    DOCS.get_or_init(|| {
        let docs = StdDocs::load();
        if docs.is_none() {
            // scripts/test's set-up installs the component; anywhere else std's paths go unchecked.
            assert!(
                std::env::var_os("CORPROF_REQUIRE_TOOLS").is_none(),
                "std's docs are missing (rustup component add rust-docs), and CORPROF_REQUIRE_TOOLS is set"
            );
            eprintln!("tidy: no rust-docs in the toolchain: paths into std, core and alloc are not checked");
        }
        docs
    })
    .as_ref()
}

/// Where a span was written: its crate (for `crate::`) and the type `Self` means there.
#[derive(Clone, Debug, Default)]
pub struct Place {
    pub crate_name: String,
    pub self_type: Option<String>,
}

/// Whether `s` names a path: identifiers joined by `::` (at least one), maybe led by `::`, maybe
/// ending in `()` or `!`. Its segments, or `None`.
pub fn path_segments(s: &str) -> Option<Vec<&str>> {
    let s = s.strip_prefix("::").unwrap_or(s);
    let s = s.strip_suffix("()").or_else(|| s.strip_suffix('!')).unwrap_or(s);
    let segs: Vec<&str> = s.split("::").collect();
    let ident = |w: &str| {
        let mut c = w.chars();
        c.next().is_some_and(|f| f.is_alphabetic() || f == '_') && c.all(|ch| ch.is_alphanumeric() || ch == '_')
    };
    (segs.len() >= 2 && segs.iter().all(|w| ident(w))).then_some(segs)
}

/// The paths a span holds: itself, or each of a group's (`a::{b, c}`).
pub fn span_paths(span: &str) -> Vec<String> {
    if let Some((head, group)) = span.split_once("::{")
        && let Some(group) = group.strip_suffix('}')
        && !group.contains('{')
    {
        return group.split(',').map(|item| format!("{head}::{}", item.trim())).collect();
    }
    vec![span.to_string()]
}

/// Whether `name` is a generic parameter (`T`, `I`, `W__`) rather than an item.
fn is_type_parameter(name: &str) -> bool {
    (name.len() <= 2 && name.chars().all(|c| c.is_ascii_uppercase())) || name.ends_with("__")
}

/// Checks `segs` written at `place`; `Err` says what is missing.
pub fn resolve(index: &Index, segs: &[&str], place: &Place) -> Result<(), String> {
    let mut segs: Vec<&str> = segs.to_vec();
    while matches!(segs.first(), Some(&("self" | "super"))) {
        segs.remove(0);
    }
    if segs.first() == Some(&"crate") {
        if place.crate_name.is_empty() {
            segs.remove(0);
        } else {
            segs[0] = &place.crate_name;
        }
    }
    let any_has = |name: &str| index.anywhere(name) || std_docs().is_none_or(|d| d.by_name.contains_key(name));
    let Some(&first) = segs.first() else { return Ok(()) };
    if segs.len() == 1 {
        return if any_has(first) { Ok(()) } else { Err(format!("no item `{first}`")) };
    }
    if first == "Self" || is_type_parameter(first) {
        let own = place.self_type.as_deref().filter(|_| first == "Self");
        return match own {
            Some(ty) if index.has(ty, segs[1]) || !index.is_container(ty) => Ok(()),
            Some(ty) => Err(format!("`Self` ({ty}) has no `{}`", segs[1])),
            None if segs[1..].iter().all(|s| any_has(s)) => Ok(()),
            None => Err(format!("no item `{}`", segs[1])),
        };
    }
    if STD_CRATES.contains(&first) {
        return std_docs().map_or(Ok(()), |d| d.resolve(first, &segs[1..]));
    }
    if index.is_container(first) {
        for pair in segs.windows(2) {
            if !index.has(pair[0], pair[1]) {
                // A name the workspace shares with std (`Error`) or another crate may mean theirs.
                if external_crates().contains(first) || std_docs().and_then(|d| d.resolve_bare(&segs)) == Some(Ok(())) {
                    return Ok(());
                }
                return Err(format!("`{}` has no item `{}`", pair[0], pair[1]));
            }
        }
        return Ok(());
    }
    if external_crates().contains(first) {
        return Ok(());
    }
    match std_docs().and_then(|d| d.resolve_bare(&segs)) {
        Some(r) => r,
        None if std_docs().is_none() && !index.anywhere(first) => Ok(()),
        None => Err(format!("no item `{first}`")),
    }
}

/// The type `Self` means at `line` (1-based) of a file's code: the item a doc comment there
/// documents when it is a type or an impl, else the impl, trait or type around the line.
pub fn self_type_at(code_lines: &[&str], line: usize) -> Option<String> {
    let strip = |l: &str| {
        let mut t = l.trim_start();
        for prefix in ["pub(crate) ", "pub(super) ", "pub ", "unsafe ", "default "] {
            t = t.strip_prefix(prefix).unwrap_or(t);
        }
        t.to_string()
    };
    // The text after the `<…>` that `s` (just past a `<`) closes.
    let after_generics = |s: &str| -> Option<String> {
        let mut depth = 1;
        let end = s.char_indices().find(|&(_, c)| {
            depth += match c {
                '<' => 1,
                '>' => -1,
                _ => 0,
            };
            depth == 0
        })?;
        Some(s[end.0 + 1..].to_string())
    };
    let name_of = |decl: &str| -> Option<String> {
        let decl = strip(decl);
        let rest = if let Some(rest) = decl.strip_prefix("impl") {
            // `impl<…>`'s parameters skipped, then the type after `for`, if any.
            let rest = match rest.strip_prefix('<') {
                Some(params) => after_generics(params)?,
                None => rest.strip_prefix(' ')?.to_string(),
            };
            rest.split_once(" for ").map_or(rest.clone(), |(_, ty)| ty.to_string())
        } else {
            let (keyword, rest) = decl.split_once(' ')?;
            if !matches!(keyword, "struct" | "enum" | "union" | "trait") {
                return None;
            }
            rest.to_string()
        };
        let rest = rest.trim_start().trim_start_matches('&').trim_start_matches("mut ").trim_start_matches("dyn ");
        let path: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
        path.rsplit("::").next().filter(|n| !n.is_empty()).map(str::to_string)
    };
    let is_code = |l: &str| !l.trim().is_empty() && !l.trim_start().starts_with("#[");
    // The documented item: the next line of code.
    let next = (line..code_lines.len()).find(|&i| is_code(code_lines[i]))?;
    if let Some(name) = name_of(code_lines[next]) {
        return Some(name);
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut depth = indent(code_lines[next]);
    for l in code_lines[..line.saturating_sub(1).min(code_lines.len())].iter().rev().filter(|l| is_code(l)) {
        if indent(l) < depth {
            if let Some(name) = name_of(l) {
                return Some(name);
            }
            depth = indent(l);
            if depth == 0 {
                break;
            }
        }
    }
    None
}

/// One span the rule checks.
struct Written {
    file: String,
    line: usize,
    span: String,
    place: Place,
}

/// Every `path::name` span of the repository's Rust comments and chosen Markdown files.
fn written() -> Vec<Written> {
    let repo = Repo::get();
    let mut out = Vec::new();
    for file in repo.files("", ".rs").filter(|f| !NOT_READ.iter().any(|g| f.starts_with(g))) {
        let lexed = lex(&repo.read(file));
        let code_lines: Vec<&str> = lexed.code.lines().collect();
        let crate_name = crate_of(file);
        for block in comment_blocks(&lexed.comments) {
            for span in code_spans(&block) {
                if span_paths(&span.text).iter().any(|p| path_segments(p).is_some()) {
                    let place =
                        Place { crate_name: crate_name.clone(), self_type: self_type_at(&code_lines, span.line) };
                    out.push(Written { file: file.to_string(), line: span.line, span: span.text, place });
                }
            }
        }
    }
    for file in markdown_files(repo) {
        for block in markdown_blocks(&repo.read(file)) {
            for span in code_spans(&block) {
                // Which crate a document's `crate::` means, the sentence says: any crate's.
                let place = Place { crate_name: String::new(), self_type: None };
                out.push(Written { file: file.to_string(), line: span.line, span: span.text, place });
            }
        }
    }
    out
}

/// Every `path::name` written in backticks, in a Rust comment or doc or in README.md,
/// docs/guide/*.md and ARCHITECTURE.md, names an item that exists (the module docs say how it
/// is looked up). A name that moved is written as it is now, or the sentence says it in words.
#[test]
fn every_path_in_backticks_resolves() {
    let (index, broken) = index();
    let mut found: Vec<Violation> = broken.iter().map(|v| Violation::new(&v.file, v.line, v.what.clone())).collect();
    for w in written() {
        for path in span_paths(&w.span) {
            let Some(segs) = path_segments(&path) else { continue };
            if FOREIGN.contains(&path.as_str()) || PLACEHOLDERS.contains(&path.as_str()) {
                continue;
            }
            if let Err(why) = resolve(index, &segs, &w.place) {
                found.push(Violation::new(&w.file, w.line, format!("`{path}`: {why}")));
            }
        }
    }
    report("A path in backticks names nothing (write the current name, or say it in words):", found);
}

#[test]
fn paths_are_read_from_spans() {
    assert_eq!(path_segments("corprof::sync::lock"), Some(vec!["corprof", "sync", "lock"]));
    assert_eq!(path_segments("::core::ffi::c_int"), Some(vec!["core", "ffi", "c_int"]));
    assert_eq!(path_segments("Suspension::threads()"), Some(vec!["Suspension", "threads"]));
    assert_eq!(path_segments("corprof::export_profiler!"), Some(vec!["corprof", "export_profiler"]));
    for not in ["lock", "a::b c", "Vec<u8>::new", "lib.rs::load_all", "a::*", "a::"] {
        assert_eq!(path_segments(not), None, "{not}");
    }
    assert_eq!(span_paths("sync::{lock, read}"), ["sync::lock", "sync::read"]);
}

#[test]
fn self_is_the_type_around_or_below() {
    let code = "impl<T: Copy> Foo<T> for Bar {\n    \n    fn x() {}\n}\n\npub struct Baz;\n\nfn free() {}\n";
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(self_type_at(&lines, 2).as_deref(), Some("Bar"));
    assert_eq!(self_type_at(&lines, 5).as_deref(), Some("Baz"));
    assert_eq!(self_type_at(&lines, 7), None);
}

/// The rule finds a drifted name, and takes the current one: the index knows where things are.
#[test]
fn a_drifted_name_is_found_and_the_current_one_resolves() {
    let (index, _) = index();
    let place = Place { crate_name: "corprof".into(), self_type: None };
    let check = |p: &str| resolve(index, &path_segments(p).unwrap(), &place);
    for good in [
        "corprof::sync::lock",
        "crate::sync::lock",
        "wrapper_support::ask_then_fill",
        "ProfilerInfo::get_function_info",
        "ICorProfilerInfo14::EventPipeCreateProvider2",
        "ICorProfilerInfo14::GetFunctionInfo",
        "COR_PRF_MONITOR::GC",
        "hooks::ElementValue::Reference",
        "std::sync::Mutex::lock",
        "Mutex::lock",
        "Option::map",
        "PoisonError::into_inner",
        "::core::ffi::c_int",
        "quote::quote",
    ] {
        assert_eq!(check(good), Ok(()), "{good}");
    }
    for bad in [
        "wrap::ask_then_fill",
        "wrap::Negotiated",
        "params::raw::out_bool",
        "std::sync::Mutex::lock_it",
        "corprof::nothing",
    ] {
        assert!(check(bad).is_err(), "{bad} resolved");
    }
}
