//! The stack depth a body needs.

use super::*;
use crate::sig::{MethodSig, Type};

impl MethodBody {
    /// The deepest the evaluation stack gets, following every path from the start and from
    /// each handler and filter (which start with the exception on the stack, finally and fault
    /// handlers with nothing). `call_sig` gives the signature behind a call's token (`call`,
    /// `callvirt`, `newobj`: a `MethodDef`, `MemberRef` or `MethodSpec`; `calli`: a
    /// `StandAloneSig`), which says how much the call pops and pushes.
    pub fn compute_max_stack(&self, call_sig: impl Fn(Token) -> Option<MethodSig>) -> Result<u16, IlError> {
        // Positions decide; offsets are laid out only to place an error.
        let max = match self.positions().and_then(|p| self.depths(&p, &call_sig)) {
            Ok((_, max)) => max,
            Err(_) => self.depths(&self.layout()?, &call_sig)?.1,
        };
        u16::try_from(max).or(err(0, IlErrorKind::TooLarge))
    }

    /// The stack depth before each instruction (`None`: no path reaches it) and the deepest
    /// the stack gets.
    pub(super) fn depths(
        &self,
        layout: &layout::Layout,
        call_sig: &impl Fn(Token) -> Option<MethodSig>,
    ) -> Result<(Vec<Option<u32>>, u32), IlError> {
        let n = self.code.len();
        let at = |i: usize| layout.at(i);
        let mut depth: Vec<Option<u32>> = vec![None; n];
        let mut work: Vec<(usize, u32)> = Vec::with_capacity(8 + self.clauses.len());
        let entry = |label: Label, d: u32, work: &mut Vec<(usize, u32)>| {
            if let Some(i) = layout.position(label) {
                work.push((i, d));
            }
        };
        if n > 0 {
            work.push((0, 0));
        }
        for c in &self.clauses {
            let exception = u32::from(matches!(c.kind, ClauseKind::Catch(_) | ClauseKind::Filter(_)));
            entry(c.handler_start, exception, &mut work);
            if let ClauseKind::Filter(f) = c.kind {
                entry(f, 1, &mut work);
            }
        }
        let mut max = 0u32;
        while let Some((i, d)) = work.pop() {
            match depth[i] {
                Some(seen) if seen == d => continue,
                Some(_) => return err(at(i), IlErrorKind::StackMismatch),
                None => depth[i] = Some(d),
            }
            max = max.max(d);
            let ins = &self.code[i].1;
            let info = ins.opcode.info();
            let (pops, pushes) = match (info.pops, info.pushes) {
                (StackCount::Fixed(p), StackCount::Fixed(q)) => (u32::from(p), u32::from(q)),
                _ if ins.opcode == OpCode::RET => (d, 0),
                _ => {
                    let Operand::Token(t) = ins.operand else {
                        return err(at(i), IlErrorKind::OperandMismatch(ins.opcode));
                    };
                    let sig = call_sig(t).ok_or(IlError { offset: at(i), kind: IlErrorKind::UnknownCall(t) })?;
                    call_effect(ins.opcode, &sig)
                }
            };
            let Some(after) = d.checked_sub(pops) else {
                return err(at(i), IlErrorKind::StackUnderflow);
            };
            let after = after + pushes;
            max = max.max(after);
            let next = |work: &mut Vec<(usize, u32)>| {
                if i + 1 < n {
                    work.push((i + 1, after));
                }
            };
            match info.flow {
                Flow::Next | Flow::Break | Flow::Call | Flow::Prefix => next(&mut work),
                Flow::CondBranch => {
                    next(&mut work);
                    ins.targets().iter().for_each(|t| entry(*t, after, &mut work));
                }
                Flow::Branch => ins.targets().iter().for_each(|t| entry(*t, after, &mut work)),
                Flow::Leave => ins.targets().iter().for_each(|t| entry(*t, 0, &mut work)),
                Flow::Return | Flow::Throw => {}
            }
        }
        Ok((depth, max))
    }

    /// [`compute_max_stack`](Self::compute_max_stack), and sets the header's max stack to it.
    pub fn recompute_max_stack(&mut self, call_sig: impl Fn(Token) -> Option<MethodSig>) -> Result<u16, IlError> {
        let max = self.compute_max_stack(call_sig)?;
        self.max_stack = max;
        Ok(max)
    }
}

/// What a call pops and pushes, by its signature.
fn call_effect(opcode: OpCode, sig: &MethodSig) -> (u32, u32) {
    let mut ret = &sig.ret;
    while let Type::Modified { ty, .. } = ret {
        ret = ty;
    }
    let returns = u32::from(*ret != Type::Void);
    let args = sig.params.len() as u32;
    // An explicit `this` is among the parameters already.
    let this = u32::from(sig.call_conv.has_this() && !sig.call_conv.explicit_this());
    match opcode {
        OpCode::NEWOBJ => (args, 1),
        OpCode::CALLI => (args + this + 1, returns),
        _ => (args + this, returns),
    }
}
