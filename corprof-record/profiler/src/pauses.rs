//! How long the cpu mode holds the app still: each tick's pause (from asking the runtime to
//! suspend to its resuming), kept in a histogram exact to the microsecond up to
//! [`Pauses::EXACT_UP_TO_US`], and summed up in one line.
//!
//! The command prints the line after the recording (`corprof: cpu: …`), so whoever profiles sees
//! what the profiler cost the app; scripts/bench-record reads its p50 and p99.

use std::time::Duration;

/// Pause lengths in microseconds.
#[derive(Default)]
pub struct Pauses {
    /// `counts[us]` pauses of `us` microseconds; the last bucket holds every longer one.
    counts: Vec<u32>,
    total: u64,
    longest: Duration,
}

impl Pauses {
    /// Pauses up to this many microseconds are kept exactly (longer ones count in one bucket).
    pub const EXACT_UP_TO_US: usize = 100_000;

    /// Counts one pause.
    pub fn add(&mut self, pause: Duration) {
        if self.counts.is_empty() {
            self.counts = vec![0; Self::EXACT_UP_TO_US + 2];
        }
        let us = (pause.as_micros() as usize).min(Self::EXACT_UP_TO_US + 1);
        self.counts[us] = self.counts[us].saturating_add(1);
        self.total += 1;
        self.longest = self.longest.max(pause);
    }

    /// The pause `q` (0..=1) of the way through, in whole microseconds (`None` without pauses);
    /// beyond [`Self::EXACT_UP_TO_US`] it is the longest pause.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.total == 0 {
            return None;
        }
        // The smallest pause with at least `q` of all pauses at or below it (nearest rank).
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (us, &count) in self.counts.iter().enumerate() {
            seen += u64::from(count);
            if seen >= rank {
                return Some(if us > Self::EXACT_UP_TO_US { self.longest } else { Duration::from_micros(us as u64) });
            }
        }
        Some(self.longest)
    }

    /// How many pauses were counted.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// `p50 X ms, p99 Y ms, longest Z ms` (`-` for each without pauses).
    pub fn quantiles(&self) -> String {
        let ms = |d: Option<Duration>| d.map_or_else(|| "-".to_string(), |d| format!("{:.3}", d.as_secs_f64() * 1e3));
        format!(
            "p50 {} ms, p99 {} ms, longest {} ms",
            ms(self.quantile(0.50)),
            ms(self.quantile(0.99)),
            ms((self.total > 0).then_some(self.longest)),
        )
    }

    /// `N ticks of the suspension sampler; the app paused per tick (suspend to resume) p50 X ms,
    /// p99 Y ms, longest Z ms`.
    pub fn summary(&self) -> String {
        format!(
            "{} ticks of the suspension sampler; the app paused per tick (suspend to resume) {}",
            self.total,
            self.quantiles()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_ranks() {
        let mut p = Pauses::default();
        assert_eq!(p.quantile(0.5), None);
        assert!(
            p.summary().starts_with("0 ticks of the suspension sampler;") && p.summary().contains("p50 - ms"),
            "{}",
            p.summary()
        );
        // 1..=100 µs once each: p50 is the 50th, p99 the 99th, p100 the last.
        for us in (1..=100).rev() {
            p.add(Duration::from_micros(us));
        }
        assert_eq!(p.quantile(0.5), Some(Duration::from_micros(50)));
        assert_eq!(p.quantile(0.99), Some(Duration::from_micros(99)));
        assert_eq!(p.quantile(1.0), Some(Duration::from_micros(100)));
        assert_eq!(p.quantile(0.0), Some(Duration::from_micros(1)));
        assert_eq!(
            p.summary(),
            "100 ticks of the suspension sampler; the app paused per tick (suspend to resume) p50 0.050 ms, p99 0.099 ms, longest 0.100 ms"
        );
    }

    #[test]
    fn long_pauses_count_in_the_last_bucket_as_the_longest() {
        let mut p = Pauses::default();
        p.add(Duration::from_micros(10));
        p.add(Duration::from_secs(3));
        p.add(Duration::from_secs(2));
        assert_eq!(p.quantile(0.3), Some(Duration::from_micros(10)));
        assert_eq!(p.quantile(0.99), Some(Duration::from_secs(3)));
    }
}
