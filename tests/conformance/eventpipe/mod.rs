//! Conformance scenario "eventpipe" (.NET 5+), after the runtime's
//! `src/tests/profiler/eventpipe/eventpipe_readevents.cs` and
//! `src/tests/profiler/eventpipe/eventpipe.cs`: an in-process EventPipe session started in
//! Initialize reads the app's EventSource "Conf-Events" (self-describing events with an int, a
//! long, a string, a double, a char, an int array and an object), decoding each delivered
//! event's metadata and payload with corprof's parser; the profiler's own provider
//! "Conf-Profiler" writes an event (an int, a string, an int array) from JITCompilationStarted
//! of the app's Marker, and the same session reads it back with the values written; writing it
//! again from inside its delivery is refused (it would recurse without end). The app reads the
//! same provider's events through an EventPipe session of its own and decodes them by the
//! EventPipe format, not with corprof's parser, so a bug shared by corprof's writer and reader
//! cannot pass. A third provider, "Conf-Callback", made with EventPipeCreateProvider2
//! (`Provider::create_with_callback`) after the session named it with its own keywords, level
//! and filter data, hears that session enable it (inside the create call) and, when the session
//! stops, disable it, with the session's keywords and level.

use crate::support::{Recorder, lock};
use corprof::eventpipe::{
    self, BoolSize, EventDefinition, EventMetadata, FieldType, FieldValue, Level, Payload, Provider, ProviderConfig,
    Session,
};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, EVENTPIPE_PROVIDER, FunctionID, ThreadID, UINT_PTR};
use corprof::{CorProfilerCallback, GUID, HResult, IUnknown, Result};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// What the Conf-Callback provider's closure heard, until the next fact line takes it: the
/// closure outlives the profiler object (the runtime may call it until the process ends), so it
/// writes here, not into the recorder.
static HEARD: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn heard(rec: &Recorder) {
    for line in lock(&HEARD).drain(..) {
        rec.say(line);
    }
}

/// Creates Conf-Callback with a closure that notes each enable and disable.
fn callback_provider(rec: &Recorder, info: &corprof::ProfilerInfo) {
    let created = Provider::create_with_callback(info, "Conf-Callback", |e| {
        let line = format!(
            "Conf-Callback heard: enabled {}, level {}, keywords any {:#x} all {:#x}, filter {:?}",
            e.enabled,
            e.level,
            e.match_any_keywords,
            e.match_all_keywords,
            e.filter_pairs()
        );
        lock(&HEARD).push(line);
    });
    heard(rec);
    match created {
        Ok(p) => rec.say(format!("provider {} created with a callback", p.name())),
        Err(e) => rec.say(format!("create provider with a callback: {}", code(e))),
    }
}

/// The profiler's own provider and event.
struct Own {
    provider: Provider,
    probe: eventpipe::Event,
}

#[derive(Default)]
pub struct EventPipe {
    rec: Recorder,
    session: Mutex<Option<Session>>,
    own: OnceLock<Own>,
    /// Provider names by handle, and the event names already described.
    names: Mutex<HashMap<EVENTPIPE_PROVIDER, String>>,
    described: Mutex<Vec<String>>,
}

fn describe(ty: &FieldType) -> String {
    match ty {
        FieldType::Array(element) => format!("{}[]", describe(element)),
        FieldType::Object(fields) => {
            let inner: Vec<String> = fields.iter().map(|f| format!("{}: {}", f.name, describe(&f.ty))).collect();
            format!("{{{}}}", inner.join(", "))
        }
        other => format!("{other:?}"),
    }
}

fn code(e: HResult) -> String {
    e.name().map_or_else(|| format!("{:#010x}", e.0 as u32), str::to_string)
}

impl EventPipe {
    fn setup(&self) -> Result<()> {
        let info = self.rec.info()?;
        let session = Session::start(
            info,
            &[ProviderConfig::new("Conf-Events").level(Level::Verbose), ProviderConfig::new("Conf-Profiler")],
            false,
        );
        let session = match session {
            Ok(s) => s,
            Err(e) => {
                self.rec.say(format!("start session: {}", code(e)));
                match Provider::create(info, "Conf-Profiler") {
                    Ok(_) => self.rec.say("create provider: ok"),
                    Err(e) => self.rec.say(format!("create provider: {}", code(e))),
                }
                callback_provider(&self.rec, info);
                return Ok(());
            }
        };
        self.rec.say("session started");
        match session.add_provider(&ProviderConfig::new("Conf-Manifest").keywords(u64::MAX).level(Level::Informational))
        {
            Ok(()) => self.rec.say("Conf-Manifest added to the session"),
            Err(e) => self.rec.say(format!("add provider: {}", code(e))),
        }
        let callback =
            ProviderConfig::new("Conf-Callback").keywords(0xf0).level(Level::Warning).filter_data("key=value");
        match session.add_provider(&callback) {
            Ok(()) => self.rec.say("Conf-Callback added to the session"),
            Err(e) => self.rec.say(format!("add provider: {}", code(e))),
        }
        callback_provider(&self.rec, info);
        *lock(&self.session) = Some(session);
        let provider = Provider::create(info, "Conf-Profiler")?;
        let probe = provider.define_event(
            &EventDefinition::new("Probe", 7)
                .field("count", FieldType::I32)
                .field("label", FieldType::String)
                .field("items", FieldType::Array(Box::new(FieldType::I32)))
                .field("ok", FieldType::Bool)
                .field("tags", FieldType::Array(Box::new(FieldType::String))),
        )?;
        self.rec.say("provider Conf-Profiler created, event Probe defined");
        let _ = self.own.set(Own { provider, probe });
        Ok(())
    }
}

impl CorProfilerCallback for EventPipe {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(unknown, COR_PRF_MONITOR::JIT_COMPILATION, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        if self.rec.runtime_major() >= 5 {
            self.rec.info()?.set_event_mask2(COR_PRF_MONITOR::JIT_COMPILATION, COR_PRF_HIGH_MONITOR::EVENT_PIPE)?;
        }
        self.setup()
    }

    fn jit_compilation_started(&self, function: FunctionID, _safe: bool) -> Result<()> {
        if self.rec.function_name(function) != "ConfEventPipe.Program::Marker" {
            return Ok(());
        }
        if let Some(own) = self.own.get() {
            let probe = |count: i32| {
                own.probe.write(&[
                    FieldValue::I32(count),
                    FieldValue::String("from the profiler".into()),
                    FieldValue::Array(vec![FieldValue::I32(1), FieldValue::I32(-2), FieldValue::I32(i32::MAX)]),
                    FieldValue::Bool(true),
                    FieldValue::Array(vec![
                        FieldValue::String("a".into()),
                        FieldValue::String("".into()),
                        FieldValue::String("é€".into()),
                    ]),
                ])
            };
            // Delivered synchronously: its fact line comes before this one's.
            self.rec.say(format!("write Probe(count=7): {:?}", probe(7).map_err(code)));
            // A payload that does not match the definition never reaches the runtime.
            let wrong = own.probe.write(&[FieldValue::I64(7)]);
            self.rec.say(format!("write with wrong values: {:?}", wrong.map_err(code)));
            let session = lock(&self.session).take();
            if let Some(session) = session {
                let stopped = session.stop().map_err(code);
                heard(&self.rec);
                self.rec.say(format!("stop session: {stopped:?}"));
            }
            // No session listens any more: written, but not delivered.
            self.rec.say(format!("write Probe(count=8): {:?}", probe(8).map_err(code)));
        }
        Ok(())
    }

    fn event_pipe_event_delivered(
        &self,
        provider: EVENTPIPE_PROVIDER,
        event_id: u32,
        _event_version: u32,
        metadata_blob: &[u8],
        event_data: &[u8],
        _activity_id: Option<&GUID>,
        _related_activity_id: Option<&GUID>,
        _event_thread: ThreadID,
        _stack_frames: &[UINT_PTR],
    ) -> Result<()> {
        let provider_name = {
            let mut names = lock(&self.names);
            names
                .entry(provider)
                .or_insert_with(|| {
                    let info = self.rec.info().ok();
                    // SAFETY: `provider` is the handle the runtime is delivering this event from.
                    info.and_then(|i| unsafe { eventpipe::provider_name(i, provider) }.ok())
                        .unwrap_or_else(|| "?".to_string())
                })
                .clone()
        };
        if !provider_name.starts_with("Conf-") {
            return Ok(());
        }
        let mine = self.own.get().is_some_and(|o| o.provider.handle() == provider);
        let metadata = match EventMetadata::parse(metadata_blob) {
            Ok(m) => m,
            Err(e) => {
                self.rec.say(format!("{provider_name}: bad metadata for event {event_id}: {e}"));
                return Ok(());
            }
        };
        let key = format!("{provider_name}/{}", metadata.name);
        let mut described = lock(&self.described);
        if !described.contains(&key) {
            described.push(key.clone());
            let fields: Vec<String> =
                metadata.fields.iter().map(|f| format!("{}: {}", f.name, describe(&f.ty))).collect();
            self.rec.say(format!(
                "{key} is event {} v{} level {}{}: ({})",
                metadata.id,
                metadata.version,
                metadata.level,
                if mine { ", from the profiler's provider" } else { "" },
                fields.join(", ")
            ));
        }
        drop(described);
        // Conf-Events is self-describing (one-byte bools); the others write four-byte bools.
        let bools = if provider_name == "Conf-Events" { BoolSize::One } else { BoolSize::Four };
        match Payload::decode_with(&metadata, event_data, bools) {
            Ok(payload) => self.rec.say(format!("{key}({payload})")),
            Err(e) => self.rec.say(format!("{key}: bad payload: {e}")),
        }
        if mine && let Some(own) = self.own.get() {
            // Delivered inside its own write: writing the same provider's event again from here
            // would be delivered here again, without end. corprof refuses it.
            let again = own.probe.write(&[
                FieldValue::I32(9),
                FieldValue::String(String::new()),
                FieldValue::Array(Vec::new()),
                FieldValue::Bool(false),
                FieldValue::Array(Vec::new()),
            ]);
            self.rec.say(format!("write Probe(count=9) inside its delivery: {:?}", again.map_err(code)));
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        self.rec.say("shutdown");
        self.rec.finish()
    }
}
