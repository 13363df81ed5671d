//! scripts/fetch-headers keeps only files whose sha256 matches the pin. Run against a local
//! mirror (file:// URLs) because the test machine has no internet.

use std::path::{Path, PathBuf};
use std::process::Command;

fn shared(version: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/clr-headers").join(version);
    dir.join("corprof.h").is_file().then(|| dir.canonicalize().unwrap())
}

fn fetch(base: &Path, dest: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fetch-headers"))
        .env("CORPROF_HEADERS_BASE", format!("file://{}", base.display()))
        .env("CORPROF_HEADERS_DIR", dest)
        .output()
        .unwrap()
}

#[test]
fn pinned_headers_are_verified_and_wrong_ones_refused() {
    let (Some(good), Some(other)) = (shared("runtime-main"), shared("coreclr-3.x")) else {
        panic!("this test needs ../shared/clr-headers beside the repository");
    };
    let dest = std::env::temp_dir().join(format!("corprof-fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dest);

    let ok = fetch(&good, &dest);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    for f in ["corprof.h", "cor.h", "corhdr.h"] {
        assert!(dest.join(f).is_file(), "{f} missing");
    }

    // 3.x's corprof.h is a different file: its checksum fails and nothing is kept.
    std::fs::remove_file(dest.join("corprof.h")).unwrap();
    let bad = fetch(&other, &dest);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("corprof.h has sha256"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert!(!dest.join("corprof.h").exists());
    let _ = std::fs::remove_dir_all(&dest);
}
