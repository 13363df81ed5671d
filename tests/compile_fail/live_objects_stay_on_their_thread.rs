//! A lent object cannot leave the callback's thread: it is neither `Send` nor `Sync`, so no other
//! thread can ask about it (or keep it) while the runtime goes on.
use corprof::types::ClassID;
use corprof::{CorProfilerCallback, LiveObject, ProfilerInfo, Result};

struct Sender(ProfilerInfo);

impl CorProfilerCallback for Sender {
    fn object_allocated(&self, object: LiveObject<'_>, _class: ClassID) -> Result<()> {
        let info = self.0.clone();
        std::thread::scope(|s| {
            s.spawn(move || object.size(&info));
        });
        Ok(())
    }

    fn root_references(&self, roots: &[LiveObject<'_>]) -> Result<()> {
        std::thread::scope(|s| {
            s.spawn(|| roots.len());
        });
        Ok(())
    }
}

fn main() {}
