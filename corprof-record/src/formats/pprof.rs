//! pprof: the gzipped protobuf of google/pprof's profile.proto, what `go tool pprof` and the
//! continuous-profiling backends (Pyroscope, Datadog, Parca …) ingest. One Function and one
//! Location per distinct frame name; each stack a Sample whose locations run leaf first, as the
//! schema asks. Sample types, per unit:
//!
//! - samples (cpu): `samples/count`, plus `cpu/nanoseconds` (or `wall/nanoseconds`) when the
//!   sampling period is known ([`Period`]);
//! - bytes (alloc): `alloc_space/bytes`;
//! - microseconds (calls): `calls/count` and `wall/microseconds`, wall the default.
//!
//! The messages are written by hand with prost's derive (only the fields corprof fills).

use std::collections::HashMap;
use std::io::{self, Write};

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use crate::profile::{Profile, Unit, split_offset};

/// How much time one cpu sample stands for, and on which clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// `"cpu"` for on-CPU sampling, `"wall"` for wall-clock sampling.
    pub clock: &'static str,
    pub nanoseconds: u64,
}

/// profile.proto's messages, the fields corprof writes (tags as in the schema).
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// Index 0 is always "".
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        /// Index into string_table of the sample type shown first.
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// A native frame's address in its library (`--native`), else 0.
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
    }
}

/// Writes the gzipped profile.
pub fn write(profile: &Profile, period: Option<Period>, out: &mut dyn Write) -> io::Result<()> {
    let bytes = encode(profile, period).encode_to_vec();
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}

/// The string table being built: each string once, "" at index 0.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut strings = Strings { table: Vec::new(), index: HashMap::new() };
        strings.get("");
        strings
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }

    fn value_type(&mut self, kind: &str, unit: &str) -> proto::ValueType {
        proto::ValueType { r#type: self.get(kind), unit: self.get(unit) }
    }
}

/// The profile as profile.proto's message (before gzip).
pub fn encode(profile: &Profile, period: Option<Period>) -> proto::Profile {
    let mut strings = Strings::new();
    let mut out = proto::Profile::default();
    // The values of one stack, in the order of sample_type.
    let values: fn(u64, u64, u64) -> Vec<i64>;
    match profile.unit {
        Unit::Samples => {
            out.sample_type.push(strings.value_type("samples", "count"));
            if let Some(period) = period {
                let time = strings.value_type(period.clock, "nanoseconds");
                out.sample_type.push(time.clone());
                out.period_type = Some(time);
                out.period = clamp(period.nanoseconds);
                values = |value, _, ns| vec![clamp(value), clamp(value.saturating_mul(ns))];
            } else {
                values = |value, _, _| vec![clamp(value)];
            }
        }
        Unit::Bytes => {
            out.sample_type.push(strings.value_type("alloc_space", "bytes"));
            values = |value, _, _| vec![clamp(value)];
        }
        Unit::Microseconds => {
            out.sample_type.push(strings.value_type("calls", "count"));
            out.sample_type.push(strings.value_type("wall", "microseconds"));
            out.default_sample_type = strings.get("wall");
            values = |value, count, _| vec![clamp(count), clamp(value)];
        }
    }
    let ns = period.map_or(0, |p| p.nanoseconds);
    // One Function per frame name and one Location per frame (a native frame's name with its
    // offset in its library: one Location per address, one Function per function); ids start at
    // 1 (0 means "none").
    let mut locations: HashMap<&str, u64> = HashMap::new();
    let mut functions: HashMap<&str, u64> = HashMap::new();
    for (frames, entry) in &profile.stacks {
        if entry.value == 0 && entry.count == 0 {
            continue;
        }
        let location_id = frames
            .iter()
            .rev()
            .map(|frame| {
                *locations.entry(frame.as_str()).or_insert_with(|| {
                    let (function, address) = split_offset(frame);
                    let function_id = *functions.entry(function).or_insert_with(|| {
                        let id = out.function.len() as u64 + 1;
                        let name = strings.get(function);
                        // No system name: pprof takes a name equal to it for one still to
                        // demangle, and strips what it reads as C++ template arguments, merging
                        // `List<int>::Add` with `List<double>::Add`; a name with none is kept as
                        // it is.
                        out.function.push(proto::Function { id, name, system_name: 0 });
                        id
                    });
                    let id = out.location.len() as u64 + 1;
                    let address = address.unwrap_or(0);
                    out.location.push(proto::Location { id, address, line: vec![proto::Line { function_id }] });
                    id
                })
            })
            .collect();
        out.sample.push(proto::Sample { location_id, value: values(entry.value, entry.count, ns) });
    }
    out.string_table = strings.table;
    out
}

/// pprof's values are int64; a u64 beyond that is capped rather than turned negative.
fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
