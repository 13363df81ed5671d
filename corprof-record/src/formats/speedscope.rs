//! speedscope JSON (<https://www.speedscope.app/file-format-schema.json>): every frame once in
//! `shared.frames`, and `sampled` profiles whose samples are stacks of frame indices (root first)
//! with a weight each. A profile whose stacks all start at a `[thread …]` root becomes one
//! speedscope profile per thread (speedscope shows them as tabs), without the root frame.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use serde_json::{Value, json};

use super::valued_stacks;
use crate::profile::{Profile, Unit};

pub(super) const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

pub(super) fn write(profile: &Profile, title: &str, out: &mut dyn Write) -> io::Result<()> {
    let file = document(profile, title);
    serde_json::to_writer(&mut *out, &file).map_err(io::Error::other)?;
    writeln!(out)
}

/// One speedscope profile: its name and its (stack of frame indices, weight) samples.
#[derive(Default)]
struct Track {
    samples: Vec<Vec<usize>>,
    weights: Vec<u64>,
}

fn document(profile: &Profile, title: &str) -> Value {
    let by_thread = profile.stacks.keys().all(|frames| frames.first().is_some_and(|f| is_thread(f)));
    let mut frames: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    // BTreeMap: the tracks in the order of their names, so the output does not vary run to run.
    let mut tracks: BTreeMap<&str, Track> = BTreeMap::new();
    for (stack, value) in valued_stacks(profile) {
        let (name, stack) = match by_thread {
            true => (stack[0].as_str(), &stack[1..]),
            false => (title, &stack[..]),
        };
        let sample = stack
            .iter()
            .map(|frame| {
                *index.entry(frame.as_str()).or_insert_with(|| {
                    frames.push(frame);
                    frames.len() - 1
                })
            })
            .collect();
        let track = tracks.entry(name).or_default();
        track.samples.push(sample);
        track.weights.push(value);
    }
    if tracks.is_empty() {
        // speedscope needs a profile to open; an empty recording is an empty one.
        tracks.insert(title, Track::default());
    }
    let unit = match profile.unit {
        Unit::Samples => "none",
        Unit::Bytes => "bytes",
        Unit::Microseconds => "microseconds",
    };
    let profiles: Vec<Value> = tracks
        .into_iter()
        .map(|(name, track)| {
            let total: u64 = track.weights.iter().sum();
            json!({
                "type": "sampled",
                "name": name,
                "unit": unit,
                "startValue": 0,
                "endValue": total,
                "samples": track.samples,
                "weights": track.weights,
            })
        })
        .collect();
    let frames: Vec<Value> = frames.iter().map(|name| json!({ "name": name })).collect();
    json!({
        "$schema": SCHEMA,
        "name": title,
        "exporter": concat!("corprof-record ", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles,
    })
}

/// The root frame the cpu mode puts on each sample: `[thread <name>]`.
fn is_thread(frame: &str) -> bool {
    frame.starts_with("[thread ") && frame.ends_with(']')
}
