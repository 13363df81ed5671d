//! A GC handle is one slot of the runtime's handle table: an `ObjectHandle` is owned, so it is
//! destroyed once (destroying consumes it) and cannot be cloned into a second owner; the raw
//! DestroyHandle is not on `ProfilerInfo`.
use corprof::ProfilerInfo;
use corprof::heap::ObjectHandle;
use corprof::types::ObjectHandleID;

fn twice(handle: ObjectHandle) {
    let _ = handle.destroy();
    let _ = handle.destroy();
}

fn copies(handle: ObjectHandle) {
    let second = handle.clone();
    drop((handle, second));
}

fn raw(info: &ProfilerInfo, raw: ObjectHandleID) {
    let _ = info.destroy_handle(raw);
}

fn main() {
    let _ = (twice, copies, raw);
}
