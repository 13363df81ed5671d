//! IL rewriting at JIT time in real runtimes (tests/rewrite-profiler with the Rewrite app): the
//! profiler reads two methods' IL when they are JIT-compiled and hands back edited bodies with
//! `ProfilerInfo::set_il_body`, on CoreCLR 8.0.4 and 3.1.23.

use crate::common::*;

const JIT_REWRITE: &str = "SetILFunctionBody at JITCompilationStarted through ProfilerInfo::set_il_body: a method's returned constant changed (41 to 42), and a Console.WriteLine call (DefineUserString, DefineTypeRefByName, DefineMemberRef) inserted before a loop around a try/catch whose results stay as written";

const REWRITE_CLSID: &str = "7D3A5C1E-2B4F-4E68-9A0D-6C8E1F3B5A27";

/// The app's output without a profiler: what the methods compute as written.
const AS_WRITTEN: [&str; 3] = ["Answer 41", "Work 1402", "Work 101"];

fn jit_rewrite(runtime: &'static str, test: &str) {
    let _row = ConformanceRow::new("jit-rewrite", runtime, JIT_REWRITE);
    let plain = run_app(runtime, "Rewrite", &[]);
    assert_eq!(plain.code, Some(0), "{}", plain.describe());
    assert_eq!(plain.stdout.lines().collect::<Vec<_>>(), AS_WRITTEN, "the Rewrite app without a profiler");

    let lib = profiler_lib("rewrite_profiler");
    let out = TempFile::new(test);
    let run = run_profiled(runtime, "Rewrite", REWRITE_CLSID, &lib, &[("CORPROF_REWRITE_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    // Answer returns the new constant; Work prints the inserted line on each call and still
    // computes what it did: the loop's branches and the try/catch moved with the code.
    let expected_stdout = [
        "Answer 42",
        "Work entered (inserted by rewrite-profiler)",
        "Work 1402",
        "Work entered (inserted by rewrite-profiler)",
        "Work 101",
    ];
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), expected_stdout, "{}", run.describe());

    let text = out.read().unwrap_or_else(|| panic!("no rewrite-profiler output: {}", run.describe()));
    let expected = [
        "Answer as written: ldc.i4.s 41; ret",
        // A body that does not encode is refused before it reaches the runtime.
        "a mismatched operand: IL offset 0: operand does not fit opcode ldc.i4",
        // il_body reads back what set_il_body gave.
        "Answer rewritten: ldc.i4.s 42; ret",
        // The metadata documentation's claim: the runtime's emitter checks for duplicates.
        "defined twice: TypeDef one row, MethodDef one row, ModuleRef one row, FieldDef one row",
        "Work rewritten: 39 instructions, 41 after; 1 clause, 1 after; first two: ldstr call",
        // ldstr and call, 5 bytes each, before the try block.
        "Work try block moved by Some(10) bytes",
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected, "rewrite-profiler output on CoreCLR {runtime}");
}

#[test]
fn jit_rewrite_on_coreclr_8() {
    let _runtime = runtime_lock();
    jit_rewrite("8", "jit_rewrite_on_coreclr_8");
}

#[test]
fn jit_rewrite_on_coreclr_3() {
    let _runtime = runtime_lock();
    jit_rewrite("3", "jit_rewrite_on_coreclr_3");
}
