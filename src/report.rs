//! corprof's own reports on stderr, and nothing else: the one line for a caught panic (with the
//! payload dropped so no second panic escapes) and for a failed `Initialize`, the switch that
//! silences them. A leaf module: the thunks (entry), COM objects (com), hooks and EventPipe
//! callbacks report through it, and it depends on none of them.

use crate::HResult;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Says why the profiler is not running: the runtime unloads a profiler whose `Initialize`
/// (`callback`) failed, silently. Writes `corprof: Initialize failed: <NAME (0x…)>: <meaning>`
/// unless the failure is `CORPROF_E_PROFILER_CANCEL_ACTIVATION` (the documented way to decline a
/// process: a choice, not an error) or reports are silenced ([`set_quiet`]).
#[cold]
#[inline(never)]
pub(crate) fn report_initialize_failure(callback: &str, hr: HResult) {
    if hr != HResult::CORPROF_E_PROFILER_CANCEL_ACTIVATION {
        write_line(&format!("corprof: {callback} failed: {}", hr.describe()));
    }
}

#[cold]
#[inline(never)]
pub(crate) fn report_panic(name: &str, payload: Box<dyn Any + Send>) -> HResult {
    log_panic(&format_args!("callback {name}"), payload, "returned E_FAIL to the runtime");
    HResult::E_FAIL
}

/// Logs a caught panic as one line, `corprof: <what> panicked: <message>; <then>`, and drops its
/// payload without letting a further panic (from the payload's own `Drop`) escape
/// ([`drop_payload`]).
#[cold]
#[inline(never)]
pub(crate) fn log_panic(what: &dyn std::fmt::Display, payload: Box<dyn Any + Send>, then: &str) {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string());
    write_line(&format!("corprof: {what} panicked: {msg}; {then}"));
    drop_payload(payload);
}

/// How many payloads of a chain [`drop_payload`] drops before it leaks the rest.
const MAX_PAYLOAD_DROPS: usize = 16;

/// Drops a caught panic payload where no panic may escape (a thunk, a hook, the last
/// `Release`). A payload's `Drop` may panic again, handing over a new payload, whose `Drop` may
/// panic too: each is dropped in turn, under its own `catch_unwind`, until one drops quietly.
/// After [`MAX_PAYLOAD_DROPS`] the payload in hand is forgotten instead (leaked), so a chain that
/// never ends costs one allocation, not a loop forever or the process. The panic hook still sees
/// every one of those panics; corprof's report stays the one line about the first.
#[cold]
#[inline(never)]
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    let mut payload = payload;
    for _ in 0..MAX_PAYLOAD_DROPS {
        match catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(next) => payload = next,
        }
    }
    std::mem::forget(payload);
}

/// Set by [`set_quiet`].
static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences (or, with `false`, un-silences) every line corprof itself writes to stderr: caught
/// panics and failed `Initialize` calls. Reports are also off when the environment has
/// `CORPROF_QUIET` set to anything but empty or `0`; this switch cannot turn them back on then.
///
/// The switch is per profiler library (each `cdylib` has its own copy of corprof), so a profiler
/// that declines processes on purpose can call it from its constructor or `initialize`.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether corprof's reports are silenced, by [`set_quiet`] or `CORPROF_QUIET`.
pub fn is_quiet() -> bool {
    // Read once, when the runtime asks for the class factory (or at the first report): the
    // setting then holds for the whole process, and no callback reads the environment while the
    // app may be changing it.
    static ENV: OnceLock<bool> = OnceLock::new();
    QUIET.load(Ordering::Relaxed)
        || *ENV.get_or_init(|| std::env::var_os("CORPROF_QUIET").is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Writes one line to stderr unless reports are silenced. One write under the stderr lock, so
/// lines from several threads do not interleave; a failed write is ignored (nowhere to report it).
/// Control characters and Unicode line breaks in `line` are escaped ([`escape_controls`]), so a
/// panic message cannot end the line early and forge a second report.
pub(crate) fn write_line(line: &str) {
    if is_quiet() {
        return;
    }
    let mut text = escape_controls(line);
    text.push('\n');
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
}

/// `text` with every control character (`\n`, `\r`, ESC, …) and U+2028/U+2029 written as Rust
/// writes them in a string literal (`\n`, `\u{1b}`); everything else, backslashes included, as is.
fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}
