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
    ($($name:ident = $value:expr => $meaning:literal,)*) => {
        impl HResult {
            $(#[doc = $meaning] pub const $name: HResult = HResult($value as u32 as i32);)*

            /// The symbolic name of a known code (`E_FAIL`, `CORPROF_E_…`), if any.
            pub fn name(self) -> Option<&'static str> {
                match self { $(HResult::$name => Some(stringify!($name)),)* _ => None }
            }

            /// What a known code means, in one line.
            pub fn meaning(self) -> Option<&'static str> {
                match self { $(HResult::$name => Some($meaning),)* _ => None }
            }
        }
    };
}

// The codes a profiler meets: COM's own, the profiling API's CORPROF_E_* (corerror.h's
// 0x8013_13xx range), the metadata API's CLDB_*/META_* (0x8013_11xx), and the Win32 errors the
// profiling API wraps with HRESULT_FROM_WIN32 (0x8007_xxxx).
codes! {
    S_OK = 0 => "Success.",
    S_FALSE = 1 => "Success, with a negative answer (nothing found, not applicable, the end of an enumeration).",
    E_NOTIMPL = 0x8000_4001u32 => "The method is not implemented.",
    E_NOINTERFACE = 0x8000_4002u32 => "The object does not support the interface (or this version of it).",
    E_POINTER = 0x8000_4003u32 => "A required pointer was null.",
    E_ABORT = 0x8000_4004u32 => "The operation was aborted.",
    E_FAIL = 0x8000_4005u32 => "Unspecified failure (corprof also returns it for a callback that panicked).",
    E_UNEXPECTED = 0x8000_FFFFu32 => "Unexpected failure: the call was made in a state that does not allow it.",
    E_ACCESSDENIED = 0x8007_0005u32 => "Access denied.",
    E_HANDLE = 0x8007_0006u32 => "An invalid handle was passed.",
    E_OUTOFMEMORY = 0x8007_000Eu32 => "Out of memory.",
    E_INVALIDARG = 0x8007_0057u32 => "An argument is invalid (a wrong ID, token, flag or size).",
    ERROR_FILE_NOT_FOUND = 0x8007_0002u32 => "HRESULT_FROM_WIN32(ERROR_FILE_NOT_FOUND): a file was not found.",
    ERROR_NOT_SUPPORTED = 0x8007_0032u32 => "HRESULT_FROM_WIN32(ERROR_NOT_SUPPORTED): this runtime or platform does not support the request.",
    ERROR_INSUFFICIENT_BUFFER = 0x8007_007Au32 => "HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER): the buffer is too small; the size needed was written back.",
    ERROR_ALREADY_EXISTS = 0x8007_00B7u32 => "HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS): it already exists.",
    ERROR_MORE_DATA = 0x8007_00EAu32 => "HRESULT_FROM_WIN32(ERROR_MORE_DATA): more data is available than the buffer holds.",
    ERROR_NOT_FOUND = 0x8007_0490u32 => "HRESULT_FROM_WIN32(ERROR_NOT_FOUND): the element was not found.",
    ERROR_TIMEOUT = 0x8007_05B4u32 => "HRESULT_FROM_WIN32(ERROR_TIMEOUT): the operation timed out.",
    CLASS_E_NOAGGREGATION = 0x8004_0110u32 => "The class does not support aggregation.",
    CLASS_E_CLASSNOTAVAILABLE = 0x8004_0111u32 => "The library does not serve this CLSID (check CORECLR_PROFILER).",
    COR_E_NOTSUPPORTED = 0x8013_1515u32 => "Not supported on this runtime (corprof refuses what the runtime would crash on: see the call's docs).",
    COR_E_APPDOMAINUNLOADED = 0x8013_1014u32 => "The ID is of unloaded code (its collectible AssemblyLoadContext unloaded), or corprof cannot tell it is not: see the guide's \"IDs that die\".",
    COR_E_OVERFLOW = 0x8013_1516u32 => "The value does not fit the result type (e.g. an object larger than a ULONG).",
    CORPROF_E_FUNCTION_NOT_COMPILED = 0x8013_1350u32 => "The function has not been compiled yet.",
    CORPROF_E_DATAINCOMPLETE = 0x8013_1351u32 => "The ID is not fully loaded or defined yet; ask again after its load-finished callback.",
    CORPROF_E_NOT_REJITABLE_METHODS = 0x8013_1352u32 => "The methods cannot be rejitted.",
    CORPROF_E_CANNOT_UPDATE_METHOD = 0x8013_1353u32 => "The method cannot be updated.",
    CORPROF_E_FUNCTION_NOT_IL = 0x8013_1354u32 => "The method has no IL (native or runtime-implemented).",
    CORPROF_E_NOT_MANAGED_THREAD = 0x8013_1355u32 => "The thread has never run managed code.",
    CORPROF_E_CALL_ONLY_FROM_INIT = 0x8013_1356u32 => "This method may be called only from Initialize (or InitializeForAttach).",
    CORPROF_E_NOT_YET_AVAILABLE = 0x8013_135Bu32 => "The information is not available yet.",
    CORPROF_E_TYPE_IS_PARAMETERIZED = 0x8013_135Cu32 => "The type is generic; this method does not accept generic types.",
    CORPROF_E_FUNCTION_IS_PARAMETERIZED = 0x8013_135Du32 => "The function is generic; this method does not accept generic functions.",
    CORPROF_E_STACKSNAPSHOT_INVALID_TGT_THREAD = 0x8013_135Eu32 => "The stack of this thread cannot be walked (invalid target thread).",
    CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX = 0x8013_135Fu32 => "The thread is running unmanaged code; give a context to walk it.",
    CORPROF_E_STACKSNAPSHOT_UNSAFE = 0x8013_1360u32 => "A stack walk here could deadlock or corrupt data.",
    CORPROF_E_STACKSNAPSHOT_ABORTED = 0x8013_1361u32 => "The stack-walk callback asked to stop the walk.",
    CORPROF_E_LITERALS_HAVE_NO_ADDRESS = 0x8013_1362u32 => "The static field is a literal (const): it has no address.",
    CORPROF_E_UNSUPPORTED_CALL_SEQUENCE = 0x8013_1363u32 => "The call was made at an unsupported time (asynchronously, or where it could trigger a GC or take locks out of order).",
    CORPROF_E_ASYNCHRONOUS_UNSAFE = 0x8013_1364u32 => "An asynchronous call was made at an unsafe time (runtime locks are held).",
    CORPROF_E_CLASSID_IS_ARRAY = 0x8013_1365u32 => "The ClassID is an array; this method cannot inspect arrays.",
    CORPROF_E_CLASSID_IS_COMPOSITE = 0x8013_1366u32 => "The ClassID is a non-array composite type (e.g. a byref or pointer); it cannot be inspected.",
    CORPROF_E_PROFILER_DETACHING = 0x8013_1367u32 => "The profiler is detaching: calls into the runtime are refused.",
    CORPROF_E_PROFILER_NOT_ATTACHABLE = 0x8013_1368u32 => "The profiler does not support attaching to a running process.",
    CORPROF_E_UNRECOGNIZED_PIPE_MSG_FORMAT = 0x8013_1369u32 => "The attach message has an unrecognized format.",
    CORPROF_E_PROFILER_ALREADY_ACTIVE = 0x8013_136Au32 => "Attach refused: a profiler is already loaded.",
    CORPROF_E_PROFILEE_INCOMPATIBLE_WITH_TRIGGER = 0x8013_136Bu32 => "Attach refused: the target runtime's version is incompatible with the caller's.",
    CORPROF_E_IPC_FAILED = 0x8013_136Cu32 => "Attach failed while talking to the target process (it may be exiting).",
    CORPROF_E_PROFILEE_PROCESS_NOT_FOUND = 0x8013_136Du32 => "Attach failed: no process with that ID.",
    CORPROF_E_CALLBACK3_REQUIRED = 0x8013_136Eu32 => "The profiler must implement ICorProfilerCallback3 for this call.",
    CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER = 0x8013_136Fu32 => "Only a profiler loaded at startup may make this call, not one that attached later.",
    CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT = 0x8013_1370u32 => "Detach impossible: the profiler instrumented IL or installed enter/leave hooks.",
    CORPROF_E_RUNTIME_UNINITIALIZED = 0x8013_1371u32 => "The runtime is not fully initialized yet; try again once it has started.",
    CORPROF_E_IMMUTABLE_FLAGS_SET = 0x8013_1372u32 => "Detach impossible: immutable event-mask flags were set at startup.",
    CORPROF_E_PROFILER_NOT_YET_INITIALIZED = 0x8013_1373u32 => "The profiler is not fully initialized yet.",
    CORPROF_E_INCONSISTENT_WITH_FLAGS = 0x8013_1374u32 => "The call needs other event-mask flags set (or some set flags cleared) first.",
    CORPROF_E_PROFILER_CANCEL_ACTIVATION = 0x8013_1375u32 => "The profiler asked not to be loaded into this process.",
    CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE = 0x8013_1376u32 => "Concurrent GC is enabled, which prevents COR_PRF_MONITOR_GC.",
    CORPROF_E_DEBUGGING_DISABLED = 0x8013_1378u32 => "This needs the runtime's debugging support enabled.",
    CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC = 0x8013_1379u32 => "Attach timed out waiting for a concurrent GC to finish.",
    CORPROF_E_MODULE_IS_DYNAMIC = 0x8013_137Au32 => "The module is dynamic (Reflection.Emit): this method does not support it.",
    CORPROF_E_CALLBACK4_REQUIRED = 0x8013_137Bu32 => "The profiler must implement ICorProfilerCallback4 for this call.",
    CORPROF_E_REJIT_NOT_ENABLED = 0x8013_137Cu32 => "ReJIT is not enabled: set COR_PRF_ENABLE_REJIT in Initialize.",
    CORPROF_E_FUNCTION_IS_COLLECTIBLE = 0x8013_137Eu32 => "The function belongs to a collectible assembly: this method does not support it.",
    CORPROF_E_CALLBACK6_REQUIRED = 0x8013_1380u32 => "The profiler must implement ICorProfilerCallback6 for this call.",
    CORPROF_E_CALLBACK7_REQUIRED = 0x8013_1382u32 => "The profiler must implement ICorProfilerCallback7 for this call.",
    CORPROF_E_REJIT_INLINING_DISABLED = 0x8013_1383u32 => "The runtime does not track inlining for ReJIT (set COR_PRF_HIGH_… inlining tracking).",
    CORPROF_E_SUSPENSION_IN_PROGRESS = 0x8013_1388u32 => "The runtime cannot be suspended: a suspension is already in progress.",
    CORPROF_E_NOT_GC_OBJECT = 0x8013_1389u32 => "The object lives on a non-GC heap (frozen): it has no GC generation.",
    CORPROF_E_MODULE_IS_ENC = 0x8013_138Au32 => "The module is an Edit-and-Continue module: this method does not support it.",
    CLDB_S_TRUNCATION = 0x0013_1106u32 => "Success, but the value was truncated to fit the buffer.",
    META_S_DUPLICATE = 0x0013_1197u32 => "Success: the item already existed.",
    CLDB_E_FILE_BADREAD = 0x8013_1100u32 => "Metadata: an error occurred during a read.",
    CLDB_E_FILE_BADWRITE = 0x8013_1101u32 => "Metadata: an error occurred during a write.",
    CLDB_E_FILE_OLDVER = 0x8013_1107u32 => "Metadata: the format version is too old.",
    CLDB_E_NO_DATA = 0x8013_110Bu32 => "Metadata: there is no metadata in the memory or stream.",
    CLDB_E_INCOMPATIBLE = 0x8013_110Du32 => "Metadata: the importing scope is not compatible with the emitting scope.",
    CLDB_E_FILE_CORRUPT = 0x8013_110Eu32 => "Metadata: the file is corrupt.",
    CLDB_E_BADUPDATEMODE = 0x8013_1110u32 => "Metadata: an incrementally built scope cannot be opened for full update.",
    CLDB_E_INDEX_NOTFOUND = 0x8013_1124u32 => "Metadata: the index was not found.",
    CLDB_E_RECORD_NOTFOUND = 0x8013_1130u32 => "Metadata: no record for that token or name.",
    CLDB_E_RECORD_OUTOFORDER = 0x8013_1135u32 => "Metadata: a record was emitted out of order.",
    CLDB_E_TOO_BIG = 0x8013_1154u32 => "Metadata: a blob or string is too big.",
    META_E_INVALID_TOKEN_TYPE = 0x8013_115Fu32 => "Metadata: a token of the wrong kind was passed.",
    META_E_BADMETADATA = 0x8013_118Au32 => "Metadata: the import scope is inconsistent.",
    META_E_BAD_SIGNATURE = 0x8013_1192u32 => "Metadata: a binary signature is malformed.",
    META_E_BAD_INPUT_PARAMETER = 0x8013_1193u32 => "Metadata: an input parameter is invalid.",
    META_E_CANNOTRESOLVETYPEREF = 0x8013_1196u32 => "Metadata: the TypeRef cannot be resolved.",
    META_E_STRINGSPACE_FULL = 0x8013_1198u32 => "Metadata: no room left for more user strings.",
    META_E_HAS_UNMARKALL = 0x8013_119Au32 => "Metadata: UnmarkAll was already called.",
    META_E_MUST_CALL_UNMARKALL = 0x8013_119Bu32 => "Metadata: call UnmarkAll before marking.",
    META_E_CA_INVALID_TARGET = 0x8013_11C0u32 => "Metadata: a known custom attribute is on an invalid target.",
    META_E_CA_INVALID_VALUE = 0x8013_11C1u32 => "Metadata: a known custom attribute has an invalid value.",
    META_E_CA_INVALID_BLOB = 0x8013_11C2u32 => "Metadata: a known custom attribute blob is malformed.",
    META_E_CA_REPEATED_ARG = 0x8013_11C3u32 => "Metadata: a custom attribute blob repeats a named argument.",
    META_E_CA_UNKNOWN_ARGUMENT = 0x8013_11C4u32 => "Metadata: a custom attribute named argument is not recognized.",
    META_E_CA_UNEXPECTED_TYPE = 0x8013_11C7u32 => "Metadata: the custom attribute parser met an unexpected type.",
    META_E_CA_INVALID_ARGTYPE = 0x8013_11C8u32 => "Metadata: the custom attribute parser handles fields only, not properties.",
    META_E_CA_INVALID_ARG_FOR_TYPE = 0x8013_11C9u32 => "Metadata: a custom attribute argument is invalid for its target.",
    META_E_CA_INVALID_UUID = 0x8013_11CAu32 => "Metadata: a UUID has an invalid format.",
    META_E_NOT_IN_ENC_MODE = 0x8013_11D4u32 => "Metadata: SaveDelta was called outside Edit and Continue mode.",
}

impl HResult {
    /// A success code (`S_OK`, `S_FALSE`, …: the high bit clear).
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

impl HResult {
    /// `NAME (0x…): meaning` for known codes, else the hex code: for log lines.
    pub fn describe(self) -> String {
        match self.meaning() {
            Some(m) => format!("{self}: {m}"),
            None => self.to_string(),
        }
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

    #[test]
    fn the_first_codes_users_meet_are_named_and_explained() {
        for (code, name) in [
            (0x8013_1374u32, "CORPROF_E_INCONSISTENT_WITH_FLAGS"),
            (0x8013_1371, "CORPROF_E_RUNTIME_UNINITIALIZED"),
            (0x8007_007A, "ERROR_INSUFFICIENT_BUFFER"),
        ] {
            let hr = HResult(code as i32);
            assert_eq!(hr.name(), Some(name));
            assert!(hr.meaning().is_some_and(|m| m.len() > 10 && m.ends_with('.')), "{name}");
        }
        assert_eq!(
            HResult(0x8013_1374u32 as i32).describe(),
            "CORPROF_E_INCONSISTENT_WITH_FLAGS (0x80131374): The call needs other event-mask flags set (or some set flags cleared) first."
        );
        assert_eq!(HResult(0x1234).describe(), "HRESULT 0x00001234");
    }
}
