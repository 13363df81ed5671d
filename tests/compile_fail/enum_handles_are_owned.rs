//! An HCORENUM is a pointer the metadata scope dereferences: a made-up one (`0x41414141`) crashed
//! the app through `close_enum`, `count_enum` and `reset_enum`. The methods taking a handle by
//! value are `unsafe`; the safe route is the enumeration itself (`CorEnum`), which owns its handle.
use corprof::metadata::MetaDataImport;
use std::ffi::c_void;

fn forged(import: &MetaDataImport) {
    let h = 0x4141_4141 as *mut c_void;
    let _ = import.close_enum(h);
    let _ = import.count_enum(h);
    let _ = import.reset_enum(h, 0);
}

fn main() {
    let _ = forged;
}
