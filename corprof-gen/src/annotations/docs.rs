//! The docs table: `annotations/docs/*.yaml`, interface → method → what the generated wrapper's
//! (or callback's) rustdoc says beyond the link to Microsoft's page: what it does in our words,
//! what it needs first, the errors it is known to return and what surprises in its results.
//!
//! ```yaml
//! ICorProfilerInfo4:
//!   GetObjectSize2:
//!     doc: The size of an object in bytes, header included, not rounded up to 8.
//!     needs: The object must not move while the answer is used.
//!     errors: { E_INVALIDARG: the object is null. }
//!     returns: Unaligned.
//! ```
//!
//! Takes the folder's files and gives a [`DocsTable`], every entry with its file:line:col; the
//! resolve stage checks the names against the header and hands each method its entry.

use super::yaml;
use crate::diag::{Diagnostic, Errors};
use crate::ir::Loc;
use std::path::Path;

/// The folder of the table inside an annotation folder.
pub(crate) const DOCS_DIR: &str = "docs";

/// One method's entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodDocs {
    pub iface: String,
    pub method: String,
    /// What it does (required).
    pub doc: String,
    /// The event-mask flags or other preconditions it needs.
    pub needs: Option<String>,
    /// HRESULT name → when the runtime answers it, in the file's order.
    pub errors: Vec<(String, String)>,
    /// What its results mean where that surprises.
    pub returns: Option<String>,
    pub loc: Loc,
}

/// Every entry of every file of the table.
#[derive(Clone, Debug, Default)]
pub struct DocsTable {
    pub methods: Vec<MethodDocs>,
    /// The files read (for `rerun-if-changed`).
    pub files: Vec<String>,
}

impl DocsTable {
    /// The entry of `iface::method`, if any.
    pub(crate) fn get(&self, iface: &str, method: &str) -> Option<&MethodDocs> {
        self.methods.iter().find(|m| m.iface == iface && m.method == method)
    }

    /// Parses one file's text; `file` is the name shown in messages.
    pub(crate) fn parse(file: &str, text: &str) -> Result<Vec<MethodDocs>, Errors> {
        yaml::parse_docs(file, text.strip_prefix('\u{feff}').unwrap_or(text))
    }

    /// Loads `<annotation folder>/docs/*.yaml` of each folder (a folder without one has no
    /// entries); an entry written twice is an error naming both places.
    pub(crate) fn load(annotation_dirs: &[std::path::PathBuf], display_root: &Path) -> Result<DocsTable, Errors> {
        let mut errors = Errors::default();
        let mut table = DocsTable::default();
        for dir in annotation_dirs {
            let dir = dir.join(DOCS_DIR);
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let mut paths: Vec<_> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
                .collect();
            paths.sort();
            for path in paths {
                let shown = path.strip_prefix(display_root).unwrap_or(&path).display().to_string();
                table.files.push(path.display().to_string());
                let text = match crate::input::read(&path, crate::input::YAML_CAP)
                    .map_err(|e| Diagnostic::error(format!("cannot read {shown}: {e}")))
                    .and_then(|bytes| super::Annotations::text(&shown, bytes))
                {
                    Ok(t) => t,
                    Err(e) => {
                        errors.push(e);
                        continue;
                    }
                };
                match DocsTable::parse(&shown, &text) {
                    Ok(methods) => table.add(methods, &mut errors),
                    Err(e) => errors.extend(e),
                }
            }
        }
        errors.check()?;
        Ok(table)
    }

    fn add(&mut self, methods: Vec<MethodDocs>, errors: &mut Errors) {
        for m in methods {
            if let Some(first) = self.get(&m.iface, &m.method) {
                errors.push(
                    Diagnostic::error(format!("`{}::{}` is documented twice", m.iface, m.method))
                        .at(m.loc.clone())
                        .note(format!("first documented at {}", first.loc)),
                );
            } else {
                self.methods.push(m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_read_with_their_places() {
        let text = "ICorProfilerInfo4:\n  GetObjectSize2:\n    doc: >-\n      The size,\n      unaligned.\n    needs: A GC callback.\n    errors:\n      E_INVALIDARG: null.\n      CORPROF_E_NOT_MANAGED_THREAD: a native thread.\n    returns: Round up to 8.\n  GetThreadStaticAddress2:\n    doc: The address.\n";
        let m = DocsTable::parse("d.yaml", text).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].iface.as_str(), m[0].method.as_str()), ("ICorProfilerInfo4", "GetObjectSize2"));
        assert_eq!(m[0].doc, "The size, unaligned.");
        assert_eq!(m[0].needs.as_deref(), Some("A GC callback."));
        assert_eq!(
            m[0].errors,
            vec![
                ("E_INVALIDARG".to_string(), "null.".to_string()),
                ("CORPROF_E_NOT_MANAGED_THREAD".to_string(), "a native thread.".to_string())
            ]
        );
        assert_eq!(m[0].returns.as_deref(), Some("Round up to 8."));
        assert_eq!((m[0].loc.line, m[1].loc.line), (2, 11));
        assert_eq!((m[1].needs.clone(), m[1].errors.len()), (None, 0));
    }

    #[test]
    fn mistakes_are_errors_at_their_place() {
        let err = |text: &str| DocsTable::parse("d.yaml", text).unwrap_err().to_string();
        let e = err("I:\n  M:\n    needs: x\n");
        assert!(e.contains("`I::M` has no `doc`") && e.contains("d.yaml:2:3"), "{e}");
        let e = err("I:\n  M:\n    doc: x\n    see: y\n");
        assert!(e.contains("unknown key `see`") && e.contains("d.yaml:4:5"), "{e}");
        let e = err("I:\n  M:\n    doc: x\n    errors: { not an hresult: y }\n");
        assert!(e.contains("`not an hresult` is not an HRESULT name"), "{e}");
        assert!(
            DocsTable::parse("d.yaml", "I:\n  M:\n    doc: x\n    errors: { HRESULT_FROM_WIN32(ERROR_X): y }\n")
                .is_ok()
        );
        let e = err("I:\n  M:\n    doc: x\n    errors: { HRESULT_FROM_WIN32(x): y }\n");
        assert!(e.contains("is not an HRESULT name"), "{e}");
        let e = err("I:\n  M:\n    doc: [x]\n");
        assert!(e.contains("`doc` is text"), "{e}");
        let e = err("I:\n  M:\n    doc: \"  \"\n");
        assert!(e.contains("`I::M` has no `doc`"), "{e}");
    }
}
