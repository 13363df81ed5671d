//! The bookkeeping behind the refusal of IDs of unloaded code is `unsafe` to reach by hand: a
//! made-up ID noted, lent or marked loaded would later be handed to the runtime.
fn main() {
    let _ = corprof::imp::alive_class(0x4141_4141);
    let _scope = corprof::imp::lend_ids(&[(0x4141_4141, corprof::imp::IdKind::Function)], false);
    corprof::imp::lend_output(0x4141_4141, corprof::imp::IdKind::Class);
    let _ = corprof::imp::track(std::ptr::null(), corprof::imp::Tracked::ModuleLoadStarted, 0x4141_4141, || Ok(()));
}
