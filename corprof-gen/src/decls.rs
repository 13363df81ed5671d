//! The header's named types and enumerators, for `corprof-gen diff`: takes the parsed translation
//! unit and gives [`TypeDecl`]s (structs, enums, function types, function pointers, other
//! typedefs; interfaces are left to the interface walk) and [`Constant`]s (every enumerator with
//! its value), each in header order. Declarations of the prelude (the Windows/MIDL vocabulary
//! corprof-gen supplies) are not the header's and are left out.

use crate::clang::{Cursor, CursorKind, Type, TypeKind};
use crate::extract::prelude_dir;
use crate::ir::{Constant, EnumDecl, Interface, TypeDecl};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Walks the top level (and `extern "C"` blocks) of the unit.
///
/// `tag_names` maps MIDL's enum tags to their typedef names, which `enums` (for whether an enum is
/// a flag enum, shown in hex) goes by.
pub fn collect(
    root: Cursor<'_>,
    interfaces: &[Interface],
    enums: &[EnumDecl],
    tag_names: &[(String, String)],
) -> (Vec<TypeDecl>, Vec<Constant>) {
    // Every name is looked up in a table: a header of many declarations (a hostile one within
    // `input::HEADER_CAP`) takes time in proportion to their number.
    let mut out = Decls {
        prelude: prelude_dir(),
        interfaces: interfaces.iter().map(|i| i.name.as_str()).collect(),
        tag_names: tag_names.iter().map(|(t, n)| (t.as_str(), n.as_str())).collect(),
        flag_enums: enums
            .iter()
            .filter(|e| e.flags)
            .flat_map(|e| std::iter::once(e.name.as_str()).chain(e.aliases.iter().map(String::as_str)))
            .collect(),
        types: Vec::new(),
        type_index: HashMap::new(),
        constants: Vec::new(),
        constant_names: HashSet::new(),
    };
    out.walk(root);
    (out.types, out.constants)
}

struct Decls<'a> {
    prelude: std::path::PathBuf,
    interfaces: HashSet<&'a str>,
    tag_names: HashMap<&'a str, &'a str>,
    /// The names (and aliases) of the flag enums.
    flag_enums: HashSet<&'a str>,
    types: Vec<TypeDecl>,
    /// Each type's index in `types`, by name.
    type_index: HashMap<String, usize>,
    constants: Vec<Constant>,
    constant_names: HashSet<String>,
}

impl Decls<'_> {
    fn walk(&mut self, cursor: Cursor<'_>) {
        for c in cursor.children() {
            if c.kind() != CursorKind::LinkageSpec && Path::new(&c.location().file).starts_with(&self.prelude) {
                continue;
            }
            match c.kind() {
                CursorKind::LinkageSpec => self.walk(c),
                CursorKind::Typedef => {
                    let name = c.spelling();
                    // `typedef interface IFoo IFoo;` names an interface: the interface diff says it.
                    if self.interfaces.contains(name.as_str()) {
                        continue;
                    }
                    let under = c.typedef_underlying();
                    let tagged = if under.kind() == TypeKind::Elaborated { under.named() } else { under };
                    let is_interface = |t: Type<'_>| self.interfaces.contains(t.declaration().spelling().as_str());
                    if tagged.kind() == TypeKind::Record && is_interface(tagged) {
                        continue;
                    }
                    let (shape, detail) = shape_of(under);
                    self.push(TypeDecl { name, shape, detail });
                }
                CursorKind::Struct if c.is_definition() => {
                    // A tagged struct keeps its tag as a name of its own (`_COR_IL_MAP`); MIDL's
                    // machine-made tags (`__MIDL___MIDL_itf_…`) and interfaces are not names.
                    let name = c.spelling();
                    let machine = name.is_empty() || name.starts_with("__MIDL") || name.contains(['(', ' ']);
                    if machine || name == "IUnknown" || self.interfaces.contains(name.as_str()) {
                        continue;
                    }
                    let (shape, detail) = shape_of(c.ty());
                    self.push(TypeDecl { name, shape, detail });
                }
                CursorKind::Enum if c.is_definition() => {
                    let tag = c.spelling();
                    let name = self.tag_names.get(tag.as_str()).copied().unwrap_or(tag.as_str());
                    let hex = self.flag_enums.contains(name);
                    for k in c.children().into_iter().filter(|k| k.kind() == CursorKind::EnumConstant) {
                        let name = k.spelling();
                        if self.constant_names.insert(name.clone()) {
                            self.constants.push(Constant { name, value: k.enum_value(), hex });
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The first declaration of a name wins (a forward `typedef struct X X;` and its body agree).
    fn push(&mut self, t: TypeDecl) {
        match self.type_index.get(&t.name) {
            Some(&at) if self.types[at].shape == "incomplete struct" => self.types[at] = t,
            Some(_) => {}
            None => {
                self.type_index.insert(t.name.clone(), self.types.len());
                self.types.push(t);
            }
        }
    }
}

/// What a type is (`struct, 3 fields`, `function type`, …) and its whole declaration.
fn shape_of(t: Type<'_>) -> (String, String) {
    let tagged = if t.kind() == TypeKind::Elaborated { t.named() } else { t };
    let canonical = t.canonical();
    match tagged.kind() {
        TypeKind::Record => {
            let decl = tagged.declaration();
            let fields: Vec<String> = decl
                .children()
                .into_iter()
                .filter(|f| f.kind() == CursorKind::Field)
                .map(|f| format!("{} {}", f.ty().spelling(), f.spelling()))
                .collect();
            if fields.is_empty() && !decl.is_definition() {
                return ("incomplete struct".to_string(), String::new());
            }
            let n = fields.len();
            (format!("struct, {n} field{}", if n == 1 { "" } else { "s" }), fields.join("; "))
        }
        TypeKind::Enum => ("enum".to_string(), "enum".to_string()),
        TypeKind::FunctionProto => ("function type".to_string(), canonical.spelling()),
        TypeKind::Pointer if canonical.pointee().kind() == TypeKind::FunctionProto => {
            ("function pointer".to_string(), canonical.spelling())
        }
        _ if canonical.kind() == TypeKind::FunctionProto => ("function type".to_string(), canonical.spelling()),
        _ => {
            let spelled = t.spelling();
            (format!("typedef of {spelled}"), spelled)
        }
    }
}
