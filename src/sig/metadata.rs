//! [`NameResolver`] over `MetaDataImport`, the wrapper of cor.h's `IMetaDataImport`: compiled only
//! when the header folder has cor.h (`corprof_iface = "IMetaDataImport"`; coreclr-3.x's has
//! none), as `sig/mod.rs` says.

use super::Token;
use super::format::{NameResolver, TypeName};
use crate::MetaDataImport;

/// Splits metadata's `Namespace.Name` at its last dot.
fn split_full_name(full: String) -> (String, String) {
    match full.rsplit_once('.') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), full),
    }
}

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
