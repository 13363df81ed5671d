//! The files the command and the profiler write and read: regular files only.
//!
//! An output path must name nothing yet (it is created) or a regular file (it is replaced); a
//! symlink to a regular file writes that file, the symlink staying as it is. Anything else — a
//! device, a FIFO, a directory, a socket, a symlink to one of those or to nothing — is refused
//! with one line, before anything is opened: opening a FIFO for writing waits for a reader, and
//! replacing `/dev/null` by a file breaks the machine.
//!
//! Two ways to write, each sound against the path changing under it:
//! - [`replace_with`] (the profiler, whose result a polling command must see whole): the bytes go
//!   to a new file created beside the target (`O_EXCL`: never an existing one), which is then
//!   renamed onto the target — with `RENAME_NOREPLACE` when the target does not exist, so
//!   whatever appears there meanwhile stays, and after a last `lstat` when it is a regular file.
//! - [`write_in_place`] (the command's output): the path is opened without truncating and
//!   without waiting (`O_NONBLOCK`), the opened file checked with `fstat`, and only a regular
//!   file is truncated and written; the check is on the file written, so no race can redirect it.
//!
//! [`read_regular`] reads only a regular file, at most a given size.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What `meta` is, for a message about a path that is not a regular file.
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symlink"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

fn refused(path: &Path, what: &str) -> io::Error {
    io::Error::other(format!("{} {what}: corprof record writes only regular files", path.display()))
}

/// Checks that `path` may be written: it does not exist and its folder does, or it is a
/// regular file, or a symlink to one. The error is one line naming the path and what it is.
pub fn check_output(path: &Path) -> io::Result<()> {
    if path.as_os_str().is_empty() {
        return Err(io::Error::other("the output path is empty"));
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::metadata(path) {
            Ok(target) if target.is_file() => Ok(()),
            Ok(target) => Err(refused(path, &format!("is a symlink to {}", kind(&target)))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(refused(path, "is a symlink to nothing")),
            Err(e) => Err(io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))),
        },
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(meta) => Err(refused(path, &format!("is {}", kind(&meta)))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let folder = folder_of(path);
            match std::fs::metadata(folder) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err(io::Error::other(format!(
                    "cannot write {}: {} is not a folder",
                    path.display(),
                    folder.display()
                ))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Err(io::Error::new(
                    e.kind(),
                    format!("cannot write {}: no folder {}", path.display(), folder.display()),
                )),
                Err(e) => Err(io::Error::new(
                    e.kind(),
                    format!("cannot write {}: the folder {}: {e}", path.display(), folder.display()),
                )),
            }
        }
        Err(e) => Err(io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))),
    }
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes what `write` gives to `path` through a new file beside it renamed onto it, so that a
/// reader that sees `path` sees all of it. `path` must pass [`check_output`]; a symlink to a
/// regular file replaces that file (the symlink stays).
pub fn replace_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    check_output(path)?;
    // A symlink: its target is the file to replace (check_output found it regular).
    let is_symlink = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_symlink { std::fs::canonicalize(path)? } else { path.to_path_buf() };
    let (file, temp) = create_beside(&target)?;
    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 16, file);
        write(&mut out)?;
        out.flush()
    })()
    .and_then(|()| install(&temp, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// [`replace_with`] with bytes.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_with(path, |out| out.write_all(bytes))
}

/// A new file beside `target`, made by this call (`O_CREAT | O_EXCL`: an existing name, even a
/// symlink, is never opened), and its path.
fn create_beside(target: &Path) -> io::Result<(File, PathBuf)> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    // Short enough that the temporary name fits where the target's does.
    let stem: String = name.chars().take(100).collect();
    let mut last = None;
    for _ in 0..16 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = folder_of(target).join(format!(".{stem}.{}-{n}.partial", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_CLOEXEC).open(&temp) {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// Renames `temp` onto `target`, never over anything but a regular file.
fn install(temp: &Path, target: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => rename_noreplace(temp, target),
        // A regular file a moment ago (lstat: not followed). Whatever would replace it within
        // the moment before the rename needs write access to its folder, enough to remove it
        // anyway: this guards against mistakes, as the rest does, not against the folder's owner.
        Ok(meta) if meta.is_file() => std::fs::rename(temp, target),
        Ok(meta) => Err(refused(target, &format!("is {} now", kind(&meta)))),
        Err(e) => Err(e),
    }
}

/// `rename(temp, target)` that fails if `target` exists (whatever appeared there since it was
/// checked stays).
fn rename_noreplace(temp: &Path, target: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::other("a path holds a NUL byte"));
    let (from, to) = (c(temp)?, c(target)?);
    // renameat2 through syscall(2), not glibc's wrapper (glibc 2.28+), so the library loads with
    // any glibc the runtime runs on.
    // SAFETY: both are valid NUL-terminated strings that outlive the call; the other arguments
    // are plain integers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EEXIST) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} appeared while it was written; left as it is", target.display()),
        )),
        // A kernel or file system without RENAME_NOREPLACE: a hard link fails the same way on an
        // existing name.
        Some(libc::ENOSYS | libc::EINVAL) => {
            std::fs::hard_link(temp, target)?;
            std::fs::remove_file(temp)
        }
        _ => Err(e),
    }
}

/// Writes what `write` gives to `path` in place: the command's output. `path` must pass
/// [`check_output`]; it is opened without truncation or waiting, and written only if what was
/// opened is a regular file (a symlink to one writes that file).
pub fn write_in_place(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    check_output(path)?;
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        // Not blocking on a FIFO that appeared since the check, not taking a terminal.
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(path, &format!("is {}", kind(&meta))));
    }
    let fail = |e: io::Error| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()));
    file.set_len(0).map_err(fail)?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    write(&mut out).and_then(|()| out.flush()).map_err(fail)
}

/// Opens `path` for reading if it is a regular file of at most `max_bytes` (a symlink to one
/// too); `Ok(None)` if it does not exist. Never waits on a FIFO.
pub fn open_regular(path: &Path, max_bytes: u64) -> io::Result<Option<File>> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!(
            "{} is {}: corprof record reads only regular files",
            path.display(),
            kind(&meta)
        )));
    }
    if meta.len() > max_bytes {
        return Err(io::Error::other(format!(
            "{} is {} bytes: more than the {max_bytes} corprof record reads",
            path.display(),
            meta.len()
        )));
    }
    Ok(Some(file))
}

/// The bytes of `path` if it is a regular file of at most `max_bytes` ([`open_regular`]);
/// `Ok(None)` if it does not exist. A file that grows while read is cut at `max_bytes + 1` and
/// refused.
pub fn read_regular(path: &Path, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    let Some(file) = open_regular(path, max_bytes)? else { return Ok(None) };
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(io::Error::other(format!("{} grew past {max_bytes} bytes while read", path.display())));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Dir(PathBuf);

    impl Dir {
        fn new(test: &str) -> Dir {
            let dir = std::env::temp_dir().join(format!("corprof-files-{}-{test}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
    }

    fn is_fifo(path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    }

    /// Every kind of path that is not a regular file, made in `dir`; each with what the message
    /// says.
    fn victims(dir: &Path) -> Vec<(PathBuf, &'static str)> {
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        let folder = dir.join("folder");
        std::fs::create_dir(&folder).unwrap();
        let socket = dir.join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let to_fifo = dir.join("to-fifo");
        symlink(&fifo, &to_fifo).unwrap();
        let to_folder = dir.join("to-folder");
        symlink(&folder, &to_folder).unwrap();
        let dangling = dir.join("dangling");
        symlink(dir.join("nothing"), &dangling).unwrap();
        let to_null = dir.join("to-null");
        symlink("/dev/null", &to_null).unwrap();
        vec![
            (fifo, "is a FIFO"),
            (folder, "is a directory"),
            (socket, "is a socket"),
            (to_fifo, "is a symlink to a FIFO"),
            (to_folder, "is a symlink to a directory"),
            (dangling, "is a symlink to nothing"),
            (to_null, "is a symlink to a character device"),
        ]
    }

    fn null_is_a_device() -> bool {
        std::fs::metadata("/dev/null").is_ok_and(|m| m.file_type().is_char_device())
    }

    #[test]
    fn only_regular_files_are_written_either_way() {
        let dir = Dir::new("victims");
        for (path, what) in victims(&dir.0) {
            let before = std::fs::symlink_metadata(&path).unwrap().file_type();
            for (how, result) in [
                ("check", check_output(&path)),
                ("replace", replace(&path, b"x")),
                ("in place", write_in_place(&path, |o| o.write_all(b"x"))),
            ] {
                let e = result.expect_err(&format!("{how}: {} accepted", path.display())).to_string();
                assert_eq!(e, format!("{} {what}: corprof record writes only regular files", path.display()), "{how}");
                assert_eq!(std::fs::symlink_metadata(&path).unwrap().file_type(), before, "{how} changed it");
            }
        }
        assert!(is_fifo(&dir.0.join("fifo")) && null_is_a_device());
        // Nothing was left beside them.
        let mut left: Vec<String> =
            std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        assert_eq!(left, ["dangling", "fifo", "folder", "socket", "to-fifo", "to-folder", "to-null"]);
    }

    #[test]
    fn new_and_regular_files_are_written_and_symlinks_write_their_target() {
        let dir = Dir::new("regular");
        let new = dir.0.join("new");
        replace(&new, b"one").unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"one");
        replace(&new, b"two").unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"two");
        write_in_place(&new, |o| o.write_all(b"3")).unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"3", "truncated, then written");
        let link = dir.0.join("link");
        symlink(&new, &link).unwrap();
        replace(&link, b"four").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the symlink stays");
        assert_eq!(std::fs::read(&new).unwrap(), b"four");
        write_in_place(&link, |o| o.write_all(b"5")).unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"5");
        // A writer's failure leaves the old file and no temporary.
        let e = replace_with(&new, |_| Err(io::Error::other("no"))).unwrap_err();
        assert!(e.to_string().contains("no"), "{e}");
        assert_eq!(std::fs::read(&new).unwrap(), b"5");
        assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 2);
        // No folder.
        let e = check_output(&dir.0.join("none/x")).unwrap_err().to_string();
        assert!(e.contains("no folder"), "{e}");
        assert!(check_output(Path::new("")).is_err());
    }

    #[test]
    fn a_name_taken_meanwhile_is_left_as_it_is() {
        let dir = Dir::new("noreplace");
        let (temp, target) = (dir.0.join("temp"), dir.0.join("target"));
        std::fs::write(&temp, b"new").unwrap();
        mkfifo(&target);
        let e = rename_noreplace(&temp, &target).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        assert!(is_fifo(&target));
        assert!(install(&temp, &target).unwrap_err().to_string().contains("is a FIFO now"));
        assert!(is_fifo(&target));
        std::fs::remove_file(&target).unwrap();
        install(&temp, &target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }

    #[test]
    fn reads_take_regular_files_within_the_cap() {
        let dir = Dir::new("reads");
        let file = dir.0.join("file");
        std::fs::write(&file, b"12345").unwrap();
        assert_eq!(read_regular(&file, 5).unwrap().unwrap(), b"12345");
        assert!(read_regular(&file, 4).unwrap_err().to_string().contains("more than the 4"));
        assert!(read_regular(&dir.0.join("none"), 5).unwrap().is_none());
        for (path, what) in victims(&dir.0) {
            if what.contains("nothing") {
                continue;
            }
            let e = read_regular(&path, 5).unwrap_err().to_string();
            assert!(e.contains("reads only regular files") || e.contains("cannot read"), "{what}: {e}");
        }
    }
}
