//! The one way the generator reads a file it is given (annotations, the docs table, the header
//! list, headers, the IDL): only a regular file (a symbolic link is followed to one), never a
//! device, FIFO, socket or folder, and never more than a cap. A link to `/dev/zero` would
//! otherwise be read until memory runs out, and a FIFO named `info.yaml` would block the build
//! forever. The type is checked before opening and again on the opened file (a file swapped
//! between the two cannot slip through), and the open itself does not wait for a FIFO's writer.
//! At most cap + 1 bytes are read, so a file growing meanwhile cannot exceed the cap either.

use std::io::Read;
use std::path::Path;

/// The most an annotation file, the docs table or the header list may hold: corprof's own are
/// under 40 KB each.
pub const YAML_CAP: u64 = 16 << 20;

/// The most a header or IDL may hold: the shared corprof.h files are 0.7–1.2 MB, cor.h 110 KB,
/// corprof.idl 173 KB.
pub const HEADER_CAP: u64 = 64 << 20;

/// The bytes of `path`, or why it cannot be read, as text to follow "cannot read `<file>`: ".
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>, String> {
    check(path, cap)?;
    let file = open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(format!("it is {}, not a regular file", kind(&meta.file_type())));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(format!("it holds over {} (it grew while read), the most a file may hold here", size(cap)));
    }
    Ok(bytes)
}

/// Whether `path` (a symbolic link followed) is a regular file of at most `cap` bytes, for a file
/// someone else will open (libclang opens the headers itself). `Err` says why not.
pub fn check(path: &Path, cap: u64) -> Result<(), String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            return Err(match link_target(path) {
                Some(to) => format!("it is a symbolic link to {}, which cannot be read ({e})", to.display()),
                None => e.to_string(),
            });
        }
    };
    if !meta.is_file() {
        let what = kind(&meta.file_type());
        return Err(match link_target(path) {
            Some(to) => format!("it is a symbolic link to {}, {what}, not a regular file", to.display()),
            None => format!("it is {what}, not a regular file"),
        });
    }
    if meta.len() > cap {
        return Err(format!("it holds {} bytes, over the {} a file may hold here", meta.len(), size(cap)));
    }
    Ok(())
}

/// Whether anything is at `path` (a dangling symbolic link is something: reading it says so).
pub fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn link_target(path: &Path) -> Option<std::path::PathBuf> {
    std::fs::symlink_metadata(path).ok().filter(|m| m.file_type().is_symlink())?;
    std::fs::read_link(path).ok()
}

#[cfg(unix)]
fn open(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // A FIFO swapped in after the check opens at once instead of waiting for a writer; the
    // type check on the opened file then refuses it. No effect on a regular file.
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

fn kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() { "a folder" } else { "not a file" }
}

fn size(cap: u64) -> String {
    if cap >= 1 << 20 && cap.is_multiple_of(1 << 20) { format!("{} MiB", cap >> 20) } else { format!("{cap} bytes") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("corprof-input-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn reads_a_regular_file_and_one_behind_a_link() {
        let dir = temp("regular");
        std::fs::write(dir.join("a.yaml"), "x: 1\n").unwrap();
        std::os::unix::fs::symlink(dir.join("a.yaml"), dir.join("b.yaml")).unwrap();
        assert_eq!(read(&dir.join("a.yaml"), YAML_CAP).unwrap(), b"x: 1\n");
        assert_eq!(read(&dir.join("b.yaml"), YAML_CAP).unwrap(), b"x: 1\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn refuses_what_is_no_regular_file() {
        let dir = temp("special");
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml")).unwrap();
        std::os::unix::fs::symlink(dir.join("gone"), dir.join("dangling.yaml")).unwrap();
        std::fs::create_dir(dir.join("folder.yaml")).unwrap();
        assert_eq!(
            read(&dir.join("zero.yaml"), YAML_CAP).unwrap_err(),
            "it is a symbolic link to /dev/zero, a character device, not a regular file"
        );
        assert!(
            read(&dir.join("dangling.yaml"), YAML_CAP).unwrap_err().starts_with(&format!(
                "it is a symbolic link to {}, which cannot be read (",
                dir.join("gone").display()
            ))
        );
        assert_eq!(read(&dir.join("folder.yaml"), YAML_CAP).unwrap_err(), "it is a folder, not a regular file");
        assert_eq!(check(&dir.join("folder.yaml"), YAML_CAP).unwrap_err(), "it is a folder, not a regular file");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn refuses_a_file_over_the_cap() {
        let dir = temp("cap");
        std::fs::write(dir.join("big.yaml"), vec![b'#'; 1025]).unwrap();
        let too_big = "it holds 1025 bytes, over the 1024 bytes a file may hold here";
        assert_eq!(read(&dir.join("big.yaml"), 1024).unwrap_err(), too_big);
        assert_eq!(read(&dir.join("big.yaml"), 1025).unwrap().len(), 1025);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
