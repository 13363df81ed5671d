//! The signature decoder and formatter on arbitrary bytes: every blob decodes or is refused,
//! never a panic; what decodes encodes back to the same bytes; and printing it, with type
//! specifications that point back into the input (so they may refer to each other, fan out and
//! cycle, as a malformed module's can), stays within the formatter's length limit.
//!
//! The input is the blob itself. Type specification `n` is the input from byte `n` on (a suffix
//! of the blob being printed: self-reference for free); type names and generic parameter names
//! are made up from the tokens.

#![no_main]

use corprof_sig::sig::format::{MAX_FORMATTED_LEN, TRUNCATED};
use corprof_sig::sig::{
    Generics, MethodSig, NameResolver, Signature, Token, Type, TypeName, TypeSpec, format_method, format_type,
};
use libfuzzer_sys::fuzz_target;

struct Suffixes<'a>(&'a [u8]);

impl NameResolver for Suffixes<'_> {
    fn type_name(&self, token: Token) -> Option<TypeName> {
        let rid = token.rid();
        if rid % 7 == 6 {
            return None;
        }
        // Some nested (in the type one row up), some generic (arity from the row).
        let enclosing = (rid.is_multiple_of(3) && rid > 1).then(|| Token::new(token.table(), rid - 1));
        Some(TypeName { namespace: format!("N{}", token.table()), name: format!("T{rid}`{}", rid % 4), enclosing })
    }

    fn generic_param_name(&self, owner: Token, index: u32) -> Option<String> {
        (index < 3).then(|| format!("P{}_{index}", owner.rid()))
    }

    fn type_spec(&self, token: Token) -> Option<Vec<u8>> {
        self.0.get(token.rid() as usize..).map(<[u8]>::to_vec)
    }
}

fn bounded(text: &str) {
    assert!(text.len() <= MAX_FORMATTED_LEN + TRUNCATED.len(), "{} bytes of text", text.len());
}

fuzz_target!(|blob: &[u8]| {
    let names = Suffixes(blob);
    if let Ok(sig) = Signature::decode(blob) {
        let again = match &sig {
            Signature::Method(s) => s.encode(),
            Signature::Field(s) => s.encode(),
            Signature::Property(s) => s.encode(),
            Signature::LocalVar(s) => s.encode(),
            Signature::MethodSpec(s) => s.encode(),
        };
        assert_eq!(again.as_deref(), Ok(blob), "{sig:?} does not encode back");
    }
    if let Ok(sig) = MethodSig::decode(blob) {
        let owner = Token::new(Token::TYPE_SPEC, 0);
        bounded(&format_method(&names, owner, "M", &sig, Some(Token::new(Token::METHOD_DEF, 1))));
        bounded(&format_method(&names, Token::new(Token::TYPE_DEF, 3), "M", &sig, None));
    }
    if let Ok(spec) = TypeSpec::decode(blob) {
        assert_eq!(spec.encode().as_deref(), Ok(blob), "{spec:?} does not encode back");
        let generics = Generics {
            type_owner: Some(Token::new(Token::TYPE_DEF, 2)),
            method_owner: Some(Token::new(Token::METHOD_DEF, 2)),
        };
        bounded(&format_type(&spec.ty, &names, generics));
    }
    // The blob as the type specification behind a token, the way `format_type` meets it.
    bounded(&format_type(&Type::Class(Token::new(Token::TYPE_SPEC, 0)), &names, Generics::default()));
});
