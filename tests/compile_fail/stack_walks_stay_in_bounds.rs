//! Door 7: a stack walk's frame lives only as long as the runtime's callback (its context bytes
//! are the runtime's stack memory), and walking another thread trusts that thread to stay alive.
use corprof::types::ThreadID;
use corprof::{Frame, FrameContext, ProfilerInfo};
use std::ops::ControlFlow;

fn keep_a_frame(info: &ProfilerInfo) {
    let mut kept: Vec<&[u8]> = Vec::new();
    let _ = info.do_stack_snapshot_with(FrameContext::With, |frame: &Frame<'_>| {
        kept.extend(frame.context());
        ControlFlow::Continue(())
    });
    println!("{}", kept.len());
}

fn walk_any_thread(info: &ProfilerInfo, thread: ThreadID) {
    let _ = info.do_stack_snapshot_of(thread, FrameContext::Without, |_| ControlFlow::Continue(()));
}

fn main() {
    let _ = (keep_a_frame, walk_any_thread);
}
