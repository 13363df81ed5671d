//! Bytes are not objects. An argument decoded from its bytes is an address
//! (`ElementValue::Reference`), not an ObjectID; the generation ranges the runtime reports start
//! at addresses (an empty generation's start is no object), typed as such.
//! (`object_ids_are_unsafe_to_use.rs` shows the ID itself comes only through `unsafe`.)
use corprof::ProfilerInfo;
use corprof::hooks::{ElementType, ElementValue};
use corprof::types::ObjectID;

fn forge(info: &ProfilerInfo, bytes: [u8; 8]) {
    if let Some(ElementValue::Reference(address)) = ElementValue::decode(ElementType::Reference, &bytes) {
        let _: ObjectID = address;
    }
    for range in corprof::heap::generation_bounds(info).unwrap() {
        let _: ObjectID = range.range.start;
    }
}

fn main() {
    let _ = forge;
}
