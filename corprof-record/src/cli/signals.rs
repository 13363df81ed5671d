//! SIGINT and SIGTERM to the command: caught (the command must write the recording, not die
//! with it), counted, and told apart by sender — the terminal's Ctrl-C reaches the whole
//! foreground process group, the app included; a `kill` to the command reaches the command only.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

/// `si_code` of a signal the kernel sent (the terminal's Ctrl-C is one), not `kill`.
const SI_KERNEL: libc::c_int = 0x80;

/// The caught signals since the last [`Signals::take`].
#[derive(Default)]
struct Caught {
    count: AtomicUsize,
    signal: AtomicI32,
    /// One was sent by a process (`kill`), not by the kernel (the terminal's Ctrl-C).
    any_sent: AtomicBool,
}

/// The command's handlers for SIGINT and SIGTERM, removed when dropped (the default actions
/// come back).
pub struct Signals {
    caught: Arc<Caught>,
    ids: Vec<signal_hook_registry::SigId>,
}

/// A batch of signals: the last one's number, and whether any was sent by a process (`kill`),
/// so may have reached the command alone.
#[derive(Clone, Copy, Debug)]
pub struct Batch {
    pub signal: i32,
    pub sent: bool,
}

impl Signals {
    /// Catches SIGINT and SIGTERM from now on (not one the command was started ignoring).
    pub fn catch() -> std::io::Result<Signals> {
        let caught = Arc::new(Caught::default());
        let mut ids = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM] {
            if ignored(sig)? {
                // Started so on purpose (`nohup`, a script's background job): the app inherits
                // it, and the command too leaves the signal alone.
                continue;
            }
            let c = Arc::clone(&caught);
            // SAFETY: the action only stores to atomics (async-signal-safe) and reads the
            // kernel's siginfo for this delivery.
            let id = unsafe {
                signal_hook_registry::register_sigaction(sig, move |info: &libc::siginfo_t| {
                    if info.si_code != SI_KERNEL {
                        c.any_sent.store(true, Ordering::SeqCst);
                    }
                    c.signal.store(sig, Ordering::SeqCst);
                    c.count.fetch_add(1, Ordering::SeqCst);
                })
            };
            ids.push(id?);
        }
        Ok(Signals { caught, ids })
    }

    /// The signals caught since the last call, as one batch (two that came together, as
    /// `timeout` sends them to the command and to its group, are one stop, not two).
    pub fn take(&self) -> Option<Batch> {
        if self.caught.count.swap(0, Ordering::SeqCst) == 0 {
            return None;
        }
        let sent = self.caught.any_sent.swap(false, Ordering::SeqCst);
        Some(Batch { signal: self.caught.signal.load(Ordering::SeqCst), sent })
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook_registry::unregister(id);
        }
    }
}

/// Whether `sig`'s action is to ignore it.
fn ignored(sig: libc::c_int) -> std::io::Result<bool> {
    // SAFETY: a zeroed sigaction is a valid out-parameter.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `old` is a valid, writable sigaction; a null new action changes nothing.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(old.sa_sigaction == libc::SIG_IGN)
}

/// The signal's name, as the messages say it.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGKILL => "SIGKILL",
        _ => "a signal",
    }
}
