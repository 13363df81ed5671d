//! Just enough of a method signature (ECMA-335 II.23.2.1) to decode primitive arguments and
//! return values: the element type of each parameter and of the return, nothing about classes
//! or generic instantiations beyond "a reference" or "a value type". The blob is read by
//! [`crate::sig::MethodSig::decode`]; this module only sorts its types.

use crate::sig::{MethodSig, Type};
use crate::types::{FunctionID, ObjectID};
use crate::{HResult, ProfilerInfo, Result};
use std::fmt;

/// A parameter's or return value's type, as far as [`ElementValue::decode`] cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// `void`: no value.
    Void,
    /// `bool`.
    Bool,
    /// `char` (a UTF-16 unit).
    Char,
    /// `sbyte`.
    I1,
    /// `byte`.
    U1,
    /// `short`.
    I2,
    /// `ushort`.
    U2,
    /// `int`.
    I4,
    /// `uint`.
    U4,
    /// `long`.
    I8,
    /// `ulong`.
    U8,
    /// `float`.
    R4,
    /// `double`.
    R8,
    /// `nint`.
    I,
    /// `nuint`.
    U,
    /// A reference to an object: a class, a string, an array, `object`.
    Reference,
    /// A value type other than the primitives (a struct, an enum, a generic instantiation of
    /// either), a type parameter, a pointer or a byref: not decoded.
    Other,
}

impl ElementType {
    /// Whether [`ElementValue::decode`] gives a number, a `bool` or a `char` for this type.
    pub fn is_primitive(self) -> bool {
        !matches!(self, ElementType::Void | ElementType::Reference | ElementType::Other)
    }
}

/// A method's calling convention, parameter types and return type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodSignature {
    has_this: bool,
    ret: ElementType,
    params: Vec<ElementType>,
}

impl MethodSignature {
    /// The signature of `function`'s method definition, read from its module's metadata: what
    /// [`ElementValue::decode`] needs to read the function's arguments and return value. Call it
    /// from the mapper (once per function) and keep the result with the hook's data.
    ///
    /// `Err(E_NOINTERFACE)` where corprof was built from a header folder without the metadata
    /// interfaces (coreclr-3.x's has no cor.h); `Err(META_E_BAD_SIGNATURE)` for a blob that
    /// does not decode.
    pub fn of_function(info: &ProfilerInfo, function: FunctionID) -> Result<MethodSignature> {
        crate::sig::function_definition_sig(info, function).map(|sig| Self::from_sig(&sig))
    }

    /// Parses a method signature blob (what `IMetaDataImport::GetMethodProps` gives).
    /// A blob that does not decode is `E_INVALIDARG`.
    pub fn parse(blob: &[u8]) -> Result<MethodSignature> {
        let sig = crate::sig::MethodSig::decode(blob).map_err(|_| HResult::E_INVALIDARG)?;
        Ok(Self::from_sig(&sig))
    }

    fn from_sig(sig: &MethodSig) -> MethodSignature {
        let params = sig.params.iter().map(element).collect();
        // 0x20 HASTHIS without 0x40 EXPLICITTHIS: `this` is passed but not listed.
        MethodSignature { has_this: sig.call_conv.0 & 0x60 == 0x20, ret: element(&sig.ret), params }
    }

    /// Whether calls pass a `this` not listed among the parameters (an instance method).
    pub fn has_this(&self) -> bool {
        self.has_this
    }

    /// The return type (`Void` for none).
    pub fn return_type(&self) -> ElementType {
        self.ret
    }

    /// The declared parameters, in order (without `this`).
    pub fn params(&self) -> &[ElementType] {
        &self.params
    }
}

/// What [`ElementValue::decode`] makes of a signature's type.
fn element(ty: &Type) -> ElementType {
    use ElementType::*;
    match ty {
        Type::Void => Void,
        Type::Boolean => Bool,
        Type::Char => Char,
        Type::I1 => I1,
        Type::U1 => U1,
        Type::I2 => I2,
        Type::U2 => U2,
        Type::I4 => I4,
        Type::U4 => U4,
        Type::I8 => I8,
        Type::U8 => U8,
        Type::R4 => R4,
        Type::R8 => R8,
        Type::I => I,
        Type::U => U,
        Type::String | Type::Object | Type::Class(_) | Type::SzArray(_) | Type::Array(..) => Reference,
        Type::GenericInst { value_type: false, .. } => Reference,
        Type::Modified { ty, .. } => element(ty),
        _ => Other,
    }
}

/// An argument or return value decoded from its bytes by its [`ElementType`]. Integers print in
/// decimal, floating point as `f64` prints, booleans as `true`/`false`, characters as
/// themselves, references as their address.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ElementValue {
    /// A `bool`.
    Bool(bool),
    /// A `char`, as its UTF-16 unit.
    Char(u16),
    /// An `sbyte`.
    I8(i8),
    /// A `byte`.
    U8(u8),
    /// A `short`.
    I16(i16),
    /// A `ushort`.
    U16(u16),
    /// An `int`.
    I32(i32),
    /// A `uint`.
    U32(u32),
    /// A `long`.
    I64(i64),
    /// A `ulong`.
    U64(u64),
    /// A `float`.
    F32(f32),
    /// A `double`.
    F64(f64),
    /// An `nint`.
    ISize(isize),
    /// An `nuint`.
    USize(usize),
    /// An object reference as the object's address (0 for null). Plain bytes decode to this, so
    /// it is an integer and not an [`ObjectID`]: [`ElementValue::object_id`] makes the ID, with
    /// `unsafe`.
    Reference(usize),
}

impl ElementValue {
    /// Decodes `bytes` (an argument or return range) as `ty`: `None` for `void`, for types it
    /// does not decode ([`ElementType::Other`]) and for a range too short for the type.
    pub fn decode(ty: ElementType, bytes: &[u8]) -> Option<ElementValue> {
        fn take<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
            bytes.get(..N)?.try_into().ok()
        }
        use ElementType as T;
        Some(match ty {
            T::Bool => ElementValue::Bool(take::<1>(bytes)?[0] != 0),
            T::Char => ElementValue::Char(u16::from_le_bytes(take(bytes)?)),
            T::I1 => ElementValue::I8(i8::from_le_bytes(take(bytes)?)),
            T::U1 => ElementValue::U8(take::<1>(bytes)?[0]),
            T::I2 => ElementValue::I16(i16::from_le_bytes(take(bytes)?)),
            T::U2 => ElementValue::U16(u16::from_le_bytes(take(bytes)?)),
            T::I4 => ElementValue::I32(i32::from_le_bytes(take(bytes)?)),
            T::U4 => ElementValue::U32(u32::from_le_bytes(take(bytes)?)),
            T::I8 => ElementValue::I64(i64::from_le_bytes(take(bytes)?)),
            T::U8 => ElementValue::U64(u64::from_le_bytes(take(bytes)?)),
            T::R4 => ElementValue::F32(f32::from_le_bytes(take(bytes)?)),
            T::R8 => ElementValue::F64(f64::from_le_bytes(take(bytes)?)),
            T::I => ElementValue::ISize(isize::from_le_bytes(take(bytes)?)),
            T::U => ElementValue::USize(usize::from_le_bytes(take(bytes)?)),
            T::Reference => ElementValue::Reference(usize::from_le_bytes(take(bytes)?)),
            T::Void | T::Other => return None,
        })
    }

    /// The object an [`ElementValue::Reference`] refers to, as the runtime's ID: `None` for any
    /// other value and for a null reference.
    ///
    /// # Safety
    /// The value must have been decoded from an argument or return range the runtime passed to the
    /// hook that is running now, for a parameter of a reference type, and the ID is only current
    /// until the next garbage collection (while the hook runs, none can): anything else is a
    /// number that methods taking an `ObjectID` would dereference as an object.
    pub unsafe fn object_id(&self) -> Option<ObjectID> {
        match *self {
            // SAFETY: the caller vouches that the address is a reference the runtime passed.
            ElementValue::Reference(address) if address != 0 => Some(unsafe { ObjectID::from_raw(address) }),
            _ => None,
        }
    }
}

impl fmt::Display for ElementValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ElementValue::Bool(v) => write!(f, "{v}"),
            // Escaped like Rust's debug output, so that a control character cannot break a line.
            ElementValue::Char(v) => match char::from_u32(v as u32) {
                Some(c) => write!(f, "{}", c.escape_debug()),
                None => write!(f, "\\u{{{v:04x}}}"),
            },
            ElementValue::I8(v) => write!(f, "{v}"),
            ElementValue::U8(v) => write!(f, "{v}"),
            ElementValue::I16(v) => write!(f, "{v}"),
            ElementValue::U16(v) => write!(f, "{v}"),
            ElementValue::I32(v) => write!(f, "{v}"),
            ElementValue::U32(v) => write!(f, "{v}"),
            ElementValue::I64(v) => write!(f, "{v}"),
            ElementValue::U64(v) => write!(f, "{v}"),
            ElementValue::F32(v) => write!(f, "{}", v as f64),
            ElementValue::F64(v) => write!(f, "{v}"),
            ElementValue::ISize(v) => write!(f, "{v}"),
            ElementValue::USize(v) => write!(f, "{v}"),
            ElementValue::Reference(v) => write!(f, "{v:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_static_and_instance_signatures() {
        // static double F(int, long, bool, string, int[], List<int>)
        let blob = [0x00, 6, 0x0D, 0x08, 0x0A, 0x02, 0x0E, 0x1D, 0x08, 0x15, 0x12, 0x05, 1, 0x08];
        let sig = MethodSignature::parse(&blob).unwrap();
        assert!(!sig.has_this());
        assert_eq!(sig.return_type(), ElementType::R8);
        use ElementType::*;
        assert_eq!(sig.params(), &[I4, I8, Bool, Reference, Reference, Reference]);
        // instance generic void M<T>(T, modopt(x) int)
        let blob = [0x30, 1, 2, 0x01, 0x1E, 0, 0x20, 0x09, 0x08];
        let sig = MethodSignature::parse(&blob).unwrap();
        assert!(sig.has_this());
        assert_eq!(sig.params(), &[Other, I4]);
        assert!(MethodSignature::parse(&[0x00, 2, 0x01, 0x08]).is_err(), "truncated");
    }

    #[test]
    fn decodes_primitives() {
        assert_eq!(ElementValue::decode(ElementType::I4, &(-7i64).to_le_bytes()).unwrap().to_string(), "-7");
        assert_eq!(ElementValue::decode(ElementType::R8, &2.5f64.to_le_bytes()).unwrap().to_string(), "2.5");
        assert_eq!(ElementValue::decode(ElementType::Bool, &[1, 0, 0, 0]).unwrap().to_string(), "true");
        assert_eq!(ElementValue::decode(ElementType::I8, &[1, 2]), None, "too short");
        assert_eq!(ElementValue::decode(ElementType::Void, &[]), None);
    }

    #[test]
    fn references_decode_to_addresses_not_object_ids() {
        let bytes = 0x4141_4141_4140usize.to_le_bytes();
        let value = ElementValue::decode(ElementType::Reference, &bytes).unwrap();
        assert_eq!(value, ElementValue::Reference(0x4141_4141_4140));
        assert_eq!(value.to_string(), "0x414141414140");
        // SAFETY: only the conversion is tested; the ID is never handed to the runtime.
        assert_eq!(unsafe { value.object_id() }.map(ObjectID::as_raw), Some(0x4141_4141_4140));
        // SAFETY: as above.
        assert_eq!(unsafe { ElementValue::Reference(0).object_id() }, None, "null is no object");
        // SAFETY: as above.
        assert_eq!(unsafe { ElementValue::I32(5).object_id() }, None);
    }
}
