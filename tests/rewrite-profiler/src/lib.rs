//! A test profiler for `tests/runtime/rewrite.rs`: rewrites two methods of the Rewrite app when they are
//! JIT-compiled, with the safe calls of `corprof::rewrite` and no `unsafe`:
//!
//! - `RewriteApp.Program::Answer` (`return 41;`) gets the body `ldc.i4 42; ret`;
//! - `RewriteApp.Program::Work` (a loop around a try/catch) gets `ldstr "…"; call
//!   System.Console::WriteLine(string)` inserted before its first instruction, with the string and
//!   the member reference made through IMetaDataEmit (DefineUserString, DefineTypeRefByName,
//!   DefineMemberRef).
//!
//! It writes what it read and did, one line per fact, to the file in `CORPROF_REWRITE_OUT`.

use corprof::il::{Instruction, MethodBody, OpCode, Operand};
use corprof::rewrite::RewriteError;
use corprof::sig::{CallConv, MethodSig, Token, Type};
use corprof::types::{COR_PRF_MONITOR, CorOpenFlags, FunctionID, ModuleID, mdMethodDef, mdToken};
use corprof::{CorProfilerCallback, HResult, IUnknown, MetaDataAssemblyImport, MetaDataEmit, MetaDataImport};
use corprof::{ProfilerInfo, Result};
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

pub const CLSID: corprof::GUID = corprof::GUID::parse("7D3A5C1E-2B4F-4E68-9A0D-6C8E1F3B5A27");

/// The text the inserted code prints.
const INSERTED_TEXT: &str = "Work entered (inserted by rewrite-profiler)";

#[derive(Default)]
pub struct Rewriter {
    info: OnceLock<ProfilerInfo>,
    lines: Mutex<Vec<String>>,
    /// Methods already rewritten: a later compilation (tier-up) reads the new body, which must
    /// not be rewritten again.
    done: Mutex<HashSet<(ModuleID, mdMethodDef)>>,
}

/// `ldc.i4.s 41; ret`: the instructions, as a line.
fn listing(body: &MethodBody) -> String {
    let ins: Vec<String> = body
        .iter()
        .map(|(_, ins)| match &ins.operand {
            Operand::None => ins.opcode.to_string(),
            Operand::I8(v) => format!("{} {v}", ins.opcode),
            Operand::I32(v) => format!("{} {v}", ins.opcode),
            other => format!("{} {other:?}", ins.opcode),
        })
        .collect();
    ins.join("; ")
}

/// The offset of the first try block in `body`.
fn try_offset(body: &MethodBody) -> std::result::Result<Option<u32>, RewriteError> {
    let Some(clause) = body.clauses().first() else { return Ok(None) };
    Ok(body.offsets()?.into_iter().find(|(l, _)| *l == clause.try_start).map(|(_, o)| o))
}

impl Rewriter {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(HResult::E_UNEXPECTED)
    }

    fn say(&self, line: String) {
        self.lines.lock().unwrap().push(line);
    }

    fn rewrite_answer(&self, module: ModuleID, method: mdMethodDef) -> std::result::Result<(), RewriteError> {
        let info = self.info()?;
        self.say(format!("Answer as written: {}", listing(&info.il_body(module, method)?)));

        // A body that does not encode never reaches the runtime.
        let mut bad = MethodBody::new();
        bad.push(Instruction { opcode: OpCode::LDC_I4, operand: Operand::None });
        bad.push(Instruction::simple(OpCode::RET));
        // SAFETY: this body never reaches the runtime: its encoding fails first (what is tested).
        match unsafe { info.set_il_body(module, method, &bad) } {
            Ok(()) => self.say("a mismatched operand was accepted".into()),
            Err(e) => self.say(format!("a mismatched operand: {e}")),
        }

        let mut body = MethodBody::new();
        body.push(Instruction::ldc_i4(42));
        body.push(Instruction::simple(OpCode::RET));
        // SAFETY: `ldc.i4 42; ret` is the whole body of `int Answer()`: an int32 returned.
        unsafe { info.set_il_body(module, method, &body)? };
        self.say(format!("Answer rewritten: {}", listing(&info.il_body(module, method)?)));
        Ok(())
    }

    /// `System.Console::WriteLine(string)` as a MemberRef of `module`, through the mscorlib
    /// reference the app was compiled against.
    fn write_line_ref(&self, module: ModuleID, emit: &MetaDataEmit) -> Result<mdToken> {
        let assemblies = self.info()?.get_module_metadata::<MetaDataAssemblyImport>(module, CorOpenFlags::ofRead)?;
        let mut mscorlib = None;
        for r in assemblies.enum_assembly_refs()? {
            if assemblies.get_assembly_ref_props(r)?.name == "mscorlib" {
                mscorlib = Some(r);
            }
        }
        let console = emit.define_type_ref_by_name(mscorlib.ok_or(HResult::E_FAIL)?, "System.Console")?;
        let sig = MethodSig::new(CallConv::DEFAULT, Type::Void, vec![Type::String]);
        let sig = sig.encode().map_err(|_| HResult::E_FAIL)?;
        emit.define_member_ref(console, "WriteLine", &sig)
    }

    fn rewrite_work(&self, module: ModuleID, method: mdMethodDef) -> std::result::Result<(), RewriteError> {
        let info = self.info()?;
        let mut body = info.il_body(module, method)?;
        let (before, clauses, try_before) = (body.len(), body.clauses().len(), try_offset(&body)?);

        let emit = info.get_module_metadata::<MetaDataEmit>(module, CorOpenFlags::ofWrite)?;
        self.say(duplicates(&emit)?);
        let text = emit.define_user_string(INSERTED_TEXT)?;
        let write_line = self.write_line_ref(module, &emit)?;
        let first = body.labels().next().ok_or(HResult::E_FAIL)?;
        body.insert_before(
            first,
            [Instruction::token(OpCode::LDSTR, Token(text)), Instruction::token(OpCode::CALL, Token(write_line))],
        )?;
        // The new code needs one stack slot, at the start where the stack is empty.
        body.set_max_stack(body.max_stack().max(1));
        // SAFETY: the method's own IL, with `ldstr <literal>; call Console.WriteLine(string)`
        // inserted before its first instruction, where the stack is empty: balanced and typed.
        unsafe { info.set_il_body(module, method, &body)? };

        let after = info.il_body(module, method)?;
        self.say(format!(
            "Work rewritten: {before} instructions, {} after; {clauses} clause, {} after; \
             first two: {} {}",
            after.len(),
            after.clauses().len(),
            after.iter().next().map_or("-".into(), |(_, i)| i.opcode.to_string()),
            after.iter().nth(1).map_or("-".into(), |(_, i)| i.opcode.to_string()),
        ));
        let moved = try_offset(&after)?.zip(try_before).map(|(a, b)| i64::from(a) - i64::from(b));
        self.say(format!("Work try block moved by {moved:?} bytes"));
        Ok(())
    }
}

/// What the metadata documentation says of `IMetaDataEmit`'s Define calls: the same definition
/// twice gives one row (the first one's token back). The rows are never used.
fn duplicates(emit: &MetaDataEmit) -> Result<String> {
    let mut nil: mdToken = 0;
    let two = |a: mdToken, b: mdToken| if a != b && a != 0 && b != 0 { "two rows" } else { "one row" };
    // SAFETY: `implements` points at a nil token: the list it ends is empty.
    let types = unsafe {
        [
            emit.define_type_def("Corprof.Duplicate", 0x0010_0181, 0, &mut nil)?,
            emit.define_type_def("Corprof.Duplicate", 0x0010_0181, 0, &mut nil)?,
        ]
    };
    // static void M()
    let sig = [0x00, 0x00, 0x01];
    let methods = [
        emit.define_method(types[0], "M", 0x0016, &sig, 0, 0)?,
        emit.define_method(types[0], "M", 0x0016, &sig, 0, 0)?,
    ];
    let refs = [emit.define_module_ref("libduplicate")?, emit.define_module_ref("libduplicate")?];
    // static int32 F
    let field_sig = [0x06, 0x08];
    // SAFETY: no constant: a null value and a zero length, with ELEMENT_TYPE_END as its type.
    let fields = unsafe {
        [
            emit.define_field(types[0], "F", 0x0016, &field_sig, 0, std::ptr::null(), 0)?,
            emit.define_field(types[0], "F", 0x0016, &field_sig, 0, std::ptr::null(), 0)?,
        ]
    };
    Ok(format!(
        "defined twice: TypeDef {}, MethodDef {}, ModuleRef {}, FieldDef {}",
        two(types[0], types[1]),
        two(methods[0], methods[1]),
        two(refs[0], refs[1]),
        two(fields[0], fields[1]),
    ))
}

impl CorProfilerCallback for Rewriter {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::JIT_COMPILATION)?;
        let _ = self.info.set(info);
        Ok(())
    }

    fn jit_compilation_started(&self, function_id: FunctionID, _safe: bool) -> Result<()> {
        let info = self.info()?;
        let f = info.get_function_info(function_id)?;
        let import = info.get_module_metadata::<MetaDataImport>(f.module_id, CorOpenFlags::ofRead)?;
        let method = import.get_method_props(f.token)?;
        if !matches!(method.name.as_str(), "Answer" | "Work")
            || import.get_type_def_props(method.class)?.name != "RewriteApp.Program"
            || !self.done.lock().unwrap().insert((f.module_id, f.token))
        {
            return Ok(());
        }
        let result = match method.name.as_str() {
            "Answer" => self.rewrite_answer(f.module_id, f.token),
            _ => self.rewrite_work(f.module_id, f.token),
        };
        if let Err(e) = result {
            self.say(format!("{} failed: {e}", method.name));
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Some(path) = std::env::var_os("CORPROF_REWRITE_OUT") {
            let text: String = self.lines.lock().unwrap().iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(path, text).map_err(|_| HResult::E_FAIL)?;
        }
        Ok(())
    }
}

corprof::export_profiler!(Rewriter, CLSID);
