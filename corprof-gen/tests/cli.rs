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
fn check_passes_on_every_shared_header_with_the_same_annotations() {
    // Every override is listed with its reason (cor.h's four only where the header has cor.h);
    // without cor.h, `flags: CorOpenFlags` names no enum and is noted; without corprof.idl, the
    // count of each `[size_is]` parameter is unconfirmed, a warning each (and no other warning),
    // counted in one note. Absent: interfaces (Info15 before runtime-info15) and methods
    // (`since:` EventPipeCreateProvider2 in runtime-net8).
    for (version, absent, overrides, no_enum, unconfirmed) in [
        ("runtime-info15", 0, 5, 0, 51),
        ("runtime-net8", 2, 5, 0, 51),
        ("runtime-main", 3, 5, 0, 0),
        ("coreclr-3.x", 12, 1, 1, 45),
    ] {
        let o = gen_cmd().arg("check").arg("--include").arg(shared(version)).output().unwrap();
        let t = text(&o);
        assert!(o.status.success(), "{version}: {t}");
        assert_eq!(t.matches("is not declared by this header").count(), absent, "{version}: {t}");
        assert_eq!(t.matches("\nnote: override: ").count() + usize::from(t.starts_with("note: override: ")), overrides);
        assert!(t.contains("note: override: `rFieldOffset` of ICorProfilerInfo2::GetClassLayout: MIDL says [out][in]"));
        assert_eq!(t.matches("declares no enum `CorOpenFlags`").count(), no_enum, "{version}: {t}");
        let warnings: Vec<&str> = t.lines().filter(|l| l.starts_with("warning: ")).collect();
        assert_eq!(warnings.len(), unconfirmed, "{version}: {t}");
        for w in &warnings {
            assert!(w.contains(" unconfirmed: the header says `["), "{version}: {w}");
        }
        let summary = format!("note: {unconfirmed} `len`/`cap` count(s) of `[size_is]`/`[length_is]` parameters");
        assert_eq!(t.matches(&summary).count(), usize::from(unconfirmed > 0), "{version}: {t}");
        let notes = absent + overrides + no_enum + usize::from(unconfirmed > 0);
        assert!(t.ends_with(&format!("corprof-gen: ok ({unconfirmed} warning(s), {notes} note(s))\n")), "{t}");
        assert!(!t.contains("error"), "{t}");
    }
}

#[test]
fn expand_prints_formatted_rust_for_the_header() {
    let o = gen_cmd().arg("expand").arg("--include").arg(shared("coreclr-3.x")).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // The unconfirmed counts (no corprof.idl there) in one line, as the build prints them.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.starts_with("warning: 45 `len`/`cap` count(s) of `[size_is]` parameters unconfirmed: "), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
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
    header_list(&tmp.join("ann"));
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
        "+ method ICorProfilerCallback11::HRESULT LoadAsNotficationOnly(BOOL * pbNotificationOnly)",
        "+ interface ICorProfilerInfo12 (7 methods, base ICorProfilerInfo11)",
        "annotations: complete for the new header",
    ] {
        assert!(t.contains(line), "missing `{line}` in:\n{t}");
    }
}

/// The .NET 8 header fixes Callback11's typo in the same slot: `diff` says "renamed", not a
/// +/- pair, and the rest of its output is exactly the two new interfaces, each with its methods.
#[test]
fn diff_reports_a_renamed_method_as_a_rename() {
    let o = gen_cmd().arg("diff").arg(shared("runtime-main")).arg(shared("runtime-net8")).output().unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let expected = "\
~ method ICorProfilerCallback11::LoadAsNotficationOnly renamed LoadAsNotificationOnly (same slot, same parameters)
+ interface ICorProfilerInfo13 (3 methods, base ICorProfilerInfo12)
+ method ICorProfilerInfo13::HRESULT CreateHandle(ObjectID object, COR_PRF_HANDLE_TYPE type, ObjectHandleID * pHandle)
+ method ICorProfilerInfo13::HRESULT DestroyHandle(ObjectHandleID handle)
+ method ICorProfilerInfo13::HRESULT GetObjectIDFromHandle(ObjectHandleID handle, ObjectID * pObject)
+ interface ICorProfilerInfo14 (2 methods, base ICorProfilerInfo13)
+ method ICorProfilerInfo14::HRESULT EnumerateNonGCObjects(ICorProfilerObjectEnum * * ppEnum)
+ method ICorProfilerInfo14::HRESULT GetNonGCHeapBounds(ULONG cObjectRanges, ULONG * pcObjectRanges, COR_PRF_NONGC_HEAP_RANGE * ranges)
+ type COR_PRF_HANDLE_TYPE (enum)
+ type ObjectHandleID (typedef of void **)
+ type COR_PRF_NONGC_HEAP_RANGE (struct, 3 fields)
+ const COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED 0x100
+ const COR_PRF_HANDLE_TYPE_WEAK 0x1
+ const COR_PRF_HANDLE_TYPE_STRONG 0x2
+ const COR_PRF_HANDLE_TYPE_PINNED 0x3
+ const COR_PRF_CODEGEN_DEBUG_INFO 0x3
annotations: complete for the new header
";
    assert_eq!(String::from_utf8_lossy(&o.stdout), expected);
}

/// The bump to runtime-info15, whole: the new interface with its method, the method new to
/// Info14, and the types and constants that change what an attached profiler may do (the
/// generator's `diff` module documents the format).
#[test]
fn diff_shows_every_change_of_the_info15_bump() {
    let o = gen_cmd().arg("diff").arg(shared("runtime-net8")).arg(shared("runtime-info15")).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let expected = "\
+ method ICorProfilerInfo14::HRESULT EventPipeCreateProvider2(const WCHAR * providerName, EventPipeProviderCallback * pCallback, EVENTPIPE_PROVIDER * pProvider)
+ interface ICorProfilerInfo15 (1 methods, base ICorProfilerInfo14)
+ method ICorProfilerInfo15::HRESULT EnumerateGCHeapObjects(ObjectCallback callback, void * callbackState)
+ type COR_PRF_FILTER_DATA (struct, 3 fields)
+ type EventPipeProviderCallback (function type)
+ type ObjectCallback (function pointer)
~ const COR_PRF_ALLOWABLE_AFTER_ATTACH 0x100502fe → 0x106502fe
~ const COR_PRF_MONITOR_IMMUTABLE 0xeef8cc00 → 0xee98cc00
+ const COR_PRF_HIGH_MONITOR_GC_SKIP_ALLOCATED_BY_CLASS_STATISTIC 0x200
annotations: complete for the new header
";
    assert_eq!(String::from_utf8_lossy(&o.stdout), expected);
}

/// One change of each kind on a small pair (tests/diff-pair): methods changed, added, removed;
/// interfaces added and removed; types grown, redeclared, added (struct, function type,
/// function pointer) and removed; constants added, changed (hex in a flag enum, decimal
/// otherwise) and removed; each section in the new header's order, removals last.
#[test]
fn diff_shows_each_kind_of_change_in_a_stable_order() {
    let pair = repo().join("corprof-gen/tests/diff-pair");
    let o = gen_cmd()
        .arg("diff")
        .arg(pair.join("old"))
        .arg(pair.join("new"))
        .arg("--annotations")
        .arg(&pair)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let changes = out.split("annotations:").next().unwrap();
    let expected = "\
~ method IFixInfo::HRESULT GetValue(ULONG64 * pValue)
    was HRESULT GetValue(ULONG * pValue)
+ method IFixInfo::HRESULT CreateProvider(FixProviderCallback * pCallback)
- method IFixInfo::Retired
+ interface IFixInfo2 (1 methods, base IFixInfo)
+ method IFixInfo2::HRESULT EnumerateObjects(FixObjectCallback callback, void * callbackState)
- interface IFixOld
~ type FIX_RANGE (struct, 2 fields → struct, 3 fields)
~ type FIX_RETYPED (struct, 1 field; declaration changed)
+ type FIX_FILTER_DATA (struct, 3 fields)
+ type FixProviderCallback (function type)
+ type FixObjectCallback (function pointer)
- type FIX_GONE (struct, 1 field)
+ const FIX_MONITOR_NEW 0x8
~ const FIX_MONITOR_IMMUTABLE 0x3 → 0x1
~ const FixKindTwo 2 → 3
- const FIX_MONITOR_OLD 0x4
";
    assert_eq!(changes, expected);
    let again = gen_cmd()
        .arg("diff")
        .arg(pair.join("old"))
        .arg(pair.join("new"))
        .arg("--annotations")
        .arg(&pair)
        .output()
        .unwrap();
    assert_eq!(again.stdout, o.stdout, "the same order every run");
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
    // In the repository, as gen_cmd(): its annotations say which headers to parse.
    let o = Command::new("unshare")
        .current_dir(repo())
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

/// A fresh folder under the system temp dir, for one test.
fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("corprof-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Gives an annotation folder corprof's header list (every set of annotations needs one).
fn header_list(folder: &Path) {
    std::fs::copy(repo().join("annotations/headers.yaml"), folder.join("headers.yaml")).unwrap();
}

/// An annotation folder with one reviewed callback entry.
fn callbacks_folder(tmp: &Path) -> PathBuf {
    let ann = tmp.join("ann");
    std::fs::create_dir_all(&ann).unwrap();
    header_list(&ann);
    std::fs::write(ann.join("callbacks.yaml"), "ICorProfilerCallback:\n  Initialize:\n    pICorProfilerInfoUnk: in\n")
        .unwrap();
    ann
}

fn bootstrap(ann: &Path, write: &Path) -> Output {
    gen_cmd()
        .arg("bootstrap")
        .arg("--include")
        .arg(shared("runtime-main"))
        .arg("--annotations")
        .arg(ann)
        .arg("--write")
        .arg(write)
        .output()
        .unwrap()
}

#[test]
fn bootstrap_refuses_a_file_that_is_not_annotation_yaml_and_leaves_it_as_it_was() {
    let tmp = temp("refuse");
    let ann = callbacks_folder(&tmp);
    let kept = "\n  = note: the file is left as it was";
    let cases: [(&str, &[u8], String); 3] = [
        (
            "latin1.yaml",
            b"# caf\xe9\nICorProfilerInfo:\n",
            format!(
                "error: {{}} is not UTF-8: byte 0xE9 at byte offset 5 does not start a valid character\n  --> {{}}:1:6\n  \
                 = help: annotation files are UTF-8 YAML: save the file as UTF-8\n\n\
                 error: refusing to write drafts into {{}}: it is not UTF-8 text{kept}"
            ),
        ),
        (
            "broken.yaml",
            b"ICorProfilerInfo:\n  GetClassFromObject: [\n",
            format!(
                "error: malformed annotation YAML: unclosed bracket `[`\n  --> {{}}:2:23\n  = note: the file ends at line 3 before it is closed\n\n\
                 error: refusing to write drafts into {{}}: it is not valid annotation YAML{kept}"
            ),
        ),
        (
            "two.yaml",
            b"ICorProfilerInfo:\n  GetClassFromObject:\n    pClassId: out\n---\nIFoo:\n",
            format!(
                "error: an annotation file holds one YAML document; a second one starts here\n  --> {{}}:4:1\n  \
                 = note: several documents (separated by `---`) in one file are not supported\n  \
                 = help: put the second document in a file of its own\n\n\
                 error: refusing to write drafts into {{}}: it is not valid annotation YAML{kept}"
            ),
        ),
    ];
    for (name, bytes, expected) in cases {
        let file = tmp.join(name);
        std::fs::write(&file, bytes).unwrap();
        let o = bootstrap(&ann, &file);
        let n = expected.matches("error: ").count();
        let expected = expected.replace("{}", &file.display().to_string());
        let aborting = format!("\n\nerror: aborting due to {n} previous error{}\n", if n == 1 { "" } else { "s" });
        assert_eq!(String::from_utf8_lossy(&o.stderr), format!("{expected}{aborting}"), "{name}");
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{name} is unchanged");
        assert!(o.stdout.is_empty(), "{name}");
    }
    // Not a file at all: /dev/full would read forever, a folder cannot be written.
    for target in [PathBuf::from("/dev/full"), tmp.join("ann")] {
        let o = bootstrap(&ann, &target);
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!(
                "error: refusing to write drafts into {}: it is not a regular file{kept}\n\nerror: aborting due to 1 previous error\n",
                target.display()
            )
        );
        assert_eq!(o.status.code(), Some(1));
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_second_bootstrap_merges_into_the_file_instead_of_repeating_its_keys() {
    let tmp = temp("merge");
    let ann = callbacks_folder(&tmp);
    // Outside the annotation folder, so its entries are known only from the file itself.
    let file = tmp.join("drafts.yaml");
    let mine = "# reviewed\nICorProfilerInfo:\n  # by hand\n  GetClassFromObject:\n    pClassId: out  # checked\n";
    std::fs::write(&file, mine).unwrap();
    let o = bootstrap(&ann, &file);
    assert!(o.status.success(), "{}", text(&o));
    let first = std::fs::read_to_string(&file).unwrap();
    assert!(
        first.starts_with(&format!("{mine}  GetClassFromToken:\n    pClassId: {{ dir: out, draft: true }}\n")),
        "{first}"
    );
    let top: Vec<&str> = first.lines().filter(|l| l.ends_with(':') && !l.starts_with([' ', '#'])).collect();
    let mut unique = top.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(top.len(), unique.len(), "every interface once: {top:?}");
    assert!(top.len() > 10, "{top:?}");
    corprof_gen::annotations::Annotations::parse("drafts.yaml", &first).expect("the written file loads");
    // Nothing new the second time: the file stays as it is.
    let again = bootstrap(&ann, &file);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), first);
    assert!(String::from_utf8_lossy(&again.stderr).contains("drafts to merge by hand"));

    // In the annotation folder, an interface of the file that lacks methods gets them under its
    // key (before, they were printed, or appended as a second `ICorProfilerInfo:`).
    let in_folder = ann.join("info.yaml");
    let trimmed = first.replace("  GetClassFromToken:\n    pClassId: { dir: out, draft: true }\n", "");
    std::fs::write(&in_folder, &trimmed).unwrap();
    let o = bootstrap(&ann, &in_folder);
    assert!(o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.starts_with(&format!("corprof-gen: wrote 1 draft entries into {}\n", in_folder.display())),
        "{stderr}"
    );
    let entry = "  GetClassFromToken:\n    pClassId: { dir: out, draft: true }\n";
    let expected = trimmed.replacen("\n\nICorProfilerCallback2:", &format!("\n{entry}\nICorProfilerCallback2:"), 1);
    assert!(std::fs::read_to_string(&in_folder).unwrap() == expected, "the method goes at the end of its interface");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_missing_annotation_folder_is_an_error_in_every_subcommand() {
    let h = shared("runtime-main");
    let expected =
        "error: annotation folder no/such/annotations does not exist\n\nerror: aborting due to 1 previous error\n";
    let runs: [&[&std::ffi::OsStr]; 4] = [
        &["check".as_ref(), "--include".as_ref(), h.as_os_str()],
        &["expand".as_ref(), "--include".as_ref(), h.as_os_str()],
        &["bootstrap".as_ref(), "--include".as_ref(), h.as_os_str()],
        &["diff".as_ref(), h.as_os_str(), h.as_os_str()],
    ];
    for args in runs {
        let o = gen_cmd().args(args).args(["--annotations", "no/such/annotations"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stderr), expected, "{args:?}");
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn an_unknown_interface_to_draft_is_an_error() {
    let o = gen_cmd()
        .arg("bootstrap")
        .arg("--include")
        .arg(shared("runtime-main"))
        .args(["--interface", "ICorProfilerInfo", "--interface", "Nope", "--interface", "IMetaDataImprt"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: unknown interface `Nope`: the header does not declare it\n\n\
         error: unknown interface `IMetaDataImprt`: the header does not declare it\n  = help: did you mean `IMetaDataImport`?\n\n\
         error: aborting due to 2 previous errors\n"
    );
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn output_to_a_closed_pipe_or_a_full_disk_ends_with_one_line_and_a_failure() {
    let full = |args: &[&std::ffi::OsStr]| {
        let o = gen_cmd().args(args).stdout(std::fs::File::create("/dev/full").unwrap()).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let h = shared("runtime-main");
    let disk_full = "error: cannot write the output: No space left on device (os error 28)\n".to_string();
    assert_eq!(full(&["expand".as_ref(), "--include".as_ref(), h.as_os_str()]), (Some(1), disk_full.clone()));
    assert_eq!(full(&["diff".as_ref(), shared("coreclr-3.x").as_os_str(), h.as_os_str()]), (Some(1), disk_full));
    // `expand | head`: the reader is gone before the code is written.
    let mut child = gen_cmd()
        .args(["expand", "--include"])
        .arg(&h)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stderr), "error: cannot write the output: Broken pipe (os error 32)\n");
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn a_huge_name_is_quoted_short() {
    let tmp = temp("huge");
    let name = "y".repeat(10_000_000);
    // Keys longer than 1024 characters are written as explicit `? key` entries.
    let yaml = format!("ICorProfilerCallback:\n  Initialize:\n    pICorProfilerInfoUnk: in\n    ? {name}\n    : in\n");
    std::fs::write(tmp.join("big.yaml"), yaml).unwrap();
    header_list(&tmp);
    let o = gen_cmd()
        .arg("check")
        .arg("--include")
        .arg(shared("runtime-main"))
        .arg("--annotations")
        .arg(&tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let cut = format!("{}…", "y".repeat(200));
    assert!(
        stderr.contains(&format!("error: unknown parameter `{cut}` of ICorProfilerCallback::Initialize\n")),
        "{stderr:.2000}"
    );
    assert!(stderr.len() < 200_000, "{}", stderr.len());
    assert_eq!(o.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn bootstrap_writes_through_a_symbolic_link() {
    let tmp = temp("link");
    let ann = callbacks_folder(&tmp);
    let real = tmp.join("real.yaml");
    std::fs::write(&real, "# mine\n").unwrap();
    std::os::unix::fs::symlink(&real, tmp.join("link.yaml")).unwrap();
    let o = bootstrap(&ann, &tmp.join("link.yaml"));
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::symlink_metadata(tmp.join("link.yaml")).unwrap().file_type().is_symlink());
    let written = std::fs::read_to_string(&real).unwrap();
    assert!(written.starts_with("# mine\n\nICorProfilerCallback2:\n  ThreadNameChanged:\n"), "{written:.300}");
    assert!(written.contains("\nICorProfilerInfo:\n  GetClassFromObject:\n"), "{written:.300}");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The attack's `metadataBlob: { dir: in, len: cbEventData }`: corprof.h says only `[size_is]`,
/// corprof.idl says `size_is(cbMetadataBlob)`. With the IDL in the header folders (its own, or
/// runtime-main's beside .NET 8's header) it is the header-disagreement error; without, a note.
#[test]
fn a_size_is_count_is_checked_where_an_idl_states_it() {
    let tmp = temp("size-is");
    let ann = tmp.join("ann");
    std::fs::create_dir_all(&ann).unwrap();
    for file in std::fs::read_dir(repo().join("annotations")).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.replace(
                "metadataBlob: { dir: in, len: cbMetadataBlob }",
                "metadataBlob: { dir: in, len: cbEventData }",
            );
            std::fs::write(ann.join(path.file_name().unwrap()), text).unwrap();
        }
    }
    let check = |include: &std::ffi::OsStr| {
        let o = gen_cmd().arg("check").arg("--include").arg(include).arg("--annotations").arg(&ann).output().unwrap();
        (o.status.code(), text(&o))
    };
    let error = "error: `metadataBlob` of ICorProfilerCallback10::EventPipeEventDelivered has `len: cbEventData`, \
                 but corprof.idl:2582 says `[in, size_is(cbMetadataBlob)]`";
    let (code, t) = check(shared("runtime-main").as_os_str());
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains(error), "{t}");
    let mut both = shared("runtime-net8").into_os_string();
    both.push(":");
    both.push(shared("runtime-main"));
    let (code, t) = check(&both);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains(&error.replace("but corprof.idl", "but ../runtime-main/corprof.idl")), "{t}");
    let (code, t) = check(shared("runtime-net8").as_os_str());
    assert_eq!(code, Some(0), "{t}");
    // Without the IDL the wrong integer goes unconfirmed: a warning naming the parameter, at its line.
    assert!(
        t.contains(
            "warning: `len: cbEventData` of `metadataBlob` in ICorProfilerCallback10::EventPipeEventDelivered \
             unconfirmed: the header says `[size_is][in]` without naming the count\n  --> "
        ),
        "{t}"
    );
    assert!(t.contains("note: 51 `len`/`cap` count(s) of `[size_is]`/`[length_is]` parameters unconfirmed"), "{t}");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The real annotations with one entry changed by `edit` (old text → new), in a folder of `tmp`.
fn edited_annotations(tmp: &Path, old: &str, new: &str) -> PathBuf {
    let ann = tmp.join("ann");
    std::fs::create_dir_all(&ann).unwrap();
    let mut edited = 0;
    for file in std::fs::read_dir(repo().join("annotations")).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            edited += text.matches(old).count();
            std::fs::write(ann.join(path.file_name().unwrap()), text.replacen(old, new, 1)).unwrap();
        }
    }
    assert!(edited > 0, "no `{old}` in annotations/");
    ann
}

/// The attack's `rgILMapEntries: { dir: in, len: fStartJit }` on ICorProfilerInfo's
/// SetILInstrumentedCodeMap: a `BOOL` is an `int` to C, and with no corprof.idl nothing states
/// the count, yet it is refused by its type, at the entry's line, on every header.
#[test]
fn a_bool_count_is_refused_without_the_idl() {
    let tmp = temp("bool-count");
    let ann = edited_annotations(
        &tmp,
        "rgILMapEntries: { dir: in, len: cILMapEntries }   # the runtime copies the map",
        "rgILMapEntries: { dir: in, len: fStartJit }",
    );
    let line = std::fs::read_to_string(ann.join("info.yaml"))
        .unwrap()
        .lines()
        .position(|l| l.contains("len: fStartJit"))
        .unwrap()
        + 1;
    for version in ["runtime-info15", "runtime-main"] {
        let o = gen_cmd()
            .arg("check")
            .arg("--include")
            .arg(shared(version))
            .arg("--annotations")
            .arg(&ann)
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{version}: {t}");
        let error = format!(
            "error: length parameter `fStartJit` of `rgILMapEntries` is `BOOL`, a boolean: it cannot count elements\n  \
             --> {}:{line}:5\n  = note: declared at corprof.h:",
            ann.join("info.yaml").display()
        );
        assert!(t.contains(&error), "{version}: {t}");
        assert!(
            !t.contains(
                "`len: fStartJit` of `rgILMapEntries` in ICorProfilerInfo::SetILInstrumentedCodeMap unconfirmed"
            ),
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// `--include …/corprof.h` names the header where its folder belongs: every subcommand says so,
/// and so does a build given the file in CORPROF_INCLUDE_DIR (the same check).
#[test]
fn a_header_file_given_as_the_folder_says_to_give_the_folder() {
    let h = shared("runtime-net8");
    let file = h.join("corprof.h");
    let expected = format!(
        "error: header folder {} is a file: give the folder that holds corprof.h\n  = help: `--include {}` (or \
         CORPROF_INCLUDE_DIR={})\n\nerror: aborting due to 1 previous error\n",
        file.display(),
        h.display(),
        h.display()
    );
    let runs: [&[&std::ffi::OsStr]; 4] = [
        &["check".as_ref(), "--include".as_ref(), file.as_os_str()],
        &["expand".as_ref(), "--include".as_ref(), file.as_os_str()],
        &["bootstrap".as_ref(), "--include".as_ref(), file.as_os_str()],
        &["diff".as_ref(), h.as_os_str(), file.as_os_str()],
    ];
    for args in runs {
        let o = gen_cmd().args(args).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stderr), expected, "{args:?}");
        assert_eq!(o.status.code(), Some(1), "{args:?}");
    }
    // The build's path: the variable, through corprof_gen::build::include_dirs and generate.
    let cfg = corprof_gen::Config {
        include_dirs: vec![file.clone()],
        annotations_dirs: vec![repo().join("annotations")],
        display_root: repo(),
        root: "::corprof".into(),
    };
    let Err(e) = corprof_gen::generate(&cfg) else { panic!("a file is no header folder") };
    assert!(e.to_string().starts_with(&expected[..expected.find("\n\n").unwrap()]), "{e}");
}

/// `--write` onto a symbolic link that points nowhere is refused: the link stays, nothing is
/// created where it points.
#[test]
fn bootstrap_refuses_a_dangling_symbolic_link() {
    let tmp = temp("dangling");
    let ann = callbacks_folder(&tmp);
    let link = tmp.join("link.yaml");
    std::os::unix::fs::symlink(tmp.join("gone/real.yaml"), &link).unwrap();
    let o = bootstrap(&ann, &link);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "error: refusing to write drafts into {}: it is a symbolic link to {}, which does not exist\n  = note: \
             the file is left as it was\n\nerror: aborting due to 1 previous error\n",
            link.display(),
            tmp.join("gone/real.yaml").display()
        )
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
    assert!(!tmp.join("gone").exists());
    let _ = std::fs::remove_dir_all(&tmp);
}

/// `--write` onto the header list is refused: drafts are no headers, and the list is left as it
/// was (it is no annotation file; the folder's loading skips it as one).
#[test]
fn bootstrap_refuses_to_write_into_the_header_list() {
    let tmp = temp("list");
    let ann = callbacks_folder(&tmp);
    let list = ann.join("headers.yaml");
    let before = std::fs::read(&list).unwrap();
    let o = bootstrap(&ann, &list);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "error: refusing to write drafts into {}: it is the list of headers to parse, not an annotation file\n  \
             = note: the file is left as it was\n\nerror: aborting due to 1 previous error\n",
            list.display()
        )
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(&list).unwrap(), before);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// `--write` onto a file with another hard link rewrites the one file both names share.
#[test]
fn bootstrap_keeps_a_hard_link_one_file() {
    use std::os::unix::fs::MetadataExt;
    let tmp = temp("hard");
    let ann = callbacks_folder(&tmp);
    let (a, b) = (tmp.join("a.yaml"), tmp.join("b.yaml"));
    std::fs::write(&a, "# mine\n").unwrap();
    std::fs::hard_link(&a, &b).unwrap();
    let o = bootstrap(&ann, &b);
    assert!(o.status.success(), "{}", text(&o));
    let (ma, mb) = (std::fs::metadata(&a).unwrap(), std::fs::metadata(&b).unwrap());
    assert_eq!((ma.ino(), ma.nlink()), (mb.ino(), 2), "still one file");
    let written = std::fs::read_to_string(&a).unwrap();
    assert!(written.starts_with("# mine\n\nICorProfilerCallback2:\n"), "{written:.200}");
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 3, "no temporary file is left: {left:?}");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Runs `cmd`, failing the test if it has not finished within a minute (a hang, not a slow
/// machine: each run here takes seconds).
fn output_within_a_minute(cmd: &mut Command) -> Output {
    use std::io::Read;
    let mut child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Drained meanwhile, so a full pipe cannot stall the child.
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let stderr = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after a minute (hangs): {cmd:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// A file over `len` bytes that takes no disk space.
fn sparse(path: &Path, len: u64) {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}

/// Annotation files that are not what they claim: a link to /dev/zero (read without end before),
/// a FIFO (waited on forever), a folder, a file over the 16 MiB cap. Each is an error naming its
/// path and what it is, all at once, and the command finishes.
#[test]
fn annotation_files_that_are_no_regular_files_are_refused() {
    let tmp = temp("special-yaml");
    let ann = callbacks_folder(&tmp);
    std::os::unix::fs::symlink("/dev/zero", ann.join("zero.yaml")).unwrap();
    mkfifo(&ann.join("info.yaml"));
    std::fs::create_dir(ann.join("folder.yaml")).unwrap();
    sparse(&ann.join("big.yaml"), (16 << 20) + 1);
    std::fs::create_dir(ann.join("docs")).unwrap();
    mkfifo(&ann.join("docs/info.yaml"));
    let o = output_within_a_minute(
        gen_cmd().arg("check").arg("--include").arg(shared("runtime-main")).arg("--annotations").arg(&ann),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let shown = |name: &str| ann.join(name).display().to_string();
    for (name, why) in [
        ("zero.yaml", "it is a symbolic link to /dev/zero, a character device, not a regular file"),
        ("info.yaml", "it is a FIFO (named pipe), not a regular file"),
        ("folder.yaml", "it is a folder, not a regular file"),
        ("big.yaml", "it holds 16777217 bytes, over the 16 MiB a file may hold here"),
        ("docs/info.yaml", "it is a FIFO (named pipe), not a regular file"),
    ] {
        assert!(t.contains(&format!("error: cannot read {}: {why}\n", shown(name))), "{name}: {t}");
    }
    // `bootstrap --write` into a FIFO is refused too, and does not wait for a writer.
    let o = output_within_a_minute(
        gen_cmd()
            .arg("bootstrap")
            .arg("--include")
            .arg(shared("runtime-main"))
            .arg("--annotations")
            .arg(callbacks_folder(&tmp.join("other")))
            .arg("--write")
            .arg(ann.join("info.yaml")),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("it is not a regular file"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The header list, the headers and the IDL: a FIFO `headers.yaml` is an error at it (it was
/// "no headers.yaml"), a FIFO `corprof.h` is an error at its line of the list before libclang
/// opens it, a `corprof.idl` linked to /dev/urandom and a header over the 64 MiB cap are errors at
/// their paths.
#[test]
fn header_inputs_that_are_no_regular_files_are_refused() {
    let tmp = temp("special-headers");
    let ann = callbacks_folder(&tmp);
    let list = tmp.join("list");
    std::fs::create_dir_all(&list).unwrap();
    std::fs::copy(ann.join("callbacks.yaml"), list.join("callbacks.yaml")).unwrap();
    mkfifo(&list.join("headers.yaml"));
    let o = output_within_a_minute(
        gen_cmd().arg("check").arg("--include").arg(shared("runtime-main")).arg("--annotations").arg(&list),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let why = "it is a FIFO (named pipe), not a regular file";
    assert!(t.contains(&format!("error: cannot read {}: {why}\n", list.join("headers.yaml").display())), "{t}");

    // A header folder: the real cor.h and corhdr.h, and a FIFO in the place of corprof.h.
    let fifo_dir = tmp.join("fifo");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    for h in ["cor.h", "corhdr.h"] {
        std::os::unix::fs::symlink(shared("runtime-main").join(h), fifo_dir.join(h)).unwrap();
    }
    mkfifo(&fifo_dir.join("corprof.h"));
    let o =
        output_within_a_minute(gen_cmd().arg("check").arg("--include").arg(&fifo_dir).arg("--annotations").arg(&ann));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let line = std::fs::read_to_string(ann.join("headers.yaml")).unwrap().lines().position(|l| l == "corprof.h:");
    let error = format!(
        "error: cannot read {}: {why}\n  --> {}:{}:1\n",
        fifo_dir.join("corprof.h").display(),
        ann.join("headers.yaml").display(),
        line.unwrap() + 1
    );
    assert!(t.contains(&error), "{t}");

    // The IDL beside the header, a link to /dev/urandom; then a header over the cap.
    let idl_dir = tmp.join("idl");
    std::fs::create_dir_all(&idl_dir).unwrap();
    for h in ["cor.h", "corhdr.h", "corprof.h"] {
        std::os::unix::fs::symlink(shared("runtime-main").join(h), idl_dir.join(h)).unwrap();
    }
    std::os::unix::fs::symlink("/dev/urandom", idl_dir.join("corprof.idl")).unwrap();
    let o =
        output_within_a_minute(gen_cmd().arg("check").arg("--include").arg(&idl_dir).arg("--annotations").arg(&ann));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let why = "it is a symbolic link to /dev/urandom, a character device, not a regular file";
    assert!(t.contains(&format!("error: cannot read corprof.idl: {why}\n")), "{t}");
    std::fs::remove_file(idl_dir.join("corprof.idl")).unwrap();
    std::fs::remove_file(idl_dir.join("cor.h")).unwrap();
    sparse(&idl_dir.join("cor.h"), (64 << 20) + 1);
    let o =
        output_within_a_minute(gen_cmd().arg("check").arg("--include").arg(&idl_dir).arg("--annotations").arg(&ann));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let why = "it holds 67108865 bytes, over the 64 MiB a file may hold here";
    assert!(t.contains(&format!("error: cannot read {}: {why}\n", idl_dir.join("cor.h").display())), "{t}");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// 20,000 nested flow sequences (7.6 s in serde_yaml's scanner before) are refused at once, at
/// the bracket that goes past the limit.
#[test]
fn deeply_nested_yaml_is_refused_fast() {
    let tmp = temp("deep");
    let ann = callbacks_folder(&tmp);
    std::fs::write(ann.join("deep.yaml"), format!("ICorProfilerInfo: {}{}\n", "[".repeat(20_000), "]".repeat(20_000)))
        .unwrap();
    let o = output_within_a_minute(
        gen_cmd().arg("check").arg("--include").arg(shared("runtime-main")).arg("--annotations").arg(&ann),
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let col = "ICorProfilerInfo: ".len() + 64;
    let at = format!(
        "error: annotation YAML nested deeper than 64 levels\n  --> {}:1:{col}\n",
        ann.join("deep.yaml").display()
    );
    assert!(t.contains(&at), "{t}");
    let _ = std::fs::remove_dir_all(&tmp);
}
