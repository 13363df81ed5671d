//! The header as plain data: interfaces, methods and parameters in vtable order, each with the
//! header file:line it came from. Built by `extract`, read by every later stage; no clang types.

use std::fmt;
use std::sync::Arc;

/// A place in a source file, shown as `file:line:col` (path relative to the header folder).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Loc {
    /// Shared by every place in the file: a loader of a million entries makes a million places
    /// (and their diagnostics' copies), and a `String` each was a tenth of its memory.
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if self.col > 0 {
            write!(f, ":{}", self.col)?;
        }
        Ok(())
    }
}

/// The typedefs of `void *` the headers pass by value and extract keeps by name: cor.h's
/// enumeration handle and the Windows spellings of `void *`.
pub const OPAQUE_POINTERS: &[&str] = &["HCORENUM", "PVOID", "LPVOID", "LPCVOID", "HANDLE"];

/// A C type as the header spells it, with pointer-ness made explicit (typedefs to pointers such
/// as `LPCBYTE` are unfolded; arrays and C++ references count as pointers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CType {
    Void,
    /// A C builtin (`int`, `char`, …) by its C spelling.
    Builtin(String),
    /// A typedef, struct or enum by name (`FunctionID`, `GUID`, `COR_PRF_JIT_CACHE`).
    Named(String),
    /// A COM interface declared in the header (or IUnknown).
    Interface(String),
    /// A function pointer named by its typedef: `FunctionEnter3 *pFunc` (a pointer to a function
    /// typedef, `star: true`) or `Callback cb` where `typedef void (*Callback)(…)` (`star: false`).
    /// The runtime will call it, so what it points to carries a contract.
    FnPtr {
        typedef: String,
        star: bool,
    },
    Pointer {
        pointee: Box<CType>,
        is_const: bool,
    },
}

impl CType {
    /// `HRESULT`, as the header spells it: the one home of "returns HRESULT" (resolve's checks,
    /// classify's returns and `HResult` parameters all ask this).
    pub fn is_hresult(&self) -> bool {
        matches!(self, CType::Named(n) if n == "HRESULT")
    }

    pub fn is_pointer(&self) -> bool {
        matches!(self, CType::Pointer { .. })
    }

    /// A typedef of `void *` that extract keeps by its name (`HCORENUM`, `PVOID`): a raw pointer
    /// passed by value, which the callee dereferences. Taken as an input it is as unchecked as any
    /// raw pointer, so it makes a wrapper `unsafe` (`classify::call`), whatever the annotations say.
    pub fn is_opaque_pointer(&self) -> bool {
        matches!(self, CType::Named(n) if OPAQUE_POINTERS.contains(&n.as_str()))
    }

    /// `void *` or `IUnknown *`: what a `void **` / `IUnknown **` out points to when a REFIID
    /// parameter picks the interface.
    pub fn is_untyped_interface_pointer(&self) -> bool {
        match self {
            CType::Pointer { pointee, .. } => {
                matches!(&**pointee, CType::Void) || matches!(&**pointee, CType::Interface(n) if n == "IUnknown")
            }
            _ => false,
        }
    }

    pub fn pointee(&self) -> Option<&CType> {
        match self {
            CType::Pointer { pointee, .. } => Some(pointee),
            _ => None,
        }
    }
}

impl fmt::Display for CType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CType::Void => f.write_str("void"),
            CType::Builtin(n) | CType::Named(n) | CType::Interface(n) => f.write_str(n),
            CType::FnPtr { typedef, star: true } => write!(f, "{typedef} *"),
            CType::FnPtr { typedef, star: false } => f.write_str(typedef),
            CType::Pointer { pointee, is_const } => {
                if *is_const {
                    write!(f, "const {pointee} *")
                } else {
                    write!(f, "{pointee} *")
                }
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub ty: CType,
    /// MIDL attributes from the comment before the parameter, e.g. `["size_is", "out"]`.
    pub midl: Vec<String>,
    /// SAL annotations with their arguments, e.g. `_Out_writes_to_(cchName,pcchName)`.
    pub sal: Vec<String>,
    /// Declared with array syntax (`ObjectID ids[]`), a hint that it is counted.
    pub declared_array: bool,
    /// The value, or for a pointer what it points to, is a C integer after typedefs that can be
    /// an element count (`ULONG`, `ULONG *`), unlike an enum, a struct, a character, an ID or a
    /// `BOOL` ([`not_a_count`]).
    pub is_count: bool,
    pub loc: Loc,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Method {
    pub name: String,
    pub ret: CType,
    pub params: Vec<Param>,
    pub loc: Loc,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    /// The IID as the header writes it, e.g. `176FBED1-A55C-4796-98CA-A9DA0EF883E7`.
    pub iid: String,
    /// `None` only for IUnknown itself.
    pub base: Option<String>,
    /// The methods this interface adds, in vtable order (inherited slots come from `base`).
    pub methods: Vec<Method>,
    pub loc: Loc,
}

/// Everything the generator learned from one header folder.
#[derive(Clone, Debug, Default)]
pub struct Header {
    pub interfaces: Vec<Interface>,
    /// Every file the parse read, for `cargo:rerun-if-changed`.
    pub files: Vec<String>,
    /// The main entry header (the last one, corprof.h): its interfaces all get the safe layer.
    pub main_header: String,
    /// MIDL's machine-made tags and the typedef names people use for them
    /// (`__MIDL___MIDL_itf_corprof_0000_0000_0005` → `COR_PRF_MONITOR`).
    pub tag_names: Vec<(String, String)>,
    /// Every named enum the header folder declares, with whether it is a flag enum.
    pub enums: Vec<EnumDecl>,
    /// The ID typedefs that become newtypes (see [`IdType`]).
    pub id_types: Vec<IdType>,
    /// Every named type the header folder declares (not interfaces), in header order: what
    /// `corprof-gen diff` compares besides interfaces.
    pub types: Vec<TypeDecl>,
    /// Every enumerator with its value, in header order (C enumerators are global constants).
    pub constants: Vec<Constant>,
    /// Interfaces declared without an IID (no `MIDL_INTERFACE` uuid, no `IID_<name>` constant):
    /// they cannot be asked for, so they get no binding. Kept so messages can say why.
    pub without_iid: Vec<(String, Loc)>,
    /// From the IDL beside an entry header (`corprof.idl`), each interface method parameter's
    /// attributes by [`crate::idl::key`], where its counts name parameters the header declares.
    pub idl: std::collections::HashMap<String, crate::idl::IdlParam>,
    /// Each interface's index by name (the first of a name), built at the first lookup: a header of
    /// many interfaces is read in time proportional to their number. `interfaces` does not change
    /// once read.
    pub(crate) by_name: std::sync::OnceLock<std::collections::HashMap<String, usize>>,
}

/// A named type of the header, as `corprof-gen diff` shows and compares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeDecl {
    pub name: String,
    /// What it is, as shown: `struct, 3 fields`, `enum`, `function type`, `function pointer`,
    /// `typedef of UINT_PTR`.
    pub shape: String,
    /// Its whole declaration, normalised (field types and names, the function's signature): two
    /// headers declare the same type when these are equal.
    pub detail: String,
}

/// An enumerator: `COR_PRF_MONITOR_IMMUTABLE` = 0xee98cc00.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constant {
    pub name: String,
    pub value: i128,
    /// Declared in a flag enum: shown in hex.
    pub hex: bool,
}

/// A C enum. The rule that makes it a flag enum (bit operations, `contains`, `A | B` display) is
/// read off the header: every enumerator has an initializer written without a decimal literal
/// other than `0` (hex literals, other enumerators, `|`: the author wrote bits, where counters
/// are written `1, 2, 3`), at least one enumerator is a single bit, and single-bit enumerators
/// outnumber the multi-bit ones (masks such as `COR_PRF_MONITOR_ALL`), which keeps dense hex
/// tables such as `CorElementType` (0x00, 0x01, 0x02, 0x03, …) out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnumDecl {
    /// The name bindgen gives the Rust type (MIDL tags replaced by their typedef names).
    pub name: String,
    /// Other names of the type (`COR_PRF_SNAPSHOT_INFO` for `_COR_PRF_SNAPSHOT_INFO`).
    pub aliases: Vec<String>,
    pub flags: bool,
    pub loc: Loc,
}

impl EnumDecl {
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.iter().any(|a| a == name)
    }
}

/// An ID typedef, which becomes a `#[repr(transparent)]` newtype: a typedef whose underlying type
/// is spelled `UINT_PTR`, `ULONG_PTR` or `uintptr_t` (an integer ID: `FunctionID`, `ClassID`, …)
/// or is a pointer to `void` (`void *`, or `void **` as .NET 8's `ObjectHandleID`: an opaque
/// handle), and whose name ends in `ID` or `Id` (not `VOID`); or an integer handle the runtime
/// dereferences (`COR_PRF_*_INFO`, `EVENTPIPE_*`). `void_depth`: how many pointers
/// deep the underlying type points to `void` (0: it does not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdType {
    pub name: String,
    /// The underlying type as Rust spells it: the header's `UINT_PTR`, or `*mut c_void`
    /// (`*mut *mut c_void` for `void **`).
    pub raw: String,
    /// A pointer to `void` underneath: an opaque handle, held as a raw pointer.
    pub handle: bool,
}

/// `IID_<interface>`: MIDL's name for an interface's IID constant, which the header declares
/// (`EXTERN_GUID(IID_ICorProfilerInfo, …)`) and the bindings keep for theirs. The one home of that
/// spelling: extract looks the header's constant up by it, `view::names::iid_const` re-exports it.
pub fn iid_const(interface: &str) -> String {
    format!("IID_{interface}")
}

/// Whether a typedef of this name and underlying type is an ID (see [`IdType`]).
pub fn id_typedef(name: &str, underlying: &str, void_depth: usize) -> Option<IdType> {
    // The runtime's opaque handles spelled as integers: a callback's frame (`COR_PRF_ELT_INFO`,
    // `COR_PRF_FRAME_INFO`) and EventPipe's providers and events. The runtime dereferences them,
    // so, like IDs, safe code may only pass on what the runtime handed out.
    let integer_handle = (name.starts_with("COR_PRF_") && name.ends_with("_INFO")) || name.starts_with("EVENTPIPE_");
    let integer = matches!(underlying, "UINT_PTR" | "ULONG_PTR" | "uintptr_t");
    if integer && integer_handle {
        return Some(IdType { name: name.to_string(), raw: underlying.to_string(), handle: false });
    }
    // `LPVOID` ends in `ID` too, but names no ID.
    if !(name.ends_with("ID") || name.ends_with("Id")) || name.ends_with("VOID") {
        return None;
    }
    match underlying {
        _ if integer => Some(IdType { name: name.to_string(), raw: underlying.to_string(), handle: false }),
        _ if void_depth > 0 => {
            let raw = format!("{}::core::ffi::c_void", "*mut ".repeat(void_depth));
            Some(IdType { name: name.to_string(), raw, handle: true })
        }
        _ => None,
    }
}

/// The integer typedefs that count nothing, and what each holds instead: a `len`/`cap` naming a
/// parameter whose typedef chain passes through one is refused (`BOOL fStartJit` is an `int` to C;
/// a count of 50,000,000 from a `true` would let the runtime read past a slice). Every `md*`
/// token type is a typedef of `mdToken`.
const NOT_COUNTS: &[(&str, &str)] = &[
    ("BOOL", "a boolean"),
    ("BOOLEAN", "a boolean"),
    ("HRESULT", "a status code"),
    ("mdToken", "a metadata token"),
    ("LCID", "a locale ID"),
    ("WCHAR", "a character"),
];

/// What an integer typedef named `name` holds when it is no count (`NOT_COUNTS`).
pub fn not_a_count(name: &str) -> Option<&'static str> {
    NOT_COUNTS.iter().find(|(n, _)| *n == name).map(|(_, what)| *what)
}

/// The flag-enum rule of [`EnumDecl`], over each enumerator's value and initializer text
/// (`None`: no initializer).
pub fn is_flag_enum(enumerators: &[(i128, Option<&str>)]) -> bool {
    let written_as_bits = enumerators.iter().all(|(_, init)| init.is_some_and(|t| !has_decimal_literal(t)));
    let single = enumerators.iter().filter(|(v, _)| *v > 0 && v.count_ones() == 1).count();
    let multi = enumerators.iter().filter(|(v, _)| *v != 0 && !(*v > 0 && v.count_ones() == 1)).count();
    written_as_bits && single >= 1 && single > multi
}

/// A literal such as `1` or `42u` in C expression text (`0`, `0x10` and names are not).
fn has_decimal_literal(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|tok| {
        tok.starts_with(|c: char| c.is_ascii_digit())
            && !tok.starts_with("0x")
            && !tok.starts_with("0X")
            && tok.trim_end_matches(['u', 'U', 'l', 'L']).chars().any(|c| c != '0')
    })
}

impl Header {
    pub fn interface(&self, name: &str) -> Option<&Interface> {
        let index = self.by_name.get_or_init(|| first_of_each_name(self.interfaces.iter().map(|i| i.name.as_str())));
        let found = index.get(name).and_then(|&at| self.interfaces.get(at));
        debug_assert!(found.is_none_or(|i| i.name == name), "Header::interfaces changed after a lookup");
        found
    }

    /// The interface followed by its bases, most derived first (IUnknown not included).
    pub fn chain<'a>(&'a self, iface: &'a Interface) -> Vec<&'a Interface> {
        let mut out = vec![iface];
        let mut cur = iface;
        while let Some(base) = cur.base.as_deref().and_then(|b| self.interface(b)) {
            out.push(base);
            cur = base;
        }
        out
    }

    /// Callback interfaces: `ICorProfilerCallback` and everything derived from it.
    pub fn is_callback(&self, iface: &Interface) -> bool {
        self.chain(iface).last().is_some_and(|root| root.name == CALLBACK_ROOT)
    }
}

/// Each name's first index among `names`.
pub(crate) fn first_of_each_name<'a>(names: impl Iterator<Item = &'a str>) -> std::collections::HashMap<String, usize> {
    let mut index = std::collections::HashMap::new();
    for (at, name) in names.enumerate() {
        index.entry(name.to_owned()).or_insert(at);
    }
    index
}

/// The root of the callback family; every version derives from it.
pub const CALLBACK_ROOT: &str = "ICorProfilerCallback";

#[cfg(test)]
mod tests {
    /// "Returns HRESULT" had five homes (resolve twice, classify three times); they all asked
    /// whether the type is the typedef `HRESULT`, which is what `is_hresult` says, and nothing else.
    #[test]
    fn only_the_hresult_typedef_is_an_hresult() {
        assert!(CType::Named("HRESULT".into()).is_hresult());
        for other in [
            CType::Named("ULONG".into()),
            CType::Builtin("long".into()),
            CType::Void,
            CType::Pointer { pointee: Box::new(CType::Named("HRESULT".into())), is_const: false },
        ] {
            assert!(!other.is_hresult(), "{other}");
        }
    }

    use super::*;

    #[test]
    fn ids_and_the_runtimes_integer_handles_become_newtypes() {
        for name in ["FunctionID", "ModuleId", "COR_PRF_ELT_INFO", "COR_PRF_FRAME_INFO", "EVENTPIPE_EVENT"] {
            let id = id_typedef(name, "UINT_PTR", 0).unwrap_or_else(|| panic!("{name} is an ID"));
            assert_eq!((id.raw.as_str(), id.handle), ("UINT_PTR", false), "{name}");
        }
        let handle = id_typedef("ObjectHandleID", "void **", 2).expect("a void ** handle");
        assert!(handle.handle);
        // Plain integers and `LPVOID` are not IDs; an `_INFO` name over another type is not a handle.
        for (name, under, depth) in
            [("SIZE_T", "ULONG_PTR", 0), ("LPVOID", "void *", 1), ("COR_PRF_X_INFO", "DWORD", 0)]
        {
            assert_eq!(id_typedef(name, under, depth), None, "{name}");
        }
    }
}
