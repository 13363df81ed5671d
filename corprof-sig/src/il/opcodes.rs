//! The CIL instruction set (ECMA-335 Partition III): every opcode with its operand kind, stack
//! behaviour and control flow.

use std::fmt;

/// An opcode: one byte, or `0xfe` and a second byte (written here as `0xfeNN`). Only the
/// constants and [`OpCode::from_value`] make one, so every `OpCode` is in the table.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpCode(u16);

/// What follows an opcode in the instruction stream (Partition III, 1.2 and the `.il` tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperandKind {
    /// Nothing.
    InlineNone,
    /// A signed byte (`ldc.i4.s`), or an unsigned one for the `unaligned.` and `no.` prefixes.
    ShortInlineI,
    /// A 32-bit integer.
    InlineI,
    /// A 64-bit integer.
    InlineI8,
    /// A 32-bit float.
    ShortInlineR,
    /// A 64-bit float.
    InlineR,
    /// A 32-bit branch displacement.
    InlineBrTarget,
    /// An 8-bit branch displacement.
    ShortInlineBrTarget,
    /// A count and that many 32-bit displacements.
    InlineSwitch,
    /// A `TypeDef`, `TypeRef`, `TypeSpec`, `MethodDef`, `MemberRef`, `MethodSpec` or field token (`ldtoken`).
    InlineTok,
    /// A type token.
    InlineType,
    /// A method token.
    InlineMethod,
    /// A field token.
    InlineField,
    /// A user-string token.
    InlineString,
    /// A stand-alone signature token (`calli`).
    InlineSig,
    /// A 16-bit argument or local index.
    InlineVar,
    /// An 8-bit argument or local index.
    ShortInlineVar,
}

impl OperandKind {
    /// The operand's size in bytes; a switch's is `4 + 4 × targets`, given here as 4.
    #[inline]
    pub const fn size(self) -> usize {
        match self {
            OperandKind::InlineNone => 0,
            OperandKind::ShortInlineI | OperandKind::ShortInlineBrTarget | OperandKind::ShortInlineVar => 1,
            OperandKind::InlineVar => 2,
            OperandKind::InlineI8 | OperandKind::InlineR => 8,
            _ => 4,
        }
    }
}

/// How many stack slots an instruction pops or pushes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StackCount {
    /// A fixed number.
    Fixed(u8),
    /// Depends on a signature (calls, `ret`).
    Var,
}

/// Where control goes after an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flow {
    /// To the next instruction.
    Next,
    /// To the next instruction, after a breakpoint.
    Break,
    /// To a called method and back.
    Call,
    /// To the operand's target, never the next instruction.
    Branch,
    /// To the operand's target(s) or the next instruction.
    CondBranch,
    /// Out of a protected region to the target, emptying the stack (`leave`).
    Leave,
    /// Out of the method or handler (`ret`, `jmp`, `endfinally`, `endfilter`).
    Return,
    /// To an exception handler (`throw`, `rethrow`).
    Throw,
    /// A prefix to the next instruction.
    Prefix,
}

/// What the table says about one opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// The opcode.
    pub opcode: OpCode,
    /// Its ILAsm name (`ldc.i4.s`).
    pub name: &'static str,
    /// What follows it.
    pub operand: OperandKind,
    /// Slots popped.
    pub pops: StackCount,
    /// Slots pushed.
    pub pushes: StackCount,
    /// Where control goes next.
    pub flow: Flow,
}

macro_rules! count {
    (v) => {
        StackCount::Var
    };
    ($n:literal) => {
        StackCount::Fixed($n)
    };
}

macro_rules! opcodes {
    ($($konst:ident = $value:literal $name:literal $kind:ident $pop:tt $push:tt $flow:ident;)*) => {
        impl OpCode {
            $(
                #[doc = concat!("`", $name, "`")]
                pub const $konst: OpCode = OpCode($value);
            )*
        }
        /// Every opcode, by value.
        const OPCODES: &[OpInfo] = &[$(OpInfo {
            opcode: OpCode($value),
            name: $name,
            operand: OperandKind::$kind,
            pops: count!($pop),
            pushes: count!($push),
            flow: Flow::$flow,
        },)*];
        static TABLE: &[OpInfo] = OPCODES;
    };
}

opcodes! {
    NOP = 0x00 "nop" InlineNone 0 0 Next;
    BREAK = 0x01 "break" InlineNone 0 0 Break;
    LDARG_0 = 0x02 "ldarg.0" InlineNone 0 1 Next;
    LDARG_1 = 0x03 "ldarg.1" InlineNone 0 1 Next;
    LDARG_2 = 0x04 "ldarg.2" InlineNone 0 1 Next;
    LDARG_3 = 0x05 "ldarg.3" InlineNone 0 1 Next;
    LDLOC_0 = 0x06 "ldloc.0" InlineNone 0 1 Next;
    LDLOC_1 = 0x07 "ldloc.1" InlineNone 0 1 Next;
    LDLOC_2 = 0x08 "ldloc.2" InlineNone 0 1 Next;
    LDLOC_3 = 0x09 "ldloc.3" InlineNone 0 1 Next;
    STLOC_0 = 0x0a "stloc.0" InlineNone 1 0 Next;
    STLOC_1 = 0x0b "stloc.1" InlineNone 1 0 Next;
    STLOC_2 = 0x0c "stloc.2" InlineNone 1 0 Next;
    STLOC_3 = 0x0d "stloc.3" InlineNone 1 0 Next;
    LDARG_S = 0x0e "ldarg.s" ShortInlineVar 0 1 Next;
    LDARGA_S = 0x0f "ldarga.s" ShortInlineVar 0 1 Next;
    STARG_S = 0x10 "starg.s" ShortInlineVar 1 0 Next;
    LDLOC_S = 0x11 "ldloc.s" ShortInlineVar 0 1 Next;
    LDLOCA_S = 0x12 "ldloca.s" ShortInlineVar 0 1 Next;
    STLOC_S = 0x13 "stloc.s" ShortInlineVar 1 0 Next;
    LDNULL = 0x14 "ldnull" InlineNone 0 1 Next;
    LDC_I4_M1 = 0x15 "ldc.i4.m1" InlineNone 0 1 Next;
    LDC_I4_0 = 0x16 "ldc.i4.0" InlineNone 0 1 Next;
    LDC_I4_1 = 0x17 "ldc.i4.1" InlineNone 0 1 Next;
    LDC_I4_2 = 0x18 "ldc.i4.2" InlineNone 0 1 Next;
    LDC_I4_3 = 0x19 "ldc.i4.3" InlineNone 0 1 Next;
    LDC_I4_4 = 0x1a "ldc.i4.4" InlineNone 0 1 Next;
    LDC_I4_5 = 0x1b "ldc.i4.5" InlineNone 0 1 Next;
    LDC_I4_6 = 0x1c "ldc.i4.6" InlineNone 0 1 Next;
    LDC_I4_7 = 0x1d "ldc.i4.7" InlineNone 0 1 Next;
    LDC_I4_8 = 0x1e "ldc.i4.8" InlineNone 0 1 Next;
    LDC_I4_S = 0x1f "ldc.i4.s" ShortInlineI 0 1 Next;
    LDC_I4 = 0x20 "ldc.i4" InlineI 0 1 Next;
    LDC_I8 = 0x21 "ldc.i8" InlineI8 0 1 Next;
    LDC_R4 = 0x22 "ldc.r4" ShortInlineR 0 1 Next;
    LDC_R8 = 0x23 "ldc.r8" InlineR 0 1 Next;
    DUP = 0x25 "dup" InlineNone 1 2 Next;
    POP = 0x26 "pop" InlineNone 1 0 Next;
    JMP = 0x27 "jmp" InlineMethod 0 0 Return;
    CALL = 0x28 "call" InlineMethod v v Call;
    CALLI = 0x29 "calli" InlineSig v v Call;
    RET = 0x2a "ret" InlineNone v 0 Return;
    BR_S = 0x2b "br.s" ShortInlineBrTarget 0 0 Branch;
    BRFALSE_S = 0x2c "brfalse.s" ShortInlineBrTarget 1 0 CondBranch;
    BRTRUE_S = 0x2d "brtrue.s" ShortInlineBrTarget 1 0 CondBranch;
    BEQ_S = 0x2e "beq.s" ShortInlineBrTarget 2 0 CondBranch;
    BGE_S = 0x2f "bge.s" ShortInlineBrTarget 2 0 CondBranch;
    BGT_S = 0x30 "bgt.s" ShortInlineBrTarget 2 0 CondBranch;
    BLE_S = 0x31 "ble.s" ShortInlineBrTarget 2 0 CondBranch;
    BLT_S = 0x32 "blt.s" ShortInlineBrTarget 2 0 CondBranch;
    BNE_UN_S = 0x33 "bne.un.s" ShortInlineBrTarget 2 0 CondBranch;
    BGE_UN_S = 0x34 "bge.un.s" ShortInlineBrTarget 2 0 CondBranch;
    BGT_UN_S = 0x35 "bgt.un.s" ShortInlineBrTarget 2 0 CondBranch;
    BLE_UN_S = 0x36 "ble.un.s" ShortInlineBrTarget 2 0 CondBranch;
    BLT_UN_S = 0x37 "blt.un.s" ShortInlineBrTarget 2 0 CondBranch;
    BR = 0x38 "br" InlineBrTarget 0 0 Branch;
    BRFALSE = 0x39 "brfalse" InlineBrTarget 1 0 CondBranch;
    BRTRUE = 0x3a "brtrue" InlineBrTarget 1 0 CondBranch;
    BEQ = 0x3b "beq" InlineBrTarget 2 0 CondBranch;
    BGE = 0x3c "bge" InlineBrTarget 2 0 CondBranch;
    BGT = 0x3d "bgt" InlineBrTarget 2 0 CondBranch;
    BLE = 0x3e "ble" InlineBrTarget 2 0 CondBranch;
    BLT = 0x3f "blt" InlineBrTarget 2 0 CondBranch;
    BNE_UN = 0x40 "bne.un" InlineBrTarget 2 0 CondBranch;
    BGE_UN = 0x41 "bge.un" InlineBrTarget 2 0 CondBranch;
    BGT_UN = 0x42 "bgt.un" InlineBrTarget 2 0 CondBranch;
    BLE_UN = 0x43 "ble.un" InlineBrTarget 2 0 CondBranch;
    BLT_UN = 0x44 "blt.un" InlineBrTarget 2 0 CondBranch;
    SWITCH = 0x45 "switch" InlineSwitch 1 0 CondBranch;
    LDIND_I1 = 0x46 "ldind.i1" InlineNone 1 1 Next;
    LDIND_U1 = 0x47 "ldind.u1" InlineNone 1 1 Next;
    LDIND_I2 = 0x48 "ldind.i2" InlineNone 1 1 Next;
    LDIND_U2 = 0x49 "ldind.u2" InlineNone 1 1 Next;
    LDIND_I4 = 0x4a "ldind.i4" InlineNone 1 1 Next;
    LDIND_U4 = 0x4b "ldind.u4" InlineNone 1 1 Next;
    LDIND_I8 = 0x4c "ldind.i8" InlineNone 1 1 Next;
    LDIND_I = 0x4d "ldind.i" InlineNone 1 1 Next;
    LDIND_R4 = 0x4e "ldind.r4" InlineNone 1 1 Next;
    LDIND_R8 = 0x4f "ldind.r8" InlineNone 1 1 Next;
    LDIND_REF = 0x50 "ldind.ref" InlineNone 1 1 Next;
    STIND_REF = 0x51 "stind.ref" InlineNone 2 0 Next;
    STIND_I1 = 0x52 "stind.i1" InlineNone 2 0 Next;
    STIND_I2 = 0x53 "stind.i2" InlineNone 2 0 Next;
    STIND_I4 = 0x54 "stind.i4" InlineNone 2 0 Next;
    STIND_I8 = 0x55 "stind.i8" InlineNone 2 0 Next;
    STIND_R4 = 0x56 "stind.r4" InlineNone 2 0 Next;
    STIND_R8 = 0x57 "stind.r8" InlineNone 2 0 Next;
    ADD = 0x58 "add" InlineNone 2 1 Next;
    SUB = 0x59 "sub" InlineNone 2 1 Next;
    MUL = 0x5a "mul" InlineNone 2 1 Next;
    DIV = 0x5b "div" InlineNone 2 1 Next;
    DIV_UN = 0x5c "div.un" InlineNone 2 1 Next;
    REM = 0x5d "rem" InlineNone 2 1 Next;
    REM_UN = 0x5e "rem.un" InlineNone 2 1 Next;
    AND = 0x5f "and" InlineNone 2 1 Next;
    OR = 0x60 "or" InlineNone 2 1 Next;
    XOR = 0x61 "xor" InlineNone 2 1 Next;
    SHL = 0x62 "shl" InlineNone 2 1 Next;
    SHR = 0x63 "shr" InlineNone 2 1 Next;
    SHR_UN = 0x64 "shr.un" InlineNone 2 1 Next;
    NEG = 0x65 "neg" InlineNone 1 1 Next;
    NOT = 0x66 "not" InlineNone 1 1 Next;
    CONV_I1 = 0x67 "conv.i1" InlineNone 1 1 Next;
    CONV_I2 = 0x68 "conv.i2" InlineNone 1 1 Next;
    CONV_I4 = 0x69 "conv.i4" InlineNone 1 1 Next;
    CONV_I8 = 0x6a "conv.i8" InlineNone 1 1 Next;
    CONV_R4 = 0x6b "conv.r4" InlineNone 1 1 Next;
    CONV_R8 = 0x6c "conv.r8" InlineNone 1 1 Next;
    CONV_U4 = 0x6d "conv.u4" InlineNone 1 1 Next;
    CONV_U8 = 0x6e "conv.u8" InlineNone 1 1 Next;
    CALLVIRT = 0x6f "callvirt" InlineMethod v v Call;
    CPOBJ = 0x70 "cpobj" InlineType 2 0 Next;
    LDOBJ = 0x71 "ldobj" InlineType 1 1 Next;
    LDSTR = 0x72 "ldstr" InlineString 0 1 Next;
    NEWOBJ = 0x73 "newobj" InlineMethod v 1 Call;
    CASTCLASS = 0x74 "castclass" InlineType 1 1 Next;
    ISINST = 0x75 "isinst" InlineType 1 1 Next;
    CONV_R_UN = 0x76 "conv.r.un" InlineNone 1 1 Next;
    UNBOX = 0x79 "unbox" InlineType 1 1 Next;
    THROW = 0x7a "throw" InlineNone 1 0 Throw;
    LDFLD = 0x7b "ldfld" InlineField 1 1 Next;
    LDFLDA = 0x7c "ldflda" InlineField 1 1 Next;
    STFLD = 0x7d "stfld" InlineField 2 0 Next;
    LDSFLD = 0x7e "ldsfld" InlineField 0 1 Next;
    LDSFLDA = 0x7f "ldsflda" InlineField 0 1 Next;
    STSFLD = 0x80 "stsfld" InlineField 1 0 Next;
    STOBJ = 0x81 "stobj" InlineType 2 0 Next;
    CONV_OVF_I1_UN = 0x82 "conv.ovf.i1.un" InlineNone 1 1 Next;
    CONV_OVF_I2_UN = 0x83 "conv.ovf.i2.un" InlineNone 1 1 Next;
    CONV_OVF_I4_UN = 0x84 "conv.ovf.i4.un" InlineNone 1 1 Next;
    CONV_OVF_I8_UN = 0x85 "conv.ovf.i8.un" InlineNone 1 1 Next;
    CONV_OVF_U1_UN = 0x86 "conv.ovf.u1.un" InlineNone 1 1 Next;
    CONV_OVF_U2_UN = 0x87 "conv.ovf.u2.un" InlineNone 1 1 Next;
    CONV_OVF_U4_UN = 0x88 "conv.ovf.u4.un" InlineNone 1 1 Next;
    CONV_OVF_U8_UN = 0x89 "conv.ovf.u8.un" InlineNone 1 1 Next;
    CONV_OVF_I_UN = 0x8a "conv.ovf.i.un" InlineNone 1 1 Next;
    CONV_OVF_U_UN = 0x8b "conv.ovf.u.un" InlineNone 1 1 Next;
    BOX = 0x8c "box" InlineType 1 1 Next;
    NEWARR = 0x8d "newarr" InlineType 1 1 Next;
    LDLEN = 0x8e "ldlen" InlineNone 1 1 Next;
    LDELEMA = 0x8f "ldelema" InlineType 2 1 Next;
    LDELEM_I1 = 0x90 "ldelem.i1" InlineNone 2 1 Next;
    LDELEM_U1 = 0x91 "ldelem.u1" InlineNone 2 1 Next;
    LDELEM_I2 = 0x92 "ldelem.i2" InlineNone 2 1 Next;
    LDELEM_U2 = 0x93 "ldelem.u2" InlineNone 2 1 Next;
    LDELEM_I4 = 0x94 "ldelem.i4" InlineNone 2 1 Next;
    LDELEM_U4 = 0x95 "ldelem.u4" InlineNone 2 1 Next;
    LDELEM_I8 = 0x96 "ldelem.i8" InlineNone 2 1 Next;
    LDELEM_I = 0x97 "ldelem.i" InlineNone 2 1 Next;
    LDELEM_R4 = 0x98 "ldelem.r4" InlineNone 2 1 Next;
    LDELEM_R8 = 0x99 "ldelem.r8" InlineNone 2 1 Next;
    LDELEM_REF = 0x9a "ldelem.ref" InlineNone 2 1 Next;
    STELEM_I = 0x9b "stelem.i" InlineNone 3 0 Next;
    STELEM_I1 = 0x9c "stelem.i1" InlineNone 3 0 Next;
    STELEM_I2 = 0x9d "stelem.i2" InlineNone 3 0 Next;
    STELEM_I4 = 0x9e "stelem.i4" InlineNone 3 0 Next;
    STELEM_I8 = 0x9f "stelem.i8" InlineNone 3 0 Next;
    STELEM_R4 = 0xa0 "stelem.r4" InlineNone 3 0 Next;
    STELEM_R8 = 0xa1 "stelem.r8" InlineNone 3 0 Next;
    STELEM_REF = 0xa2 "stelem.ref" InlineNone 3 0 Next;
    LDELEM = 0xa3 "ldelem" InlineType 2 1 Next;
    STELEM = 0xa4 "stelem" InlineType 3 0 Next;
    UNBOX_ANY = 0xa5 "unbox.any" InlineType 1 1 Next;
    CONV_OVF_I1 = 0xb3 "conv.ovf.i1" InlineNone 1 1 Next;
    CONV_OVF_U1 = 0xb4 "conv.ovf.u1" InlineNone 1 1 Next;
    CONV_OVF_I2 = 0xb5 "conv.ovf.i2" InlineNone 1 1 Next;
    CONV_OVF_U2 = 0xb6 "conv.ovf.u2" InlineNone 1 1 Next;
    CONV_OVF_I4 = 0xb7 "conv.ovf.i4" InlineNone 1 1 Next;
    CONV_OVF_U4 = 0xb8 "conv.ovf.u4" InlineNone 1 1 Next;
    CONV_OVF_I8 = 0xb9 "conv.ovf.i8" InlineNone 1 1 Next;
    CONV_OVF_U8 = 0xba "conv.ovf.u8" InlineNone 1 1 Next;
    REFANYVAL = 0xc2 "refanyval" InlineType 1 1 Next;
    CKFINITE = 0xc3 "ckfinite" InlineNone 1 1 Next;
    MKREFANY = 0xc6 "mkrefany" InlineType 1 1 Next;
    LDTOKEN = 0xd0 "ldtoken" InlineTok 0 1 Next;
    CONV_U2 = 0xd1 "conv.u2" InlineNone 1 1 Next;
    CONV_U1 = 0xd2 "conv.u1" InlineNone 1 1 Next;
    CONV_I = 0xd3 "conv.i" InlineNone 1 1 Next;
    CONV_OVF_I = 0xd4 "conv.ovf.i" InlineNone 1 1 Next;
    CONV_OVF_U = 0xd5 "conv.ovf.u" InlineNone 1 1 Next;
    ADD_OVF = 0xd6 "add.ovf" InlineNone 2 1 Next;
    ADD_OVF_UN = 0xd7 "add.ovf.un" InlineNone 2 1 Next;
    MUL_OVF = 0xd8 "mul.ovf" InlineNone 2 1 Next;
    MUL_OVF_UN = 0xd9 "mul.ovf.un" InlineNone 2 1 Next;
    SUB_OVF = 0xda "sub.ovf" InlineNone 2 1 Next;
    SUB_OVF_UN = 0xdb "sub.ovf.un" InlineNone 2 1 Next;
    ENDFINALLY = 0xdc "endfinally" InlineNone 0 0 Return;
    LEAVE = 0xdd "leave" InlineBrTarget 0 0 Leave;
    LEAVE_S = 0xde "leave.s" ShortInlineBrTarget 0 0 Leave;
    STIND_I = 0xdf "stind.i" InlineNone 2 0 Next;
    CONV_U = 0xe0 "conv.u" InlineNone 1 1 Next;
    ARGLIST = 0xfe00 "arglist" InlineNone 0 1 Next;
    CEQ = 0xfe01 "ceq" InlineNone 2 1 Next;
    CGT = 0xfe02 "cgt" InlineNone 2 1 Next;
    CGT_UN = 0xfe03 "cgt.un" InlineNone 2 1 Next;
    CLT = 0xfe04 "clt" InlineNone 2 1 Next;
    CLT_UN = 0xfe05 "clt.un" InlineNone 2 1 Next;
    LDFTN = 0xfe06 "ldftn" InlineMethod 0 1 Next;
    LDVIRTFTN = 0xfe07 "ldvirtftn" InlineMethod 1 1 Next;
    LDARG = 0xfe09 "ldarg" InlineVar 0 1 Next;
    LDARGA = 0xfe0a "ldarga" InlineVar 0 1 Next;
    STARG = 0xfe0b "starg" InlineVar 1 0 Next;
    LDLOC = 0xfe0c "ldloc" InlineVar 0 1 Next;
    LDLOCA = 0xfe0d "ldloca" InlineVar 0 1 Next;
    STLOC = 0xfe0e "stloc" InlineVar 1 0 Next;
    LOCALLOC = 0xfe0f "localloc" InlineNone 1 1 Next;
    ENDFILTER = 0xfe11 "endfilter" InlineNone 1 0 Return;
    UNALIGNED = 0xfe12 "unaligned." ShortInlineI 0 0 Prefix;
    VOLATILE = 0xfe13 "volatile." InlineNone 0 0 Prefix;
    TAIL = 0xfe14 "tail." InlineNone 0 0 Prefix;
    INITOBJ = 0xfe15 "initobj" InlineType 1 0 Next;
    CONSTRAINED = 0xfe16 "constrained." InlineType 0 0 Prefix;
    CPBLK = 0xfe17 "cpblk" InlineNone 3 0 Next;
    INITBLK = 0xfe18 "initblk" InlineNone 3 0 Next;
    NO = 0xfe19 "no." ShortInlineI 0 0 Prefix;
    RETHROW = 0xfe1a "rethrow" InlineNone 0 0 Throw;
    SIZEOF = 0xfe1c "sizeof" InlineType 0 1 Next;
    REFANYTYPE = 0xfe1d "refanytype" InlineNone 1 1 Next;
    READONLY = 0xfe1e "readonly." InlineNone 0 0 Prefix;
}

/// The slot of an opcode value in [`INDEX`]: one-byte opcodes at their byte, `0xfe` ones
/// after them; `None` for a value that is neither.
const fn slot(value: u16) -> Option<usize> {
    match value {
        0x00..=0xff => Some(value as usize),
        0xfe00..=0xfeff => Some(0x100 + (value & 0xff) as usize),
        _ => None,
    }
}

/// Where each opcode value's entry is in [`TABLE`] (`u8::MAX`: no opcode has it), so that
/// what an opcode is, asked for every instruction read, written or checked, is one load.
static INDEX: [u8; 0x200] = {
    assert!(OPCODES.len() < u8::MAX as usize);
    let mut index = [u8::MAX; 0x200];
    let mut i = 0;
    while i < OPCODES.len() {
        if let Some(s) = slot(OPCODES[i].opcode.0) {
            index[s] = i as u8;
        }
        i += 1;
    }
    index
};

impl OpCode {
    /// The opcode with this value (`0x00..=0xff` one-byte, `0xfe00..=0xfeff` two-byte), if
    /// the instruction set has one.
    #[inline]
    pub fn from_value(value: u16) -> Option<OpCode> {
        let i = *INDEX.get(slot(value)?)?;
        TABLE.get(usize::from(i)).map(|info| info.opcode)
    }

    /// Every opcode, in value order.
    pub fn all() -> impl Iterator<Item = OpCode> {
        TABLE.iter().map(|i| i.opcode)
    }

    /// The value: the byte, or `0xfe00 | second byte`.
    #[inline]
    pub const fn value(self) -> u16 {
        self.0
    }

    /// Its encoding's length: 1, or 2 for the `0xfe` opcodes.
    pub const fn size(self) -> usize {
        if self.0 > 0xff { 2 } else { 1 }
    }

    /// What the table says about it.
    #[inline]
    pub fn info(self) -> &'static OpInfo {
        // Every OpCode was made from the table, so its slot names its entry.
        let i = slot(self.0).map_or(0, |s| usize::from(INDEX[s]));
        TABLE.get(i).unwrap_or(&TABLE[0])
    }

    /// The ILAsm name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// What follows it in the stream.
    #[inline]
    pub fn operand_kind(self) -> OperandKind {
        self.info().operand
    }

    /// The long form of a short branch (`br.s` → `br`), or `None` for other opcodes.
    pub fn long_branch(self) -> Option<OpCode> {
        match self.0 {
            0x2b..=0x37 => Some(OpCode(self.0 + 0x0d)),
            0xde => Some(OpCode::LEAVE),
            _ => None,
        }
    }

    /// The short form of a long branch (`br` → `br.s`), or `None` for other opcodes.
    pub fn short_branch(self) -> Option<OpCode> {
        match self.0 {
            0x38..=0x44 => Some(OpCode(self.0 - 0x0d)),
            0xdd => Some(OpCode::LEAVE_S),
            _ => None,
        }
    }
}

impl fmt::Debug for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_complete_and_consistent() {
        assert!(TABLE.windows(2).all(|w| w[0].opcode.0 < w[1].opcode.0));
        // 191 one-byte and 28 two-byte opcodes (Partition III), nothing more.
        assert_eq!(TABLE.iter().filter(|i| i.opcode.size() == 1).count(), 191);
        assert_eq!(TABLE.iter().filter(|i| i.opcode.size() == 2).count(), 28);
        for info in TABLE {
            assert_eq!(info.opcode.info(), info);
            let branchy = matches!(info.operand, OperandKind::InlineBrTarget | OperandKind::ShortInlineBrTarget);
            assert_eq!(
                branchy,
                matches!(info.flow, Flow::Branch | Flow::Leave)
                    || (info.flow == Flow::CondBranch && info.opcode != OpCode::SWITCH),
                "{}",
                info.name
            );
            // Every short branch has a long form, and nothing else has one.
            assert_eq!(
                info.opcode.long_branch().is_some(),
                info.operand == OperandKind::ShortInlineBrTarget,
                "{}",
                info.name
            );
            if let Some(long) = info.opcode.long_branch() {
                assert_eq!(format!("{}.s", long.name()), info.name);
                assert_eq!(long.short_branch(), Some(info.opcode));
            }
        }
        // Errors name opcodes by their ILAsm names.
        assert_eq!(format!("{} {:?}", OpCode::BR_S, OpCode::READONLY), "br.s readonly.");
        assert_eq!(OpCode::from_value(0x24), None);
        assert_eq!(OpCode::from_value(0xfe08), None);
        assert_eq!(OpCode::from_value(0xfe1e), Some(OpCode::READONLY));
        assert_eq!(OpCode::from_value(0xff), None);
        assert_eq!(OpCode::from_value(0xfeff), None);
        assert_eq!(OpCode::from_value(0x1fe), None);
        // The index names every table entry once, and nothing else.
        assert_eq!(INDEX.iter().filter(|&&i| i != u8::MAX).count(), TABLE.len());
        for v in 0..=u16::MAX {
            assert_eq!(OpCode::from_value(v), TABLE.iter().find(|i| i.opcode.0 == v).map(|i| i.opcode), "{v:#x}");
        }
    }
}
