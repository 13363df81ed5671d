//! The `corprof-gen` commands as library functions: each takes its inputs and returns what to
//! print ([`Output`]) or the diagnostics, so the CLI (`main.rs`) only parses arguments and prints,
//! and tests call the commands directly.

use crate::annotations::Annotations;
use crate::diag::{self, Diagnostic, Errors, Level};
use crate::{Config, bootstrap, infer, ir};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What a command prints: `stdout` (generated Rust, drafts, a diff) and `messages` for stderr.
#[derive(Debug, Default)]
pub struct Output {
    pub stdout: String,
    pub messages: Vec<String>,
}

impl Output {
    fn say(&mut self, text: impl Into<String>) {
        self.messages.push(text.into());
    }
}

/// `check`: the whole pipeline; reports every warning and note, and counts them.
pub fn check(cfg: &Config) -> Result<Output, Errors> {
    let g = crate::generate(cfg)?;
    let notes = g.warnings.iter().filter(|d| d.level == Level::Note).count();
    let warnings = g.warnings.len() - notes;
    let mut out = Output { messages: Vec::with_capacity(g.warnings.len() + 1), ..Output::default() };
    // Each diagnostic goes as its text is made: a million of them are not held twice.
    for d in g.warnings {
        out.say(format!("{d}\n"));
    }
    out.say(format!("corprof-gen: ok ({warnings} warning(s), {notes} note(s))"));
    Ok(out)
}

/// `expand`: the generated Rust; notes (overrides, interfaces this header lacks) are `check`'s
/// to list, as in a build.
pub fn expand(cfg: &Config) -> Result<Output, Errors> {
    let g = crate::generate(cfg)?;
    // As the build prints them: a folded kind is one line (`check` lists each).
    let (warnings, folded) = Errors { items: g.warnings }.fold();
    let mut messages: Vec<String> =
        warnings.items.iter().filter(|d| d.level != Level::Note).map(|d| format!("{d}\n")).collect();
    messages.extend(folded.into_iter().map(|(kind, n)| format!("warning: {n} {}\n", kind.summary())));
    Ok(Output { stdout: g.code, messages })
}

/// The headers `ann` lists, parsed from `include_dirs`.
fn parse(include_dirs: &[PathBuf], ann: &Annotations) -> Result<ir::Header, Errors> {
    crate::parse_headers(include_dirs, &ann.headers).map(|(header, _)| header)
}

/// Every annotation folder named, merged; a missing one is an error, as in the build.
fn load_annotations(dirs: &[PathBuf]) -> Result<Annotations, Errors> {
    Annotations::load_dirs(dirs, &std::env::current_dir().unwrap_or_default())
}

/// The file `bootstrap --write` names, as it is now.
struct Target {
    path: PathBuf,
    shown: String,
    text: String,
    ann: Annotations,
    /// In one of the annotation folders: its entries are among the loaded ones already.
    in_folders: bool,
}

/// Reads the `--write` file, refusing one that is not annotation YAML: drafts are placed into
/// the user's text, so a file that does not load would lose its content.
fn read_target(path: &Path, folders: &[PathBuf]) -> Result<Target, Errors> {
    let shown = path.display().to_string();
    let refuse = |why: String| -> Errors {
        Diagnostic::error(format!("refusing to write drafts into {shown}: {why}"))
            .note("the file is left as it was")
            .into()
    };
    if path.file_name().is_some_and(|n| n == crate::annotations::headers::HEADERS_FILE) {
        return Err(refuse("it is the list of headers to parse, not an annotation file".into()));
    }
    let canonical = |p: &Path| p.canonicalize().ok();
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let in_folders = matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
        && canonical(parent).is_some_and(|p| folders.iter().any(|f| canonical(f).as_ref() == Some(&p)));
    // A symbolic link is followed to the file it names, which is what gets written; a dangling
    // one is refused (writing would replace the link, or create a file somewhere unexpected).
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let written = if is_link {
        match path.canonicalize() {
            Ok(target) => target,
            Err(_) => {
                let to = std::fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
                return Err(refuse(format!("it is a symbolic link to {to}, which does not exist")));
            }
        }
    } else {
        path.to_path_buf()
    };
    let text = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(refuse(format!("cannot read it: {e}"))),
        Ok(m) if !m.is_file() => return Err(refuse("it is not a regular file".into())),
        Ok(_) => match crate::input::read(path, crate::input::YAML_CAP).map(|bytes| Annotations::text(&shown, bytes)) {
            Err(why) => return Err(refuse(why)),
            Ok(Err(e)) => {
                let mut errors = Errors::from(e);
                errors.extend(refuse("it is not UTF-8 text".into()));
                return Err(errors);
            }
            Ok(Ok(text)) => text,
        },
    };
    match Annotations::parse(&shown, &text) {
        Ok(ann) => Ok(Target { path: written, shown, text, ann, in_folders }),
        Err(mut errors) => {
            // The folder's loading reports the same errors.
            if in_folders {
                errors.items.clear();
            }
            errors.extend(refuse("it is not valid annotation YAML".into()));
            Err(errors)
        }
    }
}

/// Replaces the file `path` (a link already followed by [`read_target`]) in one step: written
/// beside it, then renamed over it, so a full disk or a crash leaves the old content, never half
/// of the new. A file with other hard links cannot be renamed over without splitting it from
/// them: it is rewritten in place instead, after the copy beside it is complete (so the disk had
/// room); if the rewrite fails, that copy is kept and the error names it. The error comes with
/// whether the file is still as it was.
fn write_atomically(path: &Path, text: &str) -> Result<(), (std::io::Error, bool)> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.corprof-gen-tmp"));
    let old = std::fs::metadata(path).ok();
    let result = (|| {
        // A new file of our own: never through whatever a stale name beside the target points at
        // (a link to another file, a FIFO), which `File::create` would truncate or wait on.
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        if let Some(m) = &old {
            std::fs::set_permissions(&tmp, m.permissions())?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err((e, true));
    }
    let hard_linked = old.as_ref().is_some_and(|m| std::os::unix::fs::MetadataExt::nlink(m) > 1);
    if hard_linked {
        let in_place = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()));
        return match in_place {
            // The file holds the new text: a leftover copy is only clutter.
            Ok(()) => {
                let _ = std::fs::remove_file(&tmp);
                Ok(())
            }
            Err(e) => Err((
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "{e} (rewriting it in place, as it has other hard links; the new text is in {})",
                        tmp.display()
                    ),
                ),
                false,
            )),
        };
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        (e, true)
    })
}

/// `bootstrap`: drafts annotations for every pointer parameter not annotated yet, into the
/// `write` file when given (see [`crate::bootstrap::place`]) and the rest onto stdout.
pub fn bootstrap(cfg: &Config, extra: &[String], write: Option<&Path>) -> Result<Output, Errors> {
    let mut out = Output::default();
    let target = write.map(|w| read_target(w, &cfg.annotations_dirs)).transpose();
    // The annotations first: they list the headers to parse.
    let (ann, target) = diag::both(load_annotations(&cfg.annotations_dirs), target)?;
    let header = parse(&cfg.include_dirs, &ann)?;
    bootstrap::check_interfaces(&header, extra)?;
    let mut written = vec![&ann];
    written.extend(target.as_ref().filter(|t| !t.in_folders).map(|t| &t.ann));
    let all = bootstrap::drafts(&header, &written, extra);
    if all.is_empty() {
        out.say("corprof-gen: every pointer parameter is annotated; nothing to draft");
        return Ok(out);
    }
    let left = match &target {
        None => all,
        Some(t) => {
            let placed = bootstrap::place(&t.text, all);
            if placed.written > 0 {
                // `place` checked that the new text loads and keeps every entry of the old.
                write_atomically(&t.path, &placed.text).map_err(|(e, untouched)| {
                    let d = Diagnostic::error(format!("cannot write {}: {e}", t.shown));
                    Errors::from(if untouched { d.note("the file is left as it was") } else { d })
                })?;
                out.say(format!("corprof-gen: wrote {} draft entries into {}", placed.written, t.shown));
            }
            placed.left
        }
    };
    if left.is_empty() {
        return Ok(out);
    }
    out.say("corprof-gen: drafts to merge by hand (entries in other files are never rewritten):");
    out.stdout = left.iter().map(|d| infer::draft_yaml(&d.interface, &d.methods)).collect();
    Ok(out)
}

/// `diff`: everything that changes from the `old` header folders to the `new` ones (interfaces,
/// methods, types, constants), and the annotations the new header needs; the format is
/// documented in the crate's private `diff` module (`src/diff.rs`).
pub fn diff(old: &[PathBuf], new: &[PathBuf], annotations: &[PathBuf]) -> Result<Output, Errors> {
    // The annotations first: they list the headers to parse, the same for both folders.
    let ann = load_annotations(annotations)?;
    let (old_h, new_h) = diag::both(parse(old, &ann), parse(new, &ann))?;
    let mut out = crate::diff::changes(&old_h, &new_h);
    let needed = bootstrap::drafts(&new_h, &[&ann], &[]);
    let count: usize = needed.iter().flat_map(|d| d.methods.iter().map(|(_, ps)| ps.len())).sum();
    if count == 0 {
        out.push_str("annotations: complete for the new header\n");
    } else {
        let shown: Vec<String> = new.iter().map(|d| d.display().to_string()).collect();
        let _ = writeln!(
            out,
            "annotations: the new header needs {count} more (run `corprof-gen bootstrap --include {}`):",
            shown.join(":")
        );
        for d in &needed {
            out.push_str(&infer::draft_yaml(&d.interface, &d.methods));
        }
    }
    Ok(Output { stdout: out, messages: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::write_atomically;

    /// A stale name beside the target (a link another user left, say) is replaced, never written
    /// through: the file it points at keeps its content.
    #[test]
    fn the_copy_beside_the_target_is_a_new_file() {
        let dir = std::env::temp_dir().join(format!("corprof-gen-write-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (target, victim) = (dir.join("info.yaml"), dir.join("victim"));
        std::fs::write(&target, "old\n").unwrap();
        std::fs::write(&victim, "keep\n").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(".info.yaml.corprof-gen-tmp")).unwrap();
        write_atomically(&target, "new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n", "written through the stale link");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
