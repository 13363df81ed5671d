//! The EventPipe readers on arbitrary bytes: a metadata blob parses or is refused, a payload
//! decodes with it or is refused, never a panic; and what decodes prints, and encodes, within
//! the decoding budget's bounds.
//!
//! The input is a two-byte little-endian length, that many bytes of metadata blob, and the
//! payload after them.

#![no_main]

use corprof::eventpipe::{BUDGET_BASE, BUDGET_PER_BYTE, BoolSize, EventMetadata, Payload};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((len, rest)) = input.split_first_chunk::<2>() else { return };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (blob, data) = rest.split_at(len);
    let Ok(metadata) = EventMetadata::parse(blob) else { return };
    let budget = BUDGET_BASE + BUDGET_PER_BYTE * data.len();
    for bools in [BoolSize::Four, BoolSize::One] {
        let Ok(payload) = Payload::decode_with(&metadata, data, bools) else { continue };
        // Each value prints in a few dozen bytes besides its name and text, all charged.
        let text = payload.to_string();
        assert!(text.len() <= 2 * budget, "{} bytes of text for a budget of {budget}", text.len());
        let values: Vec<_> = payload.fields.into_iter().map(|(_, v)| v).collect();
        let bytes = Payload::encode(&metadata.fields, &values);
        // Strings may not survive (a NUL inside): otherwise what decoded encodes again.
        if let Some(bytes) = bytes
            && bools == BoolSize::Four
        {
            assert_eq!(bytes.len(), data.len(), "re-encoded to another length");
        }
    }
});
