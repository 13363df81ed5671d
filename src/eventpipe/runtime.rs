//! Sessions, providers and events: the `ICorProfilerInfo12` EventPipe methods behind types that
//! only ever hand the runtime pointers to live buffers and handles it gave out itself.

use super::format::{Field, FieldType, FieldValue, Payload};
use crate::types::{
    COR_PRF_EVENT_DATA, COR_PRF_EVENTPIPE_PARAM_DESC, COR_PRF_EVENTPIPE_PROVIDER_CONFIG, EVENTPIPE_EVENT,
    EVENTPIPE_PROVIDER, EVENTPIPE_SESSION, WCHAR,
};
use crate::{GUID, HResult, ProfilerInfo, Result};
use std::cell::RefCell;
use std::sync::Arc;

/// An event level: events above a session's level for their provider are not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Level {
    /// 0: always logged.
    LogAlways = 0,
    /// 1
    Critical = 1,
    /// 2
    Error = 2,
    /// 3
    Warning = 3,
    /// 4
    Informational = 4,
    /// 5: everything.
    #[default]
    Verbose = 5,
}

/// A provider a session listens to: its name, the keywords and level it enables, and optional
/// filter data (`key=value;key=value`, handed to the provider, e.g. an EventSource's
/// `EventCommandEventArgs.Arguments`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderConfig<'a> {
    /// The provider's name (an EventSource's `Name`).
    pub name: &'a str,
    /// The keywords enabled (all bits: every event).
    pub keywords: u64,
    /// The most verbose level enabled.
    pub level: Level,
    /// Filter data for the provider, if any.
    pub filter_data: Option<&'a str>,
}

impl<'a> ProviderConfig<'a> {
    /// `name` with every keyword at [`Level::Verbose`], no filter data.
    pub fn new(name: &'a str) -> Self {
        ProviderConfig { name, keywords: u64::MAX, level: Level::Verbose, filter_data: None }
    }

    /// The same, with these keywords.
    pub fn keywords(self, keywords: u64) -> Self {
        ProviderConfig { keywords, ..self }
    }

    /// The same, at this level.
    pub fn level(self, level: Level) -> Self {
        ProviderConfig { level, ..self }
    }

    /// The same, with this filter data.
    pub fn filter_data(self, filter_data: &'a str) -> Self {
        ProviderConfig { filter_data: Some(filter_data), ..self }
    }
}

/// A provider config's text as owned UTF-16, kept alive while the runtime reads the raw config.
struct WideConfig {
    name: Vec<WCHAR>,
    filter: Option<Vec<WCHAR>>,
    keywords: u64,
    level: u32,
}

impl WideConfig {
    fn new(config: &ProviderConfig<'_>) -> Result<WideConfig> {
        // The runtime reads both as NUL-terminated text; an inner NUL would cut them short.
        if config.name.contains('\0') || config.filter_data.is_some_and(|f| f.contains('\0')) {
            return Err(HResult::E_INVALIDARG);
        }
        Ok(WideConfig {
            name: crate::wrapper_support::wide(config.name),
            filter: config.filter_data.map(crate::wrapper_support::wide),
            keywords: config.keywords,
            level: config.level as u32,
        })
    }

    /// The raw config, pointing into `self`: valid while `self` is neither moved nor dropped.
    fn raw(&self) -> COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
        COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
            providerName: self.name.as_ptr(),
            keywords: self.keywords,
            loggingLevel: self.level,
            filterData: self.filter.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()),
        }
    }
}

/// An in-process EventPipe session (`ICorProfilerInfo12::EventPipeStartSession`): the events of
/// its providers reach [`CorProfilerCallback::event_pipe_event_delivered`] on the thread that
/// wrote them, provided the profiler's event mask has `COR_PRF_HIGH_MONITOR_EVENT_PIPE`.
///
/// Dropping a `Session` does **not** stop it: a profiler usually keeps its session until the
/// process ends, and a drop may come after Shutdown, when calling into the runtime is no longer
/// allowed. Call [`Session::stop`] to end it earlier (not from inside a delivery callback of the
/// same session: stopping may wait for deliveries in progress; untested here).
///
/// [`CorProfilerCallback::event_pipe_event_delivered`]: crate::CorProfilerCallback::event_pipe_event_delivered
pub struct Session {
    info: ProfilerInfo,
    id: EVENTPIPE_SESSION,
}

impl Session {
    /// Starts a session listening to `providers`; with `rundown`, the runtime's rundown provider
    /// describes loaded modules and methods when the session stops. Providers that do not exist
    /// yet are enabled when they are created (an app's EventSource, at its first use).
    ///
    /// Errors: `E_NOINTERFACE` before .NET 5 (no `ICorProfilerInfo12`), `E_INVALIDARG` for a
    /// name or filter with a NUL in it, and whatever the runtime answers.
    pub fn start(info: &ProfilerInfo, providers: &[ProviderConfig<'_>], rundown: bool) -> Result<Session> {
        let wide = providers.iter().map(WideConfig::new).collect::<Result<Vec<_>>>()?;
        // `wide` lives until the end of this function, so the pointers in `raw` stay valid for
        // the call, which is all the runtime needs: it copies names and filters into the session.
        let raw: Vec<_> = wide.iter().map(WideConfig::raw).collect();
        // SAFETY: every name and filter pointer in `raw` points into a NUL-terminated UTF-16
        // buffer of `wide` (or is null for no filter), alive until this function returns.
        let id = unsafe { info.event_pipe_start_session(&raw, rundown) }?;
        Ok(Session { info: info.clone(), id })
    }

    /// The runtime's ID of the session.
    pub fn id(&self) -> EVENTPIPE_SESSION {
        self.id
    }

    /// Adds a provider to the running session.
    pub fn add_provider(&self, provider: &ProviderConfig<'_>) -> Result<()> {
        let wide = WideConfig::new(provider)?;
        // SAFETY: the name and filter pointers of `wide.raw()` point into `wide`'s NUL-terminated
        // UTF-16 buffers (or are null), which outlive the call; the runtime copies what it keeps.
        unsafe { self.info.event_pipe_add_provider_to_session(self.id, wide.raw()) }
    }

    /// Stops the session: no more deliveries from it once this returns.
    pub fn stop(self) -> Result<()> {
        self.info.event_pipe_stop_session(self.id)
    }
}

/// How a profiler-defined event is declared (`ICorProfilerInfo12::EventPipeDefineEvent`).
///
/// Fields are scalars, strings, or arrays of those (the runtime's parameter descriptors have no
/// room for objects or nested arrays).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDefinition {
    /// The event's name.
    pub name: String,
    /// Its ID within the provider.
    pub id: u32,
    /// Its keywords (0: enabled by any keyword mask).
    pub keywords: u64,
    /// Its version.
    pub version: u32,
    /// Its level.
    pub level: Level,
    /// Its opcode (0: none).
    pub opcode: u8,
    /// Whether the runtime captures a stack with each event (the delivery's `stack_frames`).
    pub need_stack: bool,
    /// Its payload's fields.
    pub fields: Vec<Field>,
}

impl EventDefinition {
    /// An event `name` with ID `id`: keywords 0, version 1, [`Level::LogAlways`], no opcode, no
    /// stack, no field.
    pub fn new(name: impl Into<String>, id: u32) -> Self {
        EventDefinition {
            name: name.into(),
            id,
            keywords: 0,
            version: 1,
            level: Level::LogAlways,
            opcode: 0,
            need_stack: false,
            fields: Vec::new(),
        }
    }

    /// The same, with one more field.
    pub fn field(mut self, name: impl Into<Arc<str>>, ty: FieldType) -> Self {
        self.fields.push(Field::new(name, ty));
        self
    }

    /// The same, at this level.
    pub fn level(self, level: Level) -> Self {
        EventDefinition { level, ..self }
    }

    /// The same, with these keywords.
    pub fn keywords(self, keywords: u64) -> Self {
        EventDefinition { keywords, ..self }
    }
}

fn definable(ty: &FieldType, in_array: bool) -> bool {
    match ty {
        FieldType::Object(_) => false,
        FieldType::Array(element) => !in_array && definable(element, true),
        _ => true,
    }
}

/// A provider this profiler created (`ICorProfilerInfo12::EventPipeCreateProvider`). The
/// runtime keeps it for the life of the process; this value is a handle to it and may be
/// cloned and shared between threads.
#[derive(Clone)]
pub struct Provider {
    info: ProfilerInfo,
    handle: EVENTPIPE_PROVIDER,
    name: String,
}

impl Provider {
    /// Creates the provider `name`. Sessions that name it (started before or after) receive its
    /// events.
    pub fn create(info: &ProfilerInfo, name: &str) -> Result<Provider> {
        if name.contains('\0') {
            return Err(HResult::E_INVALIDARG);
        }
        let handle = info.event_pipe_create_provider(name)?;
        Ok(Provider { info: info.clone(), handle, name: name.to_string() })
    }

    /// A provider the runtime created (`handle`) under `name`.
    #[cfg_attr(not(corprof_method = "ICorProfilerInfo14::EventPipeCreateProvider2"), allow(dead_code))]
    pub(super) fn from_parts(info: &ProfilerInfo, handle: EVENTPIPE_PROVIDER, name: &str) -> Provider {
        Provider { info: info.clone(), handle, name: name.to_string() }
    }

    /// The provider's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The runtime's handle, as `event_pipe_event_delivered` reports it for this provider's
    /// events.
    pub fn handle(&self) -> EVENTPIPE_PROVIDER {
        self.handle
    }

    /// Defines an event of this provider. `E_INVALIDARG` for a field type the runtime cannot
    /// declare (an object, an array of arrays) or a name with a NUL in it.
    pub fn define_event(&self, definition: &EventDefinition) -> Result<Event> {
        let names_ok = !definition.name.contains('\0') && definition.fields.iter().all(|f| !f.name.contains('\0'));
        if !names_ok || !definition.fields.iter().all(|f| definable(&f.ty, false)) {
            return Err(HResult::E_INVALIDARG);
        }
        let names: Vec<Vec<WCHAR>> = definition.fields.iter().map(|f| crate::wrapper_support::wide(&f.name)).collect();
        let descs: Vec<COR_PRF_EVENTPIPE_PARAM_DESC> = definition
            .fields
            .iter()
            .zip(&names)
            .map(|(f, name)| COR_PRF_EVENTPIPE_PARAM_DESC {
                type_: f.ty.code(),
                elementType: match &f.ty {
                    FieldType::Array(element) => element.code(),
                    _ => 0,
                },
                name: name.as_ptr(),
            })
            .collect();
        // SAFETY: each descriptor's `name` points into `names`, NUL-terminated UTF-16 buffers that
        // outlive the call (the runtime copies the names into the event's metadata); `self.handle`
        // came from EventPipeCreateProvider and the runtime never frees it.
        let handle = unsafe {
            self.info.event_pipe_define_event(
                self.handle,
                &definition.name,
                definition.id,
                definition.keywords,
                definition.version,
                definition.level as u32,
                definition.opcode,
                definition.need_stack,
                &descs,
            )
        }?;
        Ok(Event { info: self.info.clone(), provider: self.handle, handle, fields: definition.fields.clone() })
    }
}

/// An event defined by [`Provider::define_event`]: writes payloads that match its fields.
#[derive(Clone)]
pub struct Event {
    info: ProfilerInfo,
    /// The provider that defined the event, for the reentrancy check of [`Event::write`].
    provider: EVENTPIPE_PROVIDER,
    handle: EVENTPIPE_EVENT,
    fields: Vec<Field>,
}

impl Event {
    /// The event's fields, as defined.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// Writes the event with these values, one per field, in order (serialized as
    /// [`Payload::encode`] does). `E_INVALIDARG` when they do not match the fields, a string
    /// holds a NUL or an array is longer than 65,535. Sessions that enable the provider at the
    /// event's level and keywords receive it (synchronously, on this thread, for in-process
    /// sessions).
    ///
    /// An in-process session delivers the event inside this call, so a delivery callback that
    /// writes an event of the same provider again would be delivered that one inside its own
    /// write, and so on until the stack overflows (CoreCLR 8.0.4 aborts the process, exit 134).
    /// So a write of a provider's event while this thread is already inside a write of one of
    /// that provider's events (in its delivery callback, typically) is refused with
    /// `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` and never reaches the runtime. Writing an event of
    /// another provider from there is allowed: the depth is then bounded by the number of
    /// providers.
    pub fn write(&self, values: &[FieldValue]) -> Result<()> {
        self.write_with_activity(values, None, None)
    }

    /// [`Event::write`] with an activity ID and a related activity ID (`None`: the thread's
    /// current activity, and none).
    pub fn write_with_activity(
        &self,
        values: &[FieldValue],
        activity: Option<&GUID>,
        related: Option<&GUID>,
    ) -> Result<()> {
        let bytes = Payload::encode(&self.fields, values).ok_or(HResult::E_INVALIDARG)?;
        let size = u32::try_from(bytes.len()).map_err(|_| HResult::E_INVALIDARG)?;
        // One descriptor for the whole payload: the runtime concatenates descriptors, so one or
        // many give the same bytes. `bytes` outlives the call, and the runtime copies them.
        let data = [COR_PRF_EVENT_DATA { ptr: bytes.as_ptr() as u64, size, reserved: 0 }];
        let count = u32::from(!bytes.is_empty());
        let _writing = Writing::enter(self.provider)?;
        // SAFETY: `data` holds `count` descriptors (none for an empty payload), each giving the
        // address and size of `bytes`, which outlives the call; the runtime copies them.
        // `self.handle` came from EventPipeDefineEvent and the runtime never frees it.
        unsafe { self.info.event_pipe_write_event(self.handle, count, data.as_ptr().cast_mut(), activity, related) }
    }
}

thread_local! {
    /// The providers whose events this thread is writing, innermost last ([`Event::write`]).
    static WRITING: RefCell<Vec<EVENTPIPE_PROVIDER>> = const { RefCell::new(Vec::new()) };
}

/// A provider's place in [`WRITING`] while one of its events is written; leaving it on drop.
struct Writing;

impl Writing {
    /// Marks `provider` as being written on this thread, or refuses when it already is (or when
    /// the thread is tearing down its thread-locals, where no guard can be kept).
    fn enter(provider: EVENTPIPE_PROVIDER) -> Result<Writing> {
        let refused = HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE;
        WRITING
            .try_with(|writing| {
                let mut writing = writing.borrow_mut();
                if writing.contains(&provider) {
                    return Err(refused);
                }
                writing.push(provider);
                Ok(Writing)
            })
            .unwrap_or(Err(refused))
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        // Only `enter` pushed, on this thread, and writes nest: the last entry is this guard's.
        let _ = WRITING.try_with(|writing| writing.borrow_mut().pop());
    }
}

/// The name of an EventPipe provider (`ICorProfilerInfo12::EventPipeGetProviderInfo`).
///
/// # Safety
///
/// `provider` must be a handle the runtime handed out and has not freed: the one
/// `event_pipe_event_delivered` or `event_pipe_provider_created` is running with, or a
/// [`Provider::handle`]. The runtime dereferences it without any check, so a made-up value is
/// undefined behaviour; that is why this is not safe.
pub unsafe fn provider_name(info: &ProfilerInfo, provider: EVENTPIPE_PROVIDER) -> Result<String> {
    // The runtime wants room for strictly more than the name and its NUL (see
    // annotations/info.yaml), and answers ERROR_INSUFFICIENT_BUFFER otherwise: grow until it fits.
    let mut capacity = 256usize;
    loop {
        let mut buffer: Vec<WCHAR> = vec![0; capacity];
        let cch = u32::try_from(capacity).map_err(|_| HResult::E_OUTOFMEMORY)?;
        // SAFETY: `buffer` has `cch` writable code units and lives across the call; the caller
        // vouches for `provider` (this fn's contract).
        let answer = unsafe { info.event_pipe_get_provider_info(provider, cch, buffer.as_mut_ptr()) };
        match answer {
            Ok(_) => {
                let len = buffer.iter().position(|&c| c == 0).unwrap_or(buffer.len());
                return Ok(String::from_utf16_lossy(&buffer[..len]));
            }
            Err(HResult::ERROR_INSUFFICIENT_BUFFER) if capacity < 1 << 16 => capacity *= 4,
            Err(e) => return Err(e),
        }
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider").field("name", &self.name).field("handle", &self.handle).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event").field("handle", &self.handle).field("fields", &self.fields).finish_non_exhaustive()
    }
}
