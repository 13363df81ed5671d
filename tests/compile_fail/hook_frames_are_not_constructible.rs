//! A hook's `HookFrame` carries the runtime's frame handle, which `HookFrame::arguments` passes to the
//! runtime: one made up outside corprof would point it anywhere.
use corprof::hooks::{HookFrame, HookKind};

fn made_up() -> HookFrame<'static> {
    HookFrame { kind: HookKind::Enter, function: Default::default(), elt: corprof::types::COR_PRF_ELT_INFO::NULL, info: None, _not_send: Default::default() }
}

fn main() {
    let _ = made_up;
}
