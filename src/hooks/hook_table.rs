//! [`HookTable`]: where a mapper puts what its hooks need, found again by index.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

const CHUNK: usize = 4096;

/// `CHUNK` slots, each filled once.
type Chunk<T> = Box<[OnceLock<T>]>;

/// An append-only table read without a lock: the mapper ([`FunctionHooks::map_function`])
/// [`push`](HookTable::push)es an entry per hooked function and returns its index as the client
/// data; the hooks [`get`](HookTable::get) it back with one bounds check and two loads.
///
/// Entries never move (storage grows by chunks of 4096, allocated on demand) and are never
/// removed; the capacity is fixed at creation.
///
/// [`FunctionHooks::map_function`]: super::FunctionHooks::map_function
pub struct HookTable<T> {
    chunks: Box<[OnceLock<Chunk<T>>]>,
    next: AtomicUsize,
}

impl<T> HookTable<T> {
    /// A table for up to `capacity` entries (rounded up to a multiple of 4096).
    pub fn with_capacity(capacity: usize) -> HookTable<T> {
        let chunks = capacity.div_ceil(CHUNK).max(1);
        HookTable { chunks: (0..chunks).map(|_| OnceLock::new()).collect(), next: AtomicUsize::new(0) }
    }

    /// Stores `entry` and gives its index, or `None` when the table is full.
    pub fn push(&self, entry: T) -> Option<usize> {
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        let chunk = self.chunks.get(index / CHUNK)?;
        let slots = chunk.get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
        // The index is this call's alone, so the slot is empty.
        let _ = slots[index % CHUNK].set(entry);
        Some(index)
    }

    /// The entry at `index`, once its `push` has finished.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&T> {
        self.chunks.get(index / CHUNK)?.get()?[index % CHUNK].get()
    }

    /// The entries pushed so far, in index order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.next.load(Ordering::Acquire)).filter_map(|i| self.get(i))
    }
}

impl<T> Default for HookTable<T> {
    /// Room for 4 million entries (more functions than any process JIT-compiles).
    fn default() -> Self {
        HookTable::with_capacity(1 << 22)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_by_index_and_a_full_table_refuses() {
        let table = HookTable::with_capacity(1);
        assert_eq!(table.chunks.len(), 1);
        for i in 0..CHUNK {
            assert_eq!(table.push(i * 2), Some(i));
        }
        assert_eq!(table.push(1), None, "the table holds one chunk");
        assert_eq!(table.get(7), Some(&14));
        assert_eq!(table.get(CHUNK), None);
        assert_eq!(table.iter().count(), CHUNK);
    }
}
