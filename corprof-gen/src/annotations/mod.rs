//! Annotation YAML → a typed model with YAML positions. Takes the `annotations/` folder (every
//! `*.yaml` in it, in name order, its `headers.yaml` and the docs table of its `docs/`) and gives
//! [`Annotations`]: interface → method → parameter → [`ParamSpec`], each entry carrying the
//! file:line:col it was written at, the [`headers::HeaderList`] (which headers to parse) and the
//! [`docs::DocsTable`]. Only `yaml` touches the
//! YAML library, so a maintained fork of serde_yaml can replace it in one place.

pub mod docs;
pub mod headers;
pub(crate) mod outline;
mod yaml;

use crate::diag::{Diagnostic, Errors};
use crate::ir::Loc;
use serde::Deserialize;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};

/// Which way data flows through a pointer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The callee only reads through the pointer.
    In,
    /// The callee only writes through the pointer.
    Out,
    /// The callee reads and writes.
    Ref,
}

impl Direction {
    pub(crate) fn parse(s: &str) -> Option<Direction> {
        match s {
            "in" => Some(Direction::In),
            "out" => Some(Direction::Out),
            "ref" => Some(Direction::Ref),
            _ => None,
        }
    }
}

/// What one pointer parameter means. Written either as a bare direction (`pFoo: out`) or as a
/// map (`rgIds: { dir: in, len: cIds }`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    pub dir: Direction,
    /// The parameter holding the element count: the pointer is an array of that many elements.
    /// For `in` arrays a value parameter; for `out` buffers the pointer the callee writes the
    /// actual count through.
    #[serde(default)]
    pub len: Option<String>,
    /// For `out` buffers: the value parameter telling the callee the buffer's capacity.
    #[serde(default)]
    pub cap: Option<String>,
    /// For `void **` outs: the `REFIID` parameter naming the interface to return.
    #[serde(default)]
    pub iid: Option<String>,
    /// An `HCORENUM *` enumeration handle: the method becomes an iterator.
    #[serde(default)]
    pub corenum: bool,
    /// Keep the raw pointer in the safe signature (code addresses, opaque blobs).
    #[serde(default)]
    pub raw: bool,
    /// The pointer may be null.
    #[serde(default)]
    pub optional: bool,
    /// The pointer is UTF-16 text (`WCHAR`): NUL-terminated, or counted by `len`.
    #[serde(default)]
    pub string: bool,
    /// The flag enum (as the header names it) whose bits this DWORD holds: the safe signature
    /// takes or returns that type. The one annotation a value parameter may carry, written
    /// without `dir`: `dwEvents: { flags: COR_PRF_MONITOR }`.
    #[serde(default)]
    pub flags: Option<String>,
    /// On a callback's `ObjectID` (a value, or an `in` array of them): the object cannot move
    /// or die while the callback runs, and the text says why (from the runtime's source: the
    /// callback runs in cooperative mode, or inside a GC with the runtime suspended). The safe
    /// signature lends it as `LiveObject<'_>` (`&[LiveObject<'_>]`), valid for that call only.
    /// Written without `dir` on a value: `thrownObjectId: { live: "…" }`.
    #[serde(default)]
    pub live: Option<String>,
    /// Written by `corprof-gen bootstrap` and not yet reviewed: builds, with a warning.
    #[serde(default)]
    pub draft: bool,
    /// Accepts this entry although it disagrees with the header's MIDL attributes or SAL: why
    /// the header is wrong or silent there. `corprof-gen check` lists every override.
    #[serde(default, rename = "override")]
    pub override_reason: Option<String>,
}

impl ParamSpec {
    /// The names of other parameters this one consumes (count, capacity, IID).
    pub(crate) fn consumes(&self) -> impl Iterator<Item = &str> {
        [&self.len, &self.cap, &self.iid].into_iter().filter_map(|p| p.as_deref())
    }

    pub fn direction(dir: Direction) -> Self {
        ParamSpec {
            dir,
            len: None,
            cap: None,
            iid: None,
            corenum: false,
            raw: false,
            optional: false,
            string: false,
            flags: None,
            live: None,
            draft: false,
            override_reason: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamAnn {
    pub name: String,
    pub spec: ParamSpec,
    pub loc: Loc,
}

/// What a method's return means beyond success and failure, written under the reserved key
/// `return:` (a C keyword, so never a parameter name): `return: { s_false: "not an array" }`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReturnSpec {
    /// The method answers S_FALSE to say "no": the wrapper returns `false` / `None` then, and the
    /// text (what S_FALSE means) goes into its documentation.
    #[serde(default)]
    pub s_false: Option<String>,
}

/// How the safe wrapper of a method the profiler calls departs from what its parameters alone
/// give, written under the reserved key `wrapper:`. `manual` excludes the others.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapperSpec {
    /// The call can break memory safety or take the process down however its arguments are typed
    /// (injected code, a runtime suspension never resumed): the wrapper is an `unsafe fn`, and the
    /// text is the requirement its `# Safety` section states.
    #[serde(default, rename = "unsafe")]
    pub unsafe_reason: Option<String>,
    /// No generated safe wrapper: corprof offers a hand-written one (a guard, an owned handle)
    /// where the text says. The raw interface keeps the method in its slot.
    #[serde(default)]
    pub manual: Option<String>,
    /// The runtime suspends itself for the call (a GC, a ReJIT): on the thread that holds a
    /// profiler suspension it would wait for itself forever, so the wrapper refuses there with
    /// `CORPROF_E_SUSPENSION_IN_PROGRESS` (`corprof::suspend`).
    #[serde(default)]
    pub suspends: bool,
    /// The other contexts in which the runtime takes the call without refusing it and then
    /// crashes: the wrapper refuses there first (corprof's `src/context.rs`).
    #[serde(default)]
    pub refuse_in: Vec<Context>,
}

/// A context in which a call the runtime does not refuse would take the process down, named in
/// `wrapper: { refuse_in: [...] }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Context {
    /// Inside a fast-mode enter/leave/tailcall hook: the thread runs managed code in cooperative
    /// mode with no frame, and a call that may trigger a GC (the runtime's `kP2EETriggers`
    /// methods) corrupts it. Refused with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`, the code the
    /// runtime gives such a call where it checks.
    Hook,
    /// On a thread the runtime has no Thread object for (one the profiler started): a call that
    /// loads types dereferences the missing Thread. Refused with `CORPROF_E_NOT_MANAGED_THREAD`.
    UnknownThread,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodAnn {
    pub name: String,
    pub params: Vec<ParamAnn>,
    /// The `return:` entry, with where it was written. This and the other rare entries are
    /// boxed: a method is 128 bytes rather than 344, which a million entries feel.
    pub ret: Option<Box<(ReturnSpec, Loc)>>,
    /// Other header spellings of this method, from the reserved key `aka:`: a header that
    /// renamed the method (fixing a typo, same slot) matches the entry under either name.
    pub aka: Vec<(String, Loc)>,
    /// The `wrapper:` entry, with where it was written.
    pub wrapper: Option<Box<(WrapperSpec, Loc)>>,
    /// From the reserved key `since:`: the method was appended to an interface that older headers
    /// declare without it (`EventPipeCreateProvider2` in ICorProfilerInfo14), and the text says
    /// which header added it. Where the interface lacks it the entry is skipped with a note
    /// instead of the unknown-method error.
    pub since: Option<Box<(String, Loc)>>,
    /// From the reserved key `answered_by:` of a callback: the function of corprof's `imp`
    /// module the thunk calls first, with the runtime's arguments as plain integers and untyped
    /// pointers; what it returns (`Some`) answers the callback without the profiler's method,
    /// `None` passes the callback on (`GetReJITParameters: { answered_by: rejit_parameters }`).
    pub answered_by: Option<Box<(String, Loc)>>,
    pub loc: Loc,
}

impl MethodAnn {
    /// Whether this entry is for the header's method `name` (its own name or an `aka:`).
    pub(crate) fn is_for(&self, name: &str) -> bool {
        self.name == name || self.aka.iter().any(|(a, _)| a == name)
    }
}

/// The key of a method's [`ReturnSpec`].
pub(crate) const RETURN_KEY: &str = "return";

/// The key of a method's other header spellings ([`MethodAnn::aka`]): `aka: LoadAsNotficationOnly`
/// or a list. Reserved: a parameter of that name cannot be annotated.
pub(crate) const AKA_KEY: &str = "aka";

/// The key of [`MethodAnn::since`]: `since: "<the header that appended the method>"`. Reserved: a
/// parameter of that name cannot be annotated.
pub(crate) const SINCE_KEY: &str = "since";

/// The key of [`MethodAnn::answered_by`]: `answered_by: <imp function>`. Reserved: a parameter of
/// that name cannot be annotated.
pub(crate) const ANSWERED_BY_KEY: &str = "answered_by";

/// The key of a method's [`WrapperSpec`]. Reserved: a parameter of that name cannot be annotated.
pub(crate) const WRAPPER_KEY: &str = "wrapper";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceAnn {
    pub name: String,
    pub methods: Vec<MethodAnn>,
    pub loc: Loc,
}

/// Every annotation file of a folder, merged.
#[derive(Clone, Debug, Default)]
pub struct Annotations {
    pub interfaces: Vec<InterfaceAnn>,
    /// The docs table of the folders' `docs/` (empty for a folder without one).
    pub docs: docs::DocsTable,
    /// The headers to parse, from the one `headers.yaml` of the folders (empty for annotations
    /// parsed from one file).
    pub headers: headers::HeaderList,
    /// The files read, for `cargo:rerun-if-changed`.
    pub files: Vec<String>,
}

impl Annotations {
    pub fn interface(&self, name: &str) -> Option<&InterfaceAnn> {
        self.interfaces.iter().find(|i| i.name == name)
    }

    /// Loads every `*.yaml`/`*.yml` in `dir` but the header list ([`headers::HEADERS_FILE`]);
    /// `display_root` is how paths are shown in messages.
    pub(crate) fn load_dir(dir: &Path, display_root: &Path) -> Result<Annotations, Errors> {
        let mut errors = Errors::default();
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(_) if !dir.exists() => {
                return Err(Diagnostic::error(format!("annotation folder {} does not exist", dir.display())).into());
            }
            Err(e) => {
                return Err(
                    Diagnostic::error(format!("cannot read the annotation folder {}: {e}", dir.display())).into()
                );
            }
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
            .filter(|p| p.file_name().is_none_or(|n| n != headers::HEADERS_FILE))
            .collect();
        paths.sort();
        let (mut files, mut read) = (Vec::new(), Vec::new());
        for path in paths {
            let shown = path.strip_prefix(display_root).unwrap_or(&path).display().to_string();
            read.push(path.display().to_string());
            let text = match crate::input::read(&path, crate::input::YAML_CAP) {
                Ok(bytes) => match Annotations::text(&shown, bytes) {
                    Ok(t) => t,
                    Err(e) => {
                        errors.push(e);
                        continue;
                    }
                },
                Err(e) => {
                    errors.push(Diagnostic::error(format!("cannot read {shown}: {e}")));
                    continue;
                }
            };
            match Annotations::parse(&shown, &text) {
                Ok(one) => files.push(one),
                Err(e) => errors.extend(e),
            }
        }
        let mut all = Annotations::merge_all(files, &mut errors);
        all.files = read;
        errors.check()?;
        Ok(all)
    }

    /// Loads and merges several folders (a missing folder is an error), with the header list
    /// of the one holding `headers.yaml` (none, or two, is an error).
    pub fn load_dirs(dirs: &[PathBuf], display_root: &Path) -> Result<Annotations, Errors> {
        let mut errors = Errors::default();
        let mut folders = Vec::new();
        for dir in dirs {
            match Annotations::load_dir(dir, display_root) {
                Ok(one) => folders.push(one),
                Err(e) => errors.extend(e),
            }
        }
        let mut all = Annotations::merge_all(folders, &mut errors);
        match docs::DocsTable::load(dirs, display_root) {
            Ok(table) => {
                all.files.extend(table.files.iter().cloned());
                all.docs = table;
            }
            Err(e) => errors.extend(e),
        }
        match headers::HeaderList::load(dirs, display_root) {
            Ok(Some(list)) => {
                all.files.push(list.path.clone());
                all.headers = list;
            }
            // Said only when every folder was read: a missing one may be the folder meant to
            // hold the list, and its own error says so.
            Ok(None) if dirs.iter().all(|d| d.is_dir()) => errors.push(headers::HeaderList::missing(dirs)),
            Ok(None) => {}
            Err(e) => errors.extend(e),
        }
        errors.check()?;
        Ok(all)
    }

    /// Parses one file's text; `file` is the name shown in messages. A leading byte order mark
    /// (which some Windows editors write) is not part of the YAML.
    pub fn parse(file: &str, text: &str) -> Result<Annotations, Errors> {
        yaml::parse(file, text.strip_prefix('\u{feff}').unwrap_or(text))
    }

    /// An annotation file's bytes as text: YAML is UTF-8, so any other byte sequence is an error
    /// at the first byte that is not, by byte offset and line:col (`file` is the name shown).
    pub(crate) fn text(file: &str, bytes: Vec<u8>) -> Result<String, Diagnostic> {
        String::from_utf8(bytes).map_err(|e| {
            let bytes = e.as_bytes();
            let offset = e.utf8_error().valid_up_to();
            let before = &bytes[..offset];
            let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            // Columns count characters, as in every other message; the prefix is valid UTF-8.
            let col = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
            Diagnostic::error(format!(
                "{file} is not UTF-8: byte 0x{:02X} at byte offset {offset} does not start a valid character",
                bytes[offset]
            ))
            .at(Loc { file: file.into(), line: line as u32, col: col as u32 })
            .help("annotation files are UTF-8 YAML: save the file as UTF-8")
        })
    }

    /// Merges files in order, finding names through one index: searching the list for each
    /// name made loading 40,000 interfaces take most of a minute. The index borrows the names
    /// (copying each cost an allocation an interface). An interface named in two files is an
    /// error.
    fn merge_all(parts: impl IntoIterator<Item = Annotations>, errors: &mut Errors) -> Annotations {
        let mut all = Annotations::default();
        let mut files = Vec::new();
        for part in parts {
            all.interfaces.extend(part.interfaces);
            files.extend(part.files);
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        index.reserve(all.interfaces.len());
        let mut keep = Vec::with_capacity(all.interfaces.len());
        for (i, iface) in all.interfaces.iter().enumerate() {
            match index.entry(&iface.name) {
                Entry::Occupied(first) => {
                    errors.push(
                        Diagnostic::error(format!("duplicate entry for interface `{}`", iface.name))
                            .at(iface.loc.clone())
                            .note(format!("first written at {}", all.interfaces[*first.get()].loc)),
                    );
                    keep.push(false);
                }
                Entry::Vacant(slot) => {
                    slot.insert(i);
                    keep.push(true);
                }
            }
        }
        drop(index);
        if keep.contains(&false) {
            let mut keep = keep.into_iter();
            all.interfaces.retain(|_| keep.next().unwrap_or(true));
        }
        all.files = files;
        all
    }
}

#[cfg(test)]
mod tests;
