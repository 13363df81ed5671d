//! The settings the command hands the profiler: environment variables at launch, the same
//! `KEY=VALUE` pairs (separated by `;`) as client data on attach.
//!
//! Every setting has one check ([`check`]), which the profiler applies at Initialize (a bad one
//! refuses the start with one line naming the variable and its value) and the command applies
//! to what it passes before it launches anything. The environment is read name by name
//! ([`from_env`]): a variable that is not UTF-8 text changes nothing unless it is one of these.

use std::collections::HashMap;
use std::ops::RangeInclusive;

/// `cpu`, `alloc`, `heap`, `calls` or `methods`.
pub const MODE: &str = "CORPROF_RECORD_MODE";
/// Where the profiler writes what it recorded (a [`crate::profile::Profile`] in its text form,
/// or the heap snapshot): a path that does not exist yet, or a regular file (or a symlink to
/// one, whose target is replaced) — see [`crate::files`].
pub const OUT: &str = "CORPROF_RECORD_OUT";
/// cpu: milliseconds between samples (default 10, [`INTERVAL_MS_RANGE`]).
pub const INTERVAL_MS: &str = "CORPROF_RECORD_INTERVAL_MS";
/// cpu: `wall` (every thread each sample) or `cpu` (weighted by each thread's CPU time).
pub const CLOCK: &str = "CORPROF_RECORD_CLOCK";
/// cpu: `signal` (each thread interrupted alone by a signal of its own timer, its frames read in
/// the handler; Linux x86-64) or `suspend` (the runtime suspended each tick and every thread
/// walked). Unset: `signal` where it works, else `suspend`.
pub const SAMPLER: &str = "CORPROF_RECORD_SAMPLER";
/// cpu, signal sampler: `1` records native frames between the managed ones (named `lib!symbol`
/// or `lib`, unwound by the libraries' call frame information); `0` (the default) folds each run
/// of them into one `[native]`. Refused with any other mode or sampler.
pub const NATIVE: &str = "CORPROF_RECORD_NATIVE";
/// alloc: `sampled` (about one sample per 100 KB, weighted) or `exact`.
pub const ALLOC: &str = "CORPROF_RECORD_ALLOC";
/// calls: only methods whose `Namespace.Type::Method` name contains this text are hooked (at
/// most [`MAX_FILTER_BYTES`]).
pub const FILTER: &str = "CORPROF_RECORD_FILTER";
/// methods: the methods to wrap, `Namespace.Type::Method` patterns (`*` for any run of
/// characters) separated by `|`: at most [`MAX_METHOD_PATTERNS`], [`MAX_METHODS_BYTES`] in all.
pub const METHODS: &str = "CORPROF_RECORD_METHODS";
/// heap: take the snapshot this many milliseconds after start instead of at the end
/// ([`AT_MS_RANGE`]).
pub const AT_MS: &str = "CORPROF_RECORD_AT_MS";
/// heap: `1`: take the snapshot when the app gets SIGUSR2 (`kill -USR2 <pid>`), unless one was
/// taken already; `0` (the default): not.
pub const SIGNAL: &str = "CORPROF_RECORD_SIGNAL";
/// attach (`--pid`): record this many milliseconds, then write [`OUT`] and detach
/// ([`DURATION_MS_RANGE`]).
pub const DURATION_MS: &str = "CORPROF_RECORD_DURATION_MS";
/// The suffix of the file beside [`OUT`] where the profiler writes one line on what recording
/// cost the app (cpu: the pauses per tick) or what it left out (alloc), written before [`OUT`];
/// the command prints it.
pub const STATS_SUFFIX: &str = ".stats";
/// The suffix of the file beside [`OUT`] that names the runtime the recording was made in
/// (`CoreCLR 8.0.4`), written by the profiler at its start; the command puts it in the output's
/// title.
pub const RUNTIME_SUFFIX: &str = ".runtime";
/// methods, attach: the suffix of the file beside [`OUT`] the profiler writes once the methods
/// of the modules loaded already are wrapped (it holds how many are); the command says so.
pub const READY_SUFFIX: &str = ".ready";
/// attach: the suffix of the file beside [`OUT`] the profiler writes, after the recording, when
/// the runtime refused to detach it (it holds the reason); the command says so instead of
/// waiting for the detach.
pub const STAYS_SUFFIX: &str = ".stays";
/// The suffix of the file beside [`OUT`] the command creates to end the recording now (a
/// signal to the command, or its `--duration` at launch): the profiler writes the recording
/// (and, attached, detaches) as soon as it sees the file.
pub const STOP_SUFFIX: &str = ".stop";
/// cpu: `0` suspends and resumes the runtime each tick without walking any thread, recording
/// nothing: the runtime's own share of the pause, which scripts/bench-record sets beside a normal
/// run; `1` (the default) walks.
pub const CPU_WALK: &str = "CORPROF_RECORD_CPU_WALK";
/// heap: `1` prints how long each step of the snapshot took to stderr (`corprof: heap timing:
/// …`), for scripts/bench-heap; `0` (the default): not.
pub const HEAP_TIMING: &str = "CORPROF_RECORD_HEAP_TIMING";

/// `1`: the profiler writes [`PROGRESS_SUFFIX`] beside [`OUT`] about once a second while it
/// records, for the command's live line on a terminal; `0` (the default): not. The command sets
/// it only when its stderr is a terminal.
pub const PROGRESS: &str = "CORPROF_RECORD_PROGRESS";
/// The suffix of the file beside [`OUT`] where the profiler, with [`PROGRESS`], keeps the counts
/// so far: one `<number> <words>` line each (`1234 samples`, `0 dropped`), at most
/// [`MAX_PROGRESS_BYTES`]; the command shows them on its live line.
pub const PROGRESS_SUFFIX: &str = ".progress";
/// [`PROGRESS_SUFFIX`]: the largest file the command reads.
pub const MAX_PROGRESS_BYTES: u64 = 1024;

/// Every setting, the only `CORPROF_RECORD_*` names the profiler accepts.
pub const ALL: [&str; 15] = [
    MODE,
    OUT,
    INTERVAL_MS,
    CLOCK,
    SAMPLER,
    NATIVE,
    ALLOC,
    FILTER,
    METHODS,
    AT_MS,
    SIGNAL,
    DURATION_MS,
    CPU_WALK,
    HEAP_TIMING,
    PROGRESS,
];

/// The prefix of every setting's name.
pub const PREFIX: &str = "CORPROF_RECORD_";

/// [`INTERVAL_MS`]: from 1 ms to a minute. The sampler's wait ends at once when the app ends,
/// whatever the interval.
pub const INTERVAL_MS_RANGE: RangeInclusive<u64> = 1..=60_000;
/// [`AT_MS`]: up to a day.
pub const AT_MS_RANGE: RangeInclusive<u64> = 0..=86_400_000;
/// [`DURATION_MS`]: from 1 ms to a day.
pub const DURATION_MS_RANGE: RangeInclusive<u64> = 1..=86_400_000;
/// [`FILTER`]: the longest filter text, in bytes.
pub const MAX_FILTER_BYTES: usize = 4096;
/// [`METHODS`]: the most patterns.
pub const MAX_METHOD_PATTERNS: usize = 256;
/// [`METHODS`]: the longest text, in bytes.
pub const MAX_METHODS_BYTES: usize = 16 << 10;
/// [`METHODS`]: what separates two patterns (no method name holds it).
pub const METHODS_SEPARATOR: char = '|';
/// [`OUT`]: the longest path, in bytes (Linux's PATH_MAX).
pub const MAX_OUT_BYTES: usize = 4095;

/// Checks one setting's value; the error is one line naming the variable and its value.
pub fn check(key: &str, value: &str) -> Result<(), String> {
    let one_of = |choices: &[&str], words: &str| {
        if choices.contains(&value) { Ok(()) } else { Err(format!("{key}={value:?} is not {words}")) }
    };
    match key {
        MODE => one_of(&["cpu", "alloc", "heap", "calls", "methods"], "cpu, alloc, heap, calls or methods"),
        OUT if value.is_empty() => Err(format!("{key} is empty: give the path of the file to write")),
        OUT if value.len() > MAX_OUT_BYTES => {
            Err(format!("{key} is {} bytes long: a path has at most {MAX_OUT_BYTES}", value.len()))
        }
        OUT if value.contains('\0') => Err(format!("{key}={value:?} holds a NUL byte")),
        OUT => Ok(()),
        INTERVAL_MS => number(key, value, INTERVAL_MS_RANGE).map(drop),
        AT_MS => number(key, value, AT_MS_RANGE).map(drop),
        DURATION_MS => number(key, value, DURATION_MS_RANGE).map(drop),
        CLOCK => one_of(&["wall", "cpu"], "wall or cpu"),
        SAMPLER => one_of(&["signal", "suspend"], "signal or suspend"),
        ALLOC => one_of(&["sampled", "exact"], "sampled or exact"),
        FILTER if value.len() > MAX_FILTER_BYTES => {
            Err(format!("{key} is {} bytes long: a filter has at most {MAX_FILTER_BYTES}", value.len()))
        }
        FILTER => Ok(()),
        METHODS if value.len() > MAX_METHODS_BYTES => {
            Err(format!("{key} is {} bytes long: the patterns have at most {MAX_METHODS_BYTES}", value.len()))
        }
        METHODS => method_patterns(value).map(drop).map_err(|why| format!("{key}={value:?}: {why}")),
        SIGNAL | CPU_WALK | HEAP_TIMING | PROGRESS | NATIVE => one_of(&["0", "1"], "0 or 1"),
        _ => Err(format!("{key} is not a setting of corprof record (they are {})", ALL.join(", "))),
    }
}

/// A whole number of milliseconds within `range`; the error names the variable, its value and
/// the range.
pub fn number(key: &str, value: &str, range: RangeInclusive<u64>) -> Result<u64, String> {
    let (lo, hi) = (range.start(), range.end());
    let within = format!("a whole number of milliseconds from {lo} to {hi}");
    match value.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        Ok(_) => Err(format!("{key}={value:?} is out of range: give {within}")),
        Err(_) => Err(format!("{key}={value:?} is not a number: give {within}")),
    }
}

/// The patterns of a [`METHODS`] value: at least one, at most [`MAX_METHOD_PATTERNS`], none
/// empty (the profiler reads each as a `corprof::instrument::Target`).
pub fn method_patterns(value: &str) -> Result<Vec<&str>, String> {
    let patterns: Vec<&str> = value.split(METHODS_SEPARATOR).map(str::trim).collect();
    if patterns.iter().any(|p| p.is_empty()) {
        return Err("give one or more Namespace.Type::Method patterns, none empty".to_string());
    }
    if patterns.len() > MAX_METHOD_PATTERNS {
        return Err(format!("{} patterns: at most {MAX_METHOD_PATTERNS}", patterns.len()));
    }
    Ok(patterns)
}

/// Checks every pair ([`check`]); the first bad one is the error.
pub fn check_all<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<(), String> {
    pairs.into_iter().try_for_each(|(k, v)| check(k, v))
}

/// The settings set in the environment (every name of [`ALL`] that is set), checked. A
/// `CORPROF_RECORD_*` variable that is not a setting, or a setting whose value is not UTF-8, is
/// an error naming it; any other variable is not looked at, whatever its bytes.
pub fn from_env() -> Result<HashMap<String, String>, String> {
    from_vars(std::env::vars_os())
}

/// [`from_env`] over the given variables.
pub fn from_vars(
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<HashMap<String, String>, String> {
    use std::os::unix::ffi::OsStrExt;
    let mut pairs = HashMap::new();
    for (key, value) in vars {
        if !key.as_bytes().starts_with(PREFIX.as_bytes()) {
            continue;
        }
        let Some(key) = key.to_str() else {
            return Err(format!("{key:?} is not a setting of corprof record (its name is not UTF-8)"));
        };
        let value = value.into_string().map_err(|v| format!("{key}={v:?} is not UTF-8 text"))?;
        check(key, &value)?;
        pairs.insert(key.to_string(), value);
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn every_setting_has_a_check_and_its_range() {
        for key in ALL {
            // Every name is known to check (an unknown one says so).
            let e = check(key, "\u{1}bogus").err().unwrap_or_default();
            assert!(!e.contains("is not a setting"), "{key}: {e}");
        }
        assert!(check(INTERVAL_MS, "1").is_ok() && check(INTERVAL_MS, "60000").is_ok());
        for bad in ["0", "60001", "4294967295", "18446744073709551616", "abc", "", "-1", " 5"] {
            let e = check(INTERVAL_MS, bad).unwrap_err();
            assert!(e.starts_with(&format!("{INTERVAL_MS}={bad:?} is ")) && e.contains("from 1 to 60000"), "{e}");
        }
        assert_eq!(
            check(INTERVAL_MS, "4294967295").unwrap_err(),
            "CORPROF_RECORD_INTERVAL_MS=\"4294967295\" is out of range: give a whole number of milliseconds \
             from 1 to 60000"
        );
        assert!(check(DURATION_MS, "0").is_err() && check(DURATION_MS, "86400000").is_ok());
        assert!(check(DURATION_MS, "86400001").is_err());
        assert!(check(AT_MS, "0").is_ok() && check(AT_MS, "86400001").is_err());
        assert!(check(OUT, "").is_err() && check(OUT, "a\0b").is_err() && check(OUT, &"a".repeat(4096)).is_err());
        assert!(check(FILTER, &"a".repeat(4097)).is_err() && check(FILTER, "").is_ok());
        assert_eq!(method_patterns("A::B | C.*::D").unwrap(), ["A::B", "C.*::D"]);
        for bad in ["", "A::B|", "|", &"A::B|".repeat(256)] {
            assert!(check(METHODS, bad).is_err(), "{bad:?}");
        }
        let patterns = |n: usize| vec!["A::B"; n].join("|");
        assert!(check(METHODS, &patterns(256)).is_ok());
        assert!(check(METHODS, &patterns(257)).unwrap_err().contains("257 patterns: at most 256"));
        assert!(check(METHODS, &format!("A::{}", "B".repeat(MAX_METHODS_BYTES))).unwrap_err().contains("bytes long"));
        assert!(check(SIGNAL, "yes").is_err() && check(CPU_WALK, "0").is_ok());
        assert!(check(PROGRESS, "1").is_ok() && check(PROGRESS, "0").is_ok() && check(PROGRESS, "yes").is_err());
        assert!(check(SAMPLER, "signal").is_ok() && check(SAMPLER, "suspend").is_ok());
        assert_eq!(check(SAMPLER, "perf").unwrap_err(), "CORPROF_RECORD_SAMPLER=\"perf\" is not signal or suspend");
        assert!(check("CORPROF_RECORD_INTERVAL", "5").unwrap_err().contains("is not a setting"));
    }

    #[test]
    fn the_environment_is_read_by_name_and_bytes_elsewhere_do_not_matter() {
        let var = |k: &[u8], v: &[u8]| (OsString::from_vec(k.to_vec()), OsString::from_vec(v.to_vec()));
        let vars = vec![
            var(b"JUNK", b"\xff\xfe"),
            var(b"\xffJUNK", b"x"),
            var(MODE.as_bytes(), b"heap"),
            var(b"CORPROF_OTHER", b"\xff"),
        ];
        let pairs = from_vars(vars).unwrap();
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[MODE], "heap");
        let e = from_vars(vec![var(FILTER.as_bytes(), b"Work\xff")]).unwrap_err();
        assert_eq!(e, "CORPROF_RECORD_FILTER=\"Work\\xFF\" is not UTF-8 text");
        let e = from_vars(vec![var(b"CORPROF_RECORD_\xff", b"1")]).unwrap_err();
        assert!(e.contains("its name is not UTF-8"), "{e}");
        let e = from_vars(vec![var(INTERVAL_MS.as_bytes(), b"0")]).unwrap_err();
        assert!(e.starts_with("CORPROF_RECORD_INTERVAL_MS=\"0\" is out of range"), "{e}");
    }
}
