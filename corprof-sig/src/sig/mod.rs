//! Metadata signatures (ECMA-335 II.23.2): decode, encode and print them.
//!
//! A signature blob (what `get_method_props`, `get_member_ref_props`, `get_type_spec_from_token`
//! and friends return as `sig_blob`) decodes into one of the types here:
//!
//! | blob | type |
//! |---|---|
//! | method definition or reference, function pointer, stand-alone call site | [`MethodSig`] |
//! | field | [`FieldSig`] |
//! | property | [`PropertySig`] |
//! | local variables (`LocalVarSigTok` of a method body) | [`LocalVarSig`] |
//! | type specification | [`TypeSpec`] |
//! | method specification (generic method instantiation) | [`MethodSpec`] |
//!
//! or, when the kind is not known beforehand, into a [`Signature`]. Every type has `decode` and
//! `encode`; encoding what was decoded gives back the same bytes (decoding refuses compressed
//! integers written longer than needed, the one encoding choice the format leaves open).
//!
//! Type tokens stay tokens ([`Token`]); [`mod@format`] prints types and methods the way people read
//! them, asking a [`NameResolver`] for the names behind the tokens (corprof's `MetaDataImport` is one).
//!
//! Blobs come from a module's metadata, which a malformed (or hostile) module controls, so both
//! sides are bounded. Decoding checks every count against the bytes left and reserves nothing
//! ahead of what it reads: at its peak it holds under 3 × `size_of::<Type>()` + 8 bytes per blob
//! byte (200 on 64-bit targets), nesting at most [`MAX_DEPTH`] deep, and a method declares at
//! most [`MAX_GENERIC_PARAMS`] generic parameters. Printing stops at
//! [`format::MAX_FORMATTED_LEN`] bytes of text, however the type specifications behind the tokens
//! refer to each other.
//!
//! ```
//! use corprof_sig::sig::{MethodSig, Type};
//! // instance string M(int32[], !!0)
//! let blob = [0x30, 0x01, 0x02, 0x0e, 0x1d, 0x08, 0x1e, 0x00];
//! let sig = MethodSig::decode(&blob).unwrap();
//! assert!(sig.call_conv.has_this());
//! assert_eq!(sig.ret, Type::String);
//! assert_eq!(sig.params, [Type::SzArray(Box::new(Type::I4)), Type::MVar(0)]);
//! assert_eq!(sig.encode().unwrap(), blob);
//! ```

mod decode;
mod encode;
pub mod format;
mod types;

pub use format::{Generics, NameResolver, TypeName, format_method, format_type, type_path};
pub use types::*;

use std::fmt;

/// Why a signature could not be decoded or encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigError {
    /// Byte offset in the blob where the problem was found (for encoding: bytes written so far).
    pub offset: usize,
    /// What went wrong.
    pub kind: SigErrorKind,
}

/// What went wrong in a [`SigError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SigErrorKind {
    /// The blob ended in the middle of an item.
    UnexpectedEnd,
    /// A compressed integer starting with `0xff` (or an `0xe0`-prefixed four-byte form).
    BadCompressedInt,
    /// A compressed integer written in more bytes than its value needs.
    NonCanonicalInt,
    /// An element type byte that cannot start a type here.
    BadElementType(u8),
    /// A calling-convention byte that is not the kind of signature asked for.
    BadCallingConvention(u8),
    /// A `TypeDefOrRefOrSpecEncoded` with the reserved tag 3, or a token of another table.
    BadTypeToken(u32),
    /// A sentinel outside a method's parameter list, or more than one.
    BadSentinel,
    /// Types nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Bytes left after the signature ended.
    TrailingBytes,
    /// A value too large for its compressed encoding (encoding only).
    ValueTooLarge(u64),
    /// Counts disagree (e.g. an array shape with more sizes than its rank).
    Inconsistent(&'static str),
    /// A generic-parameter count above [`MAX_GENERIC_PARAMS`], more than metadata can number.
    TooManyGenericParams(u32),
}

/// The deepest nesting of types [`decode`](Type::decode) follows; a blob nesting deeper is
/// refused rather than risking the stack.
pub const MAX_DEPTH: usize = 64;

/// The most generic parameters a method signature may declare. Metadata numbers a generic
/// parameter with two bytes (ECMA-335 II.22.20, `GenericParam.Number`), so no method has more than
/// 2^16; a larger count in a blob is malformed, and refused before the formatter would print that
/// many names.
pub const MAX_GENERIC_PARAMS: u32 = 1 << 16;

impl fmt::Display for SigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "signature byte {}: ", self.offset)?;
        match &self.kind {
            SigErrorKind::UnexpectedEnd => f.write_str("unexpected end of signature"),
            SigErrorKind::BadCompressedInt => f.write_str("malformed compressed integer"),
            SigErrorKind::NonCanonicalInt => f.write_str("compressed integer longer than needed"),
            SigErrorKind::BadElementType(b) => write!(f, "unexpected element type 0x{b:02x}"),
            SigErrorKind::BadCallingConvention(b) => write!(f, "unexpected calling convention 0x{b:02x}"),
            SigErrorKind::BadTypeToken(t) => write!(f, "bad type token 0x{t:08x}"),
            SigErrorKind::BadSentinel => f.write_str("misplaced sentinel"),
            SigErrorKind::TooDeep => write!(f, "types nested deeper than {MAX_DEPTH}"),
            SigErrorKind::TrailingBytes => f.write_str("bytes after the end of the signature"),
            SigErrorKind::ValueTooLarge(v) => write!(f, "value {v} too large to encode"),
            SigErrorKind::Inconsistent(what) => write!(f, "inconsistent signature: {what}"),
            SigErrorKind::TooManyGenericParams(n) => {
                write!(f, "{n} generic parameters, more than metadata can number ({MAX_GENERIC_PARAMS})")
            }
        }
    }
}

impl std::error::Error for SigError {}

/// Decode a compressed unsigned integer (II.23.2) at the start of `bytes`: the value and how many
/// bytes it took.
pub fn decode_compressed_u32(bytes: &[u8]) -> Result<(u32, usize), SigErrorKind> {
    let (value, len) = decode_raw(bytes)?;
    if compressed_len(value) != Some(len) {
        return Err(SigErrorKind::NonCanonicalInt);
    }
    Ok((value, len))
}

/// The bits of a compressed integer and its length, before any canonical-form check.
fn decode_raw(bytes: &[u8]) -> Result<(u32, usize), SigErrorKind> {
    let b0 = *bytes.first().ok_or(SigErrorKind::UnexpectedEnd)?;
    let byte = |i: usize| bytes.get(i).copied().map(u32::from).ok_or(SigErrorKind::UnexpectedEnd);
    let (value, len) = if b0 & 0x80 == 0 {
        (u32::from(b0), 1)
    } else if b0 & 0xc0 == 0x80 {
        ((u32::from(b0 & 0x3f) << 8) | byte(1)?, 2)
    } else if b0 & 0xe0 == 0xc0 {
        ((u32::from(b0 & 0x1f) << 24) | (byte(1)? << 16) | (byte(2)? << 8) | byte(3)?, 4)
    } else {
        return Err(SigErrorKind::BadCompressedInt);
    };
    Ok((value, len))
}

/// How many bytes the compressed form of `value` takes, or `None` above `0x1fff_ffff`.
fn compressed_len(value: u32) -> Option<usize> {
    match value {
        0..=0x7f => Some(1),
        0x80..=0x3fff => Some(2),
        0x4000..=0x1fff_ffff => Some(4),
        _ => None,
    }
}

/// Append the compressed form of `value` (II.23.2) to `out`; `None` above `0x1fff_ffff`.
pub fn encode_compressed_u32(value: u32, out: &mut Vec<u8>) -> Option<()> {
    match compressed_len(value)? {
        1 => out.push(value as u8),
        2 => out.extend_from_slice(&(0x8000 | value as u16).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000 | value).to_be_bytes()),
    }
    Some(())
}

/// Decode a compressed signed integer (II.23.2: the unsigned form of the value rotated left by
/// one within its width, the sign bit last).
pub fn decode_compressed_i32(bytes: &[u8]) -> Result<(i32, usize), SigErrorKind> {
    let (raw, len) = decode_raw(bytes)?;
    let bits = match len {
        1 => 7,
        2 => 14,
        _ => 29,
    };
    let magnitude = (raw >> 1) as i32;
    let value = if raw & 1 == 0 { magnitude } else { magnitude - (1 << (bits - 1)) };
    // Canonical means the width `encode_compressed_i32` picks for this value.
    let mut canonical = Vec::new();
    encode_compressed_i32(value, &mut canonical);
    if canonical.len() != len {
        return Err(SigErrorKind::NonCanonicalInt);
    }
    Ok((value, len))
}

/// Append the compressed signed form of `value`; `None` outside `-2^28..2^28`.
pub fn encode_compressed_i32(value: i32, out: &mut Vec<u8>) -> Option<()> {
    let bits = match value {
        -0x40..=0x3f => 7,
        -0x2000..=0x1fff => 14,
        -0x1000_0000..=0x0fff_ffff => 29,
        _ => return None,
    };
    let mask = (1u32 << bits) - 1;
    let raw = ((value as u32) << 1 | u32::from(value < 0)) & mask;
    // The width follows the value's range, not `raw`'s: a negative value's `raw` may be small.
    match bits {
        7 => out.push(raw as u8),
        14 => out.extend_from_slice(&(0x8000 | raw as u16).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000 | raw).to_be_bytes()),
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_unsigned_examples_from_the_standard() {
        for (value, bytes) in [
            (0x03u32, &[0x03u8][..]),
            (0x7f, &[0x7f]),
            (0x80, &[0x80, 0x80]),
            (0x2e57, &[0xae, 0x57]),
            (0x3fff, &[0xbf, 0xff]),
            (0x4000, &[0xc0, 0x00, 0x40, 0x00]),
            (0x1fff_ffff, &[0xdf, 0xff, 0xff, 0xff]),
        ] {
            let mut out = Vec::new();
            encode_compressed_u32(value, &mut out).unwrap();
            assert_eq!(out, bytes, "{value:#x}");
            assert_eq!(decode_compressed_u32(bytes), Ok((value, bytes.len())));
        }
        assert_eq!(decode_compressed_u32(&[0x80, 0x05]), Err(SigErrorKind::NonCanonicalInt));
        assert_eq!(decode_compressed_u32(&[0xe0]), Err(SigErrorKind::BadCompressedInt));
        assert_eq!(decode_compressed_u32(&[0xc0, 0]), Err(SigErrorKind::UnexpectedEnd));
        assert_eq!(encode_compressed_u32(0x2000_0000, &mut Vec::new()), None);
    }

    #[test]
    fn compressed_signed_examples_from_the_standard() {
        for (value, bytes) in [
            (3i32, &[0x06u8][..]),
            (-3, &[0x7b]),
            (64, &[0x80, 0x80]),
            (-64, &[0x01]),
            (8192, &[0xc0, 0x00, 0x40, 0x00]),
            (-8192, &[0x80, 0x01]),
            (268_435_455, &[0xdf, 0xff, 0xff, 0xfe]),
            (-268_435_456, &[0xc0, 0x00, 0x00, 0x01]),
        ] {
            let mut out = Vec::new();
            encode_compressed_i32(value, &mut out).unwrap();
            assert_eq!(out, bytes, "{value}");
            assert_eq!(decode_compressed_i32(bytes), Ok((value, bytes.len())), "{value}");
        }
    }
}
