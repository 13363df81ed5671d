//! A method body handed to the runtime as a pointer is read as far as its header says, and must
//! come from the module's IMethodMalloc: the raw SetILFunctionBody and RequestRevert's status
//! array stay `unsafe`; `set_il_body` (which encodes, checks and allocates) and `revert_methods`
//! are the safe ways.
use corprof::ProfilerInfo;
use corprof::types::ModuleID;

fn rewrite(info: &ProfilerInfo, module: ModuleID) {
    let body = [0x0au8, 0x2a];
    let _ = info.set_il_function_body(module, 0x0600_0001, body.as_ptr());
    let _ = info.request_revert(&[module], &[0x0600_0001], std::ptr::null_mut());
}

fn main() {
    let _ = rewrite;
}
