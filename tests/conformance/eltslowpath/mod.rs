//! Conformance scenario "eltslowpath", after the runtime's
//! `src/tests/profiler/elt/slowpatheltenter.cs` and `src/tests/profiler/elt/slowpatheltleave.cs`
//! (profiler `native/eltprofiler`, methods in `slowpathcommon.cs`): through the with-info hooks,
//! corprof's `HookFrame::arguments` gives one range per argument and `HookFrame::return_value`
//! the returned value, for primitives, a string, and structs the System V ABI passes in integer
//! registers, in floating-point registers, split across both or on the stack (two, three and
//! four floats or doubles, an int with a double, eight mixed fields); each range has the
//! argument's size and bytes, and the app's own results stay right. The enter run reads every
//! argument, the leave run every return value, as the two runtime tests do.
//!
//! Takes `CORPROF_CONF_ELT` (`enter` or `leave`); gives one fact line per call at Shutdown.

use crate::support::Recorder;
use corprof::hooks::{self, ElementValue, FunctionHooks, HookFrame, HookMode};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, FunctionID};
use corprof::{CorProfilerCallback, IUnknown, Result};
use std::sync::OnceLock;

const FUNCS: &str = "ConfEltSlowPath.Funcs::";

/// A field of a sequential struct, or a primitive argument.
#[derive(Clone, Copy)]
enum Prim {
    I4,
    R4,
    R8,
}

impl Prim {
    fn size(self) -> usize {
        match self {
            Prim::I4 | Prim::R4 => 4,
            Prim::R8 => 8,
        }
    }

    fn decode(self, bytes: &[u8]) -> String {
        match self {
            Prim::I4 => i32::from_le_bytes(bytes.try_into().expect("4 bytes")).to_string(),
            Prim::R4 => f32::from_le_bytes(bytes.try_into().expect("4 bytes")).to_string(),
            Prim::R8 => f64::from_le_bytes(bytes.try_into().expect("8 bytes")).to_string(),
        }
    }
}

/// How the app's argument or return type is laid out (what the runtime test's validators know).
#[derive(Clone, Copy)]
enum Layout {
    Prim(Prim),
    Str,
    /// `[StructLayout(LayoutKind.Sequential)]`: fields at their natural alignment.
    Struct(&'static [Prim]),
}

use Prim::{I4, R4, R8};
const INTEGER: Layout = Layout::Struct(&[I4, I4]);
const FP32X2: Layout = Layout::Struct(&[R4, R4]);
const FP32X3: Layout = Layout::Struct(&[R4, R4, R4]);
const FP32X4: Layout = Layout::Struct(&[R4, R4, R4, R4]);
const FP64X2: Layout = Layout::Struct(&[R8, R8]);
const FP64X3: Layout = Layout::Struct(&[R8, R8, R8]);
const FP64X4: Layout = Layout::Struct(&[R8, R8, R8, R8]);
const MIXED: Layout = Layout::Struct(&[I4, R8]);
const LARGE: Layout = Layout::Struct(&[I4, R8, I4, R8, I4, R8, I4, R8]);

/// The app's methods: name, parameters, return type.
const METHODS: &[(&str, &[Layout], Layout)] = &[
    ("SimpleArgsFunc", &[Layout::Prim(I4), Layout::Prim(R4), Layout::Str], Layout::Str),
    ("MixedStructFunc", &[MIXED], MIXED),
    ("LargeStructFunc", &[LARGE], Layout::Prim(I4)),
    ("IntegerStructFunc", &[INTEGER], INTEGER),
    ("Fp32x2StructFunc", &[FP32X2], FP32X2),
    ("Fp32x2StructFp32x3StructFunc", &[FP32X2, FP32X3], FP32X3),
    ("Fp32x3StructFunc", &[FP32X3], FP32X3),
    ("Fp32x3StructFp32x2StructFunc", &[FP32X3, FP32X2], FP32X2),
    ("Fp32x3StructSingleFp32x3StructSingleFunc", &[FP32X3, Layout::Prim(R4), FP32X3, Layout::Prim(R4)], FP32X3),
    ("Fp32x4StructFunc", &[FP32X4], FP32X4),
    ("Fp32x4StructFp32x4StructFunc", &[FP32X4, FP32X4], FP32X4),
    ("Fp64x2StructFunc", &[FP64X2], FP64X2),
    ("Fp64x2StructFp64x3StructFunc", &[FP64X2, FP64X3], FP64X3),
    ("Fp64x3StructFunc", &[FP64X3], FP64X3),
    ("Fp64x3StructFp64x2StructFunc", &[FP64X3, FP64X2], FP64X2),
    ("Fp64x3StructDoubleFp64x3StructDoubleFunc", &[FP64X3, Layout::Prim(R8), FP64X3, Layout::Prim(R8)], FP64X3),
    ("Fp64x4StructFunc", &[FP64X4], FP64X4),
    ("Fp64x4StructFp64x4StructFunc", &[FP64X4, FP64X4], FP64X4),
    ("DoubleRetFunc", &[], Layout::Prim(R8)),
];

/// The fields' offsets and the struct's size, sequential layout at natural alignment.
fn struct_layout(fields: &[Prim]) -> (Vec<usize>, usize) {
    let mut offsets = Vec::with_capacity(fields.len());
    let (mut end, mut align) = (0usize, 1usize);
    for f in fields {
        let size = f.size();
        let at = end.next_multiple_of(size);
        offsets.push(at);
        end = at + size;
        align = align.max(size);
    }
    (offsets, end.next_multiple_of(align))
}

#[derive(Default)]
pub struct EltSlowPath {
    rec: Recorder,
    /// Read arguments at enter (`true`) or return values at leave.
    at_enter: OnceLock<bool>,
}

impl EltSlowPath {
    /// A range as `layout` reads it, or what is wrong with it.
    fn decode(&self, layout: Layout, bytes: &[u8]) -> String {
        let size = match layout {
            Layout::Prim(p) => p.size(),
            Layout::Str => size_of::<usize>(),
            Layout::Struct(fields) => struct_layout(fields).1,
        };
        if bytes.len() != size {
            return format!("a range of {} bytes for a {size}-byte value", bytes.len());
        }
        match layout {
            Layout::Prim(p) => p.decode(bytes),
            Layout::Str => self.string(bytes).unwrap_or_else(|| "an unreadable string".into()),
            Layout::Struct(fields) => {
                let (offsets, _) = struct_layout(fields);
                let values: Vec<String> =
                    fields.iter().zip(offsets).map(|(f, at)| f.decode(&bytes[at..at + f.size()])).collect();
                format!("({})", values.join(", "))
            }
        }
    }

    /// The text of the string a reference range holds, through GetStringLayout2.
    fn string(&self, bytes: &[u8]) -> Option<String> {
        let ElementValue::Reference(address) = ElementValue::decode(hooks::ElementType::Reference, bytes)? else {
            return None;
        };
        if address == 0 {
            return Some("null".into());
        }
        let layout = self.rec.info().ok()?.get_string_layout2().ok()?;
        // SAFETY: `address` is a string reference the runtime passed to the running hook (the
        // app's declared `string` parameter or return value); no GC can move or free the object
        // while the hook runs, and GetStringLayout2 says where its length and characters are.
        let units = unsafe {
            let base = address as *const u8;
            let length = base.add(layout.string_length_offset as usize).cast::<u32>().read_unaligned();
            let chars = base.add(layout.buffer_offset as usize).cast::<u16>();
            std::slice::from_raw_parts(chars, length as usize).to_vec()
        };
        Some(format!("{:?}", String::from_utf16_lossy(&units)))
    }

    fn method(function_name: &str) -> Option<&'static (&'static str, &'static [Layout], Layout)> {
        let name = function_name.strip_prefix(FUNCS)?;
        METHODS.iter().find(|(n, ..)| *n == name)
    }
}

impl FunctionHooks for EltSlowPath {
    /// An index into [`METHODS`].
    type Data = usize;

    fn map_function(&self, function: FunctionID) -> Option<usize> {
        let name = self.rec.function_name(function);
        let method = Self::method(&name)?;
        METHODS.iter().position(|m| std::ptr::eq(m, method))
    }

    fn enter(&self, index: usize, frame: &HookFrame<'_>) {
        if self.at_enter.get() != Some(&true) {
            return;
        }
        let (name, params, _) = METHODS[index];
        let line = match frame.arguments() {
            Ok(args) if args.ranges().len() == params.len() => {
                let values: Vec<String> =
                    params.iter().zip(args.ranges()).map(|(layout, bytes)| self.decode(*layout, bytes)).collect();
                format!("{name} enter: {}", values.join(", "))
            }
            Ok(args) => format!("{name} enter: {} ranges for {} parameters", args.ranges().len(), params.len()),
            Err(hr) => format!("{name} enter: {hr}"),
        };
        self.rec.say(line);
    }

    fn leave(&self, index: usize, frame: &HookFrame<'_>) {
        if self.at_enter.get() != Some(&false) {
            return;
        }
        let (name, _, ret) = METHODS[index];
        let line = match frame.return_value() {
            Ok(bytes) => format!("{name} leave: {}", self.decode(ret, bytes)),
            Err(hr) => format!("{name} leave: {hr}"),
        };
        self.rec.say(line);
    }
}

impl CorProfilerCallback for EltSlowPath {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let _ = self.at_enter.set(std::env::var("CORPROF_CONF_ELT").as_deref() == Ok("enter"));
        let info = self.rec.start(
            unknown,
            COR_PRF_MONITOR::COR_PRF_MONITOR_NONE,
            COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE,
        )?;
        hooks::install(self, info, HookMode::WithInfo)
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.finish()
    }
}
