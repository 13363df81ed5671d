//! Only the runtime lends a `LiveObject`, through a callback: safe code cannot make one from an
//! ObjectID (a stored one may have moved, a made-up one is no object) by its constructor or a
//! conversion.
use corprof::LiveObject;
use corprof::types::ObjectID;

fn forge(id: ObjectID) {
    let _ = LiveObject::lent(id);
    let _: LiveObject<'_> = id.into();
}

fn main() {
    let _ = forge;
}
