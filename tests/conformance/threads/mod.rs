//! Conformance scenario "threads", after the runtime's
//! `src/tests/profiler/unittest/enumthreads.cs`: ThreadNameChanged names the app's workers;
//! EnumThreads inside RuntimeSuspendFinished lists exactly the threads created and not yet
//! destroyed, and the suspension of the app's induced GC lists all three named workers.

use crate::support::{Recorder, lock};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, ThreadID};
use corprof::{CorProfilerCallback, IUnknown, Result, WStr};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

#[derive(Default)]
pub struct Threads {
    rec: Recorder,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    live: BTreeSet<ThreadID>,
    workers: BTreeMap<ThreadID, String>,
    suspensions: u32,
    mismatches: Vec<String>,
    all_workers_enumerated: bool,
}

impl Threads {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl CorProfilerCallback for Threads {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let low = COR_PRF_MONITOR::THREADS | COR_PRF_MONITOR::SUSPENDS | COR_PRF_MONITOR::GC;
        self.rec.start(unknown, low, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn thread_created(&self, thread: ThreadID) -> Result<()> {
        self.state().live.insert(thread);
        Ok(())
    }

    fn thread_destroyed(&self, thread: ThreadID) -> Result<()> {
        self.state().live.remove(&thread);
        Ok(())
    }

    fn thread_name_changed(&self, thread: ThreadID, name: Option<WStr<'_>>) -> Result<()> {
        let name = name.map(|n| n.to_string()).unwrap_or_default();
        if name.starts_with("conf-") {
            self.state().workers.insert(thread, name);
        }
        Ok(())
    }

    fn runtime_suspend_finished(&self) -> Result<()> {
        let enumerated: BTreeSet<ThreadID> = self.rec.info()?.enum_threads()?.collect();
        let mut s = self.state();
        s.suspensions += 1;
        if enumerated != s.live {
            let line = format!("suspension {}: {} enumerated, {} live", s.suspensions, enumerated.len(), s.live.len());
            s.mismatches.push(line);
        }
        let all = s.workers.len() == 3 && s.workers.keys().all(|w| enumerated.contains(w));
        s.all_workers_enumerated |= all;
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let s = self.state();
        let mut names: Vec<&str> = s.workers.values().map(String::as_str).collect();
        names.sort_unstable();
        self.rec.say(format!("worker names: {}", names.join(", ")));
        self.rec.say(format!("suspensions seen: {}", s.suspensions > 0));
        self.rec.say(format!("EnumThreads != live threads at: {:?}", s.mismatches));
        self.rec.say(format!("a suspension enumerated all three workers: {}", s.all_workers_enumerated));
        drop(s);
        self.rec.finish()
    }
}
