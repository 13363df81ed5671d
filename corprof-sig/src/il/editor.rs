//! Edits that keep every label meaningful, and new locals.

use super::*;
use crate::sig::{LocalVarSig, SigError, Type};

impl MethodBody {
    fn index_of(&self, label: Label) -> Result<usize, IlError> {
        self.code
            .iter()
            .position(|(l, _)| *l == label)
            .ok_or(IlError { offset: 0, kind: IlErrorKind::UnknownLabel(label) })
    }

    fn fresh(&mut self, instrs: impl IntoIterator<Item = Instruction>) -> Vec<(Label, Instruction)> {
        instrs
            .into_iter()
            .map(|ins| {
                let label = Label(self.next_label);
                self.next_label += 1;
                (label, ins)
            })
            .collect()
    }

    fn splice_at(&mut self, index: usize, instrs: impl IntoIterator<Item = Instruction>) -> Vec<Label> {
        let new = self.fresh(instrs);
        let labels = new.iter().map(|(l, _)| *l).collect();
        self.code.splice(index..index, new);
        labels
    }

    /// Inserts `instrs` before the instruction at `at` ([`Label::END`]: at the end) and returns
    /// their labels. Branches to `at` still reach `at`, after the new code (insert at the first
    /// instruction for code every path runs); a clause range starting at `at` does not cover
    /// the new code, one ending at `at` does.
    pub fn insert_before(
        &mut self,
        at: Label,
        instrs: impl IntoIterator<Item = Instruction>,
    ) -> Result<Vec<Label>, IlError> {
        let i = if at == Label::END { self.code.len() } else { self.index_of(at)? };
        Ok(self.splice_at(i, instrs))
    }

    /// Inserts `instrs` after the instruction at `at` and returns their labels.
    pub fn insert_after(
        &mut self,
        at: Label,
        instrs: impl IntoIterator<Item = Instruction>,
    ) -> Result<Vec<Label>, IlError> {
        let i = self.index_of(at)?;
        Ok(self.splice_at(i + 1, instrs))
    }

    /// Appends `ins` and returns its label.
    pub fn push(&mut self, ins: Instruction) -> Label {
        let label = Label(self.next_label);
        self.next_label += 1;
        self.code.push((label, ins));
        label
    }

    /// Removes the instruction at `at`. Branches, switch targets and clause boundaries that
    /// named it now name the instruction that followed it (or [`Label::END`]).
    pub fn remove(&mut self, at: Label) -> Result<Instruction, IlError> {
        let i = self.index_of(at)?;
        let (_, ins) = self.code.remove(i);
        let next = self.code.get(i).map_or(Label::END, |(l, _)| *l);
        self.retarget(at, next);
        Ok(ins)
    }

    /// Replaces the instruction at `at` with `instrs`: the first keeps the label `at`, so what
    /// pointed at the old instruction points at the new code; returns the labels of the rest.
    /// An empty `instrs` removes the instruction.
    pub fn replace(&mut self, at: Label, instrs: impl IntoIterator<Item = Instruction>) -> Result<Vec<Label>, IlError> {
        let i = self.index_of(at)?;
        let mut instrs = instrs.into_iter();
        let Some(first) = instrs.next() else {
            self.remove(at)?;
            return Ok(Vec::new());
        };
        self.code[i].1 = first;
        Ok(self.splice_at(i + 1, instrs))
    }

    /// Makes the body as small as its format allows, the other direction of what `encode`
    /// does on its own: every long branch whose target is in reach becomes short, and a fat
    /// header with nothing a tiny one cannot say (no locals, no sections, max stack at most 8,
    /// no flags beyond `InitLocals`, code under 64 bytes) becomes tiny. `encode` keeps forms as
    /// read, so call this after editing when the smaller form is wanted.
    pub fn compact(&mut self) -> Result<(), IlError> {
        // Start from every branch short; laying out widens exactly those out of reach.
        let original: Vec<OpCode> = self.code.iter().map(|(_, i)| i.opcode).collect();
        for (_, ins) in &mut self.code {
            if let Some(short) = ins.opcode.short_branch() {
                ins.opcode = short;
            }
        }
        let layout = match self.layout() {
            Ok(layout) => layout,
            Err(e) => {
                self.code.iter_mut().zip(original).for_each(|((_, ins), op)| ins.opcode = op);
                return Err(e);
            }
        };
        self.code.iter_mut().zip(&layout.opcodes).for_each(|((_, ins), op)| ins.opcode = *op);
        if let Some(fat) = self.fat {
            let plain = fat.flags & !(0xf000 | 0x3 | 0x8 | 0x10) == 0;
            if plain
                && fat.local_var_sig.0 == 0
                && self.clauses.is_empty()
                && self.sections_empty()
                && self.max_stack <= 8
                && layout.code_size < 64
            {
                self.fat = None;
                self.max_stack = 8;
            }
        }
        Ok(())
    }

    /// Points every reference to `from` at `to`.
    fn retarget(&mut self, from: Label, to: Label) {
        let refs = self.code.iter_mut().flat_map(|(_, ins)| ins.targets_mut().iter_mut());
        let clause_refs = self.clauses.iter_mut().flat_map(|c| c.labels_mut());
        for l in refs.chain(clause_refs) {
            if *l == from {
                *l = to;
            }
        }
    }
}

/// Appends `new` locals to a local-variable signature (`existing`, the bytes the body's
/// `LocalVarSigTok` names, or `None` for a body without locals): returns the new signature's
/// bytes, for `GetTokenFromSig`, and the slot index of the first new local.
///
/// ```
/// use corprof_sig::il::append_locals;
/// use corprof_sig::sig::Type;
/// let (sig, first) = append_locals(Some(&[0x07, 0x01, 0x08]), &[Type::String]).unwrap();
/// assert_eq!((sig, first), (vec![0x07, 0x02, 0x08, 0x0e], 1));
/// ```
pub fn append_locals(existing: Option<&[u8]>, new: &[Type]) -> Result<(Vec<u8>, u16), SigError> {
    let mut sig = match existing {
        Some(bytes) => LocalVarSig::decode(bytes)?,
        None => LocalVarSig::default(),
    };
    let first = sig.locals.len();
    sig.locals.extend_from_slice(new);
    // Local slots are 16-bit (`ldloc`'s operand); 0xffff is not a slot.
    if sig.locals.len() > 0xfffe {
        return Err(SigError { offset: 0, kind: crate::sig::SigErrorKind::ValueTooLarge(sig.locals.len() as u64) });
    }
    Ok((sig.encode()?, first as u16))
}
