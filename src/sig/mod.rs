//! Metadata signatures (ECMA-335 II.23.2): decode, encode and print them, and name the runtime's
//! IDs with them.
//!
//! The pure part — decoding, encoding and printing blobs, which needs no runtime and no header —
//! lives in the [`corprof-sig`](corprof_sig) crate and is re-exported here whole, so
//! `corprof::sig::MethodSig` and `corprof_sig::sig::MethodSig` are one type; a tool that only
//! reads signatures can depend on that crate alone. A signature blob (what `get_method_props`,
//! `get_member_ref_props`, `get_type_spec_from_token` and friends return as `sig_blob`) decodes
//! into one of:
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
//! or, when the kind is not known beforehand, into a [`Signature`]; [`mod@format`] prints types
//! and methods the way people read them, asking a [`NameResolver`] for the names behind the
//! tokens. What this crate adds needs the runtime: `MetaDataImport` (when the header folder has
//! cor.h) is a [`NameResolver`], and [`class_name`], [`function_name`], [`function_names`] and
//! [`method_definition_name`] print the runtime's IDs with the type arguments it reports.
//!
//! ```
//! use corprof::sig::{MethodSig, Type};
//! // instance string M(int32[], !!0)
//! let blob = [0x30, 0x01, 0x02, 0x0e, 0x1d, 0x08, 0x1e, 0x00];
//! let sig = MethodSig::decode(&blob).unwrap();
//! assert!(sig.call_conv.has_this());
//! assert_eq!(sig.ret, Type::String);
//! assert_eq!(sig.params, [Type::SzArray(Box::new(Type::I4)), Type::MVar(0)]);
//! assert_eq!(sig.encode().unwrap(), blob);
//! ```

// The metadata wrappers exist only when the header folder has cor.h (coreclr-3.x's has none).
#[cfg(corprof_iface = "IMetaDataImport")]
mod metadata;
pub(crate) mod runtime;

pub use corprof_sig::sig::*;
pub(crate) use runtime::function_definition_sig;
pub use runtime::{Exact, class_name, function_name, function_names, method_definition_name};

#[cfg(test)]
mod tests {
    /// corprof's paths name corprof-sig's items, not copies: a value made through one path is
    /// accepted where the other's type is asked for.
    #[test]
    fn the_re_exports_are_corprof_sigs_types() {
        let token: corprof_sig::sig::Token = super::Token::new(super::Token::TYPE_DEF, 2);
        let sig: super::MethodSig = corprof_sig::sig::MethodSig::decode(&[0x20, 0x00, 0x01]).unwrap();
        let body: crate::il::MethodBody = corprof_sig::il::MethodBody::parse(&[0x0a, 0x02, 0x2a]).unwrap();
        assert_eq!((token.rid(), sig.params.len(), body.len()), (2, 0, 2));
    }
}
