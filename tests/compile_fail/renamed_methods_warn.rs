//! A method name `ProfilerInfo` had before the acronym-aware spelling still compiles, forwarding to
//! the new one, and says the new name (src/deprecated.rs); `deny(deprecated)` makes that a stop.
#![deny(deprecated)]
use corprof::types::{CorOpenFlags, ModuleID};
use corprof::{MetaDataImport, ProfilerInfo};

fn old_name(info: &ProfilerInfo, module: ModuleID) {
    let _ = info.get_module_meta_data::<MetaDataImport>(module, CorOpenFlags::ofRead);
}

fn main() {
    let _ = old_name;
}
