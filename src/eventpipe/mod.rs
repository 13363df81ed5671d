//! EventPipe in process: read an app's `EventSource` events, and write events of your own,
//! through the `ICorProfilerInfo12` EventPipe methods (.NET 5 and later) and
//! [`CorProfilerCallback::event_pipe_event_delivered`].
//!
//! - [`Session::start`] opens an in-process session for a list of [`ProviderConfig`]s (name,
//!   keywords, level, filter data). With `COR_PRF_HIGH_MONITOR_EVENT_PIPE` in the event mask,
//!   each event of those providers is handed to `event_pipe_event_delivered`, synchronously, on
//!   the thread that wrote it, as two byte slices: its metadata and its payload.
//! - [`EventMetadata::parse`] reads the metadata (ID, name, keywords, version, level, opcode,
//!   the fields with their types, nested objects and arrays included), and
//!   [`Payload::decode`] turns the payload into [`FieldValue`]s. Both check every length and return
//!   a [`FormatError`] for truncated or malformed bytes; neither panics, and both are bounded by
//!   the bytes they read (a payload decodes under a byte budget, field names are shared between
//!   the metadata and the values, not copied). The one thing the metadata does not say is the
//!   width of a `Bool`: four bytes, except in self-describing EventSource events, where it is
//!   one ([`BoolSize`], [`Payload::decode_with`]).
//! - [`Provider::create`] makes a provider of the profiler's own, [`Provider::define_event`]
//!   declares an event with typed fields, and [`Event::write`] serializes values into its
//!   payload ([`Payload::encode`]: integers and floats little-endian, `Bool` as four bytes,
//!   strings UTF-16 with a NUL, arrays as a 16-bit count then the elements) and writes it. A
//!   session that enables the provider reads the event back like any other.
//!   [`Provider::create_with_callback`] (`ICorProfilerInfo14::EventPipeCreateProvider2`, .NET 8,
//!   when the header declares it) makes one that also hears each enable and disable by a
//!   session ([`ProviderEnabled`]: level, keywords, filter data).
//! - [`provider_name`] names the provider of a delivered event. It is `unsafe`: the runtime
//!   trusts the handle blindly.
//!
//! Before .NET 5 the runtime has no `ICorProfilerInfo12`: every call answers `E_NOINTERFACE`.
//! Sessions, providers and events exist only when the header corprof was built from declares
//! `ICorProfilerInfo12` (not coreclr-3.x's); the parser and serializer always do.
//!
//! ```
//! use corprof::eventpipe::{EventMetadata, Field, FieldType, FieldValue, Payload};
//!
//! // What EventPipe's metadata generator writes for `MyEvent(int count)`, ID 7.
//! let mut blob = 7u32.to_le_bytes().to_vec();
//! blob.extend("MyEvent\0".encode_utf16().flat_map(u16::to_le_bytes));
//! blob.extend(0u64.to_le_bytes()); // keywords
//! blob.extend(1u32.to_le_bytes()); // version
//! blob.extend(4u32.to_le_bytes()); // level
//! blob.extend(1u32.to_le_bytes()); // one field (V1): type code, then name
//! blob.extend(9u32.to_le_bytes());
//! blob.extend("count\0".encode_utf16().flat_map(u16::to_le_bytes));
//!
//! let metadata = EventMetadata::parse(&blob).unwrap();
//! assert_eq!(metadata.fields, [Field::new("count", FieldType::I32)]);
//! let payload = Payload::decode(&metadata, &42i32.to_le_bytes()).unwrap();
//! assert_eq!(payload.get("count"), Some(&FieldValue::I32(42)));
//! assert_eq!(payload.to_string(), "count=42");
//! ```
//!
//! [`CorProfilerCallback::event_pipe_event_delivered`]: crate::CorProfilerCallback

#[cfg(corprof_method = "ICorProfilerInfo14::EventPipeCreateProvider2")]
mod callback;
mod format;
#[cfg(corprof_iface = "ICorProfilerInfo12")]
mod runtime;

#[cfg(corprof_method = "ICorProfilerInfo14::EventPipeCreateProvider2")]
pub use callback::{MAX_CALLBACK_PROVIDERS, ProviderEnabled};
pub use format::{
    BUDGET_BASE, BUDGET_PER_BYTE, BoolSize, EventMetadata, Field, FieldType, FieldValue, FormatError, FormatErrorKind,
    Payload,
};

/// The name [`FieldValue`] had before (CHANGELOG.md).
#[doc(hidden)]
#[deprecated(note = "renamed `FieldValue`")]
pub type Value = FieldValue;
#[cfg(corprof_iface = "ICorProfilerInfo12")]
pub use runtime::{Event, EventDefinition, Level, Provider, ProviderConfig, Session, provider_name};

#[cfg(test)]
mod tests;
