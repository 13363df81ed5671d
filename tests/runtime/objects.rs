//! examples/object-census (`#![forbid(unsafe_code)]`) in real runtimes: the objects callbacks
//! lend (`LiveObject`) answer their class, size and array shape, and the throwing thread its OS
//! thread id (`with_current_thread`), to a profiler without one `unsafe`. The Objects app throws,
//! allocates and collects exact counts.

use crate::common::*;

const CENSUS_CLSID: &str = "7D3E9A15-C2B8-4F61-9E07-A4D1B6C8E253";

/// The lines of the census the app's own types and GCs make, exactly.
const EXPECTED: &[&str] = &[
    "thrown ObjectsApp.Oops 7",
    "throwing threads 1",
    // System.Exception's fields: 128 bytes in both runtimes.
    "alloc ObjectsApp.Oops 7 896",
    // Four longs after the header and method table: 8 + 8 + 32.
    "alloc ObjectsApp.Parcel 1000 48000",
    // 8 (header) + 8 (method table) + 8 (length) + 5 references of 8.
    "alloc ObjectsApp.Parcel[] 3 192",
    // The static `kept`: 24 + 3 references of 8.
    "alloc ObjectsApp.Parcel[][] 1 48",
    "array ObjectsApp.Parcel[] 5 3",
    "array ObjectsApp.Parcel[][] 3 1",
    "gc 3 induced 3",
    "own thread CORPROF_E_NOT_MANAGED_THREAD (0x80131355)",
    "thrower domain is its context true, handle Ok",
];

fn census(runtime: &'static str, test: &str) {
    let lib = profiler_lib("object_census");
    let out = TempFile::new(test);
    let run = run_profiled(runtime, "Objects", CENSUS_CLSID, &lib, &[("CORPROF_CENSUS_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("Objects done 7 499500 3"), "{}", run.describe());
    assert!(!run.stderr.contains("corprof:"), "no callback failed or panicked: {}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no census written: {}", run.describe()));
    let ours: Vec<&str> = text
        .lines()
        .filter(|l| ["ObjectsApp.", "throwing ", "gc ", "own thread ", "thrower "].iter().any(|p| l.contains(p)))
        .collect();
    assert_eq!(ours, EXPECTED, "census:\n{text}");
    // The runtime's own objects are named and sized too (every allocation is asked about).
    assert!(text.lines().any(|l| l.starts_with("alloc System.String ")), "census:\n{text}");
    assert!(!text.contains("alloc <"), "every allocated class is named:\n{text}");
}

#[test]
fn object_census_on_coreclr_8() {
    let _runtime = runtime_lock();
    census("8", "object_census_on_coreclr_8");
}

#[test]
fn object_census_on_coreclr_3() {
    let _runtime = runtime_lock();
    census("3", "object_census_on_coreclr_3");
}
