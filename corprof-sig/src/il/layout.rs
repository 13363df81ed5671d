//! Where each instruction lands: offsets, branch forms, and the code bytes.

use super::*;
use body::MethodBody;

/// Where each instruction lands and in which form.
pub(super) struct Layout {
    pub(super) offsets: Vec<usize>,
    /// The opcode written: the instruction's, or the long form of a short branch out of reach.
    pub(super) opcodes: Vec<OpCode>,
    pub(super) code_size: usize,
    /// Instruction index by label number (labels are dense: numbered from 0 as made);
    /// `u32::MAX` for a label no instruction has.
    index: Vec<u32>,
}

impl Layout {
    /// The position of the instruction `label` names.
    pub(super) fn position(&self, label: Label) -> Option<usize> {
        self.index.get(label.0 as usize).copied().filter(|&i| i != u32::MAX).map(|i| i as usize)
    }

    /// Where the instruction at `i` lands; the code's size for one past the last, and 0 for a
    /// layout of [`positions`](MethodBody::positions) only.
    pub(super) fn at(&self, i: usize) -> usize {
        self.offsets.get(i).copied().unwrap_or(self.code_size)
    }

    pub(super) fn offset(&self, label: Label) -> Option<usize> {
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
    /// Where each label is, and nothing else: a layout without offsets (every [`Layout::at`]
    /// is 0), for what needs only positions. An operand of the wrong kind is an error, as in
    /// [`layout`](Self::layout), which gives its offset.
    pub(super) fn positions(&self) -> Result<Layout, IlError> {
        let mut index = vec![u32::MAX; self.next_label as usize];
        for (i, (label, ins)) in self.code.iter().enumerate() {
            if !ins.operand_fits() {
                return err(0, IlErrorKind::OperandMismatch(ins.opcode));
            }
            if let Some(slot) = index.get_mut(label.0 as usize) {
                *slot = i as u32;
            }
        }
        Ok(Layout { offsets: Vec::new(), opcodes: Vec::new(), code_size: 0, index })
    }

    /// Lays the code out: offsets, widening short branches until every one reaches its target
    /// (widening only grows the code, so this ends).
    pub(super) fn layout(&self) -> Result<Layout, IlError> {
        let n = self.code.len();
        let mut layout = Layout {
            offsets: Vec::with_capacity(n),
            opcodes: Vec::with_capacity(n),
            code_size: 0,
            index: vec![u32::MAX; self.next_label as usize],
        };
        // The first pass lays the code out as written; most bodies need no other.
        let mut at = 0;
        let mut short_branches = false;
        for (i, (label, ins)) in self.code.iter().enumerate() {
            if let Some(slot) = layout.index.get_mut(label.0 as usize) {
                *slot = i as u32;
            }
            if !ins.operand_fits() {
                return err(at, IlErrorKind::OperandMismatch(ins.opcode));
            }
            layout.offsets.push(at);
            layout.opcodes.push(ins.opcode);
            short_branches |= ins.opcode.operand_kind() == OperandKind::ShortInlineBrTarget;
            at += size_of(ins.opcode, &ins.operand);
        }
        layout.code_size = at;
        // Widening moves what follows, which may put other short branches out of reach. A
        // branch once widened stays wide, so at most `n` rounds widen anything.
        if short_branches {
            let mut settled = false;
            for _ in 0..=n {
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
                    let displacement = to as i64 - from as i64;
                    if i8::try_from(displacement).is_err() {
                        // Every short branch has a long form; an opcode without one would
                        // never reach, and is refused rather than widened forever.
                        let long = op
                            .long_branch()
                            .ok_or(IlError { offset: layout.offsets[i], kind: IlErrorKind::BadTarget(displacement) })?;
                        layout.opcodes[i] = long;
                        widened = true;
                    }
                }
                if !widened {
                    settled = true;
                    break;
                }
                let mut at = 0usize;
                for (((_, ins), op), offset) in self.code.iter().zip(&layout.opcodes).zip(&mut layout.offsets) {
                    *offset = at;
                    at += size_of(*op, &ins.operand);
                }
                layout.code_size = at;
            }
            if !settled {
                return err(0, IlErrorKind::TooLarge);
            }
        }
        Ok(layout)
    }

    pub(super) fn write_code(&self, layout: &Layout, out: &mut Vec<u8>) -> Result<(), IlError> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::il::{Instruction, Label, OpCode, Operand};

    #[test]
    fn positions_index_each_label_and_refuse_a_mismatched_operand() {
        let mut body = MethodBody::parse(&[0x06, 0x2a]).unwrap();
        body.push(Instruction::simple(OpCode::NOP));
        let labels: Vec<Label> = body.labels().collect();
        let p = body.positions().unwrap();
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(p.position(*label), Some(i));
        }
        assert!(p.offsets.is_empty() && p.code_size == 0, "positions lay nothing out");
        body.push(Instruction { opcode: OpCode::BR_S, operand: Operand::None });
        let Err(e) = body.positions() else { panic!("a br.s without a target was placed") };
        assert_eq!(e.kind, IlErrorKind::OperandMismatch(OpCode::BR_S));
    }
}
