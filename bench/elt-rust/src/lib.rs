//! The Rust row of `scripts/bench-elt`: what bench/reference-elt/elt.c does, on corprof's
//! function hooks. The mapper gives each function the index of its counters; each hook does one
//! relaxed atomic increment. `CORPROF_ELT_MODE=fast|slow|unhooked` as in the C reference (slow:
//! the runtime's with-info path; unhooked: the mapper declines every function), and at Shutdown
//! the same report, in the same format, to the file in `CORPROF_ELT_OUT`.
#![deny(unsafe_code)]

use corprof::hooks::{self, HookFrame};
use corprof::types::FunctionID;
use corprof::{CorProfilerCallback, FunctionHooks, HookMode, IUnknown, ProfilerInfo, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("9B3E5D17-2C4A-4F86-B1E0-8D6A2F4C7E52");

/// One slot per mapped function, as in the C reference: a flat array indexed by the mapper's
/// number, masked so that the index needs no bounds check (slot numbers wrap; the benchmark maps
/// about 600 functions).
const SLOTS: usize = 1 << 12;

struct Counter {
    enters: AtomicU64,
    leaves: AtomicU64,
    tailcalls: AtomicU64,
    /// Nonzero for a method of EltBench.dll.
    app_token: AtomicU32,
}

impl Counter {
    const fn new() -> Counter {
        Counter {
            enters: AtomicU64::new(0),
            leaves: AtomicU64::new(0),
            tailcalls: AtomicU64::new(0),
            app_token: AtomicU32::new(0),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Fast,
    Slow,
    Unhooked,
}

pub struct EltBench {
    /// In the profiler object itself, which the hooks are handed: a hook reaches its slot with
    /// no other load (a static would be read through the GOT in a shared library).
    counters: [Counter; SLOTS],
    info: OnceLock<ProfilerInfo>,
    mode: Mode,
    mapped: AtomicUsize,
}

impl Default for EltBench {
    fn default() -> Self {
        let mode = match std::env::var("CORPROF_ELT_MODE").as_deref() {
            Ok("slow") => Mode::Slow,
            Ok("unhooked") => Mode::Unhooked,
            _ => Mode::Fast,
        };
        EltBench {
            counters: [const { Counter::new() }; SLOTS],
            info: OnceLock::new(),
            mode,
            mapped: AtomicUsize::new(0),
        }
    }
}

impl EltBench {
    /// The method's token when it belongs to EltBench.dll.
    fn app_token(&self, function: FunctionID) -> Option<u32> {
        let info = self.info.get()?;
        let f = info.get_function_info(function).ok()?;
        let module = info.get_module_info(f.module_id).ok()?;
        module.name.ends_with("/EltBench.dll").then_some(f.token)
    }

    fn report(&self) -> std::io::Result<()> {
        let (mut enters, mut leaves, mut tailcalls) = (0, 0, 0);
        let mut app: BTreeMap<u32, [u64; 3]> = BTreeMap::new();
        let used = self.mapped.load(Ordering::Relaxed).min(SLOTS);
        for c in &self.counters[..used] {
            let counts = [&c.enters, &c.leaves, &c.tailcalls].map(|n| n.load(Ordering::Relaxed));
            enters += counts[0];
            leaves += counts[1];
            tailcalls += counts[2];
            let token = c.app_token.load(Ordering::Relaxed);
            if token != 0 {
                // Summed per token: the runtime maps each new code version of a method again.
                let sum = app.entry(token).or_default();
                for (s, n) in sum.iter_mut().zip(counts) {
                    *s += n;
                }
            }
        }
        let mode = match self.mode {
            Mode::Fast => "fast",
            Mode::Slow => "slow",
            Mode::Unhooked => "unhooked",
        };
        let mapped = self.mapped.load(Ordering::Relaxed);
        let mut text =
            format!("mode {mode}\nmapped {mapped}\nenters {enters}\nleaves {leaves}\ntailcalls {tailcalls}\n");
        for (token, [e, l, t]) in app {
            text.push_str(&format!("app {token:08x} {e} {l} {t}\n"));
        }
        match std::env::var_os("CORPROF_ELT_OUT") {
            Some(path) => std::fs::write(path, text),
            None => std::io::stderr().lock().write_all(text.as_bytes()),
        }
    }
}

impl FunctionHooks for EltBench {
    type Data = usize;

    fn map_function(&self, function: FunctionID) -> Option<usize> {
        let index = self.mapped.fetch_add(1, Ordering::Relaxed) % SLOTS;
        self.counters[index].app_token.store(self.app_token(function).unwrap_or(0), Ordering::Relaxed);
        (self.mode != Mode::Unhooked).then_some(index)
    }

    #[inline]
    fn enter(&self, index: usize, _frame: &HookFrame<'_>) {
        self.counters[index % SLOTS].enters.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    fn leave(&self, index: usize, _frame: &HookFrame<'_>) {
        self.counters[index % SLOTS].leaves.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    fn tailcall(&self, index: usize, _frame: &HookFrame<'_>) {
        self.counters[index % SLOTS].tailcalls.fetch_add(1, Ordering::Relaxed);
    }
}

impl CorProfilerCallback for EltBench {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        let info = self.info.get_or_init(|| info);
        let mode = if self.mode == Mode::Slow { HookMode::WithInfo } else { HookMode::Fast };
        hooks::install(self, info, mode)
    }

    fn shutdown(&self) -> Result<()> {
        if let Err(e) = self.report() {
            eprintln!("elt-bench: cannot write the counts: {e}");
        }
        Ok(())
    }
}

corprof::export_profiler!(EltBench, CLSID);
