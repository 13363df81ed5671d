//! What a hook gets besides its data: [`HookFrame`], and through it the arguments and the return
//! value in with-info mode.

use super::sig::{ElementValue, MethodSignature};
use crate::types::{
    COR_PRF_ELT_INFO, COR_PRF_FRAME_INFO, COR_PRF_FUNCTION_ARGUMENT_INFO, COR_PRF_FUNCTION_ARGUMENT_RANGE, FunctionID,
};
use crate::{HResult, ProfilerInfo, Result};
use std::marker::PhantomData;

/// Which hook a [`HookFrame`] belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookKind {
    /// The function is entered.
    Enter,
    /// The function returns.
    Leave,
    /// The function leaves by a tail call.
    Tailcall,
}

/// The call a hook runs in. In [`HookMode::WithInfo`](super::HookMode::WithInfo) it names the
/// function and reads its arguments (at enter) and return value (at leave); in
/// [`HookMode::Fast`](super::HookMode::Fast) it carries nothing and those methods answer
/// `E_UNEXPECTED`.
///
/// Only valid during the hook: it borrows the runtime's frame handle, so it is neither `Send`
/// nor constructible outside corprof, and what it lends out cannot outlive it.
pub struct HookFrame<'a> {
    kind: HookKind,
    function: FunctionID,
    elt: COR_PRF_ELT_INFO,
    info: Option<&'a ProfilerInfo>,
    // The frame handle is the runtime's, for this thread's current call only.
    _not_send: PhantomData<*const ()>,
}

impl<'a> HookFrame<'a> {
    /// A frame without information (fast mode).
    #[inline(always)]
    pub(super) fn fast(kind: HookKind) -> HookFrame<'static> {
        HookFrame { kind, function: FunctionID::NULL, elt: COR_PRF_ELT_INFO::NULL, info: None, _not_send: PhantomData }
    }

    /// # Safety
    /// `elt` must be the runtime's frame handle for the current call of `function`, passed to
    /// a with-info hook of kind `kind` that is still running; the frame must not outlive it.
    pub(super) unsafe fn with_info(
        kind: HookKind,
        function: FunctionID,
        elt: COR_PRF_ELT_INFO,
        info: &'a ProfilerInfo,
    ) -> HookFrame<'a> {
        HookFrame { kind, function, elt, info: Some(info), _not_send: PhantomData }
    }

    /// Which hook this is.
    pub fn kind(&self) -> HookKind {
        self.kind
    }

    /// The function called, in with-info mode (`None` in fast mode).
    pub fn function(&self) -> Option<FunctionID> {
        self.info.map(|_| self.function)
    }

    /// The argument memory of the call being entered, one range per argument in order (the
    /// `this` pointer first for an instance method), as the runtime describes it. Only in an
    /// `enter` hook in with-info mode; `E_UNEXPECTED` otherwise.
    ///
    /// CoreCLR 3.1 (seen on 3.1.23, not on 8.0.4): for a method that takes a value type in
    /// registers, the runtime copies it into a buffer that overlaps where its stub saved xmm0
    /// and xmm1, so the method then sees a wrong first floating-point argument. No memory is
    /// at stake (vector registers hold no object references), but the app computes with it:
    /// there, ask only for methods whose parameters are primitives or references (see
    /// [`MethodSignature`], as examples/elt-tracer and tests/elt-clobber do).
    pub fn arguments(&self) -> Result<Arguments<'_>> {
        let info = self.info.filter(|_| self.kind == HookKind::Enter).ok_or(HResult::E_UNEXPECTED)?;
        // Enough for the header and 15 ranges without touching the heap; the runtime says how
        // much it needs when that is not enough.
        let mut small = [0u64; 32];
        let large;
        let buf: &[u64] = match self.fill_arguments(info, &mut small) {
            Ok(()) => &small,
            Err((HResult::ERROR_INSUFFICIENT_BUFFER, needed)) => {
                let mut heap = vec![0u64; (needed as usize).div_ceil(8)];
                self.fill_arguments(info, &mut heap).map_err(|(e, _)| e)?;
                large = heap;
                &large
            }
            Err((e, _)) => return Err(e),
        };
        let header = buf.as_ptr().cast::<COR_PRF_FUNCTION_ARGUMENT_INFO>();
        // SAFETY: the call succeeded, so the buffer holds the header followed by `numRanges`
        // ranges (the header's `ranges[1]` is the start of that flexible array); the count is
        // checked against the buffer's length before reading.
        let ranges: &[COR_PRF_FUNCTION_ARGUMENT_RANGE] = unsafe {
            let count = (*header).numRanges as usize;
            let first = std::ptr::addr_of!((*header).ranges).cast::<COR_PRF_FUNCTION_ARGUMENT_RANGE>();
            let offset = (first as usize) - (header as usize);
            let capacity = (buf.len() * 8).saturating_sub(offset) / size_of::<COR_PRF_FUNCTION_ARGUMENT_RANGE>();
            if count > capacity {
                return Err(HResult::E_UNEXPECTED);
            }
            std::slice::from_raw_parts(first, count)
        };
        // SAFETY: each range is argument memory the runtime keeps valid (and unchanged) until
        // this hook returns, which the frame's borrow outlives no more.
        let ranges = ranges.iter().map(|r| unsafe { range_bytes(r) }).collect();
        Ok(Arguments { ranges })
    }

    /// Asks the runtime for the argument description into `buf`; on failure, the error and the
    /// size it asked for.
    fn fill_arguments(&self, info: &ProfilerInfo, buf: &mut [u64]) -> std::result::Result<(), (HResult, u32)> {
        self.enter_info(info, buf).map(|_| ())
    }

    /// `GetFunctionEnter3Info` into `buf`: the frame-information handle of this call.
    fn enter_info(
        &self,
        info: &ProfilerInfo,
        buf: &mut [u64],
    ) -> std::result::Result<COR_PRF_FRAME_INFO, (HResult, u32)> {
        let mut size = (buf.len() * 8) as u32;
        let ptr = buf.as_mut_ptr().cast::<COR_PRF_FUNCTION_ARGUMENT_INFO>();
        // SAFETY: `elt` is this call's frame handle and `function` its function (the
        // constructor's contract); `ptr` points to `size` writable bytes, 8-aligned as the
        // structure requires.
        let result = unsafe { info.get_function_enter3_info(self.function, self.elt, &mut size, ptr) };
        result.map_err(|e| (e, size))
    }

    /// [`ProfilerInfo::get_function_info2`] for the function entered, with this call's frame
    /// information: for shared generic code (`List<string>` and `List<object>` run one body) the
    /// exact class and method type arguments of this call, read from its `this` or hidden
    /// instantiation argument. Only in an `enter` hook in with-info mode; `E_UNEXPECTED`
    /// otherwise. (Stack walks' frames give no exact class for shared code on CoreCLR 3.1.23 and
    /// 8.0.4: this is where a call tracer gets it.)
    pub fn function_info(&self) -> Result<crate::info::FunctionInfo2> {
        let info = self.info.filter(|_| self.kind == HookKind::Enter).ok_or(HResult::E_UNEXPECTED)?;
        let mut small = [0u64; 32];
        let frame_info = match self.enter_info(info, &mut small) {
            Ok(frame_info) => frame_info,
            Err((HResult::ERROR_INSUFFICIENT_BUFFER, needed)) => {
                let mut heap = vec![0u64; (needed as usize).div_ceil(8)];
                self.enter_info(info, &mut heap).map_err(|(e, _)| e)?
            }
            Err((e, _)) => return Err(e),
        };
        // The handle is valid until this hook returns, and is used before.
        info.get_function_info2(self.function, frame_info)
    }

    /// The memory of the value being returned (empty for `void`). Only in a `leave` hook in
    /// with-info mode; `E_UNEXPECTED` otherwise.
    pub fn return_value(&self) -> Result<&[u8]> {
        let info = self.info.filter(|_| self.kind == HookKind::Leave).ok_or(HResult::E_UNEXPECTED)?;
        let leave = info.get_function_leave3_info(self.function, self.elt)?;
        // SAFETY: the range is the return value's memory, valid until this hook returns.
        Ok(unsafe { range_bytes(&leave.retval_range) })
    }

    /// The return value decoded by the signature's return type: `Ok(None)` for `void` and for
    /// types [`ElementValue`] does not decode.
    pub fn return_value_as(&self, signature: &MethodSignature) -> Result<Option<ElementValue>> {
        let bytes = self.return_value()?;
        Ok(ElementValue::decode(signature.return_type(), bytes))
    }
}

/// A range as bytes.
///
/// # Safety
/// The range must describe readable memory that stays valid and unchanged for `'a`.
unsafe fn range_bytes<'a>(range: &COR_PRF_FUNCTION_ARGUMENT_RANGE) -> &'a [u8] {
    if range.startAddress == 0 || range.length == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(range.startAddress as *const u8, range.length as usize) }
}

/// A call's argument memory ([`HookFrame::arguments`]).
#[derive(Debug)]
pub struct Arguments<'a> {
    ranges: Vec<&'a [u8]>,
}

impl<'a> Arguments<'a> {
    /// The ranges in order, as the runtime gave them (`this` first for an instance method).
    pub fn ranges(&self) -> &[&'a [u8]] {
        &self.ranges
    }

    /// The declared parameters decoded by `signature` (`this` skipped): `None` for a type
    /// [`ElementValue`] does not decode, or when the ranges do not match the signature's
    /// parameters.
    pub fn values(&self, signature: &MethodSignature) -> Vec<Option<ElementValue>> {
        let skip = signature.has_this() as usize;
        let params = signature.params();
        if self.ranges.len() != params.len() + skip {
            return vec![None; params.len()];
        }
        params.iter().zip(&self.ranges[skip..]).map(|(ty, bytes)| ElementValue::decode(*ty, bytes)).collect()
    }
}
