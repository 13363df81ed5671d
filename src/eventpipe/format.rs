//! The bytes of EventPipe events: the metadata blob that describes an event and the payload that
//! carries its values. Pure parsing and serialization, no runtime call; every function here is
//! total over its input (errors, never panics).
//!
//! Both readers are bounded by the bytes they are given. A metadata blob's fields are built from
//! the bytes that describe them (each field at least six bytes). A payload is decoded under a
//! byte budget ([`Payload::decode`]), and field names are shared ([`Arc<str>`]) between the
//! metadata and every value decoded with it, never copied per value: an array of empty objects
//! costs no payload bytes per element, so without both a few hundred bytes could ask for
//! gigabytes (a long field name repeated per element).

use crate::GUID;
use std::fmt;
use std::mem::size_of;
use std::sync::Arc;

/// How deep types may nest (objects in arrays in objects …). The runtime's generators never nest
/// deeply; the limit keeps a malicious or corrupt blob from exhausting the stack.
const MAX_DEPTH: usize = 16;

/// The fixed part of a payload's decoding budget, in bytes ([`Payload::decode`]).
pub const BUDGET_BASE: usize = 64 * 1024;

/// The part of a payload's decoding budget that grows with the payload, in bytes per payload byte
/// ([`Payload::decode`]). A payload of one-byte fields with 40-character names costs about 90.
pub const BUDGET_PER_BYTE: usize = 128;

/// What one decoded value is charged: its slot in an object's field list (the largest slot a
/// value takes).
const VALUE_COST: usize = size_of::<(Arc<str>, FieldValue)>();

/// What went wrong reading a metadata blob or a payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatErrorKind {
    /// The bytes end inside a number, a string or a structure.
    Truncated,
    /// A type code EventPipe does not define (or one, like `Empty`, that describes no data).
    UnknownTypeCode(u32),
    /// Types nest deeper than this parser follows.
    TooDeep,
    /// Bytes are left over after the last field (or inside a length-delimited tag).
    TrailingBytes,
    /// The payload would decode to more than its byte budget ([`Payload::decode`]).
    TooManyValues,
    /// Both the V1 field list and a V2 parameter tag describe fields; the runtime writes one or
    /// the other.
    DuplicateFieldList,
}

/// A malformed metadata blob or payload: what, and at which byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// What went wrong.
    pub kind: FormatErrorKind,
    /// The offset into the blob or payload where it was noticed.
    pub offset: usize,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            FormatErrorKind::Truncated => "the bytes end early".to_string(),
            FormatErrorKind::UnknownTypeCode(code) => format!("unknown type code {code}"),
            FormatErrorKind::TooDeep => format!("types nest deeper than {MAX_DEPTH}"),
            FormatErrorKind::TrailingBytes => "bytes left over".to_string(),
            FormatErrorKind::TooManyValues => "values beyond the decoding budget".to_string(),
            FormatErrorKind::DuplicateFieldList => "both V1 fields and a V2 parameter tag".to_string(),
        };
        write!(f, "{what} at offset {}", self.offset)
    }
}

impl std::error::Error for FormatError {}

/// A bounds-checked little-endian cursor.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    fn error(&self, kind: FormatErrorKind) -> FormatError {
        FormatError { kind, offset: self.pos }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| self.error(FormatErrorKind::Truncated))?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// UTF-16LE up to a NUL code unit (consumed, not returned). Unpaired surrogates become
    /// U+FFFD: text is for reading, not for round-tripping arbitrary code units.
    fn utf16z(&mut self) -> Result<String, FormatError> {
        let start = self.pos;
        let mut units = Vec::new();
        loop {
            let unit = self.u16().map_err(|_| FormatError { kind: FormatErrorKind::Truncated, offset: start })?;
            if unit == 0 {
                return Ok(String::from_utf16_lossy(&units));
            }
            units.push(unit);
        }
    }
}

/// The type of one field, as EventPipe metadata describes it. The numbers are EventPipe's type
/// codes (`COR_PRF_EVENTPIPE_*`, .NET's `TypeCode` plus 19 for arrays); the payload encoding of
/// each is given with its variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// 1: a structure: its fields, in order, with no framing of their own.
    Object(Vec<Field>),
    /// 3: four bytes (a Win32 `BOOL`), nonzero for true — but one byte in self-describing
    /// EventSource events: see [`BoolSize`].
    Bool,
    /// 4: one UTF-16 code unit.
    Char,
    /// 5: one signed byte.
    I8,
    /// 6: one byte.
    U8,
    /// 7
    I16,
    /// 8
    U16,
    /// 9
    I32,
    /// 10
    U32,
    /// 11
    I64,
    /// 12
    U64,
    /// 13: IEEE 754 single precision.
    F32,
    /// 14: IEEE 754 double precision.
    F64,
    /// 15: a .NET `decimal`, 16 bytes.
    Decimal,
    /// 16: a Windows `FILETIME`, 8 bytes (100 ns ticks since 1601-01-01 UTC).
    DateTime,
    /// 17: a GUID, 16 bytes in Windows layout.
    Guid,
    /// 18: UTF-16LE ending with a NUL code unit.
    String,
    /// 19: a 16-bit element count, then the elements (V2 metadata only).
    Array(Box<FieldType>),
}

impl FieldType {
    /// The EventPipe type code (`COR_PRF_EVENTPIPE_PARAM_TYPE`).
    pub fn code(&self) -> u32 {
        match self {
            FieldType::Object(_) => 1,
            FieldType::Bool => 3,
            FieldType::Char => 4,
            FieldType::I8 => 5,
            FieldType::U8 => 6,
            FieldType::I16 => 7,
            FieldType::U16 => 8,
            FieldType::I32 => 9,
            FieldType::U32 => 10,
            FieldType::I64 => 11,
            FieldType::U64 => 12,
            FieldType::F32 => 13,
            FieldType::F64 => 14,
            FieldType::Decimal => 15,
            FieldType::DateTime => 16,
            FieldType::Guid => 17,
            FieldType::String => 18,
            FieldType::Array(_) => 19,
        }
    }

    /// The type of a scalar code (not 1, Object, nor 19, Array, which need more metadata).
    pub fn scalar(code: u32) -> Option<FieldType> {
        Some(match code {
            3 => FieldType::Bool,
            4 => FieldType::Char,
            5 => FieldType::I8,
            6 => FieldType::U8,
            7 => FieldType::I16,
            8 => FieldType::U16,
            9 => FieldType::I32,
            10 => FieldType::U32,
            11 => FieldType::I64,
            12 => FieldType::U64,
            13 => FieldType::F32,
            14 => FieldType::F64,
            15 => FieldType::Decimal,
            16 => FieldType::DateTime,
            17 => FieldType::Guid,
            18 => FieldType::String,
            _ => return None,
        })
    }

    /// Whether `value` is of this type (recursively for arrays and objects, where an object's
    /// fields must match by name and order).
    pub fn matches(&self, value: &FieldValue) -> bool {
        match (self, value) {
            (FieldType::Object(fields), FieldValue::Object(values)) => {
                fields.len() == values.len()
                    && fields.iter().zip(values).all(|(f, (name, v))| f.name == *name && f.ty.matches(v))
            }
            (FieldType::Array(element), FieldValue::Array(values)) => values.iter().all(|v| element.matches(v)),
            (FieldType::Bool, FieldValue::Bool(_))
            | (FieldType::Char, FieldValue::Char(_))
            | (FieldType::I8, FieldValue::I8(_))
            | (FieldType::U8, FieldValue::U8(_))
            | (FieldType::I16, FieldValue::I16(_))
            | (FieldType::U16, FieldValue::U16(_))
            | (FieldType::I32, FieldValue::I32(_))
            | (FieldType::U32, FieldValue::U32(_))
            | (FieldType::I64, FieldValue::I64(_))
            | (FieldType::U64, FieldValue::U64(_))
            | (FieldType::F32, FieldValue::F32(_))
            | (FieldType::F64, FieldValue::F64(_))
            | (FieldType::Decimal, FieldValue::Decimal(_))
            | (FieldType::DateTime, FieldValue::DateTime(_))
            | (FieldType::Guid, FieldValue::Guid(_))
            | (FieldType::String, FieldValue::String(_)) => true,
            _ => false,
        }
    }
}

/// A named field of an event (or of an object field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field's name, shared with every value decoded for it ([`Payload::fields`],
    /// [`FieldValue::Object`]).
    pub name: Arc<str>,
    /// The field's type.
    pub ty: FieldType,
}

impl Field {
    /// A field named `name` of type `ty`.
    pub fn new(name: impl Into<Arc<str>>, ty: FieldType) -> Field {
        Field { name: name.into(), ty }
    }
}

/// The description of an event that comes with each delivered event (`metadataBlob` of
/// `EventPipeEventDelivered`), in the nettrace metadata format: event ID, name, keywords,
/// version, level, a V1 field list, then optional tags (V2): an opcode, and a V2 field list
/// (used instead of the V1 list when a field is an array).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventMetadata {
    /// The event's ID within its provider.
    pub id: u32,
    /// The event's name (the EventSource method's name for EventSource events; may be empty).
    pub name: String,
    /// The event's keywords.
    pub keywords: u64,
    /// The event's version.
    pub version: u32,
    /// The event's level (0 LogAlways … 5 Verbose).
    pub level: u32,
    /// The opcode, when the metadata carries an opcode tag.
    pub opcode: Option<u8>,
    /// The payload's fields, in order.
    pub fields: Vec<Field>,
}

/// Tag kinds after the V1 part of a metadata blob.
const TAG_OPCODE: u8 = 1;
const TAG_PARAMETERS_V2: u8 = 2;

impl EventMetadata {
    /// Parses a metadata blob. Unknown tags are skipped by their length; anything else that does
    /// not follow the format is an error.
    ///
    /// Every field is built from the at least six bytes that describe it, and no field list
    /// reserves room for more than 64 fields ahead: parsing holds under 32 bytes per blob byte,
    /// plus 48 KiB, at its peak (`tests/decoder_bounds.rs` measures it).
    pub fn parse(blob: &[u8]) -> Result<EventMetadata, FormatError> {
        let mut r = Reader::new(blob);
        let id = r.u32()?;
        let name = r.utf16z()?;
        let keywords = r.u64()?;
        let version = r.u32()?;
        let level = r.u32()?;
        let mut fields = parse_fields(&mut r, false, 0)?;
        let mut opcode = None;
        while !r.at_end() {
            let len = r.u32()? as usize;
            let tag = r.u8()?;
            let base = r.pos;
            let body = r.take(len)?;
            let mut t = Reader { bytes: body, pos: 0 };
            match tag {
                TAG_OPCODE => opcode = Some(t.u8()?),
                TAG_PARAMETERS_V2 => {
                    if !fields.is_empty() {
                        return Err(FormatError { kind: FormatErrorKind::DuplicateFieldList, offset: base });
                    }
                    fields = parse_fields(&mut t, true, 0).map_err(|e| shifted(e, base))?;
                }
                // A tag from a newer format: its length says how far to skip.
                _ => t.pos = body.len(),
            }
            if !t.at_end() {
                return Err(FormatError { kind: FormatErrorKind::TrailingBytes, offset: base + t.pos });
            }
        }
        Ok(EventMetadata { id, name, keywords, version, level, opcode, fields })
    }
}

fn shifted(e: FormatError, base: usize) -> FormatError {
    FormatError { kind: e.kind, offset: e.offset + base }
}

/// A field count, then the fields (V1: type then name; V2: a length, the name, then the type).
fn parse_fields(r: &mut Reader<'_>, v2: bool, depth: usize) -> Result<Vec<Field>, FormatError> {
    let count = r.u32()?;
    // Each field takes at least 6 bytes, so a count the blob cannot hold is rejected before any
    // allocation sized by it; the reservation is small besides, as nested objects each have one.
    let mut fields = Vec::with_capacity((count as usize).min(r.bytes.len().saturating_sub(r.pos) / 6).min(64));
    for _ in 0..count {
        fields.push(parse_field(r, v2, depth)?);
    }
    Ok(fields)
}

fn parse_field(r: &mut Reader<'_>, v2: bool, depth: usize) -> Result<Field, FormatError> {
    if v2 {
        // The field's length (including these four bytes). The runtime's own reader ignores it,
        // and so does this one: the field is read by its structure, which is checked.
        let _len = r.u32()?;
        let name = r.utf16z()?.into();
        let ty = parse_type(r, v2, depth)?;
        Ok(Field { name, ty })
    } else {
        let ty = parse_type(r, v2, depth)?;
        let name = r.utf16z()?.into();
        Ok(Field { name, ty })
    }
}

fn parse_type(r: &mut Reader<'_>, v2: bool, depth: usize) -> Result<FieldType, FormatError> {
    if depth >= MAX_DEPTH {
        return Err(r.error(FormatErrorKind::TooDeep));
    }
    let at = r.pos;
    let code = r.u32()?;
    match code {
        1 => Ok(FieldType::Object(parse_fields(r, v2, depth + 1)?)),
        19 if v2 => Ok(FieldType::Array(Box::new(parse_type(r, v2, depth + 1)?))),
        _ => FieldType::scalar(code).ok_or(FormatError { kind: FormatErrorKind::UnknownTypeCode(code), offset: at }),
    }
}

/// One field's decoded value.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// A `Bool` field.
    Bool(bool),
    /// A `Char` field: one UTF-16 code unit (which may be half of a surrogate pair).
    Char(u16),
    /// An `I8` field.
    I8(i8),
    /// A `U8` field.
    U8(u8),
    /// An `I16` field.
    I16(i16),
    /// A `U16` field.
    U16(u16),
    /// An `I32` field.
    I32(i32),
    /// A `U32` field.
    U32(u32),
    /// An `I64` field.
    I64(i64),
    /// A `U64` field.
    U64(u64),
    /// An `F32` field.
    F32(f32),
    /// An `F64` field.
    F64(f64),
    /// A `Decimal` field, its 16 bytes as they were written.
    Decimal([u8; 16]),
    /// A `DateTime` field: a `FILETIME` (100 ns ticks since 1601-01-01 UTC).
    DateTime(u64),
    /// A `Guid` field.
    Guid(GUID),
    /// A `String` field (unpaired surrogates read as U+FFFD).
    String(String),
    /// An `Array` field's elements.
    Array(Vec<FieldValue>),
    /// An `Object` field: each field's name (shared with the metadata's [`Field`]) and value, in
    /// order.
    Object(Vec<(Arc<str>, FieldValue)>),
}

impl fmt::Display for FieldValue {
    /// Integers and floats as Rust prints them, a char in single quotes, a string in double
    /// quotes (escaped as Rust's `{:?}` does), arrays as `[a, b]`, objects as `{x=1, y=2}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Bool(v) => write!(f, "{v}"),
            FieldValue::Char(v) => match char::from_u32(u32::from(*v)) {
                Some(c) => write!(f, "{c:?}"),
                None => write!(f, "'\\u{{{v:04x}}}'"),
            },
            FieldValue::I8(v) => write!(f, "{v}"),
            FieldValue::U8(v) => write!(f, "{v}"),
            FieldValue::I16(v) => write!(f, "{v}"),
            FieldValue::U16(v) => write!(f, "{v}"),
            FieldValue::I32(v) => write!(f, "{v}"),
            FieldValue::U32(v) => write!(f, "{v}"),
            FieldValue::I64(v) => write!(f, "{v}"),
            FieldValue::U64(v) => write!(f, "{v}"),
            FieldValue::F32(v) => write!(f, "{v}"),
            FieldValue::F64(v) => write!(f, "{v}"),
            FieldValue::Decimal(v) => write!(f, "decimal:{}", v.iter().map(|b| format!("{b:02x}")).collect::<String>()),
            FieldValue::DateTime(v) => write!(f, "filetime:{v}"),
            FieldValue::Guid(v) => write!(f, "{v}"),
            FieldValue::String(v) => write!(f, "{v:?}"),
            FieldValue::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            FieldValue::Object(fields) => {
                f.write_str("{")?;
                write_named(f, fields)?;
                f.write_str("}")
            }
        }
    }
}

fn write_named(f: &mut fmt::Formatter<'_>, fields: &[(Arc<str>, FieldValue)]) -> fmt::Result {
    for (i, (name, value)) in fields.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{name}={value}")?;
    }
    Ok(())
}

/// How many bytes a `Bool` field takes in a payload. The metadata does not say: the runtime's
/// `COR_PRF_EVENTPIPE_BOOLEAN` (profiler-defined events) and manifest-based EventSource events
/// write a four-byte `BOOL`, while self-describing EventSource events
/// (`EventSourceSettings.EtwSelfDescribingEventFormat`, TraceLogging) write one byte (CoreCLR
/// 8.0.4, checked by the eventpipe conformance scenario).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BoolSize {
    /// Four bytes, little-endian, nonzero for true.
    #[default]
    Four,
    /// One byte, nonzero for true.
    One,
}

/// An event's payload decoded with its metadata: each field's name and value, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Payload {
    /// Each field's name (shared with the metadata's [`Field`]) and value, in the metadata's order.
    pub fields: Vec<(Arc<str>, FieldValue)>,
}

impl Payload {
    /// Decodes `data` (the `eventData` of `EventPipeEventDelivered`) with the fields of
    /// `metadata`. Every byte must belong to a field: events whose metadata lists no fields
    /// while their payload has bytes (the runtime's own native events) are reported as
    /// [`FormatErrorKind::TrailingBytes`].
    ///
    /// `Bool` fields take four bytes; use [`Payload::decode_with`] for self-describing
    /// EventSource events.
    ///
    /// Decoding has a budget of [`BUDGET_BASE`] + [`BUDGET_PER_BYTE`] × `data.len()` bytes: each
    /// value is charged the size of its slot (48 bytes on 64-bit targets) plus, for a named field,
    /// its name's length (what [`Payload`]'s `Display` prints for it), each string its length,
    /// each array the room it reserves. A payload that would go over is
    /// [`FormatErrorKind::TooManyValues`]. What decoding allocates stays under three times the
    /// budget (a vector holds its old and new buffers while it doubles), so at most 384 bytes per
    /// payload byte plus 192 KiB at the peak; the decoded payload prints in about the budget.
    pub fn decode(metadata: &EventMetadata, data: &[u8]) -> Result<Payload, FormatError> {
        Payload::decode_with(metadata, data, BoolSize::Four)
    }

    /// [`Payload::decode`] with `Bool` fields of `bools` bytes.
    pub fn decode_with(metadata: &EventMetadata, data: &[u8], bools: BoolSize) -> Result<Payload, FormatError> {
        let mut r = Reader::new(data);
        let budget = BUDGET_BASE.saturating_add(data.len().saturating_mul(BUDGET_PER_BYTE));
        let mut d = Decoder { budget, bools };
        let fields = d.fields(&mut r, &metadata.fields, 0)?;
        if !r.at_end() {
            return Err(r.error(FormatErrorKind::TrailingBytes));
        }
        Ok(Payload { fields })
    }

    /// The value of the first field named `name`.
    pub fn get(&self, name: &str) -> Option<&FieldValue> {
        self.fields.iter().find(|(n, _)| **n == *name).map(|(_, v)| v)
    }

    /// Serializes `values` as a payload of `fields`: the inverse of [`Payload::decode`]. `None`
    /// when the values do not match the fields (count, types, object field names) or an array
    /// has more than 65,535 elements.
    pub fn encode(fields: &[Field], values: &[FieldValue]) -> Option<Vec<u8>> {
        if fields.len() != values.len() || !fields.iter().zip(values).all(|(f, v)| f.ty.matches(v)) {
            return None;
        }
        let mut out = Vec::new();
        for value in values {
            encode_value(value, &mut out)?;
        }
        Some(out)
    }
}

impl fmt::Display for Payload {
    /// `name=value, name=value` (see [`FieldValue`]'s `Display`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_named(f, &self.fields)
    }
}

/// Decoding state: the bytes of output left to build, and the width of `Bool`.
struct Decoder {
    budget: usize,
    bools: BoolSize,
}

impl Decoder {
    /// Takes `bytes` from the budget, or fails at `r`'s position.
    fn charge(&mut self, r: &Reader<'_>, bytes: usize) -> Result<(), FormatError> {
        self.budget = self.budget.checked_sub(bytes).ok_or_else(|| r.error(FormatErrorKind::TooManyValues))?;
        Ok(())
    }

    fn fields(
        &mut self,
        r: &mut Reader<'_>,
        fields: &[Field],
        depth: usize,
    ) -> Result<Vec<(Arc<str>, FieldValue)>, FormatError> {
        fields
            .iter()
            .map(|field| {
                // The name is shared, not copied, but charged: it is what printing the value costs.
                self.charge(r, field.name.len())?;
                Ok((Arc::clone(&field.name), self.value(r, &field.ty, depth)?))
            })
            .collect()
    }

    fn value(&mut self, r: &mut Reader<'_>, ty: &FieldType, depth: usize) -> Result<FieldValue, FormatError> {
        // Metadata from `EventMetadata::parse` is never deeper than this, but a hand-built one may be.
        if depth >= MAX_DEPTH {
            return Err(r.error(FormatErrorKind::TooDeep));
        }
        self.charge(r, VALUE_COST)?;
        Ok(match ty {
            FieldType::Object(fields) => FieldValue::Object(self.fields(r, fields, depth + 1)?),
            FieldType::Bool => FieldValue::Bool(match self.bools {
                BoolSize::Four => r.u32()? != 0,
                BoolSize::One => r.u8()? != 0,
            }),
            FieldType::Char => FieldValue::Char(r.u16()?),
            FieldType::I8 => FieldValue::I8(i8::from_le_bytes(r.array()?)),
            FieldType::U8 => FieldValue::U8(r.u8()?),
            FieldType::I16 => FieldValue::I16(i16::from_le_bytes(r.array()?)),
            FieldType::U16 => FieldValue::U16(r.u16()?),
            FieldType::I32 => FieldValue::I32(i32::from_le_bytes(r.array()?)),
            FieldType::U32 => FieldValue::U32(r.u32()?),
            FieldType::I64 => FieldValue::I64(i64::from_le_bytes(r.array()?)),
            FieldType::U64 => FieldValue::U64(r.u64()?),
            FieldType::F32 => FieldValue::F32(f32::from_le_bytes(r.array()?)),
            FieldType::F64 => FieldValue::F64(f64::from_le_bytes(r.array()?)),
            FieldType::Decimal => FieldValue::Decimal(r.array()?),
            FieldType::DateTime => FieldValue::DateTime(r.u64()?),
            FieldType::Guid => FieldValue::Guid(guid_from_le(r.array()?)),
            FieldType::String => {
                let text = r.utf16z()?;
                self.charge(r, text.len())?;
                FieldValue::String(text)
            }
            FieldType::Array(element) => {
                let count = r.u16()?;
                // No more room reserved than bytes remain (a count is only a claim), nor than the
                // budget pays for.
                let room = usize::from(count).min(r.bytes.len() - r.pos).min(self.budget / size_of::<FieldValue>());
                self.charge(r, room * size_of::<FieldValue>())?;
                let mut items = Vec::with_capacity(room);
                for _ in 0..count {
                    items.push(self.value(r, element, depth + 1)?);
                }
                FieldValue::Array(items)
            }
        })
    }
}

fn guid_from_le(b: [u8; 16]) -> GUID {
    let mut be = [0u8; 16];
    // Data1, Data2, Data3 are little-endian in memory; Data4 is a byte array.
    be[0..4].copy_from_slice(&[b[3], b[2], b[1], b[0]]);
    be[4..6].copy_from_slice(&[b[5], b[4]]);
    be[6..8].copy_from_slice(&[b[7], b[6]]);
    be[8..16].copy_from_slice(&b[8..16]);
    GUID::from_u128(u128::from_be_bytes(be))
}

fn guid_to_le(g: &GUID) -> [u8; 16] {
    let be = g.to_u128().to_be_bytes();
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&[be[3], be[2], be[1], be[0]]);
    b[4..6].copy_from_slice(&[be[5], be[4]]);
    b[6..8].copy_from_slice(&[be[7], be[6]]);
    b[8..16].copy_from_slice(&be[8..16]);
    b
}

fn encode_value(value: &FieldValue, out: &mut Vec<u8>) -> Option<()> {
    match value {
        FieldValue::Bool(v) => out.extend_from_slice(&u32::from(*v).to_le_bytes()),
        FieldValue::Char(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::I8(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::U8(v) => out.push(*v),
        FieldValue::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::Decimal(v) => out.extend_from_slice(v),
        FieldValue::DateTime(v) => out.extend_from_slice(&v.to_le_bytes()),
        FieldValue::Guid(v) => out.extend_from_slice(&guid_to_le(v)),
        FieldValue::String(v) => {
            // A NUL inside the text would end it early for every reader: refuse it.
            if v.contains('\0') {
                return None;
            }
            for unit in v.encode_utf16().chain([0]) {
                out.extend_from_slice(&unit.to_le_bytes());
            }
        }
        FieldValue::Array(items) => {
            out.extend_from_slice(&u16::try_from(items.len()).ok()?.to_le_bytes());
            for item in items {
                encode_value(item, out)?;
            }
        }
        FieldValue::Object(fields) => {
            for (_, item) in fields {
                encode_value(item, out)?;
            }
        }
    }
    Some(())
}
