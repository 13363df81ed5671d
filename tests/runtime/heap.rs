//! ICorProfilerInfo13 handles and the ICorProfilerInfo14 non-GC heap in real runtimes
//! (tests/heap-profiler with the Handles and NonGcHeap apps). CoreCLR 8.0.4 implements both;
//! 3.1.23 has neither interface, and every call answers E_NOINTERFACE.

use crate::common::*;

const HANDLES: &str = "`src/tests/profiler/handles/handles.cs`, ICorProfilerInfo13: weak, strong and pinned handles across five compacting GCs (the pinned target never moves, the weak one reads null once unreferenced), DestroyHandle on each";
const NON_GC: &str = "`src/tests/profiler/gc/nongcheap.cs`, ICorProfilerInfo14: the app's frozen string literals among EnumerateNonGCObjects, inside GetNonGCHeapBounds, GetObjectGeneration answering CORPROF_E_NOT_GC_OBJECT";

const HEAP_CLSID: &str = "2B6C4E1A-9D3F-4F70-8C5B-7A1E0D9F3B64";

fn heap(runtime: &'static str, scenario: &str, app: &str, test: &str) -> Vec<String> {
    let lib = profiler_lib("heap_profiler");
    let out = TempFile::new(test);
    let env = [("CORPROF_HEAP_SCENARIO", scenario), ("CORPROF_HEAP_OUT", out.path())];
    let run = run_profiled(runtime, app, HEAP_CLSID, &lib, &env);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no heap-profiler output: {}", run.describe()));
    text.lines().map(str::to_string).collect()
}

/// A weak, a strong and a pinned handle across five full, compacting GCs: the weak target
/// lives while the app references it and reads null after; the strong and pinned targets live
/// on the handles alone; the strong one moves, the pinned one never does (nor lies inside a
/// range MovedReferences2 reports). Every handle is destroyed, and weak handles taken on the
/// two targets afterwards read null after the next GC: DestroyHandle released them.
#[test]
fn handles_on_coreclr_8() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("handles", "8", HANDLES);
    let lines = heap("8", "handles", "Handles", "handles_on_coreclr_8");
    let alive = "strong alive HandlesApp.StrongTarget (moved), pinned alive HandlesApp.PinnedTarget (same address)";
    let expected = [
        "created weak handle on HandlesApp.WeakTarget".to_string(),
        "created strong handle on HandlesApp.StrongTarget".to_string(),
        "created pinned handle on HandlesApp.PinnedTarget".to_string(),
        format!("gc 1: weak alive HandlesApp.WeakTarget, {alive}"),
        format!("gc 2: weak null, {alive}"),
        format!("gc 3: weak null, {alive}"),
        format!("gc 4: weak null, {alive}"),
        "destroyed weak, strong, pinned".to_string(),
        "gc 5: former strong null, former pinned null".to_string(),
        "destroyed former strong, former pinned".to_string(),
        "moved ranges seen: true".to_string(),
        "pinned object inside a moved range: false".to_string(),
    ];
    assert_eq!(lines, expected, "handles on CoreCLR 8.0.4");
}

/// CoreCLR 3.1.23 has no ICorProfilerInfo13: `create_handle` answers E_NOINTERFACE (the GCs
/// still run and move objects).
#[test]
fn handles_on_coreclr_3_answer_e_nointerface() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("handles", "3", HANDLES)
        .not_applicable("no ICorProfilerInfo13: create_handle answers E_NOINTERFACE");
    let lines = heap("3", "handles", "Handles", "handles_on_coreclr_3");
    let expected = [
        "create weak handle: E_NOINTERFACE (0x80004002)",
        "create strong handle: E_NOINTERFACE (0x80004002)",
        "create pinned handle: E_NOINTERFACE (0x80004002)",
        "moved ranges seen: true",
        "pinned object inside a moved range: false",
    ];
    assert_eq!(lines, expected, "handles on CoreCLR 3.1.23");
}

/// The app's string literals, frozen on .NET 8, are among `enumerate_non_gc_objects`, each
/// inside a range of `get_non_gc_heap_bounds` (whose first range starts at the first object),
/// and GetObjectGeneration on one fails with CORPROF_E_NOT_GC_OBJECT, as the runtime documents.
#[test]
fn non_gc_heap_on_coreclr_8() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("non-gc-heap", "8", NON_GC);
    let lines = heap("8", "nongc", "NonGcHeap", "non_gc_heap_on_coreclr_8");
    let expected = [
        "non-GC ranges: some",
        "ranges well-formed: true",
        "first object starts the first range: true",
        "literal corprof-nongc-alpha: frozen true, inside a non-GC range true",
        "literal corprof-nongc-beta: frozen true, inside a non-GC range true",
        "literal corprof-nongc-gamma: frozen true, inside a non-GC range true",
        "get_object_generation corprof-nongc-alpha: CORPROF_E_NOT_GC_OBJECT (0x80131389)",
    ];
    assert_eq!(lines, expected, "non-GC heap on CoreCLR 8.0.4");
}

/// CoreCLR 3.1.23 has no ICorProfilerInfo14: both methods answer E_NOINTERFACE.
#[test]
fn non_gc_heap_on_coreclr_3_answers_e_nointerface() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("non-gc-heap", "3", NON_GC)
        .not_applicable("no ICorProfilerInfo14: both methods answer E_NOINTERFACE");
    let lines = heap("3", "nongc", "NonGcHeap", "non_gc_heap_on_coreclr_3");
    let expected =
        ["non_gc_heap_bounds: E_NOINTERFACE (0x80004002)", "enumerate_non_gc_objects: E_NOINTERFACE (0x80004002)"];
    assert_eq!(lines, expected, "non-GC heap on CoreCLR 3.1.23");
}
