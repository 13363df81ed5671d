//! The snapshot file the profiler writes and the command reads: little-endian binary, checked
//! on reading (every index in range), so a truncated or foreign file is an error, not a panic.
//!
//! Layout: the magic `CPHEAP01`; `u32` type count, each name as `u32` length + UTF-8; `u32`
//! object count, then per object `u32` type, `u64` size, `u32` reference count; `u32` reference
//! count and the references (`u32` object indices); `u32` root count, each `u32` object + `u8`
//! kind; `u64` dropped references; `u64` dropped objects.

use super::{Root, RootKind, Snapshot};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"CPHEAP01";

/// The largest snapshot file [`read`] takes (the profiler's object limit, 20 million, with a few
/// references each, stays well below).
pub const MAX_SNAPSHOT_BYTES: u64 = 8 << 30;

/// Writes `s` to `path`, which must name nothing yet or a regular file: the file appears whole
/// ([`crate::files::replace_with`]).
pub fn write(s: &Snapshot, path: &Path) -> io::Result<()> {
    crate::files::replace_with(path, |out| write_to(s, out))
}

/// Writes `s` to `out`.
pub fn write_to(s: &Snapshot, out: &mut dyn Write) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, out);
    w.write_all(MAGIC)?;
    w.write_all(&(s.types.len() as u32).to_le_bytes())?;
    for t in &s.types {
        w.write_all(&(t.len() as u32).to_le_bytes())?;
        w.write_all(t.as_bytes())?;
    }
    w.write_all(&(s.len() as u32).to_le_bytes())?;
    for o in 0..s.len() {
        w.write_all(&s.type_of[o].to_le_bytes())?;
        w.write_all(&s.sizes[o].to_le_bytes())?;
        w.write_all(&(s.edge_start[o + 1] - s.edge_start[o]).to_le_bytes())?;
    }
    w.write_all(&(s.edges.len() as u32).to_le_bytes())?;
    for e in &s.edges {
        w.write_all(&e.to_le_bytes())?;
    }
    w.write_all(&(s.roots.len() as u32).to_le_bytes())?;
    for r in &s.roots {
        w.write_all(&r.object.to_le_bytes())?;
        w.write_all(&[r.kind.0])?;
    }
    w.write_all(&s.dropped_references.to_le_bytes())?;
    w.write_all(&s.dropped_objects.to_le_bytes())?;
    w.flush()
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("not a corprof heap snapshot: {what}"))
}

struct In<R>(R);

impl<R: Read> In<R> {
    fn bytes<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut b = [0; N];
        self.0
            .read_exact(&mut b)
            .map_err(|e| if e.kind() == io::ErrorKind::UnexpectedEof { bad("truncated") } else { e })?;
        Ok(b)
    }
    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.bytes::<1>()?[0])
    }
    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }
    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }
}

/// The capacity to reserve for `count` items: bounded, so a corrupt count cannot ask for
/// gigabytes up front (the vectors still grow to what the file really holds).
fn capacity(count: u32) -> usize {
    (count as usize).min(1 << 20)
}

/// Reads the snapshot at `path`: a regular file of at most [`MAX_SNAPSHOT_BYTES`].
pub fn read(path: &Path) -> io::Result<Snapshot> {
    let file = crate::files::open_regular(path, MAX_SNAPSHOT_BYTES)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no {}", path.display())))?;
    read_from(file.take(MAX_SNAPSHOT_BYTES))
}

/// Reads a snapshot from `input`.
pub fn read_from(input: impl Read) -> io::Result<Snapshot> {
    let mut r = In(BufReader::with_capacity(1 << 20, input));
    if &r.bytes::<8>()? != MAGIC {
        return Err(bad("wrong magic"));
    }
    let mut s = Snapshot::default();
    let types = r.u32()?;
    s.types.reserve(capacity(types));
    for _ in 0..types {
        let len = r.u32()? as usize;
        if len > 1 << 16 {
            return Err(bad("type name too long"));
        }
        let mut name = vec![0; len];
        r.0.read_exact(&mut name).map_err(|_| bad("truncated"))?;
        s.types.push(String::from_utf8(name).map_err(|_| bad("type name not UTF-8"))?);
    }
    let objects = r.u32()?;
    s.type_of.reserve(capacity(objects));
    s.sizes.reserve(capacity(objects));
    s.edge_start.push(0);
    let mut edges_total = 0u64;
    for _ in 0..objects {
        let t = r.u32()?;
        if t as usize >= s.types.len() {
            return Err(bad("type index out of range"));
        }
        s.type_of.push(t);
        s.sizes.push(r.u64()?);
        edges_total += r.u32()? as u64;
        if edges_total > u32::MAX as u64 {
            return Err(bad("too many references"));
        }
        s.edge_start.push(edges_total as u32);
    }
    let edges = r.u32()?;
    if edges as u64 != edges_total {
        return Err(bad("reference count mismatch"));
    }
    s.edges.reserve(capacity(edges));
    for _ in 0..edges {
        let e = r.u32()?;
        if e >= objects {
            return Err(bad("reference out of range"));
        }
        s.edges.push(e);
    }
    let roots = r.u32()?;
    for _ in 0..roots {
        let object = r.u32()?;
        if object >= objects {
            return Err(bad("root out of range"));
        }
        s.roots.push(Root { object, kind: RootKind(r.u8()?) });
    }
    s.dropped_references = r.u64()?;
    s.dropped_objects = r.u64()?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let s = Snapshot::from_objects(&[("A", 24, &[1, 1]), ("Bé", 1 << 40, &[0])], &[1]);
        let dir = std::env::temp_dir().join(format!("corprof-heap-file-{}", std::process::id()));
        write(&s, &dir).unwrap();
        assert_eq!(read(&dir).unwrap(), s);
        let bytes = std::fs::read(&dir).unwrap();
        for cut in [0, 7, 12, bytes.len() - 1] {
            std::fs::write(&dir, &bytes[..cut]).unwrap();
            assert!(read(&dir).is_err(), "cut at {cut}");
        }
        let mut bad_ref = bytes.clone();
        // The first reference (after magic, types, objects, the edge count) points past the end.
        let at = 8 + 4 + (4 + 1) + (4 + 3) + 4 + 2 * 16 + 4;
        bad_ref[at..at + 4].copy_from_slice(&9u32.to_le_bytes());
        std::fs::write(&dir, &bad_ref).unwrap();
        assert!(read(&dir).unwrap_err().to_string().contains("out of range"));
        let _ = std::fs::remove_file(&dir);
    }
}
