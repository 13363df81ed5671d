//! Generates the bindings from corprof.h (found through CORPROF_INCLUDE_DIR) and annotations/.
//! The generator also prints what the header declares as cfgs (`corprof_iface = "…"`,
//! `corprof_method = "…"`; see corprof-gen/src/capabilities.rs): src/ compiles the parts that call
//! ICorProfilerInfo12–15 or Info14's EventPipeCreateProvider2 only when the header has them.
fn main() {
    corprof_gen::build::run();
    // The golden files of the generator's fixtures, each compiled by tests/it/goldens.rs.
    corprof_gen::build::golden_modules(std::path::Path::new("corprof-gen/tests/fixtures"));
}
