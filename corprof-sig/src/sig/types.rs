//! The decoded forms of signatures.

use std::fmt;

/// A metadata token: the table in the top byte, the row (RID) in the low three bytes.
///
/// Interchangeable with the bindings' `mdToken` (`u32`) through `Token(t)` and `.0`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Token(pub u32);

impl Token {
    /// The `TypeRef` table (0x01).
    pub const TYPE_REF: u8 = 0x01;
    /// The `TypeDef` table (0x02).
    pub const TYPE_DEF: u8 = 0x02;
    /// The `MethodDef` table (0x06).
    pub const METHOD_DEF: u8 = 0x06;
    /// The `MemberRef` table (0x0a).
    pub const MEMBER_REF: u8 = 0x0a;
    /// The `StandAloneSig` table (0x11).
    pub const STANDALONE_SIG: u8 = 0x11;
    /// The `TypeSpec` table (0x1b).
    pub const TYPE_SPEC: u8 = 0x1b;
    /// The `MethodSpec` table (0x2b).
    pub const METHOD_SPEC: u8 = 0x2b;

    /// A token from its table and row.
    pub const fn new(table: u8, rid: u32) -> Token {
        Token(((table as u32) << 24) | (rid & 0x00ff_ffff))
    }
    /// The table, the top byte.
    pub const fn table(self) -> u8 {
        (self.0 >> 24) as u8
    }
    /// The row, the low three bytes.
    pub const fn rid(self) -> u32 {
        self.0 & 0x00ff_ffff
    }
    /// Whether the row is 0 (`mdTokenNil` of any table).
    pub const fn is_nil(self) -> bool {
        self.rid() == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(0x{:08x})", self.0)
    }
}

/// The calling-convention byte that starts every signature but a type specification: its kind
/// in the low four bits, flags above. Kept as the byte read, so unknown bits survive a round trip.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CallConv(pub u8);

impl CallConv {
    /// Managed default (0x0).
    pub const DEFAULT: u8 = 0x0;
    /// Unmanaged cdecl (0x1).
    pub const C: u8 = 0x1;
    /// Unmanaged stdcall (0x2).
    pub const STDCALL: u8 = 0x2;
    /// Unmanaged thiscall (0x3).
    pub const THISCALL: u8 = 0x3;
    /// Unmanaged fastcall (0x4).
    pub const FASTCALL: u8 = 0x4;
    /// Managed varargs (0x5): a call site's extra arguments follow a sentinel.
    pub const VARARG: u8 = 0x5;
    /// A field signature (0x6).
    pub const FIELD: u8 = 0x6;
    /// A local-variable signature (0x7).
    pub const LOCAL_SIG: u8 = 0x7;
    /// A property signature (0x8).
    pub const PROPERTY: u8 = 0x8;
    /// Unmanaged, with the convention in modifiers (0x9).
    pub const UNMANAGED: u8 = 0x9;
    /// A method specification (0xa).
    pub const GENERIC_INST: u8 = 0xa;
    /// Native varargs (0xb).
    pub const NATIVE_VARARG: u8 = 0xb;
    /// Flag: the method is generic; a generic-parameter count follows.
    pub const GENERIC: u8 = 0x10;
    /// Flag: an instance method (or property).
    pub const HAS_THIS: u8 = 0x20;
    /// Flag: `this` is the first explicit parameter.
    pub const EXPLICIT_THIS: u8 = 0x40;

    /// The kind, the low four bits.
    pub const fn kind(self) -> u8 {
        self.0 & 0x0f
    }
    /// Whether [`GENERIC`](Self::GENERIC) is set.
    pub const fn is_generic(self) -> bool {
        self.0 & Self::GENERIC != 0
    }
    /// Whether [`HAS_THIS`](Self::HAS_THIS) is set.
    pub const fn has_this(self) -> bool {
        self.0 & Self::HAS_THIS != 0
    }
    /// Whether [`EXPLICIT_THIS`](Self::EXPLICIT_THIS) is set.
    pub const fn explicit_this(self) -> bool {
        self.0 & Self::EXPLICIT_THIS != 0
    }
    /// Whether this starts a method signature (kinds 0-5, 9 and 0xb).
    pub const fn is_method(self) -> bool {
        matches!(self.kind(), 0x0..=0x5 | 0x9 | 0xb)
    }
}

impl fmt::Debug for CallConv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CallConv(0x{:02x})", self.0)
    }
}

/// A type as a signature writes it (II.23.2.12 and the items that may precede a type).
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// `void` (0x01), only as a return type or under a pointer.
    Void,
    /// `bool` (0x02).
    Boolean,
    /// `char` (0x03).
    Char,
    /// `int8` (0x04).
    I1,
    /// `unsigned int8` (0x05).
    U1,
    /// `int16` (0x06).
    I2,
    /// `unsigned int16` (0x07).
    U2,
    /// `int32` (0x08).
    I4,
    /// `unsigned int32` (0x09).
    U4,
    /// `int64` (0x0a).
    I8,
    /// `unsigned int64` (0x0b).
    U8,
    /// `float32` (0x0c).
    R4,
    /// `float64` (0x0d).
    R8,
    /// `string` (0x0e).
    String,
    /// `object` (0x1c).
    Object,
    /// `native int` (0x18).
    I,
    /// `native unsigned int` (0x19).
    U,
    /// `typedref` (0x16).
    TypedByRef,
    /// A value type by its `TypeDef`, `TypeRef` or `TypeSpec` token (0x11).
    ValueType(Token),
    /// A reference type by its token (0x12).
    Class(Token),
    /// The type's generic parameter `!n` (0x13).
    Var(u32),
    /// The method's generic parameter `!!n` (0x1e).
    MVar(u32),
    /// A generic type instantiated (0x15).
    GenericInst {
        /// Whether the generic type is a value type (`VALUETYPE`) rather than a class.
        value_type: bool,
        /// The generic type definition's token.
        generic: Token,
        /// The type arguments.
        args: Vec<Type>,
    },
    /// A single-dimensional, zero-based array `T[]` (0x1d).
    SzArray(Box<Type>),
    /// A general array `T[,]` with its shape (0x14).
    Array(Box<Type>, ArrayShape),
    /// An unmanaged pointer `T*` (0x0f).
    Ptr(Box<Type>),
    /// A managed reference `T&` (0x10).
    ByRef(Box<Type>),
    /// A function pointer (0x1b).
    FnPtr(Box<MethodSig>),
    /// A custom modifier before a type (`modreq` 0x1f, `modopt` 0x20).
    Modified {
        /// `modreq` rather than `modopt`.
        required: bool,
        /// The modifier type's token.
        modifier: Token,
        /// The modified type (which may carry further modifiers).
        ty: Box<Type>,
    },
    /// A pinned local (0x45), only in local-variable signatures.
    Pinned(Box<Type>),
}

/// The shape of a general array (II.23.2.13): its rank, and sizes and lower bounds for leading
/// dimensions.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ArrayShape {
    /// The number of dimensions.
    pub rank: u32,
    /// Sizes of the first dimensions (at most `rank`).
    pub sizes: Vec<u32>,
    /// Lower bounds of the first dimensions (at most `rank`).
    pub lower_bounds: Vec<i32>,
}

/// A method signature (II.23.2.1-3): definitions, references (with varargs), stand-alone call
/// sites and function pointers.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodSig {
    /// The calling convention and flags.
    pub call_conv: CallConv,
    /// The number of generic parameters, when [`CallConv::is_generic`].
    pub generic_params: u32,
    /// The return type (possibly [`Type::Void`], [`Type::ByRef`], [`Type::TypedByRef`], with modifiers).
    pub ret: Type,
    /// The parameters, including a varargs call site's extra arguments.
    pub params: Vec<Type>,
    /// For a varargs call site: the index in `params` of the first argument after the sentinel.
    pub sentinel: Option<usize>,
}

impl MethodSig {
    /// `ret (params…)` with the calling convention and flags `call_conv` (a [`CallConv`] byte:
    /// `CallConv::DEFAULT | CallConv::HAS_THIS`, `CallConv::C`, …): no generic parameters (a
    /// [`CallConv::GENERIC`] flag given is dropped: [`generic`](Self::generic) makes those), no
    /// varargs sentinel. A byte that is no method's calling convention (`CallConv::FIELD`) is
    /// kept, and [`encode`](Self::encode) refuses it.
    ///
    /// ```
    /// use corprof_sig::sig::{CallConv, MethodSig, Type};
    /// // instance string M(int32)
    /// let sig = MethodSig::new(CallConv::HAS_THIS, Type::String, vec![Type::I4]);
    /// assert_eq!(sig.encode().unwrap(), [0x20, 0x01, 0x0e, 0x08]);
    /// ```
    pub fn new(call_conv: u8, ret: Type, params: Vec<Type>) -> MethodSig {
        MethodSig {
            call_conv: CallConv(call_conv & !CallConv::GENERIC),
            generic_params: 0,
            ret,
            params,
            sentinel: None,
        }
    }

    /// A generic method's `ret (params…)` of `generic_params` parameters (`Type::MVar(0)` …):
    /// `call_conv` with [`CallConv::GENERIC`] added.
    ///
    /// ```
    /// use corprof_sig::sig::{CallConv, MethodSig, Type};
    /// // static !!0 M<T>(!!0)
    /// let sig = MethodSig::generic(CallConv::DEFAULT, 1, Type::MVar(0), vec![Type::MVar(0)]);
    /// assert_eq!(sig.encode().unwrap(), [0x10, 0x01, 0x01, 0x1e, 0x00, 0x1e, 0x00]);
    /// ```
    pub fn generic(call_conv: u8, generic_params: u32, ret: Type, params: Vec<Type>) -> MethodSig {
        MethodSig { call_conv: CallConv(call_conv | CallConv::GENERIC), generic_params, ret, params, sentinel: None }
    }
}

/// A field signature (II.23.2.4).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldSig {
    /// The field's type, with its custom modifiers.
    pub ty: Type,
}

/// A property signature (II.23.2.5).
#[derive(Clone, Debug, PartialEq)]
pub struct PropertySig {
    /// `PROPERTY` with or without [`CallConv::HAS_THIS`].
    pub call_conv: CallConv,
    /// The property's type.
    pub ty: Type,
    /// The indexer parameters.
    pub params: Vec<Type>,
}

/// A local-variable signature (II.23.2.6), what a method body's `LocalVarSigTok` names.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct LocalVarSig {
    /// The locals in slot order (possibly [`Type::Pinned`], [`Type::ByRef`], [`Type::TypedByRef`]).
    pub locals: Vec<Type>,
}

/// A type specification (II.23.2.14): one type, with no leading calling convention.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeSpec {
    /// The specified type.
    pub ty: Type,
}

/// A method specification (II.23.2.15): the type arguments of a generic method instantiation.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodSpec {
    /// The type arguments.
    pub args: Vec<Type>,
}

/// Any signature that starts with a calling-convention byte, told apart by that byte.
#[derive(Clone, Debug, PartialEq)]
pub enum Signature {
    /// A method signature.
    Method(MethodSig),
    /// A field signature.
    Field(FieldSig),
    /// A property signature.
    Property(PropertySig),
    /// A local-variable signature.
    LocalVar(LocalVarSig),
    /// A method specification.
    MethodSpec(MethodSpec),
}

/// Element-type bytes (II.23.1.16).
pub(crate) mod et {
    pub const VOID: u8 = 0x01;
    pub const BOOLEAN: u8 = 0x02;
    pub const CHAR: u8 = 0x03;
    pub const I1: u8 = 0x04;
    pub const U1: u8 = 0x05;
    pub const I2: u8 = 0x06;
    pub const U2: u8 = 0x07;
    pub const I4: u8 = 0x08;
    pub const U4: u8 = 0x09;
    pub const I8: u8 = 0x0a;
    pub const U8: u8 = 0x0b;
    pub const R4: u8 = 0x0c;
    pub const R8: u8 = 0x0d;
    pub const STRING: u8 = 0x0e;
    pub const PTR: u8 = 0x0f;
    pub const BYREF: u8 = 0x10;
    pub const VALUETYPE: u8 = 0x11;
    pub const CLASS: u8 = 0x12;
    pub const VAR: u8 = 0x13;
    pub const ARRAY: u8 = 0x14;
    pub const GENERICINST: u8 = 0x15;
    pub const TYPEDBYREF: u8 = 0x16;
    pub const I: u8 = 0x18;
    pub const U: u8 = 0x19;
    pub const FNPTR: u8 = 0x1b;
    pub const OBJECT: u8 = 0x1c;
    pub const SZARRAY: u8 = 0x1d;
    pub const MVAR: u8 = 0x1e;
    pub const CMOD_REQD: u8 = 0x1f;
    pub const CMOD_OPT: u8 = 0x20;
    pub const SENTINEL: u8 = 0x41;
    pub const PINNED: u8 = 0x45;
}
