//! callback-counter: counts every profiler callback the runtime makes.
//!
//! Load it with `CORECLR_ENABLE_PROFILING=1`, `CORECLR_PROFILER={CLSID}` and
//! `CORECLR_PROFILER_PATH=…/libcallback_counter.so`. Settings:
//! - `CORPROF_EVENT_MASK`: the COR_PRF_MONITOR mask, decimal or `0x` hex (default: [`DEFAULT_MASK`]);
//! - `CORPROF_COUNTS_OUT`: where Shutdown writes `<CallbackName> <count>` lines (default: stderr).

use corprof::interfaces::ICorProfilerInfo;
use corprof::types::COR_PRF_MONITOR;
use corprof::{Callback, CorProfilerCallback, HResult, IUnknown, Result};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// The CLSID this profiler answers to.
pub const CLSID: &str = "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11";

/// Loads, JIT, exceptions, GC, threads and runtime suspensions.
pub const DEFAULT_MASK: u32 = COR_PRF_MONITOR::COR_PRF_MONITOR_CLASS_LOADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_MODULE_LOADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_ASSEMBLY_LOADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_APPDOMAIN_LOADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_JIT_COMPILATION.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_EXCEPTIONS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_GC.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_THREADS.0
    | COR_PRF_MONITOR::COR_PRF_MONITOR_SUSPENDS.0;

/// Parses `123` or `0x7b`.
pub fn parse_mask(text: &str) -> Option<u32> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// One counter per callback, indexed by [`Callback::index`]. A fixed-size array, so the index is
/// provably in bounds and each callback costs one atomic increment (see BENCHMARKS.md).
pub struct Counter {
    counts: [AtomicU64; Callback::COUNT],
}

impl Default for Counter {
    fn default() -> Self {
        Counter { counts: [const { AtomicU64::new(0) }; Callback::COUNT] }
    }
}

impl Counter {
    /// `(callback, count)` for every callback that fired, in vtable order.
    pub fn fired(&self) -> Vec<(Callback, u64)> {
        Callback::ALL
            .iter()
            .map(|c| (*c, self.counts[c.index()].load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    fn report(&self) -> std::io::Result<()> {
        let mut text = String::new();
        for (c, n) in self.fired() {
            text.push_str(&format!("{} {n}\n", c.name()));
        }
        match std::env::var_os("CORPROF_COUNTS_OUT") {
            Some(path) => std::fs::write(path, text),
            None => std::io::stderr().write_all(text.as_bytes()),
        }
    }
}

impl CorProfilerCallback for Counter {
    fn before_callback(&self, callback: Callback) {
        self.counts[callback.index()].fetch_add(1, Ordering::Relaxed);
    }

    fn initialize(&self, info: &IUnknown) -> Result<()> {
        let mask = match std::env::var("CORPROF_EVENT_MASK") {
            Ok(text) => parse_mask(&text).unwrap_or_else(|| {
                eprintln!("callback-counter: CORPROF_EVENT_MASK={text:?} is not a number; using the default");
                DEFAULT_MASK
            }),
            Err(_) => DEFAULT_MASK,
        };
        let info = info.query::<ICorProfilerInfo>()?;
        HResult(unsafe { info.SetEventMask(mask) }).ok()
    }

    fn shutdown(&self) -> Result<()> {
        self.report().map_err(|e| {
            eprintln!("callback-counter: cannot write the counts: {e}");
            HResult::E_FAIL
        })
    }
}

corprof::export_profiler!(Counter, "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_parse_in_decimal_and_hex() {
        assert_eq!(parse_mask("0x20"), Some(32));
        assert_eq!(parse_mask(" 96 "), Some(96));
        assert_eq!(parse_mask("0xZZ"), None);
        assert_eq!(parse_mask("ten"), None);
    }

    #[test]
    fn the_clsid_constant_is_the_exported_one() {
        assert_eq!(corprof::GUID::parse(CLSID).to_string(), CLSID);
    }
}
