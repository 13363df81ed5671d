//! Loading a profiler at startup through the diagnostics port (CoreCLR 5.0 and later): while the
//! runtime is paused early in its startup, the `StartupProfiler` command names the profiler it
//! will then load as if `CORECLR_PROFILER`/`CORECLR_PROFILER_PATH` had named it (its `Initialize`
//! is called, not `InitializeForAttach`), and `ResumeRuntime` lets startup go on.
//!
//! The runtime pauses when it is started with `DOTNET_DiagnosticPorts=<socket>` (a connect port,
//! `suspend` by default: the runtime connects to a socket this side listens on, [`Port`]) or with
//! `DOTNET_DefaultDiagnosticPortSuspend=1` (its own listening socket, found by process ID).
//! Either way every command goes over a connection of its own: a connect port's runtime
//! reconnects after each command and announces itself with an advertise message first.
//!
//! ```no_run
//! use corprof_attach::startup::{Port, StartupRequest, start_through_port};
//! let port = Port::bind("/tmp/my-port.sock".as_ref())?;
//! // ... start the app with DOTNET_DiagnosticPorts=/tmp/my-port.sock ...
//! let request = StartupRequest {
//!     clsid: corprof::GUID::parse("8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11"),
//!     profiler_path: "/path/to/libcallback_counter.so".as_ref(),
//!     environment: &[("CORPROF_COUNTS_OUT", Some("/tmp/counts.txt"))],
//! };
//! let advertise = start_through_port(&port, &request, 10_000)?;
//! println!("process {} resumed with the profiler", advertise.process_id);
//! # Ok::<(), corprof_attach::AttachError>(())
//! ```
//!
//! Send it only to a paused runtime: CoreCLR 8.0.4 answers `StartupProfiler` with S_OK whenever
//! it comes, and a runtime already past the point where it loads a startup profiler loads
//! nothing (the environment is still changed).
//!
//! CoreCLR 3.x knows none of this: it ignores both settings (it never pauses nor connects), and
//! its own socket answers the commands with errors (`CORDIAGIPC_E_UNKNOWN_COMMAND` for the
//! Process commands, `CORDIAGIPC_E_BAD_ENCODING` for `StartupProfiler`).

use crate::{AttachError, COMMAND_SET_PROFILER, Reply, find_socket, guid_bytes, message, read_message};
use corprof::GUID;
use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `StartupProfiler`, in the Profiler command set (payload: CLSID, string path).
pub const COMMAND_STARTUP_PROFILER: u8 = 0x02;
/// The Process command set.
pub const COMMAND_SET_PROCESS: u8 = 0x04;
/// `ResumeRuntime`, in the Process command set (no payload).
pub const COMMAND_RESUME_RUNTIME: u8 = 0x01;
/// `SetEnvironmentVariable`, in the Process command set (payload: string name, string value; an
/// empty string (length 0) as the value removes the variable).
pub const COMMAND_SET_ENVIRONMENT_VARIABLE: u8 = 0x03;
/// The first 8 bytes of the advertise message a connect port's runtime sends.
pub const ADVERTISE_MAGIC: &[u8; 8] = b"ADVR_V1\0";
/// The advertise message's size: magic, runtime cookie (16), process ID (`u64`), 2 unused bytes.
pub const ADVERTISE_SIZE: usize = 34;

/// The runtime's announcement on each connection it makes to a connect port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Advertise {
    /// The runtime instance's cookie (the same on every reconnection of one process).
    pub runtime_cookie: GUID,
    /// The process ID, in the runtime's PID namespace.
    pub process_id: u64,
}

impl Advertise {
    /// Parses the 34-byte advertise message.
    pub fn decode(bytes: &[u8; ADVERTISE_SIZE]) -> Result<Advertise, AttachError> {
        if &bytes[..8] != ADVERTISE_MAGIC {
            return Err(AttachError::Protocol(format!(
                "an advertise message without the ADVR_V1 magic: {:02X?}",
                &bytes[..8]
            )));
        }
        let field = |at: usize, n: usize| &bytes[at..at + n];
        let cookie = GUID {
            data1: u32::from_le_bytes(field(8, 4).try_into().expect("4 bytes")),
            data2: u16::from_le_bytes(field(12, 2).try_into().expect("2 bytes")),
            data3: u16::from_le_bytes(field(14, 2).try_into().expect("2 bytes")),
            data4: field(16, 8).try_into().expect("8 bytes"),
        };
        let process_id = u64::from_le_bytes(field(24, 8).try_into().expect("8 bytes"));
        Ok(Advertise { runtime_cookie: cookie, process_id })
    }
}

/// A protocol string: its length in UTF-16 units with the NUL, then the units; `None` is the
/// empty string (length 0).
fn put_string(out: &mut Vec<u8>, text: Option<&str>, what: &str) -> Result<(), AttachError> {
    let Some(text) = text else {
        out.extend_from_slice(&0u32.to_le_bytes());
        return Ok(());
    };
    if text.contains('\0') {
        return Err(AttachError::Request(format!("{what} contains a NUL")));
    }
    let units: Vec<u16> = text.encode_utf16().chain([0]).collect();
    out.extend_from_slice(&(units.len() as u32).to_le_bytes());
    out.extend(units.iter().flat_map(|u| u.to_le_bytes()));
    Ok(())
}

/// What to load at startup, and the environment to set first.
#[derive(Clone, Copy, Debug)]
pub struct StartupRequest<'a> {
    /// The profiler's CLSID.
    pub clsid: GUID,
    /// The profiler library, as the target process will open it (absolute is safest).
    pub profiler_path: &'a Path,
    /// Variables set (`Some`) or removed (`None`) in the process's environment before the
    /// profiler loads, in this order: the profiler can read them in `Initialize`.
    pub environment: &'a [(&'a str, Option<&'a str>)],
}

impl StartupRequest<'_> {
    /// The messages to send, in order: one `SetEnvironmentVariable` per variable, then
    /// `StartupProfiler`. (`ResumeRuntime`, [`resume_runtime_message`], follows them.)
    pub fn messages(&self) -> Result<Vec<Vec<u8>>, AttachError> {
        let mut out = Vec::new();
        for (name, value) in self.environment {
            if name.is_empty() || name.contains('=') {
                return Err(AttachError::Request(format!("{name:?} is not an environment variable name")));
            }
            let mut payload = Vec::new();
            put_string(&mut payload, Some(name), "an environment variable name")?;
            put_string(&mut payload, *value, "an environment variable value")?;
            out.push(message(COMMAND_SET_PROCESS, COMMAND_SET_ENVIRONMENT_VARIABLE, &payload)?);
        }
        let path = self
            .profiler_path
            .to_str()
            .ok_or_else(|| AttachError::Request(format!("{} is not valid Unicode", self.profiler_path.display())))?;
        let mut payload = guid_bytes(&self.clsid).to_vec();
        put_string(&mut payload, Some(path), "the profiler path")?;
        out.push(message(COMMAND_SET_PROFILER, COMMAND_STARTUP_PROFILER, &payload)?);
        Ok(out)
    }
}

/// The `ResumeRuntime` message.
pub fn resume_runtime_message() -> Vec<u8> {
    message(COMMAND_SET_PROCESS, COMMAND_RESUME_RUNTIME, &[]).expect("a header alone fits")
}

/// A connect port: a Unix socket this side listens on, for a runtime started with
/// `DOTNET_DiagnosticPorts=<path>`. The socket file is removed when the port is dropped.
pub struct Port {
    listener: UnixListener,
    path: PathBuf,
}

impl Port {
    /// Listens at `path`, which must not exist yet.
    pub fn bind(path: &Path) -> Result<Port, AttachError> {
        let listener = UnixListener::bind(path)
            .map_err(|error| AttachError::Io { context: format!("cannot listen at {}", path.display()), error })?;
        // Accepting polls so that a runtime that never comes is a timeout, not a hang.
        listener
            .set_nonblocking(true)
            .map_err(|error| AttachError::Io { context: "cannot make the port non-blocking".to_string(), error })?;
        Ok(Port { listener, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits until `deadline` for the runtime's next connection and reads its advertise message.
    pub fn accept(&self, deadline: Instant) -> Result<(UnixStream, Advertise), AttachError> {
        let stream = loop {
            match self.listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(AttachError::NoConnection { port: self.path.clone() });
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(error) => {
                    return Err(AttachError::Io {
                        context: format!("cannot accept at {}", self.path.display()),
                        error,
                    });
                }
            }
        };
        let io = |context: &str| {
            let context = format!("{context} ({})", self.path.display());
            move |error| AttachError::Io { context, error }
        };
        stream.set_nonblocking(false).map_err(io("cannot make the connection blocking"))?;
        let wait = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        stream.set_read_timeout(Some(wait)).map_err(io("cannot set the read timeout"))?;
        let mut bytes = [0; ADVERTISE_SIZE];
        (&stream).read_exact(&mut bytes).map_err(io("no advertise message from the runtime"))?;
        Ok((stream, Advertise::decode(&bytes)?))
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sends one message on `stream` and reads the reply (waiting until `deadline`).
fn exchange(mut stream: UnixStream, bytes: &[u8], deadline: Instant, whom: &str) -> Result<Reply, AttachError> {
    let io = |context: String| move |error| AttachError::Io { context, error };
    let wait = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    stream.set_read_timeout(Some(wait)).map_err(io("cannot set the read timeout".to_string()))?;
    stream.set_write_timeout(Some(wait)).map_err(io("cannot set the write timeout".to_string()))?;
    stream.write_all(bytes).map_err(io(format!("cannot send a command to {whom}")))?;
    let reply = read_message(&mut stream).map_err(io(format!("no answer from {whom}")))?;
    Reply::decode(&reply)
}

/// The command a message carries, for error messages.
fn command_name(bytes: &[u8]) -> &'static str {
    match (bytes.get(16), bytes.get(17)) {
        (Some(&COMMAND_SET_PROCESS), Some(&COMMAND_SET_ENVIRONMENT_VARIABLE)) => "SetEnvironmentVariable",
        (Some(&COMMAND_SET_PROCESS), Some(&COMMAND_RESUME_RUNTIME)) => "ResumeRuntime",
        (Some(&COMMAND_SET_PROFILER), Some(&COMMAND_STARTUP_PROFILER)) => "StartupProfiler",
        _ => "a command",
    }
}

/// Sends the request's messages and then `ResumeRuntime`, each through a stream `connect` gives.
/// `ResumeRuntime` is sent even when an earlier command was refused, so that the process is never
/// left paused; the first refusal is the result.
fn run(
    request: &StartupRequest<'_>,
    mut connect: impl FnMut() -> Result<UnixStream, AttachError>,
    deadline: Instant,
    whom: &str,
) -> Result<(), AttachError> {
    let mut messages = request.messages()?;
    messages.push(resume_runtime_message());
    let mut first_refusal = None;
    for bytes in messages {
        let hr = exchange(connect()?, &bytes, deadline, whom)?.hresult();
        if !hr.is_ok() && first_refusal.is_none() {
            first_refusal = Some(AttachError::CommandRefused { command: command_name(&bytes), hr });
        }
    }
    first_refusal.map_or(Ok(()), Err)
}

/// Loads the profiler into the runtime that connects to `port`: waits for it (at most
/// `timeout_ms` in all), sets the environment, names the profiler and resumes the runtime.
/// Returns the runtime's advertise message; every reconnection must advertise the same runtime.
pub fn start_through_port(
    port: &Port,
    request: &StartupRequest<'_>,
    timeout_ms: u32,
) -> Result<Advertise, AttachError> {
    let deadline = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
    let mut first: Option<Advertise> = None;
    let whom = format!("the runtime at {}", port.path().display());
    run(
        request,
        || {
            let (stream, advertise) = port.accept(deadline)?;
            match first {
                None => first = Some(advertise),
                Some(seen) if seen != advertise => {
                    return Err(AttachError::Protocol(format!(
                        "an advertise message from another runtime ({advertise:?} after {seen:?})"
                    )));
                }
                Some(_) => {}
            }
            Ok(stream)
        },
        deadline,
        &whom,
    )?;
    Ok(first.expect("a command was sent, so a runtime connected"))
}

/// Loads the profiler into process `pid`, paused at startup on its own socket
/// (`DOTNET_DefaultDiagnosticPortSuspend=1`): sets the environment, names the profiler and
/// resumes the runtime, waiting at most `timeout_ms` in all.
pub fn start_by_pid(pid: u32, request: &StartupRequest<'_>, timeout_ms: u32) -> Result<(), AttachError> {
    let deadline = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
    let socket = find_socket(pid)?;
    let whom = format!("process {pid}");
    run(
        request,
        || {
            UnixStream::connect(&socket)
                .map_err(|error| AttachError::Io { context: format!("cannot connect to {}", socket.display()), error })
        },
        deadline,
        &whom,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes written out by hand from the protocol document and the runtime's parser.
    #[test]
    fn startup_messages_are_laid_out_as_the_protocol_says() {
        let request = StartupRequest {
            clsid: GUID::parse("8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11"),
            profiler_path: Path::new("/p"),
            environment: &[("A", Some("b")), ("C", None)],
        };
        let messages = request.messages().unwrap();
        #[rustfmt::skip]
        let set_a: Vec<u8> = [
            // header: size 20 + 8 + 8, Process (0x04) SetEnvironmentVariable (0x03)
            &b"DOTNET_IPC_V1\0"[..], &[36, 0], &[0x04, 0x03], &[0, 0],
            // name "A": 2 units with the NUL; value "b": 2 units
            &[2, 0, 0, 0], &[b'A', 0, 0, 0], &[2, 0, 0, 0], &[b'b', 0, 0, 0],
        ]
        .concat();
        #[rustfmt::skip]
        let clear_c: Vec<u8> = [
            // name "C", then the empty string: a zero length and no units
            &b"DOTNET_IPC_V1\0"[..], &[32, 0], &[0x04, 0x03], &[0, 0],
            &[2, 0, 0, 0], &[b'C', 0, 0, 0], &[0, 0, 0, 0],
        ]
        .concat();
        #[rustfmt::skip]
        let startup: Vec<u8> = [
            // header: size 20 + 16 + 4 + 6, Profiler (0x03) StartupProfiler (0x02)
            &b"DOTNET_IPC_V1\0"[..], &[46, 0], &[0x03, 0x02], &[0, 0],
            // CLSID in memory order, then "/p" with its NUL
            &[0x2E, 0x9A, 0x2B, 0x8C], &[0x4F, 0x5C], &[0x0B, 0x4E],
            &[0x9B, 0x1A, 0x2E, 0x7C, 0x1D, 0x4F, 0x6A, 0x11],
            &[3, 0, 0, 0], &[b'/', 0, b'p', 0, 0, 0],
        ]
        .concat();
        assert_eq!(messages, [set_a, clear_c, startup]);
        let resume = resume_runtime_message();
        assert_eq!(resume, [&b"DOTNET_IPC_V1\0"[..], &[20, 0, 0x04, 0x01, 0, 0]].concat());
    }

    #[test]
    fn bad_names_and_nuls_are_refused_before_sending() {
        let path = Path::new("/p");
        let clsid = GUID::from_u128(1);
        for (env, expected) in [
            (&[("", Some("x"))][..], "\"\" is not an environment variable name"),
            (&[("A=B", Some("x"))][..], "\"A=B\" is not an environment variable name"),
            (&[("A", Some("x\0y"))][..], "an environment variable value contains a NUL"),
        ] {
            let err = StartupRequest { clsid, profiler_path: path, environment: env }.messages().unwrap_err();
            assert!(matches!(&err, AttachError::Request(m) if m == expected), "{err}");
        }
    }

    #[test]
    fn an_advertise_message_decodes() {
        #[rustfmt::skip]
        let bytes: Vec<u8> = [
            &b"ADVR_V1\0"[..],
            // cookie 00112233-4455-6677-8899-AABBCCDDEEFF in memory order
            &[0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF],
            &[0x39, 0x30, 0, 0, 0, 0, 0, 0], &[0, 0],
        ]
        .concat();
        let advertise = Advertise::decode(&bytes.clone().try_into().unwrap()).unwrap();
        assert_eq!(
            advertise,
            Advertise { runtime_cookie: GUID::from_u128(0x00112233_4455_6677_8899_AABBCCDDEEFF), process_id: 12345 }
        );
        let mut wrong = bytes;
        wrong[0] = b'X';
        let err = Advertise::decode(&wrong.try_into().unwrap()).unwrap_err();
        assert!(matches!(&err, AttachError::Protocol(m) if m.contains("ADVR_V1")), "{err}");
    }

    /// A runtime played by a thread: it connects to the port for each command, advertises,
    /// records what it is sent and answers with the HRESULTs given, in turn.
    fn fake_runtime(path: PathBuf, answers: Vec<u32>) -> std::thread::JoinHandle<Vec<Vec<u8>>> {
        std::thread::spawn(move || {
            let mut received = Vec::new();
            for hr in answers {
                let mut stream = UnixStream::connect(&path).expect("the port listens");
                let advertise: Vec<u8> = [&ADVERTISE_MAGIC[..], &[7; 16], &42u64.to_le_bytes(), &[0, 0]].concat();
                stream.write_all(&advertise).unwrap();
                received.push(read_message(&mut stream).unwrap());
                let id = if hr == 0 { 0x00 } else { 0xFF };
                let reply: Vec<u8> = [&crate::MAGIC[..], &[24, 0, 0xFF, id, 0, 0], &hr.to_le_bytes()].concat();
                stream.write_all(&reply).unwrap();
            }
            received
        })
    }

    fn temp_socket(test: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("corprof-attach-{}-{test}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        path
    }

    #[test]
    fn each_command_goes_over_a_connection_of_its_own_and_resume_comes_last() {
        let path = temp_socket("order");
        let port = Port::bind(&path).unwrap();
        let runtime = fake_runtime(path.clone(), vec![0, 0, 0]);
        let request = StartupRequest {
            clsid: GUID::from_u128(1),
            profiler_path: Path::new("/p"),
            environment: &[("A", Some("b"))],
        };
        let advertise = start_through_port(&port, &request, 10_000).unwrap();
        assert_eq!(advertise.process_id, 42);
        let received = runtime.join().unwrap();
        let mut expected = request.messages().unwrap();
        expected.push(resume_runtime_message());
        assert_eq!(received, expected);
        drop(port);
        assert!(!path.exists(), "the port's socket file is removed");
    }

    /// A refused StartupProfiler is the result, and the runtime is resumed all the same.
    #[test]
    fn a_refusal_is_reported_after_the_runtime_is_resumed() {
        let path = temp_socket("refusal");
        let port = Port::bind(&path).unwrap();
        let runtime = fake_runtime(path.clone(), vec![0x8013_1384, 0]);
        let request = StartupRequest { clsid: GUID::from_u128(1), profiler_path: Path::new("/p"), environment: &[] };
        let err = start_through_port(&port, &request, 10_000).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the runtime refused StartupProfiler: CORDIAGIPC_E_BAD_ENCODING (0x80131384): The diagnostics server could not parse the message."
        );
        let received = runtime.join().unwrap();
        assert_eq!(received.last().unwrap(), &resume_runtime_message());
    }

    #[test]
    fn no_runtime_is_a_timeout() {
        let path = temp_socket("timeout");
        let port = Port::bind(&path).unwrap();
        let request = StartupRequest { clsid: GUID::from_u128(1), profiler_path: Path::new("/p"), environment: &[] };
        let started = Instant::now();
        let err = start_through_port(&port, &request, 50).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(err.to_string(), format!("no runtime connected to {} in time", path.display()));
    }
}
