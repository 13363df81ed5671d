//! `corprof record --native` end to end on CoreCLR 8.0.4 and 3.1.23, with the RecordNative app
//! (tests/apps/RecordNative) and the library it calls, built here from its spin.c with cc: a
//! collection's frames in libcoreclr.so beneath the managed method that allocated; a library's
//! frames named `lib!symbol` where it has symbols and `lib` where it is stripped, with their
//! offsets kept in the raw formats, found through frames that keep no frame pointer; a library
//! unloaded while it is sampled; and `--native` refused where it cannot work.
//!
//! Needs the profiler library next to the command (`cargo build -p corprof-record-profiler`),
//! the apps and runtimes of `bash scripts/setup`, and a C compiler (`cc`, which Rust's linking
//! needs too) and `strip`.

mod support;
use support::{Output, TempDir, clean};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// Waits for `child` (killing it after [`RUN_TIMEOUT`]) and collects its output.
fn finish(child: Child) -> Output {
    support::finish_within(child, RUN_TIMEOUT)
}

/// The native libraries RecordNative calls, built into `dir`: libcorprofnative.so (with its
/// symbols), libcorprofstripped.so (the same, stripped) and libcorprofunload.so (a copy).
fn build_libraries(dir: &Path) {
    let source = support::root().join("tests/apps/RecordNative/spin.c");
    let named = dir.join("libcorprofnative.so");
    let status = Command::new("cc")
        .args(["-O2", "-fomit-frame-pointer", "-shared", "-fPIC", "-o"])
        .arg(&named)
        .arg(&source)
        .status()
        .expect("cannot run cc");
    assert!(status.success(), "cc {}", source.display());
    let status = Command::new("strip").arg("-o").arg(dir.join("libcorprofstripped.so")).arg(&named).status();
    assert!(status.expect("cannot run strip").success(), "strip");
    std::fs::copy(&named, dir.join("libcorprofunload.so")).unwrap();
}

/// Records RecordNative `args` on `runtime` with `options`, its libraries on LD_LIBRARY_PATH;
/// checks the app's output and exit, and gives the command's output and the recording's text.
fn record(runtime: &str, options: &[&str], args: &[&str], test: &str) -> (Output, String) {
    let dir = TempDir::new(test);
    build_libraries(&dir.0);
    let out = dir.0.join("out");
    let mut cmd = Command::new(support::corprof_exe());
    clean(&mut cmd);
    cmd.env("LD_LIBRARY_PATH", &dir.0);
    cmd.args(["record"]).args(options).arg("-o").arg(&out).arg("--");
    cmd.arg(support::dotnet(runtime)).arg(support::app("RecordNative")).args(args);
    let run = finish(cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap());
    let said = format!("CoreCLR {runtime} {options:?} {args:?}");
    assert_eq!(run.code, Some(0), "{said}: {}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, format!("RecordNative {} done\n", args[0]), "{said}: {}", run.stderr);
    let text = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{said}: no output: {e}\n{}", run.stderr));
    (run, text)
}

/// The folded text's stacks and values.
fn folded(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .map(|line| {
            let (stack, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not folded: {line:?}"));
            (stack.to_string(), value.parse().unwrap_or_else(|_| panic!("not folded: {line:?}")))
        })
        .collect()
}

/// The samples of the stacks rooted at `root` (a thread) that `keep` takes, and of them all.
fn share(stacks: &BTreeMap<String, u64>, root: &str, keep: impl Fn(&[&str]) -> bool) -> (u64, u64) {
    let (mut kept, mut all) = (0, 0);
    for (stack, value) in stacks {
        let frames: Vec<&str> = stack.split(';').collect();
        if frames[0] == root {
            all += value;
            if keep(&frames) {
                kept += value;
            }
        }
    }
    (kept, all)
}

/// Whether a frame `inner` lies beneath (is called, at any depth, by) a frame `outer`.
fn beneath(frames: &[&str], outer: &str, inner: impl Fn(&str) -> bool) -> bool {
    frames.iter().position(|f| *f == outer).is_some_and(|at| frames[at + 1..].iter().any(|f| inner(f)))
}

const ALLOCATE: &str = "RecordNativeApp.Program::Allocate";

/// A GC-heavy thread recorded with `--native`: a real share of its samples have libcoreclr.so
/// frames (the collections it triggers, and the allocator's slow path) beneath
/// `Program::Allocate`. Without `--native`, the same run shows them as one `[native]` and no
/// library at all.
fn gc_beneath_the_allocating_method(runtime: &str) {
    let options = ["--native", "--interval-ms", "2", "--format", "folded"];
    let (_, text) = record(runtime, &options, &["gc", "1500"], &format!("gc-native-{runtime}"));
    let stacks = folded(&text);
    let in_runtime = |frames: &[&str]| beneath(frames, ALLOCATE, |f| f.starts_with("libcoreclr.so"));
    let (gc, all) = share(&stacks, "[thread Allocator]", in_runtime);
    let (allocate, _) = share(&stacks, "[thread Allocator]", |frames| frames.contains(&ALLOCATE));
    assert!(
        all >= 100 && allocate * 10 >= all * 9 && gc * 10 >= all,
        "CoreCLR {runtime} --native: of {all} samples of the Allocator, {allocate} in Allocate, {gc} with \
         libcoreclr.so beneath it:\n{text}"
    );
    assert!(!text.contains("[native]"), "CoreCLR {runtime} --native: a [native] frame");
    if runtime == "3" {
        // 3.1.23's libcoreclr.so keeps its symbols: the allocation helper the JIT's code calls is
        // named (the README's example).
        let named = |frames: &[&str]| beneath(frames, ALLOCATE, |f| f == "libcoreclr.so!JIT_NewArr1");
        let (named, _) = share(&stacks, "[thread Allocator]", named);
        assert!(named > 0, "CoreCLR 3: no libcoreclr.so!JIT_NewArr1 beneath Allocate:\n{text}");
    }

    let options = ["--interval-ms", "2", "--format", "folded"];
    let (_, text) = record(runtime, &options, &["gc", "1500"], &format!("gc-plain-{runtime}"));
    let stacks = folded(&text);
    let (folded_native, all) = share(&stacks, "[thread Allocator]", |f| beneath(f, ALLOCATE, |f| f == "[native]"));
    assert!(
        all >= 100 && folded_native * 10 >= all,
        "CoreCLR {runtime}: of {all} samples, {folded_native} with [native] beneath Allocate:\n{text}"
    );
    assert!(!text.contains(".so"), "CoreCLR {runtime} without --native: a library named:\n{text}");
}

#[test]
fn native_gc_beneath_the_allocating_method_8() {
    gc_beneath_the_allocating_method("8");
}

#[test]
fn native_gc_beneath_the_allocating_method_3() {
    gc_beneath_the_allocating_method("3");
}

/// A P/Invoke target's frames: named `lib!symbol` by the library's symbols (its exported entry
/// by .dynsym, the two local functions beneath it by .symtab), `lib` where it is stripped (the
/// entry keeps its .dynsym name); each of the two frames that keep no frame pointer found (the
/// walk unwinds them by the library's .eh_frame); the raw formats keep every native frame's
/// offset in its library, the others merge the offsets.
fn named_by_symbols_or_library(runtime: &str) {
    let options = ["--native", "--interval-ms", "2", "--format", "folded"];
    let (run, text) = record(runtime, &options, &["pinvoke", "3000"], &format!("pinvoke-{runtime}"));
    let stacks = folded(&text);
    // The summary the command prints names frames as the text format does.
    assert!(run.stderr.contains("corprof: top frames by self samples"), "CoreCLR {runtime}: {}", run.stderr);
    assert!(!run.stderr.contains(" (+0x"), "CoreCLR {runtime}: the summary keeps an offset: {}", run.stderr);
    // The entry, then its callee, then the leaf: consecutive frames.
    fn chain(frames: &[&str], lib: &str, outer: &str, inner: &str) -> bool {
        let entry = format!("{lib}!corprof_spin_entry");
        frames.windows(3).any(|w| w == [entry.as_str(), outer, inner])
    }
    let named = |f: &[&str]| {
        chain(f, "libcorprofnative.so", "libcorprofnative.so!spin_outer", "libcorprofnative.so!spin_inner")
    };
    let named_all = |f: &[&str]| named(f) && beneath(f, "RecordNativeApp.Program::Named", |_| true);
    let (whole, all) = share(&stacks, "[thread Native]", named_all);
    let (in_named, _) = share(&stacks, "[thread Native]", |f| f.contains(&"RecordNativeApp.Program::Named"));
    assert!(
        in_named >= 50 && whole * 10 >= in_named * 8,
        "CoreCLR {runtime}: of {all} samples, {in_named} in Named, {whole} with the library's 3 frames:\n{text}"
    );
    let stripped = |f: &[&str]| chain(f, "libcorprofstripped.so", "libcorprofstripped.so", "libcorprofstripped.so");
    let (whole, _) =
        share(&stacks, "[thread Native]", |f| stripped(f) && beneath(f, "RecordNativeApp.Program::Stripped", |_| true));
    let (in_stripped, _) = share(&stacks, "[thread Native]", |f| f.contains(&"RecordNativeApp.Program::Stripped"));
    assert!(
        in_stripped >= 50 && whole * 10 >= in_stripped * 8,
        "CoreCLR {runtime}: {in_stripped} samples in Stripped, {whole} with the library's 3 frames:\n{text}"
    );
    assert!(!text.contains(" (+0x"), "CoreCLR {runtime}: folded keeps an offset");

    // speedscope keeps the offsets: the stripped library's frames are each `lib (+0x<hex>)`, at
    // the addresses of its code (.text lies within its first 8 KiB).
    let options = ["--native", "--interval-ms", "2", "--format", "speedscope"];
    let (_, text) = record(runtime, &options, &["pinvoke", "1000"], &format!("pinvoke-json-{runtime}"));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> =
        json["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    let offsets: Vec<u64> = names
        .iter()
        .filter_map(|n| n.strip_prefix("libcorprofstripped.so (+0x")?.strip_suffix(')'))
        .map(|hex| u64::from_str_radix(hex, 16).unwrap())
        .collect();
    assert!(
        offsets.len() >= 2 && offsets.iter().all(|&o| (0x1000..0x2000).contains(&o)),
        "CoreCLR {runtime}: stripped frames {offsets:x?} of {names:?}"
    );
}

#[test]
fn native_frames_named_by_symbols_or_library_8() {
    named_by_symbols_or_library("8");
}

#[test]
fn native_frames_named_by_symbols_or_library_3() {
    named_by_symbols_or_library("3");
}

/// A library loaded, sampled and unloaded 300 times at 1 kHz: samples land in it and are named
/// after it is gone (by what was read of it while it was mapped, or as `[unknown]` if it came
/// and went between two looks); the app's output and exit are as they would be.
fn an_unloaded_library(runtime: &str) {
    let options = ["--native", "--interval-ms", "1", "--format", "folded"];
    let (run, text) = record(runtime, &options, &["unload", "300"], &format!("unload-{runtime}"));
    let stacks = folded(&text);
    let (unload, all) = share(&stacks, "[thread Unload]", |f| f.contains(&"RecordNativeApp.Program::Unload"));
    let (named, _) = share(&stacks, "[thread Unload]", |f| f.contains(&"libcorprofunload.so!spin_inner"));
    assert!(all > 0 && unload > 0 && named > 0, "CoreCLR {runtime}: {}\n{text}", run.stderr);
}

#[test]
fn native_frames_of_an_unloaded_library_8() {
    an_unloaded_library("8");
}

#[test]
fn native_frames_of_an_unloaded_library_3() {
    an_unloaded_library("3");
}

/// `--native` reads frames in the signal sampler's handler: with the suspension sampler or a
/// mode other than cpu it is refused before anything runs, with a usage error (status 2).
#[test]
fn native_is_refused_where_it_cannot_work() {
    let dir = TempDir::new("native-refused");
    for options in [&["--native", "--sampler", "suspend"][..], &["--native", "--mode", "alloc"][..]] {
        let mut cmd = Command::new(support::corprof_exe());
        clean(&mut cmd);
        let out: PathBuf = dir.0.join("out.folded");
        cmd.args(["record"]).args(options).arg("-o").arg(&out).args(["--", "/nonexistent/dotnet", "app.dll"]);
        let run = finish(cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap());
        assert_eq!(run.code, Some(2), "{options:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("--native is for --mode cpu with the signal sampler"),
            "{options:?}: {}",
            run.stderr
        );
        assert!(!out.exists(), "{options:?}: an output was written");
    }
}
