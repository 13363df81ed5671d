//! Stack walks through the closure API (`ProfilerInfo::do_stack_snapshot_with` / `_of`, and
//! `Suspension::walk`, tests/stack-profiler) in real runtimes, on the Stacks app: the current
//! thread's managed frames inside a callback are exactly the app's call chain, a stop and a panic
//! end the walk as documented, register contexts come with every frame, and walking another
//! thread is refused with E_NOTIMPL on Linux unless the profiler holds the runtime suspended,
//! which its guard ends on every way out: a return, a `?`, a panic in a walk's closure.

use crate::common::*;

const STACK_CLSID: &str = "3C5A7E91-2B4D-4F60-8A17-9E0B6C2D4F58";

fn stacks(runtime: &'static str, test: &str, context_size: usize) {
    let _row = ConformanceRow::new(
        "stack-walks",
        runtime,
        "do_stack_snapshot_with from a callback: exactly the app's frames, a stop, register contexts, a panic re-raised; another thread refused (E_NOTIMPL) unless the runtime is suspended, a nested walk refused; with no unsafe, a suspension guard resumes on a `?`, refuses a second suspension, lists the threads and walks another one",
    );
    let lib = profiler_lib("stack_profiler");
    let out = TempFile::new(test);
    let run = run_profiled(runtime, "Stacks", STACK_CLSID, &lib, &[("CORPROF_STACK_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, "Stacks done 11\n", "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no stack-profiler output: {}", run.describe()));
    let context_line =
        format!("context Ok: 4/4 managed frames, sizes {{{context_size}}}, rip==ip 4, native frames with a context 1");
    let expected = [
        // Walked from JITCompilationStarted of Marker.Hit: Hit itself is not running yet, and the
        // native frames below Main (the host) come last as one run.
        "walk Ok: StacksApp.Program::C StacksApp.Program::B StacksApp.Program::A StacksApp.Program::Main <native>",
        "stop after 2 Ok: visited 2",
        &context_line,
        "panic re-raised: \"boom in the walk\" after 1 call(s)",
        // The thread is already being walked: the runtime refuses a second walk inside the first.
        "nested Ok: inner CORPROF_E_STACKSNAPSHOT_UNSAFE with 0 frame(s)",
        "sleeper unsuspended E_NOTIMPL: 0 frame(s)",
        "own thread Ok: 0 frame(s)",
        // The `?` dropped the guard, which resumed the runtime: the next suspension succeeds.
        "early return under suspension: E_FAIL",
        // A second suspension while one is held is refused before the runtime is asked (the
        // runtime would accept it and hang the app), and so is a call for which the runtime would
        // suspend itself (it would wait on this thread forever); the Sleeper is among the listed threads.
        "sleeper suspended: suspend Ok, again CORPROF_E_SUSPENSION_IN_PROGRESS, force_gc \
         CORPROF_E_SUSPENSION_IN_PROGRESS, listed, os id Ok(true), app domain Ok(true), walk Ok: app frames \
         StacksApp.Program::Sleeper; resume Ok",
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected, "stack-profiler output on CoreCLR {runtime}");
    // The panic went through the panic hook once (re-raised with resume_unwind, which does not
    // run the hook again) and never reached corprof's callback guard.
    let hook_lines = run.stderr.lines().filter(|l| l.contains("panicked at") && l.contains("stack-profiler")).count();
    assert_eq!(hook_lines, 1, "{}", run.describe());
    assert_eq!(run.panic_lines().len(), 0, "{}", run.describe());
}

#[test]
fn stack_walks_on_coreclr_8() {
    let _runtime = runtime_lock();
    // 8.0's CONTEXT carries the extended (AVX-512) register state; the size is the runtime's
    // sizeof(CONTEXT), fixed when it was built (not the CPU's).
    stacks("8", "stack_walks_on_coreclr_8", 3104);
}

#[test]
fn stack_walks_on_coreclr_3() {
    let _runtime = runtime_lock();
    stacks("3", "stack_walks_on_coreclr_3", 1232);
}

/// A panic in a walk's closure while the profiler holds the runtime suspended (a suspension left held):
/// the panic ends the walking thread, the guard resumes the runtime as it unwinds, and the app runs
/// to its end. Before the guard, the thread died holding the suspension and the app hung for good
/// (the harness kills an app after RUN_TIMEOUT and fails the test).
fn panic_under_suspension(runtime: &'static str, test: &str) {
    let _row = ConformanceRow::new(
        "stack-walk-panic",
        runtime,
        "a panic in Suspension::walk's closure: the guard resumes the runtime while unwinding, the app finishes",
    );
    let lib = profiler_lib("stack_profiler");
    let out = TempFile::new(test);
    let env = [("CORPROF_STACK_OUT", out.path()), ("CORPROF_STACK_PANIC", "1")];
    let run = run_profiled(runtime, "Stacks", STACK_CLSID, &lib, &env);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, "Stacks done 11\n", "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no stack-profiler output: {}", run.describe()));
    let last: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("own thread")).collect();
    let expected = [
        "own thread Ok: 0 frame(s)",
        "early return under suspension: E_FAIL",
        "walking thread panicked: \"boom under suspension\", the app goes on",
    ];
    assert_eq!(last, expected, "stack-profiler output on CoreCLR {runtime}");
}

#[test]
fn panic_under_suspension_on_coreclr_8() {
    let _runtime = runtime_lock();
    panic_under_suspension("8", "panic_under_suspension_on_coreclr_8");
}

#[test]
fn panic_under_suspension_on_coreclr_3() {
    let _runtime = runtime_lock();
    panic_under_suspension("3", "panic_under_suspension_on_coreclr_3");
}

/// A sampler with no `unsafe` (tests/stack-profiler with `CORPROF_STACK_SAMPLE`): a thread of the
/// profiler's suspends the runtime every millisecond and walks every managed thread while the
/// Workload app loads modules, throws, collects and runs threads that start and end, until
/// Shutdown joins it. The app's result is unchanged; the walks the runtime refuses are refused for
/// the thread's state (E_NOTIMPL for a thread stopped in cooperative mode, whose context the Unix
/// runtime does not read; E_FAIL; CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX), never because the handle
/// was another suspension's (E_INVALIDARG).
fn sampler(runtime: &'static str, test: &str) {
    let _row = ConformanceRow::new(
        "stack-sampler",
        runtime,
        "a sampler thread with no unsafe: every millisecond, Suspension::threads and Suspension::walk of each managed thread while the Workload app runs (threads start and end, GCs, exceptions); the app's result unchanged",
    );
    let lib = profiler_lib("stack_profiler");
    let out = TempFile::new(test);
    let mut env = profiler_env(STACK_CLSID, &lib);
    env.push(("CORPROF_STACK_OUT", out.path().to_string()));
    env.push(("CORPROF_STACK_SAMPLE", "1".to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = run_app_with_args(runtime, "Workload", &["20"], &env);
    run.assert_workload_done();
    let text = out.read().unwrap_or_else(|| panic!("no stack-profiler output: {}", run.describe()));
    let line = text.lines().find(|l| l.starts_with("sampler")).unwrap_or_else(|| panic!("no sampler line: {text}"));
    let count = |what: &str| -> u64 {
        let after = line.split(&format!("{what} ")).nth(1).unwrap_or_else(|| panic!("no {what} in {line:?}"));
        after.split(',').next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no {what} count in {line:?}"))
    };
    // Each round resumes the runtime, so the next one can suspend it again: the app runs for
    // tens of milliseconds, so a sampler that could suspend only once would show 1 round.
    assert!(count("rounds") >= 3 && count("walks") > 0, "{line}");
    assert!(!line.contains("E_INVALIDARG"), "{line}");
}

#[test]
fn sampler_on_coreclr_8() {
    let _runtime = runtime_lock();
    sampler("8", "sampler_on_coreclr_8");
}

#[test]
fn sampler_on_coreclr_3() {
    let _runtime = runtime_lock();
    sampler("3", "sampler_on_coreclr_3");
}
