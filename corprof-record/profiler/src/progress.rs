//! The counts so far, for the command's live line on a terminal: with
//! [`corprof_record::settings::PROGRESS`] the watch thread writes them to
//! `<OUT>`[`corprof_record::settings::PROGRESS_SUFFIX`] about once a second, one
//! `<number> <words>` line each.
//!
//! Each mode says what it counts ([`crate::Recording::progress`]); the cpu mode's samplers add
//! to [`SAMPLES`] as they record, so they need no more than that one addition.

use std::sync::atomic::{AtomicU64, Ordering};

/// cpu: the samples recorded so far (their weights, as the profile adds them up).
static SAMPLES: AtomicU64 = AtomicU64::new(0);

/// One count and what it counts (`samples`, `dropped`).
pub type Count = (u64, &'static str);

/// cpu: `weight` more samples were recorded.
pub(crate) fn add_samples(weight: u64) {
    SAMPLES.fetch_add(weight, Ordering::Relaxed);
}

/// Starts the cpu counts from zero (a library still loaded from an earlier attach keeps them).
pub(crate) fn reset() {
    SAMPLES.store(0, Ordering::Relaxed);
}

/// The cpu mode's counts: the samples, and those the signal sampler dropped (its ring full; the
/// suspension sampler drops none).
pub(crate) fn cpu() -> Vec<Count> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    let dropped = crate::signal::DROPPED.load(Ordering::Relaxed);
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    let dropped = 0;
    vec![(SAMPLES.load(Ordering::Relaxed), "samples"), (dropped, "dropped")]
}

/// The file's text: one `<number> <words>` line per count.
pub(crate) fn text(counts: &[Count]) -> String {
    counts.iter().map(|(n, what)| format!("{n} {what}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_count() {
        assert_eq!(text(&[(1234, "samples"), (0, "dropped")]), "1234 samples\n0 dropped\n");
        assert_eq!(text(&[]), "");
    }
}
