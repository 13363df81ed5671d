// A `Provider` or `Event` holds a handle the runtime created (the safe `define_event` and `write`
// hand it back unchecked): a safe program cannot build one around a made-up value.
use corprof::ProfilerInfo;
use corprof::eventpipe::{Event, Provider};

fn made_up(info: &ProfilerInfo) {
    let _ = Provider { info: info.clone(), handle: 0x1234, name: String::new() };
    let _ = Event { info: info.clone(), handle: 0x1234, fields: Vec::new() };
}

fn main() {
    let _ = made_up;
}
