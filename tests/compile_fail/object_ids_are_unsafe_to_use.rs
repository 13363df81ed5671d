//! An ObjectID is the object's address until the next GC moves or frees it: the ID of a decoded
//! argument comes only through `unsafe`, and every method that dereferences an ObjectID is
//! `unsafe`, so a stale or forged one reaches the runtime only through a promise in `unsafe`.
use corprof::ProfilerInfo;
use corprof::hooks::ElementValue;
use corprof::types::ObjectID;

fn stale(info: &ProfilerInfo, kept: ObjectID, value: ElementValue) {
    let _ = value.object_id();
    let _ = info.get_object_size2(kept);
    let _ = info.get_class_from_object(kept);
    let _ = info.get_object_generation(kept);
}

fn main() {
    let _ = stale;
}
