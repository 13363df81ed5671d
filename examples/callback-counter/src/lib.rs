//! callback-counter: counts every profiler callback the runtime makes.
//!
//! Load it with `CORECLR_ENABLE_PROFILING=1`, `CORECLR_PROFILER={CLSID}` and
//! `CORECLR_PROFILER_PATH=…/libcallback_counter.so`. Settings:
//! - `CORPROF_EVENT_MASK`: the COR_PRF_MONITOR mask, decimal or `0x` hex (default: [`DEFAULT_MASK`]);
//! - `CORPROF_COUNTS_OUT`: where Shutdown writes `<CallbackName> <count>` lines (default: stderr).

use corprof::types::COR_PRF_MONITOR;
use corprof::{Callback, CallbackCounts, CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11");

/// Loads, JIT, exceptions, GC, threads and runtime suspensions.
pub const DEFAULT_MASK: COR_PRF_MONITOR = COR_PRF_MONITOR::CLASS_LOADS
    .union(COR_PRF_MONITOR::MODULE_LOADS)
    .union(COR_PRF_MONITOR::ASSEMBLY_LOADS)
    .union(COR_PRF_MONITOR::APPDOMAIN_LOADS)
    .union(COR_PRF_MONITOR::JIT_COMPILATION)
    .union(COR_PRF_MONITOR::EXCEPTIONS)
    .union(COR_PRF_MONITOR::GC)
    .union(COR_PRF_MONITOR::THREADS)
    .union(COR_PRF_MONITOR::SUSPENDS);

/// Parses `123` or `0x7b`.
pub fn parse_mask(text: &str) -> Option<COR_PRF_MONITOR> {
    let t = text.trim();
    let bits = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    };
    bits.map(COR_PRF_MONITOR)
}

/// One counter per callback: each callback costs one atomic increment (see BENCHMARKS.md).
#[derive(Default)]
pub struct Counter {
    counts: CallbackCounts,
}

impl Counter {
    /// `(callback, count)` for every callback that fired, in vtable order.
    pub fn fired(&self) -> Vec<(Callback, u64)> {
        self.counts.nonzero()
    }
}

impl CorProfilerCallback for Counter {
    fn before_callback(&self, callback: Callback) {
        self.counts.bump(callback);
    }

    fn initialize(&self, info: &IUnknown) -> Result<()> {
        let mask = match std::env::var("CORPROF_EVENT_MASK") {
            Ok(text) => parse_mask(&text).unwrap_or_else(|| {
                eprintln!("callback-counter: CORPROF_EVENT_MASK={text:?} is not a number; using the default");
                DEFAULT_MASK
            }),
            Err(_) => DEFAULT_MASK,
        };
        ProfilerInfo::from_unknown(info)?.set_event_mask(mask)
    }

    fn shutdown(&self) -> Result<()> {
        self.counts.write_to_env_file("CORPROF_COUNTS_OUT").map_err(|e| {
            eprintln!("callback-counter: cannot write the counts: {e}");
            HResult::E_FAIL
        })
    }
}

corprof::export_profiler!(Counter, CLSID);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_parse_in_decimal_and_hex() {
        let jit = COR_PRF_MONITOR::JIT_COMPILATION;
        assert_eq!(parse_mask("0x20"), Some(jit));
        assert_eq!(parse_mask(" 96 "), Some(jit | COR_PRF_MONITOR::EXCEPTIONS));
        assert_eq!(parse_mask("0xZZ"), None);
        assert_eq!(parse_mask("ten"), None);
    }
}
