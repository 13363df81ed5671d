//! The methods mode's recording: per wrapped method, its calls, the calls that ended by an
//! exception, and a histogram of call durations; and its text form, which the profiler writes
//! and the command reads.
//!
//! The histogram is log-linear: durations below 16 ns have a bucket each, and every power of two
//! above is cut into 16 buckets, so a bucket is at most 1/16 of its lower bound wide; a quantile
//! is the middle of its bucket (clamped to the largest duration seen), within 3.2% of the
//! duration it stands for. Durations of 2^44 ns (about 4.9 hours) and more share the last bucket;
//! the largest is also kept exactly.
//!
//! The text form: a first line `corprof-methods 1`, then one line per item, fields separated by
//! tabs (a tab or line break inside a name is written as a space):
//! - `method <name> <calls> <exceptions> <sum_ns> <max_ns> <bucket>:<count>,…` (buckets with a
//!   count only; none: `-`);
//! - `unmatched <pattern>`: a `--method` that named no method of any module loaded;
//! - `refused <name> <reason>`: a method named but left as written, and why.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// log2 of the buckets per power of two.
pub const SUB_BITS: u32 = 4;
/// Durations from `2^MAX_EXPONENT` ns on share the last bucket.
pub const MAX_EXPONENT: u32 = 44;
/// How many buckets a histogram has.
pub const BUCKETS: usize = (1 << SUB_BITS) * (MAX_EXPONENT - SUB_BITS + 1) as usize;

/// The bucket of a duration of `ns` nanoseconds.
pub fn bucket_of(ns: u64) -> usize {
    let sub = 1u64 << SUB_BITS;
    if ns < sub {
        return ns as usize;
    }
    let exponent = 63 - ns.leading_zeros();
    if exponent >= MAX_EXPONENT {
        return BUCKETS - 1;
    }
    let shift = exponent - SUB_BITS;
    // The top SUB_BITS + 1 bits: from `sub` to `2 * sub - 1`.
    let mantissa = (ns >> shift) as usize;
    shift as usize * sub as usize + mantissa
}

/// The durations bucket `b` holds: from the first value to the second, both included.
pub fn bucket_range(b: usize) -> (u64, u64) {
    let sub = 1usize << SUB_BITS;
    if b < sub {
        return (b as u64, b as u64);
    }
    let shift = (b / sub - 1) as u32;
    let mantissa = (b % sub + sub) as u64;
    let low = mantissa << shift;
    if b == BUCKETS - 1 {
        return (low, u64::MAX);
    }
    (low, low + (1u64 << shift) - 1)
}

/// One method's figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodLatency {
    /// `Namespace.Type::Method`.
    pub name: String,
    pub calls: u64,
    /// Calls that ended by an exception (counted in `calls` too).
    pub exceptions: u64,
    /// The sum of every call's duration, in nanoseconds.
    pub sum_ns: u64,
    /// The longest call, in nanoseconds.
    pub max_ns: u64,
    /// Calls per bucket ([`bucket_of`]), only buckets with a count.
    pub buckets: BTreeMap<usize, u64>,
}

impl MethodLatency {
    /// A method with no call yet.
    pub fn new(name: impl Into<String>) -> MethodLatency {
        MethodLatency { name: name.into(), ..MethodLatency::default() }
    }

    /// Adds one call of `ns` nanoseconds.
    pub fn add(&mut self, ns: u64, threw: bool) {
        self.calls += 1;
        self.exceptions += u64::from(threw);
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
        *self.buckets.entry(bucket_of(ns)).or_default() += 1;
    }

    /// Adds another's calls (the same method seen twice: an overload, another module).
    pub fn merge(&mut self, other: &MethodLatency) {
        self.calls = self.calls.saturating_add(other.calls);
        self.exceptions = self.exceptions.saturating_add(other.exceptions);
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        for (&b, &n) in &other.buckets {
            let c = self.buckets.entry(b).or_default();
            *c = c.saturating_add(n);
        }
    }

    /// The duration (ns) below which a fraction `q` (0 to 1) of the calls ended: the middle of
    /// the bucket that holds it, never more than the longest call. `None` without calls.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        let total: u64 = self.buckets.values().sum();
        if total == 0 {
            return None;
        }
        // The rank of the call that stands for `q` (1-based), as nearest-rank does.
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0u64;
        for (&b, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                let (low, high) = bucket_range(b);
                let high = high.min(self.max_ns);
                return Some((low as f64 + high.max(low) as f64) / 2.0);
            }
        }
        Some(self.max_ns as f64)
    }

    /// The mean duration (ns), `None` without calls.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.sum_ns as f64 / self.calls as f64)
    }
}

/// What the methods mode recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodsReport {
    /// One per method name, in name order.
    pub methods: Vec<MethodLatency>,
    /// The `--method` patterns that named nothing.
    pub unmatched: Vec<String>,
    /// Methods named but left as written, and why.
    pub refused: Vec<(String, String)>,
}

/// A text form that does not read, and where.
#[derive(Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

const HEADER: &str = "corprof-methods 1";

fn field(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

impl MethodsReport {
    /// A report of `methods` (merged by name: overloads and a method seen in two modules are one
    /// line), sorted by name.
    pub fn new(
        methods: impl IntoIterator<Item = MethodLatency>,
        unmatched: Vec<String>,
        refused: Vec<(String, String)>,
    ) -> MethodsReport {
        let mut by_name: BTreeMap<String, MethodLatency> = BTreeMap::new();
        for m in methods {
            match by_name.get_mut(&m.name) {
                Some(seen) => seen.merge(&m),
                None => {
                    by_name.insert(m.name.clone(), m);
                }
            }
        }
        MethodsReport { methods: by_name.into_values().collect(), unmatched, refused }
    }

    /// The text form (see the [module](self)).
    pub fn to_text(&self) -> String {
        let mut s = format!("{HEADER}\n");
        for m in &self.methods {
            let buckets: Vec<String> = m.buckets.iter().map(|(b, n)| format!("{b}:{n}")).collect();
            let buckets = if buckets.is_empty() { "-".to_string() } else { buckets.join(",") };
            let _ = writeln!(
                s,
                "method\t{}\t{}\t{}\t{}\t{}\t{buckets}",
                field(&m.name),
                m.calls,
                m.exceptions,
                m.sum_ns,
                m.max_ns
            );
        }
        for p in &self.unmatched {
            let _ = writeln!(s, "unmatched\t{}", field(p));
        }
        for (name, why) in &self.refused {
            let _ = writeln!(s, "refused\t{}\t{}", field(name), field(why));
        }
        s
    }

    /// Reads the text form; every number and bucket is checked (a bucket index out of range, a
    /// histogram whose counts are not the calls, is an error).
    pub fn from_text(text: &str) -> Result<MethodsReport, ParseError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        match lines.next() {
            Some((_, HEADER)) => {}
            _ => return Err(ParseError { line: 1, message: format!("the first line is not `{HEADER}`") }),
        }
        let mut report = MethodsReport::default();
        let mut methods = Vec::new();
        for (line, text) in lines.filter(|(_, l)| !l.is_empty()) {
            let bad = |message: String| ParseError { line, message };
            let fields: Vec<&str> = text.split('\t').collect();
            match fields.as_slice() {
                ["method", name, calls, exceptions, sum, max, buckets] => {
                    let number = |what: &str, v: &str| {
                        v.parse::<u64>().map_err(|_| bad(format!("{what} {v:?} is not a whole number")))
                    };
                    let mut m = MethodLatency {
                        name: name.to_string(),
                        calls: number("calls", calls)?,
                        exceptions: number("exceptions", exceptions)?,
                        sum_ns: number("sum_ns", sum)?,
                        max_ns: number("max_ns", max)?,
                        buckets: BTreeMap::new(),
                    };
                    if *buckets != "-" {
                        for pair in buckets.split(',') {
                            let (b, n) =
                                pair.split_once(':').ok_or_else(|| bad(format!("bucket {pair:?} is not B:N")))?;
                            let b = number("bucket", b)?;
                            let b = usize::try_from(b)
                                .ok()
                                .filter(|&b| b < BUCKETS)
                                .ok_or_else(|| bad(format!("bucket {b} is out of range (0 to {})", BUCKETS - 1)))?;
                            let n = number("count", n)?;
                            if m.buckets.insert(b, n).is_some() {
                                return Err(bad(format!("bucket {b} is given twice")));
                            }
                        }
                    }
                    let counted = m.buckets.values().try_fold(0u64, |a, &n| a.checked_add(n));
                    if counted != Some(m.calls) || m.exceptions > m.calls {
                        return Err(bad(format!("{name}: the histogram's counts do not add up to its calls")));
                    }
                    methods.push(m);
                }
                ["unmatched", pattern] => report.unmatched.push(pattern.to_string()),
                ["refused", name, why] => report.refused.push((name.to_string(), why.to_string())),
                _ => return Err(bad(format!("{text:?} is not a method, unmatched or refused line"))),
            }
        }
        Ok(MethodsReport::new(methods, report.unmatched, report.refused))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_duration_in_order_and_within_a_sixteenth() {
        let mut last = 0;
        for ns in (0..100_000u64).chain([1 << 30, (1 << 44) - 1, 1 << 44, u64::MAX]) {
            let b = bucket_of(ns);
            assert!(b >= last && b < BUCKETS, "{ns}: {b}");
            last = b;
            let (low, high) = bucket_range(b);
            assert!(low <= ns && ns <= high, "{ns} not in bucket {b} ({low}..={high})");
            if b < BUCKETS - 1 {
                assert!((high - low) * 16 <= low, "bucket {b} is {low}..={high}");
            }
        }
        // Adjacent buckets meet.
        for b in 1..BUCKETS {
            assert_eq!(bucket_range(b - 1).1 + 1, bucket_range(b).0, "bucket {b}");
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_within_their_bucket_and_never_beyond_the_maximum() {
        let mut m = MethodLatency::new("A::B");
        for ns in 1..=1000u64 {
            m.add(ns * 1000, ns % 10 == 0);
        }
        assert_eq!((m.calls, m.exceptions, m.max_ns), (1000, 100, 1_000_000));
        let p50 = m.quantile_ns(0.5).unwrap();
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.04, "{p50}");
        let p99 = m.quantile_ns(0.99).unwrap();
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.04, "{p99}");
        assert!(m.quantile_ns(1.0).unwrap() <= 1_000_000.0);
        assert_eq!(m.mean_ns(), Some(500_500.0));
        assert_eq!(MethodLatency::new("x").quantile_ns(0.5), None);
        // One call: every quantile is near it.
        let mut one = MethodLatency::new("x");
        one.add(7, false);
        assert_eq!(one.quantile_ns(0.5), Some(7.0));
    }

    #[test]
    fn the_text_form_reads_back_and_merges_by_name() {
        let mut a = MethodLatency::new("N.T::M");
        a.add(100, false);
        a.add(5_000, true);
        let mut b = MethodLatency::new("N.T::M");
        b.add(100, false);
        let idle = MethodLatency::new("N.T\tX::Idle");
        let report = MethodsReport::new(
            [a, b, idle],
            vec!["No.Such::Thing".into()],
            vec![("N.T::J".into(), "it uses jmp".into())],
        );
        let names: Vec<&str> = report.methods.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["N.T\tX::Idle", "N.T::M"]);
        assert_eq!((report.methods[1].calls, report.methods[1].buckets[&bucket_of(100)]), (3, 2));
        let text = report.to_text();
        let back = MethodsReport::from_text(&text).unwrap();
        assert_eq!(back.methods[1], report.methods[1]);
        assert_eq!(back.methods[0].name, "N.T X::Idle");
        assert_eq!((back.unmatched, back.refused), (report.unmatched, report.refused));
    }

    #[test]
    fn hostile_text_is_an_error_with_its_line() {
        let bad = |body: &str| MethodsReport::from_text(&format!("{HEADER}\n{body}")).unwrap_err();
        assert_eq!(MethodsReport::from_text("").unwrap_err().line, 1);
        assert_eq!(bad("method\tA\t1\t0\t5\t5\t99999:1").message, "bucket 99999 is out of range (0 to 655)");
        assert!(bad("method\tA\t2\t0\t5\t5\t5:1").message.contains("do not add up"));
        assert!(bad("method\tA\t1\t2\t5\t5\t5:1").message.contains("do not add up"));
        assert!(bad("method\tA\t1\t0\t5\t5\t5:1,5:0").message.contains("given twice"));
        assert!(bad("method\tA\t18446744073709551615\t0\t5\t5\t5:18446744073709551615,6:1").message.contains("add up"));
        assert!(bad("method\tA\t-1\t0\t5\t5\t-").message.contains("not a whole number"));
        assert_eq!(bad("\nwhat").line, 3);
    }
}
