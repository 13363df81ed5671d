//! `HResult`: a COM status code that names itself and works with `?`.

use std::fmt;

/// The C `HRESULT` type.
pub type HRESULT = i32;

/// A COM status code. Negative values are failures.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HResult(pub i32);

/// `Result` whose error is an [`HResult`].
pub type Result<T> = std::result::Result<T, HResult>;

macro_rules! codes {
    ($($name:ident = $value:expr),* $(,)?) => {
        impl HResult {
            $(pub const $name: HResult = HResult($value as u32 as i32);)*

            /// The symbolic name of a known code (`E_FAIL`, `CORPROF_E_…`), if any.
            pub fn name(self) -> Option<&'static str> {
                match self { $(HResult::$name => Some(stringify!($name)),)* _ => None }
            }
        }
    };
}

codes! {
    S_OK = 0,
    S_FALSE = 1,
    E_NOTIMPL = 0x8000_4001u32,
    E_NOINTERFACE = 0x8000_4002u32,
    E_POINTER = 0x8000_4003u32,
    E_ABORT = 0x8000_4004u32,
    E_FAIL = 0x8000_4005u32,
    E_UNEXPECTED = 0x8000_FFFFu32,
    E_OUTOFMEMORY = 0x8007_000Eu32,
    E_INVALIDARG = 0x8007_0057u32,
    CLASS_E_NOAGGREGATION = 0x8004_0110u32,
    CLASS_E_CLASSNOTAVAILABLE = 0x8004_0111u32,
    CORPROF_E_FUNCTION_NOT_COMPILED = 0x8013_1350u32,
    CORPROF_E_DATAINCOMPLETE = 0x8013_1351u32,
    CORPROF_E_NOT_REJITABLE_METHODS = 0x8013_1352u32,
    CORPROF_E_CANNOT_UPDATE_METHOD = 0x8013_1353u32,
    CORPROF_E_FUNCTION_NOT_IL = 0x8013_1354u32,
    CORPROF_E_NOT_MANAGED_THREAD = 0x8013_1355u32,
    CORPROF_E_CALL_ONLY_FROM_INIT = 0x8013_1356u32,
    CORPROF_E_NOT_YET_AVAILABLE = 0x8013_135Bu32,
    CORPROF_E_TYPE_IS_PARAMETERIZED = 0x8013_135Cu32,
    CORPROF_E_FUNCTION_IS_PARAMETERIZED = 0x8013_135Du32,
    CORPROF_E_STACKSNAPSHOT_INVALID_TGT_THREAD = 0x8013_135Eu32,
    CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX = 0x8013_135Fu32,
    CORPROF_E_STACKSNAPSHOT_UNSAFE = 0x8013_1360u32,
    CORPROF_E_STACKSNAPSHOT_ABORTED = 0x8013_1361u32,
    CORPROF_E_LITERALS_HAVE_NO_ADDRESS = 0x8013_1362u32,
    CORPROF_E_UNSUPPORTED_CALL_SEQUENCE = 0x8013_1363u32,
    CORPROF_E_ASYNCHRONOUS_UNSAFE = 0x8013_1364u32,
    CORPROF_E_CLASSID_IS_ARRAY = 0x8013_1365u32,
    CORPROF_E_CLASSID_IS_COMPOSITE = 0x8013_1366u32,
    CLDB_S_TRUNCATION = 0x0013_1106u32,
    CLDB_E_FILE_CORRUPT = 0x8013_110Eu32,
    CLDB_E_INDEX_NOTFOUND = 0x8013_1124u32,
    CLDB_E_RECORD_NOTFOUND = 0x8013_1130u32,
    META_E_BAD_SIGNATURE = 0x8013_1192u32,
}

impl HResult {
    pub const fn is_ok(self) -> bool {
        self.0 >= 0
    }

    /// `Ok(())` for success codes, `Err(self)` for failures.
    pub fn ok(self) -> Result<()> {
        if self.is_ok() { Ok(()) } else { Err(self) }
    }
}

impl From<HResult> for i32 {
    fn from(h: HResult) -> i32 {
        h.0
    }
}

impl fmt::Display for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} (0x{:08X})", self.0 as u32),
            None => write!(f, "HRESULT 0x{:08X}", self.0 as u32),
        }
    }
}

impl fmt::Debug for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for HResult {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes_name_themselves() {
        assert_eq!(HResult::E_FAIL.to_string(), "E_FAIL (0x80004005)");
        assert_eq!(HResult(0x1234).to_string(), "HRESULT 0x00001234");
        assert_eq!(HResult::E_NOINTERFACE.0, 0x8000_4002u32 as i32);
        assert_eq!(HResult(0x8013_1130u32 as i32).to_string(), "CLDB_E_RECORD_NOTFOUND (0x80131130)");
        assert!(HResult::CLDB_S_TRUNCATION.is_ok(), "a truncation is a success code");
        assert!(HResult::S_FALSE.ok().is_ok());
        assert_eq!(HResult::E_POINTER.ok(), Err(HResult::E_POINTER));
    }
}
