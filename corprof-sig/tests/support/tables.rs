//! The metadata tables' columns as ECMA-335 II.22 gives them, for the tests that read a module's
//! file with their own reader (tests/il.rs, on CoreLib) or write one (tests/image.rs): an oracle
//! kept apart from `corprof_sig::image`'s own table of them.

#[derive(Clone, Copy)]
pub enum Col {
    U16,
    U32,
    Str,
    Guid,
    Blob,
    Idx(usize),
    /// Tag bits and the tables the coded index may name.
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
const TYPE_OR_METHOD_DEF: Col = Coded(1, &[0x02, 0x06]);

/// The columns of tables 0x00..=0x2c (II.22).
pub fn schema(table: usize) -> Vec<Col> {
    match table {
        0x00 => vec![U16, Str, Guid, Guid, Guid],
        0x01 => vec![RESOLUTION_SCOPE, Str, Str],
        0x02 => vec![U32, Str, Str, TYPE_DEF_OR_REF, Idx(0x04), Idx(0x06)],
        0x03 => vec![Idx(0x04)],
        0x04 => vec![U16, Str, Blob],
        0x05 => vec![Idx(0x06)],
        0x06 => vec![U32, U16, U16, Str, Blob, Idx(0x08)],
        0x07 => vec![Idx(0x08)],
        0x08 => vec![U16, U16, Str],
        0x09 => vec![Idx(0x02), TYPE_DEF_OR_REF],
        0x0a => vec![MEMBER_REF_PARENT, Str, Blob],
        0x0b => vec![U16, HAS_CONSTANT, Blob],
        0x0c => vec![HAS_CUSTOM_ATTRIBUTE, CUSTOM_ATTRIBUTE_TYPE, Blob],
        0x0d => vec![HAS_FIELD_MARSHAL, Blob],
        0x0e => vec![U16, HAS_DECL_SECURITY, Blob],
        0x0f => vec![U16, U32, Idx(0x02)],
        0x10 => vec![U32, Idx(0x04)],
        0x11 => vec![Blob],
        0x12 => vec![Idx(0x02), Idx(0x14)],
        0x13 => vec![Idx(0x14)],
        0x14 => vec![U16, Str, TYPE_DEF_OR_REF],
        0x15 => vec![Idx(0x02), Idx(0x17)],
        0x16 => vec![Idx(0x17)],
        0x17 => vec![U16, Str, Blob],
        0x18 => vec![U16, Idx(0x06), HAS_SEMANTICS],
        0x19 => vec![Idx(0x02), METHOD_DEF_OR_REF, METHOD_DEF_OR_REF],
        0x1a => vec![Str],
        0x1b => vec![Blob],
        0x1c => vec![U16, MEMBER_FORWARDED, Str, Idx(0x1a)],
        0x1d => vec![U32, Idx(0x04)],
        0x1e => vec![U32, U32],
        0x1f => vec![U32],
        0x20 => vec![U32, U16, U16, U16, U16, U32, Blob, Str, Str],
        0x21 => vec![U32],
        0x22 => vec![U32, U32, U32],
        0x23 => vec![U16, U16, U16, U16, U32, Blob, Str, Str, Blob],
        0x24 => vec![U32, Idx(0x23)],
        0x25 => vec![U32, U32, U32, Idx(0x23)],
        0x26 => vec![U32, Str, Blob],
        0x27 => vec![U32, U32, Str, Str, IMPLEMENTATION],
        0x28 => vec![U32, U32, Str, IMPLEMENTATION],
        0x29 => vec![Idx(0x02), Idx(0x02)],
        0x2a => vec![U16, U16, TYPE_OR_METHOD_DEF, Str],
        0x2b => vec![METHOD_DEF_OR_REF, Blob],
        0x2c => vec![Idx(0x2a), TYPE_DEF_OR_REF],
        _ => panic!("table 0x{table:02x} is not in ECMA-335"),
    }
}

/// The width in bytes of each column of `table`, in a file whose tables have `rows` rows and
/// whose heap-size flags are `heap_sizes` (II.24.2.6: a heap index is 4 bytes when its flag is
/// set; a table index when the table has 2^16 rows or more; a coded index when any table it may
/// name has 2^(16 - tag bits) rows or more).
pub fn widths(table: usize, rows: &[usize; 64], heap_sizes: u8) -> Vec<usize> {
    let heap = |bit: u8| if heap_sizes & bit != 0 { 4 } else { 2 };
    schema(table)
        .iter()
        .map(|c| match *c {
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
        })
        .collect()
}
