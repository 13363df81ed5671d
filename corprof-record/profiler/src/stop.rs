//! Ending a recording before the app ends: the command's request (a file it creates beside OUT),
//! an attach's duration, and SIGINT to the app.
//!
//! SIGINT ends a .NET app on Linux by that signal without its Shutdown (seen on CoreCLR 8.0.4
//! and 3.1.23, unless a Console.CancelKeyPress handler cancels it), so
//! the recording, which lives in the app, would be lost. At launch the library puts a handler of
//! its own in front of the one it finds: the first SIGINT only sets a flag; the watch thread
//! ([`Watch`]) sees it, writes the recording, then raises SIGINT again, which the handler now
//! passes to the handler it found, so the app ends as it would have (a Console.CancelKeyPress
//! handler the runtime installs later still comes first and still decides). Only the write is
//! added, on a thread of its own: nothing runs in the handler but two atomic stores, and no
//! thread of the app is held while the recording is written. SIGTERM needs nothing: both
//! runtimes end the app through its Shutdown on it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The action SIGINT had before the library's handler (restored by nobody: the handler passes
/// the signal on to it once the recording is written).
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
/// A SIGINT came that the watch thread has not yet handled.
static PENDING: AtomicBool = AtomicBool::new(false);
/// The recording is written: every SIGINT goes on to the previous action.
static DONE: AtomicBool = AtomicBool::new(false);

/// Puts the library's SIGINT handler in front of the current one; does nothing when SIGINT is
/// ignored (the app was started so, and stays so) or a handler is there already.
pub(crate) fn hold_sigint() -> Result<(), String> {
    // SAFETY: a zeroed sigaction is a valid out-parameter.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `old` is a valid, writable sigaction; a null new action changes nothing.
    if unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old) } != 0 {
        return Err(format!("cannot read SIGINT's action: {}", std::io::Error::last_os_error()));
    }
    if old.sa_sigaction == libc::SIG_IGN || PREVIOUS.set(old).is_err() {
        return Ok(());
    }
    // SAFETY: as above, filled in below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_sigint as *const () as usize;
    // SA_RESTART: a system call the signal interrupts goes on, as if no signal had come.
    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
    // SAFETY: `action` is a valid sigaction (empty mask, a handler of the SA_SIGINFO shape).
    if unsafe { libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut()) } != 0 {
        return Err(format!("cannot handle SIGINT: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Whether a SIGINT is waiting for the recording to be written.
pub(crate) fn sigint_pending() -> bool {
    PENDING.load(Ordering::SeqCst)
}

/// The recording is written (or there is none to write): a SIGINT that came meanwhile is
/// raised again, and every later one goes straight on to the previous action.
pub(crate) fn release_sigint() {
    DONE.store(true, Ordering::SeqCst);
    if PENDING.swap(false, Ordering::SeqCst) {
        // SAFETY: getpid cannot fail; kill with our own pid and SIGINT only raises the signal.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
    }
}

/// The handler: before the recording is written, only a flag; after, the previous action.
extern "C" fn on_sigint(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // First the flag, then the check: with `release_sigint`'s store then swap, one of the two
    // sees the other, so a SIGINT is never lost between them.
    PENDING.store(true, Ordering::SeqCst);
    if !DONE.load(Ordering::SeqCst) || !PENDING.swap(false, Ordering::SeqCst) {
        return;
    }
    let Some(previous) = PREVIOUS.get() else { return };
    match previous.sa_sigaction {
        libc::SIG_IGN => {}
        libc::SIG_DFL => {
            // SAFETY: a zeroed sigaction with SIG_DFL is the default action; sigaction and
            // raise are async-signal-safe. SIGINT is blocked while this handler runs, so the
            // raised one ends the process as it returns.
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &default, std::ptr::null_mut());
                libc::raise(sig);
            }
        }
        handler if previous.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous action was installed as an SA_SIGINFO handler, so it has this
            // shape, and it gets the kernel's own arguments for this delivery.
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(handler) };
            handler(sig, info, context);
        }
        handler => {
            // SAFETY: an action without SA_SIGINFO is a handler taking the signal's number.
            let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
            handler(sig);
        }
    }
}
