//! IL method bodies (ECMA-335 II.25.4, III): read, edit and write them.
//!
//! [`MethodBody::parse`] reads a body as `GetILFunctionBody` returns it: the tiny or fat header,
//! the instructions (each with a [`Label`]; branch and switch targets and exception-clause
//! boundaries are labels, not offsets) and the extra data sections. [`MethodBody::encode`] writes
//! it back; a body read and not edited comes back byte for byte (header format, max stack,
//! flags, short and long branch forms, clause formats and padding are kept as read).
//!
//! The edits ([`insert_before`](MethodBody::insert_before), [`insert_after`](MethodBody::insert_after),
//! [`remove`](MethodBody::remove), [`replace`](MethodBody::replace), [`push`](MethodBody::push))
//! keep every label, so branches, switches and clauses follow the code they point at; `encode`
//! then lays the code out again, widening a short branch whose target moved out of reach, a tiny
//! header that no longer fits and a small clause section whose offsets no longer fit
//! ([`compact`](MethodBody::compact) goes the other way on request: long branches short, a fat
//! header tiny).
//! [`MethodBody::compute_max_stack`] finds the stack depth an edited body needs; new locals go
//! through [`append_locals`], whose signature bytes the profiler turns into a token
//! (`GetTokenFromSig`) for [`MethodBody::set_local_var_sig`].
//!
//! ```
//! use corprof_sig::il::{Instruction, MethodBody, OpCode};
//! // tiny header, 2 bytes of code: ldarg.0; ret
//! let mut body = MethodBody::parse(&[0x0a, 0x02, 0x2a]).unwrap();
//! let first = body.labels().next().unwrap();
//! body.insert_before(first, [Instruction::simple(OpCode::NOP)]).unwrap();
//! assert_eq!(body.encode().unwrap(), [0x0e, 0x00, 0x02, 0x2a]);
//! ```

mod body;
mod editor;
mod layout;
mod opcodes;
mod sections;
mod stack;
mod verify;
mod wrap;

pub use body::MethodBody;
pub use editor::append_locals;
pub use opcodes::{Flow, OpCode, OpInfo, OperandKind, StackCount};
pub use sections::{Clause, ClauseKind};
pub use verify::Frame;
pub use wrap::{Refusal, WrapError, Wrapped, Wrapper};

use crate::sig::Token;
use std::fmt;

/// Names one instruction of a [`MethodBody`] across edits, or [`Label::END`], the end of the
/// code (where an exception clause covering the last instruction ends).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(u32);

impl Label {
    /// The end of the code.
    pub const END: Label = Label(u32::MAX);
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Label::END { f.write_str("END") } else { write!(f, "L{}", self.0) }
    }
}

/// One instruction: its opcode and operand.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// The opcode.
    pub opcode: OpCode,
    /// The operand, of the kind the opcode takes (checked when encoding).
    pub operand: Operand,
}

/// An instruction's operand.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// `InlineNone`.
    None,
    /// `ShortInlineI` (`ldc.i4.s`; `unaligned.` and `no.` read their byte as `i8` too).
    I8(i8),
    /// `InlineI`.
    I32(i32),
    /// `InlineI8`.
    I64(i64),
    /// `ShortInlineR`.
    F32(f32),
    /// `InlineR`.
    F64(f64),
    /// `InlineBrTarget` and `ShortInlineBrTarget`.
    Branch(Label),
    /// `InlineSwitch`.
    Switch(Vec<Label>),
    /// `InlineTok`, `InlineType`, `InlineMethod`, `InlineField`, `InlineString`, `InlineSig`.
    Token(Token),
    /// `InlineVar` and `ShortInlineVar` (at most 255 for the short form).
    Var(u16),
}

impl Instruction {
    /// An instruction with no operand.
    pub fn simple(opcode: OpCode) -> Instruction {
        Instruction { opcode, operand: Operand::None }
    }
    /// A branch (or `leave`) to `target`.
    pub fn branch(opcode: OpCode, target: Label) -> Instruction {
        Instruction { opcode, operand: Operand::Branch(target) }
    }
    /// An instruction taking a token (`call`, `ldstr`, `ldfld`, `box`, …).
    pub fn token(opcode: OpCode, token: Token) -> Instruction {
        Instruction { opcode, operand: Operand::Token(token) }
    }
    /// `ldc.i4` with `value`, in the shortest form (`ldc.i4.0`…`ldc.i4.8`, `ldc.i4.m1`, `ldc.i4.s`).
    pub fn ldc_i4(value: i32) -> Instruction {
        match value {
            -1..=8 => Instruction::simple(OpCode::from_value((0x16 + value) as u16).unwrap_or(OpCode::LDC_I4_M1)),
            -128..=127 => Instruction { opcode: OpCode::LDC_I4_S, operand: Operand::I8(value as i8) },
            _ => Instruction { opcode: OpCode::LDC_I4, operand: Operand::I32(value) },
        }
    }
    /// Whether the operand is of the kind the opcode takes.
    pub fn operand_fits(&self) -> bool {
        use OperandKind as K;
        let kind = self.opcode.operand_kind();
        matches!(
            (kind, &self.operand),
            (K::InlineNone, Operand::None)
                | (K::ShortInlineI, Operand::I8(_))
                | (K::InlineI, Operand::I32(_))
                | (K::InlineI8, Operand::I64(_))
                | (K::ShortInlineR, Operand::F32(_))
                | (K::InlineR, Operand::F64(_))
                | (K::InlineBrTarget | K::ShortInlineBrTarget, Operand::Branch(_))
                | (K::InlineSwitch, Operand::Switch(_))
                | (
                    K::InlineTok | K::InlineType | K::InlineMethod | K::InlineField | K::InlineString | K::InlineSig,
                    Operand::Token(_)
                )
                | (K::InlineVar, Operand::Var(_))
        ) || matches!((kind, &self.operand), (K::ShortInlineVar, Operand::Var(v)) if *v <= 0xff)
    }
    /// `ldarg` of argument `index` (`this` is 0), in the shortest form.
    pub fn ldarg(index: u16) -> Instruction {
        Instruction::var(
            index,
            [OpCode::LDARG_0, OpCode::LDARG_1, OpCode::LDARG_2, OpCode::LDARG_3],
            OpCode::LDARG_S,
            OpCode::LDARG,
        )
    }
    /// `ldarga` of argument `index`, in the shortest form.
    pub fn ldarga(index: u16) -> Instruction {
        Instruction::var(index, [], OpCode::LDARGA_S, OpCode::LDARGA)
    }
    /// `ldloc` of local `index`, in the shortest form.
    pub fn ldloc(index: u16) -> Instruction {
        Instruction::var(
            index,
            [OpCode::LDLOC_0, OpCode::LDLOC_1, OpCode::LDLOC_2, OpCode::LDLOC_3],
            OpCode::LDLOC_S,
            OpCode::LDLOC,
        )
    }
    /// `ldloca` of local `index`, in the shortest form.
    pub fn ldloca(index: u16) -> Instruction {
        Instruction::var(index, [], OpCode::LDLOCA_S, OpCode::LDLOCA)
    }
    /// `stloc` to local `index`, in the shortest form.
    pub fn stloc(index: u16) -> Instruction {
        Instruction::var(
            index,
            [OpCode::STLOC_0, OpCode::STLOC_1, OpCode::STLOC_2, OpCode::STLOC_3],
            OpCode::STLOC_S,
            OpCode::STLOC,
        )
    }
    fn var<const N: usize>(index: u16, macros: [OpCode; N], short: OpCode, long: OpCode) -> Instruction {
        match macros.get(usize::from(index)) {
            Some(op) => Instruction::simple(*op),
            None if index <= 0xff => Instruction { opcode: short, operand: Operand::Var(index) },
            None => Instruction { opcode: long, operand: Operand::Var(index) },
        }
    }
    /// The labels the operand refers to.
    pub fn targets(&self) -> &[Label] {
        match &self.operand {
            Operand::Branch(l) => std::slice::from_ref(l),
            Operand::Switch(ls) => ls,
            _ => &[],
        }
    }
    fn targets_mut(&mut self) -> &mut [Label] {
        match &mut self.operand {
            Operand::Branch(l) => std::slice::from_mut(l),
            Operand::Switch(ls) => ls,
            _ => &mut [],
        }
    }
}

/// Why a body could not be read, edited or written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IlError {
    /// The byte offset in the body (reading) or in the code (writing, computing the stack);
    /// for a problem with an exception clause when writing, the clause's index in
    /// [`MethodBody::clauses`].
    pub offset: usize,
    /// What went wrong.
    pub kind: IlErrorKind,
}

/// What went wrong in an [`IlError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IlErrorKind {
    /// The bytes ended before the header, code or a section did.
    UnexpectedEnd,
    /// The first byte is neither a tiny nor a fat header.
    BadHeader(u8),
    /// A fat header whose size field is not 3 dwords.
    BadHeaderSize(u8),
    /// Bytes that are no opcode.
    BadOpcode(u16),
    /// A branch, switch or clause offset that is not at an instruction boundary.
    BadTarget(i64),
    /// A data section whose size cannot hold its header.
    BadSection,
    /// A label not in the body (removed, or from another body).
    UnknownLabel(Label),
    /// An operand of the wrong kind for its opcode (or a short index above 255).
    OperandMismatch(OpCode),
    /// A clause whose end comes before its start.
    BadClause,
    /// The code is larger than a fat header can say.
    TooLarge,
    /// Popping more than the stack holds.
    StackUnderflow,
    /// Two paths reach one instruction with different stack depths.
    StackMismatch,
    /// A call whose signature the caller did not give.
    UnknownCall(Token),
    /// An argument index beyond the method's arguments.
    BadArgument(u16),
    /// A local index beyond the method's locals.
    BadLocal(u16),
    /// An instruction where the rules forbid it: `ret` or `jmp` in an exception region,
    /// `endfinally` outside a finally or fault handler, `endfilter` outside a filter, `rethrow`
    /// outside a catch handler, `localloc` in a handler.
    Misplaced(OpCode),
    /// Control going to the code at this offset enters a handler or filter, enters a protected
    /// region past its first instruction, or leaves a region other than by `leave` (or by
    /// `leave` out of a finally, fault or filter).
    BadTransfer(usize),
    /// The last instruction goes on to the next, or a branch targets the end of the code.
    FallsOffEnd,
    /// A stack depth other than the rules require: the return value alone at `ret`, one value
    /// at `endfilter`, none where a protected region starts.
    StackDepth {
        /// What the rules require.
        expected: u32,
        /// What the code has there.
        found: u32,
    },
    /// The clause's regions overlap one another, or a region of an earlier clause, without
    /// nesting.
    ClauseOverlap(usize),
    /// The clause lies within an earlier clause's region: inner clauses come first.
    ClauseOrder(usize),
}

impl fmt::Display for IlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IL offset {}: ", self.offset)?;
        match &self.kind {
            IlErrorKind::UnexpectedEnd => f.write_str("unexpected end of method body"),
            IlErrorKind::BadHeader(b) => write!(f, "bad method header byte 0x{b:02x}"),
            IlErrorKind::BadHeaderSize(n) => write!(f, "fat header of {n} dwords (3 expected)"),
            IlErrorKind::BadOpcode(v) => write!(f, "unknown opcode 0x{v:02x}"),
            IlErrorKind::BadTarget(t) => write!(f, "target {t} is not an instruction boundary"),
            IlErrorKind::BadSection => f.write_str("malformed data section"),
            IlErrorKind::UnknownLabel(l) => write!(f, "label {l:?} is not in this body"),
            IlErrorKind::OperandMismatch(op) => write!(f, "operand does not fit opcode {op}"),
            IlErrorKind::BadClause => f.write_str("exception clause ends before it starts"),
            IlErrorKind::TooLarge => f.write_str("code too large"),
            IlErrorKind::StackUnderflow => f.write_str("stack underflow"),
            IlErrorKind::StackMismatch => f.write_str("paths join with different stack depths"),
            IlErrorKind::UnknownCall(t) => write!(f, "no signature for call target {t:?}"),
            IlErrorKind::BadArgument(v) => write!(f, "argument {v} is beyond the method's arguments"),
            IlErrorKind::BadLocal(v) => write!(f, "local {v} is beyond the method's locals"),
            IlErrorKind::Misplaced(op) => write!(f, "{op} is not allowed where it stands"),
            IlErrorKind::BadTransfer(to) => {
                write!(f, "control goes to IL offset {to} across an exception region's edge")
            }
            IlErrorKind::FallsOffEnd => f.write_str("control runs past the end of the code"),
            IlErrorKind::StackDepth { expected, found } => {
                write!(f, "stack depth {found} where {expected} is required")
            }
            IlErrorKind::ClauseOverlap(k) => write!(f, "exception clause {k} overlaps a region without nesting"),
            IlErrorKind::ClauseOrder(k) => write!(f, "exception clause {k} is listed after a clause enclosing it"),
        }
    }
}

impl std::error::Error for IlError {}

fn err<T>(offset: usize, kind: IlErrorKind) -> Result<T, IlError> {
    Err(IlError { offset, kind })
}
