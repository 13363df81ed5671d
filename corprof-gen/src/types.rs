//! The header's plain data types (ID typedefs, `COR_PRF_*` enums and structs) through bindgen,
//! which does that job well. Interfaces are blocklisted here: bindgen cannot lay out COM vtables
//! for classes with a base, so the interface stages own them.

use crate::diag::{Diagnostic, Errors};
use crate::extract::{UMBRELLA, clang_args, prelude_dir, umbrella};
use std::path::{Path, PathBuf};

/// Gives MIDL's machine-made tags their typedef names.
#[derive(Debug)]
struct Renames(Vec<(String, String)>);

impl bindgen::callbacks::ParseCallbacks for Renames {
    fn item_name(&self, item: bindgen::callbacks::ItemInfo<'_>) -> Option<String> {
        self.0.iter().find(|(tag, _)| tag == item.name).map(|(_, name)| name.clone())
    }
}

/// After the renames bindgen still emits `pub use self::X as X;` / `pub type X = X;` for each
/// typedef: drop those self-aliases.
fn drop_self_aliases(code: &str) -> Result<String, Errors> {
    let mut file =
        syn::parse_file(code).map_err(|e| Diagnostic::error(format!("bindgen output does not parse: {e}")))?;
    file.items.retain(|item| match item {
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
        _ => true,
    });
    Ok(prettyplease::unparse(&file))
}

fn escape(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// bindgen's output for the types declared in the header folder and the prelude.
pub fn generate(
    include_dirs: &[PathBuf],
    headers: &[String],
    interfaces: &[&str],
    tag_names: &[(String, String)],
) -> Result<String, Errors> {
    let include_dir = include_dirs.first().map(PathBuf::as_path).unwrap_or(Path::new("."));
    let mut blocked: Vec<String> = interfaces.iter().map(|i| format!("{i}(Vtbl)?")).collect();
    blocked.extend(["IUnknown(Vtbl)?", "_GUID", "GUID", "IID", "CLSID"].map(String::from));
    let builder = bindgen::Builder::default()
        .header_contents(&include_dir.join(UMBRELLA).display().to_string(), &umbrella(headers))
        // C++ mode, as the interface walk: cor.h declares its interfaces only in C++ form.
        .clang_args(clang_args(include_dirs, true))
        .ignore_functions()
        .ignore_methods()
        .allowlist_file(format!("({})/.*", include_dirs.iter().map(|d| escape(d)).collect::<Vec<_>>().join("|")))
        .allowlist_file(format!("{}/.*", escape(&prelude_dir())))
        .blocklist_type(format!("^({})$", blocked.join("|")))
        .blocklist_item("^(IID_.*|CLSID_.*|__MIDL_itf_.*|CORPROF_.*_H)$")
        .default_enum_style(bindgen::EnumVariation::NewType { is_bitfield: true, is_global: false })
        .prepend_enum_name(false)
        .derive_default(true)
        .derive_eq(true)
        .derive_hash(true)
        .layout_tests(false)
        .generate_comments(false)
        .formatter(bindgen::Formatter::None)
        .parse_callbacks(Box::new(Renames(tag_names.to_vec())));
    match builder.generate() {
        Ok(b) => drop_self_aliases(&b.to_string()),
        Err(e) => Err(Diagnostic::error(format!("bindgen failed on {}: {e}", headers.join(", "))).into()),
    }
}
