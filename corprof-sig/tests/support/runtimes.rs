//! Where the tests of corprof-sig find the .NET runtimes whose files they read: the folder
//! scripts/setup fills at the repository's root, or the one `CORPROF_RUNTIMES` names (for a copy
//! of the tree without it, such as the one scripts/mutants tests each mutant in).

use std::path::PathBuf;

/// `CORPROF_RUNTIMES`, or `.runtimes` beside this crate.
pub fn runtimes() -> PathBuf {
    match std::env::var_os("CORPROF_RUNTIMES") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.runtimes"),
    }
}
