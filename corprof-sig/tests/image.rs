//! `corprof_sig::image` on module files this test writes itself, laid out by ECMA-335's own
//! column table (support/tables.rs, not the reader's): every table before NestedClass present,
//! each heap-index width, each table at the row counts where an index into it widens, nesting at
//! its limits, and each way a file can fail to hold together. Needs no runtime, so that mutation
//! testing (scripts/mutants) runs it on every mutant of the reader.

#[path = "support/tables.rs"]
#[allow(dead_code)]
mod tables;

use corprof_sig::image::{ImageError, TypeNames, type_names};

const TYPE_DEF: usize = 0x02;
const NESTED_CLASS: usize = 0x29;
/// ECMA-335's tables: 0x00 to GenericParamConstraint.
const TABLES: usize = 0x2d;

/// A module file to write: its tables' row counts, heap widths, types and nesting.
#[derive(Clone)]
struct Image {
    /// PE32+ (the optional header's data directories 16 bytes further).
    plus: bool,
    /// Rows of every table; TypeDef's and NestedClass's are `types`' and `nested`'s lengths.
    rows: [usize; 64],
    /// The table stream's HeapSizes flags (0x01 `#Strings`, 0x02 `#GUID`, 0x04 `#Blob` indexes
    /// are 4 bytes; 0x40: four bytes of extra data after the row counts).
    heap_sizes: u8,
    /// Per TypeDef row: (namespace, name); offsets into `#Strings` are made for them, unless
    /// `raw_offsets` gives them.
    types: Vec<(String, String)>,
    /// Per TypeDef row: (name, namespace) offsets written as they are, instead of `types`'.
    raw_offsets: Option<Vec<(u32, u32)>>,
    /// (nested, enclosing) TypeDef rows, 1-based.
    nested: Vec<(usize, usize)>,
    /// The other heaps' sizes in bytes (`#US`, `#GUID`, `#Blob`).
    other_heaps: [usize; 3],
    /// The `#Strings` heap ends without its last name's terminating 0.
    unterminated: bool,
    /// Zero bytes added at the end of `#Strings`.
    pad_strings: usize,
    /// Sections in the section table (the first holds the CLI header and the metadata; the
    /// others are empty).
    sections: usize,
    /// The section's raw size written as 0, its virtual size alone saying how long it is.
    no_raw_size: bool,
}

impl Image {
    fn new(types: &[(&str, &str)], nested: &[(usize, usize)]) -> Image {
        Image {
            plus: false,
            rows: [0; 64],
            heap_sizes: 0,
            types: types.iter().map(|&(ns, n)| (ns.to_string(), n.to_string())).collect(),
            raw_offsets: None,
            nested: nested.to_vec(),
            other_heaps: [8, 16, 8],
            unterminated: false,
            pad_strings: 0,
            sections: 1,
            no_raw_size: false,
        }
    }

    /// Every table before NestedClass (and the three after it) with `n` rows.
    fn with_every_table(mut self, n: usize) -> Image {
        for t in 0..TABLES {
            self.rows[t] = n;
        }
        self
    }

    fn strings(&self) -> (Vec<u8>, Vec<(u32, u32)>) {
        // Each text once, as compilers write the heap.
        let mut heap = vec![0u8];
        let mut made = std::collections::HashMap::new();
        let mut at = |s: &str| -> u32 {
            if s.is_empty() {
                return 0;
            }
            *made.entry(s.to_string()).or_insert_with(|| {
                let offset = heap.len() as u32;
                heap.extend_from_slice(s.as_bytes());
                heap.push(0);
                offset
            })
        };
        let offsets = self.types.iter().map(|(ns, n)| (at(n), at(ns))).collect();
        if self.unterminated {
            heap.pop();
        }
        heap.resize(heap.len() + self.pad_strings, 0);
        (heap, self.raw_offsets.clone().unwrap_or(offsets))
    }

    /// The file, and where its parts start: (metadata root, table stream, `#Strings`).
    fn write_with_offsets(&self) -> (Vec<u8>, [usize; 3]) {
        let mut rows = self.rows;
        rows[TYPE_DEF] = self.types.len();
        rows[NESTED_CLASS] = self.nested.len();
        let (strings, offsets) = self.strings();

        // The table stream.
        let mut tilde = Vec::new();
        tilde.extend_from_slice(&0u32.to_le_bytes());
        tilde.extend_from_slice(&[2, 0, self.heap_sizes, 1]);
        let valid: u64 = (0..64).filter(|&t| rows[t] != 0).map(|t| 1u64 << t).sum();
        tilde.extend_from_slice(&valid.to_le_bytes());
        tilde.extend_from_slice(&0u64.to_le_bytes());
        for &n in rows.iter().filter(|&&n| n != 0) {
            tilde.extend_from_slice(&(n as u32).to_le_bytes());
        }
        if self.heap_sizes & 0x40 != 0 {
            tilde.extend_from_slice(&0xdead_beefu32.to_le_bytes());
        }
        let put = |b: &mut Vec<u8>, v: usize, w: usize| {
            if w == 2 {
                b.extend_from_slice(&(v as u16).to_le_bytes());
            } else {
                b.extend_from_slice(&(v as u32).to_le_bytes());
            }
        };
        for t in 0..TABLES {
            let widths = tables::widths(t, &rows, self.heap_sizes);
            match t {
                TYPE_DEF => {
                    for &(name, namespace) in &offsets {
                        // Flags, Name, Namespace, Extends, FieldList, MethodList.
                        put(&mut tilde, 0x0010_0001, widths[0]);
                        put(&mut tilde, name as usize, widths[1]);
                        put(&mut tilde, namespace as usize, widths[2]);
                        for &w in &widths[3..] {
                            put(&mut tilde, 1, w);
                        }
                    }
                }
                NESTED_CLASS => {
                    for &(inner, outer) in &self.nested {
                        put(&mut tilde, inner, widths[0]);
                        put(&mut tilde, outer, widths[1]);
                    }
                }
                // Rows the reader passes over: bytes that would read as nonsense.
                _ => tilde.resize(tilde.len() + rows[t] * widths.iter().sum::<usize>(), 0xa5),
            }
        }

        let heaps: [(&[u8], Vec<u8>); 5] = [
            (b"#~", tilde),
            (b"#Strings", strings),
            (b"#US", vec![0; self.other_heaps[0]]),
            (b"#GUID", vec![0; self.other_heaps[1]]),
            (b"#Blob", vec![0; self.other_heaps[2]]),
        ];
        // The metadata root, its stream headers, then the streams, each 4-byte aligned.
        let version = b"v4.0.30319\0\0";
        let mut headers_len = 16 + version.len() + 4;
        for (name, _) in &heaps {
            headers_len += 8 + ((name.len() + 4) & !3);
        }
        let mut root = Vec::new();
        root.extend_from_slice(&0x424a_5342u32.to_le_bytes());
        root.extend_from_slice(&[1, 0, 1, 0, 0, 0, 0, 0]);
        root.extend_from_slice(&(version.len() as u32).to_le_bytes());
        root.extend_from_slice(version);
        root.extend_from_slice(&[0, 0]);
        root.extend_from_slice(&(heaps.len() as u16).to_le_bytes());
        let mut at = headers_len;
        let mut stream_at = [0usize; 2];
        for (i, (name, bytes)) in heaps.iter().enumerate() {
            if i < 2 {
                stream_at[i] = at;
            }
            root.extend_from_slice(&(at as u32).to_le_bytes());
            root.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            root.extend_from_slice(name);
            root.resize(root.len() + ((name.len() + 4) & !3) - name.len(), 0);
            at += (bytes.len() + 3) & !3;
        }
        assert_eq!(root.len(), headers_len);
        for (_, bytes) in &heaps {
            root.extend_from_slice(bytes);
            root.resize((root.len() + 3) & !3, 0);
        }

        // The PE file: DOS header, PE and COFF headers, the optional header, one section holding
        // the CLI header and the metadata after it.
        const PE: usize = 0x80;
        const VA: u32 = 0x2000;
        const CLI_LEN: usize = 72;
        let directories = if self.plus { 112 } else { 96 };
        let optional_size = directories + 16 * 8;
        let headers_end = PE + 24 + optional_size + 40 * self.sections;
        let raw = headers_end.div_ceil(0x200).max(2) * 0x200;
        let mut file = vec![0u8; raw];
        file[..2].copy_from_slice(b"MZ");
        file[0x3c..0x40].copy_from_slice(&(PE as u32).to_le_bytes());
        file[PE..PE + 4].copy_from_slice(b"PE\0\0");
        let coff = PE + 4;
        file[coff..coff + 2].copy_from_slice(&0x14cu16.to_le_bytes());
        file[coff + 2..coff + 4].copy_from_slice(&(self.sections as u16).to_le_bytes());
        file[coff + 16..coff + 18].copy_from_slice(&(optional_size as u16).to_le_bytes());
        let optional = coff + 20;
        file[optional..optional + 2].copy_from_slice(&(if self.plus { 0x20bu16 } else { 0x10b }).to_le_bytes());
        let cli_dir = optional + directories + 14 * 8;
        file[cli_dir..cli_dir + 4].copy_from_slice(&VA.to_le_bytes());
        file[cli_dir + 4..cli_dir + 8].copy_from_slice(&(CLI_LEN as u32).to_le_bytes());
        let section = optional + optional_size;
        let section_len = CLI_LEN + root.len();
        file[section..section + 5].copy_from_slice(b".text");
        file[section + 8..section + 12].copy_from_slice(&(section_len as u32).to_le_bytes());
        file[section + 12..section + 16].copy_from_slice(&VA.to_le_bytes());
        let raw_size = if self.no_raw_size { 0 } else { section_len as u32 };
        file[section + 16..section + 20].copy_from_slice(&raw_size.to_le_bytes());
        file[section + 20..section + 24].copy_from_slice(&(raw as u32).to_le_bytes());
        let mut cli = vec![0u8; CLI_LEN];
        cli[..4].copy_from_slice(&(CLI_LEN as u32).to_le_bytes());
        cli[8..12].copy_from_slice(&(VA + CLI_LEN as u32).to_le_bytes());
        cli[12..16].copy_from_slice(&(root.len() as u32).to_le_bytes());
        file.extend_from_slice(&cli);
        let root_at = file.len();
        file.extend_from_slice(&root);
        (file, [root_at, root_at + stream_at[0], root_at + stream_at[1]])
    }

    fn write(&self) -> Vec<u8> {
        self.write_with_offsets().0
    }
}

/// `type_names` of bytes in memory, each read checked to lie within them.
fn read(file: &[u8]) -> Result<TypeNames, ImageError> {
    type_names(file.len() as u64, |at, buf| {
        let at = usize::try_from(at).unwrap();
        let bytes = file.get(at..at + buf.len()).unwrap_or_else(|| panic!("a read past the file: {at}+{}", buf.len()));
        buf.copy_from_slice(bytes);
        Ok(())
    })
}

fn names(file: &[u8]) -> Vec<String> {
    read(file).unwrap_or_else(|e| panic!("{e}")).iter().collect()
}

/// The reason a file is refused.
fn refusal(file: &[u8]) -> String {
    match read(file) {
        Ok(n) => panic!("read as a module: {:?}", n.iter().collect::<Vec<_>>()),
        Err(e) => e.to_string(),
    }
}

fn sample() -> Image {
    Image::new(
        &[
            ("", "<Module>"),
            ("System", "Convert"),
            ("System.Collections.Generic", "List`1"),
            ("System", "Environment"),
            ("", "SpecialFolder"),
            ("", "Inner"),
            ("Top", "Level"),
        ],
        // Inner in SpecialFolder in Environment.
        &[(5, 4), (6, 5)],
    )
}

const SAMPLE: [&str; 7] = [
    "<Module>",
    "System.Convert",
    "System.Collections.Generic.List`1",
    "System.Environment",
    "System.Environment+SpecialFolder",
    "System.Environment+SpecialFolder+Inner",
    "Top.Level",
];

/// Every table present, in both optional-header kinds, at every combination of heap widths and
/// with the extra data: the names are read through the right offsets every time.
#[test]
fn names_are_read_whatever_tables_precede_them_and_however_wide_their_indexes() {
    for plus in [false, true] {
        for heap_sizes in [0u8, 0x01, 0x02, 0x04, 0x07, 0x40, 0x47] {
            for every in [0, 1, 3] {
                let mut image = sample().with_every_table(every);
                image.plus = plus;
                image.heap_sizes = heap_sizes;
                let file = image.write();
                let n = read(&file).unwrap_or_else(|e| panic!("plus {plus}, heaps {heap_sizes:#x}, {every}: {e}"));
                assert_eq!(n.iter().collect::<Vec<_>>(), SAMPLE, "plus {plus}, heaps {heap_sizes:#x}, {every}");
                assert_eq!(n.len(), 7);
                assert!(!n.is_empty());
            }
        }
    }
}

/// One table at a time, at the row counts where an index into it (2^16 rows) or a coded index
/// naming it (2^(16 - tag bits) rows: 2048 to 32768) widens, one below and at each: the tables
/// after it, TypeDef or NestedClass among them, are found where the widths put them.
#[test]
fn each_table_is_sized_by_the_widths_its_row_count_gives_every_index_into_it() {
    let mut checked = 0;
    for t in (0..TABLES).filter(|&t| t != TYPE_DEF && t != NESTED_CLASS) {
        for n in [2047, 2048, 4095, 4096, 8191, 8192, 16383, 16384, 32767, 32768, 65535, 65536] {
            let mut image = sample();
            image.rows[t] = n;
            let file = image.write();
            let got = read(&file).unwrap_or_else(|e| panic!("table {t:#04x} with {n} rows: {e}"));
            assert_eq!(got.iter().collect::<Vec<_>>(), SAMPLE, "table {t:#04x} with {n} rows");
            assert_eq!(got.largest_table_rows(), n, "table {t:#04x}");
            checked += 1;
        }
    }
    assert_eq!(checked, 43 * 12);
}

/// TypeDef's own row count widens NestedClass's columns (and TypeDefOrRef, in TypeDef itself).
#[test]
fn many_types_widen_the_indexes_into_typedef() {
    for count in [16383, 16384, 65535, 65536] {
        let mut types: Vec<(&str, &str)> = vec![("", "<Module>")];
        types.resize(count - 1, ("N", "T"));
        types.push(("Last", "Outer"));
        let mut image = Image::new(&types, &[(2, count), (3, 2)]);
        image.rows = sample().with_every_table(1).rows;
        let n = read(&image.write()).unwrap_or_else(|e| panic!("{count} types: {e}"));
        assert_eq!(n.len(), count);
        assert_eq!(n.full_name(2).as_deref(), Some("Last.Outer+N.T"), "{count}");
        assert_eq!(n.full_name(3).as_deref(), Some("Last.Outer+N.T+N.T"), "{count}");
        assert_eq!(n.full_name(4).as_deref(), Some("N.T"), "{count}");
        assert_eq!(n.full_name(count).as_deref(), Some("Last.Outer"), "{count}");
        assert_eq!(n.largest_table_rows(), count);
        assert!(n.contains("Last.Outer+N.T+N.T") && !n.contains("Last.Outer+N.T+N.T+N.T"), "{count}");
    }
}

#[test]
fn full_names_contains_and_iter_agree() {
    let n = read(&sample().write()).unwrap();
    for (rid, name) in SAMPLE.iter().enumerate() {
        assert_eq!(n.full_name(rid + 1).as_deref(), Some(*name));
        assert!(n.contains(name), "{name}");
    }
    assert_eq!(n.full_name(0), None);
    assert_eq!(n.full_name(8), None);
    assert_eq!(n.full_name(usize::MAX), None);
    for absent in [
        "",
        "+",
        ".",
        "Convert",
        "System",
        "System.",
        ".Convert",
        "System.Converts",
        "System.Conver",
        "Sys.Convert",
        "System.Environment.SpecialFolder",
        "SpecialFolder",
        "Inner",
        "System.Environment+Inner",
        "System.Environment+SpecialFolder+Inner+",
        "SpecialFolder+Inner",
        "+System.Environment",
        "System.Environment+System.SpecialFolder",
        "Top.Level+Inner",
        "Top",
        "Level",
        "Top.Level.",
    ] {
        assert!(!n.contains(absent), "{absent:?}");
    }
}

/// A namespace with dots is split at each of them in turn: the type's name is whichever part
/// the row holds.
#[test]
fn a_name_is_found_whichever_of_its_dots_ends_the_namespace() {
    let image = Image::new(
        &[("", "<Module>"), ("A.B", "C"), ("A", "B.D"), ("", "E.F"), ("A.B", "C.G"), ("", ".H"), ("I.", "J")],
        &[],
    );
    let n = read(&image.write()).unwrap();
    assert_eq!(n.iter().collect::<Vec<_>>(), ["<Module>", "A.B.C", "A.B.D", "E.F", "A.B.C.G", ".H", "I..J"]);
    for name in ["A.B.C", "A.B.D", "E.F", "A.B.C.G", ".H", "I..J"] {
        assert!(n.contains(name), "{name}");
    }
    for absent in ["A.B", "B.C", "C", "A.B.C.D", "E", "F", "H", "I.J", ".", "I."] {
        assert!(!n.contains(absent), "{absent}");
    }
}

/// A chain of 64 enclosing types is followed to its end; one more, or a loop, leaves the types
/// on it without a name (and not found), while the others keep theirs.
#[test]
fn nesting_is_followed_up_to_sixty_four_levels_and_a_loop_ends() {
    for depth in [63, 64, 65] {
        // Row 2 the outermost, row 2 + depth the innermost.
        let mut types = vec![("", "<Module>".to_string())];
        types.push(("Out", "T0".to_string()));
        for i in 1..=depth {
            types.push(("", format!("T{i}")));
        }
        let types: Vec<(&str, &str)> = types.iter().map(|(ns, n)| (*ns, n.as_str())).collect();
        let nested: Vec<(usize, usize)> = (1..=depth).map(|i| (2 + i, 1 + i)).collect();
        let n = read(&Image::new(&types, &nested).write()).unwrap();
        let innermost: String = std::iter::once("Out.T0".to_string())
            .chain((1..=depth).map(|i| format!("T{i}")))
            .collect::<Vec<_>>()
            .join("+");
        let found = n.full_name(2 + depth);
        if depth <= 64 {
            assert_eq!(found.as_deref(), Some(innermost.as_str()), "{depth}");
            assert!(n.contains(&innermost), "{depth}");
            assert_eq!(n.iter().count(), 2 + depth, "{depth}");
        } else {
            assert_eq!(found, None, "{depth}");
            assert!(!n.contains(&innermost), "{depth}");
            assert_eq!(n.iter().count(), 2 + depth - 1, "{depth}");
        }
        // One level less deep is always within the limit.
        let outer = innermost.rsplit_once('+').unwrap().0;
        assert_eq!(n.full_name(1 + depth).as_deref(), Some(outer), "{depth}");
    }
    // Two types enclosing each other; a third enclosing itself; a fourth inside the loop.
    let image = Image::new(
        &[("", "<Module>"), ("", "A"), ("", "B"), ("", "C"), ("", "D"), ("", "E")],
        &[(2, 3), (3, 2), (4, 4), (5, 2)],
    );
    let n = read(&image.write()).unwrap();
    assert_eq!(n.iter().collect::<Vec<_>>(), ["<Module>", "E"]);
    for rid in 2..=5 {
        assert_eq!(n.full_name(rid), None, "{rid}");
    }
    for absent in ["A", "B", "C", "D", "A+B", "B+A", "C+C", "A+D", "B+A+D"] {
        assert!(!n.contains(absent), "{absent}");
    }
    assert!(n.contains("E"));
}

/// NestedClass rows naming a row TypeDef does not have, or row 0, are passed over.
#[test]
fn nesting_rows_naming_no_type_are_passed_over() {
    let image = Image::new(&[("", "<Module>"), ("N", "A"), ("", "B")], &[(3, 0), (3, 4), (0, 2), (4, 2), (3, 2)]);
    let n = read(&image.write()).unwrap();
    assert_eq!(n.iter().collect::<Vec<_>>(), ["<Module>", "N.A", "N.A+B"]);
    let image = Image::new(&[("", "<Module>"), ("N", "A"), ("", "B")], &[(3, 0), (3, 4), (0, 2), (4, 2)]);
    assert_eq!(names(&image.write()), ["<Module>", "N.A", "B"]);
}

/// Offsets into `#Strings` as written: past the heap's end a name is empty; the heap's last name
/// without its terminating 0 ends with the heap.
#[test]
fn names_past_the_heap_or_without_their_end_read_as_the_heap_holds_them() {
    let mut image = Image::new(&[("", "<Module>"), ("", "Tail")], &[]);
    image.unterminated = true;
    let n = read(&image.write()).unwrap();
    assert_eq!(n.iter().collect::<Vec<_>>(), ["<Module>", "Tail"]);
    assert!(n.contains("Tail") && !n.contains("Tai") && !n.contains("Tails"));

    // "\0<Module>\0" is 10 bytes: offset 9 is the last 0, 10 and beyond are past the heap.
    let mut image = Image::new(&[("", "<Module>"), ("", ""), ("", ""), ("", ""), ("", "")], &[]);
    image.raw_offsets = Some(vec![(1, 0), (9, 0), (10, 0), (0xffff, 1), (2, 3)]);
    let n = read(&image.write()).unwrap();
    assert_eq!(n.iter().collect::<Vec<_>>(), ["<Module>", "", "", "<Module>.", "odule>.Module>"]);
    assert!(n.contains(""), "an empty name is a name the module has");
    assert!(n.contains("<Module>.") && !n.contains("<Module>.x"));
    assert!(n.contains("odule>.Module>"));
    assert!(!n.contains("odule>") && !n.contains("Module>"));

    // With no empty name anywhere, "" is not found.
    let n = read(&sample().write()).unwrap();
    assert!(!n.contains(""));
}

/// A name that is not UTF-8 is made with U+FFFD for its bad bytes.
#[test]
fn names_that_are_not_utf8_are_made_lossily() {
    let mut image = Image::new(&[("", "<Module>"), ("", "A")], &[]);
    let (file, [_, _, strings]) = image.write_with_offsets();
    let mut file = file;
    // "\0<Module>\0A\0": A is at 10.
    assert_eq!(file[strings + 10], b'A');
    file[strings + 10] = 0xff;
    let n = read(&file).unwrap();
    assert_eq!(n.full_name(2).as_deref(), Some("\u{fffd}"));
    assert!(!n.contains("A"));
    image.types[1].1 = "Ä".into();
    assert!(read(&image.write()).unwrap().contains("Ä"));
}

/// The largest table's row count and the largest heap's size, whichever they are.
#[test]
fn the_largest_table_and_heap_are_reported() {
    let mut image = sample();
    let n = read(&image.write()).unwrap();
    assert_eq!(n.largest_table_rows(), 7);
    let strings = image.strings().0.len();
    assert_eq!(n.largest_heap_bytes(), strings.max(16));
    for (i, size) in [(0, 70_000), (1, 40_000), (2, 33_000)] {
        image.other_heaps = [8, 16, 8];
        image.other_heaps[i] = size;
        assert_eq!(read(&image.write()).unwrap().largest_heap_bytes(), size, "heap {i}");
    }
    image.other_heaps = [8, 16, 8];
    image.types.push(("Long".into(), "x".repeat(40_000)));
    let n = read(&image.write()).unwrap();
    assert_eq!(n.largest_heap_bytes(), image.strings().0.len());
    image.rows[0x0a] = 3000;
    assert_eq!(read(&image.write()).unwrap().largest_table_rows(), 3000);
}

#[test]
fn a_module_with_no_types_has_no_names() {
    let n = read(&Image::new(&[], &[]).with_every_table(2).write()).unwrap();
    assert!(n.is_empty());
    assert_eq!(n.len(), 0);
    assert_eq!(n.iter().count(), 0);
    assert_eq!(n.full_name(1), None);
    assert!(!n.contains("") && !n.contains("<Module>"));
}

fn put_u32(file: &mut [u8], at: usize, v: u32) {
    file[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Each way a file fails to hold together is refused with what is wrong, never read past.
#[test]
fn each_malformation_is_refused_with_its_reason() {
    let image = sample().with_every_table(1);
    let (good, [root, tilde, _]) = image.write_with_offsets();
    names(&good);
    let pe = 0x80;
    let optional = pe + 24;
    let section = optional + 96 + 128;
    let changed = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut file = good.clone();
        f(&mut file);
        refusal(&file)
    };
    let cases: Vec<(&str, String)> = vec![
        ("no MZ header", changed(&|f| f[0] = b'Z')),
        ("no PE header", changed(&|f| f[pe + 3] = 1)),
        ("past the file's end", changed(&|f| put_u32(f, 0x3c, good.len() as u32 - 10))),
        ("more sections than a PE file has", changed(&|f| f[pe + 6..pe + 8].copy_from_slice(&97u16.to_le_bytes()))),
        ("an optional header of no known kind", changed(&|f| f[optional] = 0x0c)),
        ("an address in no section", changed(&|f| put_u32(f, optional + 96 + 14 * 8, 0x1000))),
        // The CLI header one byte past the section's end (its sizes say where it ends).
        (
            "an address in no section",
            changed(&|f| put_u32(f, optional + 96 + 14 * 8, 0x2000 + (good.len() - 0x400) as u32)),
        ),
        ("no metadata signature", changed(&|f| f[root] = 0)),
        ("a stream past the metadata's end", changed(&|f| put_u32(f, root + 32, 0x10_0000))),
        // The first stream's name and all after it made of letters.
        ("a stream name without its end", changed(&|f| f[root + 40..root + 72].fill(b'x'))),
        ("a header runs past its bytes", changed(&|f| put_u32(f, root + 12, 0x1000))),
        ("unoptimized metadata tables", changed(&|f| f[root + 41] = b'-')),
        ("no table stream or no string heap", changed(&|f| f[root + 41] = b'x')),
        // One stream of the five: the table stream alone.
        (
            "no table stream or no string heap",
            changed(&|f| f[root + 30..root + 32].copy_from_slice(&1u16.to_le_bytes())),
        ),
        // A table bit past GenericParamConstraint, with its row count.
        ("tables of no known kind", changed(&|f| f[tilde + 13] |= 0x20)),
        ("a table past its stream's end", changed(&|f| put_u32(f, tilde + 24, 0x00ff_ffff))),
        // The table stream's size cut to its header: TypeDef is past it.
        ("a table past its stream's end", changed(&|f| put_u32(f, root + 36, 24 + 45 * 4))),
    ];
    for (reason, got) in cases {
        assert!(got.starts_with("the module's file: ") && got.contains(reason), "{reason}: {got}");
    }
    // The section mapped by its raw size when its virtual size says 0.
    let mut file = good.clone();
    put_u32(&mut file, section + 8, 0);
    assert_eq!(names(&file), SAMPLE);
    // Cut anywhere before its last stream ends: refused, never read past.
    for len in (0..good.len()).step_by(7) {
        assert!(read(&good[..len]).is_err(), "{len} bytes");
    }
    // Where the cases above wrote: the first stream header's name.
    assert_eq!(&good[root + 40..root + 44], b"#~\0\0");
}

/// A read the caller fails is an `ImageError::Read`, whatever part it is.
#[test]
fn a_failed_read_is_the_read_error() {
    let file = sample().write();
    let mut reads = 0;
    let _ = type_names(file.len() as u64, |at, buf| {
        reads += 1;
        buf.copy_from_slice(&file[at as usize..at as usize + buf.len()]);
        Ok(())
    })
    .unwrap();
    for fail in 0..reads {
        let mut n = 0;
        let got = type_names(file.len() as u64, |at, buf| {
            n += 1;
            if n == fail + 1 {
                return Err(std::io::Error::other("the disk is gone"));
            }
            buf.copy_from_slice(&file[at as usize..at as usize + buf.len()]);
            Ok(())
        });
        match got {
            Err(ImageError::Read(e)) => assert_eq!(e.to_string(), "the disk is gone"),
            other => panic!("read {fail}: {other:?}"),
        }
    }
    assert!(
        ImageError::Read(std::io::Error::other("x")).to_string() == "reading the module's file: x",
        "the Display of a read error"
    );
}

/// An open file reads as its bytes do, from wherever its cursor was.
#[test]
fn an_open_file_reads_as_its_bytes() {
    use std::io::{Seek, SeekFrom, Write};
    let bytes = sample().with_every_table(2).write();
    let path = std::env::temp_dir().join(format!("corprof-sig-image-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
    file.write_all(&bytes).unwrap();
    file.seek(SeekFrom::Start(100)).unwrap();
    let n = corprof_sig::image::type_names_of(&file).unwrap();
    assert_eq!(n.iter().collect::<Vec<_>>(), SAMPLE);
    // The file's length as it was when called: one cut shorter is refused.
    let cut = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    cut.set_len(bytes.len() as u64 - 1).unwrap();
    assert!(corprof_sig::image::type_names_of(&std::fs::File::open(&path).unwrap()).is_err());
    let _ = std::fs::remove_file(&path);
}

/// A section table of 96 entries, the most a PE file has, is read; the CLI header is found in
/// whichever section holds it, by its raw size or by its virtual size, whichever is larger.
#[test]
fn sections_are_read_up_to_the_most_a_file_has_and_sized_by_either_size() {
    let mut image = sample();
    image.sections = 96;
    assert_eq!(names(&image.write()), SAMPLE);
    image.sections = 97;
    assert!(refusal(&image.write()).contains("more sections than a PE file has"));
    let mut image = sample();
    image.no_raw_size = true;
    assert_eq!(names(&image.write()), SAMPLE);
    image.plus = true;
    assert_eq!(names(&image.write()), SAMPLE);
}

/// A heap of exactly `MAX_READ` bytes is read; one byte more is refused before anything is
/// allocated for it, whatever the file holds.
#[test]
fn a_heap_of_the_largest_read_is_read_and_one_byte_more_refused() {
    use corprof_sig::image::MAX_READ;
    let mut image = sample();
    let strings = image.strings().0.len();
    image.pad_strings = MAX_READ - strings;
    let n = read(&image.write()).unwrap();
    assert_eq!(n.iter().collect::<Vec<_>>(), SAMPLE);
    assert_eq!(n.largest_heap_bytes(), MAX_READ);

    // A metadata root of more than the 4 KiB read of it.
    let mut image = sample();
    image.other_heaps[2] = 8192;
    let (mut file, [root, _, _]) = image.write_with_offsets();
    // The CLI header's metadata size (so that the stream stays within it), then `#Strings`'s size.
    put_u32(&mut file, root - 72 + 12, 0x7000_0000);
    put_u32(&mut file, root + 48, MAX_READ as u32 + 1);
    let why = refusal(&file);
    assert!(why.contains("larger than the reader takes"), "{why}");
}

/// A table stream whose header says all 64 tables are there is read as far as its row counts
/// (and refused for the tables no reader knows), not cut short before them.
#[test]
fn a_header_naming_every_table_is_read_to_its_end() {
    for extra in [0u8, 0x40] {
        let mut image = sample().with_every_table(1);
        image.heap_sizes = extra;
        let (mut file, [_, tilde, _]) = image.write_with_offsets();
        file[tilde + 8..tilde + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        let why = refusal(&file);
        assert!(why.contains("tables of no known kind"), "{extra:#x}: {why}");
    }
}

/// A name is split only at a dot, and not at a dot it starts with.
#[test]
fn names_are_split_at_their_dots_alone() {
    let image = Image::new(&[("", "<Module>"), ("A", "B"), ("", "H"), ("C", "D.E")], &[]);
    let n = read(&image.write()).unwrap();
    for absent in ["AB", ".H", "CD.E", "C.DE", "..H"] {
        assert!(!n.contains(absent), "{absent}");
    }
    for present in ["A.B", "H", "C.D.E"] {
        assert!(n.contains(present), "{present}");
    }
}
