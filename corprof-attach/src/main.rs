//! `corprof-attach --pid PID --clsid {GUID} --profiler PATH [--data TEXT] [--timeout-ms N]`
//!
//! Asks the .NET process PID to load the profiler at PATH under CLSID, passing TEXT's bytes to
//! its `InitializeForAttach`. Prints the runtime's answer and exits 0 when it is a success; a
//! refusal or any other failure is one line on stderr and exit status 1; bad arguments, 2.
//!
//! Arguments are read as the OS gives them, not as UTF-8: TEXT goes to the profiler byte for byte
//! (the protocol carries bytes), while PATH travels as UTF-16, so a PATH that is not Unicode
//! cannot be sent and is a bad argument.

use corprof::GUID;
use corprof_attach::{AttachRequest, attach, describe};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: corprof-attach --pid PID --clsid {GUID} --profiler PATH [--data TEXT] [--timeout-ms N]";

/// The default attach timeout: ample for a profiler's InitializeForAttach on a busy machine.
const DEFAULT_TIMEOUT_MS: u32 = 10_000;

struct Args {
    pid: u32,
    clsid: GUID,
    profiler: PathBuf,
    data: Vec<u8>,
    timeout_ms: u32,
}

fn parse_args(mut args: impl Iterator<Item = OsString>) -> Result<Args, String> {
    let (mut pid, mut clsid, mut profiler, mut data, mut timeout_ms) = (None, None, None, Vec::new(), None);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{} needs a value", flag.to_string_lossy()));
        // Only the values of these flags are text; `{v:?}` shows any other bytes escaped.
        let text =
            |flag: &str, v: OsString, what: &str| v.into_string().map_err(|v| format!("{flag} {v:?} is not {what}"));
        match flag.to_str().unwrap_or("") {
            "--pid" => {
                let v = text("--pid", value()?, "a process ID")?;
                pid = Some(v.parse::<u32>().map_err(|_| format!("--pid {v:?} is not a process ID"))?);
            }
            "--clsid" => {
                let v = text("--clsid", value()?, "a GUID")?;
                clsid = Some(GUID::try_parse(&v).ok_or_else(|| format!("--clsid {v:?} is not a GUID"))?);
            }
            "--profiler" => {
                let v = value()?;
                if v.to_str().is_none() {
                    return Err(format!(
                        "--profiler {v:?} is not valid Unicode: the attach request carries the path as UTF-16"
                    ));
                }
                profiler = Some(PathBuf::from(v));
            }
            "--data" => data = value()?.into_vec(),
            "--timeout-ms" => {
                let v = text("--timeout-ms", value()?, "a number")?;
                timeout_ms = Some(v.parse::<u32>().map_err(|_| format!("--timeout-ms {v:?} is not a number"))?);
            }
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    let profiler = profiler.ok_or("--profiler is required")?;
    // The runtime opens the library from its own working directory: make the path absolute here.
    let profiler = std::path::absolute(&profiler).map_err(|e| format!("--profiler {}: {e}", profiler.display()))?;
    Ok(Args {
        pid: pid.ok_or("--pid is required")?,
        clsid: clsid.ok_or("--clsid is required")?,
        profiler,
        data,
        timeout_ms: timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args_os().skip(1)) {
        Ok(args) => args,
        Err(why) if why.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("corprof-attach: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let request = AttachRequest {
        clsid: args.clsid,
        profiler_path: &args.profiler,
        client_data: &args.data,
        timeout_ms: args.timeout_ms,
    };
    match attach(args.pid, &request) {
        Ok(hr) => {
            println!("corprof-attach: process {} attached {}: {}", args.pid, args.profiler.display(), describe(hr));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("corprof-attach: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        parse_args(args.iter().map(OsString::from))
    }

    fn parse_bytes(args: &[&[u8]]) -> Result<Args, String> {
        parse_args(args.iter().map(|a| OsString::from_vec(a.to_vec())))
    }

    #[test]
    fn arguments_parse_with_defaults() {
        let a = parse(&["--pid", "42", "--clsid", "{8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11}", "--profiler", "/x.so"])
            .unwrap();
        assert_eq!((a.pid, a.timeout_ms, a.data.as_slice()), (42, DEFAULT_TIMEOUT_MS, &b""[..]));
        assert_eq!(a.clsid, GUID::parse("8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11"));
        assert_eq!(a.profiler, PathBuf::from("/x.so"));
        let relative = parse(&["--pid", "1", "--clsid", "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11", "--profiler", "x.so"]);
        assert_eq!(relative.unwrap().profiler, std::env::current_dir().unwrap().join("x.so"));
    }

    #[test]
    fn bad_arguments_say_which() {
        let clsid = "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11";
        assert_eq!(parse(&["--pid", "x"]).err().unwrap(), "--pid \"x\" is not a process ID");
        assert_eq!(parse(&["--clsid", "nope"]).err().unwrap(), "--clsid \"nope\" is not a GUID");
        assert_eq!(parse(&["--pid", "1", "--clsid", clsid]).err().unwrap(), "--profiler is required");
        assert_eq!(parse(&["--profiler", "/a", "--clsid", clsid]).err().unwrap(), "--pid is required");
        assert_eq!(parse(&["--timeout-ms"]).err().unwrap(), "--timeout-ms needs a value");
        assert_eq!(parse(&["--what"]).err().unwrap(), "unknown argument \"--what\"");
    }

    /// Arguments that are not UTF-8: the data passes byte for byte; the path cannot be sent.
    #[test]
    fn arguments_are_bytes() {
        let clsid = b"8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11";
        let a = parse_bytes(&[b"--pid", b"1", b"--clsid", clsid, b"--profiler", b"/x.so", b"--data", b"\xff\xfe"]);
        assert_eq!(a.unwrap().data, b"\xff\xfe");
        assert_eq!(
            parse_bytes(&[b"--profiler", b"lib\xff.so"]).err().unwrap(),
            "--profiler \"lib\\xFF.so\" is not valid Unicode: the attach request carries the path as UTF-16"
        );
        assert_eq!(parse_bytes(&[b"--pid", b"\xff"]).err().unwrap(), "--pid \"\\xFF\" is not a process ID");
        assert_eq!(parse_bytes(&[b"--\xff"]).err().unwrap(), "unknown argument \"--\\xFF\"");
    }
}
