//! A struct whose fields are pointers the runtime reads through (EventPipe's provider
//! configurations and parameter descriptors) can be filled with anything by safe code, so the
//! methods taking one are `unsafe`; so are those taking a buffer the runtime reads by a size it
//! finds inside (ReJIT's IL body) or by an address held as an integer (EventPipe event data).
use corprof::types::{COR_PRF_EVENTPIPE_PROVIDER_CONFIG, EVENTPIPE_PROVIDER};
use corprof::{ProfilerInfo, info::ProfilerFunctionControl};

fn dangling_name(info: &ProfilerInfo) {
    let config = COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
        providerName: 0x1000 as *const u16,
        keywords: 0,
        loggingLevel: 0,
        filterData: std::ptr::null(),
    };
    let _ = info.event_pipe_start_session(&[config], false);
    let _ = info.event_pipe_add_provider_to_session(Default::default(), config);
}

fn descriptors(info: &ProfilerInfo, provider: EVENTPIPE_PROVIDER) {
    let _ = info.event_pipe_define_event(provider, "E", 1, 0, 0, 0, 0, false, &[]);
}

fn header_says_more(control: &ProfilerFunctionControl) {
    let tiny = [0x0Au8];
    let _ = control.set_il_function_body(1, tiny.as_ptr());
}

fn main() {
    let _ = (dangling_name, descriptors, header_says_more);
}
