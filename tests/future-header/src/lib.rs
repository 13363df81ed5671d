//! Bindings generated from a future corprof.h (the fixture in `include/`): the same generator,
//! the same templates, the runtime crate corprof underneath. Only the tests use it.

#[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, dead_code, clippy::all)]
mod bindings {
    include!(concat!(env!("OUT_DIR"), "/corprof_bindings.rs"));
}

pub use bindings::callbacks::{CALLBACK_IIDS, Callback, CallbackClass, CorProfilerCallback, HIGHEST_CALLBACK};
pub use bindings::{info, interfaces, metadata, types, wrappers};
