//! Blob → signature.
//!
//! Bounded by the blob's length: every count is checked against the bytes left before anything
//! is built by it, and nothing is reserved ahead of what is read (each item takes at least one
//! byte, so a vector grows only with bytes consumed). A decoded signature therefore holds at most
//! one [`Type`] node (in its `Box` or `Vec` slot) per blob byte, plus an array shape's four-byte
//! sizes and bounds. Counting a vector's old and new buffers while it doubles, decoding takes
//! under 3 × `size_of::<Type>()` + 8 bytes per blob byte at its peak (200 on 64-bit targets,
//! where a `Type` is 64 bytes; `tests/decoder_bounds.rs` measures it). Nesting is capped at [`MAX_DEPTH`], generic-parameter counts at
//! [`MAX_GENERIC_PARAMS`].

use super::types::et;
use super::*;

/// A cursor over a signature blob that reports errors at its position.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0, depth: 0 }
    }

    fn err<T>(&self, kind: SigErrorKind) -> Result<T, SigError> {
        Err(SigError { offset: self.pos, kind })
    }

    fn peek(&self) -> Result<u8, SigError> {
        match self.bytes.get(self.pos) {
            Some(&b) => Ok(b),
            None => self.err(SigErrorKind::UnexpectedEnd),
        }
    }

    fn byte(&mut self) -> Result<u8, SigError> {
        let b = self.peek()?;
        self.pos += 1;
        Ok(b)
    }

    fn u32(&mut self) -> Result<u32, SigError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        match decode_compressed_u32(rest) {
            Ok((v, len)) => {
                self.pos += len;
                Ok(v)
            }
            Err(kind) => self.err(kind),
        }
    }

    fn i32(&mut self) -> Result<i32, SigError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        match decode_compressed_i32(rest) {
            Ok((v, len)) => {
                self.pos += len;
                Ok(v)
            }
            Err(kind) => self.err(kind),
        }
    }

    /// A count of items that each take at least one byte: more than the bytes left is malformed,
    /// and checking it here keeps a forged count from reserving gigabytes.
    fn count(&mut self) -> Result<usize, SigError> {
        let start = self.pos;
        let n = self.u32()? as usize;
        if n > self.bytes.len() - self.pos {
            return Err(SigError { offset: start, kind: SigErrorKind::UnexpectedEnd });
        }
        Ok(n)
    }

    /// A `TypeDefOrRefOrSpecEncoded` (II.23.2.8).
    fn type_token(&mut self) -> Result<Token, SigError> {
        let start = self.pos;
        let coded = self.u32()?;
        let table = match coded & 3 {
            0 => Token::TYPE_DEF,
            1 => Token::TYPE_REF,
            2 => Token::TYPE_SPEC,
            _ => return Err(SigError { offset: start, kind: SigErrorKind::BadTypeToken(coded) }),
        };
        // A row beyond a token's 24 bits could not be written back.
        if coded >> 2 > 0x00ff_ffff {
            return Err(SigError { offset: start, kind: SigErrorKind::BadTypeToken(coded) });
        }
        Ok(Token::new(table, coded >> 2))
    }

    pub(crate) fn finish(&self) -> Result<(), SigError> {
        if self.pos == self.bytes.len() { Ok(()) } else { self.err(SigErrorKind::TrailingBytes) }
    }

    /// A type, with any custom modifiers, `pinned` and `byref` prefixes it carries.
    pub(crate) fn ty(&mut self) -> Result<Type, SigError> {
        if self.depth >= MAX_DEPTH {
            return self.err(SigErrorKind::TooDeep);
        }
        self.depth += 1;
        let result = self.ty_inner();
        self.depth -= 1;
        result
    }

    fn boxed(&mut self) -> Result<Box<Type>, SigError> {
        self.ty().map(Box::new)
    }

    fn ty_inner(&mut self) -> Result<Type, SigError> {
        let start = self.pos;
        let b = self.byte()?;
        Ok(match b {
            et::VOID => Type::Void,
            et::BOOLEAN => Type::Boolean,
            et::CHAR => Type::Char,
            et::I1 => Type::I1,
            et::U1 => Type::U1,
            et::I2 => Type::I2,
            et::U2 => Type::U2,
            et::I4 => Type::I4,
            et::U4 => Type::U4,
            et::I8 => Type::I8,
            et::U8 => Type::U8,
            et::R4 => Type::R4,
            et::R8 => Type::R8,
            et::STRING => Type::String,
            et::OBJECT => Type::Object,
            et::I => Type::I,
            et::U => Type::U,
            et::TYPEDBYREF => Type::TypedByRef,
            et::VALUETYPE => Type::ValueType(self.type_token()?),
            et::CLASS => Type::Class(self.type_token()?),
            et::VAR => Type::Var(self.u32()?),
            et::MVAR => Type::MVar(self.u32()?),
            et::GENERICINST => {
                let value_type = match self.byte()? {
                    et::VALUETYPE => true,
                    et::CLASS => false,
                    other => return Err(SigError { offset: self.pos - 1, kind: SigErrorKind::BadElementType(other) }),
                };
                let generic = self.type_token()?;
                let n = self.count()?;
                let args = (0..n).map(|_| self.ty()).collect::<Result<_, _>>()?;
                Type::GenericInst { value_type, generic, args }
            }
            et::SZARRAY => Type::SzArray(self.boxed()?),
            et::ARRAY => {
                let elem = self.boxed()?;
                let rank = self.u32()?;
                let too_many = SigError {
                    offset: self.pos,
                    kind: SigErrorKind::Inconsistent("array shape with more bounds than its rank"),
                };
                let n = self.count()?;
                if n > rank as usize {
                    return Err(too_many);
                }
                let sizes = (0..n).map(|_| self.u32()).collect::<Result<_, _>>()?;
                let n = self.count()?;
                if n > rank as usize {
                    return Err(too_many);
                }
                let lower_bounds = (0..n).map(|_| self.i32()).collect::<Result<_, _>>()?;
                Type::Array(elem, ArrayShape { rank, sizes, lower_bounds })
            }
            et::PTR => Type::Ptr(self.boxed()?),
            et::BYREF => Type::ByRef(self.boxed()?),
            et::FNPTR => {
                self.depth += 1;
                let sig = self.method_sig();
                self.depth -= 1;
                Type::FnPtr(Box::new(sig?))
            }
            et::CMOD_REQD | et::CMOD_OPT => {
                let modifier = self.type_token()?;
                Type::Modified { required: b == et::CMOD_REQD, modifier, ty: self.boxed()? }
            }
            et::PINNED => Type::Pinned(self.boxed()?),
            other => return Err(SigError { offset: start, kind: SigErrorKind::BadElementType(other) }),
        })
    }

    /// A method signature, from its calling-convention byte.
    pub(crate) fn method_sig(&mut self) -> Result<MethodSig, SigError> {
        let call_conv = CallConv(self.peek()?);
        if !call_conv.is_method() {
            return self.err(SigErrorKind::BadCallingConvention(call_conv.0));
        }
        self.pos += 1;
        let generic_params = if call_conv.is_generic() {
            let at = self.pos;
            let n = self.u32()?;
            if n > MAX_GENERIC_PARAMS {
                return Err(SigError { offset: at, kind: SigErrorKind::TooManyGenericParams(n) });
            }
            n
        } else {
            0
        };
        let n = self.count()?;
        let ret = self.ty()?;
        // Grown as parameters are read, not reserved by the count: a function pointer's count is
        // checked against the bytes left, but at every nesting level, each reserving as much.
        let mut params = Vec::new();
        let mut sentinel = None;
        while params.len() < n {
            if self.peek()? == et::SENTINEL {
                if sentinel.is_some() {
                    return self.err(SigErrorKind::BadSentinel);
                }
                sentinel = Some(params.len());
                self.pos += 1;
                continue;
            }
            params.push(self.ty()?);
        }
        // A varargs call site passing no extra arguments ends with the sentinel. Only at the top:
        // after a function pointer's parameters it would be the enclosing list's sentinel.
        if self.depth == 0 && sentinel.is_none() && self.bytes.get(self.pos) == Some(&et::SENTINEL) {
            sentinel = Some(params.len());
            self.pos += 1;
        }
        Ok(MethodSig { call_conv, generic_params, ret, params, sentinel })
    }

    /// The calling-convention byte, which must have kind `kind`; flags only when `flags`, since
    /// only a property's encoding keeps them.
    fn expect_kind(&mut self, kind: u8, flags: bool) -> Result<CallConv, SigError> {
        let cc = CallConv(self.peek()?);
        if cc.kind() != kind || (!flags && cc.0 != kind) {
            return self.err(SigErrorKind::BadCallingConvention(cc.0));
        }
        self.pos += 1;
        Ok(cc)
    }

    fn field_sig(&mut self) -> Result<FieldSig, SigError> {
        self.expect_kind(CallConv::FIELD, false)?;
        Ok(FieldSig { ty: self.ty()? })
    }

    fn property_sig(&mut self) -> Result<PropertySig, SigError> {
        let call_conv = self.expect_kind(CallConv::PROPERTY, true)?;
        let n = self.count()?;
        let ty = self.ty()?;
        let params = (0..n).map(|_| self.ty()).collect::<Result<_, _>>()?;
        Ok(PropertySig { call_conv, ty, params })
    }

    fn local_var_sig(&mut self) -> Result<LocalVarSig, SigError> {
        self.expect_kind(CallConv::LOCAL_SIG, false)?;
        let n = self.count()?;
        let locals = (0..n).map(|_| self.ty()).collect::<Result<_, _>>()?;
        Ok(LocalVarSig { locals })
    }

    fn method_spec(&mut self) -> Result<MethodSpec, SigError> {
        self.expect_kind(CallConv::GENERIC_INST, false)?;
        let n = self.count()?;
        let args = (0..n).map(|_| self.ty()).collect::<Result<_, _>>()?;
        Ok(MethodSpec { args })
    }
}

/// Runs `f` over the whole of `bytes`, refusing bytes left over.
fn whole<'a, T>(bytes: &'a [u8], f: impl FnOnce(&mut Reader<'a>) -> Result<T, SigError>) -> Result<T, SigError> {
    let mut r = Reader::new(bytes);
    let value = f(&mut r)?;
    r.finish()?;
    Ok(value)
}

impl Type {
    /// Decode one type that fills `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Type, SigError> {
        whole(bytes, Reader::ty)
    }
}

impl MethodSig {
    /// Decode a method signature (definition, reference, call site or function pointer).
    pub fn decode(bytes: &[u8]) -> Result<MethodSig, SigError> {
        whole(bytes, Reader::method_sig)
    }
}

impl FieldSig {
    /// Decode a field signature.
    pub fn decode(bytes: &[u8]) -> Result<FieldSig, SigError> {
        whole(bytes, Reader::field_sig)
    }
}

impl PropertySig {
    /// Decode a property signature.
    pub fn decode(bytes: &[u8]) -> Result<PropertySig, SigError> {
        whole(bytes, Reader::property_sig)
    }
}

impl LocalVarSig {
    /// Decode a local-variable signature.
    pub fn decode(bytes: &[u8]) -> Result<LocalVarSig, SigError> {
        whole(bytes, Reader::local_var_sig)
    }
}

impl TypeSpec {
    /// Decode a type specification.
    pub fn decode(bytes: &[u8]) -> Result<TypeSpec, SigError> {
        whole(bytes, |r| Ok(TypeSpec { ty: r.ty()? }))
    }
}

impl MethodSpec {
    /// Decode a method specification.
    pub fn decode(bytes: &[u8]) -> Result<MethodSpec, SigError> {
        whole(bytes, Reader::method_spec)
    }
}

impl Signature {
    /// Decode a signature of whichever kind its calling-convention byte says (a type
    /// specification has none: use [`TypeSpec::decode`]).
    pub fn decode(bytes: &[u8]) -> Result<Signature, SigError> {
        let Some(&first) = bytes.first() else {
            return Err(SigError { offset: 0, kind: SigErrorKind::UnexpectedEnd });
        };
        match CallConv(first).kind() {
            CallConv::FIELD => FieldSig::decode(bytes).map(Signature::Field),
            CallConv::PROPERTY => PropertySig::decode(bytes).map(Signature::Property),
            CallConv::LOCAL_SIG => LocalVarSig::decode(bytes).map(Signature::LocalVar),
            CallConv::GENERIC_INST => MethodSpec::decode(bytes).map(Signature::MethodSpec),
            _ => MethodSig::decode(bytes).map(Signature::Method),
        }
    }
}
