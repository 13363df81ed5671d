//! Wrapping a body between begin and end code: the shape APM agents call CallTarget.

use super::*;
use crate::sig::{LocalVarSig, MethodSig, SigError, Type};

/// A method body being wrapped between begin code, run first, and end code, run however the
/// body ends (a value returned or an exception thrown), each guarded so that its own failure
/// never reaches the app:
///
/// ```text
/// try { <begin> } filter { pop; ldc.i4.1; endfilter } { pop; leave BODY }   // swallowed
/// BODY:
/// try {
///   try { <the original code, each `ret` now `stloc ret; leave END`> }
///   filter { stloc ex; ldc.i4.0; endfilter } { pop; rethrow }   // notes the exception, never catches
/// } finally {
///   try { <end> } filter { pop; ldc.i4.1; endfilter } { pop; leave F }   // swallowed
///   F: endfinally
/// }
/// END: ldloc ret; ret
/// ```
///
/// The exception is noted by a filter that declines it, so the first pass goes on to the
/// callers' handlers exactly as without the wrapping, and nothing is rethrown. Guards are
/// filters too, so they catch everything thrown (not only `System.Exception`) and need no
/// type token from the module. The body gets two locals (the return value when there is
/// one, and the exception as `object`, null when none escaped), plus those of
/// [`add_local`](Self::add_local); locals are zero-initialised, so the end code reads zero
/// from a local the begin code did not set. `tail.` prefixes are dropped (a tail call cannot
/// leave a protected region).
///
/// Begin and end code are straight-line (no branches, returns or throws), start with an empty
/// stack (what they leave on it is dropped) and may use the arguments and every local. [`finish`](Self::finish)
/// checks the whole body with [`MethodBody::verify`] before handing it back.
///
/// ```
/// use corprof_sig::il::{Instruction, MethodBody, OpCode, Wrapper};
/// use corprof_sig::sig::{MethodSig, Token, Type};
/// // static int F(int x) => x; and a handler `static void Seen(int)` behind a MemberRef.
/// let body = MethodBody::parse(&[0x0a, 0x02, 0x2a]).unwrap();
/// let method = MethodSig::decode(&[0x00, 0x01, 0x08, 0x08]).unwrap();
/// let seen = Token::new(Token::MEMBER_REF, 1);
/// let mut w = Wrapper::new(&body, &method, None).unwrap();
/// let ret = w.return_local().unwrap();
/// let begin = [Instruction::ldarg(0), Instruction::token(OpCode::CALL, seen)];
/// let end = [Instruction::ldloc(ret), Instruction::token(OpCode::CALL, seen)];
/// let wrapped = w.finish(begin, end, |t| (t == seen).then(|| MethodSig::decode(&[0x00, 0x01, 0x01, 0x08]).unwrap())).unwrap();
/// assert_eq!(wrapped.locals_signature(), [0x07, 0x02, 0x08, 0x1c]); // int32 ret, object ex
/// let body = wrapped.into_body(Token::new(Token::STANDALONE_SIG, 7));
/// assert_eq!(body.clauses().len(), 4);
/// ```
#[derive(Clone, Debug)]
pub struct Wrapper {
    body: MethodBody,
    locals: LocalVarSig,
    frame: Frame,
    ret: Option<u16>,
    exception: u16,
}

/// A wrapped body, checked, and its new locals.
#[derive(Clone, Debug)]
pub struct Wrapped {
    body: MethodBody,
    locals: Vec<u8>,
    frame: Frame,
}

/// Why a method is not wrapped: what it does that the wrapping cannot keep.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The body has no instructions.
    NoCode,
    /// The body uses `jmp`, which must run with no exception region around it.
    Jmp,
    /// The locals would pass the 65,534 a body can address.
    TooManyLocals,
}

/// Why [`Wrapper`] could not wrap a body.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum WrapError {
    /// The method does what the wrapping cannot keep.
    Refused(Refusal),
    /// Begin or end code that is not straight-line, or leaves a prefix dangling: this opcode.
    NotStraightLine(OpCode),
    /// The body, or the wrapped body, breaks a rule [`MethodBody::verify`] checks.
    Il(IlError),
    /// The locals' signature could not be read or written.
    Sig(SigError),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::NoCode => "the body has no code",
            Refusal::Jmp => "the body uses `jmp`, which cannot run inside an exception region",
            Refusal::TooManyLocals => "the body has too many locals to add the wrapper's",
        })
    }
}

impl fmt::Display for WrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WrapError::Refused(r) => write!(f, "not wrapped: {r}"),
            WrapError::NotStraightLine(op) => write!(f, "begin and end code must be straight-line: {op} is not"),
            WrapError::Il(e) => write!(f, "wrapped body: {e}"),
            WrapError::Sig(e) => write!(f, "locals: {e}"),
        }
    }
}

impl std::error::Error for WrapError {}

impl From<IlError> for WrapError {
    fn from(e: IlError) -> Self {
        WrapError::Il(e)
    }
}

impl From<SigError> for WrapError {
    fn from(e: SigError) -> Self {
        WrapError::Sig(e)
    }
}

/// The most locals a body can address (`ldloc`'s operand is 16-bit; 0xffff is not a slot).
const MAX_LOCALS: usize = 0xfffe;

impl Wrapper {
    /// Starts wrapping `body`, a method with signature `method` and locals `locals` (the bytes
    /// the body's `LocalVarSigTok` names; `None` for a body without locals).
    pub fn new(body: &MethodBody, method: &MethodSig, locals: Option<&[u8]>) -> Result<Wrapper, WrapError> {
        if body.is_empty() {
            return Err(WrapError::Refused(Refusal::NoCode));
        }
        if body.code.iter().any(|(_, i)| i.opcode == OpCode::JMP) {
            return Err(WrapError::Refused(Refusal::Jmp));
        }
        let locals = match locals {
            Some(bytes) => LocalVarSig::decode(bytes)?,
            None => LocalVarSig::default(),
        };
        let frame = Frame::of(method, Some(&locals));
        let mut wrapper = Wrapper { body: body.clone(), locals, frame, ret: None, exception: 0 };
        if frame.returns {
            let mut ret = method.ret.clone();
            // Modifiers say how the value is used by callers; the local only holds it.
            while let Type::Modified { ty, .. } = ret {
                ret = *ty;
            }
            wrapper.ret = Some(wrapper.add_local(ret)?);
        }
        wrapper.exception = wrapper.add_local(Type::Object)?;
        Ok(wrapper)
    }

    /// Adds a local of type `ty` (for the begin code to hand state to the end code) and
    /// returns its index.
    pub fn add_local(&mut self, ty: Type) -> Result<u16, WrapError> {
        let index = self.locals.locals.len();
        if index >= MAX_LOCALS {
            return Err(WrapError::Refused(Refusal::TooManyLocals));
        }
        self.locals.locals.push(ty);
        self.frame.locals += 1;
        Ok(index as u16)
    }

    /// The local holding the return value when the end code runs (`None` for a method
    /// returning `void`); the end code may store a new one.
    pub fn return_local(&self) -> Option<u16> {
        self.ret
    }

    /// The local holding the exception leaving the body when the end code runs (an `object`,
    /// null when the body returned).
    pub fn exception_local(&self) -> u16 {
        self.exception
    }

    /// The frame the wrapped body runs in: the method's arguments and every local.
    pub fn frame(&self) -> Frame {
        self.frame
    }

    /// Wraps the body with `begin` and `end` (either may be empty) and checks the result with
    /// [`MethodBody::verify`]; `call_sig` gives the signature behind each call's token, the
    /// original code's and the begin and end code's. The body's max stack is set to what it
    /// needs.
    pub fn finish(
        self,
        begin: impl IntoIterator<Item = Instruction>,
        end: impl IntoIterator<Item = Instruction>,
        call_sig: impl Fn(Token) -> Option<MethodSig>,
    ) -> Result<Wrapped, WrapError> {
        let (begin, end) = (straight(begin.into_iter().collect())?, straight(end.into_iter().collect())?);
        let Wrapper { mut body, locals, frame, ret, exception } = self;
        let original: Vec<Label> = body.labels().collect();
        let leave = |to: Label| Instruction::branch(OpCode::LEAVE, to);
        let placeholder = Label::END;

        // The tail, after the original code: the exception note, the finally, the return.
        let note = body.push(Instruction::stloc(exception));
        body.push(Instruction::ldc_i4(0));
        body.push(Instruction::simple(OpCode::ENDFILTER));
        let note_handler = body.push(Instruction::simple(OpCode::POP));
        body.push(Instruction::simple(OpCode::RETHROW));
        let mut end_guard = None;
        let finally_start = if end.is_empty() {
            None
        } else {
            let start = body.push(end[0].clone());
            end[1..].iter().for_each(|i| {
                body.push(i.clone());
            });
            let leave_try = body.push(leave(placeholder));
            let filter = body.push(Instruction::simple(OpCode::POP));
            body.push(Instruction::ldc_i4(1));
            body.push(Instruction::simple(OpCode::ENDFILTER));
            let handler = body.push(Instruction::simple(OpCode::POP));
            let leave_handler = body.push(leave(placeholder));
            end_guard = Some((start, filter, handler, [leave_try, leave_handler]));
            Some(start)
        };
        let endfinally = body.push(Instruction::simple(OpCode::ENDFINALLY));
        let finally_start = finally_start.unwrap_or(endfinally);
        let the_end = push_return(&mut body, ret);
        if let Some((_, _, _, leaves)) = end_guard {
            for l in leaves {
                if let Some(ins) = body.get_mut(l) {
                    ins.operand = Operand::Branch(endfinally);
                }
            }
        }
        // A region of the original code that ran to the end of the code ends where the tail
        // starts.
        for c in &mut body.clauses {
            for l in c.labels_mut() {
                if *l == Label::END {
                    *l = note;
                }
            }
        }

        // The original code: every return goes through the finally.
        let first = leave_on_return(&mut body, &original, ret, None, the_end, note)?;

        // The begin code, guarded, before everything.
        let mut clauses = std::mem::take(&mut body.clauses);
        if !begin.is_empty() {
            let n = begin.len();
            let guard = begin.into_iter().chain([
                leave(first),
                Instruction::simple(OpCode::POP),
                Instruction::ldc_i4(1),
                Instruction::simple(OpCode::ENDFILTER),
                Instruction::simple(OpCode::POP),
                leave(first),
            ]);
            let labels = body.insert_before(first, guard)?;
            let (filter, handler) = (labels[n + 1], labels[n + 4]);
            clauses.push(Clause::new(ClauseKind::Filter(filter), labels[0], filter, handler, first));
        }
        clauses.push(Clause::new(ClauseKind::Filter(note), first, note, note_handler, finally_start));
        if let Some((start, filter, handler, _)) = end_guard {
            clauses.push(Clause::new(ClauseKind::Filter(filter), start, filter, handler, endfinally));
        }
        clauses.push(Clause::new(ClauseKind::Finally, first, finally_start, finally_start, the_end));
        body.clauses = clauses;
        body.set_init_locals(true);

        let locals_bytes = locals.encode()?;
        let max = body.verify(frame, call_sig)?;
        body.max_stack = max;
        Ok(Wrapped { body, locals: locals_bytes, frame })
    }
    /// Wraps the body with `begin` and `end` code that cannot throw — calls into code that
    /// catches its own failures, such as native functions — so neither is guarded, and the
    /// exception is not noted. The end code runs however the body ends, once, in a finally
    /// handler; `end` gets the index of an `int32` local that holds 1 there when the body
    /// returned and 0 when an exception is leaving it (which then goes on to the caller). One
    /// exception region instead of [`finish`](Self::finish)'s four, and one copy of the end
    /// code, so less for the JIT to compile:
    ///
    /// ```text
    /// <begin>
    /// try { <the original code, each `ret` now `stloc ret; ldc.i4.1; stloc returned; leave END`> }
    /// finally { <end> endfinally }
    /// END: ldloc ret; ret
    /// ```
    ///
    /// The exception local stays null. Begin and end code follow [`finish`](Self::finish)'s
    /// rules; the result is checked the same way.
    ///
    /// ```
    /// use corprof_sig::il::{ClauseKind, Instruction, MethodBody, OpCode, Wrapper};
    /// use corprof_sig::sig::{MethodSig, Token};
    /// // static int F(int x) => x; and a native `static void Seen(int returned)` behind a MemberRef.
    /// let body = MethodBody::parse(&[0x0a, 0x02, 0x2a]).unwrap();
    /// let method = MethodSig::decode(&[0x00, 0x01, 0x08, 0x08]).unwrap();
    /// let seen = Token::new(Token::MEMBER_REF, 1);
    /// let w = Wrapper::new(&body, &method, None).unwrap();
    /// let end = |returned: u16| [Instruction::ldloc(returned), Instruction::token(OpCode::CALL, seen)];
    /// let wrapped = w.finish_unguarded([], end, |t| (t == seen).then(|| MethodSig::decode(&[0x00, 0x01, 0x01, 0x08]).unwrap())).unwrap();
    /// // int32 ret, object ex, int32 returned
    /// assert_eq!(wrapped.locals_signature(), [0x07, 0x03, 0x08, 0x1c, 0x08]);
    /// let body = wrapped.into_body(Token::new(Token::STANDALONE_SIG, 7));
    /// assert_eq!(body.clauses().len(), 1);
    /// assert_eq!(body.clauses()[0].kind, ClauseKind::Finally);
    /// ```
    pub fn finish_unguarded<E: IntoIterator<Item = Instruction>>(
        mut self,
        begin: impl IntoIterator<Item = Instruction>,
        end: impl FnOnce(u16) -> E,
        call_sig: impl Fn(Token) -> Option<MethodSig>,
    ) -> Result<Wrapped, WrapError> {
        let returned = self.add_local(Type::I4)?;
        let begin = straight(begin.into_iter().collect())?;
        let end = straight(end(returned).into_iter().collect())?;
        let Wrapper { mut body, locals, frame, ret, .. } = self;

        // Built in one pass, into one allocation: the begin code, the original code (each `ret`
        // replaced, `tail.` dropped), the finally, the return. Original instructions keep their
        // labels (the first of a `ret`'s replacement takes the `ret`'s), so what named them
        // still does.
        let original = std::mem::take(&mut body.code);
        let returns = original.iter().filter(|(_, i)| i.opcode == OpCode::RET).count();
        let per_return = usize::from(ret.is_some()) + 3;
        let mut code = Vec::with_capacity(begin.len() + original.len() + returns * per_return + end.len() + 3);
        let mut next = body.next_label;
        let mut fresh = || {
            let l = Label(next);
            next += 1;
            l
        };
        let finally = fresh();
        let endfinally = if end.is_empty() { finally } else { fresh() };
        let the_end = fresh();
        let last = if ret.is_some() { fresh() } else { the_end };
        for ins in begin {
            code.push((fresh(), ins));
        }
        // `tail.` prefixes dropped (a tail call cannot leave a protected region): what named
        // one names the instruction after it.
        let mut dropped: Vec<(Label, Label)> = Vec::new();
        let mut pending = 0;
        let mut first = None;
        for (label, ins) in original {
            if ins.opcode == OpCode::TAIL {
                dropped.push((label, Label::END));
                pending += 1;
                continue;
            }
            let n = dropped.len();
            for d in &mut dropped[n - pending..] {
                d.1 = label;
            }
            pending = 0;
            first.get_or_insert(label);
            if ins.opcode == OpCode::RET {
                let mut replacement = ret.map(Instruction::stloc).into_iter().chain([
                    Instruction::ldc_i4(1),
                    Instruction::stloc(returned),
                    Instruction::branch(OpCode::LEAVE, the_end),
                ]);
                if let Some(head) = replacement.next() {
                    code.push((label, head));
                }
                code.extend(replacement.map(|r| (fresh(), r)));
            } else {
                code.push((label, ins));
            }
        }
        let n = dropped.len();
        for d in &mut dropped[n - pending..] {
            d.1 = finally;
        }
        let first = first.unwrap_or(finally);
        let mut end = end.into_iter();
        if let Some(head) = end.next() {
            code.push((finally, head));
            code.extend(end.map(|e| (fresh(), e)));
        }
        code.push((endfinally, Instruction::simple(OpCode::ENDFINALLY)));
        if let Some(r) = ret {
            code.push((the_end, Instruction::ldloc(r)));
        }
        code.push((last, Instruction::simple(OpCode::RET)));
        body.next_label = next;
        body.code = code;
        // A region of the original code that ran to the end of the code ends where the tail
        // starts.
        let retarget = |l: &mut Label| {
            if let Some(&(_, to)) = dropped.iter().find(|(from, _)| from == l) {
                *l = to;
            }
        };
        for l in body.clauses.iter_mut().flat_map(|c| c.labels_mut()) {
            if *l == Label::END {
                *l = finally;
            }
            retarget(l);
        }
        if !dropped.is_empty() {
            body.code.iter_mut().flat_map(|(_, ins)| ins.targets_mut().iter_mut()).for_each(retarget);
        }
        body.clauses.push(Clause::new(ClauseKind::Finally, first, finally, finally, the_end));
        body.set_init_locals(true);

        let locals_bytes = locals.encode()?;
        let max = body.verify(frame, call_sig)?;
        body.max_stack = max;
        Ok(Wrapped { body, locals: locals_bytes, frame })
    }
}

/// Appends the method's one return, of the value in `ret` (if any), and returns its label.
fn push_return(body: &mut MethodBody, ret: Option<u16>) -> Label {
    let first = ret.map(|r| body.push(Instruction::ldloc(r)));
    let last = body.push(Instruction::simple(OpCode::RET));
    first.unwrap_or(last)
}

/// Begin and end code must be straight-line: no branches, returns or throws, no dangling prefix.
fn straight(code: Vec<Instruction>) -> Result<Vec<Instruction>, WrapError> {
    for ins in &code {
        let flow = ins.opcode.info().flow;
        if !matches!(flow, Flow::Next | Flow::Call | Flow::Prefix) || !ins.operand_fits() {
            return Err(WrapError::NotStraightLine(ins.opcode));
        }
    }
    match code.last() {
        Some(last) if last.opcode.info().flow == Flow::Prefix => Err(WrapError::NotStraightLine(last.opcode)),
        _ => Ok(code),
    }
}

/// Makes every `ret` of the original code (labels `original`) store the value in `ret`, set
/// `returned` (when given) to 1 and leave to `the_end`, and drops `tail.` prefixes (a tail call cannot leave a protected
/// region). Returns the label of the original code's first instruction now (`tail` moved
/// what named a removed first prefix on; `fallback` if nothing of it is left).
fn leave_on_return(
    body: &mut MethodBody,
    original: &[Label],
    ret: Option<u16>,
    returned: Option<u16>,
    the_end: Label,
    fallback: Label,
) -> Result<Label, WrapError> {
    let first = original[0];
    for &l in original {
        match body.get(l).map(|i| i.opcode) {
            Some(OpCode::RET) => {
                let store = ret.map(Instruction::stloc);
                let mark = returned.into_iter().flat_map(|r| [Instruction::ldc_i4(1), Instruction::stloc(r)]);
                body.replace(l, store.into_iter().chain(mark).chain([Instruction::branch(OpCode::LEAVE, the_end)]))?;
            }
            Some(OpCode::TAIL) => {
                body.remove(l)?;
            }
            _ => {}
        }
    }
    Ok(if body.get(first).is_some() { first } else { body.labels().find(|l| original.contains(l)).unwrap_or(fallback) })
}

impl Wrapped {
    /// The new local-variable signature, for `GetTokenFromSig`.
    pub fn locals_signature(&self) -> &[u8] {
        &self.locals
    }

    /// The frame the wrapped body runs in.
    pub fn frame(&self) -> Frame {
        self.frame
    }

    /// The body, naming its new locals by `locals_token` (what `GetTokenFromSig` gave for
    /// [`locals_signature`](Self::locals_signature)).
    pub fn into_body(mut self, locals_token: Token) -> MethodBody {
        self.body.set_local_var_sig(locals_token);
        self.body
    }
}
