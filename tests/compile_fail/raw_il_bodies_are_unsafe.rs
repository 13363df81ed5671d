//! A method body handed to the runtime as a pointer is read as far as its header says, and must
//! come from the module's IMethodMalloc: the raw SetILFunctionBody and RequestRevert's status
//! array stay `unsafe`. And what the IL does is not verified by the runtime: IL that makes up an
//! address (`ldc.i8 0x414141414140; conv.i; ldind.i4; ret`) crashes the process when it runs, so
//! `set_il_body`/`set_rejit_body`, which check only the encoding, are `unsafe` too;
//! `revert_methods` is the safe way back.
use corprof::ProfilerInfo;
use corprof::il::{Instruction, MethodBody, OpCode, Operand};
use corprof::types::ModuleID;

fn rewrite(info: &ProfilerInfo, module: ModuleID) {
    let body = [0x0au8, 0x2a];
    let _ = info.set_il_function_body(module, 0x0600_0001, body.as_ptr());
    let _ = info.request_revert(&[module], &[0x0600_0001], std::ptr::null_mut());
}

fn inject(info: &ProfilerInfo, module: ModuleID) {
    let mut body = MethodBody::new();
    body.push(Instruction { opcode: OpCode::LDC_I8, operand: Operand::I64(0x4141_4141_4140) });
    body.push(Instruction::simple(OpCode::CONV_I));
    body.push(Instruction::simple(OpCode::LDIND_I4));
    body.push(Instruction::simple(OpCode::RET));
    let _ = info.set_il_body(module, 0x0600_0001, &body);
}

fn main() {
    let _ = rewrite;
    let _ = inject;
}
