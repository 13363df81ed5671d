//! The body: header, instructions and data sections, read and written.

use super::*;
use sections::{Clause, Section, write_section};

/// Fat header flags (II.25.4.4).
const FAT_FORMAT: u16 = 0x3;
const TINY_FORMAT: u8 = 0x2;
const MORE_SECTS: u16 = 0x8;
const INIT_LOCALS: u16 = 0x10;

/// A method body: header, labelled instructions, exception clauses and other data sections.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodBody {
    /// `None` for a tiny header.
    pub(super) fat: Option<FatHeader>,
    pub(super) max_stack: u16,
    pub(super) code: Vec<(Label, Instruction)>,
    pub(super) clauses: Vec<Clause>,
    /// The data sections as read, to write them back in the same order and format.
    pub(super) sections: Vec<Section>,
    /// The bytes between the code and the first section, as read.
    pub(super) padding: Vec<u8>,
    pub(super) next_label: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct FatHeader {
    /// The flags word with its size nibble, as read.
    pub(super) flags: u16,
    pub(super) local_var_sig: Token,
}

/// Little-endian reads that report the offset where the bytes ran out.
pub(super) struct Bytes<'a> {
    bytes: &'a [u8],
    pub(super) pos: usize,
}

impl Bytes<'_> {
    pub(super) fn take(&mut self, n: usize) -> Result<&[u8], IlError> {
        match self.bytes.get(self.pos..self.pos.saturating_add(n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => err(self.pos, IlErrorKind::UnexpectedEnd),
        }
    }
    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], IlError> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    /// How many bytes are left to read.
    pub(super) fn bytes_left(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }
    pub(super) fn u8(&mut self) -> Result<u8, IlError> {
        Ok(self.array::<1>()?[0])
    }
    pub(super) fn u16(&mut self) -> Result<u16, IlError> {
        self.array().map(u16::from_le_bytes)
    }
    pub(super) fn u32(&mut self) -> Result<u32, IlError> {
        self.array().map(u32::from_le_bytes)
    }
}

pub(super) fn align4(n: usize) -> usize {
    (n + 3) & !3
}

impl Default for MethodBody {
    fn default() -> Self {
        MethodBody::new()
    }
}

impl MethodBody {
    /// An empty body with a tiny header, to fill with [`push`](Self::push).
    pub fn new() -> MethodBody {
        MethodBody {
            fat: None,
            max_stack: 8,
            code: Vec::new(),
            clauses: Vec::new(),
            sections: Vec::new(),
            padding: Vec::new(),
            next_label: 0,
        }
    }

    /// Reads a body from the start of `bytes` (which may run on past its end).
    pub fn parse(bytes: &[u8]) -> Result<MethodBody, IlError> {
        let mut r = Bytes { bytes, pos: 0 };
        let first = r.u8()?;
        let (fat, max_stack, code_size) = match first & 0x3 {
            TINY_FORMAT => (None, 8, usize::from(first >> 2)),
            3 => {
                r.pos = 0;
                let flags = r.u16()?;
                if flags >> 12 != 3 {
                    return err(0, IlErrorKind::BadHeaderSize((flags >> 12) as u8));
                }
                let max_stack = r.u16()?;
                let code_size = r.u32()? as usize;
                let local_var_sig = Token(r.u32()?);
                (Some(FatHeader { flags, local_var_sig }), max_stack, code_size)
            }
            _ => return err(0, IlErrorKind::BadHeader(first)),
        };
        let code_start = r.pos;
        let code_bytes = r.take(code_size)?;
        let mut body = MethodBody { fat, max_stack, ..MethodBody::new() };
        // Targets as offsets first; they become labels once every instruction has one.
        let raw = decode_code(code_bytes, code_start)?;
        body.code.reserve_exact(raw.len());
        let mut at_offset: Vec<Option<Label>> = vec![None; code_size + 1];
        for (i, (offset, _, _)) in raw.iter().enumerate() {
            at_offset[*offset] = Some(Label(i as u32));
        }
        at_offset[code_size] = Some(Label::END);
        let label = |target: i64, at: usize| -> Result<Label, IlError> {
            usize::try_from(target)
                .ok()
                .and_then(|t| at_offset.get(t).copied().flatten())
                .ok_or(IlError { offset: at, kind: IlErrorKind::BadTarget(target) })
        };
        for (i, (offset, opcode, operand)) in raw.into_iter().enumerate() {
            let operand = match operand {
                RawOperand::Plain(op) => op,
                RawOperand::Branch(t) => Operand::Branch(label(t, offset)?),
                RawOperand::Switch(ts) => {
                    Operand::Switch(ts.into_iter().map(|t| label(t, offset)).collect::<Result<_, _>>()?)
                }
            };
            body.code.push((Label(i as u32), Instruction { opcode, operand }));
        }
        body.next_label = body.code.len() as u32;

        if body.fat.is_some_and(|f| f.flags & MORE_SECTS != 0) {
            body.parse_sections(&mut r, code_start + code_size, &label)?;
        }
        Ok(body)
    }

    /// Writes the body; see the [module](super) for what is kept and what is chosen.
    pub fn encode(&self) -> Result<Vec<u8>, IlError> {
        let layout = self.layout()?;
        let code_size = layout.code_size;
        let clauses = self.clause_offsets(&layout)?;
        let sections = self.plan_sections(&clauses);
        let tiny = self.fat.is_none() && code_size < 64 && self.max_stack <= 8 && sections.is_empty();
        // The header, the code, alignment, and every section at its largest: written into one
        // allocation.
        let section_bytes: usize = sections
            .iter()
            .map(|s| match s {
                sections::Planned::Eh { clauses, extra, pad, .. } => {
                    4 + 24 * clauses.len() + extra.len() + pad.len() + 3
                }
                sections::Planned::Raw(bytes) => bytes.len() + 3,
            })
            .sum();
        let mut out = Vec::with_capacity(12 + code_size + 3 + section_bytes);
        if tiny {
            out.push((code_size as u8) << 2 | TINY_FORMAT);
        } else {
            let (mut flags, local_var_sig) = match self.fat {
                Some(f) => (f.flags, f.local_var_sig),
                None => (0x3000 | FAT_FORMAT, Token(0)),
            };
            flags = if sections.is_empty() { flags & !MORE_SECTS } else { flags | MORE_SECTS };
            out.extend_from_slice(&flags.to_le_bytes());
            out.extend_from_slice(&self.max_stack.to_le_bytes());
            let size = u32::try_from(code_size).map_err(|_| IlError { offset: 0, kind: IlErrorKind::TooLarge })?;
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&local_var_sig.0.to_le_bytes());
        }
        let code_start = out.len();
        self.write_code(&layout, &mut out)?;
        debug_assert_eq!(out.len() - code_start, code_size);
        if sections.is_empty() {
            return Ok(out);
        }
        let pad = align4(out.len()) - out.len();
        if self.padding.len() == pad {
            out.extend_from_slice(&self.padding);
        } else {
            out.resize(out.len() + pad, 0);
        }
        let last = sections.len() - 1;
        for (i, section) in sections.into_iter().enumerate() {
            write_section(section, i < last, &mut out)?;
        }
        Ok(out)
    }

    /// The instructions with their labels, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Label, &Instruction)> {
        self.code.iter().map(|(l, i)| (*l, i))
    }

    /// The labels, in order.
    pub fn labels(&self) -> impl Iterator<Item = Label> + '_ {
        self.code.iter().map(|(l, _)| *l)
    }

    /// The number of instructions.
    pub fn len(&self) -> usize {
        self.code.len()
    }

    /// Whether there are no instructions.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }

    /// The instruction at `label`.
    pub fn get(&self, label: Label) -> Option<&Instruction> {
        self.code.iter().find(|(l, _)| *l == label).map(|(_, i)| i)
    }

    /// The instruction at `label`, to change in place.
    pub fn get_mut(&mut self, label: Label) -> Option<&mut Instruction> {
        self.code.iter_mut().find(|(l, _)| *l == label).map(|(_, i)| i)
    }

    /// The exception clauses, in the order the sections list them.
    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }

    /// The exception clauses, to add, remove or change (inner clauses must come before the
    /// clauses enclosing them, as the runtime expects).
    pub fn clauses_mut(&mut self) -> &mut Vec<Clause> {
        &mut self.clauses
    }

    /// The maximum stack depth the header declares (8 for a tiny header).
    pub fn max_stack(&self) -> u16 {
        self.max_stack
    }

    /// Sets the declared maximum stack depth (above 8 makes a tiny header fat).
    pub fn set_max_stack(&mut self, max_stack: u16) {
        self.max_stack = max_stack;
    }

    /// Whether the header is fat.
    pub fn is_fat(&self) -> bool {
        self.fat.is_some()
    }

    /// The fat header's flags word as read or set (`None` for a tiny header).
    pub fn fat_flags(&self) -> Option<u16> {
        self.fat.map(|f| f.flags)
    }

    /// Whether locals are zero-initialised (`CorILMethod_InitLocals`).
    pub fn init_locals(&self) -> bool {
        self.fat.is_some_and(|f| f.flags & INIT_LOCALS != 0)
    }

    /// The local-variable signature's token (`None` for no locals).
    pub fn local_var_sig(&self) -> Option<Token> {
        self.fat.map(|f| f.local_var_sig).filter(|t| t.0 != 0)
    }

    /// Sets the local-variable signature's token (from `GetTokenFromSig` over the bytes of
    /// [`append_locals`]); the header becomes fat, with `init_locals` set when it was tiny.
    pub fn set_local_var_sig(&mut self, token: Token) {
        let fat =
            self.fat.get_or_insert(FatHeader { flags: 0x3000 | FAT_FORMAT | INIT_LOCALS, local_var_sig: Token(0) });
        fat.local_var_sig = token;
    }

    /// Sets or clears `CorILMethod_InitLocals` (the header becomes fat).
    pub fn set_init_locals(&mut self, on: bool) {
        let fat = self.fat.get_or_insert(FatHeader { flags: 0x3000 | FAT_FORMAT, local_var_sig: Token(0) });
        fat.flags = if on { fat.flags | INIT_LOCALS } else { fat.flags & !INIT_LOCALS };
    }

    /// Whether there are no data sections but exception clauses (which `encode` may re-plan).
    pub(super) fn sections_empty(&self) -> bool {
        self.sections.iter().all(|s| matches!(s, Section::Eh { .. }))
    }

    /// Each instruction's offset in the encoded code, after branch widening, in order, then
    /// [`Label::END`] with the code size.
    pub fn offsets(&self) -> Result<Vec<(Label, u32)>, IlError> {
        let layout = self.layout()?;
        let mut v: Vec<_> = self.code.iter().zip(&layout.offsets).map(|((l, _), o)| (*l, *o as u32)).collect();
        v.push((Label::END, layout.code_size as u32));
        Ok(v)
    }
}

/// An operand before its targets are labels.
enum RawOperand {
    Plain(Operand),
    Branch(i64),
    Switch(Vec<i64>),
}

/// The instructions of `code`: offset, opcode and operand (targets as offsets). `base` is the
/// code's offset in the body, for error offsets.
fn decode_code(code: &[u8], base: usize) -> Result<Vec<(usize, OpCode, RawOperand)>, IlError> {
    let mut r = Bytes { bytes: code, pos: 0 };
    // An instruction takes at least one byte, and about two on average: a small body gets
    // room for every instruction it could hold, a large one for the average.
    let mut out = Vec::with_capacity(if code.len() <= 256 { code.len() } else { code.len() / 2 });
    let at = |pos| pos + base;
    while r.pos < code.len() {
        let start = r.pos;
        let b = r.u8()?;
        let value = if b == 0xfe {
            0xfe00 | u16::from(r.u8().map_err(|_| IlError { offset: at(start), kind: IlErrorKind::UnexpectedEnd })?)
        } else {
            u16::from(b)
        };
        let opcode =
            OpCode::from_value(value).ok_or(IlError { offset: at(start), kind: IlErrorKind::BadOpcode(value) })?;
        let wrap = |e: IlError| IlError { offset: at(e.offset), ..e };
        let operand = (|| -> Result<RawOperand, IlError> {
            use OperandKind as K;
            Ok(match opcode.operand_kind() {
                K::InlineNone => RawOperand::Plain(Operand::None),
                K::ShortInlineI => RawOperand::Plain(Operand::I8(r.u8()? as i8)),
                K::InlineI => RawOperand::Plain(Operand::I32(r.u32()? as i32)),
                K::InlineI8 => RawOperand::Plain(Operand::I64(i64::from_le_bytes(r.array()?))),
                K::ShortInlineR => RawOperand::Plain(Operand::F32(f32::from_bits(r.u32()?))),
                K::InlineR => RawOperand::Plain(Operand::F64(f64::from_bits(u64::from_le_bytes(r.array()?)))),
                K::ShortInlineBrTarget => {
                    let d = r.u8()? as i8;
                    RawOperand::Branch(r.pos as i64 + i64::from(d))
                }
                K::InlineBrTarget => {
                    let d = r.u32()? as i32;
                    RawOperand::Branch(r.pos as i64 + i64::from(d))
                }
                K::InlineSwitch => {
                    let n = r.u32()? as usize;
                    // Each target takes 4 bytes: a count beyond the code is malformed, and
                    // checking first keeps a forged count from reserving memory.
                    if n > (code.len() - r.pos) / 4 {
                        return err(code.len(), IlErrorKind::UnexpectedEnd);
                    }
                    let end = r.pos + 4 * n;
                    let ts =
                        (0..n).map(|_| r.u32().map(|d| end as i64 + i64::from(d as i32))).collect::<Result<_, _>>()?;
                    RawOperand::Switch(ts)
                }
                K::InlineVar => RawOperand::Plain(Operand::Var(r.u16()?)),
                K::ShortInlineVar => RawOperand::Plain(Operand::Var(u16::from(r.u8()?))),
                _ => RawOperand::Plain(Operand::Token(Token(r.u32()?))),
            })
        })()
        .map_err(wrap)?;
        out.push((start, opcode, operand));
    }
    Ok(out)
}
