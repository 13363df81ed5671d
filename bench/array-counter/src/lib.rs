//! examples/callback-counter with one change: the counts live in a fixed-size array inside the
//! profiler instead of a `Vec`. Every thunk indexes it with a constant, so the bounds check (and
//! with it the only panic path, and the stack frame the panic call needs) disappears; what is
//! left is the C reference's code. Same settings (`CORPROF_EVENT_MASK`, `CORPROF_COUNTS_OUT`)
//! and output; CLSID 6E0D9C1B-2A3F-4B5C-8D7E-9F0A1B2C3D4E. Built and measured by scripts/bench.

use corprof::interfaces::ICorProfilerInfo;
use corprof::types::COR_PRF_MONITOR;
use corprof::{Callback, CorProfilerCallback, HResult, IUnknown, Result};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

const CALLBACKS: usize = Callback::ALL.len();

/// callback-counter's DEFAULT_MASK: loads, JIT, exceptions, GC, threads, suspensions.
const DEFAULT_MASK: u32 = COR_PRF_MONITOR::COR_PRF_MONITOR_CLASS_LOADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_MODULE_LOADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_ASSEMBLY_LOADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_APPDOMAIN_LOADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_JIT_COMPILATION.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_EXCEPTIONS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_GC.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_THREADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_SUSPENDS.0;

fn parse_mask(text: &str) -> Option<u32> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

struct ArrayCounter {
    counts: [AtomicU64; CALLBACKS],
}

impl Default for ArrayCounter {
    fn default() -> Self {
        ArrayCounter { counts: [const { AtomicU64::new(0) }; CALLBACKS] }
    }
}

impl CorProfilerCallback for ArrayCounter {
    fn before_callback(&self, callback: Callback) {
        self.counts[callback.index()].fetch_add(1, Ordering::Relaxed);
    }

    fn initialize(&self, info: &IUnknown) -> Result<()> {
        let mask = match std::env::var("CORPROF_EVENT_MASK") {
            Ok(text) => parse_mask(&text).unwrap_or(DEFAULT_MASK),
            Err(_) => DEFAULT_MASK,
        };
        let info = info.query::<ICorProfilerInfo>()?;
        HResult(unsafe { info.SetEventMask(mask) }).ok()
    }

    fn shutdown(&self) -> Result<()> {
        let mut text = String::new();
        for c in Callback::ALL {
            let n = self.counts[c.index()].load(Ordering::Relaxed);
            if n > 0 {
                text.push_str(&format!("{} {n}\n", c.name()));
            }
        }
        let written = match std::env::var_os("CORPROF_COUNTS_OUT") {
            Some(path) => std::fs::write(path, text),
            None => std::io::stderr().write_all(text.as_bytes()),
        };
        written.map_err(|_| HResult::E_FAIL)
    }
}

corprof::export_profiler!(ArrayCounter, "6E0D9C1B-2A3F-4B5C-8D7E-9F0A1B2C3D4E");
