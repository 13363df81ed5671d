//! A suspension that is not resumed hangs the app. The runtime is resumed only
//! by dropping the guard `suspend_runtime` returns, and only on the thread that suspended it (the
//! runtime's thread store lock belongs to that thread), so the guard cannot be sent away or shared
//! with another thread.
use corprof::{ProfilerInfo, Suspension};

fn resume_without_a_guard(info: &ProfilerInfo) {
    let _ = info.resume_runtime();
}

fn resume_on_another_thread(info: &ProfilerInfo) {
    let suspension: Suspension<'_> = info.suspend_runtime().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || drop(suspension));
    });
}

fn list_on_another_thread(info: &ProfilerInfo) {
    let suspension = info.suspend_runtime().unwrap();
    let shared = &suspension;
    std::thread::scope(|s| {
        s.spawn(move || shared.threads().map(|threads| threads.count()));
    });
}

fn main() {
    let _ = (resume_without_a_guard, resume_on_another_thread, list_on_another_thread);
}
