//! corprof's `names` and `threads` modules in real runtimes (CoreCLR 8.0.4 and 3.1.23), through
//! tests/names-profiler on the Names app: every frame of stack walks taken at known points
//! (inside List<int>'s constructor, Dictionary<string, int>.Add, a nested generic type's method,
//! a generic method with a value and a reference type) named in the short and full forms; the
//! same generic methods named per call, exactly, from with-info enter hooks; and the names and OS
//! thread ids of two named threads (one named before it starts, one by itself), gone once the
//! threads are destroyed.

use crate::common::*;

const NAMES_CLSID: &str = "D958D093-865F-4B9F-A915-C12E3BF41C48";

const MAIN: &str = "frame NamesApp.Program::Main | System.Int32 NamesApp.Program::Main() | NamesApp.Program::Main";
const FIRE: &str =
    "frame NamesApp.Probe::Fire | System.Void NamesApp.Probe::Fire(System.String) | NamesApp.Probe::Fire";

/// The frames of the five walks on the main thread, innermost first: `frame <short from the
/// frame> | <signature> | <short without a frame>`.
fn main_thread_walks() -> Vec<Vec<&'static str>> {
    vec![
        vec![
            FIRE,
            "frame NamesApp.Firing::CopyTo | System.Void NamesApp.Firing::CopyTo(System.Int32[], System.Int32) | NamesApp.Firing::CopyTo",
            // Unshared instantiation: exact even without a frame.
            "frame System.Collections.Generic.List<System.Int32>::.ctor | System.Void System.Collections.Generic.List<System.Int32>::.ctor(System.Collections.Generic.IEnumerable<System.Int32>) | System.Collections.Generic.List<System.Int32>::.ctor",
            MAIN,
        ],
        vec![
            FIRE,
            "frame NamesApp.FiringComparer::GetHashCode | System.Int32 NamesApp.FiringComparer::GetHashCode(System.String) | NamesApp.FiringComparer::GetHashCode",
            // Shared code (TKey = string): a stack walk's frame gives no class, so the class's
            // parameters print by name.
            "frame System.Collections.Generic.Dictionary<TKey, TValue>::TryInsert | System.Boolean System.Collections.Generic.Dictionary<TKey, TValue>::TryInsert(TKey, TValue, System.Collections.Generic.InsertionBehavior) | System.Collections.Generic.Dictionary<TKey, TValue>::TryInsert",
            "frame System.Collections.Generic.Dictionary<TKey, TValue>::Add | System.Void System.Collections.Generic.Dictionary<TKey, TValue>::Add(TKey, TValue) | System.Collections.Generic.Dictionary<TKey, TValue>::Add",
            MAIN,
        ],
        vec![
            FIRE,
            "frame NamesApp.Outer<T>+Inner<U>::Run | System.Int32 NamesApp.Outer<T>+Inner<U>::Run(T, U) | NamesApp.Outer<T>+Inner<U>::Run",
            MAIN,
        ],
        vec![
            FIRE,
            "frame NamesApp.Util::Make<System.Int32> | System.Int32 NamesApp.Util::Make<System.Int32>(System.Int32) | NamesApp.Util::Make<System.Int32>",
            MAIN,
        ],
        vec![
            FIRE,
            "frame NamesApp.Util::Make<System.__Canon> | System.__Canon NamesApp.Util::Make<System.__Canon>(System.__Canon) | NamesApp.Util::Make<System.__Canon>",
            MAIN,
        ],
    ]
}

/// The with-info enter hooks' names: each call's exact instantiation, shared code included.
const ENTERS: &[&str] = &[
    "enter NamesApp.Outer<System.Int32>+Inner<System.String>::Run | System.Int32 NamesApp.Outer<System.Int32>+Inner<System.String>::Run(System.Int32, System.String)",
    "enter NamesApp.Util::Make<System.Int32> | System.Int32 NamesApp.Util::Make<System.Int32>(System.Int32)",
    "enter NamesApp.Util::Make<System.String> | System.String NamesApp.Util::Make<System.String>(System.String)",
];

fn names(runtime: &'static str, test: &str) {
    let lib = profiler_lib("names_profiler");
    let out = TempFile::new(test);
    let app = repo_root().join("tests/apps/Names/bin/Names.dll");
    let run = run_profiled(runtime, app.to_str().unwrap(), NAMES_CLSID, &lib, &[("CORPROF_NAMES_OUT", out.path())]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.ends_with("Names done 6\n"), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no names-profiler output: {}", run.describe()));
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines.iter().any(|l| l.contains("error")), "{text}");

    // The OS thread ids the app printed for its workers.
    let tid = |name: &str| -> String {
        let prefix = format!("tid {name} ");
        let line = run.stdout.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{}", run.describe()));
        line[prefix.len()..].to_string()
    };

    // The walks in order, each a header and its frames.
    let mut walks: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in &lines {
        if line.starts_with("walk ") {
            walks.push((line, Vec::new()));
        } else if line.starts_with("frame ") {
            walks.last_mut().expect("a frame before any walk").1.push(line);
        }
    }
    assert_eq!(walks.len(), 7, "five walks on the main thread, one per worker: {text}");
    let main_os = walks[0].0.rsplit(' ').next().unwrap();
    for ((header, frames), expected) in walks.iter().zip(main_thread_walks()) {
        assert_eq!(*header, format!("walk probe - {main_os}"), "the main thread: unnamed, its OS thread");
        assert_eq!(frames, &expected, "frames on CoreCLR {runtime}");
    }
    for (index, worker) in [(5, "worker-A"), (6, "worker-B")] {
        let (header, frames) = &walks[index];
        assert_eq!(*header, format!("walk probe {worker} {}", tid(worker)), "{worker}'s name and OS thread: {text}");
        let worker_frame =
            "frame NamesApp.Program::Worker | System.Void NamesApp.Program::Worker() | NamesApp.Program::Worker";
        assert_eq!(frames, &[FIRE, worker_frame]);
    }
    assert_ne!(tid("worker-A"), main_os);

    let enters: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("enter ")).collect();
    assert_eq!(enters, ENTERS, "hooked calls on CoreCLR {runtime}");

    // Both workers were destroyed before Shutdown, and their IDs no longer name them.
    let ends: Vec<&str> =
        lines.iter().copied().filter(|l| l.starts_with("destroyed ") || l.starts_with("stale ")).collect();
    assert_eq!(ends, ["destroyed worker-A", "destroyed worker-B"], "{text}");
}

#[test]
fn names_and_threads_on_coreclr_8() {
    let _runtime = runtime_lock();
    names("8", "names_and_threads_on_coreclr_8");
}

#[test]
fn names_and_threads_on_coreclr_3() {
    let _runtime = runtime_lock();
    names("3", "names_and_threads_on_coreclr_3");
}
