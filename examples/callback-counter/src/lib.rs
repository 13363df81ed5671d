//! callback-counter: counts every profiler callback the runtime makes.
//!
//! Load it with `CORECLR_ENABLE_PROFILING=1`, `CORECLR_PROFILER={CLSID}` and
//! `CORECLR_PROFILER_PATH=…/libcallback_counter.so`. Settings:
//! - `CORPROF_EVENT_MASK`: the COR_PRF_MONITOR mask, decimal or `0x` hex (default: [`DEFAULT_MASK`]);
//! - `CORPROF_EVENT_MASK_HIGH`: the COR_PRF_HIGH_MONITOR mask, the same way (default: none);
//! - `CORPROF_COUNTS_OUT`: where Shutdown writes `<CallbackName> <count>` lines (default: stderr).
//!
//! It can also attach to a running process (`corprof-attach --pid PID --clsid {CLSID} --profiler
//! …/libcallback_counter.so --data 'CORPROF_COUNTS_OUT=/tmp/counts.txt'`): the client data holds
//! the same settings as `KEY=VALUE` pairs separated by `;` or newlines, and wins over the target's
//! environment. Attached, the mask keeps only what the runtime allows after attach
//! ([`COR_PRF_MONITOR::ALLOWABLE_AFTER_ATTACH`], which holds all of [`DEFAULT_MASK`]),
//! and the counts are written at Shutdown as at launch (the counter never asks to detach).

use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR};
use corprof::{Callback, CallbackCounts, CorProfilerCallback, HResult, IUnknown, ProfilerInfo, Result};
use std::path::PathBuf;
use std::sync::OnceLock;

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

/// The settings an attach passes as client data: `KEY=VALUE` pairs separated by `;` or newlines
/// (blank pairs are skipped); the error says which pair is malformed, or that the bytes are not UTF-8.
pub fn parse_client_data(data: &[u8]) -> std::result::Result<Vec<(String, String)>, String> {
    let text = std::str::from_utf8(data).map_err(|e| format!("the client data is not UTF-8: {e}"))?;
    text.split([';', '\n'])
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => Ok((key.trim().to_string(), value.trim().to_string())),
            None => Err(format!("{pair:?} in the client data is not KEY=VALUE")),
        })
        .collect()
}

/// One counter per callback: each callback costs one atomic increment (see BENCHMARKS.md).
#[derive(Default)]
pub struct Counter {
    counts: CallbackCounts,
    /// `CORPROF_COUNTS_OUT` from an attach's client data, which wins over the environment.
    counts_out: OnceLock<PathBuf>,
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
        let mask = mask_setting(std::env::var("CORPROF_EVENT_MASK").ok());
        let info = ProfilerInfo::from_unknown(info)?;
        match std::env::var("CORPROF_EVENT_MASK_HIGH").ok() {
            Some(text) => match parse_mask(&text) {
                Some(high) => info.set_event_mask2(mask, COR_PRF_HIGH_MONITOR(high.0)),
                None => {
                    eprintln!("callback-counter: CORPROF_EVENT_MASK_HIGH={text:?} is not a number");
                    Err(HResult::E_INVALIDARG)
                }
            },
            None => info.set_event_mask(mask),
        }
    }

    fn initialize_for_attach(&self, info: &IUnknown, client_data: &[u8]) -> Result<()> {
        let settings = parse_client_data(client_data).map_err(|why| {
            eprintln!("callback-counter: {why}");
            HResult::E_INVALIDARG
        })?;
        let mut mask_text = std::env::var("CORPROF_EVENT_MASK").ok();
        for (key, value) in settings {
            match key.as_str() {
                "CORPROF_EVENT_MASK" => mask_text = Some(value),
                "CORPROF_COUNTS_OUT" => {
                    let _ = self.counts_out.set(PathBuf::from(value));
                }
                _ => eprintln!("callback-counter: ignoring the unknown setting {key:?} in the client data"),
            }
        }
        let wanted = mask_setting(mask_text);
        let allowed = COR_PRF_MONITOR::ALLOWABLE_AFTER_ATTACH;
        let refused = COR_PRF_MONITOR(wanted.0 & !allowed.0);
        if !refused.is_empty() {
            eprintln!("callback-counter: attached, so leaving out {refused} (not allowed after attach)");
        }
        let info = ProfilerInfo::from_unknown(info)?;
        let mask = wanted & allowed;
        // A newer header's ALLOWABLE_AFTER_ATTACH (runtime-info15's) lets these two in; a runtime
        // from before that change (8.0.4, 3.1.23) still refuses them after attach.
        let newer_rule = COR_PRF_MONITOR::COR_PRF_DISABLE_INLINING | COR_PRF_MONITOR::COR_PRF_DISABLE_OPTIMIZATIONS;
        match info.set_event_mask(mask) {
            Err(e) if mask.intersects(newer_rule) => {
                let moved = COR_PRF_MONITOR(mask.0 & newer_rule.0);
                eprintln!("callback-counter: this runtime refused {moved} after attach ({e}): leaving them out");
                info.set_event_mask(COR_PRF_MONITOR(mask.0 & !newer_rule.0))
            }
            answer => answer,
        }
    }

    fn shutdown(&self) -> Result<()> {
        let written = match self.counts_out.get() {
            Some(path) => corprof::files::write_regular(path, self.counts.to_lines().as_bytes()),
            None => self.counts.write_to_env_file("CORPROF_COUNTS_OUT"),
        };
        written.map_err(|e| {
            eprintln!("callback-counter: cannot write the counts: {e}");
            HResult::E_FAIL
        })
    }
}

/// The mask a `CORPROF_EVENT_MASK` setting asks for, or [`DEFAULT_MASK`] without one.
fn mask_setting(text: Option<String>) -> COR_PRF_MONITOR {
    match text {
        Some(text) => parse_mask(&text).unwrap_or_else(|| {
            eprintln!("callback-counter: CORPROF_EVENT_MASK={text:?} is not a number; using the default");
            DEFAULT_MASK
        }),
        None => DEFAULT_MASK,
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

    #[test]
    fn client_data_is_key_value_pairs() {
        let pairs = |v: &[(&str, &str)]| v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        assert_eq!(parse_client_data(b""), Ok(vec![]));
        assert_eq!(
            parse_client_data(b"CORPROF_EVENT_MASK=0x20; CORPROF_COUNTS_OUT = /tmp/a b\n;"),
            Ok(pairs(&[("CORPROF_EVENT_MASK", "0x20"), ("CORPROF_COUNTS_OUT", "/tmp/a b")]))
        );
        assert_eq!(parse_client_data(b"oops"), Err("\"oops\" in the client data is not KEY=VALUE".to_string()));
        assert!(parse_client_data(&[0xFF]).unwrap_err().starts_with("the client data is not UTF-8"));
    }

    #[test]
    fn the_default_mask_is_allowed_after_attach() {
        assert!(COR_PRF_MONITOR::ALLOWABLE_AFTER_ATTACH.contains(DEFAULT_MASK));
    }
}
