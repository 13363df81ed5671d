//! The `corprof-gen` CLI on the shared headers: check, expand, bootstrap, diff, and the errors a
//! user meets first (no header folder, no libclang).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn gen_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_corprof-gen"));
    c.current_dir(repo()).env_remove("CORPROF_INCLUDE_DIR");
    c
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn shared(version: &str) -> PathBuf {
    let dir = repo().join("../shared/clr-headers").join(version);
    assert!(dir.join("corprof.h").is_file(), "these tests need ../shared/clr-headers/{version} beside the repository");
    dir
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn check_passes_on_both_shared_headers_with_the_same_annotations() {
    for (version, notes) in [("runtime-main", 0), ("coreclr-3.x", 8)] {
        let o = gen_cmd().arg("check").arg("--include").arg(shared(version)).output().unwrap();
        let t = text(&o);
        assert!(o.status.success(), "{version}: {t}");
        assert_eq!(t.matches("is not declared by this header").count(), notes, "{version}: {t}");
        assert!(!t.contains("error"), "{t}");
    }
}

#[test]
fn expand_prints_formatted_rust_for_the_header() {
    let o = gen_cmd().arg("expand").arg("--include").arg(shared("coreclr-3.x")).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let code = String::from_utf8(o.stdout).unwrap();
    assert!(code.contains("pub trait CorProfilerCallback: Send + Sync + 'static {"));
    assert!(code.contains("pub const HIGHEST_CALLBACK: &str = \"ICorProfilerCallback9\";"));
    assert!(syn_like_balanced(&code));
}

/// A cheap sanity check that the printed code is whole (the pipeline itself parses it with syn).
fn syn_like_balanced(code: &str) -> bool {
    code.matches('{').count() == code.matches('}').count()
}

#[test]
fn a_missing_header_folder_names_the_setting() {
    let o = gen_cmd().args(["check", "--include", "no/such/folder"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: header folder no/such/folder does not exist\n  = help: set CORPROF_INCLUDE_DIR to a folder holding corprof.h, or run scripts/fetch-headers\n\nerror: aborting due to 1 previous error\n"
    );
}

#[test]
fn bootstrap_drafts_new_interfaces_and_never_rewrites_existing_entries() {
    let tmp = std::env::temp_dir().join(format!("corprof-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("ann")).unwrap();
    let existing = "ICorProfilerCallback:\n  Initialize:\n    pICorProfilerInfoUnk: in\n";
    std::fs::write(tmp.join("ann/callbacks.yaml"), existing).unwrap();
    let run = || {
        gen_cmd()
            .arg("bootstrap")
            .arg("--include")
            .arg(shared("runtime-main"))
            .arg("--annotations")
            .arg(tmp.join("ann"))
            .arg("--write")
            .arg(tmp.join("ann/drafts.yaml"))
            .output()
            .unwrap()
    };
    let o = run();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(tmp.join("ann/callbacks.yaml")).unwrap(), existing, "existing file untouched");
    let drafts = std::fs::read_to_string(tmp.join("ann/drafts.yaml")).unwrap();
    assert!(
        drafts.contains("ICorProfilerInfo:\n  GetClassFromObject:\n    pClassId: { dir: out, draft: true }"),
        "{drafts}"
    );
    assert!(!drafts.contains("\nICorProfilerCallback:\n"), "an annotated interface is not redrafted in the file");
    // ICorProfilerCallback's other methods go to stdout, for merging by hand.
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.contains("ICorProfilerCallback:\n  JITCachedFunctionSearchStarted:\n    pbUseCachedFunction: { dir: out, draft: true }"), "{printed}");
    // The drafts build: a second run has nothing new for the file.
    let again = run();
    assert!(again.status.success());
    assert_eq!(std::fs::read_to_string(tmp.join("ann/drafts.yaml")).unwrap(), drafts, "drafts are not appended twice");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn diff_reports_what_a_newer_header_adds() {
    let o = gen_cmd().arg("diff").arg(shared("coreclr-3.x")).arg(shared("runtime-main")).output().unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for line in [
        "+ interface ICorProfilerCallback10 (2 methods, base ICorProfilerCallback9)",
        "+ interface ICorProfilerCallback11 (1 methods, base ICorProfilerCallback10)",
        "+ interface ICorProfilerInfo12 (7 methods, base ICorProfilerInfo11)",
        "annotations: complete for the new header",
    ] {
        assert!(t.contains(line), "missing `{line}` in:\n{t}");
    }
}

/// Hides every libclang from the CLI with a private mount namespace (root and `unshare`, as on
/// the project's machines), so the "libclang missing" message is the real one.
#[test]
fn a_missing_libclang_is_an_error_with_an_install_hint() {
    let script = r#"
        set -e
        empty=$(mktemp -d)
        for d in /usr/lib/llvm-*/lib; do mount --bind "$empty" "$d"; done
        for f in /usr/lib/x86_64-linux-gnu/libclang*.so*; do [ -f "$f" ] && mount --bind /dev/null "$f"; done
        exec "$0" check --include "$1"
    "#;
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", script, env!("CARGO_BIN_EXE_corprof-gen")])
        .arg(shared("runtime-main"))
        .env_remove("LIBCLANG_PATH")
        .output()
        .expect("`unshare` (util-linux) is needed to hide libclang");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.starts_with("error: libclang could not be loaded"), "{t}");
    assert!(
        t.contains("= help: install it (Debian/Ubuntu: `apt-get install libclang-dev`, or run `scripts/setup`)"),
        "{t}"
    );
}
