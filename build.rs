//! Generates the bindings from corprof.h (found through CORPROF_INCLUDE_DIR) and annotations/.
fn main() {
    corprof_gen::build::run();
    // The golden files of the generator's fixtures, each compiled by tests/goldens.rs.
    corprof_gen::build::golden_modules(std::path::Path::new("corprof-gen/tests/fixtures"));
}
