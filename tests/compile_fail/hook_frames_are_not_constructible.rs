//! A hook's `Frame` carries the runtime's frame handle, which `Frame::arguments` passes to the
//! runtime: one made up outside corprof would point it anywhere.
use corprof::hooks::{Frame, HookKind};

fn made_up() -> Frame<'static> {
    Frame { kind: HookKind::Enter, function: Default::default(), elt: 0x1000, info: None, _not_send: Default::default() }
}

fn main() {
    let _ = made_up;
}
