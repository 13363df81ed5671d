//! The body: header, instructions and data sections, read and written.

use super::*;

/// Fat header flags (II.25.4.4).
const FAT_FORMAT: u16 = 0x3;
const TINY_FORMAT: u8 = 0x2;
const MORE_SECTS: u16 = 0x8;
const INIT_LOCALS: u16 = 0x10;
/// Section header flags (II.25.4.5).
const SECT_EH: u8 = 0x1;
const SECT_FAT: u8 = 0x40;
const SECT_MORE: u8 = 0x80;
/// Clause flags (II.25.4.6).
const CLAUSE_FILTER: u32 = 0x1;
const CLAUSE_FINALLY: u32 = 0x2;
const CLAUSE_FAULT: u32 = 0x4;
const CLAUSE_KINDS: u32 = 0x7;

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

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Section {
    /// An exception-handling section holding `count` of the body's clauses, in order; `extra`
    /// is data after the clauses within the section's size, `pad` the alignment after it.
    Eh { fat: bool, kind: u8, reserved: u16, count: usize, extra: Vec<u8>, pad: Vec<u8> },
    /// Any other section, its bytes (header included, alignment after it included) as read.
    Raw(Vec<u8>),
}

/// What an exception clause does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClauseKind {
    /// Catches exceptions of the type (a `TypeDef`, `TypeRef` or `TypeSpec` token).
    Catch(Token),
    /// Runs the filter starting at the label; the filter ends where the handler starts.
    Filter(Label),
    /// A `finally` handler.
    Finally,
    /// A `fault` handler.
    Fault,
}

/// An exception clause (II.25.4.6): ranges are half-open, `[start, end)`, so code inserted
/// right before an end label falls inside the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clause {
    /// What the clause does.
    pub kind: ClauseKind,
    /// The first instruction of the protected block.
    pub try_start: Label,
    /// The first instruction after the protected block.
    pub try_end: Label,
    /// The first instruction of the handler.
    pub handler_start: Label,
    /// The first instruction after the handler.
    pub handler_end: Label,
    /// Flag bits beyond the kind, and a finally or fault clause's unused token field, as read.
    extra: (u32, u32),
}

impl Clause {
    /// A clause with no flags beyond its kind.
    pub fn new(kind: ClauseKind, try_start: Label, try_end: Label, handler_start: Label, handler_end: Label) -> Clause {
        Clause { kind, try_start, try_end, handler_start, handler_end, extra: (0, 0) }
    }

    pub(super) fn labels_mut(&mut self) -> impl Iterator<Item = &mut Label> {
        let filter = match &mut self.kind {
            ClauseKind::Filter(l) => Some(l),
            _ => None,
        };
        [&mut self.try_start, &mut self.try_end, &mut self.handler_start, &mut self.handler_end]
            .into_iter()
            .chain(filter)
    }
}

/// Little-endian reads that report the offset where the bytes ran out.
struct Bytes<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], IlError> {
        match self.bytes.get(self.pos..self.pos.saturating_add(n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => err(self.pos, IlErrorKind::UnexpectedEnd),
        }
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], IlError> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, IlError> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, IlError> {
        self.array().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Result<u32, IlError> {
        self.array().map(u32::from_le_bytes)
    }
}

fn align4(n: usize) -> usize {
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
            let end = code_start + code_size;
            body.padding = r.take(align4(end) - end)?.to_vec();
            loop {
                let start = r.pos;
                let kind = r.u8()?;
                let fat = kind & SECT_FAT != 0;
                let (size, reserved) = if fat {
                    let b = r.array::<3>()?;
                    (u32::from_le_bytes([b[0], b[1], b[2], 0]) as usize, 0)
                } else {
                    (usize::from(r.u8()?), r.u16()?)
                };
                if size < 4 {
                    return err(start, IlErrorKind::BadSection);
                }
                let more = kind & SECT_MORE != 0;
                if kind & SECT_EH != 0 {
                    let clause_size = if fat { 24 } else { 12 };
                    let count = (size - 4) / clause_size;
                    for _ in 0..count {
                        let at = r.pos;
                        let c = if fat {
                            [r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?]
                        } else {
                            let flags = u32::from(r.u16()?);
                            let try_offset = u32::from(r.u16()?);
                            let try_len = u32::from(r.u8()?);
                            let handler_offset = u32::from(r.u16()?);
                            let handler_len = u32::from(r.u8()?);
                            [flags, try_offset, try_len, handler_offset, handler_len, r.u32()?]
                        };
                        body.clauses.push(clause_from(c, at, &label)?);
                    }
                    let extra = r.take(size - 4 - count * clause_size)?.to_vec();
                    let pad = if more { r.take(align4(r.pos) - r.pos)?.to_vec() } else { Vec::new() };
                    body.sections.push(Section::Eh { fat, kind, reserved, count, extra, pad });
                } else {
                    let len = if more { align4(start + size) - start } else { size };
                    r.pos = start;
                    body.sections.push(Section::Raw(r.take(len)?.to_vec()));
                }
                if !more {
                    break;
                }
            }
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
        let mut out = Vec::with_capacity(12 + code_size + 16);
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
    let mut out = Vec::new();
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

/// A clause from its six fields (flags, try offset and length, handler offset and length,
/// class token or filter offset).
fn clause_from(
    c: [u32; 6],
    at: usize,
    label: &impl Fn(i64, usize) -> Result<Label, IlError>,
) -> Result<Clause, IlError> {
    let [flags, try_offset, try_len, handler_offset, handler_len, token] = c;
    let (try_offset, handler_offset) = (i64::from(try_offset), i64::from(handler_offset));
    let (kind, extra_token) = match flags & CLAUSE_KINDS {
        0 => (ClauseKind::Catch(Token(token)), 0),
        CLAUSE_FILTER => (ClauseKind::Filter(label(i64::from(token), at)?), 0),
        CLAUSE_FINALLY => (ClauseKind::Finally, token),
        CLAUSE_FAULT => (ClauseKind::Fault, token),
        _ => return err(at, IlErrorKind::BadClause),
    };
    Ok(Clause {
        kind,
        try_start: label(try_offset, at)?,
        try_end: label(try_offset + i64::from(try_len), at)?,
        handler_start: label(handler_offset, at)?,
        handler_end: label(handler_offset + i64::from(handler_len), at)?,
        extra: (flags & !CLAUSE_KINDS, extra_token),
    })
}

/// Where each instruction lands and in which form.
pub(super) struct Layout {
    pub(super) offsets: Vec<usize>,
    /// The opcode written: the instruction's, or the long form of a short branch out of reach.
    pub(super) opcodes: Vec<OpCode>,
    pub(super) code_size: usize,
    /// Instruction index by label number (labels are dense: numbered from 0 as made).
    index: Vec<Option<usize>>,
}

impl Layout {
    /// The position of the instruction `label` names.
    pub(super) fn position(&self, label: Label) -> Option<usize> {
        self.index.get(label.0 as usize).copied().flatten()
    }

    fn offset(&self, label: Label) -> Option<usize> {
        if label == Label::END { Some(self.code_size) } else { self.position(label).map(|i| self.offsets[i]) }
    }
}

fn size_of(opcode: OpCode, operand: &Operand) -> usize {
    let operand_size = match operand {
        Operand::Switch(ts) => 4 + 4 * ts.len(),
        _ => opcode.operand_kind().size(),
    };
    opcode.size() + operand_size
}

impl MethodBody {
    /// Lays the code out: offsets, widening short branches until every one reaches its target
    /// (widening only grows the code, so this ends).
    pub(super) fn layout(&self) -> Result<Layout, IlError> {
        let mut index = vec![None; self.next_label as usize];
        let mut at = 0;
        for (i, (label, ins)) in self.code.iter().enumerate() {
            index[label.0 as usize] = Some(i);
            if !ins.operand_fits() {
                return err(at, IlErrorKind::OperandMismatch(ins.opcode));
            }
            at += size_of(ins.opcode, &ins.operand);
        }
        let mut layout = Layout {
            offsets: Vec::with_capacity(self.code.len()),
            opcodes: self.code.iter().map(|(_, i)| i.opcode).collect(),
            code_size: 0,
            index,
        };
        loop {
            layout.offsets.clear();
            let mut at = 0usize;
            for ((_, ins), op) in self.code.iter().zip(&layout.opcodes) {
                layout.offsets.push(at);
                at += size_of(*op, &ins.operand);
            }
            layout.code_size = at;
            let mut widened = false;
            for (i, (_, ins)) in self.code.iter().enumerate() {
                let op = layout.opcodes[i];
                if op.operand_kind() != OperandKind::ShortInlineBrTarget {
                    continue;
                }
                let Operand::Branch(target) = ins.operand else { continue };
                let to = layout
                    .offset(target)
                    .ok_or(IlError { offset: layout.offsets[i], kind: IlErrorKind::UnknownLabel(target) })?;
                let from = layout.offsets[i] + op.size() + 1;
                if i8::try_from(to as i64 - from as i64).is_err() {
                    // Every short branch has a long form.
                    layout.opcodes[i] = op.long_branch().unwrap_or(op);
                    widened = true;
                }
            }
            if !widened {
                return Ok(layout);
            }
        }
    }

    fn write_code(&self, layout: &Layout, out: &mut Vec<u8>) -> Result<(), IlError> {
        for (i, (_, ins)) in self.code.iter().enumerate() {
            let op = layout.opcodes[i];
            let here = layout.offsets[i];
            let end = here + size_of(op, &ins.operand);
            let rel = |target: Label| -> Result<i64, IlError> {
                let to =
                    layout.offset(target).ok_or(IlError { offset: here, kind: IlErrorKind::UnknownLabel(target) })?;
                Ok(to as i64 - end as i64)
            };
            if op.size() == 2 {
                out.push(0xfe);
            }
            out.push(op.value() as u8);
            match (&ins.operand, op.operand_kind()) {
                (Operand::None, _) => {}
                (Operand::I8(v), _) => out.push(*v as u8),
                (Operand::I32(v), _) => out.extend_from_slice(&v.to_le_bytes()),
                (Operand::I64(v), _) => out.extend_from_slice(&v.to_le_bytes()),
                (Operand::F32(v), _) => out.extend_from_slice(&v.to_bits().to_le_bytes()),
                (Operand::F64(v), _) => out.extend_from_slice(&v.to_bits().to_le_bytes()),
                (Operand::Branch(t), OperandKind::ShortInlineBrTarget) => out.push(rel(*t)? as i8 as u8),
                (Operand::Branch(t), _) => {
                    let d =
                        i32::try_from(rel(*t)?).map_err(|_| IlError { offset: here, kind: IlErrorKind::TooLarge })?;
                    out.extend_from_slice(&d.to_le_bytes());
                }
                (Operand::Switch(ts), _) => {
                    let n =
                        u32::try_from(ts.len()).map_err(|_| IlError { offset: here, kind: IlErrorKind::TooLarge })?;
                    out.extend_from_slice(&n.to_le_bytes());
                    for t in ts {
                        let d = i32::try_from(rel(*t)?)
                            .map_err(|_| IlError { offset: here, kind: IlErrorKind::TooLarge })?;
                        out.extend_from_slice(&d.to_le_bytes());
                    }
                }
                (Operand::Token(t), _) => out.extend_from_slice(&t.0.to_le_bytes()),
                (Operand::Var(v), OperandKind::ShortInlineVar) => out.push(*v as u8),
                (Operand::Var(v), _) => out.extend_from_slice(&v.to_le_bytes()),
            }
        }
        Ok(())
    }

    /// Each clause's six fields at the layout's offsets.
    fn clause_offsets(&self, layout: &Layout) -> Result<Vec<[u32; 6]>, IlError> {
        self.clauses
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let off = |l: Label| {
                    layout.offset(l).map(|o| o as u32).ok_or(IlError { offset: i, kind: IlErrorKind::UnknownLabel(l) })
                };
                let (try_start, try_end) = (off(c.try_start)?, off(c.try_end)?);
                let (handler_start, handler_end) = (off(c.handler_start)?, off(c.handler_end)?);
                if try_end < try_start || handler_end < handler_start {
                    return err(i, IlErrorKind::BadClause);
                }
                let (kind, token) = match c.kind {
                    ClauseKind::Catch(t) => (0, t.0),
                    ClauseKind::Filter(l) => (CLAUSE_FILTER, off(l)?),
                    ClauseKind::Finally => (CLAUSE_FINALLY, c.extra.1),
                    ClauseKind::Fault => (CLAUSE_FAULT, c.extra.1),
                };
                Ok([
                    kind | c.extra.0,
                    try_start,
                    try_end - try_start,
                    handler_start,
                    handler_end - handler_start,
                    token,
                ])
            })
            .collect()
    }

    /// The sections to write: the read ones in their formats while the clauses still fit them,
    /// else one EH section (small when every clause fits) where the first one was.
    fn plan_sections<'a>(&'a self, clauses: &'a [[u32; 6]]) -> Vec<Planned<'a>> {
        let fits_small = |cs: &[[u32; 6]]| {
            cs.len() <= 20
                && cs.iter().all(|c| c[0] <= 0xffff && c[1] <= 0xffff && c[2] <= 0xff && c[3] <= 0xffff && c[4] <= 0xff)
        };
        let read_count: usize =
            self.sections.iter().map(|s| if let Section::Eh { count, .. } = s { *count } else { 0 }).sum();
        let mut planned = Vec::new();
        if read_count == self.clauses.len() {
            let mut rest = clauses;
            for s in &self.sections {
                match s {
                    Section::Eh { fat, kind, reserved, count, extra, pad } => {
                        let (mine, after) = rest.split_at(*count);
                        rest = after;
                        let fat = *fat || !fits_small(mine);
                        planned.push(Planned::Eh { fat, kind: *kind, reserved: *reserved, clauses: mine, extra, pad });
                    }
                    Section::Raw(bytes) => planned.push(Planned::Raw(bytes)),
                }
            }
            return planned;
        }
        let eh = Planned::Eh { fat: !fits_small(clauses), kind: SECT_EH, reserved: 0, clauses, extra: &[], pad: &[] };
        let mut placed = clauses.is_empty();
        for s in &self.sections {
            match s {
                Section::Eh { .. } if !placed => {
                    planned.push(eh.clone());
                    placed = true;
                }
                Section::Eh { .. } => {}
                Section::Raw(bytes) => planned.push(Planned::Raw(bytes)),
            }
        }
        if !placed {
            planned.insert(0, eh);
        }
        planned
    }
}

#[derive(Clone)]
enum Planned<'a> {
    Eh { fat: bool, kind: u8, reserved: u16, clauses: &'a [[u32; 6]], extra: &'a [u8], pad: &'a [u8] },
    Raw(&'a [u8]),
}

fn write_section(section: Planned<'_>, more: bool, out: &mut Vec<u8>) -> Result<(), IlError> {
    match section {
        Planned::Raw(bytes) => {
            // The MoreSects bit follows the sections written, the rest as read.
            let start = out.len();
            out.extend_from_slice(bytes);
            out[start] = if more { out[start] | SECT_MORE } else { out[start] & !SECT_MORE };
            if more {
                out.resize(align4(out.len()), 0);
            }
        }
        Planned::Eh { fat, kind, reserved, clauses, extra, pad } => {
            let clause_size = if fat { 24 } else { 12 };
            let size = 4 + clause_size * clauses.len() + extra.len();
            if size > 0x00ff_ffff {
                return err(out.len(), IlErrorKind::TooLarge);
            }
            let mut kind = (kind & !(SECT_FAT | SECT_MORE)) | SECT_EH;
            if fat {
                kind |= SECT_FAT;
            }
            if more {
                kind |= SECT_MORE;
            }
            out.push(kind);
            if fat {
                out.extend_from_slice(&(size as u32).to_le_bytes()[..3]);
            } else {
                out.push(size as u8);
                out.extend_from_slice(&reserved.to_le_bytes());
            }
            for c in clauses {
                if fat {
                    c.iter().for_each(|f| out.extend_from_slice(&f.to_le_bytes()));
                } else {
                    out.extend_from_slice(&(c[0] as u16).to_le_bytes());
                    out.extend_from_slice(&(c[1] as u16).to_le_bytes());
                    out.push(c[2] as u8);
                    out.extend_from_slice(&(c[3] as u16).to_le_bytes());
                    out.push(c[4] as u8);
                    out.extend_from_slice(&c[5].to_le_bytes());
                }
            }
            out.extend_from_slice(extra);
            if more {
                // The alignment as read, when it is still the alignment needed.
                if align4(out.len()) - out.len() == pad.len() {
                    out.extend_from_slice(pad);
                }
                out.resize(align4(out.len()), 0);
            }
        }
    }
    Ok(())
}
