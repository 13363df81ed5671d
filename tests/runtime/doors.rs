//! The doors an outside attack went through with the public API alone, each an exit 139 (or an
//! abort) before corprof refused it, in CoreCLR 8.0.4 and 3.1.23. The profiler is
//! tests/doors-profiler (`#![forbid(unsafe_code)]`), on tests/apps/Workload; each case asserts
//! what it printed (`DOORS …` lines) and that the app ran to its end and exited 0.
//!
//! - a GC forced from a fast-mode enter hook (`force_gc` answered `Ok` once, then the app
//!   crashed): refused, `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`, while an allowed call in the
//!   same hook still answers;
//! - a type loaded on a thread the profiler started (`get_class_from_token` crashed in the
//!   runtime's type loader; `initialize_current_thread` does not make the thread known): refused,
//!   `CORPROF_E_NOT_MANAGED_THREAD`, while the same call on the callback's thread works; the
//!   enumeration of the module's TypeDefs counts and rewinds through its own handle;
//! - a provider callback starting a session that names its own provider (the runtime called it
//!   again inside the start, without end): the nested call is not run and is logged once
//!   (CoreCLR 8.0.4; 3.1.23 has no EventPipe providers for profilers and says so);
//! - an object lent by `ObjectAllocated` asked about after a call that may trigger a GC (which
//!   may move it: the runtime would get a stale address): refused,
//!   `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`, while the next callback's object answers again;
//! - the module, assembly, class and function IDs of code in a collectible AssemblyLoadContext,
//!   kept and asked about after the context unloaded (freed memory: exit 139): refused,
//!   `COR_E_APPDOMAINUNLOADED`, while the same IDs of the app's own copy, kept as long, still
//!   answer, and so does a function first seen after the unload, lent to its callback and then
//!   asked from another thread. The profiler never asked for module or assembly loads: corprof
//!   follows the unloads by itself.

use crate::common::*;

const CLSID: &str = "3D5C7E91-2A4B-4C6D-8E0F-1A2B3C4D5E6F";

/// Runs Workload under doors-profiler in `mode`; asserts the clean end and returns the `DOORS`
/// lines and the corprof report lines.
fn run(runtime: &'static str, mode: &str) -> (Vec<String>, Vec<String>) {
    run_on(runtime, "Workload", mode)
}

/// [`run`] on the test app `app` (which prints `<app> done` at its end).
fn run_on(runtime: &'static str, app: &str, mode: &str) -> (Vec<String>, Vec<String>) {
    let mut env = profiler_env(CLSID, &profiler_lib("doors_profiler"));
    env.push(("DOORS_MODE", mode.to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = run_app(runtime, app, &env);
    assert_eq!(run.code, Some(0), "the app did not exit cleanly\n{}", run.describe());
    assert!(run.stdout.contains(&format!("{app} done")), "the app did not finish\n{}", run.describe());
    let lines = |prefix: &str| -> Vec<String> {
        run.stderr.lines().filter_map(|l| l.strip_prefix(prefix)).map(str::to_string).collect()
    };
    (lines("DOORS "), lines("corprof: "))
}

fn gc_in_a_fast_hook(runtime: &'static str) {
    let (lines, _) = run(runtime, "hook");
    let want: Vec<String> = (0..3)
        .flat_map(|n| {
            [
                format!("hook {n} force_gc Err CORPROF_E_UNSUPPORTED_CALL_SEQUENCE"),
                format!("hook {n} get_function_info Ok ()"),
            ]
        })
        .collect();
    assert_eq!(lines, want);
}

#[test]
fn a_gc_forced_in_a_fast_hook_is_refused_net8() {
    let _runtime = runtime_lock();
    gc_in_a_fast_hook("8");
}

#[test]
fn a_gc_forced_in_a_fast_hook_is_refused_net3() {
    let _runtime = runtime_lock();
    gc_in_a_fast_hook("3");
}

fn types_on_a_thread_of_its_own(runtime: &'static str) {
    let (lines, _) = run(runtime, "thread");
    assert_eq!(
        lines,
        [
            "typedefs total>2 true read 2 first again true",
            "own thread get_class_from_token Err CORPROF_E_NOT_MANAGED_THREAD",
            "own thread initialize_current_thread Ok ()",
            "own thread after initialize get_class_from_token Err CORPROF_E_NOT_MANAGED_THREAD",
            "own thread get_class_from_token_and_type_args Err CORPROF_E_NOT_MANAGED_THREAD",
            "callback thread get_class_from_token Ok ()",
        ]
    );
}

#[test]
fn a_type_loaded_on_a_thread_the_runtime_does_not_know_is_refused_net8() {
    let _runtime = runtime_lock();
    types_on_a_thread_of_its_own("8");
}

#[test]
fn a_type_loaded_on_a_thread_the_runtime_does_not_know_is_refused_net3() {
    let _runtime = runtime_lock();
    types_on_a_thread_of_its_own("3");
}

#[test]
fn a_provider_callback_starting_its_own_session_runs_once_net8() {
    let _runtime = runtime_lock();
    let (lines, reports) = run("8", "provider");
    // Later enables and disables (at exit, on other threads) may add lines; the start's own are
    // these, in this order: the callback ran once, inside the start, and its own nested enable
    // was not passed on.
    let start: Vec<&str> = lines.iter().map(String::as_str).take(4).collect();
    assert_eq!(
        start,
        ["create provider Ok ()", "callback 0 start session Ok ()", "start session Ok ()", "callbacks ran 1"],
        "all lines: {lines:#?}"
    );
    assert_eq!(
        reports.iter().filter(|l| l.contains("called again inside itself")).count(),
        1,
        "the skipped call is logged once: {reports:#?}"
    );
}

#[test]
fn a_provider_callback_starting_its_own_session_runs_once_net3() {
    let _runtime = runtime_lock();
    let (lines, _) = run("3", "provider");
    assert_eq!(lines, ["create provider Err E_NOINTERFACE", "start session Err E_NOINTERFACE", "callbacks ran 0"]);
}

fn objects_after_a_gc_may_have_run(runtime: &'static str) {
    let (lines, _) = run(runtime, "lent");
    assert_eq!(
        lines,
        [
            "lent before class Ok ()",
            "lent enum_modules Ok ()",
            "lent after class Err CORPROF_E_UNSUPPORTED_CALL_SEQUENCE",
            "lent next callback class Ok ()",
        ]
    );
}

#[test]
fn a_lent_object_is_refused_after_a_call_that_may_move_it_net8() {
    let _runtime = runtime_lock();
    objects_after_a_gc_may_have_run("8");
}

#[test]
fn a_lent_object_is_refused_after_a_call_that_may_move_it_net3() {
    let _runtime = runtime_lock();
    objects_after_a_gc_may_have_run("3");
}

fn ids_of_unloaded_code(runtime: &'static str) {
    let (lines, _) = run_on(runtime, "Unload", "unloaded");
    let refused = "Err COR_E_APPDOMAINUNLOADED";
    assert_eq!(
        lines,
        [
            format!("stale module {refused}"),
            format!("stale assembly {refused}"),
            format!("stale class {refused}"),
            format!("stale function {refused}"),
            "kept module Ok ()".to_string(),
            "kept assembly Ok ()".to_string(),
            "kept class Ok ()".to_string(),
            "kept function Ok ()".to_string(),
            "lent function Ok ()".to_string(),
            "other thread lent function Ok ()".to_string(),
            format!("other thread stale function {refused}"),
            "other thread kept class Ok ()".to_string(),
        ]
    );
}

#[test]
fn ids_of_an_unloaded_context_are_refused_net8() {
    let _runtime = runtime_lock();
    ids_of_unloaded_code("8");
}

#[test]
fn ids_of_an_unloaded_context_are_refused_net3() {
    let _runtime = runtime_lock();
    ids_of_unloaded_code("3");
}

fn rejit_with_inliners_of_precompiled_code(runtime: &'static str, expected: &str) {
    let (lines, _) = run(runtime, "inliners");
    assert_eq!(lines, [format!("inliners precompiled {expected}")]);
}

#[test]
fn rejit_with_inliners_of_precompiled_code_is_taken_net8() {
    let _runtime = runtime_lock();
    rejit_with_inliners_of_precompiled_code("8", "Ok ()");
}

/// CoreCLR 3.1.23 crashed (exit 139) on RequestReJITWithInliners for a method of CoreLib.
#[test]
fn rejit_with_inliners_of_precompiled_code_is_refused_net3() {
    let _runtime = runtime_lock();
    rejit_with_inliners_of_precompiled_code("3", "Err COR_E_NOTSUPPORTED");
}
