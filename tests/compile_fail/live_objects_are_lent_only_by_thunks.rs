//! The thunks' conversion that lends a `LiveObject` is `unsafe`: its caller vouches that the
//! runtime handed the ID to a callback that is still running.
use corprof::types::ObjectID;

fn forge(id: ObjectID) {
    let _ = corprof::imp::raw::live_object(id.as_raw());
}

fn main() {
    let _ = forge;
}
