//! Turns what the GC callbacks report (objects and roots by address, classes by runtime ID) into
//! a [`Snapshot`]: objects sorted by address, references and roots resolved to indices, classes
//! interned.
//!
//! The builder stores only flat arrays (about 28 bytes per object and 8 per reference while
//! collecting) and stops taking objects at its limit, so its memory stays bounded whatever the
//! heap.

use super::{Root, RootKind, Snapshot};
use std::collections::HashMap;

/// Collects one GC's object graph. Feed it from ObjectReferences and RootReferences2, then call
/// [`SnapshotBuilder::build`] once the GC has finished.
#[derive(Debug)]
pub struct SnapshotBuilder {
    max_objects: usize,
    /// Four references per object on average at most (heaps average one to two).
    max_refs: usize,
    addresses: Vec<u64>,
    sizes: Vec<u64>,
    classes: Vec<u32>,
    ref_start: Vec<u32>,
    refs: Vec<u64>,
    roots: Vec<(u64, RootKind)>,
    /// Runtime class ID → interned index.
    class_index: HashMap<u64, u32>,
    class_ids: Vec<u64>,
    dropped_objects: u64,
}

impl SnapshotBuilder {
    /// A builder that keeps at most `max_objects` objects and four times as many references.
    pub fn new(max_objects: usize) -> SnapshotBuilder {
        let max_objects = max_objects.min(u32::MAX as usize / 4);
        SnapshotBuilder {
            max_objects,
            max_refs: max_objects * 4,
            addresses: Vec::new(),
            sizes: Vec::new(),
            classes: Vec::new(),
            ref_start: vec![0],
            refs: Vec::new(),
            roots: Vec::new(),
            class_index: HashMap::new(),
            class_ids: Vec::new(),
            dropped_objects: 0,
        }
    }

    /// The number of objects taken so far.
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }

    /// An object at `address` of runtime class `class`, `size` bytes, referring to `refs`
    /// (addresses; null ones are skipped).
    pub fn add_object(&mut self, address: u64, class: u64, size: u64, refs: impl ExactSizeIterator<Item = u64>) {
        if self.addresses.len() >= self.max_objects || self.refs.len() + refs.len() > self.max_refs {
            self.dropped_objects += 1;
            return;
        }
        let next = self.class_ids.len() as u32;
        let key = class;
        let class = *self.class_index.entry(key).or_insert(next);
        if class == next {
            self.class_ids.push(key);
        }
        self.addresses.push(address);
        self.sizes.push(size);
        self.classes.push(class);
        self.refs.extend(refs.filter(|&r| r != 0));
        self.ref_start.push(self.refs.len() as u32);
    }

    /// A GC root referring to `address` (which may point inside the object for an interior
    /// root); null roots are skipped.
    pub fn add_root(&mut self, address: u64, kind: RootKind) {
        if address != 0 && self.roots.len() < self.max_objects.saturating_mul(4) {
            self.roots.push((address, kind));
        }
    }

    /// The distinct runtime class IDs seen, in interned order: name them for [`Self::build`].
    pub fn class_ids(&self) -> &[u64] {
        &self.class_ids
    }

    /// The snapshot, `names[i]` naming `class_ids()[i]`.
    pub fn build(self, names: Vec<String>) -> Snapshot {
        let SnapshotBuilder { addresses, sizes, classes, ref_start, refs, roots, dropped_objects, .. } = self;
        let n = addresses.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by_key(|&i| addresses[i as usize]);
        let sorted: Vec<u64> = order.iter().map(|&i| addresses[i as usize]).collect();
        drop(addresses);
        let exact = |a: u64| sorted.binary_search(&a).ok().map(|i| i as u32);

        let mut s = Snapshot {
            types: names,
            type_of: order.iter().map(|&i| classes[i as usize]).collect(),
            sizes: order.iter().map(|&i| sizes[i as usize]).collect(),
            edge_start: Vec::with_capacity(n + 1),
            edges: Vec::with_capacity(refs.len()),
            roots: Vec::new(),
            dropped_references: 0,
            dropped_objects,
        };
        drop(classes);
        s.edge_start.push(0);
        for &old in &order {
            let range = ref_start[old as usize] as usize..ref_start[old as usize + 1] as usize;
            for &r in &refs[range] {
                match exact(r) {
                    Some(target) => s.edges.push(target),
                    None => s.dropped_references += 1,
                }
            }
            s.edge_start.push(s.edges.len() as u32);
        }
        drop(refs);
        // An interior root points inside its object: the last object starting at or before it.
        for (address, kind) in roots {
            let at = sorted.partition_point(|&a| a <= address);
            if at > 0 && address < sorted[at - 1] + s.sizes[at - 1].max(1) {
                s.roots.push(Root { object: at as u32 - 1, kind });
            }
        }
        s.roots.sort_unstable();
        s.roots.dedup();
        // Types the limit cut off stay named; a name missing from `names` gets a placeholder.
        while s.types.len() < self_class_count(&s) {
            s.types.push(format!("<class #{}>", s.types.len()));
        }
        s
    }
}

fn self_class_count(s: &Snapshot) -> usize {
    s.type_of.iter().max().map_or(0, |&m| m as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_addresses_interior_roots_and_drops_unknown_references() {
        let mut b = SnapshotBuilder::new(10);
        b.add_object(0x300, 7, 24, [0x100, 0x999, 0].into_iter());
        b.add_object(0x100, 8, 32, [0x300].into_iter());
        b.add_root(0x108, RootKind::STACK);
        b.add_root(0x500, RootKind::HANDLE);
        assert_eq!(b.class_ids(), &[7, 8]);
        let s = b.build(vec!["A".into(), "B".into()]);
        assert_eq!(s.type_name(0), "B");
        assert_eq!(s.type_name(1), "A");
        assert_eq!(s.sizes, vec![32, 24]);
        assert_eq!(s.references(0), &[1]);
        assert_eq!(s.references(1), &[0]);
        assert_eq!(s.dropped_references, 1);
        assert_eq!(s.roots, vec![Root { object: 0, kind: RootKind::STACK }]);
    }

    #[test]
    fn stops_at_its_reference_limit() {
        let mut b = SnapshotBuilder::new(2);
        b.add_object(0x10, 1, 8, [0x10; 9].into_iter());
        b.add_object(0x20, 1, 8, [0x20; 8].into_iter());
        let s = b.build(vec!["A".into()]);
        assert_eq!((s.len(), s.dropped_objects, s.edges.len()), (1, 1, 8));
    }

    #[test]
    fn stops_at_its_limit() {
        let mut b = SnapshotBuilder::new(1);
        b.add_object(0x10, 1, 8, [].into_iter());
        b.add_object(0x20, 1, 8, [].into_iter());
        let s = b.build(vec!["A".into()]);
        assert_eq!(s.len(), 1);
        assert_eq!(s.dropped_objects, 1);
    }
}
