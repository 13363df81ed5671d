//! Generates the bindings from corprof.h (found through CORPROF_INCLUDE_DIR) and annotations/.
fn main() {
    corprof_gen::build::run();
}
