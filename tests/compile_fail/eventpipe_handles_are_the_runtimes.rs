// EventPipe provider handles are pointers the runtime dereferences unchecked: a safe program
// must not name a made-up one to `provider_name`.
use corprof::ProfilerInfo;
use corprof::eventpipe::provider_name;

fn made_up(info: &ProfilerInfo) {
    let _ = provider_name(info, 0x1234);
}

fn main() {
    let _ = made_up;
}
