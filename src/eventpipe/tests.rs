//! The parser and serializer on hand-made bytes: every type, arrays, objects, both field-list
//! versions, tags, truncation at every offset, and random bytes (never a panic).

use super::format::*;
use crate::GUID;

fn utf16z(s: &str) -> Vec<u8> {
    s.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect()
}

/// The fixed head of a metadata blob.
fn head(id: u32, name: &str, keywords: u64, version: u32, level: u32) -> Vec<u8> {
    let mut b = id.to_le_bytes().to_vec();
    b.extend(utf16z(name));
    b.extend(keywords.to_le_bytes());
    b.extend(version.to_le_bytes());
    b.extend(level.to_le_bytes());
    b
}

/// A V1 field: type code (then an object's nested fields), then name.
fn v1_field(code: u32, name: &str) -> Vec<u8> {
    let mut b = code.to_le_bytes().to_vec();
    b.extend(utf16z(name));
    b
}

/// A V2 field: length (including itself), name, type code(s).
fn v2_field(name: &str, codes: &[u32]) -> Vec<u8> {
    let body: Vec<u8> = utf16z(name).into_iter().chain(codes.iter().flat_map(|c| c.to_le_bytes())).collect();
    let mut b = ((body.len() + 4) as u32).to_le_bytes().to_vec();
    b.extend(body);
    b
}

fn tag(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut b = (body.len() as u32).to_le_bytes().to_vec();
    b.push(kind);
    b.extend_from_slice(body);
    b
}

const SCALARS: &[(u32, &str)] = &[
    (3, "b"),
    (4, "c"),
    (5, "i8"),
    (6, "u8"),
    (7, "i16"),
    (8, "u16"),
    (9, "i32"),
    (10, "u32"),
    (11, "i64"),
    (12, "u64"),
    (13, "f32"),
    (14, "f64"),
    (15, "dec"),
    (16, "when"),
    (17, "id"),
    (18, "s"),
];

fn all_scalars_blob() -> Vec<u8> {
    let mut b = head(1, "AllTypes", 0xF0_0000_0000_0001, 2, 5);
    b.extend((SCALARS.len() as u32).to_le_bytes());
    for (code, name) in SCALARS {
        b.extend(v1_field(*code, name));
    }
    b
}

const A_GUID: GUID = GUID::parse("176FBED1-A55C-4796-98CA-A9DA0EF883E7");

fn all_scalars_values() -> Vec<FieldValue> {
    vec![
        FieldValue::Bool(true),
        FieldValue::Char(u16::from(b'A')),
        FieldValue::I8(-124),
        FieldValue::U8(125),
        FieldValue::I16(-35),
        FieldValue::U16(98),
        FieldValue::I32(-560),
        FieldValue::U32(561),
        FieldValue::I64(2_147_483_648),
        FieldValue::U64(u64::MAX),
        FieldValue::F32(3.0),
        FieldValue::F64(3.023),
        FieldValue::Decimal([7; 16]),
        FieldValue::DateTime(132_243_707_160_000_000),
        FieldValue::Guid(A_GUID),
        FieldValue::String("Hello, é€😀".into()),
    ]
}

/// The payload of [`all_scalars_values`], written out by hand.
fn all_scalars_payload() -> Vec<u8> {
    let mut d = Vec::new();
    d.extend(1u32.to_le_bytes());
    d.extend(u16::from(b'A').to_le_bytes());
    d.extend((-124i8).to_le_bytes());
    d.push(125);
    d.extend((-35i16).to_le_bytes());
    d.extend(98u16.to_le_bytes());
    d.extend((-560i32).to_le_bytes());
    d.extend(561u32.to_le_bytes());
    d.extend(2_147_483_648i64.to_le_bytes());
    d.extend(u64::MAX.to_le_bytes());
    d.extend(3.0f32.to_le_bytes());
    d.extend(3.023f64.to_le_bytes());
    d.extend([7; 16]);
    d.extend(132_243_707_160_000_000u64.to_le_bytes());
    // The GUID in Windows memory layout: Data1..3 little-endian, Data4 as bytes.
    d.extend([0xD1, 0xBE, 0x6F, 0x17, 0x5C, 0xA5, 0x96, 0x47, 0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7]);
    d.extend(utf16z("Hello, é€😀"));
    d
}

#[test]
fn v1_metadata_with_every_scalar_type() {
    let m = EventMetadata::parse(&all_scalars_blob()).unwrap();
    assert_eq!(
        (m.id, m.name.as_str(), m.keywords, m.version, m.level, m.opcode),
        (1, "AllTypes", 0xF0_0000_0000_0001, 2, 5, None)
    );
    let expected: Vec<Field> = SCALARS.iter().map(|(c, n)| Field::new(*n, FieldType::scalar(*c).unwrap())).collect();
    assert_eq!(m.fields, expected);
    assert!(m.fields.iter().zip(SCALARS).all(|(f, (c, _))| f.ty.code() == *c));
}

#[test]
fn every_scalar_decodes_and_encodes_back() {
    let m = EventMetadata::parse(&all_scalars_blob()).unwrap();
    let p = Payload::decode(&m, &all_scalars_payload()).unwrap();
    let values: Vec<FieldValue> = p.fields.iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(values, all_scalars_values());
    assert_eq!(p.get("id"), Some(&FieldValue::Guid(A_GUID)));
    assert_eq!(Payload::encode(&m.fields, &values).unwrap(), all_scalars_payload());
    assert_eq!(
        p.to_string(),
        "b=true, c='A', i8=-124, u8=125, i16=-35, u16=98, i32=-560, u32=561, i64=2147483648, \
         u64=18446744073709551615, f32=3, f64=3.023, dec=decimal:07070707070707070707070707070707, \
         when=filetime:132243707160000000, id=176FBED1-A55C-4796-98CA-A9DA0EF883E7, s=\"Hello, é€😀\""
    );
}

#[test]
fn bools_of_one_byte() {
    let fields = [Field::new("on", FieldType::Bool), Field::new("n", FieldType::U8)];
    let m = EventMetadata {
        id: 1,
        name: "E".into(),
        keywords: 0,
        version: 0,
        level: 0,
        opcode: None,
        fields: fields.to_vec(),
    };
    let p = Payload::decode_with(&m, &[1, 9], BoolSize::One).unwrap();
    assert_eq!(p.fields, [("on".into(), FieldValue::Bool(true)), ("n".into(), FieldValue::U8(9))]);
    // The same two bytes with four-byte bools: too short.
    assert_eq!(Payload::decode(&m, &[1, 9]), Err(FormatError { kind: FormatErrorKind::Truncated, offset: 0 }));
}

/// What EventPipe writes for a profiler-defined event with an array: no V1 fields, an opcode
/// tag, then the V2 parameter tag.
fn v2_blob() -> Vec<u8> {
    let mut b = head(3, "Arrays", 0, 1, 0);
    b.extend(0u32.to_le_bytes());
    b.extend(tag(1, &[9]));
    let mut params = 3u32.to_le_bytes().to_vec();
    params.extend(v2_field("ch", &[4]));
    params.extend(v2_field("ints", &[19, 9]));
    params.extend(v2_field("strs", &[19, 18]));
    b.extend(tag(2, &params));
    b
}

#[test]
fn v2_metadata_with_arrays_and_an_opcode() {
    let m = EventMetadata::parse(&v2_blob()).unwrap();
    assert_eq!(m.opcode, Some(9));
    assert_eq!(
        m.fields,
        [
            Field::new("ch", FieldType::Char),
            Field::new("ints", FieldType::Array(Box::new(FieldType::I32))),
            Field::new("strs", FieldType::Array(Box::new(FieldType::String))),
        ]
    );
    let mut d = u16::from(b'd').to_le_bytes().to_vec();
    d.extend(3u16.to_le_bytes());
    for i in [0i32, -1, i32::MAX] {
        d.extend(i.to_le_bytes());
    }
    d.extend(2u16.to_le_bytes());
    d.extend(utf16z("x"));
    d.extend(utf16z(""));
    let p = Payload::decode(&m, &d).unwrap();
    assert_eq!(p.to_string(), "ch='d', ints=[0, -1, 2147483647], strs=[\"x\", \"\"]");
    let values: Vec<FieldValue> = p.fields.into_iter().map(|(_, v)| v).collect();
    assert_eq!(Payload::encode(&m.fields, &values).unwrap(), d);
}

#[test]
fn unknown_tags_are_skipped() {
    let mut b = v2_blob();
    b.extend(tag(77, &[1, 2, 3]));
    assert_eq!(EventMetadata::parse(&b).unwrap().fields.len(), 3);
}

/// An object field in V1 (what a self-describing EventSource writes for an `[EventData]`
/// class), and an array of objects with a nested array in V2.
#[test]
fn objects_nested_in_both_versions() {
    let mut b = head(9, "Shape", 0, 0, 4);
    b.extend(1u32.to_le_bytes());
    b.extend(1u32.to_le_bytes()); // Object, with two fields
    b.extend(2u32.to_le_bytes());
    b.extend(v1_field(9, "Width"));
    b.extend(v1_field(18, "Unit"));
    b.extend(utf16z("size"));
    let m = EventMetadata::parse(&b).unwrap();
    let object = FieldType::Object(vec![Field::new("Width", FieldType::I32), Field::new("Unit", FieldType::String)]);
    assert_eq!(m.fields, [Field::new("size", object.clone())]);
    let mut d = 640i32.to_le_bytes().to_vec();
    d.extend(utf16z("px"));
    assert_eq!(Payload::decode(&m, &d).unwrap().to_string(), "size={Width=640, Unit=\"px\"}");

    // V2: Arguments: Array of Object { Key: String, Values: Array of I16 }.
    let mut b = head(4, "KeyValues", 0, 0, 4);
    b.extend(0u32.to_le_bytes());
    let mut params = 1u32.to_le_bytes().to_vec();
    let mut inner = utf16z("Arguments");
    inner.extend([19u32, 1, 2].iter().flat_map(|c| c.to_le_bytes()));
    inner.extend(v2_field("Key", &[18]));
    inner.extend(v2_field("Values", &[19, 7]));
    params.extend(((inner.len() + 4) as u32).to_le_bytes());
    params.extend(inner);
    b.extend(tag(2, &params));
    let m = EventMetadata::parse(&b).unwrap();
    let pair = FieldType::Object(vec![
        Field::new("Key", FieldType::String),
        Field::new("Values", FieldType::Array(Box::new(FieldType::I16))),
    ]);
    assert_eq!(m.fields, [Field::new("Arguments", FieldType::Array(Box::new(pair)))]);
    let mut d = 2u16.to_le_bytes().to_vec();
    d.extend(utf16z("a"));
    d.extend(1u16.to_le_bytes());
    d.extend((-5i16).to_le_bytes());
    d.extend(utf16z("b"));
    d.extend(0u16.to_le_bytes());
    let p = Payload::decode(&m, &d).unwrap();
    assert_eq!(p.to_string(), "Arguments=[{Key=\"a\", Values=[-5]}, {Key=\"b\", Values=[]}]");
    let values: Vec<FieldValue> = p.fields.into_iter().map(|(_, v)| v).collect();
    assert_eq!(Payload::encode(&m.fields, &values).unwrap(), d);
}

#[test]
fn every_truncation_of_metadata_is_an_error() {
    // Where the V2 blob's V1 part and its opcode tag end, a cut leaves a shorter valid blob.
    let v1_end = head(3, "Arrays", 0, 1, 0).len() + 4;
    let boundaries = [v1_end, v1_end + 6];
    let m = EventMetadata::parse(&v2_blob()[..boundaries[1]]).unwrap();
    assert_eq!((m.opcode, m.fields.len()), (Some(9), 0));
    for blob in [all_scalars_blob(), v2_blob()] {
        for len in (0..blob.len()).filter(|l| blob.len() == all_scalars_blob().len() || !boundaries.contains(l)) {
            let err = EventMetadata::parse(&blob[..len]).unwrap_err();
            assert_eq!(err.kind, FormatErrorKind::Truncated, "cut at {len}");
            assert!(err.offset <= len, "cut at {len}: {err}");
        }
    }
}

#[test]
fn every_truncation_of_a_payload_is_an_error() {
    let m = EventMetadata::parse(&all_scalars_blob()).unwrap();
    let data = all_scalars_payload();
    for len in 0..data.len() {
        let err = Payload::decode(&m, &data[..len]).unwrap_err();
        assert_eq!(err.kind, FormatErrorKind::Truncated, "cut at {len}");
    }
    let mut longer = data.clone();
    longer.push(0);
    assert_eq!(
        Payload::decode(&m, &longer),
        Err(FormatError { kind: FormatErrorKind::TrailingBytes, offset: data.len() })
    );
}

#[test]
fn malformed_metadata() {
    // An unknown type code, with its offset.
    let mut b = head(1, "E", 0, 0, 0);
    let at = b.len() + 4;
    b.extend(1u32.to_le_bytes());
    b.extend(v1_field(2, "dbnull"));
    assert_eq!(EventMetadata::parse(&b), Err(FormatError { kind: FormatErrorKind::UnknownTypeCode(2), offset: at }));
    // An array in a V1 list is not a type V1 knows.
    let mut b = head(1, "E", 0, 0, 0);
    b.extend(1u32.to_le_bytes());
    b.extend([19u32, 9].iter().flat_map(|c| c.to_le_bytes()));
    assert_eq!(EventMetadata::parse(&b).unwrap_err().kind, FormatErrorKind::UnknownTypeCode(19));
    // Both a V1 list and a V2 tag.
    let mut b = head(1, "E", 0, 0, 0);
    b.extend(1u32.to_le_bytes());
    b.extend(v1_field(9, "i"));
    let mut params = 1u32.to_le_bytes().to_vec();
    params.extend(v2_field("j", &[9]));
    b.extend(tag(2, &params));
    assert_eq!(EventMetadata::parse(&b).unwrap_err().kind, FormatErrorKind::DuplicateFieldList);
    // A tag longer than its content.
    let mut b = head(1, "E", 0, 0, 0);
    b.extend(0u32.to_le_bytes());
    b.extend(tag(1, &[3, 0]));
    assert_eq!(EventMetadata::parse(&b).unwrap_err().kind, FormatErrorKind::TrailingBytes);
    // Objects nested past the limit.
    let mut b = head(1, "E", 0, 0, 0);
    b.extend(1u32.to_le_bytes());
    for _ in 0..40 {
        b.extend([1u32, 1].iter().flat_map(|c| c.to_le_bytes()));
    }
    assert_eq!(EventMetadata::parse(&b).unwrap_err().kind, FormatErrorKind::TooDeep);
    // A field count the blob cannot hold does not allocate by it.
    let mut b = head(1, "E", 0, 0, 0);
    b.extend(u32::MAX.to_le_bytes());
    assert_eq!(EventMetadata::parse(&b).unwrap_err().kind, FormatErrorKind::Truncated);
}

#[test]
fn arrays_of_empty_objects_have_a_budget() {
    // Empty objects take no bytes: a two-byte count makes 65,536 values (with the array), far
    // beyond the budget of 40 payload bytes (64 KiB + 128 bytes each), so the first array fails,
    // once its elements have spent the budget.
    let empties = FieldType::Array(Box::new(FieldType::Object(Vec::new())));
    let fields: Vec<Field> = (0..20).map(|i| Field::new(format!("x{i}"), empties.clone())).collect();
    let m = EventMetadata { id: 1, name: "E".into(), keywords: 0, version: 0, level: 0, opcode: None, fields };
    let err = Payload::decode(&m, &[0xFF; 40]).unwrap_err();
    assert_eq!(err, FormatError { kind: FormatErrorKind::TooManyValues, offset: 2 });
    // Fewer of them fit the budget.
    let small = [[3, 0]; 20].concat();
    assert_eq!(Payload::decode(&m, &small).unwrap().fields.len(), 20);
}

#[test]
fn encode_refuses_what_it_cannot_write() {
    let fields = [Field::new("i", FieldType::I32), Field::new("s", FieldType::String)];
    assert_eq!(Payload::encode(&fields, &[FieldValue::I32(1), FieldValue::String("ok".into())]).unwrap().len(), 4 + 6);
    assert_eq!(Payload::encode(&fields, &[FieldValue::I32(1)]), None, "too few values");
    assert_eq!(Payload::encode(&fields, &[FieldValue::I64(1), FieldValue::String("ok".into())]), None, "wrong type");
    assert_eq!(
        Payload::encode(&fields, &[FieldValue::I32(1), FieldValue::String("a\0b".into())]),
        None,
        "a NUL in a string"
    );
    let ints = [Field::new("a", FieldType::Array(Box::new(FieldType::U8)))];
    assert_eq!(
        Payload::encode(&ints, &[FieldValue::Array(vec![FieldValue::U8(0); 65_536])]),
        None,
        "too long an array"
    );
    assert_eq!(
        Payload::encode(&ints, &[FieldValue::Array(vec![FieldValue::U8(1); 65_535])]).unwrap().len(),
        2 + 65_535
    );
    assert_eq!(Payload::encode(&ints, &[FieldValue::Array(vec![FieldValue::I8(1)])]), None, "wrong element type");
}

#[test]
fn lone_surrogates_and_odd_chars() {
    let m = EventMetadata {
        id: 1,
        name: "E".into(),
        keywords: 0,
        version: 0,
        level: 0,
        opcode: None,
        fields: vec![Field::new("c", FieldType::Char), Field::new("s", FieldType::String)],
    };
    let p = Payload::decode(&m, &[0x00, 0xD8, 0x41, 0x00, 0x00, 0xD8, 0x00, 0x00]).unwrap();
    assert_eq!(p.to_string(), "c='\\u{d800}', s=\"A\u{FFFD}\"");
}

/// xorshift64*: a fixed sequence, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Random bytes, and valid blobs with random bytes overwritten: errors or values, never a panic
/// (a panic fails the test), and decoding what parsed.
#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let seeds = [all_scalars_blob(), v2_blob()];
    let payloads = [all_scalars_payload(), Vec::new()];
    let mut parsed = 0;
    for round in 0..20_000usize {
        let mut blob = if round.is_multiple_of(2) {
            let len = (rng.next() % 96) as usize;
            (0..len).map(|_| rng.next() as u8).collect::<Vec<u8>>()
        } else {
            seeds[round % 4 / 2].clone()
        };
        if round % 2 == 1 {
            for _ in 0..1 + rng.next() % 4 {
                let i = (rng.next() % blob.len() as u64) as usize;
                blob[i] = rng.next() as u8;
            }
        }
        if let Ok(m) = EventMetadata::parse(&blob) {
            parsed += 1;
            let mut data = payloads[round % 4 / 2].clone();
            if !data.is_empty() && rng.next().is_multiple_of(2) {
                let i = (rng.next() % data.len() as u64) as usize;
                data[i] = rng.next() as u8;
            }
            let random: Vec<u8> = (0..rng.next() % 64).map(|_| rng.next() as u8).collect();
            for bools in [BoolSize::Four, BoolSize::One] {
                let _ = Payload::decode_with(&m, &data, bools);
                let _ = Payload::decode_with(&m, &random, bools);
            }
        }
    }
    // Mutations of the type codes and names keep many blobs valid: the decoder ran on them.
    assert!(parsed > 1_000, "only {parsed} blobs parsed");
}
