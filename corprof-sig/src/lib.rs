//! corprof-sig: ECMA-335 metadata signatures and IL method bodies, read and written in pure Rust.
//!
//! What a .NET runtime or a module's metadata hands a profiler as bytes: signature blobs in
//! [`sig`] (decode, encode, print types and methods as people read them) and method bodies in
//! [`il`] (read, edit with labels that follow the code, write back byte for byte); and the names of
//! the types a module's file defines, in [`image`]. Nothing here
//! calls a runtime: the crate has no build script, needs no header and no libclang, and so serves
//! tools that only read metadata, fuzzers and tests alike. The names behind tokens come from a
//! [`sig::NameResolver`] the caller supplies.
//!
//! [corprof](https://crates.io/crates/corprof) re-exports both modules as `corprof::sig` and
//! `corprof::il` (the same types), and adds what needs the runtime: `MetaDataImport` as a
//! resolver, names of the runtime's class and function IDs, and IL rewriting at JIT time.
//!
//! Inputs come from modules a hostile party may control, so both decoders bound what they hold by
//! the bytes they are given (see [`sig`]'s and [`il`]'s documentation).

#![deny(missing_docs)]
// Parsers of untrusted bytes: not one `unsafe` block, so memory safety is the compiler's to prove.
#![forbid(unsafe_code)]

pub mod il;
pub mod image;
pub mod sig;

/// The README's example compiles and runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct Readme;

#[cfg(test)]
mod tests {
    /// The crate's promise: it builds with no build script (cargo sets `OUT_DIR` for every target
    /// of a package that has one) and with no dependency (one could bring a build script, a
    /// header or libclang back in). The manifest read is the repository's or, in a packaged
    /// crate, cargo's normalized one.
    #[test]
    fn builds_without_a_build_script_or_dependencies() {
        assert_eq!(option_env!("OUT_DIR"), None, "corprof-sig has a build script");
        let manifest = include_str!("../Cargo.toml");
        let dependencies = manifest.split("\n[dependencies]").nth(1).unwrap_or("");
        let declared: Vec<&str> = dependencies
            .lines()
            .map(str::trim)
            .take_while(|l| !l.starts_with('['))
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        assert_eq!(declared, Vec::<&str>::new(), "corprof-sig's dependencies");
    }
}
