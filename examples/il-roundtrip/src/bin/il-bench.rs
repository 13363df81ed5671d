//! il-bench: how fast corprof's pure core reads and writes what a runtime hands a profiler.
//!
//! `il-bench <dump>` reads a dump that il-roundtrip wrote (`CORPROF_IL_DUMP`: every IL body of
//! System.Private.CoreLib and every signature those bodies reference) and times, in this
//! process, with no runtime:
//!
//! - `MethodBody::parse` then `MethodBody::encode` of every body (and `parse` alone),
//! - `Signature::decode`/`TypeSpec::decode` of every signature (and decode then `encode`),
//!
//! each as the best of several passes, plus the heap allocations one pass makes (a counting
//! global allocator). Prints one `key value` line per number (scripts/bench-il reads them).

use corprof::il::MethodBody;
use corprof::sig::{Signature, TypeSpec};
use il_roundtrip::{read_records, record};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The system allocator, counting allocations and bytes asked for.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        ALLOC_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with `layout` (through `alloc` above).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        ALLOC_BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc` is the system allocator's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The best time of `passes` runs of `f`, after one warm-up run.
fn best(passes: usize, mut f: impl FnMut()) -> Duration {
    f();
    (0..passes)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Allocations and bytes one run of `f` asks for.
fn allocations(f: impl FnOnce()) -> (u64, u64) {
    let (a, b) = (ALLOCS.load(Ordering::Relaxed), ALLOC_BYTES.load(Ordering::Relaxed));
    f();
    (ALLOCS.load(Ordering::Relaxed) - a, ALLOC_BYTES.load(Ordering::Relaxed) - b)
}

fn decode_signature(kind: u8, blob: &[u8]) -> bool {
    match kind {
        record::TYPE_SPEC => TypeSpec::decode(blob).is_ok(),
        _ => Signature::decode(blob).is_ok(),
    }
}

fn round_trip_signature(kind: u8, blob: &[u8]) -> bool {
    match kind {
        record::TYPE_SPEC => TypeSpec::decode(blob).ok().and_then(|s| s.encode().ok()).is_some_and(|b| b == blob),
        _ => Signature::decode(blob).ok().and_then(|s| s.encode().ok()).is_some_and(|b| b == blob),
    }
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: il-bench <dump written by il-roundtrip with CORPROF_IL_DUMP>");
        std::process::exit(2)
    });
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("il-bench: cannot read {path}: {e}");
        std::process::exit(1)
    });
    let records = read_records(&bytes).unwrap_or_else(|| {
        eprintln!("il-bench: {path} is cut short");
        std::process::exit(1)
    });
    let bodies: Vec<&[u8]> = records.iter().filter(|(k, _)| *k == record::BODY).map(|(_, b)| *b).collect();
    let sigs: Vec<(u8, &[u8])> = records.iter().filter(|(k, _)| *k != record::BODY).copied().collect();
    let body_bytes: usize = bodies.iter().map(|b| b.len()).sum();
    let sig_bytes: usize = sigs.iter().map(|(_, b)| b.len()).sum();
    let passes = 7;

    let identical = bodies
        .iter()
        .filter(|b| MethodBody::parse(b).ok().and_then(|m| m.encode().ok()).is_some_and(|e| e == **b))
        .count();
    let round_trip = best(passes, || {
        for b in &bodies {
            let body = MethodBody::parse(black_box(b)).expect("parse");
            black_box(body.encode().expect("encode"));
        }
    });
    let parse_only = best(passes, || {
        for b in &bodies {
            black_box(MethodBody::parse(black_box(b)).expect("parse"));
        }
    });
    let (allocs, alloc_bytes) = allocations(|| {
        for b in &bodies {
            let body = MethodBody::parse(black_box(b)).expect("parse");
            black_box(body.encode().expect("encode"));
        }
    });

    let sigs_ok = sigs.iter().filter(|(k, b)| round_trip_signature(*k, b)).count();
    let sig_decode = best(passes, || {
        for (k, b) in &sigs {
            black_box(decode_signature(*k, black_box(b)));
        }
    });
    let sig_round_trip = best(passes, || {
        for (k, b) in &sigs {
            black_box(round_trip_signature(*k, black_box(b)));
        }
    });
    let (sig_allocs, _) = allocations(|| {
        for (k, b) in &sigs {
            black_box(decode_signature(*k, black_box(b)));
        }
    });

    let per_sec = |n: usize, d: Duration| n as f64 / d.as_secs_f64();
    let mb_per_sec = |n: usize, d: Duration| n as f64 / d.as_secs_f64() / 1e6;
    println!("bodies {}", bodies.len());
    println!("body_bytes {body_bytes}");
    println!("bodies_identical {identical}");
    println!("round_trip_ms {:.2}", round_trip.as_secs_f64() * 1e3);
    println!("round_trip_bodies_per_sec {:.0}", per_sec(bodies.len(), round_trip));
    println!("round_trip_mb_per_sec {:.1}", mb_per_sec(body_bytes, round_trip));
    println!("parse_ms {:.2}", parse_only.as_secs_f64() * 1e3);
    println!("parse_bodies_per_sec {:.0}", per_sec(bodies.len(), parse_only));
    println!("parse_mb_per_sec {:.1}", mb_per_sec(body_bytes, parse_only));
    println!("allocs_per_body {:.2}", allocs as f64 / bodies.len().max(1) as f64);
    println!("alloc_bytes_per_body {:.0}", alloc_bytes as f64 / bodies.len().max(1) as f64);
    println!("signatures {}", sigs.len());
    println!("signature_bytes {sig_bytes}");
    println!("signatures_identical {sigs_ok}");
    println!("sig_decode_per_sec {:.0}", per_sec(sigs.len(), sig_decode));
    println!("sig_round_trip_per_sec {:.0}", per_sec(sigs.len(), sig_round_trip));
    println!("sig_allocs_per_decode {:.2}", sig_allocs as f64 / sigs.len().max(1) as f64);
}
