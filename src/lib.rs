//! corprof: write .NET (CoreCLR) profilers in Rust.
//!
//! Every binding is generated at build time from the runtime's own `corprof.h` (found through
//! `CORPROF_INCLUDE_DIR`) and the direction annotations in `annotations/`. Implement
//! [`CorProfilerCallback`] for the callbacks you need and export the type with
//! [`export_profiler!`]; call into the runtime through [`ProfilerInfo`] (module [`info`]) and the
//! metadata wrappers (module [`metadata`]).
//!
//! What is here:
//!
//! - the callback side: [`CorProfilerCallback`], [`Callback`], [`export_profiler!`], the
//!   parameter types [`Out`] and [`WStr`], and [`CallbackCounts`] for profilers that count;
//! - call tracing: [`FunctionHooks`] (enter/leave/tailcall hooks, the exception-unwind case and
//!   their mapper), installed by [`hooks::install`] in a [`HookMode`];
//! - names for reports: functions' short and full names, cached, in [`names`]; threads' names
//!   and OS thread ids from the thread callbacks in [`threads`];
//! - the calling side: [`ProfilerInfo`] and the metadata wrappers at the root, every wrapper
//!   with its result structs and enumerators in [`info`] and [`metadata`];
//! - stack walks with a closure: [`ProfilerInfo::do_stack_snapshot_with`] and module [`stack`];
//!   other threads, sampled safely under a runtime suspension that resumes on drop:
//!   [`ProfilerInfo::suspend_runtime`] and module [`suspend`];
//! - objects a callback lends ([`object::LiveObject`]: class, size, array shape, generation,
//!   asked safely while the callback runs) and the current thread
//!   ([`ProfilerInfo::with_current_thread`]);
//! - the managed heap: owned GC handles and heap ranges as addresses, module [`heap`]; every
//!   object of the GC heap to a closure (ICorProfilerInfo15), module `heap_walk`;
//! - EventPipe in process (sessions, a provider of your own, a safe parser of delivered events'
//!   metadata and payloads): module [`eventpipe`];
//! - COM and errors: [`IUnknown`], [`ComPtr`], [`Interface`], [`GUID`], [`HResult`],
//!   [`Result`], [`set_quiet`]; a profiler's output written only to a new or regular file:
//!   [`files::write_regular`]; locks that outlive a callback's panic: [`sync`];
//! - the header itself: plain data types in [`types`], raw interfaces in [`interfaces`];
//! - pure parsing, no runtime needed: metadata signatures in [`sig`] (decode, encode, print
//!   types and methods) and method bodies in [`il`] (read, edit and write IL);
//! - rewriting in the runtime, at JIT time and through ReJIT, with one safe call each:
//!   [`ProfilerInfo::il_body`], [`ProfilerInfo::set_il_body`] and the rest of module [`rewrite`].

// Every `unsafe` block says why it is sound, here and in the generated bindings included below.
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]

#[cfg(corprof_iface = "IMetaDataAssemblyEmit")]
mod assembly_emit;
mod callback_counts;
mod com;
mod context;
pub mod current_thread;
mod deprecated;
mod entry;
pub mod eventpipe;
pub mod files;
mod guid;
pub mod heap;
#[cfg(corprof_iface = "ICorProfilerInfo15")]
pub mod heap_walk;
pub mod hooks;
mod hresult;
#[cfg(all(corprof_iface = "IMetaDataImport", corprof_iface = "IMetaDataEmit"))]
pub mod instrument;
mod lending;
#[doc(inline)]
pub use corprof_sig::il;
// What generated code reaches by path: public so that those paths resolve from another crate,
// hidden because no profiler should call it.
#[doc(hidden)]
pub mod imp;
mod info_gate;
pub mod names;
pub mod object;
mod pointer_params;
mod report;
pub mod rewrite;
pub mod sig;
pub mod stack;
pub mod suspend;
pub mod sync;
pub mod threads;
mod unloads;
mod wrapper_support;

#[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, dead_code, unnecessary_transmutes, clippy::all)]
mod bindings {
    include!(concat!(env!("OUT_DIR"), "/corprof_bindings.rs"));
}

pub use bindings::callbacks::{Callback, CorProfilerCallback};
pub use bindings::info::ProfilerInfo;
pub use bindings::{info, interfaces, metadata, types};
pub use callback_counts::CallbackCounts;
pub use com::{ComPtr, FreeThreaded, IUnknown, Interface};
pub use current_thread::CurrentThread;
pub use guid::GUID;
#[doc(inline)]
pub use hooks::{FunctionHooks, HookMode};
pub use hresult::{HRESULT, HResult, Result};
pub use object::LiveObject;
pub use pointer_params::{Out, WStr};
pub use report::{is_quiet, set_quiet};
pub use stack::{Frame, FrameContext};
pub use suspend::{SuspendedThread, SuspendedThreads, Suspension};
// Traits that appear in public bounds (`get_module_metadata::<W: Wrapper>`, `Wrapper::get::<I:
// FamilyMember>`, `ComPtr<T>: Send` for `T: FreeThreaded`): readable where the bound is.
pub use wrapper_support::{CorEnum, FamilyMember, Wrapper};

// The metadata wrappers exist only when the header folder has cor.h (coreclr-3.x has none), so
// the generator lists whichever this header gives for a glob (an empty one without cor.h).
#[allow(unused_imports)]
pub use bindings::root_wrappers__::*;

/// Reached by tests and by generated code, not by profilers.
#[doc(hidden)]
pub use bindings::callbacks::{CALLBACK_IIDS, CallbackClass, HIGHEST_CALLBACK};
#[doc(hidden)]
pub use bindings::wrappers;

/// The README's and the guide's Rust examples compile and run as doc tests.
#[cfg(doctest)]
mod doc_examples {
    #[doc = include_str!("../README.md")]
    pub struct Readme;
    #[doc = include_str!("../docs/guide/callbacks.md")]
    pub struct Callbacks;
    #[doc = include_str!("../docs/guide/calling-the-runtime.md")]
    pub struct CallingTheRuntime;
    #[doc = include_str!("../docs/guide/stacks.md")]
    pub struct Stacks;
    #[doc = include_str!("../docs/guide/eventpipe.md")]
    pub struct EventPipe;
    #[doc = include_str!("../docs/guide/instrumentation.md")]
    pub struct Instrumentation;
    #[doc = include_str!("../docs/guide/hooks.md")]
    pub struct Hooks;
    #[doc = include_str!("../docs/guide/il.md")]
    pub struct Il;
    #[doc = include_str!("../docs/guide/attach.md")]
    pub struct Attach;
    #[doc = include_str!("../docs/guide/record.md")]
    pub struct Record;
    #[doc = include_str!("../docs/guide/your-crate.md")]
    pub struct YourCrate;
    #[doc = include_str!("../docs/guide/annotations.md")]
    pub struct Annotations;
    #[doc = include_str!("../docs/guide/reliability.md")]
    pub struct Reliability;
    #[doc = include_str!("../docs/guide/layout.md")]
    pub struct Layout;
}
