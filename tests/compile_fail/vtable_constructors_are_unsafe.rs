//! Door 2: a vtable whose slots treat `this` as a `ComObject<C>`, installed in anything else, frees
//! memory it does not own at the last `Release` (`ComPtr::from_ref` on it double-frees).
use corprof::imp::IUnknown_Vtbl;
use corprof::interfaces::ICorProfilerCallback_Vtbl;
use corprof::{CallbackClass, CorProfilerCallback};

struct Profiler;
impl CorProfilerCallback for Profiler {}

static UNKNOWN: IUnknown_Vtbl = IUnknown_Vtbl::new::<CallbackClass<Profiler>>();

fn main() {
    let _callbacks = ICorProfilerCallback_Vtbl::new::<Profiler>();
    let _ = &UNKNOWN;
}
