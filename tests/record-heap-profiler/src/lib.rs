//! `corprof record`'s heap mode ([`corprof_record_profiler::heap::HeapMode`]) as a profiler of
//! its own, configured from the environment the command sets: the heap tests and the heap bench
//! load it without the mode dispatch of the record profiler.

use corprof_record_profiler::heap::{HeapMode, HeapSettings};

pub const CLSID: corprof::GUID = corprof::GUID::parse("3B8D2E61-7C4A-4F19-9E05-6D2A1C7B4E38");

corprof::export_profiler!(HeapMode, CLSID, || HeapMode::new(HeapSettings::from_env()));
