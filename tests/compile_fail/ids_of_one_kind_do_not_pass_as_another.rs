//! Each ID kind is a type of its own: an ObjectID where the runtime expects a ClassID would be
//! read as a class pointer.
use corprof::ProfilerInfo;
use corprof::types::ObjectID;

fn wrong_kind(info: &ProfilerInfo, object: ObjectID) {
    let _ = info.get_class_id_info(object);
}

fn made_up(info: &ProfilerInfo) {
    let _ = info.get_class_id_info(0x1000);
}

fn main() {
    let _ = (wrong_kind, made_up);
}
