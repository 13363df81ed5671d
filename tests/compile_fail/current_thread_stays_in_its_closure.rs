//! The calling thread's token (`CurrentThread`) is lent to a closure: it cannot be returned from
//! it, nor kept in a `thread_local!` to be used after the thread's ThreadDestroyed.
use corprof::{CurrentThread, ProfilerInfo};
use std::cell::Cell;

thread_local! {
    static ME: Cell<Option<CurrentThread<'static>>> = const { Cell::new(None) };
}

fn escape(info: &ProfilerInfo) {
    let _ = info.with_current_thread(|t| t);
    let _ = info.with_current_thread(|t| ME.with(|me| me.set(Some(t))));
}

fn main() {
    let _ = escape;
}
