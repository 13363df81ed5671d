//! The runtime calls a callback provider's closure until the process ends, on whichever thread
//! starts or stops a session: a closure borrowing a local would run after the local is gone, and
//! one that is not `Send + Sync` would run on two threads at once. The raw calls that take the
//! function pointers (EventPipeCreateProvider2, EnumerateGCHeapObjects) stay `unsafe`.
use corprof::ProfilerInfo;
use corprof::eventpipe::Provider;
use std::cell::Cell;
use std::rc::Rc;

fn borrowed(info: &ProfilerInfo) {
    let seen = String::from("seen");
    let _ = Provider::create_with_callback(info, "Borrowed", |_| println!("{}", seen.len()));
}

fn shared_unsynchronized(info: &ProfilerInfo) {
    let count = Rc::new(Cell::new(0));
    let _ = Provider::create_with_callback(info, "NotSync", move |_| count.set(count.get() + 1));
}

fn raw(info: &ProfilerInfo) {
    let _ = info.event_pipe_create_provider2("Raw", None);
    let _ = info.enumerate_gc_heap_objects(None, std::ptr::null_mut());
}

fn main() {
    let _ = (borrowed, shared_unsynchronized, raw);
}
