//! corprof-attach: asks a running .NET (CoreCLR 3.0 or later) process to load a profiler, through
//! the runtime's diagnostics IPC protocol (dotnet/diagnostics,
//! `documentation/design-docs/ipc-protocol.md`) over its Unix domain socket.
//!
//! ```no_run
//! use corprof_attach::{AttachRequest, attach};
//! let request = AttachRequest {
//!     clsid: corprof::GUID::parse("8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11"),
//!     profiler_path: "/path/to/libcallback_counter.so".as_ref(),
//!     client_data: b"CORPROF_COUNTS_OUT=/tmp/counts.txt",
//!     timeout_ms: 10_000,
//! };
//! let answer = attach(1234, &request)?; // the runtime's HRESULT: S_OK
//! println!("{}", corprof_attach::describe(answer));
//! # Ok::<(), corprof_attach::AttachError>(())
//! ```
//!
//! The runtime loads the library, creates the profiler object for the CLSID and calls its
//! `ICorProfilerCallback3::InitializeForAttach` with the client data; its answer comes back as an
//! HRESULT. Only one profiler may be loaded at a time (a second attach is refused with
//! `CORPROF_E_PROFILER_ALREADY_ACTIVE`).

pub mod startup;

use corprof::{GUID, HResult};
use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The 14 bytes every message starts with: `DOTNET_IPC_V1` and a NUL.
pub const MAGIC: &[u8; 14] = b"DOTNET_IPC_V1\0";
/// The size of a message header: magic, `u16` total size, command set, command ID, `u16` reserved.
pub const HEADER_SIZE: usize = 20;
/// The Profiler command set.
pub const COMMAND_SET_PROFILER: u8 = 0x03;
/// `AttachProfiler`, in the Profiler command set.
pub const COMMAND_ATTACH_PROFILER: u8 = 0x01;
/// The command set of every reply.
pub const COMMAND_SET_SERVER: u8 = 0xFF;
/// Reply command ID: the command succeeded (payload: a `u32` HRESULT).
pub const SERVER_OK: u8 = 0x00;
/// Reply command ID: the command failed (payload: a `u32` HRESULT).
pub const SERVER_ERROR: u8 = 0xFF;

/// Codes an attach meets that the profiling API's list in `corprof::HResult` does not hold: the
/// diagnostics server's own (the protocol document's `CORDIAGIPC_E_*`) and the loader's.
const ATTACH_CODES: &[(u32, &str, &str)] = &[
    (
        0x8007_007E,
        "ERROR_MOD_NOT_FOUND",
        "HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND): the runtime could not load the profiler library (missing, or one of its dependencies is).",
    ),
    (0x8013_1384, "CORDIAGIPC_E_BAD_ENCODING", "The diagnostics server could not parse the message."),
    (0x8013_1385, "CORDIAGIPC_E_UNKNOWN_COMMAND", "The diagnostics server does not know this command."),
    (0x8013_1386, "CORDIAGIPC_E_UNKNOWN_MAGIC", "The diagnostics server does not speak this protocol version."),
    (0x8013_1387, "CORDIAGIPC_E_UNKNOWN_ERROR", "The diagnostics server failed for an unknown reason."),
];

/// `NAME (0x…): meaning` for an HRESULT: the profiling API's codes (through
/// [`corprof::HResult::describe`]), the diagnostics server's and the library loader's.
pub fn describe(hr: HResult) -> String {
    match ATTACH_CODES.iter().find(|(code, ..)| *code == hr.0 as u32) {
        Some((code, name, meaning)) => format!("{name} (0x{code:08X}): {meaning}"),
        None => hr.describe(),
    }
}

/// What to ask the runtime to load.
#[derive(Clone, Copy, Debug)]
pub struct AttachRequest<'a> {
    /// The profiler's CLSID (what `CORECLR_PROFILER` names at launch).
    pub clsid: GUID,
    /// The profiler library, as the target process will open it (absolute is safest).
    pub profiler_path: &'a Path,
    /// Bytes handed to `InitializeForAttach` (`client_data: &[u8]` in corprof).
    pub client_data: &'a [u8],
    /// How long the runtime may take to load and initialize the profiler, in milliseconds.
    pub timeout_ms: u32,
}

impl AttachRequest<'_> {
    /// The whole `AttachProfiler` message: header, then the payload
    /// `u32 timeout, CLSID (16 bytes, in memory order), string path, u32 size + client data`,
    /// every number little-endian; a string is its length in UTF-16 code units, NUL included,
    /// then the units.
    pub fn encode(&self) -> Result<Vec<u8>, AttachError> {
        let path = self
            .profiler_path
            .to_str()
            .ok_or_else(|| AttachError::Request(format!("{} is not valid Unicode", self.profiler_path.display())))?;
        if path.contains('\0') {
            return Err(AttachError::Request("the profiler path contains a NUL".to_string()));
        }
        let units: Vec<u16> = path.encode_utf16().chain([0]).collect();
        let mut payload = Vec::new();
        payload.extend_from_slice(&self.timeout_ms.to_le_bytes());
        payload.extend_from_slice(&guid_bytes(&self.clsid));
        payload.extend_from_slice(&(units.len() as u32).to_le_bytes());
        payload.extend(units.iter().flat_map(|u| u.to_le_bytes()));
        let data_len = u32::try_from(self.client_data.len())
            .map_err(|_| AttachError::Request("the client data is larger than 4 GiB".to_string()))?;
        payload.extend_from_slice(&data_len.to_le_bytes());
        payload.extend_from_slice(self.client_data);
        message(COMMAND_SET_PROFILER, COMMAND_ATTACH_PROFILER, &payload)
    }
}

/// A GUID as it lies in memory on a little-endian machine, which is how the runtime reads it.
pub fn guid_bytes(g: &GUID) -> [u8; 16] {
    let mut b = [0; 16];
    b[0..4].copy_from_slice(&g.data1.to_le_bytes());
    b[4..6].copy_from_slice(&g.data2.to_le_bytes());
    b[6..8].copy_from_slice(&g.data3.to_le_bytes());
    b[8..16].copy_from_slice(&g.data4);
    b
}

/// A message: the header (its size field counts the header too) and the payload.
pub(crate) fn message(command_set: u8, command_id: u8, payload: &[u8]) -> Result<Vec<u8>, AttachError> {
    let size = u16::try_from(HEADER_SIZE + payload.len()).map_err(|_| {
        AttachError::Request(format!(
            "the message would be {} bytes; the protocol's limit is 65535 (shorten the path or the client data)",
            HEADER_SIZE + payload.len()
        ))
    })?;
    let mut out = Vec::with_capacity(size as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&[command_set, command_id]);
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// The server's answer to a command that replies with an HRESULT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `OK` (command ID 0x00): the command ran; the HRESULT is its result.
    Ok(HResult),
    /// `Error` (command ID 0xFF): the command failed with this HRESULT.
    Error(HResult),
}

impl Reply {
    /// The HRESULT either way.
    pub fn hresult(self) -> HResult {
        match self {
            Reply::Ok(hr) | Reply::Error(hr) => hr,
        }
    }

    /// Parses a whole reply message (header and a 4-byte payload).
    pub fn decode(bytes: &[u8]) -> Result<Reply, AttachError> {
        let bad = |what: String| AttachError::Protocol(what);
        if bytes.len() < HEADER_SIZE {
            return Err(bad(format!("a reply of {} bytes, shorter than a header", bytes.len())));
        }
        if &bytes[..14] != MAGIC {
            return Err(bad(format!("a reply without the DOTNET_IPC_V1 magic: {:02X?}", &bytes[..14])));
        }
        let size = u16::from_le_bytes([bytes[14], bytes[15]]) as usize;
        if size != bytes.len() {
            return Err(bad(format!("a reply whose header says {size} bytes, but {} arrived", bytes.len())));
        }
        let (set, id) = (bytes[16], bytes[17]);
        if set != COMMAND_SET_SERVER {
            return Err(bad(format!("a reply in command set 0x{set:02X}, not the server's 0xFF")));
        }
        let payload = &bytes[HEADER_SIZE..];
        let hr = match payload {
            [a, b, c, d] => HResult(i32::from_le_bytes([*a, *b, *c, *d])),
            _ => return Err(bad(format!("a reply payload of {} bytes, not a 4-byte HRESULT", payload.len()))),
        };
        match id {
            SERVER_OK => Ok(Reply::Ok(hr)),
            SERVER_ERROR => Ok(Reply::Error(hr)),
            other => Err(bad(format!("a reply with command ID 0x{other:02X}, neither OK nor Error"))),
        }
    }
}

/// Why an attach did not happen.
#[derive(Debug)]
pub enum AttachError {
    /// No process has this ID.
    NoProcess(u32),
    /// The process has no diagnostics socket: not a .NET process, a runtime older than 3.0, or
    /// diagnostics disabled (`DOTNET_EnableDiagnostics=0`).
    NoSocket { pid: u32, dir: PathBuf },
    /// Several sockets carry the process ID and none carries its start time.
    AmbiguousSocket { pid: u32, candidates: Vec<PathBuf> },
    /// The request cannot be encoded (a path that is not Unicode, a message over 64 KiB).
    Request(String),
    /// Connecting, sending or receiving failed.
    Io { context: String, error: io::Error },
    /// The runtime answered something this protocol does not allow.
    Protocol(String),
    /// The runtime answered with a failure HRESULT (from either reply kind).
    Refused(HResult),
    /// No runtime connected to a diagnostic port before the timeout (see [`startup`]).
    NoConnection { port: PathBuf },
    /// The runtime refused one command of several (see [`startup`]).
    CommandRefused { command: &'static str, hr: HResult },
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::NoProcess(pid) => write!(f, "no process with ID {pid}"),
            AttachError::NoSocket { pid, dir } => write!(
                f,
                "process {pid} has no diagnostics socket (no {}/dotnet-diagnostic-{pid}-*-socket): \
                 it is not a .NET Core 3.0+ process, or its diagnostics are disabled",
                dir.display()
            ),
            AttachError::AmbiguousSocket { pid, candidates } => write!(
                f,
                "several diagnostics sockets for process {pid} and none has its start time: {}",
                candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
            AttachError::Request(why) => write!(f, "cannot make the request: {why}"),
            AttachError::Io { context, error } => write!(f, "{context}: {error}"),
            AttachError::Protocol(what) => write!(f, "the runtime sent {what}"),
            AttachError::Refused(hr) => write!(f, "the runtime refused: {}", describe(*hr)),
            AttachError::NoConnection { port } => write!(f, "no runtime connected to {} in time", port.display()),
            AttachError::CommandRefused { command, hr } => {
                write!(f, "the runtime refused {command}: {}", describe(*hr))
            }
        }
    }
}

impl std::error::Error for AttachError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AttachError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The directory the target process makes its socket in: its `TMPDIR` (read from
/// `/proc/<pid>/environ` when allowed, else ours), or `/tmp` when that is unset or empty.
pub fn socket_dir(pid: u32) -> PathBuf {
    let theirs = std::fs::read(format!("/proc/{pid}/environ")).ok().map(|env| {
        env.split(|b| *b == 0)
            .find_map(|var| var.strip_prefix(b"TMPDIR="))
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    });
    let dir = theirs.unwrap_or_else(|| std::env::var("TMPDIR").unwrap_or_default());
    if dir.is_empty() { PathBuf::from("/tmp") } else { PathBuf::from(dir) }
}

/// The process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`): the
/// "disambiguation key" in the socket's name.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// `dir/dotnet-diagnostic-<pid>-<key>-socket` of a live process.
///
/// Several sockets with this pid can exist when an earlier process of the same ID died without
/// removing its own: the one whose key is the process's start time wins; otherwise the only one.
pub fn find_socket(pid: u32) -> Result<PathBuf, AttachError> {
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return Err(AttachError::NoProcess(pid));
    }
    let dir = socket_dir(pid);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|error| AttachError::Io { context: format!("cannot list {}", dir.display()), error })?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    pick_socket(pid, &dir, &names, start_time(pid))
}

/// The socket of process `pid` among the file `names` of `dir`, given its start time if known.
fn pick_socket(pid: u32, dir: &Path, names: &[String], start: Option<u64>) -> Result<PathBuf, AttachError> {
    let prefix = format!("dotnet-diagnostic-{pid}-");
    let mut found: Vec<&String> = names
        .iter()
        .filter(|name| {
            name.strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix("-socket"))
                .is_some_and(|key| !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    if let Some(key) = start {
        let exact = format!("{prefix}{key}-socket");
        if found.contains(&&exact) {
            return Ok(dir.join(exact));
        }
    }
    match found.len() {
        0 => Err(AttachError::NoSocket { pid, dir: dir.to_path_buf() }),
        1 => Ok(dir.join(found[0])),
        _ => {
            found.sort();
            Err(AttachError::AmbiguousSocket { pid, candidates: found.iter().map(|n| dir.join(n)).collect() })
        }
    }
}

/// Sends `request` to the process `pid` and waits for the runtime's answer (at most the attach
/// timeout plus five seconds). `Ok` is the runtime's success HRESULT (S_OK); a failure HRESULT is
/// [`AttachError::Refused`].
pub fn attach(pid: u32, request: &AttachRequest<'_>) -> Result<HResult, AttachError> {
    let bytes = request.encode()?;
    let socket = find_socket(pid)?;
    let io = |context: String| move |error| AttachError::Io { context, error };
    let mut stream = UnixStream::connect(&socket).map_err(io(format!("cannot connect to {}", socket.display())))?;
    let wait = Duration::from_millis(u64::from(request.timeout_ms)) + Duration::from_secs(5);
    stream.set_read_timeout(Some(wait)).map_err(io("cannot set the read timeout".to_string()))?;
    stream.set_write_timeout(Some(wait)).map_err(io("cannot set the write timeout".to_string()))?;
    stream.write_all(&bytes).map_err(io(format!("cannot send the request to {}", socket.display())))?;
    let reply = read_message(&mut stream).map_err(io(format!("no answer from process {pid}")))?;
    let hr = Reply::decode(&reply)?.hresult();
    if hr.is_ok() { Ok(hr) } else { Err(AttachError::Refused(hr)) }
}

/// One message: the header, then as many bytes as its size field says.
pub(crate) fn read_message(stream: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut msg = vec![0; HEADER_SIZE];
    stream.read_exact(&mut msg)?;
    let size = u16::from_le_bytes([msg[14], msg[15]]) as usize;
    if size < HEADER_SIZE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a header with size {size}")));
    }
    msg.resize(size, 0);
    stream.read_exact(&mut msg[HEADER_SIZE..])?;
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLSID: &str = "8C2B9A2E-5C4F-4E0B-9B1A-2E7C1D4F6A11";

    /// Bytes written out by hand from the protocol document, field by field.
    #[test]
    fn an_attach_message_is_laid_out_as_the_protocol_says() {
        let request = AttachRequest {
            clsid: GUID::parse(CLSID),
            profiler_path: Path::new("/p.so"),
            client_data: b"ab",
            timeout_ms: 5000,
        };
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            // header: magic, size 62, Profiler (0x03) AttachProfiler (0x01), reserved
            &b"DOTNET_IPC_V1\0"[..], &[62, 0], &[0x03, 0x01], &[0, 0],
            // attach timeout 5000 ms
            &[0x88, 0x13, 0, 0],
            // CLSID: Data1, Data2, Data3 little-endian, then Data4 as written
            &[0x2E, 0x9A, 0x2B, 0x8C], &[0x4F, 0x5C], &[0x0B, 0x4E],
            &[0x9B, 0x1A, 0x2E, 0x7C, 0x1D, 0x4F, 0x6A, 0x11],
            // path: 6 UTF-16 units with the NUL, then "/p.so\0"
            &[6, 0, 0, 0], &[b'/', 0, b'p', 0, b'.', 0, b's', 0, b'o', 0, 0, 0],
            // client data: 2 bytes
            &[2, 0, 0, 0], b"ab",
        ]
        .concat();
        assert_eq!(request.encode().unwrap(), expected);
        assert_eq!(expected.len(), 62);
    }

    #[test]
    fn empty_client_data_is_a_zero_count_and_text_beyond_ascii_is_utf16() {
        let request = AttachRequest {
            clsid: GUID::from_u128(0x00112233_4455_6677_8899_AABBCCDDEEFF),
            profiler_path: Path::new("é"),
            client_data: &[],
            timeout_ms: 1,
        };
        let bytes = request.encode().unwrap();
        assert_eq!(&bytes[14..16], &[52, 0], "20 + 4 + 16 + 4 + 4 + 4");
        assert_eq!(
            &bytes[24..40],
            &[0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF]
        );
        assert_eq!(&bytes[40..52], &[2, 0, 0, 0, 0xE9, 0x00, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_message_over_64_kib_is_refused_before_sending() {
        let data = vec![0; 65536];
        let request = AttachRequest {
            clsid: GUID::parse(CLSID),
            profiler_path: Path::new("/p"),
            client_data: &data,
            timeout_ms: 1,
        };
        let err = request.encode().unwrap_err();
        assert!(matches!(&err, AttachError::Request(m) if m.contains("65535")), "{err}");
    }

    fn reply(id: u8, hr: u32) -> Vec<u8> {
        [&b"DOTNET_IPC_V1\0"[..], &[24, 0, 0xFF, id, 0, 0], &hr.to_le_bytes()].concat()
    }

    #[test]
    fn replies_decode_to_their_hresult() {
        assert_eq!(Reply::decode(&reply(0x00, 0)).unwrap(), Reply::Ok(HResult::S_OK));
        let refused = Reply::decode(&reply(0xFF, 0x8013_136A)).unwrap();
        assert_eq!(refused, Reply::Error(HResult::CORPROF_E_PROFILER_ALREADY_ACTIVE));
        assert_eq!(
            describe(refused.hresult()),
            "CORPROF_E_PROFILER_ALREADY_ACTIVE (0x8013136A): Attach refused: a profiler is already loaded."
        );
        assert_eq!(
            describe(Reply::decode(&reply(0xFF, 0x8013_1385)).unwrap().hresult()),
            "CORDIAGIPC_E_UNKNOWN_COMMAND (0x80131385): The diagnostics server does not know this command."
        );
    }

    #[test]
    fn malformed_replies_are_protocol_errors() {
        let mut wrong_magic = reply(0, 0);
        wrong_magic[0] = b'X';
        let mut wrong_size = reply(0, 0);
        wrong_size[14] = 28;
        let mut wrong_set = reply(0, 0);
        wrong_set[16] = 0x03;
        let cases: [(&[u8], &str); 5] = [
            (&reply(0, 0)[..10], "shorter than a header"),
            (&wrong_magic, "magic"),
            (&wrong_size, "says 28 bytes, but 24 arrived"),
            (&wrong_set, "command set 0x03"),
            (&reply(0x01, 0), "command ID 0x01"),
        ];
        for (bytes, expected) in cases {
            match Reply::decode(bytes) {
                Err(AttachError::Protocol(m)) => assert!(m.contains(expected), "{m:?} lacks {expected:?}"),
                other => panic!("{other:?} for {bytes:02X?}"),
            }
        }
    }

    #[test]
    fn the_socket_is_the_one_with_the_pid_and_the_start_time() {
        let dir = Path::new("/t");
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let two = names(&[
            "dotnet-diagnostic-42-100-socket",
            "dotnet-diagnostic-42-7-socket",
            "dotnet-diagnostic-421-7-socket",
        ]);
        assert_eq!(pick_socket(42, dir, &two, Some(7)).unwrap(), dir.join("dotnet-diagnostic-42-7-socket"));
        match pick_socket(42, dir, &two, Some(8)) {
            Err(AttachError::AmbiguousSocket { pid: 42, candidates }) => assert_eq!(
                candidates,
                [dir.join("dotnet-diagnostic-42-100-socket"), dir.join("dotnet-diagnostic-42-7-socket")]
            ),
            other => panic!("{other:?}"),
        }
        let one = names(&["dotnet-diagnostic-42-100-socket", "dotnet-diagnostic-42-x-socket", "other"]);
        assert_eq!(pick_socket(42, dir, &one, None).unwrap(), dir.join("dotnet-diagnostic-42-100-socket"));
        let none = names(&["dotnet-diagnostic-4-1-socket", "dotnet-diagnostic-42--socket"]);
        assert!(matches!(pick_socket(42, dir, &none, Some(1)), Err(AttachError::NoSocket { pid: 42, .. })));
    }

    #[test]
    fn the_start_time_is_field_22_even_with_spaces_in_the_name() {
        let me = std::process::id();
        let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
        let expected: u64 = stat.rsplit(')').next().unwrap().split_whitespace().nth(19).unwrap().parse().unwrap();
        assert_eq!(start_time(me), Some(expected));
        assert_eq!(start_time(u32::MAX), None);
    }
}
