//! What record_alloc.rs and record_calls.rs share: running an app under
//! corprof-record-profiler (the library `corprof record` loads) and reading back the profile it wrote.
#![allow(dead_code)] // each test crate uses a part

use crate::common::*;
use std::collections::BTreeMap;

/// The record profiler's CLSID (`corprof_record::CLSID`; were they to differ, the runtime would
/// not load the profiler and every test here would fail).
pub const CLSID: &str = "7C1E9A53-2D4B-4F86-B0A7-5E3C9D1F8A26";

/// A profile's text form read back (corprof_record::profile's format, parsed here as a reader of
/// the file would): frames (root first) → (value, count).
pub struct Profile {
    pub unit: String,
    pub stacks: BTreeMap<Vec<String>, (u64, u64)>,
    pub text: String,
    /// What the app wrote to stderr.
    pub stderr: String,
}

impl Profile {
    pub fn parse(text: &str) -> Profile {
        let mut lines = text.lines();
        let unit = lines.next().and_then(|l| l.strip_prefix("corprof-profile ")).unwrap_or_else(|| panic!("{text}"));
        let mut stacks = BTreeMap::new();
        for line in lines {
            let fields: Vec<&str> = line.splitn(3, '\t').collect();
            let [value, count, frames] = fields[..] else { panic!("{line:?}") };
            let frames = frames.split(';').map(str::to_string).collect();
            let old = stacks.insert(frames, (value.parse().unwrap(), count.parse().unwrap()));
            assert!(old.is_none(), "{line:?} twice");
        }
        Profile { unit: unit.to_string(), stacks, text: text.to_string(), stderr: String::new() }
    }
}

/// Runs `app` with `args` under the record profiler with the `CORPROF_RECORD_*` `settings`
/// (OUT is added), checks it printed `expected_stdout` and exited 0, and reads the profile.
pub fn record(
    runtime: &'static str,
    app: &str,
    args: &[&str],
    settings: &[(&'static str, &str)],
    expected_stdout: &str,
    test: &str,
) -> Profile {
    let lib = profiler_lib("corprof_record_profiler");
    let out = TempFile::new(test);
    let mut env = profiler_env(CLSID, &lib);
    env.extend(settings.iter().map(|(k, v)| (*k, v.to_string())));
    env.push(("CORPROF_RECORD_OUT", out.path().to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = run_app_with_args(runtime, app, args, &env);
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), expected_stdout), "{}", run.describe());
    let text = out.read().unwrap_or_else(|| panic!("no profile: {}", run.describe()));
    Profile { stderr: run.stderr, ..Profile::parse(&text) }
}
