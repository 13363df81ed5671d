//! Wrapping methods with Rust handlers in real runtimes (tests/instrument-profiler with the
//! Instrument app): every method of the app's target types is wrapped as its module loads, the
//! app's output stays what it is unwrapped, and the handlers see each call begin and end, the
//! exceptions, the returned values and their own state back, on CoreCLR 8.0.4 and 3.1.23.

use crate::common::*;

const INSTRUMENT_CLSID: &str = "3B8E1F52-6C0A-4D97-B2E4-8F1A7C5D9E03";

fn wrapped(runtime: &'static str, test: &str) {
    let plain = run_app(runtime, "Instrument", &[]);
    assert_eq!(plain.code, Some(0), "{}", plain.describe());

    let lib = profiler_lib("instrument_profiler");
    let out = TempFile::new(test);
    let ready = TempFile::new(&format!("{test}-ready"));
    let reverted = TempFile::new(&format!("{test}-reverted"));
    // The JIT's list of what it compiled (CoreCLR 7 and later; 3.1.23 ignores the settings).
    let jitted = TempFile::new(&format!("{test}-jitted"));
    let run = run_profiled(
        runtime,
        "Instrument",
        INSTRUMENT_CLSID,
        &lib,
        &[
            ("CORPROF_INSTRUMENT_OUT", out.path()),
            ("INSTRUMENT_READY", ready.path()),
            ("INSTRUMENT_REVERTED", reverted.path()),
            ("DOTNET_JitDisasmSummary", "1"),
            ("DOTNET_JitStdOutFile", jitted.path()),
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, plain.stdout, "the app's output, wrapped and not: {}", run.describe());
    if runtime == "8" {
        // The app's module, wrapped as it loaded, got entry methods, and the wrapped bodies call
        // them: the begin and end entries, with and without the GC transition, the begin taking
        // arguments, and the end of a method returning a floating-point number.
        let jitted = jitted.read().unwrap_or_else(|| panic!("no JIT summary: {}", run.describe()));
        let mut entries: Vec<&str> = jitted
            .lines()
            .filter_map(|l| l.split("JIT compiled ").nth(1))
            .filter(|l| l.contains("<corprof>entry"))
            .map(|l| l.split('(').next().unwrap_or(l))
            .collect();
        entries.sort();
        entries.dedup();
        assert_eq!(entries.len(), 6, "{entries:?}\n{jitted}");
    }
    // Each handler that panics (in begin, in end: with a payload that panics again when dropped)
    // is reported once, and the app runs on.
    let reports: Vec<&str> = run.stderr.lines().filter(|l| l.contains("instrument handler")).collect();
    assert_eq!(
        reports,
        [
            "corprof: instrument handler for InstrumentApp.Program::Main (in InstrumentApp.Program::Main) panicked: \
             a handler that panics; it is not called again",
            "corprof: instrument handler for InstrumentApp.Box`1::.ctor (in InstrumentApp.Box`1::.ctor) panicked: \
             (non-string panic payload); it is not called again",
        ],
        "{}",
        run.describe()
    );
    assert!(run.stderr.contains("DropBomb: the payload panicked while being dropped"), "{}", run.describe());

    let text = out.read().unwrap_or_else(|| panic!("no instrument-profiler output: {}", run.describe()));
    let fast = if runtime == "8" { 3 } else { 0 };
    let never_blocking = format!("never blocking: begins=3 ends=3 without the GC transition={fast}");
    // Precompiled framework code is wrapped (and then reverted) through ReJIT, whose requests a
    // thread of corprof's makes: said when each is made, so their place among the other lines
    // varies.
    let (rejit, lines): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|l| l.starts_with("wrapped System.") || l.starts_with("reverted System."));
    let mut expected_rejit = Vec::new();
    for how in ["wrapped", "reverted"] {
        let corelib = "[System.Private.CoreLib]System";
        let convert = format!("{how} System.Convert::ToBase64String (target {corelib}.Convert::ToBase64String)");
        let hex = format!("{how} System.BitConverter::ToString (target {corelib}.BitConverter::ToString)");
        expected_rejit.extend(std::iter::repeat_n(convert, 5).chain(std::iter::repeat_n(hex, 3)));
    }
    let mut rejit: Vec<String> = rejit.into_iter().map(String::from).collect();
    rejit.sort();
    expected_rejit.sort();
    assert_eq!(rejit, expected_rejit, "the overloads of precompiled methods on CoreCLR {runtime}:\n{text}");
    let wrapped_by_first = [
        ".ctor", "Nothing", "Add", "Greet", "Nine", "Half", "Third", "Odd", "First", "Big", "Throws", "Fact", "Swap",
        "Id", "Guarded", "Later", "Loop",
    ]
    .map(|m| format!("wrapped InstrumentApp.Target::{m} (target InstrumentApp.Target::_)"));
    let mut expected: Vec<String> = wrapped_by_first.to_vec();
    expected.extend(
        [
            "wrapped InstrumentApp.Target+Inner::.ctor (target InstrumentApp.Target+Inner::_)",
            "wrapped InstrumentApp.Target+Inner::Small (target InstrumentApp.Target+Inner::_)",
            "wrapped InstrumentApp.Point::Sum (target InstrumentApp.Point::_)",
            "wrapped InstrumentApp.Point::Move (target InstrumentApp.Point::_)",
            "wrapped InstrumentApp.Box`1::Get (target [Instrument]InstrumentApp.Box`1::Get)",
            // A method two targets name gets the first one's handler, and the second says so.
            "not wrapped InstrumentApp.Target::Add (target InstrumentApp.Target::Add): target \
             InstrumentApp.Target::_ named it first: a method gets one handler",
            // A pattern: GetA and GetB, not Other.
            "wrapped InstrumentApp.Patterns::GetA (target InstrumentApp.Pat*::Get*)",
            "wrapped InstrumentApp.Patterns::GetB (target InstrumentApp.Pat*::Get*)",
            "wrapped InstrumentApp.Program::Main (target InstrumentApp.Program::Main)",
            "wrapped InstrumentApp.Box`1::.ctor (target InstrumentApp.Box`1::.ctor)",
            // Its handler takes the whole wrapping back: the calls the app makes after that
            // (Add, Fact, ToBase64String once more each) are seen by no handler.
            "wrapped InstrumentApp.Program::RevertNow (target InstrumentApp.Program::RevertNow)",
            "wrapped InstrumentApp.Patterns::Other (target InstrumentApp.Patterns::Other)",
            "unmatched InstrumentApp.Nowhere::Nothing",
            // Patterns::Other, and BitConverter.ToString through two overloads: on 8.0.4
            // without the GC transition (SuppressGCTransition; 3.1 has none).
            never_blocking.as_str(),
            // Generic type and method: one method, each instantiation's calls.
            "InstrumentApp.Box`1::Get calls=2 ends=2 threw=0 unpaired=0 last=Returned(Other) first_args=[Other]",
            "InstrumentApp.Patterns::GetA calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(1)) first_args=[]",
            "InstrumentApp.Patterns::GetB calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(2)) first_args=[]",
            // A value type's `this` (its address: not passed), and an argument.
            "InstrumentApp.Point::Move calls=1 ends=1 threw=0 unpaired=0 last=Returned(Void) first_args=[Other, Int(10)]",
            "InstrumentApp.Point::Sum calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(23)) first_args=[Other]",
            "InstrumentApp.Target+Inner::Small calls=1 ends=1 threw=0 unpaired=0 last=Returned(UInt(42)) first_args=[UInt(41)]",
            "InstrumentApp.Target::.ctor calls=1 ends=1 threw=0 unpaired=0 last=Returned(Void) first_args=[Other]",
            "InstrumentApp.Target::Add calls=2 ends=2 threw=0 unpaired=0 last=Returned(Int(0)) first_args=[Int(3), Int(4)]",
            "InstrumentApp.Target::Big calls=1 ends=1 threw=0 unpaired=0 last=Returned(UInt(18446744073709551615)) first_args=[]",
            // Recursion: every level begins and ends, in order.
            "InstrumentApp.Target::Fact calls=5 ends=5 threw=0 unpaired=0 last=Returned(Int(120)) first_args=[Int(5)]",
            "InstrumentApp.Target::First calls=1 ends=1 threw=0 unpaired=0 last=Returned(Char(120)) first_args=[Other]",
            "InstrumentApp.Target::Greet calls=1 ends=1 threw=0 unpaired=0 last=Returned(Other) first_args=[Other, Other]",
            // Its own try/catch/finally and filter, returns from inside them.
            "InstrumentApp.Target::Guarded calls=3 ends=3 threw=0 unpaired=0 last=Returned(Int(1050)) first_args=[Int(0)]",
            "InstrumentApp.Target::Half calls=1 ends=1 threw=0 unpaired=0 last=Returned(Float(2.5)) first_args=[Float(5.0)]",
            "InstrumentApp.Target::Id calls=3 ends=3 threw=0 unpaired=0 last=Returned(Other) first_args=[Other]",
            // An async method ends when it returns its task.
            "InstrumentApp.Target::Later calls=1 ends=1 threw=0 unpaired=0 last=Returned(Other) first_args=[Int(41)]",
            "InstrumentApp.Target::Loop calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(40)) first_args=[Int(10)]",
            // Nine arguments.
            "InstrumentApp.Target::Nine calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(9036)) first_args=[Int(1), Int(2), Int(3), Int(4), Int(5), Int(6), Int(7), Int(8), Int(9)]",
            "InstrumentApp.Target::Nothing calls=1 ends=1 threw=0 unpaired=0 last=Returned(Void) first_args=[]",
            "InstrumentApp.Target::Odd calls=2 ends=2 threw=0 unpaired=0 last=Returned(Bool(false)) first_args=[Int(3)]",
            // `ref` and `out` arguments.
            "InstrumentApp.Target::Swap calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(4)) first_args=[Other, Other]",
            "InstrumentApp.Target::Third calls=1 ends=1 threw=0 unpaired=0 last=Returned(Float(3.0)) first_args=[Float(9.0)]",
            // The exception is seen, and the caller still catches it.
            "InstrumentApp.Target::Throws calls=2 ends=2 threw=1 unpaired=0 last=Threw first_args=[Int(21)]",
            // Called from the app after its ReJIT was requested: 3 calls, each through three
            // overloads that crossgen did not inline into one another.
            "System.Convert::ToBase64String calls=9 ends=9 threw=0 unpaired=0 last=Returned(Other) first_args=[Other, Int(0), Int(2)]",
        ]
        .map(String::from),
    );
    assert_eq!(lines, expected, "instrument-profiler output on CoreCLR {runtime}");
}

#[test]
fn methods_are_wrapped_with_rust_handlers_on_coreclr_8() {
    let _runtime = runtime_lock();
    wrapped("8", "methods_are_wrapped_with_rust_handlers_on_coreclr_8");
}

#[test]
fn methods_are_wrapped_with_rust_handlers_on_coreclr_3() {
    let _runtime = runtime_lock();
    wrapped("3", "methods_are_wrapped_with_rust_handlers_on_coreclr_3");
}

const TIMER_CLSID: &str = "6E2B8D41-7C35-4A9F-B1D0-5E8A2C4F7B19";

/// examples/method-timer, the guide's example profiler (`#![forbid(unsafe_code)]`, under 100
/// lines): the methods its patterns name are timed, with their calls and exceptions counted; a
/// pattern it cannot read stops it from starting, with the reason, and the app runs unprofiled.
fn method_timer(runtime: &'static str, test: &str) {
    let lib = profiler_lib("method_timer");
    let out = TempFile::new(test);
    let methods = "InstrumentApp.Target::Fact,InstrumentApp.Target::Throw*,InstrumentApp.Pat*::_";
    let run = run_profiled(
        runtime,
        "Instrument",
        TIMER_CLSID,
        &lib,
        &[("METHOD_TIMER_METHODS", methods), ("METHOD_TIMER_OUT", out.path())],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no method-timer output: {}", run.describe()));
    let counted: Vec<String> = text
        .lines()
        .map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            let micros = |key: &str| -> f64 {
                fields.iter().find_map(|f| f.strip_prefix(key)).and_then(|v| v.parse().ok()).unwrap_or(-1.0)
            };
            assert!(micros("total_us=") > 0.0 && micros("max_us=") > 0.0, "{l}");
            fields[..3].join(" ")
        })
        .collect();
    assert_eq!(
        counted,
        [
            "InstrumentApp.Patterns::GetA calls=1 threw=0",
            "InstrumentApp.Patterns::GetB calls=1 threw=0",
            "InstrumentApp.Patterns::Other calls=1 threw=0",
            "InstrumentApp.Target::Fact calls=8 threw=0",
            "InstrumentApp.Target::Throws calls=2 threw=1",
        ],
        "CoreCLR {runtime}:\n{text}"
    );

    // An output that is a FIFO nobody reads: refused at once (a plain write would wait for a
    // reader forever, holding the app's exit).
    let fifo = std::env::temp_dir().join(format!("corprof-{test}-{}.fifo", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()), "mkfifo");
    let fifo_str = fifo.to_str().expect("a UTF-8 path");
    let env = [("METHOD_TIMER_METHODS", methods), ("METHOD_TIMER_OUT", fifo_str)];
    let to_fifo = run_profiled(runtime, "Instrument", TIMER_CLSID, &lib, &env);
    let still_fifo = std::fs::symlink_metadata(&fifo).is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_fifo()
    });
    let _ = std::fs::remove_file(&fifo);
    assert_eq!((to_fifo.code, still_fifo), (Some(0), true), "{}", to_fifo.describe());

    let bad = run_profiled(runtime, "Instrument", TIMER_CLSID, &lib, &[("METHOD_TIMER_METHODS", "Shop.Cart")]);
    assert_eq!(bad.code, Some(0), "{}", bad.describe());
    assert!(
        bad.stderr.contains("method-timer: \"Shop.Cart\" has no `::`: write Namespace.Type::Method"),
        "{}",
        bad.describe()
    );
}

#[test]
fn the_method_timer_example_times_the_methods_it_is_told_coreclr_8() {
    let _runtime = runtime_lock();
    method_timer("8", "the_method_timer_example_times_the_methods_it_is_told_coreclr_8");
}

#[test]
fn the_method_timer_example_times_the_methods_it_is_told_coreclr_3() {
    let _runtime = runtime_lock();
    method_timer("3", "the_method_timer_example_times_the_methods_it_is_told_coreclr_3");
}

/// `Instrumentation::start` called late (in `module_load_finished` of the app's module, after
/// `initialize`): CoreCLR 8.0.4 and 3.1.23 still take `COR_PRF_ENABLE_REJIT` there, so what was
/// loaded before is wrapped through ReJIT — the app's small module — or refused with the reason:
/// CoreLib, whose metadata corprof would grow past the small form the runtime rebuilds under its
/// own unlocked readers (dotnet/runtime#127957). The app runs as written. (Which of the app's
/// first calls come before the ReJIT requests is timing: the calls are not counted here.)
fn started_late(runtime: &'static str, test: &str) {
    let plain = run_app(runtime, "Instrument", &[]);
    let lib = profiler_lib("instrument_profiler");
    let out = TempFile::new(test);
    let run = run_profiled(
        runtime,
        "Instrument",
        INSTRUMENT_CLSID,
        &lib,
        &[("CORPROF_INSTRUMENT_OUT", out.path()), ("INSTRUMENT_LATE", "1")],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, plain.stdout, "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no instrument-profiler output: {}", run.describe()));
    let decisions: Vec<&str> = text.lines().filter(|l| l.contains("wrapped ")).collect();
    let convert = "not wrapped System.Convert::ToBase64String (target \
                   [System.Private.CoreLib]System.Convert::ToBase64String): its module was loaded before start, and \
                   wrapping it there would grow the module's metadata past the small form";
    let add = "wrapped InstrumentApp.Target::Add (target InstrumentApp.Target::Add)";
    assert_eq!(decisions.iter().filter(|l| **l == add).count(), 1, "CoreCLR {runtime}:\n{text}");
    assert_eq!(decisions.iter().filter(|l| l.starts_with(convert)).count(), 5, "CoreCLR {runtime}:\n{text}");
    assert_eq!(decisions.len(), 6, "CoreCLR {runtime}:\n{text}");
}

#[test]
fn started_late_still_wraps_through_rejit_coreclr_8() {
    let _runtime = runtime_lock();
    started_late("8", "started_late_still_wraps_through_rejit_coreclr_8");
}

#[test]
fn started_late_still_wraps_through_rejit_coreclr_3() {
    let _runtime = runtime_lock();
    started_late("3", "started_late_still_wraps_through_rejit_coreclr_3");
}

/// Handlers in C# (tests/apps/InstrumentManaged/handlers, the CallTarget contract) around the
/// InstrumentManaged app's methods: corprof's startup loads its assembly and the handlers', the
/// methods are wrapped through ReJIT once it has, and the handlers see each call's instance,
/// arguments, value or exception and their own state back; a handler that throws changes
/// nothing, a missing OnMethodEnd or OnMethodBegin is said once with the definition's name and
/// the calls run without it, a type the assembly lacks is said and its method refused, paths and
/// names that cannot be used are refused by `wrap_managed`; a precompiled CoreLib method
/// (`Convert.ToBase64String`) is wrapped too; the app prints what it prints unwrapped, but for
/// the one value a handler replaces.
fn managed_handlers(runtime: &'static str, test: &str) {
    let plain = run_app(runtime, "InstrumentManaged", &[]);
    assert_eq!(plain.code, Some(0), "{}", plain.describe());

    let root = repo_root();
    let handlers = root.join("tests/apps/InstrumentManaged/bin/handlers/InstrumentManagedHandlers.dll");
    let invoker = root.join("managed/Corprof.Instrumentation/bin/Corprof.Instrumentation.dll");
    let (handlers, invoker) = (handlers.to_str().expect("a UTF-8 path"), invoker.to_str().expect("a UTF-8 path"));
    let lib = profiler_lib("instrument_profiler");
    let out = TempFile::new(test);
    let ready = TempFile::new(&format!("{test}-ready"));
    let run = run_profiled(
        runtime,
        "InstrumentManaged",
        INSTRUMENT_CLSID,
        &lib,
        &[
            ("CORPROF_INSTRUMENT_OUT", out.path()),
            ("INSTRUMENT_READY", ready.path()),
            ("INSTRUMENT_HANDLERS", handlers),
            ("INSTRUMENT_INVOKER", invoker),
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    // Changed.Answer returns 7; its handler's OnMethodEnd says 42.
    let expected = plain.stdout.replacen("\n7\n5\n", "\n42\n5\n", 1);
    assert_ne!(expected, plain.stdout);
    assert_eq!(run.stdout, expected, "the app's output: {}", run.describe());

    let dir = root.join("tests/apps/InstrumentManaged/bin/handlers");
    let seen: Vec<&str> =
        run.stderr.lines().filter(|l| l.starts_with("handler:") || l.starts_with("corprof: managed")).collect();
    // The ends at a task's completion: on the thread completing it, so their order among the
    // other lines is timing (the app waits until it has all seven).
    let (mut done, seen): (Vec<&str>, Vec<&str>) = seen.into_iter().partition(|l| l.starts_with("handler: async done"));
    done.sort();
    assert_eq!(
        done,
        [
            // A Task<int> after an await: its result; a Task: nothing; a fault: its exception.
            "handler: async done #1 returned 42",
            "handler: async done #2 returned null",
            "handler: async done #3 threw InvalidOperationException: async fault 3",
            // Complete at the return: cancelled, a value.
            "handler: async done #4 threw TaskCanceledException: A task was canceled.",
            "handler: async done #5 returned 5",
            // No task (null): at once, the default; a throw before any task: at once, with it.
            "handler: async done #6 returned 0",
            "handler: async done #7 threw ArgumentException: before a task",
            // ValueTasks (8.0.4 only): holding a task, complete when made.
            "handler: async done #8 returned 40",
            "handler: async done #9 returned 6",
        ]
        .into_iter()
        .filter(|l| runtime == "8" || !l.contains(" #8 ") && !l.contains(" #9 "))
        .collect::<Vec<_>>(),
        "{}",
        run.describe()
    );
    let nowhere = format!(
        "corprof: managed handler Handlers.Nowhere (definition InstrumentManagedApp.Gone::Run) is no non-generic \
         class of {handlers}; its methods are not wrapped"
    );
    assert_eq!(
        seen,
        [
            nowhere.as_str(),
            // Static, two arguments (by reference), a value.
            "handler: begin #1 this=null args=[3, 4]",
            "handler: end #1 returned 7",
            "handler: begin #2 this=null args=[]",
            "handler: end #2 returned void",
            // An instance method: `this`.
            "handler: begin #3 this=Target(5) args=[3]",
            "handler: end #3 returned 15",
            // A struct's `this`, copied.
            "handler: begin #4 this=(2,3) args=[]",
            "handler: end #4 returned 5",
            "handler: begin #5 this=null args=[you]",
            "handler: end #5 returned hello you",
            // Six arguments, to an OnMethodBegin taking them by value.
            "handler: begin #6 this=null args=[1, 2, 3, 4, 5.5, six]",
            "handler: end #6 returned 18",
            // `ref` arguments.
            "handler: begin #7 this=null args=[1, 2]",
            "handler: end #7 returned void",
            // The exception is seen, and the caller still catches it.
            "handler: begin #8 this=null args=[9]",
            "handler: end #8 threw InvalidOperationException: thrown 9",
            // A generic type, each instantiation.
            "handler: begin #9 this=InstrumentManagedApp.Box`1[System.Int32] args=[]",
            "handler: end #9 returned 11",
            "handler: begin #10 this=InstrumentManagedApp.Box`1[System.String] args=[]",
            "handler: end #10 returned boxed",
            // Thrown in both, said once each; the call's value reaches the app.
            "corprof: managed handler Handlers.Throwing (definition InstrumentManagedApp.Faulty::Add) threw in \
             OnMethodBegin: System.InvalidOperationException; the calls go on as written",
            "corprof: managed handler Handlers.Throwing (definition InstrumentManagedApp.Faulty::Add) threw in \
             OnMethodEnd: System.InvalidOperationException; the calls go on as written",
            // No OnMethodEnd: said once, over two calls.
            "handler: begin only 21",
            "corprof: managed handler Handlers.BeginOnly (definition InstrumentManagedApp.Partial::Twice) has no \
             usable OnMethodEnd(InstrumentManagedApp.Partial, System.Int32, System.Exception, \
             Corprof.Instrumentation.CallTargetState) -> Corprof.Instrumentation.CallTargetReturn<System.Int32>; the \
             calls run without it",
            "handler: begin only 4",
            "corprof: managed handler Handlers.Replacer (definition InstrumentManagedApp.Changed::Answer) has no \
             usable OnMethodBegin(InstrumentManagedApp.Changed); the calls run without it",
            // Task-returning methods: OnMethodEnd at the return (the task as it is), then
            // OnAsyncMethodEnd (above) once the task completes.
            "handler: async begin #1 21",
            "handler: async end #1 at the return: a task",
            "handler: async begin #2",
            "handler: async end #2 at the return: a task",
            "handler: async begin #3 3",
            "handler: async end #3 at the return: a task",
            "handler: async begin #4",
            "handler: async end #4 at the return: a task",
            "handler: async begin #5",
            "handler: async end #5 at the return: a task",
            "handler: async begin #6",
            "handler: async end #6 at the return: null",
            "handler: async begin #7",
            "handler: async end #7 at the return: threw",
            // OnAsyncMethodEnd alone, throwing: said once, the app's task as it was.
            "corprof: managed handler Handlers.AsyncThrowing (definition InstrumentManagedApp.AsyncFaulty::Now) has \
             no usable OnMethodBegin(InstrumentManagedApp.AsyncFaulty); the calls run without it",
            "corprof: managed handler Handlers.AsyncThrowing (definition InstrumentManagedApp.AsyncFaulty::Now) has \
             no usable OnMethodEnd(InstrumentManagedApp.AsyncFaulty, System.Threading.Tasks.Task<System.Int32>, \
             System.Exception, Corprof.Instrumentation.CallTargetState) -> \
             Corprof.Instrumentation.CallTargetReturn<System.Threading.Tasks.Task<System.Int32>>; the calls run \
             without it",
            "corprof: managed handler Handlers.AsyncThrowing (definition InstrumentManagedApp.AsyncFaulty::Now) threw \
             in OnAsyncMethodEnd: System.InvalidOperationException; the calls go on as written",
            // ValueTasks (8.0.4 only; OnMethodEnd sees the value at the return).
            "handler: async begin #8 20",
            "handler: async end #8 at the return: a task",
            "handler: async begin #9",
            "handler: async end #9 at the return: a task",
            // A precompiled method of CoreLib, wrapped through ReJIT.
            "handler: begin #11 this=null args=[System.Byte[]]",
            "handler: end #11 returned AQID",
        ]
        .into_iter()
        .filter(|l| runtime == "8"
            || !l.starts_with("handler: async begin #8")
                && !l.starts_with("handler: async end #8")
                && !l.starts_with("handler: async begin #9")
                && !l.starts_with("handler: async end #9"))
        .collect::<Vec<_>>(),
        "{}",
        run.describe()
    );

    let text = out.read().unwrap_or_else(|| panic!("no instrument-profiler output: {}", run.describe()));
    let (errors, rest): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.starts_with("error: "));
    assert_eq!(
        errors,
        [
            format!(
                "error: {}: cannot be found: No such file or directory (os error 2)",
                dir.join("Missing.dll").display()
            ),
            format!("error: {}: is not a regular file", dir.display()),
            "error: \"Handlers.Recorder, Other\" is no type name: write Namespace.Type or Namespace.Outer+Inner".into(),
        ],
        "CoreCLR {runtime}"
    );
    let mut decisions: Vec<&str> = rest.into_iter().filter(|l| l.contains("wrapped ")).collect();
    decisions.sort();
    let mut expected: Vec<String> = ["Add", "Greet", "Nothing", "Scale", "Six", "Swap", "Throws", "ToString"]
        .map(|m| format!("wrapped InstrumentManagedApp.Target::{m} (target InstrumentManagedApp.Target::_)"))
        .to_vec();
    for (ty, m) in [
        ("Point", "Sum"),
        ("Box`1", "Get"),
        ("Faulty", "Add"),
        ("Partial", "Twice"),
        ("Changed", "Answer"),
        ("AsyncFaulty", "Now"),
    ] {
        expected.push(format!("wrapped InstrumentManagedApp.{ty}::{m} (target InstrumentManagedApp.{ty}::{m})"));
    }
    for m in ["Later", "Plain", "Fails", "Cancelled", "Done", "Nothing", "Throws"] {
        expected.push(format!("wrapped InstrumentManagedApp.Async::{m} (target InstrumentManagedApp.Async::_)"));
    }
    for m in ["Later", "Now"] {
        expected
            .push(format!("wrapped InstrumentManagedApp.AsyncValue::{m} (target InstrumentManagedApp.AsyncValue::_)"));
    }
    expected.push(
        "not wrapped InstrumentManagedApp.Target::.ctor (target InstrumentManagedApp.Target::_): a constructor is \
         not wrapped for a managed handler (OnMethodBegin would see an object not constructed yet)"
            .into(),
    );
    expected.push(format!(
        "not wrapped InstrumentManagedApp.Gone::Run (target InstrumentManagedApp.Gone::Run): its managed handler \
         Handlers.Nowhere was not loaded from {handlers} (see stderr)"
    ));
    // CoreLib's overloads: four, and the one taking a span refused.
    let convert = "System.Convert::ToBase64String (target System.Convert::ToBase64String)";
    expected.extend(std::iter::repeat_n(format!("wrapped {convert}"), 4));
    expected.push(format!(
        "not wrapped {convert}: its argument 1: System.ReadOnlySpan`1 is a ref struct, which cannot be a generic \
         argument"
    ));
    expected.sort();
    assert_eq!(decisions, expected, "CoreCLR {runtime}:\n{text}");
}

#[test]
fn methods_are_wrapped_with_csharp_handlers_coreclr_8() {
    let _runtime = runtime_lock();
    managed_handlers("8", "methods_are_wrapped_with_csharp_handlers_coreclr_8");
}

#[test]
fn methods_are_wrapped_with_csharp_handlers_coreclr_3() {
    let _runtime = runtime_lock();
    managed_handlers("3", "methods_are_wrapped_with_csharp_handlers_coreclr_3");
}

/// A Rust handler that ends at its tasks' completion (`Handler::ends_when_task_completes`)
/// around the InstrumentAsync app's methods: each task-returning method ends when its task
/// completes — after an `await Task.Delay` or `Task.Yield`, with its `Task<int>`/`Task<double>`
/// result, or faulted or cancelled (`Threw`); at once when it completed at once, threw before
/// returning a task, or returned none; when the app completes it, for a task still pending at the
/// return; and when it completes with the caller blocked under a SynchronizationContext that runs
/// nothing — with the state `begin` handed out, and the app's output as unwrapped. Without
/// `managed_invoker`, those methods are refused with the reason and the others wrapped.
fn task_ends(runtime: &'static str, test: &str) {
    let plain = run_app(runtime, "InstrumentAsync", &[]);
    assert_eq!(plain.code, Some(0), "{}", plain.describe());

    let invoker = repo_root().join("managed/Corprof.Instrumentation/bin/Corprof.Instrumentation.dll");
    let invoker = invoker.to_str().expect("a UTF-8 path");
    let lib = profiler_lib("instrument_profiler");
    let out = TempFile::new(test);
    let ready = TempFile::new(&format!("{test}-ready"));
    let run = run_profiled(
        runtime,
        "InstrumentAsync",
        INSTRUMENT_CLSID,
        &lib,
        &[
            ("CORPROF_INSTRUMENT_OUT", out.path()),
            ("INSTRUMENT_READY", ready.path()),
            ("INSTRUMENT_TASKS", "1"),
            ("INSTRUMENT_INVOKER", invoker),
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, plain.stdout, "the app's output, wrapped and not: {}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no instrument-profiler output: {}", run.describe()));
    let (elsewhere, lines): (Vec<&str>, Vec<&str>) =
        text.lines().filter(|l| !l.starts_with("never blocking")).partition(|l| l.starts_with("ended on another"));
    let (decisions, seen): (Vec<&str>, Vec<&str>) = lines.into_iter().partition(|l| l.contains("wrapped "));
    // `end` runs on the thread that completes the task: the thread pool's for a task completing
    // after an await while the caller blocks (AfterDelay, Elsewhere); the caller's for one
    // complete at the return, or completed by the caller itself (Later). Where the others end
    // depends on which pool thread resumes them.
    let elsewhere: Vec<&str> =
        elsewhere.iter().filter_map(|l| l.strip_prefix("ended on another thread: InstrumentAsyncApp.Work::")).collect();
    for m in ["AfterDelay", "Elsewhere"] {
        assert!(elsewhere.contains(&m), "{m} on CoreCLR {runtime}:\n{text}");
    }
    for m in ["AtOnce", "Cancelled", "Later", "NoTask", "Plain", "ThrowsFirst", "ValueNow", "ValueSource"] {
        assert!(!elsewhere.contains(&m), "{m} on CoreCLR {runtime}:\n{text}");
    }
    let methods = [
        "AfterDelay",
        "AfterYield",
        "AtOnce",
        "Cancelled",
        "Elsewhere",
        "Faults",
        "Half",
        "Later",
        "NoTask",
        "Plain",
        "Text",
        "ThrowsFirst",
        "ValueFaults",
        "ValueLater",
        "ValueNow",
        "ValueSource",
        "ValueYield",
    ];
    let mut decisions = decisions;
    decisions.sort();
    let expected: Vec<String> = methods
        .iter()
        .map(|m| format!("wrapped InstrumentAsyncApp.Work::{m} (target InstrumentAsyncApp.Work::_)"))
        .collect();
    assert_eq!(decisions, expected, "CoreCLR {runtime}:\n{text}");
    let ends = |m: &str, threw: u32, last: &str| {
        format!("InstrumentAsyncApp.Work::{m} calls=1 ends=1 threw={threw} unpaired=0 last={last} first_args=-")
    };
    // ValueTasks on .NET 5+ only: the app, built against mscorlib, cannot name them on 3.1.
    let seen: Vec<&str> =
        seen.into_iter().filter(|l| runtime == "8" || !l.starts_with("InstrumentAsyncApp.Work::Value")).collect();
    let mut expected_seen = vec![
        // After `await Task.Delay`: the result, known at the task's completion only.
        ends("AfterDelay", 0, "Returned(Int(42))"),
        // After `await Task.Yield`, a `Task`.
        ends("AfterYield", 0, "Returned(Void)"),
        // Completed at once (no await).
        ends("AtOnce", 0, "Returned(Int(42))"),
        // Cancelled: as the awaiting caller sees it, an exception.
        ends("Cancelled", 1, "Threw"),
        // Completed on another thread while the caller blocked under a context that runs
        // nothing.
        ends("Elsewhere", 0, "Returned(Int(42))"),
        // Faulted after an await (at the return it was a task like any other).
        ends("Faults", 1, "Threw"),
        ends("Half", 0, "Returned(Float(2.5))"),
        // Pending at the return, completed by the app afterwards.
        ends("Later", 0, "Returned(Int(5))"),
        // No task returned: ends at once.
        ends("NoTask", 0, "Returned(Other)"),
        // Not a task: ends at the return, as without the opt-in.
        ends("Plain", 0, "Returned(Int(2))"),
        ends("Text", 0, "Returned(Other)"),
        // Threw before returning a task: ends at once.
        ends("ThrowsFirst", 1, "Threw"),
    ];
    if runtime == "8" {
        expected_seen.extend([
            // A ValueTask<int> holding a faulting task, one holding a task that completes
            // later, one complete when made (its result).
            ends("ValueFaults", 1, "Threw"),
            ends("ValueLater", 0, "Returned(Int(42))"),
            ends("ValueNow", 0, "Returned(Int(42))"),
            // Holding an IValueTaskSource, which takes one continuation (the app's, which it
            // still gets: the app's output says so): ends at its return.
            ends("ValueSource", 0, "Returned(Other)"),
            // A ValueTask holding a task.
            ends("ValueYield", 0, "Returned(Void)"),
        ]);
    }
    assert_eq!(seen, expected_seen, "CoreCLR {runtime}:\n{text}");

    // Without corprof's managed assembly: the task-returning methods are refused, with the
    // reason; the others wrapped; the app unchanged.
    let out = TempFile::new(&format!("{test}-no-invoker"));
    let ready = TempFile::new(&format!("{test}-no-invoker-ready"));
    let run = run_profiled(
        runtime,
        "InstrumentAsync",
        INSTRUMENT_CLSID,
        &lib,
        &[("CORPROF_INSTRUMENT_OUT", out.path()), ("INSTRUMENT_READY", ready.path()), ("INSTRUMENT_TASKS", "1")],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, plain.stdout, "the app's output, wrapped and not: {}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no instrument-profiler output: {}", run.describe()));
    let mut decisions: Vec<&str> = text.lines().filter(|l| l.contains("wrapped ")).collect();
    decisions.sort();
    let mut expected: Vec<String> = methods
        .iter()
        .map(|m| match *m {
            "Plain" => format!("wrapped InstrumentAsyncApp.Work::{m} (target InstrumentAsyncApp.Work::_)"),
            _ => format!(
                "not wrapped InstrumentAsyncApp.Work::{m} (target InstrumentAsyncApp.Work::_): it returns a task, and \
                 its handler ends at the task's completion: that takes corprof's managed assembly: call \
                 managed_invoker with Corprof.Instrumentation.dll's path"
            ),
        })
        .collect();
    expected.sort();
    assert_eq!(decisions, expected, "CoreCLR {runtime}:\n{text}");
    assert!(
        text.lines().any(|l| l
            == "InstrumentAsyncApp.Work::Plain calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(2)) first_args=-"),
        "CoreCLR {runtime}:\n{text}"
    );
}

#[test]
fn task_returning_methods_end_when_their_tasks_complete_coreclr_8() {
    let _runtime = runtime_lock();
    task_ends("8", "task_returning_methods_end_when_their_tasks_complete_coreclr_8");
}

#[test]
fn task_returning_methods_end_when_their_tasks_complete_coreclr_3() {
    let _runtime = runtime_lock();
    task_ends("3", "task_returning_methods_end_when_their_tasks_complete_coreclr_3");
}

/// Methods whose signatures a wrapper can get wrong (InstrumentHostile: a pointer, a
/// TypedReference, a byref return, twelve arguments of every primitive, a struct by value, a
/// throw), wrapped through ReJIT after they ran, in the app and in its copy in a collectible
/// context: the app's output is unchanged; the app's own methods are wrapped and seen with their
/// arguments and values (what is not a primitive as `Other`); the copy's are refused with the
/// reason — the runtime takes a ReJIT of collectible code and does nothing with it — and asking
/// for its inliners, which crashed CoreCLR 3.1.23 (exit 139), is never done before .NET 8. The
/// copy is unloaded with the instrumentation running.
fn hostile_methods(runtime: &'static str, test: &str) {
    let plain = run_app(runtime, "InstrumentHostile", &[]);
    assert_eq!(plain.code, Some(0), "{}", plain.describe());
    let lib = profiler_lib("instrument_profiler");
    let out = TempFile::new(test);
    let ready = TempFile::new(&format!("{test}-ready"));
    let run = run_profiled(
        runtime,
        "InstrumentHostile",
        INSTRUMENT_CLSID,
        &lib,
        &[("CORPROF_INSTRUMENT_OUT", out.path()), ("INSTRUMENT_HOSTILE", "1"), ("INSTRUMENT_READY", ready.path())],
    );
    assert_eq!((run.code, &run.stdout), (Some(0), &plain.stdout), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no instrument-profiler output: {}", run.describe()));
    let methods = ["Deref", "Typed", "Field", "Twelve", "Make", "Thrower", ".cctor"];
    for m in methods {
        let wrapped = format!("wrapped InstrumentHostile.Hostile::{m} (target InstrumentHostile.Hostile::_)");
        let refused = format!(
            "not wrapped InstrumentHostile.Hostile::{m} (target InstrumentHostile.Hostile::_): its module is in a \
             collectible context, whose code the runtime does not ReJIT"
        );
        // One of each: the app's module, then its collectible copy.
        assert_eq!(text.lines().filter(|l| *l == wrapped).count(), 1, "{m} on CoreCLR {runtime}:\n{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with(&refused)).count(), 1, "{m} on CoreCLR {runtime}:\n{text}");
    }
    let seen: Vec<&str> = text.lines().filter(|l| l.starts_with("InstrumentHostile.Hostile::")).collect();
    assert_eq!(
        seen,
        [
            "InstrumentHostile.Hostile::Deref calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(42)) first_args=[Other]",
            "InstrumentHostile.Hostile::Field calls=2 ends=2 threw=0 unpaired=0 last=Returned(Other) first_args=[]",
            "InstrumentHostile.Hostile::Make calls=1 ends=1 threw=0 unpaired=0 last=Returned(Other) first_args=[Int(5)]",
            "InstrumentHostile.Hostile::Thrower calls=1 ends=1 threw=1 unpaired=0 last=Threw first_args=[Int(3)]",
            "InstrumentHostile.Hostile::Twelve calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(139)) first_args=[Int(1), \
             Int(2), Int(3), UInt(4), Float(5.5), Float(6.5), Char(97), Bool(true), UInt(9), UInt(10), Int(-11), UInt(12)]",
            "InstrumentHostile.Hostile::Typed calls=1 ends=1 threw=0 unpaired=0 last=Returned(Int(42)) first_args=[Other]",
        ],
        "CoreCLR {runtime}:\n{text}"
    );
    assert!(!text.contains("rejit error"), "CoreCLR {runtime}:\n{text}");
}

#[test]
fn hostile_methods_are_wrapped_or_refused_coreclr_8() {
    let _runtime = runtime_lock();
    hostile_methods("8", "hostile_methods_are_wrapped_or_refused_coreclr_8");
}

#[test]
fn hostile_methods_are_wrapped_or_refused_coreclr_3() {
    let _runtime = runtime_lock();
    hostile_methods("3", "hostile_methods_are_wrapped_or_refused_coreclr_3");
}

/// The wrapping taken back from the Shutdown callback (the worker's RequestRevert meets a runtime
/// that is ending): every method wrapped through ReJIT is reverted, the request is made before
/// the callback returns, and the app exits as it does unwrapped.
fn revert_during_shutdown(runtime: &'static str, test: &str) {
    let plain = run_app(runtime, "Instrument", &[]);
    let lib = profiler_lib("instrument_profiler");
    let out = TempFile::new(test);
    let run = run_profiled(
        runtime,
        "Instrument",
        INSTRUMENT_CLSID,
        &lib,
        &[("CORPROF_INSTRUMENT_OUT", out.path()), ("INSTRUMENT_LATE", "1"), ("INSTRUMENT_REVERT_AT_SHUTDOWN", "1")],
    );
    assert_eq!((run.code, &run.stdout), (Some(0), &plain.stdout), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no instrument-profiler output: {}", run.describe()));
    let wrapped = text.lines().filter(|l| l.starts_with("wrapped ")).count();
    let reverted = text.lines().filter(|l| l.starts_with("reverted ")).count();
    // The app's Target::Add (CoreLib's ToBase64String is refused when started late).
    assert!(wrapped == 1 && reverted == wrapped, "CoreCLR {runtime}:\n{text}");
    assert!(text.contains("pending after the revert at shutdown: 0\n"), "CoreCLR {runtime}:\n{text}");
}

#[test]
fn revert_during_shutdown_coreclr_8() {
    let _runtime = runtime_lock();
    revert_during_shutdown("8", "revert_during_shutdown_coreclr_8");
}

#[test]
fn revert_during_shutdown_coreclr_3() {
    let _runtime = runtime_lock();
    revert_during_shutdown("3", "revert_during_shutdown_coreclr_3");
}
