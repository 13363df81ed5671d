//! IMetaDataAssemblyEmit in real runtimes (tests/assembly-emit-profiler with the Rewrite app): at
//! ModuleLoadFinished of the app's module the profiler adds an AssemblyRef to System.Runtime with
//! the safe `MetaDataAssemblyEmit::define_assembly_ref_by_name`, reads it back through
//! `MetaDataAssemblyImport`, names a type under it with `define_type_ref_by_name`, and calls the
//! `unsafe` generated `define_assembly_ref` with a culture; on CoreCLR 8.0.4 and 3.1.23.

use crate::common::*;

const ASSEMBLY_EMIT_CLSID: &str = "4E1C8A52-97D3-4B6F-A0E2-3C5D7B9F1A64";

/// The app's output, with or without the profiler: the edits add references nothing uses.
const AS_WRITTEN: [&str; 3] = ["Answer 41", "Work 1402", "Work 101"];

fn assembly_emit(runtime: &'static str, test: &str) {
    let lib = profiler_lib("assembly_emit_profiler");
    let out = TempFile::new(test);
    let run = run_profiled(runtime, "Rewrite", ASSEMBLY_EMIT_CLSID, &lib, &[("CORPROF_ASSEMBLY_EMIT_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), AS_WRITTEN, "{}", run.describe());

    let text = out.read().unwrap_or_else(|| panic!("no assembly-emit-profiler output: {}", run.describe()));
    let expected = [
        // A new row of the AssemblyRef table (0x23), after the references the app was built with.
        "define_assembly_ref_by_name: table 0x23, the row after the module's own: true",
        // Name, version and token as given; no flags (the blob is a token), no culture.
        "read back: System.Runtime 4.0.0.0, token b03f5f7f11d50a3a, flags 0x0, culture length 0",
        // A module's scope checks duplicates of every kind (MDInternalRW::InitWithRO sets
        // MDDupAll): the existing row comes back (META_S_DUPLICATE, a success), none is added.
        "the same reference again: the same token, references added 1",
        "TypeRef: table 0x01, scope is the new reference: true, name System.Runtime.CompilerServices.CallConvSuppressGCTransition",
        "define_assembly_ref_by_name: Corprof.Versioned 5.6.7.8, token none, flags 0x0, culture length 0",
        // Refused by the helper before any call: nothing added.
        "refused: version part 65535 E_INVALIDARG, a 5-byte token E_INVALIDARG, references added 0",
        // The runtime read the culture through szLocale.
        "define_assembly_ref with a culture: Corprof.Localized 1.2.3.4, token none, flags 0x0, culture length 6",
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected, "assembly-emit-profiler output on CoreCLR {runtime}");
}

#[test]
fn assembly_emit_on_coreclr_8() {
    let _runtime = runtime_lock();
    assembly_emit("8", "assembly_emit_on_coreclr_8");
}

#[test]
fn assembly_emit_on_coreclr_3() {
    let _runtime = runtime_lock();
    assembly_emit("3", "assembly_emit_on_coreclr_3");
}
