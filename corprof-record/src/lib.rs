//! corprof record: the pieces shared by the `corprof` command and the profiler library it loads
//! into the app (`corprof-record-profiler`).
//!
//! The profiler records into a [`profile::Profile`] and writes it, at Shutdown or detach, to the
//! file the command names in [`settings::OUT`]; the command reads it back and writes the format
//! the user asked for.

pub mod files;
#[cfg(feature = "cli")]
pub mod formats;
pub mod heap;
pub mod latency;
pub mod profile;
pub mod settings;

/// The CLSID the profiler library answers to; the command sets `CORECLR_PROFILER` from it, so
/// nobody types it.
pub const CLSID: &str = "7C1E9A53-2D4B-4F86-B0A7-5E3C9D1F8A26";
