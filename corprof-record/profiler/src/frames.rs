//! The frames of a recorded stack, as the cpu and alloc modes keep them: leaf first (the order
//! a walk gives them), a managed function or `None` for a run of native frames, which the folded
//! formats write as one `[native]`.

use corprof::types::FunctionID;

/// One frame: `Some` managed function, or `None` for a run of native frames.
pub(crate) type Frame = Option<FunctionID>;

/// Adds `frame` to a stack being walked, a run of native frames being one `None`.
pub(crate) fn push(frames: &mut Vec<Frame>, frame: Frame) {
    if frame.is_some() || frames.last() != Some(&None) {
        frames.push(frame);
    }
}

/// The frames outermost first, each named by `name`, a run of native frames as `[native]`.
pub(crate) fn folded<'a>(
    frames: &'a [Frame],
    mut name: impl FnMut(FunctionID) -> String + 'a,
) -> impl Iterator<Item = String> + 'a {
    frames.iter().rev().map(move |frame| match frame {
        Some(function) => name(*function),
        None => "[native]".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(n: usize) -> Frame {
        // SAFETY: these IDs are only compared and printed, never given to the runtime.
        Some(unsafe { FunctionID::from_raw(n as _) })
    }

    #[test]
    fn a_run_of_native_frames_is_one() {
        let mut frames = Vec::new();
        for frame in [None, None, f(1), None, None, None, f(2), f(3), None] {
            push(&mut frames, frame);
        }
        assert_eq!(frames, vec![None, f(1), None, f(2), f(3), None]);
    }

    #[test]
    fn folded_is_outermost_first() {
        let frames = [f(1), None, f(2)];
        let names: Vec<String> = folded(&frames, |id| format!("F{}", id.as_raw())).collect();
        assert_eq!(names, ["F2", "[native]", "F1"]);
    }
}
