//! examples/jit-tracer in real runtimes: the Tracer app's methods and exception come out with
//! their metadata names (namespace, nested type, generic arity), and the ICorProfilerInfo
//! version the runtime negotiated is the one each runtime has.

mod common;

use common::*;
use std::collections::BTreeSet;

const TRACER_CLSID: &str = "A3C1E5F7-2B4D-4F60-8A1C-3E5B7D9F1A2C";

/// Every line the app's own code produces (the runtime's methods are filtered out).
const EXPECTED: &[&str] = &[
    "EXC TracerApp.OrderException",
    "TracerApp.Box`1::.ctor",
    "TracerApp.Box`1::Get",
    "TracerApp.OrderException::.ctor",
    "TracerApp.Orders::Submit",
    "TracerApp.Outer+Inner::Work",
    "TracerApp.Program::Main",
];

fn trace(runtime: &'static str, test: &str, info: &str) {
    let lib = profiler_lib("jit_tracer");
    let out = TempFile::new(test);
    let run = run_profiled(runtime, "Tracer", TRACER_CLSID, &lib, &[("CORPROF_TRACE_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("Tracer done 48"), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no trace written: {}", run.describe()));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first().copied(), Some(info), "negotiated version:\n{text}");
    assert!(!text.contains("# unresolved"), "every name resolves:\n{text}");
    // Tiered compilation may JIT a method twice: compare the set.
    let ours: BTreeSet<&str> =
        lines.iter().copied().filter(|l| l.starts_with("TracerApp.") || l.starts_with("EXC ")).collect();
    assert_eq!(ours, EXPECTED.iter().copied().collect::<BTreeSet<_>>(), "trace:\n{text}");
    // The runtime's own methods are named the same way (e.g. System.String::Concat).
    assert!(lines.iter().filter(|l| l.starts_with("System.") && l.contains("::")).count() > 0, "trace:\n{text}");
}

#[test]
fn jit_tracer_on_coreclr_8() {
    trace("8", "jit_tracer_on_coreclr_8", "# info ICorProfilerInfo14 (version 14)");
}

#[test]
fn jit_tracer_on_coreclr_3() {
    trace("3", "jit_tracer_on_coreclr_3", "# info ICorProfilerInfo11 (version 11)");
}
