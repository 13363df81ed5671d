//! What the command's integration tests share.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A folder of the test's own under the system's temp folder, removed at the end.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("corprof-record-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The repository's root (this crate's parent).
#[allow(dead_code)]
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Runs `cmd` without the runtime's and corprof's settings of the test's own environment, with
/// invariant globalization (the apps need no ICU).
#[allow(dead_code)]
pub fn clean(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if ["CORECLR_", "CORPROF_", "DOTNET_", "COMPlus_"].iter().any(|p| k.starts_with(p)) {
            cmd.env_remove(&key);
        }
    }
    cmd.env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1");
}
