//! An EventPipe session for AllocationTick opened over the runtime's diagnostics IPC socket, by
//! the profiler in its own process: how the alloc mode samples on .NET Core 3.1, which has no
//! in-process EventPipe for profilers (ICorProfilerInfo12 came with .NET 5) and whose only other
//! source, ObjectAllocated, sends every allocation down the runtime's slow path (7.7–8.8× the
//! app's time for 24-byte objects; this session measured within the noise: BENCHMARKS.md §9).
//!
//! The runtime's diagnostics server takes `CollectTracing` (the protocol of dotnet/diagnostics'
//! `ipc-protocol.md`) on `$TMPDIR/dotnet-diagnostic-<pid>-<key>-socket` and streams the session's
//! events back on that connection (nettrace.rs reads them), each AllocationTick with the stack
//! the runtime walked for it. `StopTracing` on a second connection ends it; the runtime then adds
//! its rundown and closes the stream.

use crate::alloc_tick::{self, AllocationTick};
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::Duration;

const MAGIC: &[u8; 14] = b"DOTNET_IPC_V1\0";
const COMMAND_SET_EVENTPIPE: u8 = 0x02;
const COMMAND_STOP_TRACING: u8 = 0x01;
const COMMAND_COLLECT_TRACING: u8 = 0x02;
const COMMAND_SET_SERVER: u8 = 0xFF;
const SERVER_OK: u8 = 0x00;
/// The session's buffer (MB): the runtime drops events past it; ticks come about one per 100 KB.
const BUFFER_MB: u32 = 16;
/// `nettrace`, the format `CollectTracing` asks for.
const FORMAT_NETTRACE: u32 = 1;
/// How long the server may take to answer a command.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long stopping waits for the stream's end (the rundown and the last events).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A running session and the thread reading it.
pub(crate) struct IpcSession {
    socket: PathBuf,
    id: u64,
    reader: Option<(JoinHandle<()>, Receiver<io::Result<()>>)>,
}

impl IpcSession {
    /// Opens the session on the process's own diagnostics `socket` and reads it on a thread of
    /// its own, giving each AllocationTick and its stack (addresses, innermost first) to
    /// `on_tick` there.
    fn start(
        socket: PathBuf,
        on_tick: impl FnMut(AllocationTick, &[u64]) + Send + 'static,
    ) -> Result<IpcSession, String> {
        let mut payload = Vec::new();
        payload.extend(BUFFER_MB.to_le_bytes());
        payload.extend(FORMAT_NETTRACE.to_le_bytes());
        payload.extend(1u32.to_le_bytes()); // one provider
        payload.extend(alloc_tick::GC_KEYWORD.to_le_bytes());
        payload.extend(5u32.to_le_bytes()); // verbose, AllocationTick's level
        payload.extend(text(alloc_tick::RUNTIME_PROVIDER));
        payload.extend(0u32.to_le_bytes()); // no filter data
        let (stream, answer) = command(&socket, COMMAND_COLLECT_TRACING, &payload)
            .map_err(|e| format!("CollectTracing on {}: {e}", socket.display()))?;
        let id = u64::from_le_bytes(answer.get(..8).and_then(|b| b.try_into().ok()).ok_or("a short session ID")?);
        stream.set_read_timeout(None).map_err(|e| e.to_string())?;
        let (done, ended) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("corprof-ticks".to_string())
            .spawn(move || {
                let _ = done.send(crate::nettrace::read_ticks(io::BufReader::new(stream), on_tick));
            })
            .map_err(|e| format!("cannot start the thread reading the session: {e}"))?;
        Ok(IpcSession { socket, id, reader: Some((thread, ended)) })
    }

    /// Ends the session and waits for the reader to take the rest of the stream (at most
    /// [`DRAIN_TIMEOUT`]); says why if the stream could not be read to its end.
    pub(crate) fn stop(mut self) -> Result<(), String> {
        let stopped = command(&self.socket, COMMAND_STOP_TRACING, &self.id.to_le_bytes());
        let Some((thread, ended)) = self.reader.take() else { return Ok(()) };
        // The runtime may already have ended the session itself (it does at its shutdown).
        let read = match ended.recv_timeout(DRAIN_TIMEOUT) {
            Ok(read) => read.map_err(|e| format!("the session's stream: {e}")),
            Err(_) => return Err(format!("the session's stream did not end within {DRAIN_TIMEOUT:?}")),
        };
        let _ = thread.join();
        match (stopped, read) {
            (_, Err(e)) => Err(e),
            _ => Ok(()),
        }
    }
}

/// Whether the runtime was told not to open its diagnostics socket (`DOTNET_EnableDiagnostics` or
/// `COMPlus_EnableDiagnostics` set to 0, which CoreCLR 3.1 reads as a number).
pub(crate) fn diagnostics_disabled() -> bool {
    ["DOTNET_EnableDiagnostics", "COMPlus_EnableDiagnostics"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| v.trim() == "0"))
}

/// Starts the session once the runtime's diagnostics server listens: CoreCLR 3.1 opens its
/// socket after the profiler's Initialize, so a thread waits for it (at most `wait`) and gives
/// the session, or why there is none, to `started`.
pub(crate) fn start_when_listening(
    wait: Duration,
    on_tick: impl FnMut(AllocationTick, &[u64]) + Send + 'static,
    started: impl FnOnce(Result<IpcSession, String>) + Send + 'static,
) {
    let spawned = std::thread::Builder::new().name("corprof-ticks-start".to_string()).spawn(move || {
        let pid = std::process::id();
        let deadline = std::time::Instant::now() + wait;
        let socket = loop {
            match corprof_attach::find_socket(pid) {
                Ok(socket) => break Ok(socket),
                Err(e) if std::time::Instant::now() >= deadline => break Err(format!("after {wait:?}: {e}")),
                // The server makes its socket early in the runtime's start: look again soon.
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        };
        started(socket.and_then(|socket| IpcSession::start(socket, on_tick)));
    });
    if let Err(e) = spawned {
        eprintln!("corprof: alloc: cannot start the thread that opens the AllocationTick session: {e}");
    }
}

/// A UTF-16 string as the protocol writes it: its length in units with the NUL, then the units.
fn text(s: &str) -> Vec<u8> {
    let units: Vec<u16> = s.encode_utf16().chain([0]).collect();
    let mut b = (units.len() as u32).to_le_bytes().to_vec();
    b.extend(units.iter().flat_map(|u| u.to_le_bytes()));
    b
}

/// Sends one EventPipe command on a new connection and reads the server's answer: the
/// connection (a session's events follow on it) and the answer's payload.
fn command(socket: &PathBuf, id: u8, payload: &[u8]) -> io::Result<(UnixStream, Vec<u8>)> {
    let mut stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    let size = u16::try_from(20 + payload.len()).map_err(|_| io::Error::other("a command too long"))?;
    let mut message = MAGIC.to_vec();
    message.extend(size.to_le_bytes());
    message.extend([COMMAND_SET_EVENTPIPE, id]);
    message.extend(0u16.to_le_bytes());
    message.extend(payload);
    stream.write_all(&message)?;
    let mut header = [0u8; 20];
    stream.read_exact(&mut header)?;
    if &header[..14] != MAGIC {
        return Err(io::Error::other(format!("an answer without the protocol's magic: {header:02X?}")));
    }
    let size = usize::from(u16::from_le_bytes([header[14], header[15]]));
    let mut answer = vec![0u8; size.saturating_sub(20)];
    stream.read_exact(&mut answer)?;
    if header[16] != COMMAND_SET_SERVER || header[17] != SERVER_OK {
        let hr = answer.get(..4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
        return Err(io::Error::other(format!("refused ({:#010X})", hr.unwrap_or(0))));
    }
    Ok((stream, answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_counted_utf16_with_their_nul() {
        assert_eq!(text("Ab"), vec![3, 0, 0, 0, b'A', 0, b'b', 0, 0, 0]);
    }
}
