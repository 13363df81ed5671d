//! The calling thread's token cannot be sent to another thread: it answers for the thread that
//! holds it (and only while that thread's managed Thread object is alive).
use corprof::ProfilerInfo;

fn send(info: &ProfilerInfo) {
    let _ = info.with_current_thread(|t| {
        std::thread::scope(|s| {
            s.spawn(move || t.id());
        })
    });
}

fn main() {
    let _ = send;
}
