//! Door 1, the other half: a real object whose vtable pointer safe code replaces.
use corprof::IUnknown;
use corprof::imp::IUnknown_Vtbl;

fn replace(unknown: &mut IUnknown, other: *const IUnknown_Vtbl) {
    unknown.lpVtbl = other;
}

fn main() {
    let _ = replace;
}
