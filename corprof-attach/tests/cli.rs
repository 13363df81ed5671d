//! The `corprof-attach` binary's failures, each with its exit status and its one line on stderr.
//! (Attaching to real runtimes is tested in the workspace's tests/runtime/attach.rs.)

use std::process::{Command, Output};

/// The usage lines every bad argument is followed by.
const USAGE: &str = "usage: corprof-attach --pid PID --clsid {GUID} --profiler PATH [--data TEXT] [--timeout-ms N]\n       \
     corprof-attach --startup (--listen SOCKET | --pid PID) --clsid {GUID} --profiler PATH [--env NAME=VALUE]... \
     [--unset NAME]... [--timeout-ms N]\n";

const CLSID: &str = "{8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11}";

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corprof-attach")).args(args).output().expect("cannot run corprof-attach")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A process ID above the kernel's limit (`pid_max` is at most 2^22), so it cannot exist.
const NO_SUCH_PID: &str = "2147483000";

#[test]
fn no_such_process() {
    let out = run(&["--pid", NO_SUCH_PID, "--clsid", CLSID, "--profiler", "/x.so"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), format!("corprof-attach: no process with ID {NO_SUCH_PID}\n"));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_process_without_a_diagnostics_socket() {
    // This test process is no .NET process, so it has no socket; corprof-attach looks in its
    // TMPDIR (read from /proc), else /tmp.
    let me = std::process::id();
    let dir = std::env::var("TMPDIR").ok().filter(|d| !d.is_empty()).unwrap_or_else(|| "/tmp".to_string());
    let out = run(&["--pid", &me.to_string(), "--clsid", CLSID, "--profiler", "/x.so"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "corprof-attach: process {me} has no diagnostics socket (no {dir}/dotnet-diagnostic-{me}-*-socket): \
             it is not a .NET Core 3.0+ process, or its diagnostics are disabled\n"
        )
    );
}

#[test]
fn bad_arguments_exit_2_with_the_usage() {
    let out = run(&["--pid", "1", "--clsid", "not-a-guid", "--profiler", "/x.so"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), format!("corprof-attach: --clsid \"not-a-guid\" is not a GUID\n{USAGE}"));
    let help = run(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&help.stdout), USAGE);
}

/// Arguments that are not UTF-8 never panic: the client data is passed on byte for byte (here
/// the run gets as far as looking for the process); a profiler path that cannot travel as UTF-16
/// is a bad argument, exit 2.
#[test]
fn arguments_that_are_not_utf8() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let run_os = |args: &[&OsStr]| Command::new(env!("CARGO_BIN_EXE_corprof-attach")).args(args).output().unwrap();
    let out = run_os(&[
        "--pid".as_ref(),
        NO_SUCH_PID.as_ref(),
        "--clsid".as_ref(),
        CLSID.as_ref(),
        "--profiler".as_ref(),
        "/x.so".as_ref(),
        "--data".as_ref(),
        OsStr::from_bytes(b"\xff\xfe"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stderr(&out), format!("corprof-attach: no process with ID {NO_SUCH_PID}\n"));
    let out = run_os(&[
        "--pid".as_ref(),
        NO_SUCH_PID.as_ref(),
        "--clsid".as_ref(),
        CLSID.as_ref(),
        "--profiler".as_ref(),
        OsStr::from_bytes(b"lib\xff.so"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "corprof-attach: --profiler \"lib\\xFF.so\" is not valid Unicode: the request carries it as UTF-16\n{USAGE}"
        )
    );
}
