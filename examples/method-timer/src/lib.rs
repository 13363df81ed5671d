//! Times the methods `METHOD_TIMER_METHODS` names (`Namespace.Type::Method` patterns, `*` for any
//! run of characters, separated by `,`), wrapped with Rust handlers through `corprof::instrument`,
//! and at shutdown writes one line per method to `METHOD_TIMER_OUT` (else stderr):
//! `<Namespace.Type::Method> calls=<n> threw=<n> total_us=<x> max_us=<x>`.
#![forbid(unsafe_code)]

use corprof::instrument::{Call, Handler, Instrumentation, Method, Outcome, Target};
use corprof::sync::lock;
use corprof::types::COR_PRF_MONITOR;
use corprof::{CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub const CLSID: corprof::GUID = corprof::GUID::parse("6E2B8D41-7C35-4A9F-B1D0-5E8A2C4F7B19");

#[derive(Default)]
struct Times {
    calls: u64,
    threw: u64,
    total_ns: u64,
    max_ns: u64,
}

/// The handler: `begin` hands its start time to `end`, which adds the call up.
struct Timer {
    start: Instant,
    times: Arc<Mutex<BTreeMap<String, Times>>>,
}

impl Handler for Timer {
    fn begin(&self, _: &Call<'_>) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
    fn end(&self, method: &Method, began: u64, outcome: Outcome) {
        let ns = (self.start.elapsed().as_nanos() as u64).saturating_sub(began);
        let mut times = lock(&self.times);
        let t = times.entry(method.name().to_owned()).or_default();
        t.calls += 1;
        t.threw += u64::from(outcome == Outcome::Threw);
        t.total_ns += ns;
        t.max_ns = t.max_ns.max(ns);
    }
}

#[derive(Default)]
pub struct MethodTimer {
    times: Arc<Mutex<BTreeMap<String, Times>>>,
}

impl CorProfilerCallback for MethodTimer {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::NONE)?;
        let mut wrapping = Instrumentation::new();
        let methods = std::env::var("METHOD_TIMER_METHODS").unwrap_or_default();
        for pattern in methods.split(',').filter(|p| !p.is_empty()) {
            let target = Target::parse(pattern).map_err(|e| {
                eprintln!("method-timer: {e}");
                HResult::E_INVALIDARG
            })?;
            let timer = Timer { start: Instant::now(), times: Arc::clone(&self.times) };
            wrapping.wrap(target, timer).map_err(|_| HResult::E_FAIL)?;
        }
        wrapping.start(&info).map_err(|_| HResult::E_FAIL)?;
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let times = lock(&self.times);
        let lines: String = times
            .iter()
            .map(|(name, t)| {
                let (total, max) = (t.total_ns as f64 / 1e3, t.max_ns as f64 / 1e3);
                format!("{name} calls={} threw={} total_us={total:.1} max_us={max:.1}\n", t.calls, t.threw)
            })
            .collect();
        match std::env::var_os("METHOD_TIMER_OUT") {
            Some(path) => corprof::files::write_regular(path.as_ref(), lines.as_bytes()).map_err(|_| HResult::E_FAIL),
            None => {
                eprint!("{lines}");
                Ok(())
            }
        }
    }
}

corprof::export_profiler!(MethodTimer, CLSID);
