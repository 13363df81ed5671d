//! A callback cannot claim its object for longer than the call: an implementation taking
//! `LiveObject<'static>` does not match the trait, which lends it for any lifetime.
use corprof::types::ClassID;
use corprof::{CorProfilerCallback, LiveObject, Result};
use std::sync::Mutex;

#[derive(Default)]
struct Keeper {
    kept: Mutex<Vec<corprof::types::ObjectID>>,
}

impl CorProfilerCallback for Keeper {
    fn object_allocated(&self, object: LiveObject<'static>, _class: ClassID) -> Result<()> {
        self.kept.lock().unwrap().push(object.id());
        Ok(())
    }
}

fn main() {
    let _ = Keeper::default();
}
