//! Names of the runtime's IDs: a [`ClassID`] or [`FunctionID`] printed with the instantiation
//! the runtime reports, a method definition with its generic parameters' names.
//!
//! Where [`mod@format`](super::format) prints what metadata says, these functions ask the
//! runtime first: [`class_name`] takes a class's type arguments from `GetClassIDInfo2` (or its
//! element type and rank from `IsArrayClass`), [`function_name`] a method's from
//! `GetFunctionInfo2` (its class's and its own), so `Box<int>` and `Box<string>` give
//! `Shop.Box<System.Int32>` and `Shop.Box<System.__Canon>` (`System.__Canon` is the runtime's
//! stand-in for any reference type where one compiled body serves them all).
//! [`method_definition_name`] prints the definition as the module declares it
//! (`System.Void Shop.Box<T>::.ctor(T)`).
//!
//! All three read the module's metadata through `IMetaDataImport`; a header folder without
//! cor.h (coreclr-3.x's) builds them too, and they then answer `Err(E_NOINTERFACE)`. So does
//! [`MethodSignature::of_function`](crate::hooks::MethodSignature::of_function), which reads a
//! signature here.

// Without cor.h only the `E_NOINTERFACE` half of `Names` is compiled, and what reads metadata
// is unused.
#![cfg_attr(not(corprof_iface = "IMetaDataImport"), allow(dead_code))]

use super::format::{NameResolver, TypeName};
use super::{MethodSig, Token};
use crate::types::{ClassID, FunctionID, ModuleID, mdMethodDef, mdToken};
use crate::{HResult, ProfilerInfo, Result};
use std::cell::RefCell;
use std::collections::HashMap;
#[cfg(corprof_iface = "IMetaDataImport")]
use {
    super::Type,
    super::format::{Generics, MAX_FORMATTED_LEN, format_method, format_type},
    crate::types::COR_PRF_FRAME_INFO,
};

/// How deep type arguments may nest in [`class_name`] (`List<List<…>>`) before it gives up: the
/// runtime's types are finite, this only bounds the stack.
const MAX_ARG_DEPTH: usize = 32;

/// `class` with the type arguments the runtime reports: `Shop.Box<System.Int32>`,
/// `System.Collections.Generic.Dictionary<System.String, System.Object>+Entry[]`,
/// `System.String[,]`, `Shop.Outer+Inner`.
pub fn class_name(info: &ProfilerInfo, class: ClassID) -> Result<String> {
    Names::new(info).class(class, 0)
}

/// `function` as `ReturnType Namespace.Type<Args>::Method<Args>(ParamType, …)`, the class's and
/// the method's type arguments those the runtime reports (`GetFunctionInfo2` without a frame,
/// so shared code gives `System.__Canon`), substituted in the return and parameter types too:
/// `System.__Canon Shop.Catalog::Pick<System.__Canon>(System.__Canon[])`.
pub fn function_name(info: &ProfilerInfo, function: FunctionID) -> Result<String> {
    Names::new(info).function(function)
}

/// The type arguments of one call of a function, as a frame reports them
/// ([`Frame::function_info`](crate::Frame::function_info), `GetFunctionInfo2` with the frame's
/// `COR_PRF_FRAME_INFO`): for shared generic code, the exact instantiation instead of
/// `System.__Canon`.
#[derive(Clone, Copy, Debug)]
pub struct Exact<'a> {
    /// The function's class (0: not known, the function's own answer is used).
    pub class: ClassID,
    /// The method's own type arguments (empty: the function's own answer is used).
    pub method_args: &'a [ClassID],
}

/// The most method type arguments the short form prints (metadata allows 2^16).
const MAX_SHORT_METHOD_ARGS: u32 = 64;

/// `function`'s short form `Namespace.Type<Args>::Method<Args>` and its full form (what
/// [`function_name`] gives), the type arguments `exact`'s when given.
pub fn function_names(info: &ProfilerInfo, function: FunctionID, exact: Option<Exact<'_>>) -> Result<(String, String)> {
    Names::new(info).function_forms(function, exact)
}

/// The method definition `method` of `module` as declared, generic parameters by name:
/// `System.Void Shop.Box<T>::.ctor(T)`, `T Shop.Catalog::Pick<T>(T[])`.
pub fn method_definition_name(info: &ProfilerInfo, module: ModuleID, method: mdMethodDef) -> Result<String> {
    Names::new(info).definition(module, method)
}

/// The decoded signature of `function`'s method definition (the declared types: generic
/// parameters stay parameters).
pub(crate) fn function_definition_sig(info: &ProfilerInfo, function: FunctionID) -> Result<MethodSig> {
    Names::new(info).function_sig(function)
}

/// The runtime's calls behind the functions above: read through `IMetaDataImport` when the
/// header folder has cor.h (`corprof_iface = "IMetaDataImport"`), else `E_NOINTERFACE`.
struct Names<'a> {
    info: &'a ProfilerInfo,
    /// The classes named so far in this call. Type arguments repeat (`Dictionary<T, T>`), and a
    /// malformed module can make every level repeat the one below (`G<X, X, …>` with
    /// `X = G<Y, Y, …>`): without this, naming it would take fan-out^depth runtime calls; with
    /// it, one per class, and each name is bounded by `format_type`'s limit.
    classes: RefCell<HashMap<ClassID, String>>,
}

impl<'a> Names<'a> {
    fn new(info: &'a ProfilerInfo) -> Self {
        Names { info, classes: RefCell::new(HashMap::new()) }
    }
}

/// A resolver that answers generic parameters with the runtime's type arguments, and the rest
/// from metadata.
struct Instantiated<'a, R: ?Sized> {
    metadata: &'a R,
    /// The `TypeDef` whose parameters `class_args` fill.
    class: Token,
    class_args: Vec<String>,
    /// The `MethodDef` whose parameters `method_args` fill.
    method: Token,
    method_args: Vec<String>,
}

impl<R: NameResolver + ?Sized> NameResolver for Instantiated<'_, R> {
    fn type_name(&self, token: Token) -> Option<TypeName> {
        self.metadata.type_name(token)
    }

    fn generic_param_name(&self, owner: Token, index: u32) -> Option<String> {
        let args = match owner {
            o if o == self.class => &self.class_args,
            o if o == self.method => &self.method_args,
            _ => return self.metadata.generic_param_name(owner, index),
        };
        match args.get(index as usize) {
            Some(arg) => Some(arg.clone()),
            None => self.metadata.generic_param_name(owner, index),
        }
    }

    fn type_spec(&self, token: Token) -> Option<Vec<u8>> {
        self.metadata.type_spec(token)
    }
}

/// A [`Token`] from the header's `mdToken` (`u32`, but `i32` in coreclr-3.x's header).
#[allow(clippy::unnecessary_cast)]
fn token(bits: mdToken) -> Token {
    Token(bits as u32)
}

/// Copies a signature blob the metadata returned.
///
/// # Safety
/// `ptr` must be null or point to `len` readable bytes (metadata's blob heap, alive while the
/// import that returned it is).
pub(crate) unsafe fn copy_blob(ptr: *const u8, len: u32) -> Vec<u8> {
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: the caller's contract: `len` readable bytes at a non-null `ptr`.
    unsafe { std::slice::from_raw_parts(ptr, len as usize) }.to_vec()
}

/// The runtime's answers, read through the module's `IMetaDataImport`.
#[cfg(corprof_iface = "IMetaDataImport")]
impl Names<'_> {
    fn import(&self, module: ModuleID) -> Result<crate::MetaDataImport> {
        // ofRead is 0 (the parameter's type differs between headers).
        self.info.get_module_metadata::<crate::MetaDataImport>(module, crate::wrapper_support::zeroed())
    }

    /// The method's owner, name and decoded signature.
    fn method(import: &crate::MetaDataImport, method: mdMethodDef) -> Result<(Token, String, MethodSig)> {
        let props = import.get_method_props(method)?;
        // SAFETY: GetMethodProps succeeded, so `sig_blob` points to `sig_blob_size` bytes of
        // the module's metadata, alive while `import` is; they are copied before it drops.
        let blob = unsafe { copy_blob(props.sig_blob, props.sig_blob_size) };
        let sig = MethodSig::decode(&blob).map_err(|_| HResult::META_E_BAD_SIGNATURE)?;
        Ok((token(props.class), props.name, sig))
    }

    fn class(&self, class: ClassID, depth: usize) -> Result<String> {
        if depth > MAX_ARG_DEPTH {
            return Err(HResult::E_FAIL);
        }
        if let Some(name) = self.classes.borrow().get(&class) {
            return Ok(name.clone());
        }
        let name = self.class_uncached(class, depth)?;
        self.classes.borrow_mut().insert(class, name.clone());
        Ok(name)
    }

    /// The names of type arguments `args`, until their text passes what the formatter prints:
    /// the rest are `…`, not asked for (one class may have thousands of arguments, each with
    /// a name up to the formatter's limit).
    fn arg_names(&self, args: &[ClassID], depth: usize) -> Result<Vec<String>> {
        let mut total = 0usize;
        let mut names = Vec::new();
        for &arg in args {
            if total > MAX_FORMATTED_LEN {
                names.push("…".to_string());
                continue;
            }
            let name = self.class(arg, depth)?;
            total += name.len();
            names.push(name);
        }
        Ok(names)
    }

    fn class_uncached(&self, class: ClassID, depth: usize) -> Result<String> {
        if let Some(array) = self.info.is_array_class(class)? {
            // The runtime gives every element type's class, primitives' too.
            if array.base_class_id.as_raw() == 0 {
                return Err(HResult::E_FAIL);
            }
            let element = self.class(array.base_class_id, depth + 1)?;
            let commas = ",".repeat(array.rank.saturating_sub(1).min(31) as usize);
            return Ok(format!("{element}[{commas}]"));
        }
        let c = self.info.get_class_id_info2(class)?;
        let import = self.import(c.module_id)?;
        let args = self.arg_names(&c.type_args, depth + 1)?;
        let owner = token(c.type_def_token);
        let resolver =
            Instantiated { metadata: &import, class: owner, class_args: args, method: Token(0), method_args: vec![] };
        Ok(format_type(&Type::Class(owner), &resolver, Generics::default()))
    }

    fn function(&self, function: FunctionID) -> Result<String> {
        Ok(self.function_forms(function, None)?.1)
    }

    /// `function`'s short and full names, its class and method type arguments `exact`'s
    /// when given (a frame's), else what `GetFunctionInfo2` without a frame reports.
    fn function_forms(&self, function: FunctionID, exact: Option<Exact<'_>>) -> Result<(String, String)> {
        let f = self.info.get_function_info2(function, COR_PRF_FRAME_INFO::NULL)?;
        let import = self.import(f.module_id)?;
        let (owner, name, sig) = Self::method(&import, f.token)?;
        let (class_id, type_args) = match exact {
            Some(e) if e.class.as_raw() != 0 => (e.class, e.method_args),
            Some(e) => (f.class_id, e.method_args),
            None => (f.class_id, &f.type_args[..]),
        };
        let type_args = if type_args.is_empty() { &f.type_args[..] } else { type_args };
        // Shared code may come without its class; its parameters then print by name.
        let class_args = match class_id.as_raw() {
            0 => Vec::new(),
            _ => match self.info.get_class_id_info2(class_id) {
                Ok(c) => self.arg_names(&c.type_args, 1)?,
                Err(_) => Vec::new(),
            },
        };
        let method_args = self.arg_names(type_args, 1)?;
        let method = token(f.token);
        let resolver = Instantiated { metadata: &import, class: owner, class_args, method, method_args };
        let full = format_method(&resolver, owner, &name, &sig, Some(method));
        let mut short = format_type(&Type::Class(owner), &resolver, Generics::default());
        short.push_str("::");
        short.push_str(&name);
        if sig.generic_params > 0 {
            let params: Vec<String> = (0..sig.generic_params.min(MAX_SHORT_METHOD_ARGS))
                .map(|i| {
                    format_type(&Type::MVar(i), &resolver, Generics { type_owner: None, method_owner: Some(method) })
                })
                .collect();
            short.push('<');
            short.push_str(&params.join(", "));
            short.push('>');
        }
        Ok((short, full))
    }

    fn function_sig(&self, function: FunctionID) -> Result<MethodSig> {
        let f = self.info.get_function_info(function)?;
        let import = self.import(f.module_id)?;
        Ok(Self::method(&import, f.token)?.2)
    }

    fn definition(&self, module: ModuleID, method: mdMethodDef) -> Result<String> {
        let import = self.import(module)?;
        let (owner, name, sig) = Self::method(&import, method)?;
        Ok(format_method(&import, owner, &name, &sig, Some(token(method))))
    }
}

/// Without cor.h in the header folder (coreclr-3.x's has none) there is no `IMetaDataImport` to
/// read names and signatures with: every function above answers as a runtime asked for an
/// interface it lacks does.
#[cfg(not(corprof_iface = "IMetaDataImport"))]
impl Names<'_> {
    fn class(&self, _: ClassID, _: usize) -> Result<String> {
        Err(HResult::E_NOINTERFACE)
    }

    fn function(&self, _: FunctionID) -> Result<String> {
        Err(HResult::E_NOINTERFACE)
    }

    fn function_forms(&self, _: FunctionID, _: Option<Exact<'_>>) -> Result<(String, String)> {
        Err(HResult::E_NOINTERFACE)
    }

    fn function_sig(&self, _: FunctionID) -> Result<MethodSig> {
        Err(HResult::E_NOINTERFACE)
    }

    fn definition(&self, _: ModuleID, _: mdMethodDef) -> Result<String> {
        Err(HResult::E_NOINTERFACE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sig::Type;
    use crate::sig::format::{Generics, format_method, format_type};

    /// `Shop.Box`1` (TypeDef 3, parameter `T`) with `Pick` (MethodDef 7, parameter `U`).
    struct Table;

    impl NameResolver for Table {
        fn type_name(&self, token: Token) -> Option<TypeName> {
            (token == Token(0x0200_0003)).then(|| TypeName {
                namespace: "Shop".into(),
                name: "Box`1".into(),
                enclosing: None,
            })
        }
        fn generic_param_name(&self, owner: Token, index: u32) -> Option<String> {
            match (owner.0, index) {
                (0x0200_0003, 0) => Some("T".into()),
                (0x0600_0007, 0) => Some("U".into()),
                _ => None,
            }
        }
    }

    fn instantiated(class_args: &[&str], method_args: &[&str]) -> Instantiated<'static, Table> {
        Instantiated {
            metadata: &Table,
            class: Token(0x0200_0003),
            class_args: class_args.iter().map(|a| a.to_string()).collect(),
            method: Token(0x0600_0007),
            method_args: method_args.iter().map(|a| a.to_string()).collect(),
        }
    }

    #[test]
    fn the_runtimes_type_arguments_replace_the_parameters_everywhere() {
        // !!0 Pick<U>(!0, !!0[]), generic, instance
        let sig = MethodSig::decode(&[0x30, 0x01, 0x02, 0x1e, 0x00, 0x13, 0x00, 0x1d, 0x1e, 0x00]).unwrap();
        let owner = Token(0x0200_0003);
        let method = Some(Token(0x0600_0007));
        let r = instantiated(&["System.Int32"], &["System.__Canon"]);
        assert_eq!(
            format_method(&r, owner, "Pick", &sig, method),
            "System.__Canon Shop.Box<System.Int32>::Pick<System.__Canon>(System.Int32, System.__Canon[])"
        );
        // No class from the runtime (shared code without a frame): the parameters' names.
        let r = instantiated(&[], &["System.String"]);
        assert_eq!(
            format_method(&r, owner, "Pick", &sig, method),
            "System.String Shop.Box<T>::Pick<System.String>(T, System.String[])"
        );
        // A class name alone.
        let r = instantiated(&["System.Collections.Generic.List<System.String>"], &[]);
        assert_eq!(
            format_type(&Type::Class(owner), &r, Generics::default()),
            "Shop.Box<System.Collections.Generic.List<System.String>>"
        );
    }
}
