//! The safe calling side against real runtimes (tests/probe-profiler): a `String` out of a sized
//! buffer, result structs, the ICorProfilerModuleEnum iterator, and HCORENUM iterators over the
//! app's metadata, on CoreCLR 8.0.4 and 3.1.23.

use crate::common::*;

const PROBE_CLSID: &str = "5E1F0C3A-7B2D-4C8E-9A61-0D4F2B7E8C93";

fn probe(runtime: &'static str, test: &str, runtime_line: &str) {
    let lib = profiler_lib("probe_profiler");
    let out = TempFile::new(test);
    let run = run_profiled(runtime, "Tracer", PROBE_CLSID, &lib, &[("CORPROF_PROBE_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no probe output: {}", run.describe()));
    let expected = [
        runtime_line,
        "module Tracer.dll",
        "assembly Tracer",
        "enum_modules has app module: true",
        "type TracerApp.Box`1: .ctor Get",
        "type TracerApp.OrderException: .ctor",
        "type TracerApp.Orders: Submit",
        "type TracerApp.Outer: ",
        "type TracerApp.Program: Main",
        "is_array_class TracerApp.Program: None",
        "custom attribute NoSuchAttribute: None",
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected, "probe output on CoreCLR {runtime}");
}

#[test]
fn probe_on_coreclr_8() {
    let _runtime = runtime_lock();
    probe("8", "probe_on_coreclr_8", "runtime 8.0 8.0.4");
}

#[test]
fn probe_on_coreclr_3() {
    let _runtime = runtime_lock();
    // CoreCLR 3.1 still reports the desktop-era version through GetRuntimeInformation.
    probe("3", "probe_on_coreclr_3", "runtime 4.0 v4.0.30319");
}
