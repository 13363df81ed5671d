//! A thread listed under a suspension is alive only until the runtime resumes (then the runtime
//! may free it): its handle cannot outlive the guard, so no safe walk reaches a freed thread.
use corprof::{FrameContext, ProfilerInfo, SuspendedThread};
use std::ops::ControlFlow;

fn keep_a_thread(info: &ProfilerInfo) -> Option<SuspendedThread<'static>> {
    let suspension = info.suspend_runtime().ok()?;
    let thread = suspension.threads().ok()?.next();
    thread
}

fn walk_after_resume(info: &ProfilerInfo) {
    let suspension = info.suspend_runtime().unwrap();
    let thread = suspension.threads().unwrap().next().unwrap();
    drop(suspension);
    let again = info.suspend_runtime().unwrap();
    let _ = again.walk(thread, FrameContext::Without, |_| ControlFlow::Continue(()));
}

fn main() {
    let _ = (keep_a_thread, walk_after_resume);
}
