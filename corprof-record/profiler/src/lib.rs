//! The profiler library `corprof record` loads into the app: one profiler, its mode chosen by
//! [`corprof_record::settings::MODE`].

pub mod alloc;
pub mod calls;
pub mod heap;
