//! The names of the types a module defines, read from its PE file without a runtime.
//!
//! A profiler that looks for a few types by name in every module that loads would otherwise open
//! each module's `IMetaDataImport`; CoreCLR then converts the module's metadata to its slower
//! read-write form for the rest of the process (for System.Private.CoreLib about 2 ms of start-up
//! on CoreCLR 8.0.4, BENCHMARKS.md §12). [`type_names`] reads the TypeDef and NestedClass tables
//! and the `#Strings` heap straight from the file — a few positioned reads, about 0.5 MB for
//! CoreLib — so the import is opened only for modules that define a type looked for.
//!
//! The file may be hostile: every offset and count is checked against what was read, sizes are
//! capped ([`MAX_READ`] per read), and a file that does not hold together is an [`ImageError`],
//! never a panic or an unbounded read.

use std::fmt;

/// The most bytes [`type_names`] asks for in one read (a `#Strings` heap or a table larger than
/// this is refused).
pub const MAX_READ: usize = 64 << 20;

/// Why a file's type names could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum ImageError {
    /// A read failed (a file shorter than its headers say, an I/O error).
    Read(std::io::Error),
    /// The bytes are not a PE file with ECMA-335 metadata as this reader knows it: what is wrong.
    Malformed(&'static str),
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Read(e) => write!(f, "reading the module's file: {e}"),
            ImageError::Malformed(what) => write!(f, "the module's file: {what}"),
        }
    }
}

impl std::error::Error for ImageError {}

impl From<std::io::Error> for ImageError {
    fn from(e: std::io::Error) -> Self {
        ImageError::Read(e)
    }
}

fn bad<T>(what: &'static str) -> Result<T, ImageError> {
    Err(ImageError::Malformed(what))
}

/// Reads `len` bytes at `offset` through `read` (which returns them from a file position), once
/// they are known to lie within the file's `file_len` bytes and [`MAX_READ`].
fn read_at(
    read: &mut impl FnMut(u64, usize) -> std::io::Result<Vec<u8>>,
    file_len: u64,
    offset: u64,
    len: usize,
) -> Result<Vec<u8>, ImageError> {
    if len > MAX_READ {
        return bad("a table or heap larger than the reader takes");
    }
    // Nothing is allocated for bytes the file does not have.
    if offset.checked_add(len as u64).is_none_or(|end| end > file_len) {
        return bad("a header, table or heap past the file's end");
    }
    let buf = read(offset, len)?;
    if buf.len() != len {
        return Err(ImageError::Read(std::io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(buf)
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, ImageError> {
    match b.get(at..at.wrapping_add(2)) {
        Some(s) => Ok(u16::from_le_bytes([s[0], s[1]])),
        None => bad("a header runs past its bytes"),
    }
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, ImageError> {
    match b.get(at..at.wrapping_add(4)) {
        Some(s) => Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]])),
        None => bad("a header runs past its bytes"),
    }
}

/// A column of a metadata table, as far as its width goes.
#[derive(Clone, Copy)]
enum Col {
    U16,
    U32,
    Str,
    Guid,
    Blob,
    /// An index into one table.
    Idx(usize),
    /// A coded index: its tag bits and the tables it may name.
    Coded(u32, &'static [usize]),
}
use Col::*;

const TYPE_DEF_OR_REF: Col = Coded(2, &[0x02, 0x01, 0x1b]);
const HAS_CONSTANT: Col = Coded(2, &[0x04, 0x08, 0x17]);
const HAS_CUSTOM_ATTRIBUTE: Col = Coded(
    5,
    &[
        0x06, 0x04, 0x01, 0x02, 0x08, 0x09, 0x0a, 0x00, 0x0e, 0x17, 0x14, 0x11, 0x1a, 0x1b, 0x20, 0x23, 0x26, 0x27,
        0x28, 0x2a, 0x2c, 0x2b,
    ],
);
const HAS_FIELD_MARSHAL: Col = Coded(1, &[0x04, 0x08]);
const HAS_DECL_SECURITY: Col = Coded(2, &[0x02, 0x06, 0x20]);
const MEMBER_REF_PARENT: Col = Coded(3, &[0x02, 0x01, 0x1a, 0x06, 0x1b]);
const HAS_SEMANTICS: Col = Coded(1, &[0x14, 0x17]);
const METHOD_DEF_OR_REF: Col = Coded(1, &[0x06, 0x0a]);
const MEMBER_FORWARDED: Col = Coded(1, &[0x04, 0x06]);
const IMPLEMENTATION: Col = Coded(2, &[0x26, 0x23, 0x27]);
const CUSTOM_ATTRIBUTE_TYPE: Col = Coded(3, &[0x06, 0x0a]);
const RESOLUTION_SCOPE: Col = Coded(2, &[0x00, 0x1a, 0x23, 0x01]);

/// The columns of the tables up to NestedClass (ECMA-335 II.22), the last one read; none for the
/// tables after it (GenericParam, MethodSpec, GenericParamConstraint), whose sizes nothing read
/// depends on.
fn schema(table: usize) -> &'static [Col] {
    match table {
        0x00 => &[U16, Str, Guid, Guid, Guid],
        0x01 => &[RESOLUTION_SCOPE, Str, Str],
        0x02 => &[U32, Str, Str, TYPE_DEF_OR_REF, Idx(0x04), Idx(0x06)],
        0x03 => &[Idx(0x04)],
        0x04 => &[U16, Str, Blob],
        0x05 => &[Idx(0x06)],
        0x06 => &[U32, U16, U16, Str, Blob, Idx(0x08)],
        0x07 => &[Idx(0x08)],
        0x08 => &[U16, U16, Str],
        0x09 => &[Idx(0x02), TYPE_DEF_OR_REF],
        0x0a => &[MEMBER_REF_PARENT, Str, Blob],
        0x0b => &[U16, HAS_CONSTANT, Blob],
        0x0c => &[HAS_CUSTOM_ATTRIBUTE, CUSTOM_ATTRIBUTE_TYPE, Blob],
        0x0d => &[HAS_FIELD_MARSHAL, Blob],
        0x0e => &[U16, HAS_DECL_SECURITY, Blob],
        0x0f => &[U16, U32, Idx(0x02)],
        0x10 => &[U32, Idx(0x04)],
        0x11 => &[Blob],
        0x12 => &[Idx(0x02), Idx(0x14)],
        0x13 => &[Idx(0x14)],
        0x14 => &[U16, Str, TYPE_DEF_OR_REF],
        0x15 => &[Idx(0x02), Idx(0x17)],
        0x16 => &[Idx(0x17)],
        0x17 => &[U16, Str, Blob],
        0x18 => &[U16, Idx(0x06), HAS_SEMANTICS],
        0x19 => &[Idx(0x02), METHOD_DEF_OR_REF, METHOD_DEF_OR_REF],
        0x1a => &[Str],
        0x1b => &[Blob],
        0x1c => &[U16, MEMBER_FORWARDED, Str, Idx(0x1a)],
        0x1d => &[U32, Idx(0x04)],
        0x1e => &[U32, U32],
        0x1f => &[U32],
        0x20 => &[U32, U16, U16, U16, U16, U32, Blob, Str, Str],
        0x21 => &[U32],
        0x22 => &[U32, U32, U32],
        0x23 => &[U16, U16, U16, U16, U32, Blob, Str, Str, Blob],
        0x24 => &[U32, Idx(0x23)],
        0x25 => &[U32, U32, U32, Idx(0x23)],
        0x26 => &[U32, Str, Blob],
        0x27 => &[U32, U32, Str, Str, IMPLEMENTATION],
        0x28 => &[U32, U32, Str, IMPLEMENTATION],
        0x29 => &[Idx(0x02), Idx(0x02)],
        _ => &[],
    }
}

/// The table stream's header at its longest: 24 bytes, a row count for each of 64 tables, and
/// 4 bytes of extra data (HeapSizes bit 0x40).
const TABLE_HEADER_MAX: usize = 24 + 64 * 4 + 4;
const TYPE_DEF: usize = 0x02;
const NESTED_CLASS: usize = 0x29;
/// Enclosing types followed at most (a chain that loops, in metadata no compiler wrote, ends).
const MAX_NESTING: usize = 64;

/// The types the module's file defines, named as the runtime and `IMetaDataImport` spell them —
/// `Namespace.Type`, a nested type `Namespace.Outer+Inner`, a generic type with its arity,
/// ``Namespace.Box`1`` — in TypeDef order (`<Module>` first); a type nested deeper than 64 levels,
/// or in a loop, has no name. The file is `file_len` bytes long; `read(offset, buffer)`
/// fills `buffer` from the file at `offset` (an error if the file ends first:
/// `FileExt::read_exact_at` does). It is called a handful of times, each within the file's
/// `file_len` bytes and for at most [`MAX_READ`] bytes, so what is allocated is bounded by the
/// file's size.
///
/// ```
/// // A file that is not a PE file is an error, never a panic.
/// let bytes = b"not a PE file".to_vec();
/// let read = |at: u64, buf: &mut [u8]| {
///     let at = at as usize;
///     match bytes.get(at..at + buf.len()) {
///         Some(b) => Ok(buf.copy_from_slice(b)),
///         None => Err(std::io::ErrorKind::UnexpectedEof.into()),
///     }
/// };
/// assert!(corprof_sig::image::type_names(bytes.len() as u64, read).is_err());
/// ```
pub fn type_names(
    file_len: u64,
    mut read: impl FnMut(u64, &mut [u8]) -> std::io::Result<()>,
) -> Result<TypeNames, ImageError> {
    names(file_len, |at, len| {
        let mut buf = vec![0; len];
        read(at, &mut buf)?;
        Ok(buf)
    })
}

/// [`type_names`] of an open file, read from its start (the file's cursor moves): each part read
/// straight into its buffer, which is not zeroed first (a large module's string heap is hundreds
/// of KiB). The file's length is taken when called; a file that shrinks meanwhile is an error.
pub fn type_names_of(file: &std::fs::File) -> Result<TypeNames, ImageError> {
    use std::io::{Read, Seek, SeekFrom};
    let file_len = file.metadata()?.len();
    let mut file = file;
    names(file_len, |at, len| {
        file.seek(SeekFrom::Start(at))?;
        let mut buf = Vec::with_capacity(len);
        file.take(len as u64).read_to_end(&mut buf)?;
        Ok(buf)
    })
}

fn names(file_len: u64, mut read: impl FnMut(u64, usize) -> std::io::Result<Vec<u8>>) -> Result<TypeNames, ImageError> {
    let read = &mut |at: u64, len: usize| read_at(&mut read, file_len, at, len);
    // The PE headers: the DOS header's pointer, the COFF header, the optional header's data
    // directories, the section table.
    let dos = read(0, 64)?;
    if dos[..2] != *b"MZ" {
        return bad("no MZ header");
    }
    let pe = u64::from(u32_at(&dos, 0x3c)?);
    let head = read(pe, 24)?;
    if head[..4] != *b"PE\0\0" {
        return bad("no PE header");
    }
    let sections = usize::from(u16_at(&head, 6)?);
    let optional_size = usize::from(u16_at(&head, 20)?);
    if sections > 96 {
        return bad("more sections than a PE file has");
    }
    let rest = read(pe + 24, optional_size + 40 * sections)?;
    let directories = match u16_at(&rest, 0)? {
        0x10b => 96,
        0x20b => 112,
        _ => return bad("an optional header of no known kind"),
    };
    // Data directory 14: the CLI header.
    let cli_rva = u32_at(&rest, directories + 14 * 8)?;
    let section_table: Vec<(u32, u32, u32, u32)> = (0..sections)
        .map(|i| {
            let s = optional_size + 40 * i;
            Ok((u32_at(&rest, s + 12)?, u32_at(&rest, s + 8)?, u32_at(&rest, s + 20)?, u32_at(&rest, s + 16)?))
        })
        .collect::<Result<_, ImageError>>()?;
    // An RVA's file offset, through the section holding it.
    let offset = |rva: u32| -> Result<u64, ImageError> {
        for &(va, virtual_size, raw, raw_size) in &section_table {
            let size = virtual_size.max(raw_size);
            if rva >= va && rva - va < size {
                return Ok(u64::from(raw) + u64::from(rva - va));
            }
        }
        bad("an address in no section")
    };
    let cli = read(offset(cli_rva)?, 16)?;
    let (metadata_rva, metadata_size) = (u32_at(&cli, 8)?, u32_at(&cli, 12)?);
    let root_at = offset(metadata_rva)?;

    // The metadata root and its stream headers.
    let root = read(root_at, (metadata_size as usize).min(4096))?;
    if u32_at(&root, 0)? != 0x424a_5342 {
        return bad("no metadata signature");
    }
    let version_len = u32_at(&root, 12)? as usize;
    let mut at = 16usize.checked_add(version_len).and_then(|a| a.checked_add(2)).unwrap_or(usize::MAX);
    let streams = u16_at(&root, at)?;
    at += 2;
    let (mut tables, mut strings) = (None, None);
    // The largest heap's size in bytes (`#Strings`, `#Blob`, `#GUID`, `#US`).
    let mut largest_heap = 0usize;
    for _ in 0..streams {
        let (stream_offset, stream_size) = (u32_at(&root, at)?, u32_at(&root, at + 4)?);
        let name_at = at + 8;
        let name_len = root.get(name_at..).and_then(|n| n.iter().take(32).position(|&b| b == 0));
        let Some(name_len) = name_len else { return bad("a stream name without its end") };
        if u64::from(stream_offset) + u64::from(stream_size) > u64::from(metadata_size) {
            return bad("a stream past the metadata's end");
        }
        let stream = (root_at + u64::from(stream_offset), stream_size as usize);
        match &root[name_at..name_at + name_len] {
            b"#~" => tables = Some(stream),
            b"#Strings" => strings = Some(stream),
            // Unoptimized tables (edit and continue), with pointer tables: not read here.
            b"#-" => return bad("unoptimized metadata tables"),
            _ => {}
        }
        if matches!(&root[name_at..name_at + name_len], b"#Strings" | b"#Blob" | b"#GUID" | b"#US") {
            largest_heap = largest_heap.max(stream_size as usize);
        }
        at = name_at + ((name_len + 4) & !3);
    }
    let (Some((tables_at, tables_size)), Some((strings_at, strings_size))) = (tables, strings) else {
        return bad("no table stream or no string heap");
    };

    // The table stream's header: heap widths, which tables are there, their row counts.
    let header = read(tables_at, tables_size.min(TABLE_HEADER_MAX))?;
    let heap_sizes = *header.get(6).ok_or(ImageError::Malformed("a table header runs past its bytes"))?;
    let valid = u64::from(u32_at(&header, 8)?) | (u64::from(u32_at(&header, 12)?) << 32);
    let mut rows = [0usize; 64];
    let mut at = 24;
    for (t, row) in rows.iter_mut().enumerate() {
        if valid & (1 << t) != 0 {
            *row = u32_at(&header, at)? as usize;
            at += 4;
        }
    }
    if heap_sizes & 0x40 != 0 {
        at += 4;
    }
    let heap = |bit: u8| if heap_sizes & bit != 0 { 4 } else { 2 };
    let width = |col: Col| match col {
        U16 => 2,
        U32 => 4,
        Str => heap(0x01),
        Guid => heap(0x02),
        Blob => heap(0x04),
        Idx(t) => {
            if rows[t] < 0x1_0000 {
                2
            } else {
                4
            }
        }
        Coded(bits, ts) => {
            if ts.iter().all(|&t| rows[t] < (1 << (16 - bits))) {
                2
            } else {
                4
            }
        }
    };
    // Where each table starts: after every present table before it.
    let mut starts = [0usize; NESTED_CLASS + 1];
    let mut next = at;
    for (t, start) in starts.iter_mut().enumerate() {
        *start = next;
        // Every table up to NestedClass has columns (`tests::every_table_read_past_has_columns`).
        let row_width: usize = schema(t).iter().map(|&c| width(c)).sum();
        next = rows[t].checked_mul(row_width).and_then(|n| n.checked_add(next)).unwrap_or(usize::MAX);
    }
    // Every table up to NestedClass is one ECMA-335 defines, so the two read here are placed
    // right; the three after it move nothing read, and a bit past them is refused.
    let table = |t: usize| -> Result<(u64, usize, usize), ImageError> {
        let row_width: usize = schema(t).iter().map(|&c| width(c)).sum();
        let len = rows[t].saturating_mul(row_width);
        match starts[t].checked_add(len) {
            Some(end) if end <= tables_size => Ok((tables_at + starts[t] as u64, len, row_width)),
            _ => bad("a table past its stream's end"),
        }
    };
    if valid >> 0x2d != 0 {
        return bad("tables of no known kind");
    }
    let (type_defs_at, type_defs_len, type_def_width) = table(TYPE_DEF)?;
    let (nested_at, nested_len, nested_width) = table(NESTED_CLASS)?;
    let type_defs = read(type_defs_at, type_defs_len)?;
    let nested = read(nested_at, nested_len)?;
    let heap_bytes = read(strings_at, strings_size)?;

    let (str_width, type_def_index) = (heap(0x01), width(Idx(TYPE_DEF)));
    let cell = |b: &[u8], at: usize, w: usize| -> Result<usize, ImageError> {
        if w == 2 { u16_at(b, at).map(usize::from) } else { u32_at(b, at).map(|v| v as usize) }
    };
    let count = rows[TYPE_DEF];
    let mut own = Vec::with_capacity(count);
    for r in 0..count {
        let row = r * type_def_width;
        // Offsets as written: one past the heap, or a name without its end, reads as what the
        // heap holds there (nothing, or up to the heap's end).
        let (name, namespace) =
            (cell(&type_defs, row + 4, str_width)?, cell(&type_defs, row + 4 + str_width, str_width)?);
        own.push((name as u32, namespace as u32));
    }
    // The type enclosing each nested one (1-based rows; 0: none).
    let mut enclosing = vec![0u32; count + 1];
    for r in 0..rows[NESTED_CLASS] {
        let row = r * nested_width;
        let (inner, outer) =
            (cell(&nested, row, type_def_index)?, cell(&nested, row + type_def_index, type_def_index)?);
        if (1..=count).contains(&inner) && (1..=count).contains(&outer) {
            enclosing[inner] = outer as u32;
        }
    }
    let largest_rows = rows.iter().copied().max().unwrap_or(0);
    Ok(TypeNames { heap: heap_bytes, own, enclosing, largest_rows, largest_heap })
}

/// The types a module's file defines, as [`type_names`] read them: their names are made on
/// demand, and [`contains`](Self::contains) looks one up without making any.
#[derive(Clone, Debug)]
pub struct TypeNames {
    heap: Vec<u8>,
    /// Per TypeDef row: its name's and its namespace's offsets in `heap` (each ends there).
    own: Vec<(u32, u32)>,
    /// Per 1-based row: the enclosing type's row, 0 for none.
    enclosing: Vec<u32>,
    largest_rows: usize,
    largest_heap: usize,
}

impl TypeNames {
    /// How many types the module defines (`<Module>` included).
    pub fn len(&self) -> usize {
        self.own.len()
    }

    /// Whether it defines none (a file with no TypeDef table).
    pub fn is_empty(&self) -> bool {
        self.own.is_empty()
    }

    /// The row count of the file's largest metadata table, whichever it is.
    pub fn largest_table_rows(&self) -> usize {
        self.largest_rows
    }

    /// The size in bytes of the file's largest metadata heap (`#Strings`, `#Blob`, `#GUID` or
    /// `#US`), as its stream header gives it.
    pub fn largest_heap_bytes(&self) -> usize {
        self.largest_heap
    }

    fn bytes(&self, index: u32) -> &[u8] {
        let rest = self.heap.get(index as usize..).unwrap_or_default();
        &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())]
    }

    /// The rows from `rid` out through its enclosing types, innermost first; `None` past
    /// [`MAX_NESTING`] levels (a loop).
    fn chain(&self, rid: usize) -> Option<Vec<usize>> {
        let mut chain = vec![rid];
        let mut at = rid;
        while let Some(&outer) = self.enclosing.get(at).filter(|&&o| o != 0) {
            if chain.len() > MAX_NESTING {
                return None;
            }
            at = outer as usize;
            chain.push(at);
        }
        Some(chain)
    }

    /// Whether the heap holds exactly `text` at `index` (compared in place: no scan for its end).
    fn is_at(&self, index: u32, text: &[u8]) -> bool {
        // As `bytes` reads: past the heap is empty, and a name without its end ends with it.
        let rest = self.heap.get(index as usize..).unwrap_or_default();
        // Most names differ at their first byte: decided there, without a comparison call.
        if rest.first() != text.first() {
            return text.is_empty() && rest.first() == Some(&0);
        }
        rest.starts_with(text) && matches!(rest.get(text.len()), Some(0) | None)
    }

    /// Whether the row's own name, `Namespace.Name` or `Name`, is the text `splits` were made
    /// of (see [`splits`]): most rows fail at their name's first bytes.
    fn own_is(&self, rid: usize, splits: &[(&[u8], &[u8])]) -> bool {
        let Some(&(name, namespace)) = self.own.get(rid.wrapping_sub(1)) else { return false };
        splits.iter().any(|(ns, n)| self.is_at(name, n) && self.is_at(namespace, ns))
    }

    /// The full name of TypeDef row `rid` (1-based) as the runtime spells it; `None` for a row
    /// the module does not have or one nested in a loop. A name that is not UTF-8 has its bad
    /// bytes replaced (U+FFFD).
    pub fn full_name(&self, rid: usize) -> Option<String> {
        if rid == 0 || rid > self.own.len() {
            return None;
        }
        let parts: Vec<String> = self
            .chain(rid)?
            .iter()
            .rev()
            .map(|&r| {
                let (name, namespace) = self.own[r - 1];
                let name = String::from_utf8_lossy(self.bytes(name));
                match self.bytes(namespace) {
                    [] => name.into_owned(),
                    ns => format!("{}.{name}", String::from_utf8_lossy(ns)),
                }
            })
            .collect();
        Some(parts.join("+"))
    }

    /// Every type's full name, in TypeDef order (`<Module>` first), leaving out those nested in
    /// a loop.
    pub fn iter(&self) -> impl Iterator<Item = String> + '_ {
        (1..=self.own.len()).filter_map(|rid| self.full_name(rid))
    }

    /// Whether the module defines the type whose full name is `full_name` (`Namespace.Type`,
    /// `Namespace.Outer+Inner`), compared byte for byte without making any name.
    pub fn contains(&self, full_name: &str) -> bool {
        // Each part's splits are made once, not once per row.
        let parts: Vec<Vec<(&[u8], &[u8])>> = full_name.split('+').map(|p| splits(p.as_bytes())).collect();
        let Some(innermost) = parts.last() else { return false };
        // The first byte each reading of the innermost name starts with (0: an empty name, as
        // the heap reads past its end): a row whose name starts otherwise is passed over in a
        // load and a comparison, and most rows are.
        let firsts: Vec<u8> = innermost.iter().map(|(_, n)| n.first().copied().unwrap_or(0)).collect();
        self.own.iter().enumerate().any(|(r, &(name, _))| {
            let first = self.heap.get(name as usize).copied().unwrap_or(0);
            if !firsts.contains(&first) {
                return false;
            }
            let rid = r + 1;
            // The innermost first: most rows fail on their own name at once.
            if !self.own_is(rid, innermost) {
                return false;
            }
            let Some(chain) = self.chain(rid) else { return false };
            chain.len() == parts.len() && chain.iter().zip(parts.iter().rev()).all(|(&r, part)| self.own_is(r, part))
        })
    }
}

/// The ways `text` reads as `(namespace, name)`: the whole as a name without a namespace, then
/// split at each dot after the first byte.
fn splits(text: &[u8]) -> Vec<(&[u8], &[u8])> {
    let dots =
        text.iter().enumerate().filter(|&(i, b)| *b == b'.' && i > 0).map(|(dot, _)| (&text[..dot], &text[dot + 1..]));
    std::iter::once((&b""[..], text)).chain(dots).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table up to NestedClass without columns would be taken as zero bytes long, and every
    /// table after it misplaced.
    #[test]
    fn every_table_read_past_has_columns() {
        for t in 0..=NESTED_CLASS {
            assert!(!schema(t).is_empty(), "table {t:#04x}");
        }
        for t in NESTED_CLASS + 1..64 {
            assert!(schema(t).is_empty(), "table {t:#04x}");
        }
    }
}
