//! The browser check: the SVG and HTML flame graphs opened in headless Chromium (Debian's
//! `chromium`, installed by scripts/setup), the DOM dumped after the page's scripts ran, and the
//! frame names looked for among the labels the browser laid out. inferno writes the root frame's
//! label empty and its script fills every label to the width the browser measured, so a root
//! label reading `all` shows the script ran in the browser.
//!
//! Without chromium the test says so loudly and passes: it cannot run, which is not a failure of
//! the formats.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use corprof_record::formats::{self, Format};
use corprof_record::profile::{Profile, Unit};

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// A directory of its own under the system's temp directory, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("corprof-record-{name}-{}", std::process::id()));
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

/// The DOM Chromium built from `file`, after its scripts ran.
fn dump_dom(chromium: &Path, file: &Path, scratch: &Path) -> String {
    let out_path = scratch.join("dom.txt");
    let err_path = scratch.join("chromium.err");
    let mut child = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1920,1080"])
        .arg(format!("--user-data-dir={}", scratch.join("profile").display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s on {}", file.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = std::fs::read_to_string(&out_path).unwrap();
    assert!(
        status.success() && !dom.is_empty(),
        "chromium failed on {} ({status}): {}",
        file.display(),
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    dom
}

/// The labels of the flame graph's frames in a dumped DOM: the `<text>` contents after
/// `id="frames"`, unescaped and trimmed.
fn frame_labels(dom: &str) -> Vec<String> {
    let at = dom.find("id=\"frames\"").expect("no frames group in the rendered DOM");
    let mut labels = Vec::new();
    let mut rest = &dom[at..];
    while let Some(open) = rest.find("<text") {
        let body = &rest[open..];
        let start = body.find('>').unwrap() + 1;
        let end = body.find("</text>").unwrap();
        let label = body[start..end].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
        labels.push(label.trim().to_string());
        rest = &body[end..];
    }
    labels
}

fn profile() -> Profile {
    let frames = |s: &str| s.split(';').map(str::to_string).collect::<Vec<_>>();
    let mut p = Profile::new(Unit::Samples);
    p.add(&frames("[thread Main];Shop.Checkout::Run;Shop.Cart::Total"), 600, 0);
    p.add(&frames("[thread Main];Shop.Checkout::Run"), 100, 0);
    p.add(&frames("[thread Worker];Shop.Mail::Send;System.Collections.Generic.List<int>::Add"), 300, 0);
    p
}

#[test]
fn flame_graphs_show_their_frames_in_chromium() {
    let Some(chromium) = chromium() else {
        eprintln!(
            "\n\n!!!!!!!! SKIPPED: the browser check needs Debian's `chromium`, which is not installed \
             (`bash scripts/setup` as root installs it) !!!!!!!!\n\n"
        );
        return;
    };
    let dir = TempDir::new("browser");
    for format in [Format::Svg, Format::Html] {
        let file = dir.0.join(format!("flame.{}", format.extension()));
        let mut out = Vec::new();
        formats::write(&profile(), format, "Shop <cpu>", &mut out).unwrap();
        std::fs::write(&file, out).unwrap();
        let dom = dump_dom(&chromium, &file, &dir.0);
        let labels = frame_labels(&dom);
        // Written empty, filled by the script in the browser.
        assert!(labels.iter().any(|l| l == "all"), "{format:?}: the script did not run: {labels:?}");
        for name in [
            "[thread Main]",
            "Shop.Checkout::Run",
            "Shop.Cart::Total",
            "[thread Worker]",
            "Shop.Mail::Send",
            "System.Collections.Generic.List<int>::Add",
        ] {
            assert!(labels.iter().any(|l| l == name), "{format:?}: {name:?} not shown; labels {labels:?}");
        }
        assert!(dom.contains("Shop &lt;cpu&gt;"), "{format:?}: the title is not shown");
    }
}
