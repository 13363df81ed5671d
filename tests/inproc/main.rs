//! The tests that play the runtime in this process, calling a profiler through raw vtable
//! pointers: `behaviour` (through the exported `DllGetClassObject`, of which a binary may hold
//! one) and `panic_guard` (through `dll_get_class_object` directly).
//!
//! `panic_guard` installs process-wide state: a counting `#[global_allocator]` (it counts only
//! frees of one unusual size, which nothing in `behaviour` allocates), and in each case a panic
//! hook and the quiet switch. The latter two are only ever set in a child process that runs that
//! one case (`panic_guard::in_child`), never in this process, where `behaviour` runs.
//! (tests/decoder_bounds.rs stays a binary of its own: its global allocator measures the peak of
//! every live heap byte, which any other test running beside it would raise.)

mod behaviour;
mod panic_guard;
