//! examples/il-roundtrip in real runtimes: every method body of every module the Shop app loads
//! (System.Private.CoreLib among them) decodes and encodes back byte for byte, and every
//! signature those bodies reference decodes and encodes back too.

use crate::common::*;

const CLSID: &str = "5E1F0C3A-7B2D-4C89-A6E4-1D3F5B7C9E20";

const WHAT: &str = "every IL method body of System.Private.CoreLib and the app's modules byte-identical after decode → encode, every signature they reference (locals, MethodDef, MemberRef and its TypeSpec parent, MethodSpec, TypeSpec, FieldDef) decoded and re-encoded identical";

/// Runs the Shop app under il-roundtrip and returns its lines, after checking the app ran, no
/// body or signature failed, and every module's bodies all came back identical.
fn round_trip(runtime: &'static str, test: &str) -> Vec<String> {
    let lib = profiler_lib("il_roundtrip");
    let out = TempFile::new(test);
    let run = run_profiled(runtime, "Shop", CLSID, &lib, &[("CORPROF_IL_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("Shop done 33"), "{}", run.describe());
    assert_eq!(run.stderr_lines("il-roundtrip:"), Vec::<&str>::new(), "no failure: {}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no output written: {}", run.describe()));
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 4, "`<module> <bodies> <identical> <signatures>`: {line:?}\n{text}");
        let counts: Vec<usize> =
            fields[1..].iter().map(|f| f.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"))).collect();
        assert_eq!(counts[0], counts[1], "every body of {} byte-identical:\n{text}", fields[0]);
    }
    text.lines().map(str::to_string).collect()
}

/// The line of `module`, exactly once.
fn line_of<'a>(lines: &'a [String], module: &str) -> &'a str {
    let found: Vec<&String> = lines.iter().filter(|l| l.split(' ').next() == Some(module)).collect();
    assert_eq!(found.len(), 1, "one line for {module}: {lines:#?}");
    found[0]
}

/// The counts are those of the pinned runtimes' CoreLib and of the Shop app built by mcs (its 8
/// bodies reference 27 signatures: 8 method definitions, 11 member references and their 4
/// generic-instance and array TypeSpec parents, 1 locals signature, 1 TypeSpec, 2 MethodSpecs).
#[test]
fn il_roundtrip_on_coreclr_8() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("il-roundtrip", "8", WHAT);
    let lines = round_trip("8", "il_roundtrip_on_coreclr_8");
    assert_eq!(line_of(&lines, "System.Private.CoreLib.dll"), "System.Private.CoreLib.dll 31877 31877 49809");
    assert_eq!(line_of(&lines, "Shop.dll"), "Shop.dll 8 8 27");
    assert_eq!(line_of(&lines, "System.Console.dll"), "System.Console.dll 434 434 1042");
    // A facade of type forwards has metadata but no code.
    assert_eq!(line_of(&lines, "System.Runtime.dll"), "System.Runtime.dll 0 0 0");
}

#[test]
fn il_roundtrip_on_coreclr_3() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("il-roundtrip", "3", WHAT);
    let lines = round_trip("3", "il_roundtrip_on_coreclr_3");
    assert_eq!(line_of(&lines, "System.Private.CoreLib.dll"), "System.Private.CoreLib.dll 19586 19586 31873");
    assert_eq!(line_of(&lines, "Shop.dll"), "Shop.dll 8 8 27");
    assert_eq!(line_of(&lines, "System.Console.dll"), "System.Console.dll 421 421 925");
}
