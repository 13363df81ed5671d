//! An `ObjectHandle` is made only by the runtime's CreateHandle, from an object a callback lent
//! or from an ObjectID that must be current (`unsafe`), never from an integer.
use corprof::ProfilerInfo;
use corprof::heap::ObjectHandle;
use corprof::types::{COR_PRF_HANDLE_TYPE, ObjectID};

fn made_up(info: &ProfilerInfo, object: ObjectID) {
    let _ = ObjectHandle::create_from_id(info, object, COR_PRF_HANDLE_TYPE::COR_PRF_HANDLE_TYPE_WEAK);
}

fn main() {
    let _ = made_up;
}
