//! ASSEMBLYMETADATA holds raw pointers (`szLocale`, `rProcessor`, `rOS`) that safe code can fill
//! with anything, and IMetaDataAssemblyEmit's runtime reads the culture through `szLocale`: the
//! four methods taking one stay `unsafe` (the generator's rule for structs holding pointers, which
//! follows `LPWSTR` to its pointer). `define_assembly_ref_by_name` is the safe route.
use corprof::MetaDataAssemblyEmit;
use corprof::types::{ASSEMBLYMETADATA, CorAssemblyFlags};

fn made_up_culture(emit: &MetaDataAssemblyEmit) {
    let metadata = ASSEMBLYMETADATA { szLocale: 0x1000 as *mut u16, cbLocale: 6, ..Default::default() };
    let _ = emit.define_assembly_ref(&[], "System.Runtime", &metadata, &[], 0);
    let _ = emit.define_assembly(&[], 0x8004, "App", &metadata, CorAssemblyFlags(0));
    let _ = emit.set_assembly_props(0x2000_0001, None, 0x8004, "App", &metadata, CorAssemblyFlags(0));
    let _ = emit.set_assembly_ref_props(0x2300_0001, None, None, Some(&metadata), None, 0);
}

fn main() {
    let _ = made_up_culture;
}
