//! A ThreadID points at the runtime's Thread object, freed after ThreadDestroyed: every method that
//! reads it takes the ID in an `unsafe` call, whose `# Safety` says when a thread is alive.
use corprof::ProfilerInfo;
use corprof::types::ThreadID;

fn after_destroyed(info: &ProfilerInfo, thread: ThreadID) {
    let _ = info.get_thread_app_domain(thread);
    let _ = info.get_thread_info(thread);
    let _ = info.get_handle_from_thread(thread);
    let _ = info.get_thread_context(thread);
}

fn main() {
    let _ = after_destroyed;
}
