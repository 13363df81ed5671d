//! The header-level integration tests of the corprof crate, in one binary (one link instead of
//! eight): what needs no runtime, exports no profiler symbol (`export_profiler!`'s
//! `DllGetClassObject` may exist once per binary) and installs no process-wide state (an
//! allocator, a panic hook, the quiet switch). The tests that start CoreCLR stay one binary each,
//! so that cargo runs them one after another: timing checks (sample ratios, pauses) need the
//! machine to themselves.

mod capabilities;
mod clsids;
mod constants;
mod eventpipe_callback;
#[allow(dead_code)] // used only by the tests whose interfaces the header declares
mod fake_info;
mod goldens;
mod heap_walk;
mod layout;
mod typed;
mod wrappers;
