//! corprof: write .NET (CoreCLR) profilers in Rust.
//!
//! Every binding is generated at build time from the runtime's own `corprof.h` (found through
//! `CORPROF_INCLUDE_DIR`) and the direction annotations in `annotations/`. Implement
//! [`CorProfilerCallback`] for the callbacks you need and export the type with
//! [`export_profiler!`].

// Every `unsafe` block says why it is sound, here and in the generated bindings included below.
#![deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]

pub mod com;
pub mod glue;
mod guid;
mod hresult;
pub mod params;
mod table;
pub mod wrap;

#[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, dead_code, unnecessary_transmutes, clippy::all)]
mod bindings {
    include!(concat!(env!("OUT_DIR"), "/corprof_bindings.rs"));
}

pub use bindings::callbacks::{CALLBACK_IIDS, Callback, CallbackClass, CorProfilerCallback, HIGHEST_CALLBACK};
pub use bindings::wrappers::*;
pub use bindings::{interfaces, types, wrappers};
pub use com::{ComPtr, IUnknown, Interface};
pub use glue::{is_quiet, set_quiet};
pub use guid::GUID;
pub use hresult::{HRESULT, HResult, Result};
pub use params::{Out, WStr};
pub use table::CallbackCounts;

/// The README's Rust examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
