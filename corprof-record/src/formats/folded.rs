//! Folded stacks (Brendan Gregg's format, what flamegraph.pl and inferno read): one line per
//! stack, `root;…;leaf <value>`.

use std::io::{self, Write};

use super::{folded_frame, valued_stacks};
use crate::profile::Profile;

/// Writes one `root;…;leaf value` line per stack with a value.
pub(super) fn write(profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
    for line in lines(profile) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The folded lines, also what inferno draws the flame graph from.
pub(super) fn lines(profile: &Profile) -> Vec<String> {
    valued_stacks(profile)
        .map(|(frames, value)| {
            let frames: Vec<String> = frames.iter().map(|f| folded_frame(f)).collect();
            format!("{} {value}", frames.join(";"))
        })
        .collect()
}
