//! The conformance suite: the runtime team's profiler test scenarios (dotnet/runtime
//! `src/tests/profiler/`), re-expressed with corprof. Each scenario is a folder
//! `tests/conformance/<scenario>/` holding its C# app and its module of the conformance profiler
//! (one library, `tests/conformance/lib.rs`, the scenario chosen by `CORPROF_CONF_SCENARIO`); a
//! run passes when the app exits 100 and the profiler's fact lines are exactly the expected ones.
//!
//! Every test records its outcome in `target/conformance/<scenario>.<runtime>` (a
//! `ConformanceRow`, as other tests do for their scenarios); `scripts/conformance-report` turns
//! those records into CONFORMANCE.md.

use crate::common::conformance::*;
use crate::common::*;

const GC: Scenario = Scenario { name: "gc", app: "ConfGc" };
const THREADS: Scenario = Scenario { name: "threads", app: "ConfThreads" };
const LOADING: Scenario = Scenario { name: "loading", app: "ConfLoading" };
const STATICS: Scenario = Scenario { name: "statics", app: "ConfStatics" };
const TRANSITIONS: Scenario = Scenario { name: "transitions", app: "ConfTransitions" };
const INLINING: Scenario = Scenario { name: "inlining", app: "ConfInlining" };
const NOTIFICATION: Scenario = Scenario { name: "notification", app: "ConfNotification" };
const EXCEPTIONS: Scenario = Scenario { name: "exceptions", app: "ConfExceptions" };
const ALLOCBYCLASS: Scenario = Scenario { name: "allocbyclass", app: "ConfAllocByClass" };
const CLASSUNLOAD: Scenario = Scenario { name: "classunload", app: "ConfClassUnload" };
const DISPENSER: Scenario = Scenario { name: "dispenser", app: "ConfDispenser" };
const GCBASIC: Scenario = Scenario { name: "gcbasic", app: "ConfGcBasic" };

/// Three full and one gen0 induced GC, then two the allocator starts: exactly six GCs started and
/// finished (the app exits 100 only when its process ran those six), the generation arrays of the
/// induced ones say what each collected (five generations on 8.0.4, with the pinned object
/// heap; four on 3.1.23), GetGenerationBounds stays consistent, and the heap walk shows the app's
/// live Marker referencing its Child and referenced from a root.
fn gc_common(generations: &str) -> Vec<String> {
    let full = format!("induced GC of {} generations collected {generations}", generations.split(',').count());
    let n = generations.split(',').count();
    vec![
        full.clone(),
        full.clone(),
        full,
        format!("induced GC of {n} generations collected 0"),
        "GCs started: 6, finished: 6".into(),
        "never nested: true".into(),
        "generation bounds consistent after every GC: true".into(),
        format!("generations in bounds: {generations}"),
        "Marker references its Child: true".into(),
        "a root references the Marker: true".into(),
    ]
}

/// ... and on 8.0.4 the high event mask alone reports the large and the pinned arrays, and no
/// other allocation; pinned-heap objects show in the heap walk as references (the Marker's) and as
/// roots (`src/tests/profiler/gc/gc.cs`).
#[test]
fn gc_on_coreclr_8() {
    let _runtime = runtime_lock();
    let mut expected = gc_common("0,1,2,3,4");
    expected.extend([
        "large byte array reported: true".to_string(),
        "pinned byte array reported: true".to_string(),
        "other allocations reported: []".to_string(),
        "pinned-heap objects among object references: true".to_string(),
        "pinned-heap objects among root references: true".to_string(),
        "the Marker references a pinned-heap object: true".to_string(),
    ]);
    check(&GC, "8", &expected.iter().map(String::as_str).collect::<Vec<_>>());
}

/// 3.1.23 predates the high allocation events: with no allocation event asked for, none comes.
#[test]
fn gc_on_coreclr_3() {
    let _runtime = runtime_lock();
    let mut expected = gc_common("0,1,2,3");
    expected.push("allocations reported without the high mask: 0".to_string());
    check(&GC, "3", &expected.iter().map(String::as_str).collect::<Vec<_>>());
}

/// `src/tests/profiler/exception/ExceptionTest.cs`: the two-pass sequence, for the app's methods,
/// every Enter followed by its Leave: search from the thrower up to the catcher (filters run in the
/// search pass), then unwind up to the catching frame (finally blocks run during the unwind), then
/// the catcher, given the thrown object. The catching frame's unwind has no Leave (the frame goes
/// on, into its catch); a catch left by a rethrow has none either, and the rethrow starts a new
/// search from the rethrowing frame. A throw from a finally run normally (no exception in flight)
/// is an ordinary throw from that method, with no finally events.
const EXCEPTION_SEQUENCE: &[&str] = &[
    // caught two frames up
    "thrown ConfExceptions.AppException",
    "search Thrower",
    "search leave Thrower",
    "search Middle",
    "search leave Middle",
    "search CatchTwoUp",
    "catcher found CatchTwoUp",
    "search leave CatchTwoUp",
    "unwind Thrower",
    "unwind leave Thrower",
    "unwind Middle",
    "unwind leave Middle",
    "unwind CatchTwoUp",
    "catch CatchTwoUp",
    "caught object: ConfExceptions.AppException",
    "catch leave CatchTwoUp",
    // a finally on the way out
    "thrown ConfExceptions.AppException",
    "search Thrower",
    "search leave Thrower",
    "search WithFinally",
    "search leave WithFinally",
    "search CatchFinally",
    "catcher found CatchFinally",
    "search leave CatchFinally",
    "unwind Thrower",
    "unwind leave Thrower",
    "unwind WithFinally",
    "finally WithFinally",
    "finally leave WithFinally",
    "unwind leave WithFinally",
    "unwind CatchFinally",
    "catch CatchFinally",
    "caught object: ConfExceptions.AppException",
    "catch leave CatchFinally",
    // caught, rethrown, caught by the caller
    "thrown ConfExceptions.AppException",
    "search Thrower",
    "search leave Thrower",
    "search Rethrower",
    "catcher found Rethrower",
    "search leave Rethrower",
    "unwind Thrower",
    "unwind leave Thrower",
    "unwind Rethrower",
    "catch Rethrower",
    "caught object: ConfExceptions.AppException",
    "thrown ConfExceptions.AppException",
    "search Rethrower",
    "search leave Rethrower",
    "search CatchRethrown",
    "catcher found CatchRethrown",
    "search leave CatchRethrown",
    "unwind Rethrower",
    "unwind leave Rethrower",
    "unwind CatchRethrown",
    "catch CatchRethrown",
    "caught object: ConfExceptions.AppException",
    "catch leave CatchRethrown",
    // a filter that declines, then one that accepts, in the same method
    "thrown ConfExceptions.AppException",
    "search Thrower",
    "search leave Thrower",
    "search Filtered",
    "filter Filtered",
    "filter leave Filtered",
    "filter Filtered",
    "filter leave Filtered",
    "catcher found Filtered",
    "search leave Filtered",
    "unwind Thrower",
    "unwind leave Thrower",
    "unwind Filtered",
    "catch Filtered",
    "caught object: ConfExceptions.AppException",
    "catch leave Filtered",
    // thrown from a finally
    "thrown ConfExceptions.AppException",
    "search ThrowInFinally",
    "search leave ThrowInFinally",
    "search CatchFromFinally",
    "catcher found CatchFromFinally",
    "search leave CatchFromFinally",
    "unwind ThrowInFinally",
    "unwind leave ThrowInFinally",
    "unwind CatchFromFinally",
    "catch CatchFromFinally",
    "caught object: ConfExceptions.AppException",
    "catch leave CatchFromFinally",
];

#[test]
fn exceptions_on_coreclr_8() {
    let _runtime = runtime_lock();
    check(&EXCEPTIONS, "8", EXCEPTION_SEQUENCE);
}

#[test]
fn exceptions_on_coreclr_3() {
    let _runtime = runtime_lock();
    check(&EXCEPTIONS, "3", EXCEPTION_SEQUENCE);
}

const THREADS_FACTS: &[&str] = &[
    "worker names: conf-worker-1, conf-worker-2, conf-worker-3",
    "suspensions seen: true",
    "EnumThreads != live threads at: []",
    "a suspension enumerated all three workers: true",
];

#[test]
fn threads_on_coreclr_8() {
    let _runtime = runtime_lock();
    check(&THREADS, "8", THREADS_FACTS);
}

#[test]
fn threads_on_coreclr_3() {
    let _runtime = runtime_lock();
    check(&THREADS, "3", THREADS_FACTS);
}

/// Exactly one module and assembly load started and finished for each the app counted (the
/// live ones and the unloaded collectible copy); the collectible copy of the app unloads; the
/// generic instantiations load with their type arguments, plus the shared-code instantiation over
/// `System.__Canon`.
fn loading_facts(
    counted: &std::collections::BTreeMap<String, u64>,
    assembly_unloads: &str,
    unloaded: Option<&str>,
) -> Vec<String> {
    let (modules, assemblies) = (counted["modules"], counted["assemblies"]);
    let mut facts: Vec<String> = vec![
        format!("module loads: started {modules}, finished {modules}"),
        "module unloads: started 1, finished 1".into(),
        format!("assembly loads: started {assemblies}, finished {assemblies}"),
        assembly_unloads.into(),
        "assembly loaded: ConfDynamic x1".into(),
        "assembly loaded: ConfLoading x2".into(),
    ];
    facts.extend(unloaded.map(String::from));
    facts.extend(
        [
            "class loaded: ConfDynamic.Emitted x1",
            "class loaded: ConfLoading.Box<ConfLoading.Box<System.Int32>> x1",
            "class loaded: ConfLoading.Box<System.Int32> x1",
            "class loaded: ConfLoading.Box<System.String> x1",
            "class loaded: ConfLoading.Box<System.__Canon> x1",
        ]
        .map(String::from),
    );
    facts
}

#[test]
fn loading_on_coreclr_8() {
    let _runtime = runtime_lock();
    check_counted(&LOADING, "8", |counted| {
        loading_facts(counted, "assembly unloads: started 1, finished 1", Some("assembly unloaded: ConfLoading x1"))
    });
}

/// CoreCLR 3.1.23 reports the collectible assembly's AssemblyUnloadFinished but never its
/// AssemblyUnloadStarted (observed on every run; 8.0.4 reports both).
#[test]
fn loading_on_coreclr_3() {
    let _runtime = runtime_lock();
    check_counted(&LOADING, "3", |counted| loading_facts(counted, "assembly unloads: started 0, finished 1", None));
}

const STATICS_FACTS: &[&str] = &[
    "profiler thread: initialized, forced a GC",
    "Counter: COR_PRF_FIELD_APP_DOMAIN_STATIC, value 0x123456789a",
    "Name: COR_PRF_FIELD_APP_DOMAIN_STATIC, value System.String",
    "PerThread: COR_PRF_FIELD_THREAD_STATIC, value 4242 (GetThreadStaticAddress of another thread: E_INVALIDARG (0x80070057))",
    "statics walked at GarbageCollectionFinished: true",
    "walk failures: {}",
];

/// What the walks at GarbageCollectionFinished read (`src/tests/profiler/unittest/
/// getappdomainstaticaddress.cs`): the statics of collectible modules' classes (`collectible`),
/// and the values Main and the collectible copy's Fill stored; the copy's Holder is unloaded and
/// never read after.
fn statics_facts(collectible: bool) -> Vec<&'static str> {
    let mut facts = STATICS_FACTS.to_vec();
    facts.extend(if collectible {
        [
            "statics read in collectible modules: true, in others: true",
            "Holder.Counter as the walks read it: 0x123456789a",
            "the collectible Holder.Counter as the walks read it: 0xc0ffee",
        ]
    } else {
        [
            "statics read in collectible modules: false, in others: true",
            "Holder.Counter as the walks read it: 0x123456789a",
            "the collectible Holder.Counter as the walks read it: never read",
        ]
    });
    facts.extend(["the collectible Holder unloaded: true", "the collectible Holder read after its unload: false"]);
    facts
}

/// COR_PRF_MONITOR_GC joins the mask after Initialize, which the runtime allows only without
/// concurrent GC.
const NO_CONCURRENT_GC: (&str, &str) = ("COMPlus_gcConcurrent", "0");

#[test]
fn statics_on_coreclr_8() {
    let _runtime = runtime_lock();
    check_with(&STATICS, "8", &statics_facts(true), &[NO_CONCURRENT_GC]);
}

/// 3.1.23 crashes (SIGSEGV) in GetAppDomainStaticAddress for a collectible module's class at
/// GarbageCollectionFinished, its context still alive (.NET 5 reworked that call for collectible
/// modules: dotnet/runtime#33367, #34677 with the runtime test, #41076): the walks leave those
/// classes alone, and a run that does not is asserted to die by a signal.
#[test]
fn statics_on_coreclr_3() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(STATICS.name, "3", "").not_applicable(
        "3.1.23 crashes (SIGSEGV) in GetAppDomainStaticAddress for a collectible module's class at GarbageCollectionFinished, its context alive (reworked in .NET 5, dotnet/runtime#34677): the walks skip collectible modules, and the crash is asserted",
    );
    run_scenario(&STATICS, "3", &statics_facts(false), &[NO_CONCURRENT_GC, ("CORPROF_CONF_SKIP_COLLECTIBLE", "1")]);
    let run = STATICS.run("3", &[NO_CONCURRENT_GC]);
    assert_eq!(run.code, None, "the walk of a collectible class's statics on 3.1.23: {}", run.describe());
}

/// A P/Invoke is a call out and a return in, named by the P/Invoke method; the reverse call
/// through the marshalled delegate comes in and goes out as the delegate type's `Invoke`.
const TRANSITIONS_FACTS: &[&str] = &[
    "managed-to-unmanaged ConfTransitions.Program::conf_add call",
    "unmanaged-to-managed ConfTransitions.Program::conf_add return",
    "managed-to-unmanaged ConfTransitions.Program::conf_call_back call",
    "unmanaged-to-managed ConfTransitions.Program+Callback::Invoke call",
    "managed-to-unmanaged ConfTransitions.Program+Callback::Invoke return",
    "unmanaged-to-managed ConfTransitions.Program::conf_call_back return",
];

/// The app's DllImport finds the profiler's library by name on LD_LIBRARY_PATH: the same file the
/// runtime loaded as the profiler.
fn transitions(runtime: &'static str) {
    check_with(&TRANSITIONS, runtime, TRANSITIONS_FACTS, &[("LD_LIBRARY_PATH", &library_dir())]);
}

/// The folder of the conformance profiler, for an app's DllImport of it (`LD_LIBRARY_PATH`).
fn library_dir() -> String {
    let lib = library();
    lib.parent().expect("the library's folder").to_str().expect("UTF-8 path").to_string()
}

#[test]
fn transitions_on_coreclr_8() {
    let _runtime = runtime_lock();
    transitions("8");
}

#[test]
fn transitions_on_coreclr_3() {
    let _runtime = runtime_lock();
    transitions("3");
}

/// Both callees are offered for inlining into Caller; the refused one is then JIT-compiled on
/// its own, the allowed one never is (it lives on inside Caller).
const INLINING_FACTS: &[&str] = &[
    "compiled Main",
    "compiled Caller",
    "inline Refused into Caller: refused",
    "inline Allowed into Caller: allowed",
    "compiled Refused",
];

/// Tiered compilation off (both runtimes' spellings): Caller's first compile is optimized.
const NO_TIERING: &[(&str, &str)] = &[("DOTNET_TieredCompilation", "0"), ("COMPlus_TieredCompilation", "0")];

#[test]
fn inlining_on_coreclr_8() {
    let _runtime = runtime_lock();
    check_with(&INLINING, "8", INLINING_FACTS, NO_TIERING);
}

#[test]
fn inlining_on_coreclr_3() {
    let _runtime = runtime_lock();
    check_with(&INLINING, "3", INLINING_FACTS, NO_TIERING);
}

const NOTIFICATION_MAIN_FACTS: &[&str] =
    &["main: initialize", "main: compiled Main", "main: compiled Catch", "main: compiled Throw", "main: shutdown"];

/// The main profiler and, through CORECLR_NOTIFICATION_PROFILERS, a notification-only one (the
/// same library under the peer's CLSID); each writes its own facts. `peer` is what the
/// notification profiler must write (`None`: it must not load at all).
fn notification(runtime: &'static str, peer: Option<&[&str]>) {
    let row = ConformanceRow::new(NOTIFICATION.name, runtime, "");
    let _row = if peer.is_none() {
        row.not_applicable("notification profilers came with .NET 7; the peer is never loaded")
    } else {
        row
    };
    let list = format!("{}={{{PEER_CLSID}}};", library().display());
    let peer_out = TempFile::new(&format!("conformance-notification-peer-{runtime}"));
    let env = [
        ("CORECLR_ENABLE_NOTIFICATION_PROFILERS", "1"),
        ("CORECLR_NOTIFICATION_PROFILERS", list.as_str()),
        ("CORPROF_CONF_PEER_OUT", peer_out.path()),
    ];
    run_scenario(&NOTIFICATION, runtime, NOTIFICATION_MAIN_FACTS, &env);
    let peer_facts = peer_out.read().map(|t| t.lines().map(str::to_string).collect::<Vec<_>>());
    let expected = peer.map(|p| p.iter().map(|l| l.to_string()).collect::<Vec<_>>());
    assert_eq!(peer_facts, expected, "the notification profiler on CoreCLR {runtime}");
}

#[test]
fn notification_on_coreclr_8() {
    let _runtime = runtime_lock();
    notification(
        "8",
        Some(&[
            "peer: asked to load as notification only: yes",
            "peer: initialize",
            "peer: thrown ConfNotification.Oops",
            "peer: caught in ConfNotification.Program::Catch",
            "peer: shutdown",
        ]),
    );
}

/// Notification profilers came with .NET 7: 3.1.23 ignores the setting and never loads the peer.
#[test]
fn notification_on_coreclr_3() {
    let _runtime = runtime_lock();
    notification("3", None);
}

/// `src/tests/profiler/gc/gcbasic.cs`: the high basic-GC mask alone brings GC start and finish in
/// step, the first GC's bounds hold an empty generation 1, and no heap-walk callback. The runtime
/// test also bounds generation 1's reserved length by one filler object: 3.1.23 (segments) keeps
/// that, 8.0.4 (regions) reserves a whole region for the empty generation (4 MB less its header,
/// observed on every run), so its row asserts `false` there.
fn gcbasic_facts(generations: &str, reserved_within_filler: bool) -> Vec<String> {
    vec![
        "GarbageCollectionStarted seen: true".into(),
        "GarbageCollectionFinished seen: true".into(),
        "started/finished out of step at: []".into(),
        "started == finished: true".into(),
        "induced GCs: 2".into(),
        format!(
            "first GC: generations {generations}; generation 1 length <= 0x18: true, reserved <= 0x18: {reserved_within_filler}"
        ),
        "heap-walk callbacks under the basic mask: {}".into(),
    ]
}

#[test]
fn gcbasic_on_coreclr_8() {
    let _runtime = runtime_lock();
    let facts = gcbasic_facts("0,1,2,3,4", false);
    check(&GCBASIC, "8", &facts.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn gcbasic_on_coreclr_3() {
    let _runtime = runtime_lock();
    let facts = gcbasic_facts("0,1,2,3", true);
    check(&GCBASIC, "3", &facts.iter().map(String::as_str).collect::<Vec<_>>());
}

/// `src/tests/profiler/gc/gcskipobjectsallocatedbyclasscallback.cs` (with the runtime's
/// gcallocate.cs, the same ObjectsAllocatedByClass callback): the callback's counts for the app's
/// known allocations, per GC.
const ALLOCBYCLASS_FACTS: &[&str] = &[
    "started == finished: true",
    "ObjectsAllocatedByClass raised: true",
    "calls with unpaired class and count arrays: 0",
    "app classes per report: [ConfAllocByClass.Kept x1000] [ConfAllocByClass.Dropped x300, ConfAllocByClass.Kept x20]",
];

/// Both runs of the scenario, the plain one and [`allocbyclass_skip`], one after the other: they
/// share the scenario's output file.
#[test]
fn allocbyclass_on_coreclr_8() {
    let _runtime = runtime_lock();
    check(&ALLOCBYCLASS, "8", ALLOCBYCLASS_FACTS);
    allocbyclass_skip("8");
}

#[test]
fn allocbyclass_on_coreclr_3() {
    let _runtime = runtime_lock();
    check(&ALLOCBYCLASS, "3", ALLOCBYCLASS_FACTS);
    allocbyclass_skip("3");
}

/// The runtime test's subject, `COR_PRF_HIGH_MONITOR_GC_SKIP_ALLOCATED_BY_CLASS_STATISTIC`, is a
/// .NET 9 flag (0x200; the runtime-info15 header names it). Set, 8.0.4 and 3.1.23 accept the bit
/// they do not know and ignore it: ObjectsAllocatedByClass still comes, with the same counts. The
/// row is `n/a`, with that reason checked by the run.
fn allocbyclass_skip(runtime: &'static str) {
    let _row = ConformanceRow::new(
        "allocbyclass-skip",
        runtime,
        "`src/tests/profiler/gc/gcskipobjectsallocatedbyclasscallback.cs`: \
         COR_PRF_HIGH_MONITOR_GC_SKIP_ALLOCATED_BY_CLASS_STATISTIC silences ObjectsAllocatedByClass",
    )
    .not_applicable(
        "the skip flag exists from .NET 9; this runtime accepts its bit, ignores it, and the callback comes",
    );
    let mut facts = vec!["SetEventMask2 with the skip flag 0x200: accepted"];
    facts.extend_from_slice(ALLOCBYCLASS_FACTS);
    run_scenario(&ALLOCBYCLASS, runtime, &facts, &[("CORPROF_CONF_SKIP", "1")]);
}

/// `src/tests/profiler/unittest/classload.cs` (with `unloadlibrary.cs`): seven classes load with
/// the collectible context, each Started paired with its Finished. The runtime test expects all
/// seven to unload; before .NET 10 (dotnet/runtime#114068) the runtime raises ClassUnload* only
/// for a class defined by the unloading module, never for an instantiation such as
/// `List<TestClass>` whose generic definition lives elsewhere: one pair here, on both runtimes.
const CLASSUNLOAD_FACTS: &[&str] = &[
    "class loads: started 7, finished 7; unloads: started 1, finished 1",
    "ConfClassUnload.TestClass: 1 1 1 1",
    "System.Collections.Generic.ICollection`1<ConfClassUnload.TestClass>: 1 1 0 0",
    "System.Collections.Generic.IEnumerable`1<ConfClassUnload.TestClass>: 1 1 0 0",
    "System.Collections.Generic.IList`1<ConfClassUnload.TestClass>: 1 1 0 0",
    "System.Collections.Generic.IReadOnlyCollection`1<ConfClassUnload.TestClass>: 1 1 0 0",
    "System.Collections.Generic.IReadOnlyList`1<ConfClassUnload.TestClass>: 1 1 0 0",
    "System.Collections.Generic.List`1<ConfClassUnload.TestClass>: 1 1 0 0",
];

#[test]
fn classunload_on_coreclr_8() {
    let _runtime = runtime_lock();
    check(&CLASSUNLOAD, "8", CLASSUNLOAD_FACTS);
}

#[test]
fn classunload_on_coreclr_3() {
    let _runtime = runtime_lock();
    check(&CLASSUNLOAD, "3", CLASSUNLOAD_FACTS);
}

/// `src/tests/profiler/unittest/metadatagetdispenser.cs`: libcoreclr's MetaDataGetDispenser gives
/// an IMetaDataDispenserEx that opens every loading module's file; the app module so read is the
/// one the runtime loaded (name and MVID). The runtime test asks for the path at
/// ModuleLoadStarted, where 8.0.4 does not have it yet (CORPROF_E_DATAINCOMPLETE).
fn dispenser_facts(at_started: &str) -> Vec<String> {
    vec![
        format!("GetModuleInfo2 at ModuleLoadStarted failed with: {at_started}"),
        "modules opened by the dispenser: true".into(),
        "modules it failed on: []".into(),
        "ConfDispenser.dll scope name through the dispenser: Some(\"ConfDispenser.dll\")".into(),
        "ConfDispenser.dll name and MVID equal to GetModuleMetaData's: true".into(),
    ]
}

#[test]
fn dispenser_on_coreclr_8() {
    let _runtime = runtime_lock();
    let facts = dispenser_facts("{\"CORPROF_E_DATAINCOMPLETE (0x80131351)\"}");
    check(&DISPENSER, "8", &facts.iter().map(String::as_str).collect::<Vec<_>>());
}

/// 3.1.23 crashes inside GetModuleInfo2 at ModuleLoadStarted (SIGSEGV in the runtime, observed):
/// the profiler does not ask there, so nothing failed.
#[test]
fn dispenser_on_coreclr_3() {
    let _runtime = runtime_lock();
    let facts = dispenser_facts("{}");
    check(&DISPENSER, "3", &facts.iter().map(String::as_str).collect::<Vec<_>>());
}

const DYNAMICOPTIMIZATION: Scenario = Scenario { name: "dynamicoptimization", app: "ConfDynamicOptimization" };

/// The app's three copies per flag, as the flags set at Initialize leave them: `asks` JITInlining
/// requests for Run's call of Inlinee, and the tier MethodLoadVerbose reports.
fn dynamicoptimization_copies(first: u32, tier: &str, asks: u32) -> Vec<String> {
    (first..first + 3)
        .map(|copy| format!("copy {copy}: Run compiled: true, tier {tier}, inlining asked {asks} times"))
        .collect()
}

/// `src/tests/profiler/dynamicoptimization/DynamicOptimization.cs` turns each flag on, then off,
/// after Initialize and expects the copies loaded in between to compile accordingly. 8.0.4 and
/// 3.1.23 keep both flags immutable: each change answers E_FAIL and the mask stays; asking for
/// what the mask already has answers S_OK. So every copy compiles as Initialize set: run once
/// with neither flag, once with each.
fn dynamicoptimization(runtime: &'static str) {
    let _row = ConformanceRow::new(DYNAMICOPTIMIZATION.name, runtime, "").not_applicable(
        "switching the flags after Initialize came with .NET 10 (dotnet/runtime#113924); this runtime refuses \
         it with E_FAIL and keeps the mask, and every copy compiles as the flags set at Initialize say",
    );
    let dir = library_dir();
    let refused = |flag: &str, kept: &str| {
        format!(
            "SetEventMask2 turning {flag} {}: E_FAIL (0x80004005); the mask keeps it {kept}",
            if kept == "on" { "off" } else { "on" }
        )
    };
    let granted =
        |flag: &str, on: &str| format!("SetEventMask2 turning {flag} {on}: S_OK (0x00000000); the mask keeps it {on}");
    const OPT: &str = "COR_PRF_DISABLE_OPTIMIZATIONS";
    const INL: &str = "COR_PRF_DISABLE_INLINING";
    // (flag set at Initialize, the facts): the switch that matches the mask is granted, the other refused.
    let runs: [(&str, Vec<String>); 3] = [
        (
            "",
            [
                vec![refused(OPT, "off"), granted(OPT, "off")],
                dynamicoptimization_copies(1, "Optimized", 1),
                vec![refused(INL, "off"), granted(INL, "off")],
                dynamicoptimization_copies(4, "Optimized", 1),
            ]
            .concat(),
        ),
        (
            "optimizations",
            [
                vec![granted(OPT, "on"), refused(OPT, "on")],
                dynamicoptimization_copies(1, "MinOptJitted", 0),
                vec![refused(INL, "off"), granted(INL, "off")],
                dynamicoptimization_copies(4, "MinOptJitted", 0),
            ]
            .concat(),
        ),
        (
            "inlining",
            [
                vec![refused(OPT, "off"), granted(OPT, "off")],
                dynamicoptimization_copies(1, "Optimized", 0),
                vec![granted(INL, "on"), refused(INL, "on")],
                dynamicoptimization_copies(4, "Optimized", 0),
            ]
            .concat(),
        ),
    ];
    for (disable, facts) in &runs {
        let env = [
            ("LD_LIBRARY_PATH", dir.as_str()),
            ("CORPROF_CONF_DISABLE", disable),
            // Run's first compile is its optimized one (tier 0 would never inline).
            ("DOTNET_TieredCompilation", "0"),
            ("COMPlus_TieredCompilation", "0"),
        ];
        run_scenario(&DYNAMICOPTIMIZATION, runtime, &facts.iter().map(String::as_str).collect::<Vec<_>>(), &env);
    }
}

#[test]
fn dynamicoptimization_on_coreclr_8() {
    let _runtime = runtime_lock();
    dynamicoptimization("8");
}

#[test]
fn dynamicoptimization_on_coreclr_3() {
    let _runtime = runtime_lock();
    dynamicoptimization("3");
}

const ELTTRANSITIONS: Scenario = Scenario { name: "elttransitions", app: "ConfEltTransitions" };

/// `src/tests/profiler/elttransitions/elttransitions.cs`: the forward P/Invoke shows only as its
/// transitions (no hook runs for it on either runtime: the regression of dotnet/runtime#130242 is
/// not in 8.0.4 or 3.1.23), and each managed callback gets its enter and leave hooks in between.
/// The delegate's target is entered after the reverse transition, through the delegate's Invoke;
/// the `[UnmanagedCallersOnly]` method's enter hook runs before its own reverse transition (its
/// prolog hooks first) and its leave hook after the return transition.
const ELTTRANSITIONS_THROUGH_DELEGATE: &[&str] = &[
    "enter Program::Main",
    "managed-to-unmanaged Program::conf_do_pinvoke call",
    "unmanaged-to-managed Program+Callback::Invoke call",
    "enter Program::ThroughDelegate",
    "leave Program::ThroughDelegate",
    "managed-to-unmanaged Program+Callback::Invoke return",
    "unmanaged-to-managed Program::conf_do_pinvoke return",
];

const ELTTRANSITIONS_UNMANAGED_CALLERS_ONLY: &[&str] = &[
    "managed-to-unmanaged Program::conf_do_pinvoke call",
    "enter Program::DoReversePInvoke",
    "unmanaged-to-managed Program::DoReversePInvoke call",
    "managed-to-unmanaged Program::DoReversePInvoke return",
    "leave Program::DoReversePInvoke",
    "unmanaged-to-managed Program::conf_do_pinvoke return",
];

fn elttransitions(runtime: &'static str, expected: &[&str]) {
    check_with(&ELTTRANSITIONS, runtime, expected, &[("LD_LIBRARY_PATH", &library_dir())]);
}

#[test]
fn elttransitions_on_coreclr_8() {
    let _runtime = runtime_lock();
    let expected =
        [ELTTRANSITIONS_THROUGH_DELEGATE, ELTTRANSITIONS_UNMANAGED_CALLERS_ONLY, &["leave Program::Main"]].concat();
    elttransitions("8", &expected);
}

/// `[UnmanagedCallersOnly]` came with .NET 5: on 3.1.23 the app calls back through the delegate only.
#[test]
fn elttransitions_on_coreclr_3() {
    let _runtime = runtime_lock();
    let expected = [ELTTRANSITIONS_THROUGH_DELEGATE, &["leave Program::Main"]].concat();
    elttransitions("3", &expected);
}

const ELTSLOWPATH: Scenario = Scenario { name: "eltslowpath", app: "ConfEltSlowPath" };

/// What `src/tests/profiler/elt/slowpatheltenter.cs` checks, for every method of the app: each
/// argument's range has its size and holds its value (the string through GetStringLayout2).
const ELTSLOWPATH_ENTER: &[&str] = &[
    "SimpleArgsFunc enter: -123, -4.3, \"Hello, test!\"",
    "MixedStructFunc enter: (1, 1)",
    "LargeStructFunc enter: (0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5)",
    "IntegerStructFunc enter: (14, 256)",
    "Fp32x2StructFunc enter: (1.25, 3.5)",
    "Fp32x2StructFp32x3StructFunc enter: (1.25, 3.5), (6.5, 10.25, 13.75)",
    "Fp32x3StructFunc enter: (6.5, 10.25, 13.75)",
    "Fp32x3StructFp32x2StructFunc enter: (6.5, 10.25, 13.75), (1.25, 3.5)",
    "Fp32x3StructSingleFp32x3StructSingleFunc enter: (6.5, 10.25, 13.75), 1.5, (6.5, 10.25, 13.75), 3.5",
    "Fp32x4StructFunc enter: (15.5, 19.25, 22.75, 26.125)",
    "Fp32x4StructFp32x4StructFunc enter: (15.5, 19.25, 22.75, 26.125), (15.5, 19.25, 22.75, 26.125)",
    "Fp64x2StructFunc enter: (1.2, 3.5)",
    "Fp64x2StructFp64x3StructFunc enter: (1.2, 3.5), (6.7, 10.11, 13.14)",
    "Fp64x3StructFunc enter: (6.7, 10.11, 13.14)",
    "Fp64x3StructFp64x2StructFunc enter: (6.7, 10.11, 13.14), (1.2, 3.5)",
    "Fp64x3StructDoubleFp64x3StructDoubleFunc enter: (6.7, 10.11, 13.14), 1.5, (6.7, 10.11, 13.14), 3.5",
    "Fp64x4StructFunc enter: (15.17, 19.21, 22.23, 26.29)",
    "Fp64x4StructFp64x4StructFunc enter: (15.17, 19.21, 22.23, 26.29), (15.17, 19.21, 22.23, 26.29)",
    "DoubleRetFunc enter: ",
];

/// What `src/tests/profiler/elt/slowpatheltleave.cs` checks: each return value's range, and
/// whether 3.1.23 gets it right (`false`: a struct returned in floating-point registers).
const ELTSLOWPATH_LEAVE: &[(&str, bool)] = &[
    ("SimpleArgsFunc leave: \"Hello from SimpleArgsFunc!\"", true),
    ("MixedStructFunc leave: (4, 1)", false),
    ("LargeStructFunc leave: 5", true),
    ("IntegerStructFunc leave: (21, 256)", true),
    ("Fp32x2StructFunc leave: (1.25, 2)", false),
    ("Fp32x2StructFp32x3StructFunc leave: (7.75, 10.25, 13.75)", false),
    ("Fp32x3StructFunc leave: (6.5, 10.25, 3)", false),
    ("Fp32x3StructFp32x2StructFunc leave: (1.25, 17.25)", false),
    ("Fp32x3StructSingleFp32x3StructSingleFunc leave: (1.5, 3.5, 13.75)", false),
    ("Fp32x4StructFunc leave: (15.5, 19.25, 22.75, 4)", false),
    ("Fp32x4StructFp32x4StructFunc leave: (26.125, 19.25, 22.75, 26.125)", false),
    ("Fp64x2StructFunc leave: (1.2, 2)", false),
    ("Fp64x2StructFp64x3StructFunc leave: (7.9, 10.11, 13.14)", true),
    ("Fp64x3StructFunc leave: (6.7, 10.11, 3)", true),
    ("Fp64x3StructFp64x2StructFunc leave: (1.2, 16.64)", false),
    ("Fp64x3StructDoubleFp64x3StructDoubleFunc leave: (1.5, 3.5, 13.14)", true),
    ("Fp64x4StructFunc leave: (15.17, 19.21, 22.23, 4)", true),
    ("Fp64x4StructFp64x4StructFunc leave: (26.29, 19.21, 22.23, 26.29)", true),
    ("DoubleRetFunc leave: 13", true),
];

#[test]
fn eltslowpath_on_coreclr_8() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(ELTSLOWPATH.name, "8", "");
    run_scenario(&ELTSLOWPATH, "8", ELTSLOWPATH_ENTER, &[("CORPROF_CONF_ELT", "enter")]);
    let leave: Vec<&str> = ELTSLOWPATH_LEAVE.iter().map(|(line, _)| *line).collect();
    run_scenario(&ELTSLOWPATH, "8", &leave, &[("CORPROF_CONF_ELT", "leave")]);
}

/// 3.1.23's slow-path stubs predate the fixes of dotnet/runtime#39550 (.NET 5): they neither keep
/// the xmm registers across the hook nor hand back a struct returned in registers. The arguments
/// read right, but afterwards the app computes four results from clobbered floating-point
/// arguments; the return ranges of structs returned in floating-point registers hold other bytes
/// (addresses, which change from run to run), while those returned in integer registers or in
/// memory, and primitives, read right.
#[test]
fn eltslowpath_on_coreclr_3() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(ELTSLOWPATH.name, "3", "").not_applicable(
        "3.1.23's slow-path stubs predate dotnet/runtime#39550 (.NET 5): reading the arguments clobbers the \
         floating-point ones (the app gets four wrong results), and structs returned in floating-point \
         registers read as other bytes",
    );
    let (run, lines) = run_for_lines(&ELTSLOWPATH, "3", &[("CORPROF_CONF_ELT", "enter")]);
    assert_eq!(lines, ELTSLOWPATH_ENTER, "the arguments on 3.1.23\n{}", run.describe());
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            Some(1),
            "MixedStructFunc returned 4 5E-324, expected 4 1\n\
             Fp32x2StructFp32x3StructFunc returned 15 10.25 13.75, expected 7.75 10.25 13.75\n\
             Fp32x3StructFp32x2StructFunc returned 1.25 4.75, expected 1.25 17.25\n\
             Fp32x4StructFp32x4StructFunc returned 19.25 19.25 22.75 26.125, expected 26.125 19.25 22.75 26.125\n\
             eltslowpath scenario done, wrong results: 4\n"
        ),
        "the app after its arguments were read on 3.1.23\n{}",
        run.describe()
    );

    let (run, lines) = run_for_lines(&ELTSLOWPATH, "3", &[("CORPROF_CONF_ELT", "leave")]);
    assert_eq!(run.code, Some(100), "{}", run.describe());
    assert_eq!(lines.len(), ELTSLOWPATH_LEAVE.len(), "{lines:#?}");
    for (line, (expected, right_on_3)) in lines.iter().zip(ELTSLOWPATH_LEAVE) {
        if *right_on_3 {
            assert_eq!(line, expected);
        } else {
            let method = expected.split(' ').next().expect("a method name");
            assert!(line.starts_with(&format!("{method} leave: (")) && line != expected, "{line} (right: {expected})");
        }
    }
}

const REJITINLINING: Scenario = Scenario { name: "rejitinlining", app: "ConfRejitInlining" };

/// `src/tests/profiler/rejit/rejit.cs` (ReJIT with inlining): the JIT inlines InlineeTarget into
/// TriggerDirectInlining and into InlineeChain1, itself inlined into TriggerInliningChain. The
/// ReJIT with inliners compiles the target and both inlining roots again (three ReJITs: two
/// inliners plus the method); only the target's parameters change its body, and with inlining
/// blocked the rejitted TriggerInliningChain inlines InlineeChain1 again but not the target. The
/// revert of the target alone restores the original text on all three paths.
const REJITINLINING_FACTS: &[&str] = &[
    "inline Round into Main",
    "inline Round into Main",
    "inline Round into Main",
    "inline InlineeTarget into TriggerDirectInlining",
    "inline InlineeChain1 into TriggerInliningChain",
    "inline InlineeTarget into InlineeChain1",
    "RequestReJITWithInliners InlineeTarget: S_OK (0x00000000)",
    "GetReJITParameters TriggerDirectInlining: body kept",
    "ReJITCompilationStarted TriggerDirectInlining",
    "ReJITCompilationFinished TriggerDirectInlining: S_OK (0x00000000)",
    "GetReJITParameters InlineeTarget: 1 ldstr replaced",
    "ReJITCompilationStarted InlineeTarget",
    "ReJITCompilationFinished InlineeTarget: S_OK (0x00000000)",
    "GetReJITParameters TriggerInliningChain: body kept",
    "ReJITCompilationStarted TriggerInliningChain",
    "inline InlineeChain1 into TriggerInliningChain",
    "ReJITCompilationFinished TriggerInliningChain: S_OK (0x00000000)",
    "RequestRevert InlineeTarget: S_OK (0x00000000)",
];

/// The app's three rounds: before the ReJIT, after it, after the revert.
const REJITINLINING_OUTPUT: &str = "\
original target (direct)
original target (delegate)
original target (chain)
ReJIT requested
rejitted target (direct)
rejitted target (delegate)
rejitted target (chain)
revert requested
original target (direct)
original target (delegate)
original target (chain)
";

/// Tiered compilation off: the first compilation of each method is the optimized one, which inlines.
fn rejitinlining(runtime: &'static str) {
    let _row = ConformanceRow::new(REJITINLINING.name, runtime, "");
    let (run, lines) = run_for_lines(&REJITINLINING, runtime, NO_TIERING);
    assert_eq!((run.code, run.stdout.as_str()), (Some(100), REJITINLINING_OUTPUT), "{}", run.describe());
    assert_eq!(lines, REJITINLINING_FACTS, "the profiler's facts on CoreCLR {runtime}\n{}", run.describe());
}

#[test]
fn rejitinlining_on_coreclr_8() {
    let _runtime = runtime_lock();
    rejitinlining("8");
}

#[test]
fn rejitinlining_on_coreclr_3() {
    let _runtime = runtime_lock();
    rejitinlining("3");
}

const GCHEAPENUMERATION: Scenario = Scenario { name: "gcheapenumeration", app: "ConfGcHeapEnumeration" };

/// `src/tests/profiler/gcheapenumeration/gcheapenumeration.cs` needs ICorProfilerInfo15, which
/// came after 8.0.4: both runtimes answer E_NOINTERFACE for it (8.0.4 has up to
/// ICorProfilerInfo14, 3.1.23 up to ICorProfilerInfo11), and corprof's two safe heap walks
/// (`enumerate_gc_heap_objects_with`, the runtime suspending itself; `Suspension::
/// enumerate_gc_heap_objects`, under a profiler suspension that both runtimes grant) answer
/// `E_NOINTERFACE` without calling the closure.
fn gcheapenumeration(runtime: &'static str, info14: &str, negotiated: &str) {
    let _row = ConformanceRow::new(GCHEAPENUMERATION.name, runtime, "").not_applicable(
        "ICorProfilerInfo15 (EnumerateGCHeapObjects) is newer than 8.0.4: this runtime answers \
         QueryInterface for it with E_NOINTERFACE, and corprof's heap walks (both ways) with \
         Err(E_NOINTERFACE), the closure never called",
    );
    let info14 = format!("QueryInterface ICorProfilerInfo14: {info14}");
    let negotiated = format!("ProfilerInfo negotiated {negotiated}");
    let facts = [
        "QueryInterface ICorProfilerInfo11: S_OK (0x00000000)",
        info14.as_str(),
        "QueryInterface ICorProfilerInfo15: E_NOINTERFACE (0x80004002)",
        negotiated.as_str(),
        "heap walk, the runtime suspending itself: E_NOINTERFACE (0x80004002), 0 object(s)",
        "heap walk under a Suspension: E_NOINTERFACE (0x80004002), 0 object(s)",
    ];
    run_scenario(&GCHEAPENUMERATION, runtime, &facts, &[]);
}

#[test]
fn gcheapenumeration_on_coreclr_8() {
    let _runtime = runtime_lock();
    gcheapenumeration("8", "S_OK (0x00000000)", "ICorProfilerInfo14");
}

#[test]
fn gcheapenumeration_on_coreclr_3() {
    let _runtime = runtime_lock();
    gcheapenumeration("3", "E_NOINTERFACE (0x80004002)", "ICorProfilerInfo11");
}

/// A value of `CORPROF_CONF_SCENARIO` that names no scenario, or none at all: the profiler says
/// so in one line and fails Initialize with E_FAIL (corprof's own line says that), and the app
/// runs to its end unprofiled.
fn no_scenario(runtime: &'static str) {
    let names = "allocbyclass, classunload, dispenser, dynamicoptimization, eltslowpath, elttransitions, \
                 eventpipe, exceptions, gc, gcbasic, gcheapenumeration, inlining, loading, multiple, \
                 notification, rejitinlining, reversestartup, statics, threads, transitions";
    for (scenario, why) in [
        (Some("gcc"), format!("CORPROF_CONF_SCENARIO=\"gcc\" is not a scenario: name one of {names}")),
        (None, format!("CORPROF_CONF_SCENARIO is not set: name one of {names}")),
    ] {
        let out = TempFile::new(&format!("conformance-no-scenario-{runtime}"));
        let mut env = vec![("CORPROF_CONF_OUT", out.path())];
        env.extend(scenario.map(|name| (SCENARIO, name)));
        let run = run_profiled(runtime, &INLINING.app_path(), CLSID, &library(), &env);
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (Some(100), "inlining scenario done 61\n"),
            "{scenario:?} on CoreCLR {runtime}\n{}",
            run.describe()
        );
        let said: Vec<&str> = run.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(said, [format!("conformance: {why}").as_str(), INITIALIZE_FAILED_E_FAIL], "{}", run.describe());
        assert_eq!(out.read(), None, "{scenario:?}: no scenario ran, so no fact was written");
    }
}

#[test]
fn no_scenario_fails_initialize_on_coreclr_8() {
    let _runtime = runtime_lock();
    no_scenario("8");
}

#[test]
fn no_scenario_fails_initialize_on_coreclr_3() {
    let _runtime = runtime_lock();
    no_scenario("3");
}
