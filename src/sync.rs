//! Locks that outlive a panic: [`lock`] a [`Mutex`], [`read`](fn@read) or [`write`](fn@write)
//! an [`RwLock`].
//!
//! A lock is poisoned when a thread panics while holding its guard, and from then on
//! [`Mutex::lock`] (and [`RwLock::read`], [`RwLock::write`]) answers `Err`. In a profiler such a
//! panic happens in a callback, which corprof catches at the callback's edge: it is logged, the
//! callback answers `E_FAIL`, and the app and the profiler run on (see
//! [`CorProfilerCallback`](crate::CorProfilerCallback)). Unwrapping the lock's result there would
//! turn that one panic into a panic in every later callback that takes the lock, for the rest of
//! the process; these functions take the guard anyway.
//!
//! That is right for the state profilers keep behind a lock (counts, maps, a log, the current
//! session), where each change is whole before anything that could panic: a poisoned lock's data
//! are then as good as the last finished change left them. A lock guarding several changes that
//! only make sense together needs its own check instead.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `m`'s guard, whether or not a thread panicked while holding it (the module docs say why).
///
/// ```
/// use std::sync::Mutex;
/// let counts = Mutex::new(0);
/// let _ = std::panic::catch_unwind(|| {
///     let _held = counts.lock().unwrap();
///     panic!("a callback panicked");
/// });
/// assert!(counts.is_poisoned());
/// *corprof::sync::lock(&counts) += 1;
/// assert_eq!(*corprof::sync::lock(&counts), 1);
/// ```
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `l`'s shared guard, whether or not a thread panicked while writing it.
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `l`'s exclusive guard, whether or not a thread panicked while writing it.
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each function hands out the guard of a poisoned lock, with the data the last finished
    /// change left.
    #[test]
    fn poisoned_locks_are_taken_anyway() {
        let m = Mutex::new(1);
        let l = RwLock::new(1);
        let _ = std::thread::scope(|s| {
            s.spawn(|| {
                let _m = m.lock().unwrap();
                let _l = l.write().unwrap();
                panic!("poisons both");
            })
            .join()
        });
        assert!(m.is_poisoned() && l.is_poisoned());
        *lock(&m) += 1;
        *write(&l) += 1;
        assert_eq!((*lock(&m), *read(&l)), (2, 2));
    }
}
