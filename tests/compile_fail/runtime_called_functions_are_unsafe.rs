//! Door 6: an ordinary Rust function as an ELT hook overflows the stack inside CoreCLR (JIT'd code
//! calls it with no register saved); the mapper and snapshot callbacks have contracts too.
use corprof::ProfilerInfo;
use corprof::types::{BOOL, FunctionID, FunctionIDOrClientID, UINT_PTR};

extern "C" fn enter(_: FunctionIDOrClientID) {}
extern "C" fn mapper(id: FunctionID, _hook: *mut BOOL) -> UINT_PTR {
    id
}

fn install(info: &ProfilerInfo) {
    let _ = info.set_enter_leave_function_hooks3(Some(enter), None, None);
    let _ = info.set_enter_leave_function_hooks3_with_info(None, None, None);
    let _ = info.set_enter_leave_function_hooks2(None, None, None);
    let _ = info.set_enter_leave_function_hooks(None, None, None);
    let _ = info.set_function_id_mapper(Some(mapper));
    let _ = info.set_function_id_mapper2(None, std::ptr::null_mut());
    let _ = info.do_stack_snapshot(0, None, 0, std::ptr::null_mut(), None);
}

fn main() {
    let _ = install;
}
