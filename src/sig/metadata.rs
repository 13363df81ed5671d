//! [`NameResolver`] over `MetaDataImport`.
//!
//! The metadata wrappers exist only when the header folder has cor.h (coreclr-3.x's has none),
//! and no cfg tells this crate which. So the impl sits in a block that imports the root's glob:
//! there `MetaDataImport` names the wrapper when it exists and otherwise the empty stand-in
//! below, whose method calls fall back to [`stand_in::Absent`]'s (an inherent method wins over
//! a trait's, so with the wrapper present the stand-ins are never called). With cor.h the impl is
//! the real one; without, it is an impl for a type no one can construct.

use super::Token;
use super::format::{NameResolver, TypeName};

/// Takes `MetaDataImport`'s place when the header has no metadata interfaces.
#[allow(dead_code)]
enum MetaDataImport {}

#[allow(dead_code)]
mod stand_in {
    pub struct Props {
        pub name: String,
        pub param_seq: u32,
        pub resolution_scope: u32,
        pub sig: *const u8,
        pub sig_size: u32,
    }
    /// The methods of `MetaDataImport` the resolver calls, failing.
    pub trait Absent {
        fn get_type_def_props(&self, _: u32) -> Result<Props, ()> {
            Err(())
        }
        fn get_type_ref_props(&self, _: u32) -> Result<Props, ()> {
            Err(())
        }
        fn get_nested_class_props(&self, _: u32) -> Result<u32, ()> {
            Err(())
        }
        fn enum_generic_params(&self, _: u32) -> Result<std::iter::Empty<u32>, ()> {
            Err(())
        }
        fn get_generic_param_props(&self, _: u32) -> Result<Props, ()> {
            Err(())
        }
        fn get_type_spec_from_token(&self, _: u32) -> Result<Props, ()> {
            Err(())
        }
    }
    impl<T: ?Sized> Absent for T {}
}

/// Splits metadata's `Namespace.Name` at its last dot.
#[allow(dead_code)] // unused when the impl is the stand-in's
fn split_full_name(full: String) -> (String, String) {
    match full.rsplit_once('.') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), full),
    }
}

const _: () = {
    #[allow(unused_imports)]
    use self::stand_in::Absent as _;
    #[allow(unused_imports)]
    use crate::*;

    /// Names from the module's metadata: `TypeDef`s (nested ones through
    /// `GetNestedClassProps`), `TypeRef`s (nested when their resolution scope is a `TypeRef`),
    /// `TypeSpec` blobs, and generic parameters by `EnumGenericParams`/`GetGenericParamProps`.
    impl NameResolver for MetaDataImport {
        fn type_name(&self, token: Token) -> Option<TypeName> {
            match token.table() {
                Token::TYPE_DEF => {
                    let props = self.get_type_def_props(token.0).ok()?;
                    let enclosing = self.get_nested_class_props(token.0).ok().map(Token).filter(|t| !t.is_nil());
                    let (namespace, name) =
                        if enclosing.is_some() { (String::new(), props.name) } else { split_full_name(props.name) };
                    Some(TypeName { namespace, name, enclosing })
                }
                Token::TYPE_REF => {
                    let props = self.get_type_ref_props(token.0).ok()?;
                    let scope = Token(props.resolution_scope);
                    let enclosing = (scope.table() == Token::TYPE_REF && !scope.is_nil()).then_some(scope);
                    let (namespace, name) =
                        if enclosing.is_some() { (String::new(), props.name) } else { split_full_name(props.name) };
                    Some(TypeName { namespace, name, enclosing })
                }
                _ => None,
            }
        }

        fn generic_param_name(&self, owner: Token, index: u32) -> Option<String> {
            self.enum_generic_params(owner.0)
                .ok()?
                .filter_map(|gp| self.get_generic_param_props(gp).ok())
                .find(|props| props.param_seq == index)
                .map(|props| props.name)
        }

        fn type_spec(&self, token: Token) -> Option<Vec<u8>> {
            let spec = self.get_type_spec_from_token(token.0).ok()?;
            if spec.sig.is_null() {
                return None;
            }
            // SAFETY: GetTypeSpecFromToken returned S_OK with a pointer to `sig_size` bytes of the
            // module's metadata, which stay valid while `self` (the import) is alive; they are
            // copied out before this borrow ends.
            let blob = unsafe { std::slice::from_raw_parts(spec.sig, spec.sig_size as usize) };
            Some(blob.to_vec())
        }
    }
};
