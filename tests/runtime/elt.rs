//! examples/elt-tracer in real runtimes (CoreCLR 8.0.4 and 3.1.23), fast and with-info hooks:
//! exact enter/leave/tailcall/unwind counts for the Elt app's methods (recursion, exceptions
//! through three frames, four threads, generic methods, a static constructor), every hooked
//! method balanced, the app's output byte-identical to a run without the profiler, the mapper's
//! filter, exact `ARGS` lines, a panic in each hook kind caught with the app intact, and hooks
//! that trash every volatile register (tests/elt-clobber) invisible to the app.

use crate::common::*;
use std::collections::BTreeMap;

const ELT_CLSID: &str = "D1E5A2C7-6B3F-4E81-9C0D-7A2B4E6F8135";

/// The Elt app's output, with or without the profiler.
const APP_OUTPUT: &str = "\
fib 610
codes 200 finallies 5
threads 14995000
echo 6 ab
box 5 s
seed 50
counter 28
area 12.566370614359172 half 1.5
pair 34 scaled 4.5 -5.75
mixed 21 2.5 many 469
across 498.47455592153875
prims 40000000013 3.5 True -12
wide 1496
Elt done
";

/// `<method> <enters> <leaves> <tailcalls> <unwinds>` for every method of the app. C# gives no
/// tail calls (mcs emits no `tail.` prefix and the JIT turns none of these calls into one); the
/// runtime's own methods have some, checked separately. Level1–3 are left by the exception
/// (unwinds), Catch catches it and returns normally.
const EXPECTED_COUNTS: &str = "\
EltApp.AppError::.ctor 5 5 0 0
EltApp.Box`1::.ctor 2 2 0 0
EltApp.Box`1::Get 2 2 0 0
EltApp.Config::.cctor 1 1 0 0
EltApp.Config::Compute 1 1 0 0
EltApp.Counter::.ctor 1 1 0 0
EltApp.Counter::Add 3 3 0 0
EltApp.Errors::Catch 5 5 0 0
EltApp.Errors::Level1 5 0 0 5
EltApp.Errors::Level2 5 0 0 5
EltApp.Errors::Level3 5 0 0 5
EltApp.Generic::Echo 5 5 0 0
EltApp.Pair::Sum 2 2 0 0
EltApp.Prims::Mix 2 2 0 0
EltApp.Prims::Not 1 1 0 0
EltApp.Prims::Ratio 1 1 0 0
EltApp.Prims::Sink 1 1 0 0
EltApp.Prims::Wide 1 1 0 0
EltApp.Program::Main 1 1 0 0
EltApp.Recursion::Fib 1973 1973 0 0
EltApp.Shapes::Area 1 1 0 0
EltApp.Shapes::Combine 1 1 0 0
EltApp.Shapes::Half 1 1 0 0
EltApp.Shapes::MakePair 1 1 0 0
EltApp.Shapes::Many 1 1 0 0
EltApp.Shapes::Scale 1 1 0 0
EltApp.Workers::Body 4 4 0 0
EltApp.Workers::Run 1 1 0 0
EltApp.Workers::Step 4000 4000 0 0
";

/// The app's `ARGS` lines in info mode: the first call of every method whose parameters and
/// return are primitive (Level1–3 never return, so they have none; generic and struct-taking
/// methods are not primitive). Wide's sixteen ranges overflow the first buffer corprof offers.
const EXPECTED_ARGS: &str = "\
ARGS EltApp.AppError::.ctor(20) = void
ARGS EltApp.Config::.cctor() = void
ARGS EltApp.Config::Compute(7) = 50
ARGS EltApp.Counter::.ctor(10) = void
ARGS EltApp.Counter::Add(5) = 15
ARGS EltApp.Errors::Catch(0) = 20
ARGS EltApp.Pair::Sum() = 34
ARGS EltApp.Prims::Mix(3, 40000000000, 2.5, true) = 40000000009
ARGS EltApp.Prims::Not(false) = true
ARGS EltApp.Prims::Ratio(7, 0.5) = 3.5
ARGS EltApp.Prims::Sink(-12) = void
ARGS EltApp.Prims::Wide(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16) = 1496
ARGS EltApp.Recursion::Fib(15) = 610
ARGS EltApp.Shapes::Area(2) = 12.566370614359172
ARGS EltApp.Shapes::Half(3) = 1.5
ARGS EltApp.Shapes::Many(1, 2, 3, 4, 5, 6, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5) = 469
ARGS EltApp.Workers::Run() = 14995000
ARGS EltApp.Workers::Step(0) = 1
";

/// One traced run: the app's result and the tracer's report.
struct Traced {
    run: Run,
    /// method → [enters, leaves, tailcalls, unwinds]
    counts: BTreeMap<String, [u64; 4]>,
    args: Vec<String>,
}

fn trace(runtime: &'static str, test: &str, env: &[(&'static str, &str)]) -> Traced {
    let lib = profiler_lib("elt_tracer");
    let out = TempFile::new(test);
    let mut env = env.to_vec();
    env.push(("CORPROF_ELT_OUT", out.path()));
    let run = run_profiled(runtime, "Elt", ELT_CLSID, &lib, &env);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout, APP_OUTPUT, "the app's output changed under the profiler: {}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no report written: {}", run.describe()));
    let mut counts = BTreeMap::new();
    let mut args = Vec::new();
    for line in text.lines() {
        if line.starts_with("ARGS ") {
            args.push(line.to_string());
            continue;
        }
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 5, "malformed line {line:?} in\n{text}");
        let n = |i: usize| fields[i].parse::<u64>().unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let c = [n(1), n(2), n(3), n(4)];
        assert!(counts.insert(fields[0].to_string(), c).is_none(), "{} listed twice in\n{text}", fields[0]);
    }
    Traced { run, counts, args }
}

impl Traced {
    fn app_counts(&self) -> String {
        self.counts
            .iter()
            .filter(|(m, _)| m.starts_with("EltApp."))
            .map(|(m, [e, l, t, u])| format!("{m} {e} {l} {t} {u}\n"))
            .collect()
    }

    fn app_args(&self) -> String {
        self.args.iter().filter(|l| l.starts_with("ARGS EltApp.")).map(|l| format!("{l}\n")).collect()
    }

    /// Every hooked method that was entered left exactly as often, one way or another — the
    /// runtime's own methods included.
    fn assert_balanced(&self) {
        for (method, [enters, leaves, tailcalls, unwinds]) in &self.counts {
            assert_eq!(
                leaves + tailcalls + unwinds,
                *enters,
                "{method}: {enters} enters, {leaves} leaves + {tailcalls} tailcalls + {unwinds} unwinds"
            );
        }
        // The runtime's own code has tail calls (the app's C# has none): the hook fires and its
        // calls balance like the others.
        let tailcalled = self.counts.values().filter(|c| c[2] > 0).count();
        assert!(tailcalled > 0, "no tail call seen at all: {}", self.run.describe());
    }
}

fn counts_and_output(runtime: &'static str, test: &str, mode: &str) {
    let (scenario, what) = match mode {
        "fast" => (
            "elt-fast",
            "fast enter/leave/tailcall hooks (naked register-preserving stubs): exact counts for recursion, exceptions through frames, 4 threads, generics, static constructors; the app's output unchanged",
        ),
        _ => (
            "elt-info",
            "with-info hooks: the same exact counts, and ARGS lines (int, long, double, bool) decoded from the argument and return-value ranges",
        ),
    };
    let _row = ConformanceRow::new(scenario, runtime, what);
    let plain = run_app(runtime, "Elt", &[]);
    assert_eq!(plain.code, Some(0), "{}", plain.describe());
    assert_eq!(plain.stdout, APP_OUTPUT, "the app without a profiler: {}", plain.describe());
    let traced = trace(runtime, test, &[("CORPROF_ELT_MODE", mode)]);
    assert_eq!(traced.run.stderr, plain.stderr, "stderr differs: {}", traced.run.describe());
    assert_eq!(traced.app_counts(), EXPECTED_COUNTS, "counts: {}", traced.run.describe());
    traced.assert_balanced();
    let expected_args = if mode == "info" { EXPECTED_ARGS } else { "" };
    assert_eq!(traced.app_args(), expected_args, "ARGS lines in {mode} mode");
    if mode == "fast" {
        assert!(traced.args.is_empty(), "fast mode reads no arguments: {:?}", traced.args);
    }
}

#[test]
fn fast_hooks_count_exactly_on_coreclr_8() {
    let _runtime = runtime_lock();
    counts_and_output("8", "fast_8", "fast");
}

#[test]
fn fast_hooks_count_exactly_on_coreclr_3() {
    let _runtime = runtime_lock();
    counts_and_output("3", "fast_3", "fast");
}

#[test]
fn info_hooks_count_and_read_arguments_on_coreclr_8() {
    let _runtime = runtime_lock();
    counts_and_output("8", "info_8", "info");
}

#[test]
fn info_hooks_count_and_read_arguments_on_coreclr_3() {
    let _runtime = runtime_lock();
    counts_and_output("3", "info_3", "info");
}

fn filtered(runtime: &'static str, test: &str, mode: &str) {
    let traced = trace(runtime, test, &[("CORPROF_ELT_MODE", mode), ("CORPROF_ELT_FILTER", "EltApp.Prims")]);
    let all: String = traced.counts.iter().map(|(m, [e, l, t, u])| format!("{m} {e} {l} {t} {u}\n")).collect();
    let expected: String =
        EXPECTED_COUNTS.lines().filter(|l| l.starts_with("EltApp.Prims::")).map(|l| format!("{l}\n")).collect();
    assert_eq!(all, expected, "only the filtered methods are hooked: {}", traced.run.describe());
    let args: String = traced.args.iter().map(|l| format!("{l}\n")).collect();
    let expected_args: String = match mode {
        "info" => {
            EXPECTED_ARGS.lines().filter(|l| l.starts_with("ARGS EltApp.Prims::")).map(|l| format!("{l}\n")).collect()
        }
        _ => String::new(),
    };
    assert_eq!(args, expected_args);
}

#[test]
fn the_mapper_hooks_only_filtered_methods_on_coreclr_8() {
    let _runtime = runtime_lock();
    filtered("8", "filter_8_fast", "fast");
    filtered("8", "filter_8_info", "info");
}

#[test]
fn the_mapper_hooks_only_filtered_methods_on_coreclr_3() {
    let _runtime = runtime_lock();
    filtered("3", "filter_3_fast", "fast");
    filtered("3", "filter_3_info", "info");
}

/// The line corprof writes for the first panic in hook `name`.
fn hook_panic_line(name: &str) -> String {
    let then = if name == "mapper" {
        "the function is not hooked; later panics here are not logged"
    } else {
        "the call proceeds; later panics in this hook are not logged"
    };
    format!("corprof: hook {name} panicked: elt-tracer: {name} panics as asked; {then}")
}

/// A hook that panics on every call (after counting) leaves the app's output and the counts
/// intact, and is reported once.
fn panics(runtime: &'static str, mode: &str) {
    for hook in ["enter", "leave", "tailcall", "mapper"] {
        let test = format!("panic_{runtime}_{mode}_{hook}");
        let traced = trace(runtime, &test, &[("CORPROF_ELT_MODE", mode), ("CORPROF_ELT_PANIC", hook)]);
        let reports = traced.run.stderr_lines("corprof: ");
        assert_eq!(reports, [hook_panic_line(hook)], "one report for {hook}: {}", traced.run.describe());
        if hook == "mapper" {
            assert!(traced.counts.is_empty(), "a panicking mapper hooks nothing: {:?}", traced.counts);
        } else {
            assert_eq!(traced.app_counts(), EXPECTED_COUNTS, "counts with {hook} panicking");
            traced.assert_balanced();
        }
    }
}

#[test]
fn panics_in_hooks_are_caught_on_coreclr_8() {
    let _runtime = runtime_lock();
    panics("8", "fast");
    panics("8", "info");
}

#[test]
fn panics_in_hooks_are_caught_on_coreclr_3() {
    let _runtime = runtime_lock();
    panics("3", "fast");
    panics("3", "info");
}

const CLOBBER_CLSID: &str = "6A0E2F4B-8C1D-4B7E-A3F5-9D2C7E1B4A68";

/// tests/elt-clobber's hooks overwrite every volatile general and vector register (and, in info
/// mode, ask the runtime for arguments and return values): the stubs must hide all of it from
/// the app, whose output — floating-point and struct results included — stays the same. The
/// hooks did run: Fib's 1973 calls each entered and left, among the other methods' calls.
fn clobbered(runtime: &'static str) {
    let lib = profiler_lib("elt_clobber");
    for mode in ["fast", "info"] {
        let out = TempFile::new(&format!("elt-clobber-{runtime}-{mode}"));
        let env = [("CORPROF_ELT_MODE", mode), ("CORPROF_CLOBBER_OUT", out.path())];
        let run = run_profiled(runtime, "Elt", CLOBBER_CLSID, &lib, &env);
        assert_eq!(run.code, Some(0), "{mode}: {}", run.describe());
        assert_eq!(run.stdout, APP_OUTPUT, "{mode}: registers leaked into the app: {}", run.describe());
        assert_eq!(run.stderr, "", "{mode}: {}", run.describe());
        let report = out.read().unwrap_or_else(|| panic!("{mode}: no counts written: {}", run.describe()));
        let n: Vec<u64> = report.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        let [enters, leaves, fib_enters, fib_leaves] = n[..] else { panic!("{mode}: malformed counts {report:?}") };
        assert_eq!((fib_enters, fib_leaves), (1973, 1973), "{mode}: Fib's hooks: {report}");
        assert!(enters > fib_enters && leaves > fib_leaves, "{mode}: the other methods' hooks: {report}");
    }
}

#[test]
fn hooks_that_trash_every_register_leave_the_app_intact_on_coreclr_8() {
    let _runtime = runtime_lock();
    clobbered("8");
}

#[test]
fn hooks_that_trash_every_register_leave_the_app_intact_on_coreclr_3() {
    let _runtime = runtime_lock();
    clobbered("3");
}
