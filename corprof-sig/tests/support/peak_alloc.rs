//! A counting global allocator for the decoder-bounds tests of corprof and corprof-sig (each
//! includes this file with `#[path]`, in a test binary of its own, whose allocator it becomes):
//! the peak of live heap bytes a piece of code adds, checked against 64 MiB.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Forwards to the system allocator, keeping the live byte count and its peak. Refuses to go
/// past [`CEILING`] (the process then aborts with "memory allocation failed"), so that a decoder
/// that lost its bound fails this test instead of exhausting the machine.
struct PeakAlloc;

const CEILING: usize = 1 << 30;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl PeakAlloc {
    fn grew(size: usize) {
        let live = LIVE.fetch_add(size, Ordering::SeqCst) + size;
        PEAK.fetch_max(live, Ordering::SeqCst);
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if LIVE.load(Ordering::SeqCst) + layout.size() > CEILING {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            Self::grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if LIVE.load(Ordering::SeqCst) + new_size > CEILING {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as a new block before the old one goes: the moment a moving realloc has both.
            Self::grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        }
        p
    }
}

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

pub const LIMIT: usize = 64 << 20;

pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `f`, returning its result and the peak of heap bytes it added to what was live before.
pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let value = f();
    (value, PEAK.load(Ordering::SeqCst) - base)
}

/// `f`'s peak, checked against 64 MiB, printed with `what`.
pub fn bounded<T>(what: &str, f: impl FnOnce() -> T) -> (T, usize) {
    let (value, peak) = peak_of(f);
    eprintln!("{what}: peak {peak} bytes");
    assert!(peak < LIMIT, "{what}: peak {peak} bytes, over 64 MiB");
    (value, peak)
}
