//! The output side of the command: which formats each mode writes, and writing them — the
//! profile modes through [`corprof_record::formats`], the heap snapshot as a table (`text`) or a
//! treemap (`html`).

use corprof_record::formats::{self, Format, Options, latency, pprof::Period, summary};
use corprof_record::latency::MethodsReport;
use corprof_record::profile::Profile;
use corprof_record::{files, heap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Which formats the heap mode writes: it has a snapshot, not stacks.
pub fn check_for_heap(format: Format) -> Result<(), String> {
    match format {
        Format::Text | Format::Html => Ok(()),
        other => Err(format!(
            "the heap mode writes a table (--format text) or a treemap (--format html), not {}",
            other.name()
        )),
    }
}

/// Which formats the profile modes (cpu, alloc, calls) write: all but the methods mode's JSON.
pub fn check_for_profile(format: Format) -> Result<(), String> {
    match format {
        Format::Json => Err("--format json is the methods mode's; a profile's JSON is --format speedscope".to_string()),
        _ => Ok(()),
    }
}

/// Which formats the methods mode writes: figures, not stacks.
pub fn check_for_methods(format: Format) -> Result<(), String> {
    match format {
        Format::Text | Format::Json | Format::Svg | Format::Html => Ok(()),
        other => Err(format!(
            "the methods mode writes a table (--format text), JSON (json) or latency histograms (svg, html), not {}",
            other.name()
        )),
    }
}

/// Writes the methods mode's `report` to `path` in `format` (one of [`check_for_methods`]).
pub fn write_methods(report: &MethodsReport, format: Format, title: &str, path: &Path) -> Result<(), String> {
    write_file(path, |out| match format {
        Format::Text => latency::write_text(report, out),
        Format::Json => latency::write_json(report, title, out),
        Format::Html => latency::write_html(report, title, out),
        _ => latency::write_svg(report, title, out),
    })
}

/// Writes `profile` to `path` in `format` under `title`; `period` is the cpu mode's sampling
/// interval.
pub fn write_profile(
    profile: &Profile,
    format: Format,
    title: &str,
    period: Option<Period>,
    path: &Path,
) -> Result<(), String> {
    let options = Options { title, top: 30, sample_period: period };
    write_file(path, |out| formats::write_with(profile, format, &options, out))
}

/// Reads the heap snapshot at `snapshot`, computes its dominators and writes the table or the
/// treemap to `path`; gives the terminal's summary of it.
pub fn write_heap(snapshot: &Path, format: Format, title: &str, path: &Path) -> Result<Vec<String>, String> {
    let s =
        heap::read(snapshot).map_err(|e| format!("the profiler wrote a heap snapshot that does not read back: {e}"))?;
    let d = heap::Dominators::compute(&s);
    write_file(path, |out| match format {
        Format::Html => heap::write_treemap(&s, &d, title, out),
        _ => heap::write_table(&s, &d, title, out, Some(50)),
    })?;
    Ok(summary::heap_summary_lines(&heap::type_stats(&s, &d), s.total_bytes(), summary::SUMMARY_TOP))
}

/// The outputs' title: what was recorded (`target`: the app's file, or `process <pid>`), how
/// (`mode`: `cpu (wall clock)`), in which runtime, when it started (seconds since 1970, shown
/// in UTC to the minute): `MyApp.dll — cpu (wall clock), CoreCLR 8.0.4 — 2026-12-02 03:12 UTC`.
pub fn title(target: &str, mode: &str, runtime: Option<&str>, started_unix: u64) -> String {
    let runtime = runtime.map(|r| format!(", {r}")).unwrap_or_default();
    format!("{target} — {mode}{runtime} — {}", utc_minute(started_unix))
}

/// `YYYY-MM-DD HH:MM UTC` of a time in seconds since 1970 (the proleptic Gregorian calendar).
fn utc_minute(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let minutes = unix % 86_400 / 60;
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", minutes / 60, minutes % 60)
}

/// How long `--open` waits for `xdg-open` to hand the file over (it returns once the viewer has
/// it); one that takes longer is left running.
const OPEN_WAIT: Duration = Duration::from_secs(10);

/// `--open`: opens `output` with `xdg-open` from `PATH` and says what came of it in one line
/// when it did not work; never an error, the output being written already.
pub fn open_output(output: &Path) {
    let Some(opener) = std::env::var_os("PATH").and_then(|path| find_program(&path, "xdg-open")) else {
        eprintln!("corprof: --open: no xdg-open on PATH; open {} yourself", output.display());
        return;
    };
    // The viewer may start in another folder.
    let target = std::path::absolute(output).unwrap_or_else(|_| output.to_path_buf());
    // No stream of the command's: a browser the opener starts lives on after the command, and
    // holding its stderr would keep a pipe reading it (`corprof … 2>&1 | tee log`) open till the
    // browser ends. Its failure shows in its status.
    let opened =
        Command::new(&opener).arg(&target).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    let mut child = match opened {
        Ok(child) => child,
        Err(e) => {
            eprintln!("corprof: --open: cannot run {}: {e}", opener.display());
            return;
        }
    };
    let deadline = Instant::now() + OPEN_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return,
            Ok(Some(status)) => {
                eprintln!("corprof: --open: {} {} ended with {status}", opener.display(), target.display());
                return;
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                eprintln!("corprof: --open: {} still runs after {OPEN_WAIT:?}; left running", opener.display());
                return;
            }
            Err(e) => {
                eprintln!("corprof: --open: cannot wait for {}: {e}", opener.display());
                return;
            }
        }
    }
}

/// The first executable file `name` in the folders of `path` (a `PATH` value); empty entries
/// (the current folder, by the old convention) are skipped, so an opener lying in whatever
/// folder the command was started from is never run.
fn find_program(path: &std::ffi::OsStr, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).filter(|dir| dir.is_absolute()).map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Writes the output in place, only to a regular file ([`files::write_in_place`]: a FIFO, device
/// or folder named since the command checked it is refused, never waited on or replaced).
fn write_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), String> {
    files::write_in_place(path, write).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_say_what_how_where_and_when() {
        // 2026-12-02 03:12:41 UTC.
        let t = 1_796_181_161;
        assert_eq!(
            title("MyApp.dll", "cpu (wall clock)", Some("CoreCLR 8.0.4"), t),
            "MyApp.dll — cpu (wall clock), CoreCLR 8.0.4 — 2026-12-02 03:12 UTC"
        );
        assert_eq!(title("process 4242", "heap", None, t), "process 4242 — heap — 2026-12-02 03:12 UTC");
    }

    #[test]
    fn the_opener_is_an_executable_file_in_an_absolute_folder() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("corprof-find-program-{}", std::process::id()));
        let (plain, exec) = (base.join("plain"), base.join("exec"));
        // `exec` again, named from the current folder.
        let up = std::env::current_dir().unwrap().components().count() - 1;
        let relative = PathBuf::from("../".repeat(up)).join(exec.strip_prefix("/").unwrap());
        for dir in [&plain, &exec] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(plain.join("xdg-open"), "").unwrap();
        std::fs::write(exec.join("xdg-open"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(exec.join("xdg-open"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(exec.join("dir-named-so/xdg-open")).unwrap();
        assert!(relative.join("xdg-open").is_file());
        assert_eq!(find_program(&std::env::join_paths([&relative]).unwrap(), "xdg-open"), None);
        let path = std::env::join_paths([&relative, &plain, &exec.join("dir-named-so"), &exec]).unwrap();
        assert_eq!(find_program(&path, "xdg-open"), Some(exec.join("xdg-open")));
        assert_eq!(find_program(&std::env::join_paths([&plain]).unwrap(), "xdg-open"), None);
        assert_eq!(find_program(std::ffi::OsStr::new(""), "xdg-open"), None);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn utc_dates_across_leap_days_and_years() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_minute(951_782_400 + 59), "2000-02-29 00:00 UTC");
        assert_eq!(utc_minute(951_868_799), "2000-02-29 23:59 UTC");
        assert_eq!(utc_minute(1_735_689_599), "2024-12-31 23:59 UTC");
        assert_eq!(utc_minute(4_107_542_400), "2100-03-01 00:00 UTC");
    }
}
