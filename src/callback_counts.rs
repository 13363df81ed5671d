//! `CallbackCounts`: one atomic counter per callback of the header, for profilers that count
//! (the counter example, tests, benchmarks). A fixed-size array indexed by `Callback::index`,
//! so a bump compiles to a single atomic increment.

use crate::Callback;
use std::sync::atomic::{AtomicU64, Ordering};

/// One counter per callback of the header, bumped and read without a lock.
pub struct CallbackCounts {
    counts: [AtomicU64; Callback::COUNT],
}

impl Default for CallbackCounts {
    fn default() -> Self {
        CallbackCounts { counts: [const { AtomicU64::new(0) }; Callback::COUNT] }
    }
}

impl CallbackCounts {
    /// Adds one to `callback`'s counter.
    #[inline(always)]
    pub fn bump(&self, callback: Callback) {
        self.counts[callback.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// `callback`'s count so far.
    pub fn get(&self, callback: Callback) -> u64 {
        self.counts[callback.index()].load(Ordering::Relaxed)
    }

    /// `(callback, count)` for every non-zero counter, in vtable order.
    pub fn nonzero(&self) -> Vec<(Callback, u64)> {
        Callback::ALL.iter().map(|c| (*c, self.get(*c))).filter(|(_, n)| *n > 0).collect()
    }

    /// `<CallbackName> <count>` lines, one per non-zero counter, in vtable order.
    pub fn to_lines(&self) -> String {
        self.nonzero().iter().map(|(c, n)| format!("{} {n}\n", c.name())).collect()
    }

    /// Writes [`CallbackCounts::to_lines`] to the file named by the env var `var` (only a new or
    /// regular file: [`crate::files::write_regular`]), else stderr.
    pub fn write_to_env_file(&self, var: &str) -> std::io::Result<()> {
        let text = self.to_lines();
        match std::env::var_os(var) {
            Some(path) => crate::files::write_regular(path.as_ref(), text.as_bytes()),
            None => std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_lines_follow_vtable_order() {
        let t = CallbackCounts::default();
        t.bump(Callback::Shutdown);
        t.bump(Callback::Initialize);
        t.bump(Callback::Initialize);
        assert_eq!(t.get(Callback::Initialize), 2);
        assert_eq!(t.to_lines(), "Initialize 2\nShutdown 1\n");
    }
}
