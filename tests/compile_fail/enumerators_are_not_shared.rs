//! Door 5: an enumerator's clones shared one COM cursor across threads, and `ComPtr<T>` was
//! `Send + Sync` whatever `T`.
use corprof::interfaces::ICorProfilerModuleEnum;
use corprof::info::ProfilerModuleEnum;
use corprof::{ComPtr, IUnknown};

fn is_clone<T: Clone>() {}
fn is_send<T: Send>() {}
fn is_sync<T: Sync>() {}

fn main() {
    is_clone::<ProfilerModuleEnum>();
    is_send::<ProfilerModuleEnum>();
    is_sync::<ProfilerModuleEnum>();
    is_sync::<ComPtr<ICorProfilerModuleEnum>>();
    is_send::<ComPtr<IUnknown>>();
}
