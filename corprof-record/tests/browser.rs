//! The browser check: the SVG and HTML flame graphs opened in headless Chromium (Debian's
//! `chromium`, installed by scripts/setup), the DOM dumped after the page's scripts ran, and the
//! frame names looked for among the labels the browser laid out. inferno writes the root frame's
//! label empty and its script fills every label to the width the browser measured, so a root
//! label reading `all` shows the script ran in the browser.
//!
//! And speedscope's own app (the npm package, which scripts/setup unpacks into .tools/speedscope)
//! opening the speedscope output in the same browser, the way its `speedscope FILE` command does:
//! its profile list and its sandwich table (both DOM, not canvas) show the threads and frames
//! with the weights written.
//!
//! Without chromium (or speedscope) a test says so loudly and passes: it cannot run, which is not
//! a failure of the formats.

mod support;
use support::TempDir;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use corprof_record::formats::{self, Format};
use corprof_record::profile::{Profile, Unit};

/// Says a check is skipped for want of a tool, or fails when the test command demands every
/// tool (`CORPROF_REQUIRE_TOOLS=1`, set by scripts/test after its set-up installed them): there a
/// skip would be a test that cannot fail.
fn skip(why: &str) {
    assert!(std::env::var_os("CORPROF_REQUIRE_TOOLS").is_none(), "{why}, and CORPROF_REQUIRE_TOOLS is set");
    eprintln!("\n\n!!!!!!!! SKIPPED: {why} !!!!!!!!\n\n");
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// The DOM Chromium built from `file`, after its scripts ran.
fn dump_dom(chromium: &Path, file: &Path, scratch: &Path) -> String {
    dump_dom_url(chromium, &format!("file://{}", file.display()), scratch)
}

/// The DOM Chromium built from `url`, after its scripts ran (and at most 5 s of its timers).
fn dump_dom_url(chromium: &Path, url: &str, scratch: &Path) -> String {
    let file = url;
    let out_path = scratch.join("dom.txt");
    let err_path = scratch.join("chromium.err");
    let mut child = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1920,1080"])
        .arg("--virtual-time-budget=5000")
        .arg(format!("--user-data-dir={}", scratch.join("profile").display()))
        .arg("--dump-dom")
        .arg(url)
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
            panic!("chromium did not finish within 90 s on {file}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = std::fs::read_to_string(&out_path).unwrap();
    assert!(
        status.success() && !dom.is_empty(),
        "chromium failed on {file} ({status}): {}",
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
        skip(
            "the browser check needs Debian's `chromium`, which is not installed \
             (`bash scripts/setup` as root installs it)",
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

/// The text of a dumped DOM, one trimmed piece per text node, entities of the dump undone.
fn dom_texts(dom: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for piece in dom.split('<').filter_map(|tag| tag.split_once('>').map(|(_, text)| text)) {
        let text = piece.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
        if !text.trim().is_empty() {
            texts.push(text.trim().to_string());
        }
    }
    texts
}

fn base64(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            match i <= chunk.len() {
                true => out.push(DIGITS[(n >> (18 - 6 * i) & 63) as usize] as char),
                false => out.push('='),
            }
        }
    }
    out
}

#[test]
fn base64_is_right() {
    assert_eq!(base64(b"corprof"), "Y29ycHJvZg==");
    assert_eq!(base64(b"ab"), "YWI=");
    assert_eq!(base64(b"abc"), "YWJj");
}

#[test]
fn speedscope_opens_the_speedscope_output() {
    let Some(chromium) = chromium() else {
        skip("speedscope's check needs Debian's `chromium` (bash scripts/setup)");
        return;
    };
    let app = std::env::var_os("CORPROF_SPEEDSCOPE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/speedscope"))
        .join("dist/release/index.html");
    if !app.is_file() {
        skip(&format!("speedscope's app is not at {} (bash scripts/setup fetches it)", app.display()));
        return;
    }
    let dir = TempDir::new("speedscope");
    let mut json = Vec::new();
    formats::write(&profile(), Format::Speedscope, "Shop <cpu>", &mut json).unwrap();
    // What speedscope's own command line does: a script that hands the file to the app.
    let script = dir.0.join("profile.js");
    std::fs::write(&script, format!("speedscope.loadFileFromBase64(\"shop.speedscope.json\", \"{}\")", base64(&json)))
        .unwrap();
    let url = format!("file://{}#localProfilePath={}&view=sandwich", app.display(), script.display());
    // speedscope reads the file asynchronously: on a busy machine the first DOM can come before
    // it has drawn, so a page without the profile list is loaded again (three tries).
    let has_run =
        |texts: &[String], run: &[&str]| texts.windows(run.len()).any(|w| w.iter().zip(run).all(|(a, b)| a == b));
    let mut texts = Vec::new();
    for _ in 0..3 {
        texts = dom_texts(&dump_dom_url(&chromium, &url, &dir.0));
        if has_run(&texts, &["1", "[thread Main]"]) {
            break;
        }
    }
    let has = |run: &[&str]| has_run(&texts, run);
    assert!(has(&["Shop <cpu> - speedscope"]), "the file's name is not the page's: {texts:?}");
    // The profile list: one per thread, with its total weight.
    assert!(has(&["1", "[thread Main]", "700", "2", "[thread Worker]", "300"]), "profiles: {texts:?}");
    // The sandwich table of the first profile: total, self, name.
    assert!(has(&["600 (86%)", "600 (86%)", "Shop.Cart::Total"]), "sandwich: {texts:?}");
    assert!(has(&["700 (100%)", "100 (14%)", "Shop.Checkout::Run"]), "sandwich: {texts:?}");
    // The thread is the profile, not a frame of it.
    let thread_row = texts.windows(2).any(|w| w[0].ends_with("%)") && w[1].starts_with("[thread"));
    assert!(!thread_row, "a thread among the frames: {texts:?}");
}

/// The README's pictures remade in one step (scripts/readme-pictures, into a scratch folder):
/// two PNGs, 1200 pixels wide, the flame graph as tall as its graph and the treemap 800.
#[test]
fn the_readme_pictures_are_remade_in_one_step() {
    if chromium().is_none() {
        skip("scripts/readme-pictures needs Debian's `chromium` (bash scripts/setup)");
        return;
    }
    let out = TempDir::new("readme-pictures");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let run = Command::new("bash")
        .arg(root.join("scripts/readme-pictures"))
        .arg(&out.0)
        .env_remove("CORPROF_RECORD_MODE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    for (name, tall) in [("cpu-flamegraph", None), ("heap-treemap", Some(800))] {
        let png = std::fs::read(out.0.join(format!("{name}.png"))).unwrap_or_else(|e| panic!("{name}.png: {e}"));
        assert_eq!(png.get(..8), Some(&b"\x89PNG\r\n\x1a\n"[..]), "{name}.png is not a PNG");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!(width, 1200, "{name}.png");
        match tall {
            Some(h) => assert_eq!(height, h, "{name}.png"),
            // Threads, their frames and the title: more than a handful of 16-pixel rows.
            None => assert!((100..2000).contains(&height), "{name}.png is {height} pixels tall"),
        }
    }
}
