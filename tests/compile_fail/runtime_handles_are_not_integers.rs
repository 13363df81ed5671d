//! The handles the runtime hands a hook or a stack walk (COR_PRF_ELT_INFO, COR_PRF_FRAME_INFO)
//! and EventPipe's provider and event handles are pointers the runtime dereferences: a made-up
//! integer does not pass as one.
use corprof::ProfilerInfo;
use corprof::types::FunctionID;

fn made_up_elt_info(info: &ProfilerInfo, function: FunctionID) {
    let _ = info.get_function_leave3_info(function, 0x1000);
}

fn made_up_frame_info(info: &ProfilerInfo, function: FunctionID) {
    let _ = info.get_function_info2(function, 0x1000);
}

fn made_up_event(info: &ProfilerInfo) {
    // Even where the caller vouches for the data pointer (`unsafe`), the handle's type stands.
    let _ = unsafe { info.event_pipe_write_event(0x1000, 0, std::ptr::null_mut(), None, None) };
}

fn main() {
    let _ = (made_up_elt_info, made_up_frame_info, made_up_event);
}
