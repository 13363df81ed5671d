//! The line format the Rust and the C logger share (tests/oracle/gen_logger.py writes the C side):
//! - an integer, enum, BOOL, HRESULT or ID: `0x` + lowercase hex of its raw bits at its own width,
//!   no padding (a 32-bit −1 is `0xffffffff`, a `true` is `0x1`);
//! - UTF-16 text: in double quotes, each code unit from `0x20` to `0x7e` as itself except `"` and
//!   `\`, every other unit as `\u` + four lowercase hex digits; a null string is `null`;
//! - a GUID by reference: `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` in upper case (`null` if absent);
//! - a counted array: `[e,e,…]`, each element as above;
//! - an out parameter: `out`; any other pointer: `ptr` or `null`.

use corprof::GUID;
use corprof::types::*;
use std::fmt::Write;

/// One argument of a line, written in the shared format.
pub trait Arg {
    fn put(&self, line: &mut String);
}

/// `0x` + the lowercase hex of `bits` (already zero-extended from the value's own width).
fn hex(line: &mut String, bits: u64) {
    let _ = write!(line, "{bits:#x}");
}

macro_rules! unsigned_args {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            fn put(&self, line: &mut String) {
                hex(line, u64::from(*self));
            }
        }
    )*};
}
unsigned_args!(u8, u16, u32, u64);

impl Arg for i32 {
    /// The two's-complement bits at 32 bits (BOOL, int).
    fn put(&self, line: &mut String) {
        hex(line, u64::from(*self as u32));
    }
}

impl Arg for usize {
    fn put(&self, line: &mut String) {
        hex(line, *self as u64);
    }
}

impl Arg for bool {
    /// A `BOOL` that corprof turned into a `bool`: the header's 1 or 0.
    fn put(&self, line: &mut String) {
        hex(line, u64::from(*self));
    }
}

impl Arg for corprof::HResult {
    fn put(&self, line: &mut String) {
        self.0.put(line);
    }
}

macro_rules! id_args {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            fn put(&self, line: &mut String) {
                self.as_raw().put(line);
            }
        }
    )*};
}
id_args!(
    AppDomainID,
    AssemblyID,
    ModuleID,
    ClassID,
    FunctionID,
    ThreadID,
    ObjectID,
    GCHandleID,
    ReJITID,
    EVENTPIPE_PROVIDER
);

impl Arg for corprof::LiveObject<'_> {
    /// The ObjectID the runtime passed, as the C logger prints it.
    fn put(&self, line: &mut String) {
        self.id().put(line);
    }
}

macro_rules! enum_args {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            fn put(&self, line: &mut String) {
                self.0.put(line);
            }
        }
    )*};
}
enum_args!(
    COR_PRF_JIT_CACHE,
    COR_PRF_TRANSITION_REASON,
    COR_PRF_SUSPEND_REASON,
    COR_PRF_GC_ROOT_KIND,
    COR_PRF_GC_ROOT_FLAGS,
    COR_PRF_GC_REASON
);

impl<T: Arg> Arg for &[T] {
    fn put(&self, line: &mut String) {
        line.push('[');
        for (i, e) in self.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            e.put(line);
        }
        line.push(']');
    }
}

/// A count parameter the safe signature folded into a slice: every count in the callbacks'
/// header is 32 bits wide (`ULONG`, `UINT` or `int`).
pub struct Count(pub usize);

impl Arg for Count {
    fn put(&self, line: &mut String) {
        hex(line, u64::from(self.0 as u32));
    }
}

/// An `[out]` parameter.
pub struct OutParam;

/// The `out` placeholder.
pub const OUT: OutParam = OutParam;

impl Arg for OutParam {
    fn put(&self, line: &mut String) {
        line.push_str("out");
    }
}

/// A pointer printed only as present (`ptr`) or null.
pub struct Ptr(pub bool);

impl Arg for Ptr {
    fn put(&self, line: &mut String) {
        line.push_str(if self.0 { "ptr" } else { "null" });
    }
}

/// UTF-16 text (the exact units the thunk handed over), or a null string.
pub struct Text<'a>(pub Option<&'a [u16]>);

impl Arg for Text<'_> {
    fn put(&self, line: &mut String) {
        let Some(units) = self.0 else {
            line.push_str("null");
            return;
        };
        line.push('"');
        for &u in units {
            match u {
                0x20..=0x7e if u != u16::from(b'"') && u != u16::from(b'\\') => line.push(char::from(u as u8)),
                _ => {
                    let _ = write!(line, "\\u{u:04x}");
                }
            }
        }
        line.push('"');
    }
}

/// A GUID passed by reference.
pub struct Guid<'a>(pub &'a GUID);

impl Arg for Guid<'_> {
    fn put(&self, line: &mut String) {
        let g = self.0;
        let d = &g.data4;
        let _ = write!(
            line,
            "{{{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}}}",
            g.data1, g.data2, g.data3, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        );
    }
}

/// An optional GUID pointer (`LPCGUID` that may be null).
pub struct OptGuid<'a>(pub Option<&'a GUID>);

impl Arg for OptGuid<'_> {
    fn put(&self, line: &mut String) {
        match self.0 {
            Some(g) => Guid(g).put(line),
            None => line.push_str("null"),
        }
    }
}

// SAFETY: glibc (2.30+) declares `pid_t gettid(void)`: no arguments, no memory touched, cannot
// fail, so every call is sound and the function may be declared `safe`.
unsafe extern "C" {
    /// glibc's `gettid(2)` wrapper.
    safe fn gettid() -> i32;
}

/// The Linux thread ID of the calling thread.
pub fn thread_id() -> i32 {
    gettid()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(arg: &dyn Arg) -> String {
        let mut s = String::new();
        arg.put(&mut s);
        s
    }

    #[test]
    fn values_print_at_their_own_width() {
        assert_eq!(line(&-1i32), "0xffffffff");
        assert_eq!(line(&0u32), "0x0");
        assert_eq!(line(&usize::MAX), "0xffffffffffffffff");
        assert_eq!(line(&true), "0x1");
        assert_eq!(line(&corprof::HResult::E_POINTER), "0x80004003");
        assert_eq!(line(&Count(3)), "0x3");
        assert_eq!(line(&(&[1u8, 0xff][..])), "[0x1,0xff]");
        assert_eq!(line(&(&[] as &[u32])), "[]");
    }

    #[test]
    fn text_and_guids() {
        let units: Vec<u16> = "a\"\\é\0".encode_utf16().collect();
        assert_eq!(line(&Text(Some(&units))), r#""a\u0022\u005c\u00e9\u0000""#);
        assert_eq!(line(&Text(None)), "null");
        let g = GUID::parse("5E2A7C41-93B8-4F0D-A6E1-3C8B0D7F2A19");
        assert_eq!(line(&Guid(&g)), "{5E2A7C41-93B8-4F0D-A6E1-3C8B0D7F2A19}");
        assert_eq!(line(&OptGuid(None)), "null");
    }
}
