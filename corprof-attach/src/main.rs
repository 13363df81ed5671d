//! `corprof-attach --pid PID --clsid {GUID} --profiler PATH [--data TEXT] [--timeout-ms N]`
//!
//! Asks the .NET process PID to load the profiler at PATH under CLSID, passing TEXT's bytes to
//! its `InitializeForAttach`. Prints the runtime's answer and exits 0 when it is a success; a
//! refusal or any other failure is one line on stderr and exit status 1; bad arguments, 2.
//!
//! `corprof-attach --startup (--listen SOCKET | --pid PID) --clsid {GUID} --profiler PATH
//! [--env NAME=VALUE]... [--unset NAME]... [--timeout-ms N]`
//!
//! Loads the profiler at startup instead (CoreCLR 5.0+; its `Initialize` is called): into the
//! runtime that connects to SOCKET, which this listens on (start the app with
//! `DOTNET_DiagnosticPorts=SOCKET`), or into process PID paused on its own socket (started with
//! `DOTNET_DefaultDiagnosticPortSuspend=1`). The variables are set (or removed) in the process's
//! environment first, in the order given; then the runtime is resumed, even when a command was
//! refused. The runtime must be paused: one past its startup answers S_OK and loads nothing.
//! See [`corprof_attach::startup`].
//!
//! Arguments are read as the OS gives them, not as UTF-8: TEXT goes to the profiler byte for byte
//! (the protocol carries bytes), while PATH, SOCKET and the variables travel as UTF-16, so any
//! of them that is not Unicode cannot be sent and is a bad argument.

use corprof::GUID;
use corprof_attach::startup::{Port, StartupRequest, start_by_pid, start_through_port};
use corprof_attach::{AttachRequest, attach, describe};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: corprof-attach --pid PID --clsid {GUID} --profiler PATH [--data TEXT] [--timeout-ms N]
       corprof-attach --startup (--listen SOCKET | --pid PID) --clsid {GUID} --profiler PATH [--env NAME=VALUE]... [--unset NAME]... [--timeout-ms N]";

/// The default timeout: ample for a profiler's InitializeForAttach on a busy machine, or for a
/// runtime to connect and take the startup commands.
const DEFAULT_TIMEOUT_MS: u32 = 10_000;

/// Where the runtime paused at startup takes its commands.
#[derive(Debug, PartialEq)]
enum Paused {
    /// It connects to this socket (`DOTNET_DiagnosticPorts`).
    Listen(PathBuf),
    /// Its own socket (`DOTNET_DefaultDiagnosticPortSuspend=1`).
    Pid(u32),
}

#[derive(Debug, PartialEq)]
enum Mode {
    Attach { pid: u32, data: Vec<u8> },
    Startup { paused: Paused, env: Vec<(String, Option<String>)> },
}

struct Args {
    mode: Mode,
    clsid: GUID,
    profiler: PathBuf,
    timeout_ms: u32,
}

fn parse_args(mut args: impl Iterator<Item = OsString>) -> Result<Args, String> {
    let (mut pid, mut clsid, mut profiler, mut data, mut timeout_ms) = (None, None, None, None, None);
    let (mut startup, mut listen, mut env) = (false, None, Vec::new());
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{} needs a value", flag.to_string_lossy()));
        // Only the values of these flags are text; `{v:?}` shows any other bytes escaped.
        let text =
            |flag: &str, v: OsString, what: &str| v.into_string().map_err(|v| format!("{flag} {v:?} is not {what}"));
        let unicode = |flag: &str, v: OsString| {
            v.into_string().map_err(|v| format!("{flag} {v:?} is not valid Unicode: the request carries it as UTF-16"))
        };
        match flag.to_str().unwrap_or("") {
            "--pid" => {
                let v = text("--pid", value()?, "a process ID")?;
                pid = Some(v.parse::<u32>().map_err(|_| format!("--pid {v:?} is not a process ID"))?);
            }
            "--clsid" => {
                let v = text("--clsid", value()?, "a GUID")?;
                clsid = Some(GUID::try_parse(&v).ok_or_else(|| format!("--clsid {v:?} is not a GUID"))?);
            }
            "--profiler" => profiler = Some(PathBuf::from(unicode("--profiler", value()?)?)),
            "--data" => data = Some(value()?.into_vec()),
            "--timeout-ms" => {
                let v = text("--timeout-ms", value()?, "a number")?;
                timeout_ms = Some(v.parse::<u32>().map_err(|_| format!("--timeout-ms {v:?} is not a number"))?);
            }
            "--startup" => startup = true,
            "--listen" => listen = Some(PathBuf::from(unicode("--listen", value()?)?)),
            "--env" => {
                let v = unicode("--env", value()?)?;
                let (name, val) = v.split_once('=').ok_or_else(|| format!("--env {v:?} is not NAME=VALUE"))?;
                env.push((name.to_string(), Some(val.to_string())));
            }
            "--unset" => env.push((unicode("--unset", value()?)?, None)),
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    let profiler = profiler.ok_or("--profiler is required")?;
    // The runtime opens the library from its own working directory: make the path absolute here.
    let profiler = std::path::absolute(&profiler).map_err(|e| format!("--profiler {}: {e}", profiler.display()))?;
    let mode = if startup {
        if data.is_some() {
            return Err("--data is for an attach: a profiler loaded at startup gets no client data".to_string());
        }
        let paused = match (listen, pid) {
            (Some(_), Some(_)) => return Err("--listen and --pid exclude each other".to_string()),
            (Some(socket), None) => Paused::Listen(socket),
            (None, Some(pid)) => Paused::Pid(pid),
            (None, None) => return Err("--startup needs --listen or --pid".to_string()),
        };
        Mode::Startup { paused, env }
    } else {
        if listen.is_some() || !env.is_empty() {
            return Err("--listen, --env and --unset go with --startup".to_string());
        }
        Mode::Attach { pid: pid.ok_or("--pid is required")?, data: data.unwrap_or_default() }
    };
    Ok(Args {
        mode,
        clsid: clsid.ok_or("--clsid is required")?,
        profiler,
        timeout_ms: timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
    })
}

/// Runs the startup commands; the line to print on success.
fn startup(
    args: &Args,
    paused: &Paused,
    env: &[(String, Option<String>)],
) -> Result<String, corprof_attach::AttachError> {
    let env: Vec<(&str, Option<&str>)> = env.iter().map(|(n, v)| (n.as_str(), v.as_deref())).collect();
    let request = StartupRequest { clsid: args.clsid, profiler_path: &args.profiler, environment: &env };
    let pid = match paused {
        Paused::Listen(socket) => {
            let port = Port::bind(socket)?;
            start_through_port(&port, &request, args.timeout_ms)?.process_id
        }
        Paused::Pid(pid) => {
            start_by_pid(*pid, &request, args.timeout_ms)?;
            u64::from(*pid)
        }
    };
    Ok(format!("corprof-attach: process {pid} resumed with {} loaded at startup", args.profiler.display()))
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
    let done = match &args.mode {
        Mode::Attach { pid, data } => {
            let request = AttachRequest {
                clsid: args.clsid,
                profiler_path: &args.profiler,
                client_data: data,
                timeout_ms: args.timeout_ms,
            };
            attach(*pid, &request).map(|hr| {
                format!("corprof-attach: process {pid} attached {}: {}", args.profiler.display(), describe(hr))
            })
        }
        Mode::Startup { paused, env } => startup(&args, paused, env),
    };
    match done {
        Ok(line) => {
            println!("{line}");
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
        assert_eq!((&a.mode, a.timeout_ms), (&Mode::Attach { pid: 42, data: Vec::new() }, DEFAULT_TIMEOUT_MS));
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
        assert_eq!(a.unwrap().mode, Mode::Attach { pid: 1, data: b"\xff\xfe".to_vec() });
        assert_eq!(
            parse_bytes(&[b"--profiler", b"lib\xff.so"]).err().unwrap(),
            "--profiler \"lib\\xFF.so\" is not valid Unicode: the request carries it as UTF-16"
        );
        assert_eq!(parse_bytes(&[b"--pid", b"\xff"]).err().unwrap(), "--pid \"\\xFF\" is not a process ID");
        assert_eq!(parse_bytes(&[b"--\xff"]).err().unwrap(), "unknown argument \"--\\xFF\"");
        assert_eq!(
            parse_bytes(&[b"--env", b"A=\xff"]).err().unwrap(),
            "--env \"A=\\xFF\" is not valid Unicode: the request carries it as UTF-16"
        );
    }

    #[test]
    fn startup_arguments() {
        let clsid = "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11";
        let common = ["--clsid", clsid, "--profiler", "/x.so"];
        let with = |more: &[&str]| parse(&[&common[..], more].concat());
        let a = with(&["--startup", "--listen", "/s.sock", "--env", "A=b=c", "--unset", "B", "--env", "C="]).unwrap();
        let env = vec![
            ("A".to_string(), Some("b=c".to_string())),
            ("B".to_string(), None),
            ("C".to_string(), Some(String::new())),
        ];
        assert_eq!(a.mode, Mode::Startup { paused: Paused::Listen(PathBuf::from("/s.sock")), env });
        let a = with(&["--startup", "--pid", "7"]).unwrap();
        assert_eq!(a.mode, Mode::Startup { paused: Paused::Pid(7), env: Vec::new() });
        for (more, why) in [
            (&["--startup"][..], "--startup needs --listen or --pid"),
            (&["--startup", "--pid", "1", "--listen", "/s"][..], "--listen and --pid exclude each other"),
            (
                &["--startup", "--pid", "1", "--data", "x"][..],
                "--data is for an attach: a profiler loaded at startup gets no client data",
            ),
            (&["--pid", "1", "--listen", "/s"][..], "--listen, --env and --unset go with --startup"),
            (&["--pid", "1", "--unset", "A"][..], "--listen, --env and --unset go with --startup"),
            (&["--startup", "--pid", "1", "--env", "A"][..], "--env \"A\" is not NAME=VALUE"),
        ] {
            assert_eq!(with(more).err().as_deref(), Some(why), "{more:?}");
        }
    }
}
