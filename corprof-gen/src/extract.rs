//! Header → IR. Parses the header folder's entry header with libclang (through `clang`), in C++
//! mode with the corprof prelude force-included, and collects every COM interface: the C++
//! `MIDL_INTERFACE("iid") Name : public Base { virtual … }` blocks, which carry IID, base and the
//! methods in vtable order. MIDL attribute comments are read from the source text next to each
//! parameter (comments are not in clang's AST). That text is read as bytes: a header need not be
//! UTF-8 (a Latin-1 `é` in a comment is common), and what the generator looks for in it (`/* [in] */`,
//! `// [OUT]`, an enumerator's initializer) is ASCII, so nothing is lost; a file that cannot be read
//! at all is an error, never an empty text.

use crate::clang::{self, Cursor, CursorKind, Type, TypeKind};
use crate::diag::{Diagnostic, Errors};
use crate::idl::{self, IdlParam};
use crate::ir::{
    CType, EnumDecl, Header, IdType, Interface, Loc, Method, Param, id_typedef, is_flag_enum, not_a_count,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const IID_TAG: &str = "corprof_iid:";
const SAL_TAG: &str = "corprof_sal:";
const GUID_TAG: &str = "corprof_guid:";

/// The folder holding the prelude and the stand-in Windows headers.
pub fn prelude_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("prelude")
}

/// Compiler arguments shared by the interface walk, bindgen and the layout test. The header
/// folders are searched in order (a later one serves `#include_next`).
pub fn clang_args(include_dirs: &[PathBuf], cplusplus: bool) -> Vec<String> {
    let mut args = vec![
        "-x".to_string(),
        if cplusplus { "c++" } else { "c" }.to_string(),
        "-fno-ms-compatibility".to_string(),
        // cor.h wraps a struct in pshpack1.h/poppack.h, which clang warns about across files.
        "-Wno-pragma-pack".to_string(),
        format!("-I{}", prelude_dir().display()),
        "-include".to_string(),
        "corprof_prelude.h".to_string(),
    ];
    args.extend(include_dirs.iter().map(|d| format!("-I{}", d.display())));
    if cplusplus {
        args.push("-std=c++14".to_string());
    }
    args
}

/// The name of the in-memory header that includes every entry header.
pub const UMBRELLA: &str = "corprof_umbrella.h";

/// The in-memory header that includes `headers` in order: the entry headers found, and in the
/// place of an optional one that is absent its stand-in from the prelude (annotations/headers.yaml
/// says which: the metadata typedefs corprof.h leaves to cor.h, for a header set without it).
pub fn umbrella(headers: &[String]) -> String {
    let mut text = String::from("/* corprof umbrella: the entry headers, in order. */\n");
    for h in headers {
        text.push_str(&format!("#include \"{h}\"\n"));
    }
    text
}

/// Parses `headers` (file names inside `include_dir`, included in order) and returns every COM
/// interface they declare.
pub fn parse_header(include_dirs: &[PathBuf], headers: &[String]) -> Result<Header, Errors> {
    let include_dir = include_dirs.first().map(PathBuf::as_path).unwrap_or(Path::new("."));
    let mut errors = Errors::default();
    if let Err(e) = clang::load() {
        errors.push(Diagnostic::error(e));
        return Err(errors);
    }
    let umbrella_path = include_dir.join(UMBRELLA);
    let unsaved = [(umbrella_path.display().to_string(), umbrella(headers))];
    let tu = clang::TranslationUnit::parse(&umbrella_path, &clang_args(include_dirs, true), &unsaved)
        .map_err(|e| Errors::from(Diagnostic::error(e)))?;
    // Paths in clang's text are shown relative to the header folder, as everywhere else.
    let prefix = format!("{}/", include_dir.display());
    for d in tu.diagnostics().into_iter().filter(|d| d.is_error) {
        let text = d.text.replace(&prefix, "");
        errors.push(Diagnostic::error(format!("clang could not parse the header: {text}")));
    }
    errors.check()?;

    let mut walker = Walker {
        include_dir,
        sources: HashMap::new(),
        unreadable: Errors::default(),
        interfaces: Vec::new(),
        guids: HashMap::new(),
        tag_names: Vec::new(),
        without_iid: Vec::new(),
        enums: Vec::new(),
        enum_typedefs: Vec::new(),
        id_types: Vec::new(),
    };
    let mut structs = Vec::new();
    walker.collect(tu.cursor(), &mut structs);
    for c in structs {
        if let Some(iface) = walker.interface(c) {
            walker.interfaces.push(iface);
        }
    }
    // Forward typedefs (`typedef interface IFoo IFoo;`) reach parameters as plain names: mark the
    // ones that name an interface.
    let names: Vec<String> = walker.interfaces.iter().map(|i| i.name.clone()).collect();
    for m in walker.interfaces.iter_mut().flat_map(|i| i.methods.iter_mut()) {
        for p in &mut m.params {
            mark_interfaces(&mut p.ty, &names);
        }
    }
    // Enums get their typedef names: MIDL's tags are replaced (as bindgen does), other typedefs
    // of an enum are aliases.
    for e in &mut walker.enums {
        for (tag, name) in &walker.enum_typedefs {
            if *tag == e.name && tag.starts_with("__MIDL") {
                e.name = name.clone();
            } else if *tag == e.name && !e.aliases.contains(name) && name != tag {
                e.aliases.push(name.clone());
            }
        }
    }
    walker.unreadable.check()?;
    let (types, constants) = crate::decls::collect(tu.cursor(), &walker.interfaces, &walker.enums, &walker.tag_names);
    let mut files: Vec<String> = tu.included_files().into_iter().filter(|f| !f.ends_with(UMBRELLA)).collect();
    let idl = idl_params(include_dirs, headers, &walker.interfaces, &mut files)?;
    Ok(Header {
        interfaces: walker.interfaces,
        files,
        main_header: headers.last().cloned().unwrap_or_default(),
        tag_names: walker.tag_names,
        without_iid: walker.without_iid,
        enums: walker.enums,
        id_types: walker.id_types,
        types,
        constants,
        idl,
        by_name: Default::default(),
    })
}

/// The parameters of the IDL beside each entry header (`corprof.idl` for `corprof.h`, in the
/// first header folder that has one), where every count they name is a parameter the header
/// declares for that method (an IDL of another version may differ; the header wins). The IDL
/// read joins `files`.
fn idl_params(
    include_dirs: &[PathBuf],
    headers: &[String],
    interfaces: &[Interface],
    files: &mut Vec<String>,
) -> Result<HashMap<String, IdlParam>, Errors> {
    let include_dir = include_dirs.first().map(PathBuf::as_path).unwrap_or(Path::new("."));
    let mut out = HashMap::new();
    for h in headers {
        let name = Path::new(h).with_extension("idl");
        let Some(dir) = include_dirs.iter().find(|d| crate::input::exists(&d.join(&name))) else { continue };
        let path = dir.join(&name);
        // The folder's place, not the link's target: a link to /dev/urandom is shown where it is.
        let shown = Path::new(&relative_to(dir, include_dir)).join(&name).display().to_string();
        let bytes = crate::input::read(&path, crate::input::HEADER_CAP)
            .map_err(|e| Errors::from(Diagnostic::error(format!("cannot read {shown}: {e}"))))?;
        files.push(path.display().to_string());
        let params = idl::parse(&shown, &bytes);
        for iface in interfaces {
            for m in &iface.methods {
                let declared = |n: &str| m.params.iter().any(|p| p.name == n);
                for p in &m.params {
                    let key = idl::key(&iface.name, &m.name, &p.name);
                    let Some(found) = params.get(&key) else { continue };
                    // `size_is(cMap)`, `length_is(*pcMap)`: each name must be a parameter here.
                    let names_declared = found.attrs.iter().filter_map(|a| a.split_once('(')).all(|(_, arg)| {
                        let name = arg.trim_end_matches(')').trim().trim_start_matches('*').trim();
                        let is_name = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                        !is_name || declared(name)
                    });
                    if names_declared {
                        out.entry(key).or_insert_with(|| found.clone());
                    }
                }
            }
        }
    }
    Ok(out)
}

struct Walker<'a> {
    include_dir: &'a Path,
    /// Each source file's bytes, as clang's byte offsets index them.
    sources: HashMap<String, Vec<u8>>,
    /// Files clang parsed but that could not be read back for their comments.
    unreadable: Errors,
    interfaces: Vec<Interface>,
    /// `IID_Foo` → `xxxxxxxx-xxxx-…`, from `EXTERN_GUID` declarations.
    guids: HashMap<String, String>,
    tag_names: Vec<(String, String)>,
    without_iid: Vec<(String, Loc)>,
    enums: Vec<EnumDecl>,
    /// (enum tag, typedef name) for every typedef of an enum.
    enum_typedefs: Vec<(String, String)>,
    id_types: Vec<IdType>,
}

impl<'tu> Walker<'_> {
    /// Gathers candidate interface structs and GUID constants, descending into `extern "C"`.
    fn collect(&mut self, cursor: Cursor<'tu>, structs: &mut Vec<Cursor<'tu>>) {
        for c in cursor.children() {
            match c.kind() {
                CursorKind::LinkageSpec => self.collect(c, structs),
                CursorKind::Struct if c.is_definition() && c.spelling() != "IUnknown" => structs.push(c),
                CursorKind::Typedef => {
                    // `typedef enum __MIDL___… { … } COR_PRF_MONITOR;`: remember the readable name.
                    let under = c.typedef_underlying();
                    let tagged = if under.kind() == TypeKind::Elaborated { under.named() } else { under };
                    let tag = tagged.declaration().spelling();
                    if tagged.kind() == TypeKind::Enum {
                        self.enum_typedefs.push((tag.clone(), c.spelling()));
                    }
                    if matches!(tagged.kind(), TypeKind::Record | TypeKind::Enum) && tag.starts_with("__MIDL") {
                        self.tag_names.push((tag, c.spelling()));
                    }
                    if let Some(id) = id_typedef(&c.spelling(), &under.spelling(), void_depth(under))
                        && !self.id_types.contains(&id)
                    {
                        self.id_types.push(id);
                    }
                }
                CursorKind::Enum if c.is_definition() => self.enum_decl(c),
                CursorKind::Var => {
                    let guid = c.annotations().iter().find_map(|a| a.strip_prefix(GUID_TAG).and_then(guid_text));
                    if let Some(text) = guid {
                        self.guids.insert(c.spelling(), text);
                    }
                }
                _ => {}
            }
        }
    }

    /// A named enum and whether it is a flag enum ([`is_flag_enum`]); anonymous ones are skipped.
    fn enum_decl(&mut self, c: Cursor<'_>) {
        let name = c.spelling();
        if name.is_empty() || name.contains(['(', ' ']) || self.enums.iter().any(|e| e.name == name) {
            return;
        }
        let text = self.source(&c.location().file);
        let mut values = Vec::new();
        for k in c.children().into_iter().filter(|k| k.kind() == CursorKind::EnumConstant) {
            let (start, end) = k.extent();
            let decl = String::from_utf8_lossy(text.get(start as usize..end as usize).unwrap_or_default());
            values.push((k.enum_value(), decl.split_once('=').map(|(_, init)| init.to_string())));
        }
        let enumerators: Vec<(i128, Option<&str>)> = values.iter().map(|(v, t)| (*v, t.as_deref())).collect();
        let flags = is_flag_enum(&enumerators);
        let loc = self.loc(&c);
        self.enums.push(EnumDecl { name, aliases: Vec::new(), flags, loc });
    }

    /// The bytes of `file`, read once. One that cannot be read is recorded as an error (and
    /// answers empty, so the walk goes on and reports everything at once).
    fn source(&mut self, file: &str) -> &[u8] {
        let Walker { sources, unreadable, include_dir, .. } = self;
        sources.entry(file.to_string()).or_insert_with(|| {
            crate::input::read(Path::new(file), crate::input::HEADER_CAP).unwrap_or_else(|e| {
                let shown = relative_to(Path::new(file), include_dir);
                unreadable.push(Diagnostic::error(format!("cannot read {shown} for its MIDL comments: {e}")));
                Vec::new()
            })
        })
    }

    fn loc(&self, c: &Cursor<'_>) -> Loc {
        let l = c.location();
        Loc { file: relative_to(Path::new(&l.file), self.include_dir).into(), line: l.line, col: l.column }
    }

    /// A COM interface: a struct with a base and virtual methods (MIDL_INTERFACE or
    /// DECLARE_INTERFACE_), whose IID comes from its annotation or an `IID_<name>` constant.
    fn interface(&mut self, c: Cursor<'_>) -> Option<Interface> {
        let name = c.spelling();
        let mut base = None;
        let mut methods = Vec::new();
        for child in c.children() {
            match child.kind() {
                CursorKind::BaseSpecifier => {
                    base = Some(child.referenced().map(|r| r.spelling()).unwrap_or_else(|| child.spelling()));
                }
                CursorKind::Method if child.is_virtual_method() => methods.push(self.method(child)),
                _ => {}
            }
        }
        base.as_ref()?;
        let iid = c
            .annotations()
            .into_iter()
            .find_map(|a| a.strip_prefix(IID_TAG).map(str::to_owned))
            .or_else(|| self.guids.get(&crate::ir::iid_const(&name)).cloned());
        let Some(iid) = iid else {
            self.without_iid.push((name, self.loc(&c)));
            return None;
        };
        Some(Interface { name, iid, base, methods, loc: self.loc(&c) })
    }

    fn method(&mut self, c: Cursor<'_>) -> Method {
        let params =
            c.children().into_iter().filter(|p| p.kind() == CursorKind::Param).map(|p| self.param(p)).collect();
        Method { name: c.spelling(), ret: ctype(c.result_type()), params, loc: self.loc(&c) }
    }

    fn param(&mut self, c: Cursor<'_>) -> Param {
        let sal = c.annotations().into_iter().filter_map(|a| a.strip_prefix(SAL_TAG).map(str::to_owned)).collect();
        let l = c.location();
        let midl = self.midl_attributes(&l.file, l.offset as usize);
        Param {
            name: c.spelling(),
            declared_array: c.ty().kind() == TypeKind::Array,
            is_count: counts(c.ty()),
            ty: ctype(c.ty()),
            midl,
            sal,
            loc: self.loc(&c),
        }
    }

    /// The MIDL attributes of the parameter whose name starts at `name_offset` of `file`.
    fn midl_attributes(&mut self, file: &str, name_offset: usize) -> Vec<String> {
        midl_attributes(self.source(file), name_offset)
    }
}

/// The `[a][b]` attributes around the parameter whose name starts at byte `name_offset` of
/// `text`: in the `/* … */` comments between the previous `(` or `,` and the name (commas inside
/// SAL argument lists are skipped by tracking parentheses), or cor.h's `// [IN]` after it. Works
/// on bytes: the attributes are ASCII, whatever encoding the rest of the file has.
fn midl_attributes(text: &[u8], name_offset: usize) -> Vec<String> {
    let name_offset = name_offset.min(text.len());
    let mut depth = 0i32;
    let mut start = name_offset;
    while start > 0 {
        match text[start - 1] {
            b')' => depth += 1,
            b'(' if depth == 0 => break,
            b'(' => depth -= 1,
            b',' if depth == 0 => break,
            _ => {}
        }
        start -= 1;
    }
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let mut attrs = Vec::new();
    let mut rest = &text[start..name_offset];
    while let Some(open) = find(rest, b"/*") {
        let Some(close) = find(&rest[open..], b"*/") else {
            break;
        };
        let comment = String::from_utf8_lossy(&rest[open + 2..open + close]);
        for part in comment.split('[').skip(1) {
            if let Some(attr) = part.split(']').next() {
                attrs.push(attr.trim().to_string());
            }
        }
        rest = &rest[open + close + 2..];
    }
    // cor.h writes them after the parameter instead: `mdTypeDef td, // [IN] TypeDef token`.
    let line_end = text[name_offset..].iter().position(|&b| b == b'\n').map_or(text.len(), |n| name_offset + n);
    let line = String::from_utf8_lossy(&text[name_offset..line_end]);
    if let Some(comment) = line.split("//").nth(1) {
        let bracketed = comment.trim_start().strip_prefix('[').and_then(|c| c.split(']').next());
        for attr in bracketed.into_iter().flat_map(|b| b.split([',', ' '])).filter(|a| !a.is_empty()) {
            attrs.push(attr.to_ascii_lowercase());
        }
    }
    attrs
}

/// `0x7dac8207,0xd3ae,0x4c75,0x9b,…` (EXTERN_GUID's parts) → `7DAC8207-D3AE-4C75-9B67-…`.
fn guid_text(parts: &str) -> Option<String> {
    let nums: Vec<u64> = parts
        .split(',')
        .map(|p| {
            let p = p.trim();
            match p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex.trim_end_matches(['L', 'l', 'U', 'u']), 16).ok(),
                None => p.trim_end_matches(['L', 'l', 'U', 'u']).parse().ok(),
            }
        })
        .collect::<Option<_>>()?;
    if nums.len() != 11 {
        return None;
    }
    let tail: String = nums[5..].iter().map(|b| format!("{b:02X}")).collect();
    Some(format!("{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{tail}", nums[0], nums[1], nums[2], nums[3], nums[4]))
}

fn mark_interfaces(ty: &mut CType, names: &[String]) {
    match ty {
        CType::Named(n) if names.contains(n) || n == "IUnknown" => *ty = CType::Interface(n.clone()),
        CType::Pointer { pointee, .. } => mark_interfaces(pointee, names),
        _ => {}
    }
}

/// `path` as seen from `base` (`corprof.h`, `../other/x.h`), for stable messages.
fn relative_to(path: &Path, base: &Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return path.display().to_string();
    }
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    out.display().to_string()
}

/// Converts a clang type to the IR, unfolding typedefs that hide a pointer.
fn ctype(t: Type<'_>) -> CType {
    match t.kind() {
        TypeKind::Void => CType::Void,
        // `FunctionEnter *hook`: C passes the function pointer itself, which bindgen already
        // spells `Option<unsafe extern fn>` under the typedef's name.
        TypeKind::Pointer if t.pointee().canonical().kind() == TypeKind::FunctionProto => match t.pointee().kind() {
            TypeKind::Typedef => CType::FnPtr { typedef: t.pointee().typedef_name(), star: true },
            _ => CType::Pointer { pointee: Box::new(CType::Void), is_const: false },
        },
        TypeKind::Pointer | TypeKind::Reference => pointer_to(t.pointee()),
        TypeKind::Array => pointer_to(t.element()),
        TypeKind::Elaborated => ctype(t.named()),
        TypeKind::Typedef => {
            // Unfold typedefs that hide a typed pointer (LPCBYTE, LPCWSTR); keep opaque
            // handles (HCORENUM, PVOID) by name.
            let canonical = t.canonical();
            // `typedef void (*Callback)(…)`: a function pointer under its own name.
            if canonical.kind() == TypeKind::Pointer && canonical.pointee().kind() == TypeKind::FunctionProto {
                return CType::FnPtr { typedef: t.typedef_name(), star: false };
            }
            // An opaque handle ID (`typedef void **ObjectHandleID`) stays a value by its name.
            let handle = || {
                let under = t.declaration().typedef_underlying();
                id_typedef(&t.typedef_name(), &under.spelling(), void_depth(under)).is_some_and(|i| i.handle)
            };
            if canonical.kind() == TypeKind::Pointer && canonical.pointee().kind() != TypeKind::Void && !handle() {
                ctype(t.declaration().typedef_underlying())
            } else {
                CType::Named(t.typedef_name())
            }
        }
        TypeKind::Record => {
            let decl = t.declaration();
            let name = decl.spelling();
            if decl.annotations().iter().any(|a| a.starts_with(IID_TAG)) {
                CType::Interface(name)
            } else {
                CType::Named(name)
            }
        }
        TypeKind::Builtin => CType::Builtin(t.canonical().spelling().replace("const ", "")),
        _ => CType::Named(t.declaration().spelling()),
    }
}

/// How many pointers deep a pointer to `void` is (`void *` → 1, `void **` → 2; 0: not one).
fn void_depth(t: Type<'_>) -> usize {
    let mut depth = 0;
    let mut cur = t.canonical();
    while cur.kind() == TypeKind::Pointer {
        depth += 1;
        cur = cur.pointee().canonical();
    }
    if cur.kind() == TypeKind::Void { depth } else { 0 }
}

/// A plain integer, or a pointer or reference to one, that can count elements: an integer after
/// typedefs, but not one a typedef names as an ID or handle ([`id_typedef`]: `ClassID` is a
/// `UINT_PTR` yet counts nothing, and the generated code gives it its own type) or as something
/// else that is no count ([`not_a_count`]: `BOOL` is an `int`, `mdTypeDef` a `ULONG32`), a
/// character, an enum, a bool or a pointer.
fn counts(t: Type<'_>) -> bool {
    match t.kind() {
        TypeKind::Pointer | TypeKind::Reference => plain_integer(t.pointee()),
        TypeKind::Elaborated => counts(t.named()),
        // `PULONG`: a typedef hiding the pointer.
        TypeKind::Typedef if t.canonical().kind() == TypeKind::Pointer => counts(t.declaration().typedef_underlying()),
        _ => plain_integer(t),
    }
}

/// An integer (not a character) after typedefs, none of which names an ID, a handle or another
/// thing that counts nothing. The names are the rule: C sees only the `int` under `BOOL`.
fn plain_integer(t: Type<'_>) -> bool {
    match t.kind() {
        TypeKind::Elaborated => plain_integer(t.named()),
        TypeKind::Typedef => {
            let (name, under) = (t.typedef_name(), t.declaration().typedef_underlying());
            not_a_count(&name).is_none()
                && id_typedef(&name, &under.spelling(), void_depth(under)).is_none()
                && plain_integer(under)
        }
        _ => t.canonical().is_integer() && !t.canonical().is_character(),
    }
}

fn pointer_to(pointee: Type<'_>) -> CType {
    CType::Pointer { is_const: pointee.is_const(), pointee: Box::new(ctype(pointee)) }
}
