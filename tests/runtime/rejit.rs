//! ReJIT in real runtimes (examples/rejit-swap with the RejitSwap app): the app sees its
//! method's original string, then the swapped one after asking the profiler (a P/Invoke into
//! the profiler's library) for a ReJIT, then the original again after asking for the revert;
//! on CoreCLR 8.0.4 and 3.1.23.

use crate::common::*;

const REJIT: &str = "`src/tests/profiler/rejit/rejit.cs`: RequestReJIT from a P/Invoke trigger, GetReJITParameters replacing a method's ldstr (DefineUserString) through ProfilerFunctionControl::set_il_body, ReJITCompilationStarted/Finished and no ReJITError; RequestRevert restores the original";

const SWAP_CLSID: &str = "4F8E2A6C-1D3B-4C5A-9E7F-0B2D4C6E8A13";

/// Runs the RejitSwap app under rejit-swap with `extra` settings: the app's stdout lines and the
/// profiler's log lines.
fn rejit_swap(runtime: &'static str, test: &str, extra: &[(&'static str, &str)]) -> (Vec<String>, Vec<String>) {
    let lib = profiler_lib("rejit_swap");
    let log = TempFile::new(test);
    // The app's DllImport finds the profiler's library by name on LD_LIBRARY_PATH.
    let dir = lib.parent().expect("the library's folder").to_str().expect("UTF-8 path").to_string();
    let mut env = vec![("REJIT_SWAP_LOG", log.path()), ("LD_LIBRARY_PATH", dir.as_str())];
    env.extend_from_slice(extra);
    let run = run_profiled(runtime, "RejitSwap", SWAP_CLSID, &lib, &env);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let text = log.read().unwrap_or_else(|| panic!("no rejit-swap log: {}", run.describe()));
    (run.stdout.lines().map(str::to_string).collect(), text.lines().map(str::to_string).collect())
}

fn rejit(runtime: &'static str, test: &str) {
    let _row = ConformanceRow::new("rejit", runtime, REJIT);
    let (stdout, log) = rejit_swap(runtime, test, &[]);
    let expected_stdout = [
        "before: original greeting",
        "request: 0x00000000",
        "swapped: swapped by rejit-swap",
        "swapped again: swapped by rejit-swap",
        "revert: 0x00000000",
        "reverted: original greeting",
    ];
    assert_eq!(stdout, expected_stdout, "the app's output on CoreCLR {runtime}; profiler log: {log:#?}");
    let expected_log = [
        "request RejitSwapApp.Program::Greeting: S_OK (0x00000000)",
        "GetReJITParameters RejitSwapApp.Program::Greeting: 1 ldstr replaced",
        "ReJITCompilationStarted RejitSwapApp.Program::Greeting",
        "ReJITCompilationFinished RejitSwapApp.Program::Greeting: S_OK (0x00000000)",
        "revert RejitSwapApp.Program::Greeting: S_OK (0x00000000)",
    ];
    assert_eq!(log, expected_log, "rejit-swap's log on CoreCLR {runtime} (a ReJITError would be listed)");
}

#[test]
fn rejit_on_coreclr_8() {
    let _runtime = runtime_lock();
    rejit("8", "rejit_on_coreclr_8");
}

#[test]
fn rejit_on_coreclr_3() {
    let _runtime = runtime_lock();
    rejit("3", "rejit_on_coreclr_3");
}

/// A method the app does not have: the trigger answers ERROR_NOT_FOUND, nothing is ReJITted,
/// and the app goes on with the original code.
#[test]
fn rejit_of_a_missing_method_is_refused() {
    let _runtime = runtime_lock();
    let extra = [("REJIT_SWAP_METHOD", "RejitSwapApp.Program::NoSuchMethod")];
    let (stdout, log) = rejit_swap("8", "rejit_of_a_missing_method_is_refused", &extra);
    let expected_stdout = [
        "before: original greeting",
        "request: 0x80070490",
        "swapped: original greeting",
        "swapped again: original greeting",
        "revert: 0x80070490",
        "reverted: original greeting",
    ];
    assert_eq!(stdout, expected_stdout, "profiler log: {log:#?}");
    assert_eq!(log, Vec::<String>::new(), "nothing was requested");
}
