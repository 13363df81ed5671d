//! Generates the bindings from corprof.h (found through CORPROF_INCLUDE_DIR) and annotations/.
fn main() {
    corprof_gen::build::run();
    // The golden files of the generator's fixtures, each compiled by tests/goldens.rs.
    corprof_gen::build::golden_modules(std::path::Path::new("corprof-gen/tests/fixtures"));
    // src/eventpipe's sessions and providers call ICorProfilerInfo12, which older headers
    // (coreclr-3.x) do not declare: compile them only when the bindings have it.
    println!("cargo::rustc-check-cfg=cfg(corprof_eventpipe)");
    println!("cargo::rustc-check-cfg=cfg(corprof_info13)");
    println!("cargo::rustc-check-cfg=cfg(corprof_info14)");
    println!("cargo::rustc-check-cfg=cfg(corprof_info15)");
    println!("cargo::rustc-check-cfg=cfg(corprof_eventpipe2)");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let bindings = std::fs::read_to_string(out.join("corprof_bindings.rs")).unwrap_or_default();
    if bindings.contains("fn event_pipe_start_session(") {
        println!("cargo::rustc-cfg=corprof_eventpipe");
    }
    // The provider with an enable/disable callback: Info14's EventPipeCreateProvider2, which the
    // released .NET 8 header appends (runtime-info15 has it, the runtime-net8 snapshot not).
    if bindings.contains("fn event_pipe_create_provider2(") {
        println!("cargo::rustc-cfg=corprof_eventpipe2");
    }
    // src/heap's handles (Info13) and non-GC heap ranges (Info14), src/heap_walk (Info15) likewise.
    for (iface, cfg) in [
        ("ICorProfilerInfo13", "corprof_info13"),
        ("ICorProfilerInfo14", "corprof_info14"),
        ("ICorProfilerInfo15", "corprof_info15"),
    ] {
        if bindings.contains(&format!("pub struct {iface} ")) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
