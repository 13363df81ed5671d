//! Generates bindings for one case folder (`corprof.h` + `annotations.yaml`, parsed as `headers/headers.yaml` says), named by
//! CORPROF_CHECK_CASE (default: `cases/ok`), exactly as a profiler crate's build would.
use corprof_gen::{Config, build};
use std::path::PathBuf;

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=CORPROF_CHECK_CASE");
    let case = std::env::var_os("CORPROF_CHECK_CASE").map_or_else(|| here.join("cases/ok"), PathBuf::from);
    build::run_with(&Config {
        include_dirs: vec![case.clone()],
        annotations_dirs: vec![case.clone(), here.join("headers")],
        display_root: case,
        root: "::corprof".to_string(),
    });
}
