//! Generates bindings for the future-header fixture: `include/corprof.h` (which includes the real
//! header found through CORPROF_INCLUDE_DIR) with corprof's annotations plus `annotations/`; the
//! headers parsed are the ones corprof's annotations/headers.yaml lists (this folder lists none).
use corprof_gen::{Config, build};
use std::path::PathBuf;

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo = here.join("../..");
    let mut include_dirs = vec![here.join("include")];
    match build::include_dirs(&repo) {
        Ok(dirs) => include_dirs.extend(dirs),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
    build::run_with(&Config {
        include_dirs,
        annotations_dirs: vec![repo.join("annotations"), here.join("annotations")],
        display_root: repo,
        root: "::corprof".to_string(),
    });
}
