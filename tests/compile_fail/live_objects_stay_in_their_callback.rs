//! An object a callback lends (`LiveObject<'_>`) is current only until the callback returns (the
//! next GC may move or free it): it cannot be kept in the profiler, a `static` or a
//! `thread_local!` for later.
use corprof::types::ClassID;
use corprof::{CorProfilerCallback, LiveObject, Result};
use std::cell::Cell;
use std::sync::Mutex;

static LAST: Mutex<Option<LiveObject<'static>>> = Mutex::new(None);

thread_local! {
    static THROWN: Cell<Option<LiveObject<'static>>> = const { Cell::new(None) };
}

#[derive(Default)]
struct Keeper {
    kept: Mutex<Vec<LiveObject<'static>>>,
}

impl CorProfilerCallback for Keeper {
    fn object_allocated(&self, object: LiveObject<'_>, _class: ClassID) -> Result<()> {
        self.kept.lock().unwrap().push(object);
        *LAST.lock().unwrap() = Some(object);
        Ok(())
    }

    fn exception_thrown(&self, thrown: LiveObject<'_>) -> Result<()> {
        THROWN.with(|t| t.set(Some(thrown)));
        Ok(())
    }
}

fn main() {
    let _ = Keeper::default();
}
