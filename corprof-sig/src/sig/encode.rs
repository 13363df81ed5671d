//! Signature → blob.

use super::types::et;
use super::*;

/// The growing blob, which reports errors at its length.
struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn err<T>(&self, kind: SigErrorKind) -> Result<T, SigError> {
        Err(SigError { offset: self.out.len(), kind })
    }

    fn u32(&mut self, v: u32) -> Result<(), SigError> {
        match encode_compressed_u32(v, &mut self.out) {
            Some(()) => Ok(()),
            None => self.err(SigErrorKind::ValueTooLarge(v.into())),
        }
    }

    fn count(&mut self, n: usize) -> Result<(), SigError> {
        match u32::try_from(n) {
            Ok(v) => self.u32(v),
            Err(_) => self.err(SigErrorKind::ValueTooLarge(n as u64)),
        }
    }

    fn i32(&mut self, v: i32) -> Result<(), SigError> {
        match encode_compressed_i32(v, &mut self.out) {
            Some(()) => Ok(()),
            None => self.err(SigErrorKind::ValueTooLarge(v as u64)),
        }
    }

    fn type_token(&mut self, t: Token) -> Result<(), SigError> {
        let tag = match t.table() {
            Token::TYPE_DEF => 0,
            Token::TYPE_REF => 1,
            Token::TYPE_SPEC => 2,
            _ => return self.err(SigErrorKind::BadTypeToken(t.0)),
        };
        self.u32((t.rid() << 2) | tag)
    }

    fn ty(&mut self, ty: &Type) -> Result<(), SigError> {
        let simple = match ty {
            Type::Void => et::VOID,
            Type::Boolean => et::BOOLEAN,
            Type::Char => et::CHAR,
            Type::I1 => et::I1,
            Type::U1 => et::U1,
            Type::I2 => et::I2,
            Type::U2 => et::U2,
            Type::I4 => et::I4,
            Type::U4 => et::U4,
            Type::I8 => et::I8,
            Type::U8 => et::U8,
            Type::R4 => et::R4,
            Type::R8 => et::R8,
            Type::String => et::STRING,
            Type::Object => et::OBJECT,
            Type::I => et::I,
            Type::U => et::U,
            Type::TypedByRef => et::TYPEDBYREF,
            Type::ValueType(t) | Type::Class(t) => {
                self.out.push(if matches!(ty, Type::ValueType(_)) { et::VALUETYPE } else { et::CLASS });
                return self.type_token(*t);
            }
            Type::Var(n) | Type::MVar(n) => {
                self.out.push(if matches!(ty, Type::Var(_)) { et::VAR } else { et::MVAR });
                return self.u32(*n);
            }
            Type::GenericInst { value_type, generic, args } => {
                self.out.push(et::GENERICINST);
                self.out.push(if *value_type { et::VALUETYPE } else { et::CLASS });
                self.type_token(*generic)?;
                return self.types(args);
            }
            Type::SzArray(elem) | Type::Ptr(elem) | Type::ByRef(elem) | Type::Pinned(elem) => {
                self.out.push(match ty {
                    Type::SzArray(_) => et::SZARRAY,
                    Type::Ptr(_) => et::PTR,
                    Type::ByRef(_) => et::BYREF,
                    _ => et::PINNED,
                });
                return self.ty(elem);
            }
            Type::Array(elem, shape) => {
                self.out.push(et::ARRAY);
                self.ty(elem)?;
                let rank = shape.rank as usize;
                if shape.sizes.len() > rank || shape.lower_bounds.len() > rank {
                    return self.err(SigErrorKind::Inconsistent("array shape with more bounds than its rank"));
                }
                self.u32(shape.rank)?;
                self.count(shape.sizes.len())?;
                shape.sizes.iter().try_for_each(|&s| self.u32(s))?;
                self.count(shape.lower_bounds.len())?;
                return shape.lower_bounds.iter().try_for_each(|&b| self.i32(b));
            }
            Type::FnPtr(sig) => {
                self.out.push(et::FNPTR);
                return self.method_sig(sig, false);
            }
            Type::Modified { required, modifier, ty } => {
                self.out.push(if *required { et::CMOD_REQD } else { et::CMOD_OPT });
                self.type_token(*modifier)?;
                return self.ty(ty);
            }
        };
        self.out.push(simple);
        Ok(())
    }

    /// A count, then the types.
    fn types(&mut self, types: &[Type]) -> Result<(), SigError> {
        self.count(types.len())?;
        types.iter().try_for_each(|t| self.ty(t))
    }

    fn method_sig(&mut self, sig: &MethodSig, top: bool) -> Result<(), SigError> {
        if !sig.call_conv.is_method() {
            return self.err(SigErrorKind::BadCallingConvention(sig.call_conv.0));
        }
        self.out.push(sig.call_conv.0);
        if sig.call_conv.is_generic() {
            if sig.generic_params > MAX_GENERIC_PARAMS {
                return self.err(SigErrorKind::TooManyGenericParams(sig.generic_params));
            }
            self.u32(sig.generic_params)?;
        } else if sig.generic_params != 0 {
            return self.err(SigErrorKind::Inconsistent("generic parameters without the GENERIC flag"));
        }
        self.count(sig.params.len())?;
        self.ty(&sig.ret)?;
        // A trailing sentinel only at the top: in a function pointer it would read back as the
        // enclosing parameter list's.
        let last = if top { sig.params.len() } else { sig.params.len().saturating_sub(1) };
        if sig.sentinel.is_some_and(|s| s > last || (!top && sig.params.is_empty())) {
            return self.err(SigErrorKind::BadSentinel);
        }
        for (i, p) in sig.params.iter().enumerate() {
            if sig.sentinel == Some(i) {
                self.out.push(et::SENTINEL);
            }
            self.ty(p)?;
        }
        // A sentinel after the last parameter (a varargs call passing no extra arguments).
        if sig.sentinel == Some(sig.params.len()) {
            self.out.push(et::SENTINEL);
        }
        Ok(())
    }

    /// The calling-convention byte of a non-method signature, which must have kind `kind`.
    fn call_conv(&mut self, cc: CallConv, kind: u8) -> Result<(), SigError> {
        if cc.kind() != kind {
            return self.err(SigErrorKind::BadCallingConvention(cc.0));
        }
        self.out.push(cc.0);
        Ok(())
    }
}

fn run(f: impl FnOnce(&mut Writer) -> Result<(), SigError>) -> Result<Vec<u8>, SigError> {
    let mut w = Writer { out: Vec::new() };
    f(&mut w)?;
    Ok(w.out)
}

impl Type {
    /// Encode this type alone (as a type specification's blob is).
    pub fn encode(&self) -> Result<Vec<u8>, SigError> {
        run(|w| w.ty(self))
    }
}

impl MethodSig {
    /// Encode the signature.
    pub fn encode(&self) -> Result<Vec<u8>, SigError> {
        run(|w| w.method_sig(self, true))
    }
}

impl FieldSig {
    /// Encode the signature.
    pub fn encode(&self) -> Result<Vec<u8>, SigError> {
        run(|w| {
            w.out.push(CallConv::FIELD);
            w.ty(&self.ty)
        })
    }
}

impl PropertySig {
    /// Encode the signature.
    pub fn encode(&self) -> Result<Vec<u8>, SigError> {
        run(|w| {
            w.call_conv(self.call_conv, CallConv::PROPERTY)?;
            w.count(self.params.len())?;
            w.ty(&self.ty)?;
            self.params.iter().try_for_each(|p| w.ty(p))
        })
    }
}

impl LocalVarSig {
    /// Encode the signature.
    pub fn encode(&self) -> Result<Vec<u8>, SigError> {
        run(|w| {
            w.out.push(CallConv::LOCAL_SIG);
            w.types(&self.locals)
        })
    }
}

impl TypeSpec {
    /// Encode the specification.
    pub fn encode(&self) -> Result<Vec<u8>, SigError> {
        self.ty.encode()
    }
}

impl MethodSpec {
    /// Encode the specification.
    pub fn encode(&self) -> Result<Vec<u8>, SigError> {
        run(|w| {
            w.out.push(CallConv::GENERIC_INST);
            w.types(&self.args)
        })
    }
}

impl Signature {
    /// Encode the signature.
    pub fn encode(&self) -> Result<Vec<u8>, SigError> {
        match self {
            Signature::Method(s) => s.encode(),
            Signature::Field(s) => s.encode(),
            Signature::Property(s) => s.encode(),
            Signature::LocalVar(s) => s.encode(),
            Signature::MethodSpec(s) => s.encode(),
        }
    }
}
