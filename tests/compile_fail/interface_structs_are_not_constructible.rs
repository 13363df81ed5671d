//! Door 1: an interface struct built in safe code has a fake vtable pointer, and its safe `query`
//! (or `ComPtr::from_ref`, or any safe wrapper over it) jumps through it.
use corprof::IUnknown;
use corprof::interfaces::{ICorProfilerInfo, ICorProfilerInfo_Vtbl};

fn main() {
    let fake = IUnknown { lpVtbl: std::ptr::null() };
    let _ = fake.query::<IUnknown>();
    let _info = ICorProfilerInfo { lpVtbl: std::ptr::null::<ICorProfilerInfo_Vtbl>() };
}
