//! The C reference of the ELT benchmark (bench/reference-elt, built here by its build.sh when
//! missing or stale) loads in CoreCLR 8.0.4 and 3.1.23 and counts exactly: for the EltBench app
//! making N calls of `Leaf`, its fast asm stubs and the runtime's slow path each see N enters and N
//! leaves for `Leaf` and one of each for `Run` and `Main`; every enter is matched by a leave or a
//! tailcall; the unhooked mode sees none; the app's result is unchanged. The benchmark's Rust
//! profiler (bench/elt-rust, on corprof's hooks) must report exactly the same.

use crate::common::*;
use std::path::{Path, PathBuf};

const ELT_CLSID: &str = "7D4E2A9C-1B3F-4C58-A6E0-5F2D8B9C3E71";
const N: u64 = 100_000;

/// `target/bench/libelt_reference.so`, built when missing or stale.
fn elt_reference() -> PathBuf {
    c_reference("reference-elt", "elt.c", "libelt_reference.so")
}

/// What EltBench prints: the sum of `Leaf(i) = i ^ (i >> 3)` for `i < n`.
fn checksum(n: u64) -> u64 {
    (0..n).map(|i| i ^ (i >> 3)).sum()
}

/// The `<name> <number>` line of the profiler's output.
fn total(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no `{name}` line in:\n{text}"))
}

/// The Rust row of the benchmark (bench/elt-rust, corprof's hooks) writes the same report.
const RUST_CLSID: &str = "9B3E5D17-2C4A-4F86-B1E0-8D6A2F4C7E52";

fn run_mode(runtime: &'static str, mode: &str) {
    run_profiler(runtime, mode, ELT_CLSID, &elt_reference());
}

fn run_profiler(runtime: &'static str, mode: &str, clsid: &str, lib: &Path) {
    let out = TempFile::new(&format!("elt_reference_{runtime}_{mode}_{clsid}"));
    let mut env = profiler_env(clsid, lib);
    env.push(("CORPROF_ELT_MODE", mode.to_string()));
    env.push(("CORPROF_ELT_OUT", out.path().to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let n = N.to_string();
    let run = run_app_with_args(runtime, "EltBench", &[&n], &env);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, format!("EltBench {N} checksum {}\n", checksum(N)), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no ELT reference output: {}", run.describe()));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("mode {mode}"), "{text}");
    let (enters, leaves, tailcalls) = (total(&text, "enters"), total(&text, "leaves"), total(&text, "tailcalls"));
    let app: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("app ")).collect();
    if mode == "unhooked" {
        assert_eq!((enters, leaves, tailcalls), (0, 0, 0), "{text}");
        assert_eq!(app, ["app 06000001 0 0 0", "app 06000002 0 0 0", "app 06000003 0 0 0"], "{text}");
    } else {
        // Leaf 0x06000001, Run 0x06000002, Main 0x06000003 (EltBench.cs).
        let leaf = format!("app 06000001 {N} {N} 0");
        assert_eq!(app, [leaf.as_str(), "app 06000002 1 1 0", "app 06000003 1 1 0"], "CoreCLR {runtime}:\n{text}");
        assert_eq!(enters, leaves + tailcalls, "every enter is left or tail-called:\n{text}");
        assert!(enters > N, "{text}");
    }
}

#[test]
fn elt_reference_counts_exactly_on_coreclr_8() {
    let _runtime = runtime_lock();
    for mode in ["fast", "slow", "unhooked"] {
        run_mode("8", mode);
    }
}

#[test]
fn elt_reference_counts_exactly_on_coreclr_3() {
    let _runtime = runtime_lock();
    for mode in ["fast", "slow", "unhooked"] {
        run_mode("3", mode);
    }
}

#[test]
fn the_rust_bench_profiler_counts_the_same_on_coreclr_8() {
    let _runtime = runtime_lock();
    let lib = profiler_lib("elt_bench");
    for mode in ["fast", "slow", "unhooked"] {
        run_profiler("8", mode, RUST_CLSID, &lib);
    }
}

#[test]
fn the_rust_bench_profiler_counts_the_same_on_coreclr_3() {
    let _runtime = runtime_lock();
    let lib = profiler_lib("elt_bench");
    for mode in ["fast", "slow", "unhooked"] {
        run_profiler("3", mode, RUST_CLSID, &lib);
    }
}
