//! The header's plain data types (ID typedefs, `COR_PRF_*` enums and structs) through bindgen,
//! which does that job well. Interfaces are blocklisted here: bindgen cannot lay out COM vtables
//! for classes with a base, so the interface stages own them.

use crate::diag::{Diagnostic, Errors};
use crate::extract::{UMBRELLA, clang_args, prelude_dir, umbrella};
use std::path::{Path, PathBuf};

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
pub fn generate(include_dirs: &[PathBuf], headers: &[String], interfaces: &[&str]) -> Result<String, Errors> {
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
        .formatter(bindgen::Formatter::None);
    match builder.generate() {
        Ok(b) => Ok(b.to_string()),
        Err(e) => Err(Diagnostic::error(format!("bindgen failed on {}: {e}", headers.join(", "))).into()),
    }
}
