//! The hooks reach the object `export_profiler!` registered; registering another (a dangling
//! pointer, a profiler on the stack) is the class factory's `unsafe` business.
use corprof::CorProfilerCallback;
use corprof::hooks;

struct Fake;

impl CorProfilerCallback for Fake {}

fn register(profiler: &Fake) {
    hooks::register_instance(std::ptr::null_mut(), profiler);
}

fn main() {
    let _ = register;
}
