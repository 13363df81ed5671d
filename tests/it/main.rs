//! The header-level integration tests of the corprof crate, in one binary: what needs no
//! runtime, exports at most one profiler symbol (`export_profiler!`'s `DllGetClassObject` may
//! exist once per binary: `shapes` has it) and installs no process-wide state (an allocator, a
//! panic hook, the quiet switch). The tests that start CoreCLR are tests/runtime; those that
//! install process-wide state or export another profiler are tests/inproc and
//! tests/decoder_bounds.rs.

mod capabilities;
mod constants;
mod eventpipe_callback;
#[allow(dead_code)] // used only by the tests whose interfaces the header declares
mod fake_info;
mod goldens;
mod heap_walk;
mod layout;
mod shapes;
mod typed;
mod wrappers;
