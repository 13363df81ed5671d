//! `corprof-attach --pid PID --clsid {GUID} --profiler PATH [--data TEXT] [--timeout-ms N]`
//!
//! Asks the .NET process PID to load the profiler at PATH under CLSID, passing TEXT (UTF-8) to
//! its `InitializeForAttach`. Prints the runtime's answer and exits 0 when it is a success; a
//! refusal or any other failure is one line on stderr and exit status 1; bad arguments, 2.

use corprof::GUID;
use corprof_attach::{AttachRequest, attach, describe};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: corprof-attach --pid PID --clsid {GUID} --profiler PATH [--data TEXT] [--timeout-ms N]";

/// The default attach timeout: ample for a profiler's InitializeForAttach on a busy machine.
const DEFAULT_TIMEOUT_MS: u32 = 10_000;

struct Args {
    pid: u32,
    clsid: GUID,
    profiler: PathBuf,
    data: String,
    timeout_ms: u32,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut pid, mut clsid, mut profiler, mut data, mut timeout_ms) = (None, None, None, String::new(), None);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--pid" => {
                let v = value()?;
                pid = Some(v.parse::<u32>().map_err(|_| format!("--pid {v:?} is not a process ID"))?);
            }
            "--clsid" => {
                let v = value()?;
                clsid = Some(GUID::try_parse(&v).ok_or_else(|| format!("--clsid {v:?} is not a GUID"))?);
            }
            "--profiler" => profiler = Some(PathBuf::from(value()?)),
            "--data" => data = value()?,
            "--timeout-ms" => {
                let v = value()?;
                timeout_ms = Some(v.parse::<u32>().map_err(|_| format!("--timeout-ms {v:?} is not a number"))?);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
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
    let args = match parse_args(std::env::args().skip(1)) {
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
        client_data: args.data.as_bytes(),
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
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn arguments_parse_with_defaults() {
        let a = parse(&["--pid", "42", "--clsid", "{8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11}", "--profiler", "/x.so"])
            .unwrap();
        assert_eq!((a.pid, a.timeout_ms, a.data.as_str()), (42, DEFAULT_TIMEOUT_MS, ""));
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
}
