//! Signatures: every kind decoded from hand-written blobs, encoded back byte for byte, printed
//! through a table resolver; a generator of random valid types for decode/encode identity; and
//! random bytes, which must never panic.

use corprof_sig::sig::format::{MAX_FORMATTED_LEN, TRUNCATED};
use corprof_sig::sig::*;

const TD: u8 = Token::TYPE_DEF;
const TR: u8 = Token::TYPE_REF;
const TS: u8 = Token::TYPE_SPEC;

/// Decodes with `decode`, checks against `expected`, and encodes back to the same bytes.
fn round_trip<T: PartialEq + std::fmt::Debug>(
    blob: &[u8],
    decode: fn(&[u8]) -> Result<T, SigError>,
    encode: fn(&T) -> Result<Vec<u8>, SigError>,
    expected: T,
) {
    let decoded = decode(blob).unwrap_or_else(|e| panic!("{blob:02x?}: {e}"));
    assert_eq!(decoded, expected, "{blob:02x?}");
    assert_eq!(encode(&decoded).unwrap(), blob);
}

fn b(t: Type) -> Box<Type> {
    Box::new(t)
}

#[test]
fn method_signatures() {
    // static void M()
    round_trip(
        &[0x00, 0x00, 0x01],
        MethodSig::decode,
        MethodSig::encode,
        MethodSig { call_conv: CallConv(0), generic_params: 0, ret: Type::Void, params: vec![], sentinel: None },
    );
    // instance !!0 M<2>(class TypeRef#5, valuetype TypeDef#3&, !0)
    round_trip(
        &[0x30, 0x02, 0x03, 0x1e, 0x00, 0x12, 0x15, 0x10, 0x11, 0x0c, 0x13, 0x00],
        MethodSig::decode,
        MethodSig::encode,
        MethodSig {
            call_conv: CallConv(0x30),
            generic_params: 2,
            ret: Type::MVar(0),
            params: vec![
                Type::Class(Token::new(TR, 5)),
                Type::ByRef(b(Type::ValueType(Token::new(TD, 3)))),
                Type::Var(0),
            ],
            sentinel: None,
        },
    );
    // vararg call site: void M(int32, ..., float64, string)
    let sig = MethodSig::decode(&[0x05, 0x03, 0x01, 0x08, 0x41, 0x0d, 0x0e]).unwrap();
    assert_eq!(sig.params, [Type::I4, Type::R8, Type::String]);
    assert_eq!(sig.sentinel, Some(1));
    assert_eq!(sig.encode().unwrap(), [0x05, 0x03, 0x01, 0x08, 0x41, 0x0d, 0x0e]);
    // vararg call site passing no extra arguments: the sentinel comes last
    let sig = MethodSig::decode(&[0x05, 0x01, 0x01, 0x08, 0x41]).unwrap();
    assert_eq!(sig.sentinel, Some(1));
    assert_eq!(sig.encode().unwrap(), [0x05, 0x01, 0x01, 0x08, 0x41]);
    // modreq(IsVolatile) int32 with a modopt on the return
    let sig = MethodSig::decode(&[0x00, 0x01, 0x20, 0x09, 0x08, 0x1f, 0x05, 0x08]).unwrap();
    assert_eq!(sig.ret, Type::Modified { required: false, modifier: Token::new(TR, 2), ty: b(Type::I4) });
    assert_eq!(sig.params[0], Type::Modified { required: true, modifier: Token::new(TR, 1), ty: b(Type::I4) });
    // a function pointer parameter: method int32 *(string)
    let sig = MethodSig::decode(&[0x00, 0x01, 0x01, 0x1b, 0x00, 0x01, 0x08, 0x0e]).unwrap();
    let Type::FnPtr(inner) = &sig.params[0] else { panic!("{sig:?}") };
    assert_eq!((&inner.ret, &inner.params[..]), (&Type::I4, &[Type::String][..]));
    // every primitive as a parameter
    let prims =
        [0x02u8, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x1c, 0x18, 0x19, 0x16];
    let mut blob = vec![0x00, prims.len() as u8, 0x01];
    blob.extend_from_slice(&prims);
    let sig = MethodSig::decode(&blob).unwrap();
    use Type::*;
    assert_eq!(sig.params, [Boolean, Char, I1, U1, I2, U2, I4, U4, I8, U8, R4, R8, String, Object, I, U, TypedByRef]);
    assert_eq!(sig.encode().unwrap(), blob);
}

#[test]
fn field_property_local_typespec_methodspec() {
    round_trip(&[0x06, 0x1d, 0x08], FieldSig::decode, FieldSig::encode, FieldSig { ty: Type::SzArray(b(Type::I4)) });
    // instance int32 Item(string) { get; }
    round_trip(
        &[0x28, 0x01, 0x08, 0x0e],
        PropertySig::decode,
        PropertySig::encode,
        PropertySig { call_conv: CallConv(0x28), ty: Type::I4, params: vec![Type::String] },
    );
    // locals: int32, pinned uint8&, typedref, valuetype TypeDef#1*
    round_trip(
        &[0x07, 0x04, 0x08, 0x45, 0x10, 0x05, 0x16, 0x0f, 0x11, 0x04],
        LocalVarSig::decode,
        LocalVarSig::encode,
        LocalVarSig {
            locals: vec![
                Type::I4,
                Type::Pinned(b(Type::ByRef(b(Type::U1)))),
                Type::TypedByRef,
                Type::Ptr(b(Type::ValueType(Token::new(TD, 1)))),
            ],
        },
    );
    // Dictionary<string, List<!!0>>: genericinst class TypeRef#1 2 string (genericinst class TypeRef#2 1 !!0)
    round_trip(
        &[0x15, 0x12, 0x05, 0x02, 0x0e, 0x15, 0x12, 0x09, 0x01, 0x1e, 0x00],
        TypeSpec::decode,
        TypeSpec::encode,
        TypeSpec {
            ty: Type::GenericInst {
                value_type: false,
                generic: Token::new(TR, 1),
                args: vec![
                    Type::String,
                    Type::GenericInst { value_type: false, generic: Token::new(TR, 2), args: vec![Type::MVar(0)] },
                ],
            },
        },
    );
    // int32[0...3, -5...] : rank 2, one size (4), two lower bounds (0, -5)
    round_trip(
        &[0x14, 0x08, 0x02, 0x01, 0x04, 0x02, 0x00, 0x77],
        TypeSpec::decode,
        TypeSpec::encode,
        TypeSpec { ty: Type::Array(b(Type::I4), ArrayShape { rank: 2, sizes: vec![4], lower_bounds: vec![0, -5] }) },
    );
    round_trip(
        &[0x0a, 0x02, 0x08, 0x11, 0x06],
        MethodSpec::decode,
        MethodSpec::encode,
        MethodSpec { args: vec![Type::I4, Type::ValueType(Token::new(TS, 1))] },
    );
    // Signature tells the kinds apart by their first byte.
    assert!(matches!(Signature::decode(&[0x06, 0x08]), Ok(Signature::Field(_))));
    assert!(matches!(Signature::decode(&[0x28, 0x00, 0x08]), Ok(Signature::Property(_))));
    assert!(matches!(Signature::decode(&[0x07, 0x00]), Ok(Signature::LocalVar(_))));
    assert!(matches!(Signature::decode(&[0x0a, 0x01, 0x08]), Ok(Signature::MethodSpec(_))));
    assert!(matches!(Signature::decode(&[0x20, 0x00, 0x01]), Ok(Signature::Method(_))));
}

#[test]
fn malformed_signatures_are_errors_with_offsets() {
    let err = |blob: &[u8]| MethodSig::decode(blob).unwrap_err();
    assert_eq!(err(&[0x00, 0x01]), SigError { offset: 1, kind: SigErrorKind::UnexpectedEnd });
    assert_eq!(err(&[0x00, 0x00, 0x01, 0x00]), SigError { offset: 3, kind: SigErrorKind::TrailingBytes });
    assert_eq!(err(&[0x00, 0x01, 0x01, 0x17]), SigError { offset: 3, kind: SigErrorKind::BadElementType(0x17) });
    assert_eq!(err(&[0x06, 0x08]), SigError { offset: 0, kind: SigErrorKind::BadCallingConvention(0x06) });
    assert_eq!(err(&[0x00, 0x01, 0x01, 0x12, 0x03]), SigError { offset: 4, kind: SigErrorKind::BadTypeToken(3) });
    assert_eq!(err(&[0x00, 0x80, 0x00, 0x01]), SigError { offset: 1, kind: SigErrorKind::NonCanonicalInt });
    assert_eq!(
        err(&[0x05, 0x02, 0x01, 0x41, 0x08, 0x41, 0x08]),
        SigError { offset: 5, kind: SigErrorKind::BadSentinel }
    );
    // a count larger than the bytes left is refused before anything is reserved
    assert_eq!(err(&[0x00, 0xdf, 0xff, 0xff, 0xff, 0x01]), SigError { offset: 1, kind: SigErrorKind::UnexpectedEnd });
    // more generic parameters than metadata can number (ECMA-335 II.22.20: two bytes)
    assert_eq!(
        err(&[0x10, 0xdf, 0xff, 0xff, 0xff, 0x00, 0x01]),
        SigError { offset: 1, kind: SigErrorKind::TooManyGenericParams(0x1fff_ffff) }
    );
    assert_eq!(MethodSig::decode(&[0x10, 0xc0, 0x01, 0x00, 0x00, 0x00, 0x01]).unwrap().generic_params, 0x1_0000);
    assert_eq!(err(&[0x10, 0xc0, 0x01, 0x00, 0x01, 0x00, 0x01]).kind, SigErrorKind::TooManyGenericParams(0x1_0001));
    let deep: Vec<u8> = std::iter::repeat_n(0x0f, 100).chain([0x08]).collect();
    assert_eq!(TypeSpec::decode(&deep).unwrap_err().kind, SigErrorKind::TooDeep);
    // encoding refuses what no blob can say
    let bad = TypeSpec { ty: Type::Class(Token::new(Token::METHOD_DEF, 1)) };
    assert_eq!(bad.encode().unwrap_err().kind, SigErrorKind::BadTypeToken(0x0600_0001));
    let bad =
        TypeSpec { ty: Type::Array(b(Type::I4), ArrayShape { rank: 1, sizes: vec![1, 2], lower_bounds: vec![] }) };
    assert!(matches!(bad.encode().unwrap_err().kind, SigErrorKind::Inconsistent(_)));
    assert_eq!(
        SigError { offset: 3, kind: SigErrorKind::BadElementType(0x17) }.to_string(),
        "signature byte 3: unexpected element type 0x17"
    );
}

/// Names for a few tokens, as a module's metadata would give them.
struct Table;

impl NameResolver for Table {
    fn type_name(&self, token: Token) -> Option<TypeName> {
        let (namespace, name, enclosing) = match (token.table(), token.rid()) {
            (TR, 1) => ("System.Collections.Generic", "Dictionary`2", None),
            (TR, 2) => ("System.Collections.Generic", "List`1", None),
            (TD, 1) => ("App", "Outer", None),
            (TD, 2) => ("", "Inner", Some(Token::new(TD, 1))),
            (TD, 3) => ("App", "Box`1", None),
            (TD, 4) => ("", "Cursor", Some(Token::new(TD, 3))),
            (TD, 5) => ("", "Pair`1", Some(Token::new(TD, 3))),
            _ => return None,
        };
        Some(TypeName { namespace: namespace.into(), name: name.into(), enclosing })
    }
    fn generic_param_name(&self, owner: Token, index: u32) -> Option<String> {
        match (owner, index) {
            // a nested type has its own copies of the enclosing type's parameters
            (o, 0) if o == Token::new(TD, 3) || o == Token::new(TD, 4) => Some("T".into()),
            (o, 0) if o == Token::new(Token::METHOD_DEF, 7) => Some("U".into()),
            _ => None,
        }
    }
    fn type_spec(&self, token: Token) -> Option<Vec<u8>> {
        // TypeSpec#1: List<int32>
        (token == Token::new(TS, 1)).then(|| vec![0x15, 0x12, 0x09, 0x01, 0x08])
    }
}

#[test]
fn types_print_as_people_read_them() {
    let show = |blob: &[u8]| format_type(&TypeSpec::decode(blob).unwrap().ty, &Table, Generics::default());
    assert_eq!(
        show(&[0x15, 0x12, 0x05, 0x02, 0x0e, 0x08]),
        "System.Collections.Generic.Dictionary<System.String, System.Int32>"
    );
    assert_eq!(show(&[0x12, 0x08]), "App.Outer+Inner");
    assert_eq!(show(&[0x1d, 0x08]), "System.Int32[]");
    assert_eq!(show(&[0x14, 0x08, 0x02, 0x00, 0x00]), "System.Int32[,]");
    assert_eq!(show(&[0x14, 0x08, 0x01, 0x00, 0x00]), "System.Int32[*]");
    assert_eq!(show(&[0x10, 0x13, 0x00]), "!0&");
    assert_eq!(show(&[0x0f, 0x01]), "System.Void*");
    assert_eq!(show(&[0x12, 0x1d]), "[0x01000007]");
    assert_eq!(show(&[0x1f, 0x0d, 0x08]), "System.Int32 modreq([0x01000003])");
    assert_eq!(show(&[0x1b, 0x00, 0x01, 0x08, 0x0e]), "method System.Int32 *(System.String)");
    let generics =
        Generics { type_owner: Some(Token::new(TD, 3)), method_owner: Some(Token::new(Token::METHOD_DEF, 7)) };
    let ty = Type::ByRef(b(Type::Var(0)));
    assert_eq!(format_type(&ty, &Table, generics), "T&");
    assert_eq!(format_type(&Type::MVar(0), &Table, generics), "U");
    assert_eq!(format_type(&Type::MVar(1), &Table, generics), "!!1");
    assert_eq!(
        format_type(&Type::Class(Token::new(TS, 1)), &Table, generics),
        "System.Collections.Generic.List<System.Int32>"
    );
    // Nested in a generic type: each level gets the arguments its arity suffix declares.
    let inst = |generic, args| Type::GenericInst { value_type: true, generic, args };
    assert_eq!(format_type(&inst(Token::new(TD, 4), vec![Type::I4]), &Table, generics), "App.Box<System.Int32>+Cursor");
    assert_eq!(
        format_type(&inst(Token::new(TD, 5), vec![Type::I4, Type::String]), &Table, generics),
        "App.Box<System.Int32>+Pair<System.String>"
    );
    // more arguments than the suffixes declare go last; a generic TypeDef alone gets its names
    assert_eq!(format_type(&inst(Token::new(TD, 1), vec![Type::I4]), &Table, generics), "App.Outer<System.Int32>");
    assert_eq!(format_type(&Type::Class(Token::new(TD, 3)), &Table, generics), "App.Box<T>");
    assert_eq!(format_type(&Type::Class(Token::new(TD, 4)), &Table, generics), "App.Box<T>+Cursor");
}

/// The metadata form profilers print beside a method name: arity suffixes kept, nesting with `+`.
#[test]
fn type_paths_are_metadata_names_with_their_nesting() {
    assert_eq!(type_path(&Table, Token::new(TD, 2)).as_deref(), Some("App.Outer+Inner"));
    assert_eq!(type_path(&Table, Token::new(TD, 5)).as_deref(), Some("App.Box`1+Pair`1"));
    assert_eq!(type_path(&Table, Token::new(TR, 1)).as_deref(), Some("System.Collections.Generic.Dictionary`2"));
    assert_eq!(type_path(&Table, Token::new(TD, 9)), None, "a token the resolver does not know");
}

#[test]
fn methods_print_as_people_read_them() {
    // instance bool Box<T>::Put<U>(!0&, !!0[], string, ...)
    let sig = MethodSig::decode(&[0x35, 0x01, 0x03, 0x02, 0x10, 0x13, 0x00, 0x1d, 0x1e, 0x00, 0x41, 0x0e]).unwrap();
    let text = format_method(&Table, Token::new(TD, 3), "Put", &sig, Some(Token::new(Token::METHOD_DEF, 7)));
    assert_eq!(text, "System.Boolean App.Box<T>::Put<U>(T&, U[], ..., System.String)");
    let sig = MethodSig::decode(&[0x20, 0x00, 0x01]).unwrap();
    assert_eq!(
        format_method(&Table, Token::new(TS, 1), "Clear", &sig, None),
        "System.Void System.Collections.Generic.List<System.Int32>::Clear()"
    );
}

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// Random signature pieces, over the shared generator.
impl Rng {
    /// A number spread over the compressed encodings' widths.
    fn number(&mut self) -> u32 {
        match self.below(3) {
            0 => self.below(0x80) as u32,
            1 => self.below(0x4000) as u32,
            _ => self.below(0x100_0000) as u32,
        }
    }
    fn token(&mut self) -> Token {
        let table = [TD, TR, TS][self.below(3) as usize];
        Token::new(table, self.number() & 0xff_ffff)
    }
    fn ty(&mut self, depth: u32) -> Type {
        let leaf = depth == 0 || self.below(3) == 0;
        if leaf {
            return match self.below(22) {
                0 => Type::Boolean,
                1 => Type::Char,
                2 => Type::I1,
                3 => Type::U1,
                4 => Type::I2,
                5 => Type::U2,
                6 => Type::I4,
                7 => Type::U4,
                8 => Type::I8,
                9 => Type::U8,
                10 => Type::R4,
                11 => Type::R8,
                12 => Type::String,
                13 => Type::Object,
                14 => Type::I,
                15 => Type::U,
                16 => Type::TypedByRef,
                17 => Type::ValueType(self.token()),
                18 => Type::Class(self.token()),
                19 => Type::Var(self.number()),
                20 => Type::MVar(self.number()),
                _ => Type::Void,
            };
        }
        let d = depth - 1;
        match self.below(9) {
            0 => Type::SzArray(Box::new(self.ty(d))),
            1 => Type::Ptr(Box::new(self.ty(d))),
            2 => Type::ByRef(Box::new(self.ty(d))),
            3 => Type::Pinned(Box::new(self.ty(d))),
            4 => Type::Modified { required: self.below(2) == 0, modifier: self.token(), ty: Box::new(self.ty(d)) },
            5 => {
                let rank = 1 + self.below(4) as u32;
                let sizes = (0..self.below(u64::from(rank) + 1)).map(|_| self.number()).collect();
                let lower_bounds =
                    (0..self.below(u64::from(rank) + 1)).map(|_| self.number() as i32 - 0x80_0000).collect();
                Type::Array(Box::new(self.ty(d)), ArrayShape { rank, sizes, lower_bounds })
            }
            6 => {
                let args = (0..1 + self.below(3)).map(|_| self.ty(d)).collect();
                Type::GenericInst { value_type: self.below(2) == 0, generic: self.token(), args }
            }
            7 => Type::FnPtr(Box::new(self.method_sig(d, false))),
            _ => self.ty(d),
        }
    }
    fn method_sig(&mut self, depth: u32, top: bool) -> MethodSig {
        let kinds = [0x00u8, 0x01, 0x02, 0x03, 0x04, 0x05, 0x09, 0x0b];
        let mut cc = kinds[self.below(kinds.len() as u64) as usize] | [0, 0x20, 0x60][self.below(3) as usize];
        let generic = self.below(2) == 0;
        if generic {
            cc |= 0x10;
        }
        let params: Vec<Type> = (0..self.below(4)).map(|_| self.ty(depth)).collect();
        let limit = if top { params.len() + 1 } else { params.len() };
        let sentinel = (limit > 0 && self.below(3) == 0).then(|| self.below(limit as u64) as usize);
        MethodSig {
            call_conv: CallConv(cc),
            generic_params: if generic { self.number() % (MAX_GENERIC_PARAMS + 1) } else { 0 },
            ret: self.ty(depth),
            params,
            sentinel,
        }
    }
}

#[test]
fn random_signatures_survive_encode_decode_encode() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..3000 {
        let sig = rng.method_sig(4, true);
        let blob = sig.encode().unwrap_or_else(|e| panic!("case {i}: {e}: {sig:?}"));
        let back = MethodSig::decode(&blob).unwrap_or_else(|e| panic!("case {i}: {e}: {blob:02x?}"));
        assert_eq!(back, sig, "case {i}");
        assert_eq!(back.encode().unwrap(), blob, "case {i}");

        let locals = LocalVarSig { locals: (0..rng.below(5)).map(|_| rng.ty(4)).collect() };
        let blob = locals.encode().unwrap();
        assert_eq!(LocalVarSig::decode(&blob).unwrap(), locals, "case {i}");
        let spec = TypeSpec { ty: rng.ty(5) };
        let blob = spec.encode().unwrap();
        assert_eq!(TypeSpec::decode(&blob).unwrap(), spec, "case {i}");
        // any prefix of a valid blob is an error, never a panic
        let cut = rng.below(blob.len() as u64) as usize;
        assert!(TypeSpec::decode(&blob[..cut]).is_err(), "case {i}");
    }
}

#[test]
fn random_bytes_never_panic_and_what_decodes_encodes_back() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut decoded = 0;
    for _ in 0..20000 {
        let blob: Vec<u8> = if rng.below(2) == 0 {
            // Bias toward bytes that mean something in a signature.
            let len = rng.below(12) as usize;
            (0..len).map(|_| if rng.below(4) != 0 { rng.below(0x20) as u8 } else { rng.next() as u8 }).collect()
        } else {
            // A valid signature with one byte changed.
            let mut blob = rng.method_sig(2, true).encode().unwrap();
            let at = rng.below(blob.len() as u64) as usize;
            blob[at] = rng.next() as u8;
            blob
        };
        if let Ok(sig) = Signature::decode(&blob) {
            decoded += 1;
            assert_eq!(sig.encode().unwrap(), blob);
        }
        if let Ok(spec) = TypeSpec::decode(&blob) {
            assert_eq!(spec.encode().unwrap(), blob);
            let _ = format_type(&spec.ty, &Table, Generics::default());
        }
    }
    assert!(decoded > 100, "the generator should hit valid signatures too ({decoded})");
}

/// A resolver that knows only type names, keeping the trait's defaults for generic parameter
/// names and type specifications.
struct NamesOnly;

impl NameResolver for NamesOnly {
    fn type_name(&self, token: Token) -> Option<TypeName> {
        let name = |namespace: &str, name: &str, enclosing| {
            Some(TypeName { namespace: namespace.into(), name: name.into(), enclosing })
        };
        match (token.table(), token.rid()) {
            (TD, 1) => name("App", "Map`2", None),
            // Enclosed by a type the resolver does not know.
            (TD, 2) => name("", "Lost", Some(Token::new(TD, 0x40))),
            (TD, 3) => name("App", &"N".repeat(2000), None),
            (TD, 4) => name("ab", &"é".repeat(40_000), None),
            _ => None,
        }
    }
}

/// A resolver whose TypeSpec#2 is `!TypeSpec#2[]`: a type specification naming itself.
struct SelfSpec;

impl NameResolver for SelfSpec {
    fn type_name(&self, _: Token) -> Option<TypeName> {
        None
    }
    fn type_spec(&self, token: Token) -> Option<Vec<u8>> {
        (token == Token::new(TS, 2)).then(|| vec![0x1d, 0x12, (2 << 2) | 2])
    }
}

#[test]
fn the_resolvers_defaults_print_positions_and_tokens() {
    let generics =
        Generics { type_owner: Some(Token::new(TD, 1)), method_owner: Some(Token::new(Token::METHOD_DEF, 1)) };
    assert_eq!(format_type(&Type::Var(1), &NamesOnly, generics), "!1");
    assert_eq!(format_type(&Type::MVar(0), &NamesOnly, generics), "!!0");
    // A TypeSpec is printed as its token when the resolver has no blob for it (a blob of `void`
    // would print `void`).
    assert_eq!(format_type(&Type::Class(Token::new(TS, 1)), &NamesOnly, generics), "[0x1b000001]");
    // A bare generic definition, its parameters unnamed: each one's position, comma-separated.
    assert_eq!(format_type(&Type::Class(Token::new(TD, 1)), &NamesOnly, generics), "App.Map<!0, !1>");
    // An enclosing type the resolver does not know ends the chain as its token.
    assert_eq!(type_path(&NamesOnly, Token::new(TD, 2)).as_deref(), Some("[0x02000040]+Lost"));
    assert_eq!(format_type(&Type::Class(Token::new(TD, 2)), &NamesOnly, generics), "[0x02000040]+Lost");
}

#[test]
fn a_generic_method_lists_its_parameters() {
    let sig = MethodSig {
        call_conv: CallConv(CallConv::GENERIC),
        generic_params: 2,
        ret: Type::MVar(1),
        params: vec![Type::MVar(0)],
        sentinel: None,
    };
    assert_eq!(
        format_method(&NamesOnly, Token::new(TD, 3 + 100), "Swap", &sig, None),
        "!!1 [0x02000067]::Swap<!!0, !!1>(!!0)"
    );
}

#[test]
fn type_specifications_are_followed_eight_deep() {
    let text = format_type(&Type::Class(Token::new(TS, 2)), &SelfSpec, Generics::default());
    assert_eq!(text, format!("[0x1b000002]{}", "[]".repeat(8)));
}

#[test]
fn long_names_are_kept_up_to_the_limit_and_cut_at_a_character() {
    let generics = Generics::default();
    let long = format_type(&Type::Class(Token::new(TD, 3)), &NamesOnly, generics);
    assert_eq!(long, format!("App.{}", "N".repeat(2000)), "2 kB is far below the limit");
    assert_eq!(MAX_FORMATTED_LEN, 64 * 1024);
    // "ab." then 2-byte characters: the limit falls inside one, which is left out whole.
    let cut = format_type(&Type::Class(Token::new(TD, 4)), &NamesOnly, generics);
    let kept = (MAX_FORMATTED_LEN - 3) / 2;
    assert_eq!(cut, format!("ab.{}{TRUNCATED}", "é".repeat(kept)));
    assert!(cut.len() <= MAX_FORMATTED_LEN + TRUNCATED.len());
}

#[test]
fn type_tokens_keep_to_24_bits() {
    // class TypeRef#0xffffff: the largest row, coded (row << 2 | 1) in four bytes.
    let coded: u32 = (0x00ff_ffff << 2) | 1;
    let mut blob = vec![0x12];
    encode_compressed_u32(coded, &mut blob).unwrap();
    let spec = TypeSpec::decode(&blob).unwrap();
    assert_eq!(spec.ty, Type::Class(Token::new(TR, 0x00ff_ffff)));
    assert_eq!(spec.encode().unwrap(), blob);
    // One row more cannot be a token.
    let coded: u32 = (0x0100_0000 << 2) | 1;
    let mut blob = vec![0x12];
    encode_compressed_u32(coded, &mut blob).unwrap();
    let e = TypeSpec::decode(&blob).unwrap_err();
    assert_eq!((e.offset, e.kind), (1, SigErrorKind::BadTypeToken(coded)));
}

#[test]
fn a_generic_instantiation_of_neither_kind_is_refused_where_it_says() {
    // static void M(GENERICINST int32 …): the byte after GENERICINST is at offset 4.
    let e = MethodSig::decode(&[0x00, 0x01, 0x01, 0x15, 0x08, 0x12, 0x05, 0x01, 0x08]).unwrap_err();
    assert_eq!((e.offset, e.kind), (4, SigErrorKind::BadElementType(0x08)));
}

#[test]
fn generic_parameter_counts_up_to_the_limit_are_written() {
    let sig = |n| MethodSig {
        call_conv: CallConv(CallConv::GENERIC),
        generic_params: n,
        ret: Type::Void,
        params: vec![],
        sentinel: None,
    };
    let at = sig(MAX_GENERIC_PARAMS).encode().unwrap();
    assert_eq!(MethodSig::decode(&at).unwrap(), sig(MAX_GENERIC_PARAMS));
    let e = sig(MAX_GENERIC_PARAMS + 1).encode().unwrap_err();
    assert_eq!(e.kind, SigErrorKind::TooManyGenericParams(MAX_GENERIC_PARAMS + 1));
}

#[test]
fn sentinels_past_the_parameters_are_refused() {
    let vararg = |params: Vec<Type>, sentinel| MethodSig {
        call_conv: CallConv(CallConv::VARARG),
        generic_params: 0,
        ret: Type::Void,
        params,
        sentinel,
    };
    // At the top: after the last parameter is allowed, one further is not.
    assert!(vararg(vec![Type::I4], Some(1)).encode().is_ok());
    let e = vararg(vec![Type::I4], Some(2)).encode().unwrap_err();
    assert_eq!(e.kind, SigErrorKind::BadSentinel);
    // In a function pointer with no parameters, none is allowed.
    let outer = |inner| vararg(vec![Type::FnPtr(Box::new(inner))], None);
    let e = outer(vararg(vec![], Some(0))).encode().unwrap_err();
    assert_eq!(e.kind, SigErrorKind::BadSentinel);
}

#[test]
fn tokens_and_calling_conventions_print_in_hex() {
    assert!(Token::new(TD, 0).is_nil());
    assert!(Token(0).is_nil());
    assert!(!Token::new(TD, 1).is_nil());
    assert!(!Token::new(TR, 0x0080_0000).is_nil());
    assert_eq!(format!("{:?}", Token::new(TD, 5)), "Token(0x02000005)");
    assert_eq!(format!("{:?}", CallConv(0x20)), "CallConv(0x20)");
}

/// `MethodSig::new` and `MethodSig::generic` keep the generic flag and count together, whatever
/// byte they are given, and a byte that is no method's convention is refused at encoding.
#[test]
fn constructed_signatures_are_consistent() {
    let plain = MethodSig::new(CallConv::GENERIC | CallConv::HAS_THIS, Type::Void, vec![]);
    assert_eq!((plain.call_conv, plain.generic_params), (CallConv(CallConv::HAS_THIS), 0));
    assert_eq!(MethodSig::decode(&plain.encode().unwrap()).unwrap(), plain);
    let generic = MethodSig::generic(CallConv::GENERIC, 2, Type::MVar(1), vec![Type::MVar(0)]);
    assert_eq!((generic.call_conv, generic.generic_params), (CallConv(CallConv::GENERIC), 2));
    assert_eq!(MethodSig::decode(&generic.encode().unwrap()).unwrap(), generic);
    for bad in [CallConv::FIELD, CallConv::LOCAL_SIG, CallConv::PROPERTY, CallConv::GENERIC_INST, 0xff] {
        assert!(MethodSig::new(bad, Type::Void, vec![]).encode().is_err(), "{bad:#x}");
        assert!(MethodSig::generic(bad, 1, Type::Void, vec![]).encode().is_err(), "{bad:#x}");
    }
    let too_many = MethodSig::generic(CallConv::DEFAULT, u32::MAX, Type::Void, vec![]);
    assert!(too_many.encode().is_err());
}
