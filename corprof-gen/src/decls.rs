//! The header's named types and enumerators, for `corprof-gen diff`: takes the parsed translation
//! unit and gives [`TypeDecl`]s (structs, enums, function types, function pointers, other
//! typedefs; interfaces are left to the interface walk) and [`Constant`]s (every enumerator with
//! its value), each in header order. Declarations of the prelude (the Windows/MIDL vocabulary
//! corprof-gen supplies) are not the header's and are left out.

use crate::clang::{Cursor, CursorKind, Type, TypeKind};
use crate::extract::prelude_dir;
use crate::ir::{Constant, EnumDecl, Interface, TypeDecl};
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
    let mut out = Decls { prelude: prelude_dir(), types: Vec::new(), constants: Vec::new(), tag_names };
    out.walk(root, interfaces, enums);
    (out.types, out.constants)
}

struct Decls<'a> {
    prelude: std::path::PathBuf,
    tag_names: &'a [(String, String)],
    types: Vec<TypeDecl>,
    constants: Vec<Constant>,
}

impl Decls<'_> {
    fn walk(&mut self, cursor: Cursor<'_>, interfaces: &[Interface], enums: &[EnumDecl]) {
        for c in cursor.children() {
            if c.kind() != CursorKind::LinkageSpec && Path::new(&c.location().file).starts_with(&self.prelude) {
                continue;
            }
            match c.kind() {
                CursorKind::LinkageSpec => self.walk(c, interfaces, enums),
                CursorKind::Typedef => {
                    let name = c.spelling();
                    // `typedef interface IFoo IFoo;` names an interface: the interface diff says it.
                    if interfaces.iter().any(|i| i.name == name) {
                        continue;
                    }
                    let under = c.typedef_underlying();
                    let tagged = if under.kind() == TypeKind::Elaborated { under.named() } else { under };
                    let is_interface = |t: Type<'_>| {
                        let tag = t.declaration().spelling();
                        interfaces.iter().any(|i| i.name == tag)
                    };
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
                    if machine || name == "IUnknown" || interfaces.iter().any(|i| i.name == name) {
                        continue;
                    }
                    let (shape, detail) = shape_of(c.ty());
                    self.push(TypeDecl { name, shape, detail });
                }
                CursorKind::Enum if c.is_definition() => {
                    let tag = c.spelling();
                    let name = self.tag_names.iter().find(|(t, _)| *t == tag).map_or(tag.as_str(), |(_, n)| n);
                    let hex = enums.iter().any(|e| e.is_named(name) && e.flags);
                    for k in c.children().into_iter().filter(|k| k.kind() == CursorKind::EnumConstant) {
                        let name = k.spelling();
                        if !self.constants.iter().any(|x| x.name == name) {
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
        match self.types.iter_mut().find(|x| x.name == t.name) {
            Some(x) if x.shape == "incomplete struct" => *x = t,
            Some(_) => {}
            None => self.types.push(t),
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
