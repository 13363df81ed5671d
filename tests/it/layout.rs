//! Every generated vtable slot sits at the offset the header's own C vtable struct gives it.
//! The C side is the header compiled by clang in C mode (`ICorProfilerCallback11Vtbl` & co.);
//! the Rust side is `offset_of!` on the generated `#[repr(C)]` structs.

use corprof::interfaces::VTABLE_SLOTS__;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn include_dirs() -> Vec<PathBuf> {
    let value = std::env::var_os("CORPROF_INCLUDE_DIR")
        .expect("CORPROF_INCLUDE_DIR must name the header folder the crate was built from");
    std::env::split_paths(&value)
        .map(|d| if d.is_absolute() { d } else { Path::new(env!("CARGO_MANIFEST_DIR")).join(d) })
        .collect()
}

#[test]
fn vtable_slots_match_the_c_structs_of_the_header() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = std::env::temp_dir().join(format!("corprof-layout-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();

    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"corprof_mdtypes.h\"\n#include \"corprof.h\"\nint main(void) {\n",
    );
    // cor.h declares its interfaces in C++ form only; corprof.h has the C vtable structs.
    let slots: Vec<_> = VTABLE_SLOTS__.iter().filter(|s| s.4 == "corprof.h").collect();
    for (iface, method, _, _, _) in &slots {
        c.push_str(&format!(
            "    printf(\"%s %s %zu %zu\\n\", \"{iface}\", \"{method}\", offsetof({iface}Vtbl, {method}), sizeof({iface}Vtbl));\n"
        ));
    }
    c.push_str("    return 0;\n}\n");
    let src = work.join("layout.c");
    std::fs::write(&src, c).unwrap();
    let exe = work.join("layout");
    let out = Command::new("clang")
        .arg("-x")
        .arg("c")
        .arg(format!("-I{}", manifest.join("corprof-gen/prelude").display()))
        .args(["-include", "corprof_prelude.h"])
        .args(include_dirs().iter().map(|d| format!("-I{}", d.display())))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("clang must be installed (scripts/setup installs it)");
    assert!(out.status.success(), "clang failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());

    let c_side: BTreeSet<String> = String::from_utf8(run.stdout).unwrap().lines().map(String::from).collect();
    let rust_side: BTreeSet<String> =
        slots.iter().map(|(i, m, off, size, _)| format!("{i} {m} {off} {size}")).collect();
    assert!(rust_side.len() > 200, "expected every interface's slots, got {}", rust_side.len());
    let only_rust: Vec<_> = rust_side.difference(&c_side).collect();
    let only_c: Vec<_> = c_side.difference(&rust_side).collect();
    assert!(only_rust.is_empty() && only_c.is_empty(), "layout differs:\n  Rust: {only_rust:?}\n  C:    {only_c:?}");
    let _ = std::fs::remove_dir_all(&work);
}
