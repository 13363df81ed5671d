//! Thread names: a table from [`ThreadID`] to the managed thread's name and its OS thread, fed by
//! the thread callbacks and read from any thread.
//!
//! The runtime says a thread's name once, when it changes (`ThreadNameChanged`), and its OS
//! thread once, when it is assigned (`ThreadAssignedToOSThread`); a sampler that wants them on
//! every sample keeps them itself. [`ThreadNames`] is that table: the profiler forwards four
//! callbacks to it and asks it from anywhere (a sampler thread, a hook, Shutdown).
//!
//! ```
//! use corprof::threads::ThreadNames;
//! use corprof::types::{DWORD, ThreadID};
//! use corprof::{CorProfilerCallback, Result, WStr};
//!
//! #[derive(Default)]
//! struct Sampler {
//!     threads: ThreadNames,
//! }
//!
//! impl CorProfilerCallback for Sampler {
//!     // With COR_PRF_MONITOR_THREADS in the event mask:
//!     fn thread_created(&self, thread: ThreadID) -> Result<()> {
//!         self.threads.created(thread);
//!         Ok(())
//!     }
//!     fn thread_destroyed(&self, thread: ThreadID) -> Result<()> {
//!         self.threads.destroyed(thread);
//!         Ok(())
//!     }
//!     fn thread_assigned_to_os_thread(&self, thread: ThreadID, os_thread: DWORD) -> Result<()> {
//!         self.threads.assigned_to_os_thread(thread, os_thread);
//!         Ok(())
//!     }
//!     fn thread_name_changed(&self, thread: ThreadID, name: Option<WStr<'_>>) -> Result<()> {
//!         self.threads.name_changed(thread, name);
//!         Ok(())
//!     }
//! }
//! ```
//!
//! A `ThreadID` is the address of the runtime's thread object, which a later thread may reuse:
//! [`destroyed`](ThreadNames::destroyed) removes the entry and [`created`](ThreadNames::created)
//! starts a fresh one, so a reused ID never reports the name of the thread it belonged to
//! before. Threads that existed before the profiler attached get no `ThreadCreated`; their
//! entries start with the first name or OS thread the runtime reports.

use crate::WStr;
use crate::types::{DWORD, ThreadID};
use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The most threads the table holds; entries for more are not made (a process with this many
/// live managed threads has other problems, and the table stays bounded).
pub const MAX_THREADS: usize = 1 << 16;

/// Names longer than this many bytes are cut (at a character boundary).
pub const MAX_NAME_LEN: usize = 1024;

/// What the table knows about one live thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    /// The managed name (`Thread.Name`), if the runtime reported one since the thread was created.
    pub name: Option<Arc<str>>,
    /// The OS thread the managed thread runs on (Linux: its `gettid()`), once assigned.
    pub os_thread_id: Option<u32>,
}

/// A [`ThreadID`] → [`ThreadInfo`] table shared by the callbacks that feed it and the threads
/// that read it. Readers take a shared lock; writers (the thread callbacks, rare) an exclusive
/// one held for a map operation.
#[derive(Debug, Default)]
pub struct ThreadNames {
    threads: RwLock<HashMap<ThreadID, ThreadInfo>>,
}

impl ThreadNames {
    /// An empty table.
    pub fn new() -> ThreadNames {
        ThreadNames::default()
    }

    /// `ThreadCreated`: makes an entry for `thread`. One that exists already stays: a name given
    /// to a `Thread` before it starts arrives (ThreadNameChanged) before the runtime reports
    /// the thread created. A destroyed thread's entry is gone ([`destroyed`](Self::destroyed)),
    /// so a reused ID starts empty.
    pub fn created(&self, thread: ThreadID) {
        self.update(thread, |_| {});
    }

    /// `ThreadDestroyed`: removes `thread`'s entry.
    pub fn destroyed(&self, thread: ThreadID) {
        self.write().remove(&thread);
    }

    /// `ThreadNameChanged`: `name` is the thread's new name (`None` or empty: unnamed again).
    pub fn name_changed(&self, thread: ThreadID, name: Option<WStr<'_>>) {
        let name = name.map(|n| n.to_string_lossy()).filter(|n| !n.is_empty());
        self.set_name(thread, name.as_deref());
    }

    /// [`name_changed`](Self::name_changed) with the name as Rust text.
    pub fn set_name(&self, thread: ThreadID, name: Option<&str>) {
        let name = name.map(|n| Arc::from(truncate(n, MAX_NAME_LEN)));
        self.update(thread, |info| info.name = name);
    }

    /// `ThreadAssignedToOSThread`: `thread` runs on OS thread `os_thread`.
    pub fn assigned_to_os_thread(&self, thread: ThreadID, os_thread: DWORD) {
        // DWORD is u32 in the headers corprof builds from; the cast keeps any other one working.
        #[allow(clippy::unnecessary_cast)]
        let os = os_thread as u32;
        self.update(thread, |info| info.os_thread_id = Some(os));
    }

    /// What the table knows about `thread`, `None` when it is not a live thread it has heard of.
    pub fn get(&self, thread: ThreadID) -> Option<ThreadInfo> {
        self.read().get(&thread).cloned()
    }

    /// `thread`'s name, if it is live and named.
    pub fn name(&self, thread: ThreadID) -> Option<Arc<str>> {
        self.read().get(&thread)?.name.clone()
    }

    /// The OS thread `thread` runs on, if it is live and assigned.
    pub fn os_thread_id(&self, thread: ThreadID) -> Option<u32> {
        self.read().get(&thread)?.os_thread_id
    }

    /// How many live threads the table holds.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the table holds no thread.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of every entry, for a report.
    pub fn snapshot(&self) -> Vec<(ThreadID, ThreadInfo)> {
        self.read().iter().map(|(id, info)| (*id, info.clone())).collect()
    }

    /// Changes `thread`'s entry, making one if needed (a thread from before an attach).
    fn update(&self, thread: ThreadID, change: impl FnOnce(&mut ThreadInfo)) {
        let mut threads = self.write();
        if threads.len() >= MAX_THREADS && !threads.contains_key(&thread) {
            return;
        }
        change(threads.entry(thread).or_default());
    }

    // A panic while the lock is held cannot leave a half-made entry (every change is one map
    // operation), so a poisoned lock's data is still good.
    fn read(&self) -> RwLockReadGuard<'_, HashMap<ThreadID, ThreadInfo>> {
        crate::sync::read(&self.threads)
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<ThreadID, ThreadInfo>> {
        crate::sync::write(&self.threads)
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> ThreadID {
        // SAFETY: a made-up ID, only compared and hashed, never given to the runtime.
        unsafe { ThreadID::from_raw(n) }
    }

    #[test]
    fn names_and_os_threads_follow_the_callbacks() {
        let t = ThreadNames::new();
        t.created(id(1));
        assert_eq!(t.get(id(1)), Some(ThreadInfo::default()));
        t.assigned_to_os_thread(id(1), 4242);
        let units: Vec<u16> = "worker-α".encode_utf16().collect();
        t.name_changed(id(1), Some(WStr::from_units(&units)));
        assert_eq!(t.name(id(1)).as_deref(), Some("worker-α"));
        assert_eq!(t.os_thread_id(id(1)), Some(4242));
        t.name_changed(id(1), None);
        assert_eq!(t.name(id(1)), None, "unnamed again");
        assert_eq!(t.name(id(2)), None, "an unknown thread");
    }

    #[test]
    fn a_reused_id_does_not_give_the_destroyed_threads_name() {
        let t = ThreadNames::new();
        t.created(id(7));
        t.set_name(id(7), Some("old"));
        t.assigned_to_os_thread(id(7), 1);
        t.destroyed(id(7));
        assert_eq!(t.get(id(7)), None, "gone with its thread");
        t.created(id(7));
        assert_eq!(t.get(id(7)), Some(ThreadInfo::default()), "a fresh entry for the new thread");
    }

    #[test]
    fn a_name_given_before_the_thread_starts_survives_its_creation() {
        let t = ThreadNames::new();
        t.set_name(id(8), Some("early"));
        t.created(id(8));
        assert_eq!(t.name(id(8)).as_deref(), Some("early"));
    }

    #[test]
    fn threads_from_before_an_attach_get_entries_and_the_table_is_bounded() {
        let t = ThreadNames::new();
        t.set_name(id(3), Some("main"));
        assert_eq!(t.name(id(3)).as_deref(), Some("main"));
        let long = "é".repeat(MAX_NAME_LEN);
        t.set_name(id(3), Some(&long));
        assert_eq!(t.name(id(3)).unwrap().len(), MAX_NAME_LEN);
        for n in 10..10 + MAX_THREADS {
            t.created(id(n));
        }
        assert_eq!(t.len(), MAX_THREADS);
        t.set_name(id(1), Some("one too many"));
        assert_eq!(t.get(id(1)), None);
        t.set_name(id(3), Some("still updated"));
        assert_eq!(t.name(id(3)).as_deref(), Some("still updated"));
    }

    #[test]
    fn readers_on_other_threads_see_the_table() {
        let t = Arc::new(ThreadNames::new());
        t.created(id(1));
        t.set_name(id(1), Some("sampled"));
        let reader = Arc::clone(&t);
        let name = std::thread::spawn(move || reader.name(id(1))).join().unwrap();
        assert_eq!(name.as_deref(), Some("sampled"));
    }
}
