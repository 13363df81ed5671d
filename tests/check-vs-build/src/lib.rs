//! The generated bindings of one case, used the way the corprof crate uses its own: the callback
//! trait re-exported, implemented and exported, so every generated item is type-checked.
#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals, dead_code, clippy::all)]

mod bindings {
    include!(concat!(env!("OUT_DIR"), "/corprof_bindings.rs"));
}

pub use bindings::callbacks::{Callback, CallbackClass, CorProfilerCallback};

#[derive(Default)]
pub struct Probe;

impl CorProfilerCallback for Probe {}

/// The vtable the runtime would receive, built at compile time.
pub const VTBL: &<CallbackClass<Probe> as corprof::imp::ComClass>::Vtbl =
    <CallbackClass<Probe> as corprof::imp::ComClass>::VTBL;
