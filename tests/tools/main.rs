//! The tests that run tools around the crate rather than the crate itself, in one binary: cargo
//! (trybuild's compile-fail cases, `corprof-gen check` against `cargo build`, a profiler crate
//! outside the workspace, each in a target directory of its own) and scripts/fetch-headers. They
//! share no state and no target directory, so libtest runs them side by side.

#[path = "../common/mod.rs"]
mod common;

mod check_vs_build;
mod compile_fail;
mod fetch_headers;
mod outside_crate;
