//! The settings the command hands the profiler: environment variables at launch, the same
//! `KEY=VALUE` pairs (separated by `;`) as client data on attach.

/// `cpu`, `alloc`, `heap` or `calls`.
pub const MODE: &str = "CORPROF_RECORD_MODE";
/// Where the profiler writes what it recorded (a [`crate::profile::Profile`] in its text form,
/// or the heap snapshot).
pub const OUT: &str = "CORPROF_RECORD_OUT";
/// cpu: milliseconds between samples (default 10).
pub const INTERVAL_MS: &str = "CORPROF_RECORD_INTERVAL_MS";
/// cpu: `wall` (every thread each sample) or `cpu` (weighted by each thread's CPU time).
pub const CLOCK: &str = "CORPROF_RECORD_CLOCK";
/// alloc: `sampled` (about one sample per 100 KB, weighted) or `exact`.
pub const ALLOC: &str = "CORPROF_RECORD_ALLOC";
/// calls: only methods whose `Namespace.Type::Method` name contains this text are hooked.
pub const FILTER: &str = "CORPROF_RECORD_FILTER";
/// heap: take the snapshot this many milliseconds after start instead of at the end.
pub const AT_MS: &str = "CORPROF_RECORD_AT_MS";
/// heap: `1`: take the snapshot when the app gets SIGUSR2 (`kill -USR2 <pid>`), unless one was
/// taken already.
pub const SIGNAL: &str = "CORPROF_RECORD_SIGNAL";
/// attach (`--pid`): record this many milliseconds, then write [`OUT`] and detach.
pub const DURATION_MS: &str = "CORPROF_RECORD_DURATION_MS";
/// The suffix of the file beside [`OUT`] where the profiler writes one line on what recording
/// cost the app (cpu: the pauses per tick), written before [`OUT`]; the command prints it.
pub const STATS_SUFFIX: &str = ".stats";
/// cpu: `0` suspends and resumes the runtime each tick without walking any thread, recording
/// nothing: the runtime's own share of the pause, which scripts/bench-record sets beside a normal
/// run.
pub const CPU_WALK: &str = "CORPROF_RECORD_CPU_WALK";
