//! Writing a profiler's output to a path it was given (an environment variable, an attach's
//! client data) without harming what the path names.
//!
//! A profiler writes at Shutdown, inside the app's exit: a plain `std::fs::write` to a FIFO no
//! one reads waits forever (the app never ends), and to a device node it writes the device.
//! [`write_regular`] opens the path without waiting and without truncating, looks at the file it
//! opened, and writes only a regular file (a new one, or one that was there, or the target of a
//! symlink to one); the check is on the opened file, so nothing put there meanwhile is written.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `O_NONBLOCK` (Linux): opening a FIFO for writing with no reader fails at once (`ENXIO`)
/// instead of waiting for one.
const O_NONBLOCK: i32 = 0o4000;

/// Writes `bytes` to `path` if it names nothing yet (created, mode 0666 less the umask) or a
/// regular file (replaced), following symlinks; anything else — a FIFO, a device, a folder, a
/// socket — is an error, and is neither waited on nor written.
pub fn write_regular(path: &Path, bytes: &[u8]) -> io::Result<()> {
    // Not even opened when it is something else already (opening some devices acts on them).
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
    {
        return Err(io::Error::other(format!("{} is not a regular file: not written", path.display())));
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        // Truncated below, once it is known to be a regular file.
        .truncate(false)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file: not written", path.display())));
    }
    file.set_len(0)?;
    file.write_all(bytes)
}

/// Opens `path` for reading if it is a regular file (following symlinks); anything else — a FIFO,
/// a device, a folder, a socket — is an error, neither waited on (a FIFO with no writer) nor read.
/// The check is on the opened file, so nothing put there meanwhile is read.
pub(crate) fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    // Not even opened when it is something else already (opening some devices acts on them).
    if !std::fs::metadata(path)?.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file: not read", path.display())));
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file: not read", path.display())));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn dir(test: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("corprof-files-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn regular_files_are_written_and_nothing_else_is_touched() {
        let d = dir("regular");
        let file = d.join("out.txt");
        write_regular(&file, b"first, longer").unwrap();
        write_regular(&file, b"second").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"second");
        // A symlink to a regular file writes the file; the link stays.
        let link = d.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        write_regular(&link, b"through").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"through");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        // A folder, a device and a FIFO nobody reads: refused at once, left as they are.
        assert!(write_regular(&d, b"x").is_err());
        assert!(write_regular(Path::new("/dev/null"), b"x").is_err());
        let fifo = d.join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let started = std::time::Instant::now();
        assert!(write_regular(&fifo, b"x").is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn only_regular_files_are_opened_for_reading() {
        let d = dir("read");
        let file = d.join("in.txt");
        std::fs::write(&file, b"text").unwrap();
        assert!(open_regular(&file).is_ok());
        let link = d.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open_regular(&link).is_ok());
        assert!(open_regular(&d).is_err());
        assert!(open_regular(Path::new("/dev/zero")).is_err());
        assert!(open_regular(&d.join("missing")).is_err());
        // A FIFO with no writer: refused at once, never waited on.
        let fifo = d.join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let started = std::time::Instant::now();
        assert!(open_regular(&fifo).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let _ = std::fs::remove_dir_all(&d);
    }
}
