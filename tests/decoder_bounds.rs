//! The EventPipe decoders' memory is bounded by the bytes they are given: hostile metadata and
//! payloads (those found by fuzzing and a few more) parse, decode or print under 64 MiB at peak, and
//! within what each decoder's documentation promises per input byte. (corprof-sig's
//! tests/decoder_bounds.rs does the same for signatures.)
//!
//! Its own test binary, so that its global allocator (which records the peak of live heap bytes)
//! is its own. The cases take a lock, so that one case's measure does not include another's.

use corprof::eventpipe::{BoolSize, EventMetadata, Field, FieldType, FormatErrorKind, Payload};

#[path = "../corprof-sig/tests/support/peak_alloc.rs"]
mod peak_alloc;
use peak_alloc::*;

/// A field name of 30,000 characters.
fn long_name() -> String {
    "N".repeat(30_000)
}

/// Found by fuzzing: arrays of objects whose one field (named with 30,000 characters) is an empty object
/// cost no payload bytes per element; the decoder copied the name per value (602 bytes → 13 GB).
#[test]
fn a_long_field_name_is_shared_and_empty_elements_are_budgeted() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let element = FieldType::Object(vec![Field::new(long_name(), FieldType::Object(Vec::new()))]);
    let fields: Vec<Field> =
        (0..301).map(|i| Field::new(format!("a{i}"), FieldType::Array(Box::new(element.clone())))).collect();
    let metadata = EventMetadata { id: 1, name: "E".into(), keywords: 0, version: 0, level: 0, opcode: None, fields };
    let payload = [0xff; 602];
    let (result, _) = bounded("602-byte payload, 30k-character name", || Payload::decode(&metadata, &payload));
    assert_eq!(result.unwrap_err().kind, FormatErrorKind::TooManyValues);

    // As many elements as the budget pays for decode, share the name, and print within bounds.
    let fields = vec![Field::new("a", FieldType::Array(Box::new(element)))];
    let metadata = EventMetadata { id: 1, name: "E".into(), keywords: 0, version: 0, level: 0, opcode: None, fields };
    let (result, _) = bounded("two elements", || Payload::decode(&metadata, &[2, 0]));
    let decoded = result.unwrap();
    let (text, _) = bounded("printing them", || decoded.to_string());
    assert_eq!(text.len(), "a=[{".len() + 2 * (30_000 + "={}".len()) + "}, {".len() + "}]".len());
}

/// A metadata blob with objects nested as deep as allowed, each claiming as many fields as the
/// blob could hold, then a field with a 30,000-character name: parsing stays linear.
#[test]
fn metadata_with_nested_claims_and_a_long_name_parses_within_bounds() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut blob = 1u32.to_le_bytes().to_vec();
    blob.extend([b'E', 0, 0, 0]);
    blob.extend([0u8; 16]); // keywords, version, level
    blob.extend(1u32.to_le_bytes()); // one V1 field …
    for _ in 0..15 {
        blob.extend(1u32.to_le_bytes()); // … an object …
        blob.extend(u32::MAX.to_le_bytes()); // … claiming every field there is room for
    }
    blob.extend(9u32.to_le_bytes());
    blob.extend(long_name().encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
    let (result, peak) = bounded("nested field-count claims", || EventMetadata::parse(&blob));
    assert_eq!(result.unwrap_err().kind, FormatErrorKind::Truncated);
    // What `EventMetadata::parse` promises.
    assert!(peak < 32 * blob.len() + 48 * 1024, "{peak} bytes for {} blob bytes", blob.len());
}

/// What `Payload::decode` promises: under three times its budget (64 KiB + 128 bytes per payload byte),
/// for the densest payloads there are: one-byte values, and empty objects in arrays.
#[test]
fn a_payload_costs_what_its_documentation_says_per_byte() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let promise = |len: usize| 3 * (64 * 1024 + 128 * len);
    let bytes = FieldType::Array(Box::new(FieldType::U8));
    let fields = vec![Field::new("b", bytes)];
    let metadata = EventMetadata { id: 1, name: "E".into(), keywords: 0, version: 0, level: 0, opcode: None, fields };
    let mut data = 65_535u16.to_le_bytes().to_vec();
    data.extend(std::iter::repeat_n(7u8, 65_535));
    let (result, peak) = bounded("65,535 one-byte values", || Payload::decode_with(&metadata, &data, BoolSize::One));
    assert!(result.is_ok());
    assert!(peak <= promise(data.len()), "{peak} bytes for {} payload bytes", data.len());

    let empties = FieldType::Array(Box::new(FieldType::Array(Box::new(FieldType::Object(Vec::new())))));
    let fields = vec![Field::new("e", empties)];
    let metadata = EventMetadata { id: 1, name: "E".into(), keywords: 0, version: 0, level: 0, opcode: None, fields };
    let data = [0xffu8; 4096];
    let (result, peak) = bounded("arrays of arrays of empty objects", || Payload::decode(&metadata, &data));
    assert_eq!(result.unwrap_err().kind, FormatErrorKind::TooManyValues);
    assert!(peak <= promise(data.len()), "{peak} bytes for {} payload bytes", data.len());
}
