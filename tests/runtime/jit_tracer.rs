//! examples/jit-tracer in real runtimes: the Tracer app's methods and exception come out with
//! their metadata names (namespace, nested type, generic arity), and the ICorProfilerInfo
//! version the runtime negotiated is the one each runtime has.

use crate::common::*;
use std::collections::BTreeSet;

const TRACER_CLSID: &str = "A3C1E5F7-2B4D-4F60-8A1C-3E5B7D9F1A2C";

/// Every line the app's own code produces (the runtime's methods are filtered out).
const EXPECTED: &[&str] = &[
    "EXC TracerApp.OrderException",
    "TracerApp.Box`1::.ctor",
    "TracerApp.Box`1::Get",
    "TracerApp.OrderException::.ctor",
    "TracerApp.Orders::Submit",
    "TracerApp.Outer+Inner::Work",
    "TracerApp.Program::Main",
];

fn trace(runtime: &'static str, test: &str, info: &str) {
    let lib = profiler_lib("jit_tracer");
    let out = TempFile::new(test);
    let run = run_profiled(runtime, "Tracer", TRACER_CLSID, &lib, &[("CORPROF_TRACE_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("Tracer done 48"), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no trace written: {}", run.describe()));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first().copied(), Some(info), "negotiated version:\n{text}");
    assert!(!text.contains("# unresolved"), "every name resolves:\n{text}");
    // Tiered compilation may JIT a method twice: compare the set.
    let ours: BTreeSet<&str> =
        lines.iter().copied().filter(|l| l.starts_with("TracerApp.") || l.starts_with("EXC ")).collect();
    assert_eq!(ours, EXPECTED.iter().copied().collect::<BTreeSet<_>>(), "trace:\n{text}");
    // The runtime's own methods are named the same way (e.g. System.String::Concat).
    assert!(lines.iter().filter(|l| l.starts_with("System.") && l.contains("::")).count() > 0, "trace:\n{text}");
}

#[test]
fn jit_tracer_on_coreclr_8() {
    let _runtime = runtime_lock();
    trace("8", "jit_tracer_on_coreclr_8", "# info ICorProfilerInfo14 (version 14)");
}

#[test]
fn jit_tracer_on_coreclr_3() {
    let _runtime = runtime_lock();
    trace("3", "jit_tracer_on_coreclr_3", "# info ICorProfilerInfo11 (version 11)");
}

/// The Shop app's methods as their module declares them (`CORPROF_TRACE_SIGNATURES=1`): generic
/// parameters by name, nested types with `+`, arrays, byrefs (`ref` and `out` alike are `&`).
const SHOP_SIGNATURES: &[&str] = &[
    "System.Int32 Shop.Order::Submit(System.String)",
    "System.Int32 Shop.Program::Main(System.String[])",
    "System.Int32[] Shop.Outer+Inner::Fill(System.Int32[], System.String[,])",
    "System.Void Shop.Box<T>::.ctor(T)",
    "System.Void Shop.Catalog::Count(System.Int32&, System.String&)",
    "System.Void Shop.Order::.ctor()",
    "T Shop.Box<T>::Get()",
    "T Shop.Catalog::Pick<T>(T[])",
];

/// The same methods as the runtime compiles them (`CORPROF_TRACE_SIGNATURES=runtime`): one line
/// per instantiation, `System.__Canon` for the body reference types share. Without a frame the
/// runtime names no class for the code shared by `Box<string>` (GetFunctionInfo2 answers class
/// 0), so that body's class parameters print by name.
const SHOP_INSTANTIATIONS: &[&str] = &[
    "System.Int32 Shop.Box<System.Int32>::Get()",
    "System.Int32 Shop.Catalog::Pick<System.Int32>(System.Int32[])",
    "System.Int32 Shop.Order::Submit(System.String)",
    "System.Int32 Shop.Program::Main(System.String[])",
    "System.Int32[] Shop.Outer+Inner::Fill(System.Int32[], System.String[,])",
    "System.Void Shop.Box<System.Int32>::.ctor(System.Int32)",
    "System.Void Shop.Box<T>::.ctor(T)",
    "System.Void Shop.Catalog::Count(System.Int32&, System.String&)",
    "System.Void Shop.Order::.ctor()",
    "System.__Canon Shop.Catalog::Pick<System.__Canon>(System.__Canon[])",
    "T Shop.Box<T>::Get()",
];

const SIGNATURE_NAMES: &str = "the jit-tracer's signature lines for the Shop app (nested, generic, array, byref and out members; generic methods), as declared and as the runtime instantiates them (System.__Canon for shared code), every JIT-compiled method's signature decoded; allocated classes named with their instantiation (arrays, nested generic instances)";

/// The type a signature line's method belongs to: between the return type and `::` (a generic
/// return type may hold spaces, the owner of these lines does not).
fn owner(line: &str) -> Option<&str> {
    let (left, _) = line.split_once("::")?;
    left.rsplit(' ').next()
}

/// Runs the Shop app under the tracer in `mode` and returns the app's own method lines, as a set
/// (tiered compilation may JIT a method twice), after checking every line resolved; and the
/// `NEW <class>` lines (runtime mode), as a set.
fn shop_lines(runtime: &'static str, test: &str, mode: &str, info: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let lib = profiler_lib("jit_tracer");
    let out = TempFile::new(test);
    let env = [("CORPROF_TRACE_OUT", out.path()), ("CORPROF_TRACE_SIGNATURES", mode)];
    let run = run_profiled(runtime, "Shop", TRACER_CLSID, &lib, &env);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("Shop done 33"), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no trace written: {}", run.describe()));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first().copied(), Some(info), "negotiated version:\n{text}");
    // Every method the runtime compiled (CoreLib's too) has a decodable signature and names.
    assert!(!text.contains("# unresolved"), "every signature resolves:\n{text}");
    let runtime_methods = lines.iter().filter(|l| owner(l).is_some_and(|o| o.starts_with("System."))).count();
    assert!(runtime_methods > 0, "the runtime's own methods are traced too:\n{text}");
    let methods = lines.iter().filter(|l| owner(l).is_some_and(|o| o.starts_with("Shop."))).map(|l| l.to_string());
    let classes = lines.iter().filter(|l| l.starts_with("NEW ")).map(|l| l.to_string());
    (methods.collect(), classes.collect())
}

/// The classes of the runtime mode's `NEW` lines: the app's own exactly (the exact
/// instantiations, not `System.__Canon`: an object's class is never shared code's), and arrays
/// and nested generic instances the app and the runtime allocate in both versions.
fn check_classes(classes: &BTreeSet<String>) {
    let shop: BTreeSet<&str> = classes.iter().map(String::as_str).filter(|c| c.contains("Shop.")).collect();
    let expected = ["NEW Shop.Box<System.Int32>", "NEW Shop.Box<System.String>", "NEW Shop.Order"];
    assert_eq!(shop, expected.into_iter().collect(), "{classes:#?}");
    for class in [
        "NEW System.Int32[]",
        "NEW System.String[]",
        "NEW System.String[,]",
        "NEW System.Collections.Generic.Dictionary<System.String, System.Object>+Entry[]",
    ] {
        assert!(classes.contains(class), "{class} in {classes:#?}");
    }
}

fn expected(lines: &[&str]) -> BTreeSet<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

#[test]
fn jit_tracer_signatures_on_coreclr_8() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("signature-names", "8", SIGNATURE_NAMES);
    let info = "# info ICorProfilerInfo14 (version 14)";
    let (methods, classes) = shop_lines("8", "signatures_8", "1", info);
    assert_eq!(methods, expected(SHOP_SIGNATURES));
    assert!(classes.is_empty(), "no NEW lines unless asked: {classes:#?}");
    let (methods, classes) = shop_lines("8", "instantiations_8", "runtime", info);
    assert_eq!(methods, expected(SHOP_INSTANTIATIONS));
    check_classes(&classes);
}

#[test]
fn jit_tracer_signatures_on_coreclr_3() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new("signature-names", "3", SIGNATURE_NAMES);
    let info = "# info ICorProfilerInfo11 (version 11)";
    let (methods, classes) = shop_lines("3", "signatures_3", "1", info);
    assert_eq!(methods, expected(SHOP_SIGNATURES));
    assert!(classes.is_empty(), "no NEW lines unless asked: {classes:#?}");
    let (methods, classes) = shop_lines("3", "instantiations_3", "runtime", info);
    assert_eq!(methods, expected(SHOP_INSTANTIATIONS));
    check_classes(&classes);
}
