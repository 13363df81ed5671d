//! Heap mode in real runtimes (CoreCLR 8.0.4 and 3.1.23): the RecordHeap app
//! (tests/apps/RecordHeap) runs under corprof-record-profiler in heap mode; the snapshot it writes must hold the app's known graph exactly, and the retained bytes
//! of its known subtrees must be the sums of the sizes the runtime reported for their objects.
//!
//! Needs `bash scripts/setup` (the runtimes and the app) and `cargo build -p corprof-record-profiler`.

use corprof_record::heap::{self, Dominators, ROOT, Snapshot};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const CLSID: &str = corprof_record::CLSID;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The test profiler, built in this test's profile directory (`target/debug`).
fn profiler() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().and_then(Path::parent).unwrap().join("libcorprof_record_profiler.so");
    assert!(lib.is_file(), "{} is missing: run `cargo build -p corprof-record-profiler`", lib.display());
    lib
}

/// Runs RecordHeap with `args` under heap mode and reads the snapshot.
fn snapshot(runtime: &str, args: &[&str], env: &[(&str, &str)]) -> Snapshot {
    snapshot_signalled(runtime, args, env, false)
}

/// [`snapshot`], sending the app SIGUSR2 once it printed `built` when `signal` is set.
fn snapshot_signalled(runtime: &str, args: &[&str], env: &[(&str, &str)], signal: bool) -> Snapshot {
    // One file per run: tests run in parallel, and two runs of one runtime with as many
    // arguments (the at-ms and the signal tests) once shared a name, so that one removed the
    // other's snapshot before it was read.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("corprof-record-heap-{runtime}-{}-{run}.snap", std::process::id());
    let out = std::env::temp_dir().join(name);
    let _ = std::fs::remove_file(&out);
    let mut cmd = Command::new(repo_root().join("scripts/dotnet-run"));
    cmd.arg(runtime).arg("RecordHeap").args(args).current_dir(repo_root()).stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if ["CORECLR_", "CORPROF_", "DOTNET_", "COMPlus_"].iter().any(|p| k.starts_with(p)) {
            cmd.env_remove(&key);
        }
    }
    cmd.env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", format!("{{{CLSID}}}"))
        .env("CORECLR_PROFILER_PATH", profiler())
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env(corprof_record::settings::OUT, &out)
        .env(corprof_record::settings::MODE, "heap")
        .envs(env.iter().copied());
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("cannot run scripts/dotnet-run");
    if signal {
        // scripts/dotnet-run execs dotnet: the child is the app.
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "built", "CoreCLR {runtime}");
        let kill = Command::new("kill").args(["-USR2", &child.id().to_string()]).status().unwrap();
        assert!(kill.success());
    }
    let run = child.wait_with_output().expect("cannot run scripts/dotnet-run");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "CoreCLR {runtime}: the app failed: {stderr}");
    assert!(!stderr.contains("corprof: heap snapshot"), "CoreCLR {runtime}: {stderr}");
    let s = heap::read(&out).unwrap_or_else(|e| panic!("CoreCLR {runtime}: {e}\n{stderr}"));
    let _ = std::fs::remove_file(&out);
    s
}

fn objects_of<'a>(s: &'a Snapshot, ty: &'a str) -> impl Iterator<Item = u32> + 'a {
    (0..s.len() as u32).filter(move |&o| s.type_name(o) == ty)
}

fn count(s: &Snapshot, ty: &str) -> usize {
    objects_of(s, ty).count()
}

/// The app's graph, checked object by object, and the retained bytes of its known subtrees.
fn check_known_graph(runtime: &str, s: &Snapshot) {
    let d = Dominators::compute(s);
    let ctx = format!("CoreCLR {runtime}");
    for (ty, n) in [("Holder", 1), ("Node", 1000), ("Blob", 1), ("Shared", 1), ("Link", 500)] {
        assert_eq!(count(s, &format!("RecordHeapApp.{ty}")), n, "{ctx}: {ty} objects");
    }
    let holder = objects_of(s, "RecordHeapApp.Holder").next().unwrap();
    let shared = objects_of(s, "RecordHeapApp.Shared").next().unwrap();
    let blob = objects_of(s, "RecordHeapApp.Blob").next().unwrap();
    let nodes: Vec<u32> = objects_of(s, "RecordHeapApp.Node").collect();
    let links: Vec<u32> = objects_of(s, "RecordHeapApp.Link").collect();
    let size = |o: u32| s.sizes[o as usize];

    // The payload is the Blob's one reference: a byte[12345].
    let &[payload] = s.references(blob) else { panic!("{ctx}: the Blob refers to {:?}", s.references(blob)) };
    assert_eq!(s.type_name(payload), "System.Byte[]", "{ctx}");
    assert!((12345..12345 + 64).contains(&size(payload)), "{ctx}: payload of {} bytes", size(payload));
    // The tree: 999 parent → child edges among the Nodes, two Nodes refer to the Shared object.
    let is_node = |r: &&u32| s.type_name(**r) == "RecordHeapApp.Node";
    let node_edges: usize = nodes.iter().map(|&n| s.references(n).iter().filter(is_node).count()).sum();
    assert_eq!(node_edges, 999, "{ctx}");
    let to_shared = nodes.iter().filter(|&&n| s.references(n).contains(&shared)).count();
    assert_eq!(to_shared, 2, "{ctx}");

    // Retained bytes: the Holder keeps its tree and its payload, not the Shared object a static
    // also holds; the sum is of the sizes the runtime reported (GetObjectSize2).
    let tree: u64 = nodes.iter().map(|&n| size(n)).sum();
    let expected = size(holder) + tree + size(blob) + size(payload);
    assert_eq!(d.retained[holder as usize], expected, "{ctx}: retained bytes of the Holder");
    assert_eq!(d.retained[shared as usize], size(shared), "{ctx}");
    assert_ne!(d.idom[shared as usize], holder, "{ctx}");
    let root_node = nodes.iter().copied().find(|&n| d.idom[n as usize] == holder);
    let root_node = root_node.unwrap_or_else(|| panic!("{ctx}: the Holder does not dominate a Node"));
    assert_eq!(d.retained[root_node as usize], tree, "{ctx}: retained bytes of the tree");
    let chain: u64 = links.iter().map(|&l| size(l)).sum();
    assert!(links.iter().any(|&l| d.retained[l as usize] == chain), "{ctx}: the chain's head retains the chain");

    // Per type: a type retains its objects that no object of the type dominates, once.
    let stats = heap::type_stats(s, &d);
    let stat = |ty: &str| stats.iter().find(|t| t.name == ty).unwrap_or_else(|| panic!("{ctx}: no {ty} in the table"));
    let node = stat("RecordHeapApp.Node");
    assert_eq!((node.count, node.shallow, node.retained), (1000, tree, tree), "{ctx}");
    let link = stat("RecordHeapApp.Link");
    assert_eq!((link.count, link.shallow, link.retained), (500, chain, chain), "{ctx}");
    assert_eq!(stat("RecordHeapApp.Holder").retained, expected, "{ctx}");
    assert!(!s.roots.is_empty() && d.idom.contains(&ROOT), "{ctx}");

    // The outputs the command writes.
    let mut table = Vec::new();
    heap::write_table(s, &d, "RecordHeap.dll — heap", &mut table, None).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert_eq!(table.lines().next(), Some("# RecordHeap.dll — heap"), "{ctx}");
    let line = table.lines().find(|l| l.starts_with("RecordHeapApp.Node ")).unwrap_or_else(|| panic!("{ctx}: {table}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[1..], [1000.to_string(), tree.to_string(), tree.to_string()], "{ctx}: {line}");
    let mut html = Vec::new();
    heap::write_treemap(s, &d, "RecordHeap.dll — heap <&>", &mut html).unwrap();
    let html = String::from_utf8(html).unwrap();
    assert!(html.contains("<title>RecordHeap.dll — heap &lt;&amp;&gt;</title>"), "{ctx}: {}", &html[..300]);
    assert!(html.contains("RecordHeapApp.Holder → RecordHeapApp.Node"), "{ctx}: the treemap has no Holder → Node path");
    assert!(html.contains(&format!("flex:{expected} 1 0")), "{ctx}: no box sized by the Holder's retained bytes");
}

#[test]
fn end_of_run_snapshot_8() {
    check_known_graph("8", &snapshot("8", &[], &[]));
}

#[test]
fn end_of_run_snapshot_3() {
    check_known_graph("3", &snapshot("3", &[], &[]));
}

/// With `AT_MS` the snapshot is taken while the app waits (for the full GC the snapshot forces,
/// not for a time), before it drops the Holder and the chain; without it, the app has dropped them by the
/// end of the run. The one time left is the setting's own: the app builds its graph in well under
/// 1.5 s of the profiler's start.
fn at_ms(runtime: &str) {
    let during = snapshot(runtime, &["until-snapshot"], &[(corprof_record::settings::AT_MS, "1500")]);
    check_known_graph(runtime, &during);
    let after = snapshot(runtime, &["0"], &[]);
    assert_eq!(count(&after, "RecordHeapApp.Holder"), 0, "CoreCLR {runtime}");
    assert_eq!(count(&after, "RecordHeapApp.Node"), 0, "CoreCLR {runtime}");
    assert_eq!(count(&after, "RecordHeapApp.Shared"), 1, "CoreCLR {runtime}");
}

#[test]
fn snapshot_at_ms_8() {
    at_ms("8");
}

#[test]
fn snapshot_at_ms_3() {
    at_ms("3");
}

/// With `SIGNAL`, SIGUSR2 takes the snapshot (while the app waits for it, before it drops the
/// graph); without it the signal would end the app.
fn on_signal(runtime: &str) {
    let s = snapshot_signalled(runtime, &["until-snapshot"], &[(corprof_record::settings::SIGNAL, "1")], true);
    check_known_graph(runtime, &s);
}

#[test]
fn snapshot_on_signal_8() {
    on_signal("8");
}

#[test]
fn snapshot_on_signal_3() {
    on_signal("3");
}
