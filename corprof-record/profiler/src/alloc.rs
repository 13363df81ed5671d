//! The alloc mode: takes allocations and gives a [`Profile`] in [`Unit::Bytes`], one stack per
//! allocating call path and allocated type. The stack is written root first, then a leaf frame
//! naming the type: `…;App::Work;[alloc System.Byte[]]`.
//!
//! Two sources, chosen by modes.rs:
//! - **AllocationTick** (`AllocMode::allocation_tick`, .NET 5+, the default): the runtime's own
//!   sampling event, about one per 100 KB, read from an in-process EventPipe session with the
//!   stack the runtime captured (alloc_tick.rs). Costs next to nothing between two ticks, and
//!   works after an attach.
//! - **ObjectAllocated** ([`AllocMode::object_allocated`]): the callback for every allocation
//!   (`COR_PRF_ENABLE_OBJECT_ALLOCATED`, launch only, which moves every allocation to the
//!   runtime's slow path). For each one it reads the object's size (`GetObjectSize2`) and walks
//!   the allocating thread's stack from inside the callback (`DoStackSnapshot` of the current
//!   thread).
//!   - [`Sampling::Exact`] walks and records every allocation: exact bytes per stack, at the cost
//!     of one stack walk per object.
//!   - [`Sampling::Sampled`] (the default on .NET Core 3.1, which has no in-process EventPipe)
//!     keeps a per-thread byte countdown drawn from an exponential distribution (mean
//!     [`MEAN_INTERVAL`], like the runtime's AllocationTick and Go's pprof): an allocation that
//!     crosses zero is sampled. Sampling points then form a Poisson process over the allocated
//!     bytes, so an object of `s` bytes is sampled with probability `p = 1 - exp(-s / mean)`;
//!     recording it with weight `s / p` makes every stack's expected total its true total.
//!
//! At the end, [`AllocMode::profile`] names what was recorded.

use crate::alloc_tick::AllocationTick;
use crate::frames::{self, Frame};
use corprof::sync::lock;
use corprof::types::{COR_PRF_MONITOR, ClassID, FunctionID};
use corprof::{FrameContext, LiveObject, ProfilerInfo, Result};
use corprof_record::profile::{Profile, Unit};
use std::cell::Cell;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Mutex, MutexGuard};

/// The mean number of bytes between two samples in [`Sampling::Sampled`].
pub const MEAN_INTERVAL: f64 = 100.0 * 1024.0;

/// The deepest stack recorded: deeper frames (towards the root) are dropped, so one runaway
/// recursion cannot make a single key unbounded.
const MAX_FRAMES: usize = 256;

/// How many distinct stacks are kept; allocations on further new stacks are counted on one
/// `[truncated]` stack so memory stays bounded.
const MAX_STACKS: usize = 100_000;

/// Which allocations are recorded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sampling {
    /// About one per `mean` bytes per thread, weighted (the module docs).
    Sampled { mean: f64 },
    /// Every one.
    Exact,
}

impl Sampling {
    /// The value of [`corprof_record::settings::ALLOC`]: `sampled` (the default, also when
    /// unset or empty) or `exact`.
    pub fn from_setting(value: Option<&str>) -> std::result::Result<Sampling, String> {
        match value.unwrap_or("") {
            "" | "sampled" => Ok(Sampling::Sampled { mean: MEAN_INTERVAL }),
            "exact" => Ok(Sampling::Exact),
            other => Err(format!("alloc: unknown {} {other:?} (sampled or exact)", corprof_record::settings::ALLOC)),
        }
    }
}

/// A recorded stack: its frames leaf first (as the walk gives them) and the allocated class.
type Key = (Vec<Frame>, ClassID);

/// What the callbacks collect; named only when [`AllocMode::profile`] is asked for.
#[derive(Default)]
struct Recorded {
    bytes: HashMap<Key, f64>,
    /// Names looked up while the IDs are certainly valid (on the allocating thread).
    functions: HashMap<FunctionID, String>,
    classes: HashMap<ClassID, String>,
    /// Weighted bytes of allocations whose stack was not kept (the stack table was full).
    truncated: f64,
    /// Bytes of ticks left out as the tool's own: the runtime building its managed event
    /// source's descriptors for the session this mode opened (see [`enabled_for_the_session`]).
    own: f64,
    /// Allocations recorded (sampled ones, or every one with [`Sampling::Exact`]).
    recorded: u64,
}

/// Where a sample came from.
#[derive(Clone, Copy, PartialEq)]
enum Origin {
    /// ObjectAllocated: no session of ours, nothing to leave out.
    Callback,
    /// An AllocationTick from the session this mode opened.
    Tick,
}

thread_local! {
    /// This thread's bytes left before its next sample (negative: draw a new countdown).
    static COUNTDOWN: Cell<f64> = const { Cell::new(-1.0) };
    /// This thread's random state (xorshift64*), 0 until seeded.
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// The alloc mode's state: give it every ObjectAllocated, ask it for the [`Profile`] at the end.
pub struct AllocMode {
    sampling: Sampling,
    recorded: Mutex<Recorded>,
}

impl AllocMode {
    /// The event-mask bits this mode needs, all to be set in `Initialize` (the runtime accepts
    /// `COR_PRF_ENABLE_OBJECT_ALLOCATED` only there, so this mode cannot start on attach).
    pub const MASK: COR_PRF_MONITOR = COR_PRF_MONITOR(
        COR_PRF_MONITOR::ENABLE_OBJECT_ALLOCATED.0
            | COR_PRF_MONITOR::OBJECT_ALLOCATED.0
            | COR_PRF_MONITOR::ENABLE_STACK_SNAPSHOT.0,
    );

    pub fn new(sampling: Sampling) -> AllocMode {
        AllocMode { sampling, recorded: Mutex::new(Recorded::default()) }
    }

    /// `ICorProfilerCallback::ObjectAllocated`: decides whether to sample, and records the
    /// object's stack and size if so. Call it from the callback itself (on the allocating
    /// thread, `object` still valid).
    pub fn object_allocated(&self, info: &ProfilerInfo, object: LiveObject<'_>, class: ClassID) -> Result<()> {
        let size = object.size(info)? as f64;
        let weight = match self.sampling {
            Sampling::Exact => size,
            Sampling::Sampled { mean } => match sample(size, mean) {
                Some(weight) => weight,
                None => return Ok(()),
            },
        };
        let sites = walk_this_thread(info);
        self.record(info, sites, class, weight, Origin::Callback);
        Ok(())
    }

    /// An AllocationTick the runtime delivered (see alloc_tick.rs): one sample of `tick.amount`
    /// bytes on the allocating thread's stack, walked here: an in-process session's runtime
    /// events come without one (the runtime walks stacks only for buffered sessions). Call it
    /// from the delivery itself, which runs on the allocating thread with the IDs valid.
    ///
    /// Crate-private: the tick's `type_id` is handed to the runtime as a ClassID, so it must be
    /// the payload of a delivery in progress, never bytes from anywhere else.
    pub(crate) fn allocation_tick(&self, info: &ProfilerInfo, tick: &AllocationTick) {
        let sites = walk_this_thread(info);
        // SAFETY: a tick's TypeID is the handle of the type just allocated, live on this thread
        // during the delivery, and a type's handle is its ClassID in the profiling API.
        let class = unsafe { ClassID::from_raw(tick.type_id) };
        self.record(info, sites, class, tick.amount as f64, Origin::Tick);
    }

    /// The bytes left out as the tool's own (its EventPipe session's start), rounded.
    pub(crate) fn own_bytes(&self) -> u64 {
        self.lock().own.round() as u64
    }

    /// How many allocations were recorded so far, and what they are (`samples` or
    /// `allocations`, as sampled or exact).
    pub(crate) fn recorded(&self) -> (u64, &'static str) {
        let what = if self.sampling == Sampling::Exact { "allocations" } else { "samples" };
        (self.lock().recorded, what)
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        lock(&self.recorded)
    }

    fn record(&self, info: &ProfilerInfo, sites: Vec<Frame>, class: ClassID, weight: f64, origin: Origin) {
        // Names are looked up outside the lock (the runtime may take its own locks) for the IDs
        // not yet known, then stored.
        let (new_functions, new_class) = {
            let r = self.lock();
            let functions: Vec<FunctionID> = sites
                .iter()
                .filter_map(|s| match s {
                    Some(f) if !r.functions.contains_key(f) => Some(*f),
                    _ => None,
                })
                .collect();
            (functions, !r.classes.contains_key(&class))
        };
        let function_names: Vec<(FunctionID, String)> = new_functions
            .into_iter()
            .map(|f| (f, function_short_name(info, f).unwrap_or_else(|e| format!("[function {e:?}]"))))
            .collect();
        let class_name =
            new_class.then(|| corprof::sig::class_name(info, class).unwrap_or_else(|e| format!("[class {e:?}]")));
        let mut r = self.lock();
        r.functions.extend(function_names);
        if let Some(name) = class_name {
            r.classes.insert(class, name);
        }
        if origin == Origin::Tick && enabled_for_the_session(&sites, &r.functions) {
            r.own += weight;
            return;
        }
        r.recorded += 1;
        let key = (sites, class);
        if let Some(bytes) = r.bytes.get_mut(&key) {
            *bytes += weight;
        } else if r.bytes.len() < MAX_STACKS {
            r.bytes.insert(key, weight);
        } else {
            r.truncated += weight;
        }
    }

    /// What was recorded so far, as a profile in bytes (rounded per stack).
    pub fn profile(&self) -> Profile {
        let r = self.lock();
        let mut profile = Profile::new(Unit::Bytes);
        for ((sites, class), bytes) in &r.bytes {
            let mut frames: Vec<String> =
                frames::folded(sites, |f| r.functions.get(&f).cloned().unwrap_or_else(|| "[unknown]".to_string()))
                    .collect();
            let class = r.classes.get(class).map_or("[unknown]", String::as_str);
            frames.push(format!("[alloc {class}]"));
            profile.add(&frames, bytes.round() as u64, 0);
        }
        if r.truncated > 0.0 {
            profile.add(&["[truncated]".to_string()], r.truncated.round() as u64, 0);
        }
        profile
    }
}

/// The runtime's enable command for a session that was open before the managed
/// `NativeRuntimeEventSource` existed (the session this mode opens at Initialize): the command
/// waits until the source's constructor registers it, which then runs it on whichever thread
/// first touched the source (on CoreCLR 8.0.4 the main thread, in `RuntimeEventSource`'s start-up
/// initialisation, before Main). `EventSource.DoCommand` under `NativeRuntimeEventSource..ctor`
/// is that command and nothing else: an app enabling the source itself (an EventListener) runs
/// DoCommand from `EnableEvents`, not from the constructor, and keeps its bytes, as do the app's
/// own event sources.
///
/// Why left out here and not avoided: on a short app on CoreCLR 8.0.4 this command allocated
/// 658 KiB of the 866 KiB reported (the source's descriptors and EventPipe metadata, hundreds of
/// events by reflection), and no session that gets AllocationTick can skip it. AllocationTick
/// comes from the runtime's provider only; a session names its providers by name; the managed
/// source registers under the same name, so every such session enables it, and its enable command
/// builds the descriptors before it looks at keywords or level. A session started after the
/// source exists (an attach) has the runtime run the command while starting it, and tried so on
/// CoreCLR 8.0.4 with no filter at all, no tick of it reached the profile: only the launch's
/// deferred command needs leaving out.
fn enabled_for_the_session(sites: &[Frame], names: &HashMap<FunctionID, String>) -> bool {
    let named = |frame: &Frame, name: &str| frame.is_some_and(|f| names.get(&f).is_some_and(|n| n == name));
    // Leaf first: the command, then (towards the root) the constructor that ran it.
    sites.iter().position(|f| named(f, DO_COMMAND)).is_some_and(|at| sites[at..].iter().any(|f| named(f, SOURCE_CTOR)))
}

const DO_COMMAND: &str = "System.Diagnostics.Tracing.EventSource::DoCommand";
const SOURCE_CTOR: &str = "System.Diagnostics.Tracing.NativeRuntimeEventSource::.ctor";

/// This thread's stack, leaf first, at most [`MAX_FRAMES`] frames; empty when the runtime
/// refuses the walk (CORPROF_E_STACKSNAPSHOT_UNSAFE: the bytes still count, on no stack).
fn walk_this_thread(info: &ProfilerInfo) -> Vec<Frame> {
    let mut sites = Vec::new();
    let walked = info.do_stack_snapshot_with(FrameContext::Without, |frame| {
        frames::push(&mut sites, frame.function_id());
        if sites.len() < MAX_FRAMES { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
    });
    if walked.is_err() {
        sites.clear();
    }
    sites
}

/// Counts `size` bytes down this thread's countdown: `Some(weight)` when the allocation is
/// sampled, with the bytes it stands for (`size / p`, `p` its chance of being sampled).
fn sample(size: f64, mean: f64) -> Option<f64> {
    COUNTDOWN.with(|countdown| {
        let mut left = countdown.get();
        if left < 0.0 {
            left = exponential(mean);
        }
        left -= size;
        if left > 0.0 {
            countdown.set(left);
            return None;
        }
        // The countdown is memoryless: the next one starts afresh at this allocation's end.
        countdown.set(exponential(mean));
        let p = -(-size / mean).exp_m1();
        Some(if p > 0.0 { size / p } else { mean })
    })
}

/// A draw from the exponential distribution with this mean.
fn exponential(mean: f64) -> f64 {
    // (0, 1]: 53 random bits, never 0 so the logarithm is finite.
    let u = ((next_random() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    -u.ln() * mean
}

/// xorshift64* on this thread's state, seeded from the clock and the thread's address space
/// position on first use (sampling needs independence, not cryptographic strength).
fn next_random() -> u64 {
    RNG.with(|state| {
        let mut x = state.get();
        if x == 0 {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let local = 0u8;
            x = (now.as_nanos() as u64) ^ (&local as *const u8 as u64).rotate_left(32) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

/// `Namespace.Type::Method` (nested types `Outer+Inner`) of a managed function.
pub fn function_short_name(info: &ProfilerInfo, function: FunctionID) -> Result<String> {
    // One name at a time (each function is named once per recording, then kept by the caller).
    let names = corprof::names::FunctionNames::with_capacity(info.clone(), 1);
    Ok(names.get(function)?.short.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_read_and_refused() {
        assert_eq!(Sampling::from_setting(None), Ok(Sampling::Sampled { mean: MEAN_INTERVAL }));
        assert_eq!(Sampling::from_setting(Some("exact")), Ok(Sampling::Exact));
        assert!(Sampling::from_setting(Some("every")).unwrap_err().contains("every"));
    }

    /// The weighted sum over many allocations is their true total (the estimator is unbiased),
    /// for sizes well below, near and above the mean.
    #[test]
    fn sampled_weights_add_up_to_the_true_total() {
        for size in [24.0, 1024.0, 50_000.0, 400_000.0] {
            let n = (200_000_000.0 / size) as u64;
            let estimated: f64 = (0..n).filter_map(|_| sample(size, MEAN_INTERVAL)).sum();
            let truth = size * n as f64;
            let error = (estimated - truth).abs() / truth;
            // ~2000 samples: one standard deviation is ≤ 2.3%; 10% is over 4.
            assert!(error < 0.10, "size {size}: estimated {estimated}, true {truth}");
        }
    }

    /// Only the runtime's own source's deferred enable is left out: not the app's sources, not an
    /// app's listener enabling the runtime's source, not the source's constructor alone.
    #[test]
    fn only_the_deferred_enable_of_the_runtimes_source_is_the_sessions() {
        // SAFETY: these IDs are only compared and looked up by this test, never given to the
        // runtime.
        let f = |n: usize| Some(unsafe { FunctionID::from_raw(n as _) });
        let names: HashMap<FunctionID, String> = [
            (1, DO_COMMAND),
            (2, SOURCE_CTOR),
            (3, "App.Program::Main"),
            (4, "App.Events::.ctor"),
            (5, "System.Diagnostics.Tracing.EventListener::EnableEvents"),
            (6, "System.Diagnostics.Tracing.ManifestBuilder::.ctor"),
        ]
        .into_iter()
        .map(|(n, name)| (f(n).unwrap(), name.to_string()))
        .collect();
        let left_out = |stack: &[Frame]| enabled_for_the_session(stack, &names);
        // Leaf first, as walked: the command under the runtime source's constructor, a native
        // run (the static constructor's) between.
        assert!(left_out(&[f(6), f(1), None, f(2), None, f(3)]));
        assert!(left_out(&[f(1), f(2)]));
        assert!(!left_out(&[f(6), f(1), f(4), f(3)]), "the app's own source");
        assert!(!left_out(&[f(6), f(1), f(5), f(3)]), "the app's listener enabling the runtime's source");
        assert!(!left_out(&[f(6), f(2), f(3)]), "the constructor without the command");
        assert!(!left_out(&[f(2), f(1), f(3)]), "the constructor called under the command");
        assert!(!left_out(&[]));
    }

    #[test]
    fn the_countdown_has_the_mean_asked_for() {
        let n = 100_000;
        let mean = (0..n).map(|_| exponential(1000.0)).sum::<f64>() / n as f64;
        assert!((mean - 1000.0).abs() < 20.0, "mean {mean}");
    }
}
