//! corprof-record-profiler's alloc mode (the library `corprof record` loads) on the RecordAlloc app,
//! CoreCLR 8.0.4 and 3.1.23: exact mode gives the app's bytes per stack exactly; sampled mode gives
//! them within sampling error, with the same stacks.
//!
//! Object sizes on x64, header included (what `GetObjectSize2` reports and the GC allocates):
//! `byte[1000]` = 8 (header) + 8 (method table) + 8 (length, padded) + 1000 = 1024;
//! `long[100]` = 24 + 800 = 824; `Node { long A, B; object Next; }` = 16 + 24 = 40.

use crate::common::runtime_lock;
use crate::record_support::{self, Profile};

const P: &str = "RecordAllocApp.Program::";

/// The app's three allocating stacks (after the root's `[native]`) and each object's size.
const STACKS: &[(&str, u64)] = &[
    ("Main;Bytes;[alloc System.Byte[]]", 1024),
    ("Main;Nodes;[alloc RecordAllocApp.Node]", 40),
    ("Main;Outer;Inner;[alloc System.Int64[]]", 824),
];

fn record(runtime: &'static str, alloc: &str, objects: u32, test: &str) -> Profile {
    let n = objects.to_string();
    let settings = [("CORPROF_RECORD_MODE", "alloc"), ("CORPROF_RECORD_ALLOC", alloc)];
    record_support::record(runtime, "RecordAlloc", &[&n], &settings, &format!("RecordAlloc done {n}\n"), test)
}

/// The bytes of the app stack `short` (frames `Main;…` of the Program class, then the leaf), and
/// that it is exactly one stack of the profile, rooted in one native frame.
fn bytes_of(profile: &Profile, short: &str) -> Option<u64> {
    let matching: Vec<_> = profile
        .stacks
        .iter()
        .filter(|(frames, _)| {
            let app: Vec<String> = frames
                .iter()
                .filter(|f| f.starts_with(P) || f.starts_with("[alloc"))
                .map(|f| f.replace(P, ""))
                .collect();
            app.join(";") == short
        })
        .collect();
    assert!(matching.len() <= 1, "{short}: several stacks {matching:?}");
    let (frames, entry) = matching.first()?;
    let expected_len = short.split(';').count() + 1;
    assert_eq!((frames[0].as_str(), frames.len()), ("[native]", expected_len), "{short}: {frames:?}");
    assert_eq!(entry.1, 0, "alloc mode counts no calls");
    Some(entry.0)
}

fn exact(runtime: &'static str, test: &str) {
    let objects = 1000;
    let profile = record(runtime, "exact", objects, test);
    assert_eq!(profile.unit, "bytes");
    for (short, size) in STACKS {
        assert_eq!(bytes_of(&profile, short), Some(size * objects as u64), "{short} on CoreCLR {runtime}");
    }
    // Everything the runtime allocated on the main thread before Main (and while starting) is
    // there too, each stack ending in the type it allocated.
    assert!(profile.stacks.len() > STACKS.len(), "{}", profile.text);
    assert!(profile.stacks.keys().all(|f| f.last().is_some_and(|l| l.starts_with("[alloc "))));
}

/// 100,000 objects of each kind: 102 MB of `byte[1000]` and 82 MB of `long[100]`, each sampled
/// about once per 100 KB, so about 1000 and 800 samples: one standard deviation of their
/// estimates is ≈ 3.2% and 3.5%, and the bound tested, ±20%, is more than 5.5 of them (a false
/// failure less than once in 10⁷ runs). The 4 MB of nodes (~40 samples) are only checked present.
fn sampled(runtime: &'static str, test: &str) {
    let objects = 100_000;
    let profile = record(runtime, "sampled", objects, test);
    for (short, size) in STACKS {
        let bytes = bytes_of(&profile, short).unwrap_or_else(|| panic!("no {short}: {}", profile.text));
        let truth = (size * objects as u64) as f64;
        if *size > 100 {
            let error = (bytes as f64 - truth) / truth;
            assert!(error.abs() < 0.20, "{short} on CoreCLR {runtime}: {bytes} bytes for {truth} (error {error:+.3})");
        }
    }
    // Sampled, not every allocation at its size (which would give the exact total).
    let bytes = bytes_of(&profile, STACKS[0].0).unwrap();
    assert_ne!(bytes, 1024 * objects as u64, "every allocation recorded?");
}

#[test]
fn alloc_exact_on_coreclr_8() {
    let _runtime = runtime_lock();
    exact("8", "alloc_exact_on_coreclr_8");
}

#[test]
fn alloc_exact_on_coreclr_3() {
    let _runtime = runtime_lock();
    exact("3", "alloc_exact_on_coreclr_3");
}

#[test]
fn alloc_sampled_on_coreclr_8() {
    let _runtime = runtime_lock();
    sampled("8", "alloc_sampled_on_coreclr_8");
}

#[test]
fn alloc_sampled_on_coreclr_3() {
    let _runtime = runtime_lock();
    sampled("3", "alloc_sampled_on_coreclr_3");
}
