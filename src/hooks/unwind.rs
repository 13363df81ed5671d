//! The exception-unwind case of the hooks: an exception unwinding out of a hooked function ends
//! it without a `leave` hook, so the runtime's unwind callbacks, forwarded here, call
//! [`FunctionHooks::unwind`](super::FunctionHooks::unwind) instead.
//!
//! Takes the three callbacks (`ExceptionUnwindFunctionEnter`, `ExceptionUnwindFunctionLeave`,
//! `ExceptionCatcherEnter`) and gives the hooks one `unwind` per hooked function an exception
//! leaves. The runtime reports, for every frame the second pass of an exception unwinds,
//! UnwindFunctionEnter(f) … UnwindFunctionLeave(); the frame that catches gets its
//! UnwindFunctionEnter and then CatcherEnter, and stays. UnwindFunctionLeave does not say which
//! function it ends, so each thread keeps the functions whose unwind it entered (a few per
//! exception in flight), and the mapper's answers are kept by FunctionID to know whether a
//! function is hooked and with what data.

use super::{FunctionHooks, report_hook_panic};
use crate::types::FunctionID;
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{OnceLock, RwLock};

/// Frames whose unwind a thread entered and has not left, at most: a deeper unwind (nested
/// exceptions thrown from finally blocks, thousands deep) drops the oldest, whose functions then
/// get no `unwind`.
const MAX_UNWINDING: usize = 4096;

/// FunctionID → the raw hook data the mapper gave it, for every hooked function.
static HOOKED: OnceLock<RwLock<HashMap<FunctionID, usize>>> = OnceLock::new();

/// `unwind::<P>` of the installed profiler type (0 until [`install`](super::install) sets it).
static UNWIND: AtomicUsize = AtomicUsize::new(0);

static UNWIND_PANICKED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The functions whose unwind this thread entered, innermost last, with their hook data if
    /// they are hooked.
    static UNWINDING: RefCell<Vec<(FunctionID, Option<usize>)>> = const { RefCell::new(Vec::new()) };
}

fn hooked() -> &'static RwLock<HashMap<FunctionID, usize>> {
    HOOKED.get_or_init(Default::default)
}

/// Remembers that the mapper hooked `function` with `raw` data.
pub(super) fn record(function: FunctionID, raw: usize) {
    crate::sync::write(hooked()).insert(function, raw);
}

/// Makes the unwind callbacks call `P`'s `unwind`.
pub(super) fn set_profiler<P: FunctionHooks>() {
    UNWIND.store(run_unwind::<P> as fn(usize) as usize, Ordering::Release);
}

/// Calls the installed profiler's `unwind` with `raw` data, catching a panic.
fn run_unwind<P: FunctionHooks>(raw: usize) {
    let Some(profiler) = super::instance::<P>() else { return };
    let data = <P::Data as super::sealed::Sealed>::from_raw(raw);
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| profiler.unwind(data))) {
        report_hook_panic(&UNWIND_PANICKED, "unwind", payload);
    }
}

/// Forward `ExceptionUnwindFunctionEnter` here: an exception starts unwinding `function`.
pub fn exception_unwind_function_enter(function: FunctionID) {
    let data = HOOKED.get().and_then(|h| crate::sync::read(h).get(&function).copied());
    UNWINDING.with(|u| {
        let mut u = u.borrow_mut();
        if u.len() >= MAX_UNWINDING {
            u.remove(0);
        }
        u.push((function, data));
    });
}

/// Forward `ExceptionUnwindFunctionLeave` here: the function whose unwind was entered last is
/// gone; a hooked one gets its [`unwind`](FunctionHooks::unwind).
pub fn exception_unwind_function_leave() {
    let Some((_, Some(raw))) = UNWINDING.with(|u| u.borrow_mut().pop()) else { return };
    let hook = UNWIND.load(Ordering::Acquire);
    if hook != 0 {
        // SAFETY: `UNWIND` is 0 or what `set_profiler` stored: a `fn(usize)`.
        let hook: fn(usize) = unsafe { std::mem::transmute::<usize, fn(usize)>(hook) };
        hook(raw);
    }
}

/// Forward `ExceptionCatcherEnter` here: `function` catches the exception. Its unwind was
/// entered but it stays on the stack (it returns normally later), so it is taken off the
/// unwinding frames without an `unwind`. An outer exception's frames stay: an exception thrown
/// and caught inside a `finally` that an outer exception runs ends before the outer one goes on.
pub fn exception_catcher_enter(function: FunctionID) {
    UNWINDING.with(|u| {
        let mut u = u.borrow_mut();
        if u.last().is_some_and(|(top, _)| *top == function) {
            u.pop();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What the test's stand-in for `run_unwind` was called with.
    static SEEN: Mutex<Vec<usize>> = Mutex::new(Vec::new());

    fn seen(raw: usize) {
        SEEN.lock().unwrap().push(raw);
    }

    fn id(n: usize) -> FunctionID {
        // SAFETY: a made-up ID, only compared and hashed, never given to the runtime.
        unsafe { FunctionID::from_raw(n) }
    }

    fn take() -> Vec<usize> {
        std::mem::take(&mut *SEEN.lock().unwrap())
    }

    /// The callbacks' order for an exception from Deepest (hooked) through Middle (not hooked)
    /// and Thrower (hooked) to Catcher (hooked), and then for one thrown and caught inside a
    /// finally that an outer unwind runs.
    #[test]
    fn each_hooked_function_an_exception_leaves_gets_one_unwind() {
        UNWIND.store(seen as fn(usize) as usize, Ordering::Release);
        let (deepest, middle, thrower, catcher) = (id(0x10), id(0x20), id(0x30), id(0x40));
        record(deepest, 1);
        record(thrower, 3);
        record(catcher, 4);
        std::thread::spawn(move || {
            for f in [deepest, middle, thrower] {
                exception_unwind_function_enter(f);
                exception_unwind_function_leave();
            }
            exception_unwind_function_enter(catcher);
            exception_catcher_enter(catcher);
            assert_eq!(take(), [1, 3], "the catcher stays");
            assert!(UNWINDING.with(|u| u.borrow().is_empty()));

            // Thrower's unwind runs a finally, in which Deepest throws and Catcher catches.
            exception_unwind_function_enter(thrower);
            exception_unwind_function_enter(deepest);
            exception_unwind_function_leave();
            exception_unwind_function_enter(catcher);
            exception_catcher_enter(catcher);
            assert_eq!(take(), [1], "the inner exception ends");
            exception_unwind_function_leave();
            assert_eq!(take(), [3], "the outer one goes on");
            // A leave with nothing entered (a profiler attached mid-unwind) does nothing.
            exception_unwind_function_leave();
            assert_eq!(take(), [0usize; 0]);
        })
        .join()
        .unwrap();
    }
}
