//! A `LiveObject` cannot be built from its fields: they are private.
use corprof::LiveObject;
use corprof::types::ObjectID;

fn forge(id: ObjectID) {
    let _ = LiveObject { id, _lent: std::marker::PhantomData };
}

fn main() {
    let _ = forge;
}
