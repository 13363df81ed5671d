//! Heap snapshots: the object graph a forced GC reported (objects with their type and size, the
//! references between them, the GC roots), the file the profiler writes it to, the dominator tree
//! that gives retained bytes, and the two outputs the command writes (a table per type and an
//! HTML treemap).
//!
//! The model is flat and compact so a heap of millions of objects fits in little memory: objects
//! are indices `0..len`, types are interned names, references are one array with a start offset
//! per object.
//!
//! Retained bytes of an object are its own size plus that of every object it dominates (every
//! object no GC root reaches except through it). Retained bytes of a type are the sum of the
//! retained bytes of its objects that no other object of the same type dominates, so a linked
//! list of 1000 nodes counts its bytes once, not 1000 times over.

mod build;
mod dominators;
mod file;
mod table;
mod treemap;

pub use build::SnapshotBuilder;
pub use dominators::{Dominators, ROOT};
pub use file::{MAX_SNAPSHOT_BYTES, read, read_from, write, write_to};
pub use table::{TypeStats, type_stats, write_table};
pub use treemap::write_treemap;

/// What kind of GC root refers to an object (`COR_PRF_GC_ROOT_KIND`'s values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RootKind(pub u8);

impl RootKind {
    pub const OTHER: RootKind = RootKind(0);
    pub const STACK: RootKind = RootKind(1);
    pub const FINALIZER: RootKind = RootKind(2);
    pub const HANDLE: RootKind = RootKind(3);

    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "stack",
            2 => "finalizer",
            3 => "handle",
            _ => "other",
        }
    }
}

/// A GC root: the object it refers to and its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Root {
    pub object: u32,
    pub kind: RootKind,
}

/// A heap snapshot. Object `i` has type `types[type_of[i]]`, `sizes[i]` bytes, and refers to
/// `edges[edge_start[i]..edge_start[i + 1]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub types: Vec<String>,
    pub type_of: Vec<u32>,
    pub sizes: Vec<u64>,
    /// `len() + 1` offsets into `edges`.
    pub edge_start: Vec<u32>,
    pub edges: Vec<u32>,
    pub roots: Vec<Root>,
    /// References to objects the GC did not report (e.g. frozen objects outside the GC heap):
    /// left out of `edges`.
    pub dropped_references: u64,
    /// Objects left out because the snapshot reached its object limit.
    pub dropped_objects: u64,
}

impl Snapshot {
    /// The number of objects.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// The objects `object` refers to.
    pub fn references(&self, object: u32) -> &[u32] {
        let i = object as usize;
        &self.edges[self.edge_start[i] as usize..self.edge_start[i + 1] as usize]
    }

    /// The type name of `object`.
    pub fn type_name(&self, object: u32) -> &str {
        &self.types[self.type_of[object as usize] as usize]
    }

    /// The sum of all objects' sizes.
    pub fn total_bytes(&self) -> u64 {
        self.sizes.iter().sum()
    }

    /// A snapshot from a list of `(type, size, references)` and roots: for tests and examples.
    pub fn from_objects(objects: &[(&str, u64, &[u32])], roots: &[u32]) -> Snapshot {
        let mut s = Snapshot { edge_start: vec![0], ..Snapshot::default() };
        for (ty, size, refs) in objects {
            let t = match s.types.iter().position(|t| t == ty) {
                Some(t) => t,
                None => {
                    s.types.push(ty.to_string());
                    s.types.len() - 1
                }
            };
            s.type_of.push(t as u32);
            s.sizes.push(*size);
            s.edges.extend_from_slice(refs);
            s.edge_start.push(s.edges.len() as u32);
        }
        s.roots = roots.iter().map(|&object| Root { object, kind: RootKind::STACK }).collect();
        s
    }
}
