//! The entry headers: which headers the generator parses, in which order, is input as the
//! annotations are. `headers.yaml` in one of the annotation folders lists them, header name →
//! whether a header folder must have it, why, and what stands in when an optional one is absent:
//!
//! ```yaml
//! cor.h:
//!   required: false
//!   stand_in: corprof_mdtypes.h
//!   why: The metadata interfaces; coreclr-3.x's header set has none.
//! corprof.h:
//!   required: true
//!   why: The profiling API.
//! ```
//!
//! Takes the annotation folders and gives a [`HeaderList`], every entry with its file:line:col;
//! `HeaderList::find` checks it against the header folders and gives what to parse
//! (`EntryHeaders`), or an error at the line of each required header no folder has.

use super::yaml;
use crate::diag::{Diagnostic, Errors};
use crate::ir::Loc;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The list's file name inside an annotation folder; the interface-entry loader skips it.
pub(crate) const HEADERS_FILE: &str = "headers.yaml";

/// One header as the list writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryHeader {
    /// The file name, as `#include "…"` names it, searched in the header folders.
    pub name: String,
    /// A header folder without it is an error; an optional one is skipped.
    pub required: bool,
    /// For an optional header: the prelude header included in its place when it is absent (the
    /// declarations the other headers take from it).
    pub stand_in: Option<String>,
    /// Why the generator reads it (and, for an optional one, what is lost without it).
    pub why: String,
    pub loc: Loc,
}

/// The serde shape of one entry; [`EntryHeader`] adds its name and place.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HeaderSpec {
    pub required: bool,
    #[serde(default)]
    pub stand_in: Option<String>,
    pub why: String,
}

/// The headers to parse, in order: the last is the main header (its interfaces all get the safe
/// layer), so it is required. Empty only as [`Default`] (annotations parsed from one file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeaderList {
    pub entries: Vec<EntryHeader>,
    /// The file the list was read from, as read (for `cargo:rerun-if-changed`).
    pub path: String,
}

/// What `HeaderList::find` found in the header folders.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EntryHeaders {
    /// The listed headers the folders have, in order (the generated file's first line names them).
    pub found: Vec<String>,
    /// What the parse includes, in order: each header found, and the stand-in of each optional
    /// header that is not.
    pub includes: Vec<String>,
}

impl HeaderList {
    /// Parses one file's text; `file` is the name shown in messages. Every problem is an error at
    /// its line: no entry, an unknown key, an empty `why`, a `stand_in` on a required header, an
    /// optional main header.
    pub fn parse(file: &str, text: &str) -> Result<HeaderList, Errors> {
        yaml::parse_headers(file, text.strip_prefix('\u{feff}').unwrap_or(text))
    }

    /// The list of the annotation folders: the one `headers.yaml` among them (two are an error,
    /// naming both). `None` when no folder has one; a folder that cannot be read is skipped
    /// (the entry loader reports it).
    pub fn load(dirs: &[PathBuf], display_root: &Path) -> Result<Option<HeaderList>, Errors> {
        let mut found: Option<(HeaderList, String)> = None;
        let mut errors = Errors::default();
        // Whatever is there: a FIFO or a folder of that name is an error at it, not "no list".
        for path in dirs.iter().map(|d| d.join(HEADERS_FILE)).filter(|p| crate::input::exists(p)) {
            let shown = path.strip_prefix(display_root).unwrap_or(&path).display().to_string();
            if let Some((_, first)) = &found {
                errors.push(
                    Diagnostic::error(format!("a second {HEADERS_FILE} among the annotation folders"))
                        .at(Loc { file: shown.into(), line: 1, col: 1 })
                        .note(format!("the headers are listed in {first} already"))
                        .help("list the headers in one annotation folder only"),
                );
                continue;
            }
            let text = crate::input::read(&path, crate::input::YAML_CAP)
                .map_err(|e| Diagnostic::error(format!("cannot read {shown}: {e}")))
                .and_then(|bytes| super::Annotations::text(&shown, bytes));
            match text.map_err(Errors::from).and_then(|t| HeaderList::parse(&shown, &t)) {
                Ok(list) => found = Some((HeaderList { path: path.display().to_string(), ..list }, shown)),
                Err(e) => {
                    errors.extend(e);
                    // Read, though broken: a second file is still the "listed twice" error.
                    found = Some((HeaderList::default(), shown));
                }
            }
        }
        errors.check()?;
        Ok(found.map(|(list, _)| list))
    }

    /// The error for folders none of which has the list.
    pub(crate) fn missing(dirs: &[PathBuf]) -> Diagnostic {
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        Diagnostic::error(format!("no {HEADERS_FILE} in the annotation folders: nothing says which headers to parse"))
            .note(format!("searched: {}", shown.join(", ")))
            .help(format!(
                "add {HEADERS_FILE} to one of them, listing each header as `<name>: {{ required: true, why: \"…\" }}` \
                 (corprof's annotations/{HEADERS_FILE} is an example)"
            ))
    }

    /// The main header's entry (the last), if any.
    pub fn main(&self) -> Option<&EntryHeader> {
        self.entries.last()
    }

    /// Each listed header in `include_dirs` (searched in order, as the parse searches them):
    /// what to parse, or an error at the list's line of each required header none of them has,
    /// naming the folders searched, and of each stand-in needed that neither `prelude` (the
    /// generator's prelude folder) nor a header folder has.
    pub(crate) fn find(&self, include_dirs: &[PathBuf], prelude: &Path) -> Result<EntryHeaders, Errors> {
        let mut errors = Errors::default();
        let mut out = EntryHeaders::default();
        if self.entries.is_empty() {
            return Err(Diagnostic::error("no headers to parse: the header list is empty").into());
        }
        for h in &self.entries {
            // The first folder with anything of that name is where clang finds it: it must be a
            // regular file of a header's size (libclang opens it itself, and would wait on a FIFO
            // or read a device without end).
            if let Some(path) = include_dirs.iter().map(|d| d.join(&h.name)).find(|p| crate::input::exists(p)) {
                match crate::input::check(&path, crate::input::HEADER_CAP) {
                    Ok(()) => {
                        out.found.push(h.name.clone());
                        out.includes.push(h.name.clone());
                    }
                    Err(why) => errors.push(
                        Diagnostic::error(format!("cannot read {}: {why}", path.display()))
                            .at(h.loc.clone())
                            .help(format!("make {} the header itself (or a link to it)", path.display())),
                    ),
                }
            } else if h.required {
                let searched: Vec<String> = include_dirs.iter().map(|d| d.display().to_string()).collect();
                errors.push(
                    Diagnostic::error(format!("no {} in the header folders", h.name))
                        .at(h.loc.clone())
                        .note(format!("searched: {}", searched.join(", ")))
                        .note(format!("{} is required: {}", h.name, h.why))
                        .help(format!(
                            "set {} to a folder holding {}, or run scripts/fetch-headers",
                            crate::INCLUDE_DIR_VAR,
                            h.name
                        )),
                );
            } else if let Some(stand_in) = &h.stand_in {
                let found = std::iter::once(prelude)
                    .chain(include_dirs.iter().map(PathBuf::as_path))
                    .map(|d| d.join(stand_in))
                    .find(|p| crate::input::exists(p));
                if let Some(path) = found {
                    match crate::input::check(&path, crate::input::HEADER_CAP) {
                        Ok(()) => out.includes.push(stand_in.clone()),
                        Err(why) => errors.push(
                            Diagnostic::error(format!(
                                "cannot read {}, the stand-in of {}: {why}",
                                path.display(),
                                h.name
                            ))
                            .at(h.loc.clone()),
                        ),
                    }
                } else {
                    errors.push(
                        Diagnostic::error(format!(
                            "no {stand_in}, the stand-in of {}, to include in its place",
                            h.name
                        ))
                        .at(h.loc.clone())
                        .note(format!("{} is absent from the header folders; searched for {stand_in}: {}", h.name, {
                            let searched: Vec<String> = std::iter::once(prelude)
                                .chain(include_dirs.iter().map(PathBuf::as_path))
                                .map(|d| d.display().to_string())
                                .collect();
                            searched.join(", ")
                        }))
                        .help("name a header of the generator's prelude folder, or remove `stand_in`"),
                    );
                }
            }
        }
        errors.check()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::Annotations;

    const LIST: &str = "\
# why this file
cor.h:
  required: false
  stand_in: corprof_mdtypes.h
  why: >-
    Metadata,
    optional.
corprof.h:
  required: true
  why: The API.
";

    /// The generator's prelude folder, where the stand-ins are.
    fn prelude() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("prelude")
    }

    #[test]
    fn a_stand_in_no_folder_has_is_an_error_at_its_header() {
        let list = HeaderList::parse("h.yaml", &LIST.replace("corprof_mdtypes.h", "nowhere.h")).unwrap();
        let only_main = folder("stand-in", &[("corprof.h", "")]);
        let err = list.find(std::slice::from_ref(&only_main), &prelude()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("error: no nowhere.h, the stand-in of cor.h, to include in its place\n  --> h.yaml:2:1"),
            "{text}"
        );
        // The header itself present: its stand-in is not needed, so not looked for.
        let both = folder("stand-in-unneeded", &[("corprof.h", ""), ("cor.h", "")]);
        assert!(list.find(std::slice::from_ref(&both), &prelude()).is_ok());
        let _ = (std::fs::remove_dir_all(&only_main), std::fs::remove_dir_all(&both));
    }

    /// A fresh folder under the system temp dir holding `files` (name, text).
    fn folder(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("corprof-headers-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        dir
    }

    /// The one error of parsing `text` as a header list, without the "aborting" line.
    fn error(text: &str) -> String {
        let err = HeaderList::parse("h.yaml", text).unwrap_err();
        assert_eq!(err.items.len(), 1, "{err}");
        err.items[0].to_string()
    }

    #[test]
    fn entries_keep_their_order_places_and_reasons() {
        let list = HeaderList::parse("h.yaml", LIST).unwrap();
        let names: Vec<_> = list.entries.iter().map(|h| (h.name.as_str(), h.required, h.loc.line)).collect();
        assert_eq!(names, [("cor.h", false, 2), ("corprof.h", true, 8)]);
        assert_eq!(list.entries[0].stand_in.as_deref(), Some("corprof_mdtypes.h"));
        assert_eq!(list.entries[0].why, "Metadata, optional.");
        assert_eq!(list.main().map(|h| h.name.as_str()), Some("corprof.h"));
    }

    #[test]
    fn an_absent_optional_header_is_skipped_and_its_stand_in_included() {
        let list = HeaderList::parse("h.yaml", LIST).unwrap();
        let only_main = folder("optional", &[("corprof.h", "")]);
        let found = list.find(std::slice::from_ref(&only_main), &prelude()).unwrap();
        assert_eq!(found.found, ["corprof.h"]);
        assert_eq!(found.includes, ["corprof_mdtypes.h", "corprof.h"]);
        // Both present: both parsed, no stand-in.
        let both = folder("both", &[("corprof.h", ""), ("cor.h", "")]);
        let found = list.find(&[only_main.clone(), both.clone()], &prelude()).unwrap();
        assert_eq!(
            (found.found, found.includes),
            (vec!["cor.h".to_string(), "corprof.h".into()], vec!["cor.h".to_string(), "corprof.h".into()])
        );
        // Optional without a stand-in: nothing in its place.
        let list = HeaderList::parse(
            "h.yaml",
            "extra.h: { required: false, why: x }\ncorprof.h: { required: true, why: y }\n",
        )
        .unwrap();
        assert_eq!(list.find(std::slice::from_ref(&only_main), &prelude()).unwrap().includes, ["corprof.h"]);
        let _ = (std::fs::remove_dir_all(&only_main), std::fs::remove_dir_all(&both));
    }

    #[test]
    fn a_required_header_no_folder_has_is_an_error_at_its_line_naming_the_folders() {
        let list = HeaderList::parse("annotations/headers.yaml", LIST).unwrap();
        let empty = folder("required", &[]);
        let other = empty.join("nowhere");
        let err = list.find(&[empty.clone(), other.clone()], &prelude()).unwrap_err();
        assert_eq!(err.items.len(), 1, "{err}");
        assert_eq!(
            err.items[0].to_string(),
            format!(
                "error: no corprof.h in the header folders\n  --> annotations/headers.yaml:8:1\n  \
                 = note: searched: {}, {}\n  = note: corprof.h is required: The API.\n  \
                 = help: set CORPROF_INCLUDE_DIR to a folder holding corprof.h, or run scripts/fetch-headers",
                empty.display(),
                other.display()
            )
        );
        let _ = std::fs::remove_dir_all(&empty);
    }

    #[test]
    fn mistakes_are_errors_at_their_place() {
        assert_eq!(
            error("corprof.h:\n  required: true\n  why: x\n  optional: true\n"),
            "error: invalid entry for header `corprof.h`: unknown field `optional`, expected one of `required`, `stand_in`, `why`\n  --> h.yaml:4:3"
        );
        assert!(error("corprof.h:\n  why: x\n").contains("missing field `required`"));
        assert!(error("corprof.h: true\n").starts_with("error: invalid entry for header `corprof.h`: invalid type"));
        assert_eq!(
            error("corprof.h:\n  required: true\n  why: \"  \"\n"),
            "error: `corprof.h` has no `why`\n  --> h.yaml:3:3\n  = help: say why the generator reads this header (and what is lost without an optional one)"
        );
        assert!(
            error("corprof.h:\n  required: true\n  stand_in: x.h\n  why: y\n")
                .starts_with("error: `corprof.h` is required, so nothing stands in for it\n  --> h.yaml:3:3")
        );
        assert!(error("corprof.h: { required: true, why: y }\ncor.h: { required: false, why: x }\n").starts_with(
            "error: the last header, `cor.h`, is the main one and must be `required: true`\n  --> h.yaml:2:1"
        ));
        assert!(error("# nothing\n").starts_with("error: the header list is empty"));
        assert!(error("{}\n").starts_with("error: the header list is empty"));
        assert!(error("- corprof.h\n").starts_with("error: expected a map under this file"));
        assert!(
            error("\"a\\\"b.h\": { required: true, why: x }\n")
                .starts_with("error: `a\"b.h` is not a header file name")
        );
        assert_eq!(
            error("cor.h: { required: false, why: x }\ncor.h: { required: true, why: y }\n"),
            "error: duplicate entry `cor.h`\n  --> h.yaml:2:1\n  = note: first written at h.yaml:1:1"
        );
    }

    #[test]
    fn one_folder_among_several_lists_the_headers_and_two_are_an_error() {
        let root = folder("root", &[("headers.yaml", LIST), ("a.yaml", "IA:\n  M:\n")]);
        let own = folder("own", &[("b.yaml", "IB:\n  M:\n")]);
        let dirs = [root.clone(), own.clone()];
        let ann = Annotations::load_dirs(&dirs, Path::new("/")).unwrap();
        assert_eq!(ann.headers.entries.len(), 2);
        // The list is no interface file, and it is an input of the build.
        let names: Vec<_> = ann.interfaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["IA", "IB"]);
        assert!(ann.files.iter().any(|f| f.ends_with("headers.yaml")), "{:?}", ann.files);
        std::fs::write(own.join(HEADERS_FILE), LIST).unwrap();
        let err = Annotations::load_dirs(&dirs, &std::env::temp_dir()).unwrap_err();
        assert_eq!(err.items.len(), 1, "{err}");
        let own_list = own.join(HEADERS_FILE);
        let own_shown = own_list.strip_prefix(std::env::temp_dir()).unwrap().display();
        let root_list = root.join(HEADERS_FILE);
        let root_shown = root_list.strip_prefix(std::env::temp_dir()).unwrap().display();
        assert_eq!(
            err.items[0].to_string(),
            format!(
                "error: a second headers.yaml among the annotation folders\n  --> {own_shown}:1:1\n  \
                 = note: the headers are listed in {root_shown} already\n  = help: list the headers in one annotation folder only"
            )
        );
        let _ = (std::fs::remove_dir_all(&root), std::fs::remove_dir_all(&own));
    }

    #[test]
    fn folders_without_a_list_are_an_error_unless_one_is_missing() {
        let bare = folder("bare", &[("a.yaml", "IA:\n  M:\n")]);
        let err = Annotations::load_dirs(std::slice::from_ref(&bare), &bare).unwrap_err();
        assert_eq!(err.items.len(), 1, "{err}");
        assert!(err.items[0].message.starts_with("no headers.yaml in the annotation folders"), "{err}");
        // A missing folder may be the one meant to hold it: its own error is the only one.
        let gone = bare.join("gone");
        let err = Annotations::load_dirs(&[bare.clone(), gone], &bare).unwrap_err();
        assert_eq!(err.items.len(), 1, "{err}");
        assert!(err.items[0].message.starts_with("annotation folder"), "{err}");
        let _ = std::fs::remove_dir_all(&bare);
    }
}
