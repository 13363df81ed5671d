//! The structural rules a body must keep for the JIT to accept it (ECMA-335 II.19, III.1.7):
//! stack depths by data flow, exception regions nested and listed inner first, control entering
//! and leaving regions only where the rules let it, and indexes within the frame.

use super::*;
use crate::sig::{LocalVarSig, MethodSig};

/// The frame a body runs in: what [`MethodBody::verify`] checks indexes and `ret` against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Arguments, `this` included.
    pub args: u32,
    /// Locals.
    pub locals: u32,
    /// Whether the method returns a value (`ret` leaves one on the stack).
    pub returns: bool,
}

impl Frame {
    /// The frame of a method with signature `method` and locals `locals` (`None`: none).
    pub fn of(method: &MethodSig, locals: Option<&LocalVarSig>) -> Frame {
        let this = u32::from(method.call_conv.has_this() && !method.call_conv.explicit_this());
        Frame {
            args: method.params.len() as u32 + this,
            locals: locals.map_or(0, |l| l.locals.len() as u32),
            returns: !returns_void(method),
        }
    }
}

fn returns_void(method: &MethodSig) -> bool {
    let mut ret = &method.ret;
    while let crate::sig::Type::Modified { ty, .. } = ret {
        ret = ty;
    }
    *ret == crate::sig::Type::Void
}

/// What a region of code is, for the rules of entering and leaving it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Try,
    /// A catch or filter clause's handler.
    Catch,
    Filter,
    /// A finally or fault clause's handler.
    Finally,
}

/// A region as instruction positions, `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    start: usize,
    end: usize,
    kind: Kind,
    clause: usize,
}

impl Block {
    fn contains(&self, other: &Block) -> bool {
        self.start <= other.start && other.end <= self.end
    }
    fn disjoint(&self, other: &Block) -> bool {
        self.end <= other.start || other.end <= self.start
    }
    fn same_range(&self, other: &Block) -> bool {
        self.start == other.start && self.end == other.end
    }
}

impl MethodBody {
    /// Checks what the JIT would refuse a body for, short of types: the stack depth at every
    /// instruction is one number whatever the path (and 0 where a protected region starts, 1
    /// at `endfilter`, the return value alone at `ret`); exception regions are non-empty, each
    /// clause's try, handler and filter apart, any two clauses' regions apart or nested (or two
    /// trys the same), and a clause listed before every clause enclosing it; control enters a
    /// handler or filter only from the runtime and a protected region only at its first
    /// instruction, leaves a region only by `leave` (never a finally, fault or filter), `throw`,
    /// `rethrow`, `endfinally` or `endfilter`, and never runs off the end of the code; `ret` and
    /// `jmp` are outside every region, `endfinally` directly in a finally or fault handler,
    /// `endfilter` directly in a filter, `rethrow` in a catch handler, `localloc` outside
    /// handlers; every argument and local index is within `frame`.
    ///
    /// Returns the stack depth the body needs (as [`compute_max_stack`](Self::compute_max_stack)).
    /// Checked are the instructions reachable from the start or a handler, as the JIT reads
    /// them; indexes and placement everywhere.
    pub fn verify(&self, frame: Frame, call_sig: impl Fn(Token) -> Option<MethodSig>) -> Result<u16, IlError> {
        // Whether the body keeps the rules needs only where each label is; where each
        // instruction lands, for an error's offset, is laid out only when there is an error.
        if let Ok(positions) = self.positions()
            && let Ok(max) = self.check(&positions, frame, &call_sig)
        {
            return Ok(max);
        }
        self.check(&self.layout()?, frame, &call_sig)
    }

    /// [`verify`](Self::verify) over `layout`: its positions decide; its offsets, when it has
    /// them, place an error.
    fn check(
        &self,
        layout: &layout::Layout,
        frame: Frame,
        call_sig: &impl Fn(Token) -> Option<MethodSig>,
    ) -> Result<u16, IlError> {
        let n = self.code.len();
        let at = |i: usize| layout.at(i);
        let blocks = self.blocks(layout)?;
        let regions = Regions::of(&blocks, n);
        // Debug builds check the bitmask answers against the general ones on every body their
        // tests verify, all of CoreLib's among them.
        #[cfg(debug_assertions)]
        let general = Regions::chains(&blocks, n);
        for (i, (_, ins)) in self.code.iter().enumerate() {
            #[cfg(debug_assertions)]
            {
                assert_eq!(regions.innermost(&blocks, i), general.innermost(&blocks, i), "at {i}");
                assert_eq!(regions.innermost_not_try(&blocks, i), general.innermost_not_try(&blocks, i), "at {i}");
            }
            let misplaced = || err(at(i), IlErrorKind::Misplaced(ins.opcode));
            if let Some(index) = ins.var_index() {
                let (limit, bad): (u32, fn(u16) -> IlErrorKind) = match index {
                    VarIndex::Arg(_) => (frame.args, IlErrorKind::BadArgument),
                    VarIndex::Local(_) => (frame.locals, IlErrorKind::BadLocal),
                };
                let (VarIndex::Arg(v) | VarIndex::Local(v)) = index;
                if u32::from(v) >= limit {
                    return err(at(i), bad(v));
                }
            }
            match ins.opcode {
                OpCode::RET | OpCode::JMP if regions.innermost(&blocks, i).is_some() => return misplaced(),
                OpCode::ENDFINALLY if regions.innermost(&blocks, i) != Some(Kind::Finally) => return misplaced(),
                OpCode::ENDFILTER if regions.innermost(&blocks, i) != Some(Kind::Filter) => return misplaced(),
                OpCode::RETHROW if regions.innermost_not_try(&blocks, i) != Some(Kind::Catch) => return misplaced(),
                OpCode::LOCALLOC if regions.innermost_not_try(&blocks, i).is_some() => return misplaced(),
                _ => {}
            }
            // Where control may go from here, and how.
            let info = ins.opcode.info();
            let falls = matches!(info.flow, Flow::Next | Flow::Break | Flow::Call | Flow::Prefix | Flow::CondBranch);
            if falls && i + 1 == n {
                return err(at(i), IlErrorKind::FallsOffEnd);
            }
            let leave = info.flow == Flow::Leave;
            let transfer = |j: usize| {
                let may = regions.may_transfer(&blocks, i, j, leave);
                #[cfg(debug_assertions)]
                assert_eq!(may, general.may_transfer(&blocks, i, j, leave), "{i} to {j}");
                if may { Ok(()) } else { err(at(i), IlErrorKind::BadTransfer(at(j))) }
            };
            if falls {
                transfer(i + 1)?;
            }
            for t in ins.targets() {
                // A target at the end of the code is past every instruction: nothing runs there.
                match layout.position(*t) {
                    Some(p) => transfer(p)?,
                    None if *t == Label::END => return err(at(i), IlErrorKind::FallsOffEnd),
                    None => return err(at(i), IlErrorKind::UnknownLabel(*t)),
                }
            }
        }

        let (depths, max) = self.depths(layout, call_sig)?;
        for (i, (_, ins)) in self.code.iter().enumerate() {
            let Some(d) = depths[i] else { continue };
            let expect = |expected: u32| {
                if d == expected { Ok(()) } else { err(at(i), IlErrorKind::StackDepth { expected, found: d }) }
            };
            match ins.opcode {
                OpCode::RET => expect(u32::from(frame.returns))?,
                OpCode::ENDFILTER => expect(1)?,
                _ => {}
            }
            if blocks.iter().any(|b| b.kind == Kind::Try && b.start == i) {
                expect(0)?;
            }
        }
        u16::try_from(max).or(err(0, IlErrorKind::TooLarge))
    }

    /// Every clause's regions as positions, sorted outer first, checked for shape, nesting and
    /// order; identical try ranges (one try, several handlers) are one block.
    fn blocks(&self, layout: &layout::Layout) -> Result<Vec<Block>, IlError> {
        let n = self.code.len();
        let pos = |k: usize, l: Label| -> Result<usize, IlError> {
            if l == Label::END {
                Ok(n)
            } else {
                layout.position(l).ok_or(IlError { offset: k, kind: IlErrorKind::UnknownLabel(l) })
            }
        };
        let mut blocks: Vec<Block> = Vec::with_capacity(self.clauses.len() * 3);
        for (k, c) in self.clauses.iter().enumerate() {
            let range = |start: Label, end: Label, kind: Kind| -> Result<Block, IlError> {
                let (start, end) = (pos(k, start)?, pos(k, end)?);
                if start >= end {
                    return err(k, IlErrorKind::BadClause);
                }
                Ok(Block { start, end, kind, clause: k })
            };
            let try_block = range(c.try_start, c.try_end, Kind::Try)?;
            let handler_kind = match c.kind {
                ClauseKind::Catch(_) | ClauseKind::Filter(_) => Kind::Catch,
                ClauseKind::Finally | ClauseKind::Fault => Kind::Finally,
            };
            let handler = range(c.handler_start, c.handler_end, handler_kind)?;
            // The filter runs from its start to the handler's.
            let filter = match c.kind {
                ClauseKind::Filter(f) => Some(range(f, c.handler_start, Kind::Filter)?),
                _ => None,
            };
            let all = [try_block, handler, filter.unwrap_or(handler)];
            let own = &all[..if filter.is_some() { 3 } else { 2 }];
            for (a, x) in own.iter().enumerate() {
                if own[a + 1..].iter().any(|y| !x.disjoint(y)) {
                    return err(k, IlErrorKind::ClauseOverlap(k));
                }
            }
            for &block in own {
                if block.kind == Kind::Try && blocks.iter().any(|b| b.kind == Kind::Try && b.same_range(&block)) {
                    continue;
                }
                for b in &blocks {
                    if b.disjoint(&block) {
                        continue;
                    }
                    // An earlier clause's region overlapping this one must lie within it.
                    if !block.contains(b) || (block.same_range(b) && block.kind != Kind::Try) {
                        return err(
                            k,
                            if b.contains(&block) {
                                IlErrorKind::ClauseOrder(k)
                            } else {
                                IlErrorKind::ClauseOverlap(k)
                            },
                        );
                    }
                }
                blocks.push(block);
            }
        }
        // Outer first: longer ranges first; of equal ranges, the later clause is the outer one.
        blocks.sort_by(|a, b| (b.end - b.start).cmp(&(a.end - a.start)).then(b.clause.cmp(&a.clause)));
        Ok(blocks)
    }
}

/// Whether control may go from an instruction in the regions `from` to the instruction `to`
/// (position `j`) in the regions `into`, both innermost first: it may leave regions only by
/// `leave`, and never a filter, finally or fault handler; it may enter only protected regions,
/// at their first instruction.
fn may_transfer(blocks: &[Block], from: &[usize], into: &[usize], j: usize, leave: bool) -> bool {
    // Most transfers stay within the same regions.
    if from == into {
        return true;
    }
    let common = from.iter().rev().zip(into.iter().rev()).take_while(|(a, b)| a == b).count();
    let exited = &from[..from.len() - common];
    let entered = &into[..into.len() - common];
    let exits_ok =
        exited.is_empty() || (leave && exited.iter().all(|&b| matches!(blocks[b].kind, Kind::Try | Kind::Catch)));
    exits_ok && entered.iter().all(|&b| blocks[b].kind == Kind::Try && blocks[b].start == j)
}

/// Which regions hold each instruction, for the rules of entering and leaving them: a bitmask
/// per instruction when there are at most 64 regions (nearly every body: one load and a few
/// bit operations per question), else each instruction's list of regions.
enum Regions {
    /// Bit `b` of instruction `i`'s mask: block `b` holds it.
    Masks { masks: Vec<u64>, try_blocks: u64, catch_blocks: u64 },
    /// Instruction `i`'s regions, innermost first: `members[starts[i]..starts[i + 1]]`.
    Chains { starts: Vec<usize>, members: Vec<usize> },
}

impl Regions {
    fn of(blocks: &[Block], n: usize) -> Regions {
        if blocks.len() > 64 {
            return Regions::chains(blocks, n);
        }
        let mut masks = vec![0u64; n];
        let (mut try_blocks, mut catch_blocks) = (0, 0);
        for (b, block) in blocks.iter().enumerate() {
            let bit = 1u64 << b;
            for mask in &mut masks[block.start..block.end] {
                *mask |= bit;
            }
            match block.kind {
                Kind::Try => try_blocks |= bit,
                Kind::Catch => catch_blocks |= bit,
                Kind::Filter | Kind::Finally => {}
            }
        }
        Regions::Masks { masks, try_blocks, catch_blocks }
    }

    fn chains(blocks: &[Block], n: usize) -> Regions {
        // One allocation for all, not one per instruction.
        let mut starts = vec![0usize; n + 1];
        for block in blocks {
            for count in &mut starts[block.start + 1..block.end + 1] {
                *count += 1;
            }
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        let mut members = vec![0usize; starts[n]];
        let mut filled = starts.clone();
        // Blocks are sorted outer first (see `blocks`): each instruction's come in that order,
        // and are reversed below to innermost first.
        for (b, block) in blocks.iter().enumerate() {
            for fill in &mut filled[block.start..block.end] {
                members[*fill] = b;
                *fill += 1;
            }
        }
        for i in 0..n {
            members[starts[i]..starts[i + 1]].reverse();
        }
        Regions::Chains { starts, members }
    }

    /// The kind of the innermost region holding instruction `i` (`None`: outside every one).
    /// Blocks are sorted outer first, so of those holding an instruction, the innermost is the
    /// last.
    fn innermost(&self, blocks: &[Block], i: usize) -> Option<Kind> {
        match self {
            Regions::Masks { masks, .. } => highest(masks[i]).map(|b| blocks[b].kind),
            Regions::Chains { starts, members } => members[starts[i]..starts[i + 1]].first().map(|&b| blocks[b].kind),
        }
    }

    /// The kind of the innermost region holding `i` that is not a protected one.
    fn innermost_not_try(&self, blocks: &[Block], i: usize) -> Option<Kind> {
        match self {
            Regions::Masks { masks, try_blocks, .. } => highest(masks[i] & !try_blocks).map(|b| blocks[b].kind),
            Regions::Chains { starts, members } => {
                members[starts[i]..starts[i + 1]].iter().map(|&b| blocks[b].kind).find(|k| *k != Kind::Try)
            }
        }
    }

    /// Whether control may go from instruction `i` to instruction `j`; see [`may_transfer`].
    fn may_transfer(&self, blocks: &[Block], i: usize, j: usize, leave: bool) -> bool {
        match self {
            Regions::Masks { masks, try_blocks, catch_blocks } => {
                let (from, into) = (masks[i], masks[j]);
                // Regions nest, so those holding an instruction are a path from the outermost
                // in: what the two share is their common outer part.
                let (exited, mut entered) = (from & !into, into & !from);
                let exits_ok = exited == 0 || (leave && exited & !(try_blocks | catch_blocks) == 0);
                if !exits_ok || entered & !try_blocks != 0 {
                    return false;
                }
                while let Some(b) = highest(entered) {
                    if blocks[b].start != j {
                        return false;
                    }
                    entered &= !(1 << b);
                }
                true
            }
            Regions::Chains { starts, members } => {
                let chain = |i: usize| &members[starts[i]..starts[i + 1]];
                may_transfer(blocks, chain(i), chain(j), j, leave)
            }
        }
    }
}

/// The highest bit set, if any.
fn highest(mask: u64) -> Option<usize> {
    (mask != 0).then(|| 63 - mask.leading_zeros() as usize)
}

/// An argument or local an instruction names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum VarIndex {
    Arg(u16),
    Local(u16),
}

impl Instruction {
    /// The argument or local this instruction reads, writes or takes the address of.
    pub(super) fn var_index(&self) -> Option<VarIndex> {
        let v = match self.operand {
            Operand::Var(v) => v,
            _ => 0,
        };
        Some(match self.opcode {
            OpCode::LDARG_0 | OpCode::LDARG_1 | OpCode::LDARG_2 | OpCode::LDARG_3 => {
                VarIndex::Arg(self.opcode.value() - OpCode::LDARG_0.value())
            }
            OpCode::LDLOC_0 | OpCode::LDLOC_1 | OpCode::LDLOC_2 | OpCode::LDLOC_3 => {
                VarIndex::Local(self.opcode.value() - OpCode::LDLOC_0.value())
            }
            OpCode::STLOC_0 | OpCode::STLOC_1 | OpCode::STLOC_2 | OpCode::STLOC_3 => {
                VarIndex::Local(self.opcode.value() - OpCode::STLOC_0.value())
            }
            OpCode::LDARG_S | OpCode::LDARGA_S | OpCode::STARG_S | OpCode::LDARG | OpCode::LDARGA | OpCode::STARG => {
                VarIndex::Arg(v)
            }
            OpCode::LDLOC_S | OpCode::LDLOCA_S | OpCode::STLOC_S | OpCode::LDLOC | OpCode::LDLOCA | OpCode::STLOC => {
                VarIndex::Local(v)
            }
            _ => return None,
        })
    }
}
