//! A test profiler for `tests/runtime/stack.rs`: walks stacks through corprof's closure API while the
//! Stacks app runs, and writes one line per fact to the file in `CORPROF_STACK_OUT`.
//!
//! When `StacksApp.Marker::SleeperReady` is about to be JIT-compiled it remembers that thread (the
//! app's Sleeper, which then blocks until the app is done). When `StacksApp.Marker::Hit` is about
//! to be JIT-compiled (Main → A → B → C → Hit on the main thread) it walks:
//!
//! - the current thread, whole, then stopped after two frames, then with register contexts, then
//!   with a closure that panics on the first frame, then with a closure that starts a walk of its
//!   own (the runtime refuses the inner one);
//! - the Sleeper thread from this thread (the runtime refuses: no suspension);
//! - from a thread of its own, with no `unsafe`: its own stack (no managed frame); a `?` out of a
//!   scope holding the runtime suspended; then the Sleeper thread, found among the threads the
//!   suspension lists (`suspend_runtime`, `Suspension::threads`, `Suspension::walk`). With
//!   `CORPROF_STACK_PANIC` set, that walk's closure panics.
//!
//! Function IDs are collected during the walks and named (`Namespace.Type::Method`) afterwards.
//!
//! With `CORPROF_STACK_SAMPLE` set (any app), a sampler thread started in `Initialize` suspends
//! the runtime every millisecond and walks every managed thread, with no `unsafe`, until
//! `Shutdown` stops and joins it; it writes one line of counts.

use corprof::types::{COR_PRF_MONITOR, CorOpenFlags, FunctionID, ThreadID};
use corprof::{CorProfilerCallback, Frame, FrameContext, HResult, IUnknown, MetaDataImport, ProfilerInfo, Result};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

pub const CLSID: corprof::GUID = corprof::GUID::parse("3C5A7E91-2B4D-4F60-8A17-9E0B6C2D4F58");

/// The offset of `Rip` in the x86-64 `CONTEXT` the runtime passes (winnt.h / the PAL's pal.h).
const CONTEXT_RIP_OFFSET: usize = 0xF8;

#[derive(Default)]
pub struct Stacks {
    info: OnceLock<ProfilerInfo>,
    sleeper: Mutex<Option<ThreadID>>,
    lines: Mutex<Vec<String>>,
    done: Mutex<bool>,
    sampler: Mutex<Option<(Arc<AtomicBool>, JoinHandle<Samples>)>>,
}

/// What the sampler saw.
#[derive(Default)]
struct Samples {
    rounds: u64,
    walks: u64,
    frames: u64,
    /// What the runtime refused (a suspension, a listing, a walk), by code.
    refused: BTreeMap<String, u64>,
}

/// Suspends the runtime every millisecond and walks each managed thread, until `stop`.
fn sample_until(info: &ProfilerInfo, stop: &AtomicBool) -> Samples {
    let mut samples = Samples::default();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(1));
        let suspension = match info.suspend_runtime() {
            Ok(suspension) => suspension,
            Err(e) => {
                *samples.refused.entry(format!("suspend {}", outcome(Err(e)))).or_default() += 1;
                continue;
            }
        };
        samples.rounds += 1;
        let threads = match suspension.threads() {
            Ok(threads) => threads,
            Err(e) => {
                *samples.refused.entry(format!("threads {}", outcome(Err(e)))).or_default() += 1;
                continue;
            }
        };
        for thread in threads {
            let mut frames = 0;
            let walked = suspension.walk(thread, FrameContext::Without, |_| {
                frames += 1;
                ControlFlow::Continue(())
            });
            match walked {
                Ok(()) => {
                    samples.walks += 1;
                    samples.frames += frames;
                }
                Err(e) => *samples.refused.entry(format!("walk {}", outcome(Err(e)))).or_default() += 1,
            }
        }
    }
    samples
}

/// What one frame was, kept for naming after the walk.
enum Seen {
    Native,
    Managed(FunctionID),
}

fn seen(frame: &Frame<'_>) -> Seen {
    frame.function_id().map_or(Seen::Native, Seen::Managed)
}

/// `Ok`, or the code's name.
fn outcome(result: Result<()>) -> String {
    match result {
        Ok(()) => "Ok".to_string(),
        Err(e) => e.name().map_or_else(|| format!("{:#x}", e.0), str::to_string),
    }
}

impl Stacks {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(HResult::E_UNEXPECTED)
    }

    fn say(&self, line: String) {
        self.lines.lock().unwrap().push(line);
    }

    /// `Namespace.Type::Method` of a managed function.
    fn name(&self, function_id: FunctionID) -> Result<String> {
        let info = self.info()?;
        let f = info.get_function_info(function_id)?;
        let import = info.get_module_metadata::<MetaDataImport>(f.module_id, CorOpenFlags::ofRead)?;
        let method = import.get_method_props(f.token)?;
        let class = import.get_type_def_props(method.class)?;
        Ok(format!("{}::{}", class.name, method.name))
    }

    fn names(&self, frames: &[Seen]) -> Vec<String> {
        frames
            .iter()
            .map(|f| match f {
                Seen::Native => "<native>".to_string(),
                Seen::Managed(id) => self.name(*id).unwrap_or_else(|e| format!("<error {e:?}>")),
            })
            .collect()
    }

    /// The walks of the main thread, from inside JITCompilationStarted of `Marker::Hit`.
    fn walk_current(&self) -> Result<()> {
        let info = self.info()?;

        let mut frames = Vec::new();
        let r = info.do_stack_snapshot_with(FrameContext::Without, |frame| {
            frames.push(seen(frame));
            ControlFlow::Continue(())
        });
        self.say(format!("walk {}: {}", outcome(r), self.names(&frames).join(" ")));

        let mut visited = 0;
        let r = info.do_stack_snapshot_with(FrameContext::Without, |_| {
            visited += 1;
            if visited == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        self.say(format!("stop after 2 {}: visited {visited}", outcome(r)));

        // With contexts: every managed frame has one, as large as the platform's CONTEXT, and
        // its Rip is the frame's IP; no native frame has one.
        let (mut managed, mut with_context, mut rip_is_ip, mut native_with_context) = (0, 0, 0, 0);
        let mut sizes = std::collections::BTreeSet::new();
        let r = info.do_stack_snapshot_with(FrameContext::With, |frame| {
            match (frame.function_id(), frame.context()) {
                (Some(_), Some(ctx)) => {
                    managed += 1;
                    with_context += 1;
                    sizes.insert(ctx.len());
                    let rip = ctx
                        .get(CONTEXT_RIP_OFFSET..CONTEXT_RIP_OFFSET + 8)
                        .map(|b| usize::from_le_bytes(b.try_into().expect("8 bytes")));
                    if rip == Some(frame.ip()) {
                        rip_is_ip += 1;
                    }
                }
                (Some(_), None) => managed += 1,
                (None, Some(_)) => native_with_context += 1,
                (None, None) => {}
            }
            ControlFlow::Continue(())
        });
        self.say(format!(
            "context {}: {with_context}/{managed} managed frames, sizes {sizes:?}, rip==ip {rip_is_ip}, \
             native frames with a context {native_with_context}",
            outcome(r)
        ));

        // A panic in the closure ends the walk and comes back out of the call.
        let mut calls = 0;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            info.do_stack_snapshot_with(FrameContext::Without, |_| {
                calls += 1;
                panic!("boom in the walk");
            })
        }));
        let message = match &caught {
            Ok(r) => format!("no panic ({})", outcome(*r)),
            Err(payload) => panic_message(&**payload),
        };
        self.say(format!("panic re-raised: {message:?} after {calls} call(s)"));

        // A walk inside a walk's closure.
        let mut inner = None;
        let r = info.do_stack_snapshot_with(FrameContext::Without, |_| {
            let mut frames = 0;
            let r = info.do_stack_snapshot_with(FrameContext::Without, |_| {
                frames += 1;
                ControlFlow::Continue(())
            });
            inner = Some(format!("{} with {frames} frame(s)", outcome(r)));
            ControlFlow::Break(())
        });
        self.say(format!("nested {}: inner {}", outcome(r), inner.unwrap_or_default()));

        // Another thread, not suspended: Linux refuses.
        if let Some(sleeper) = *self.sleeper.lock().unwrap() {
            let mut calls = 0;
            // SAFETY: the Sleeper thread blocks until Main has returned from the chain, so it is
            // alive for the whole call.
            let r = unsafe {
                info.do_stack_snapshot_of(sleeper, FrameContext::Without, |_| {
                    calls += 1;
                    ControlFlow::Continue(())
                })
            };
            self.say(format!("sleeper unsuspended {}: {calls} frame(s)", outcome(r)));
            self.walk_from_own_thread(sleeper);
        } else {
            self.say("no sleeper thread seen".to_string());
        }
        Ok(())
    }

    /// From a thread the runtime does not manage: its own (empty) stack, then the Sleeper's while
    /// the runtime is suspended, all without `unsafe`. With `CORPROF_STACK_PANIC` set, the walk of
    /// the Sleeper panics instead and the panic ends that thread.
    fn walk_from_own_thread(&self, sleeper: ThreadID) {
        let panicky = std::env::var_os("CORPROF_STACK_PANIC").is_some();
        let joined = std::thread::scope(|s| {
            s.spawn(|| {
                let info = self.info().expect("initialized");
                let mut own = 0;
                let r = info.do_stack_snapshot_with(FrameContext::Without, |_| {
                    own += 1;
                    ControlFlow::Continue(())
                });
                self.say(format!("own thread {}: {own} frame(s)", outcome(r)));
                // A `?` out of a scope holding the suspension resumes the runtime: the next
                // suspension succeeds.
                self.say(format!("early return under suspension: {}", outcome(fail_while_suspended(info))));
                self.say(self.sample_sleeper(info, sleeper, panicky));
            })
            .join()
        });
        if let Err(payload) = joined {
            self.say(format!("walking thread panicked: {:?}, the app goes on", panic_message(&*payload)));
        }
    }

    /// Suspends the runtime, lists its threads and walks the Sleeper's stack.
    fn sample_sleeper(&self, info: &ProfilerInfo, sleeper: ThreadID, panicky: bool) -> String {
        let suspension = match info.suspend_runtime() {
            Ok(suspension) => suspension,
            Err(e) => return format!("sleeper suspended: suspend {}", outcome(Err(e))),
        };
        let again = info.suspend_runtime().map(drop);
        // The runtime suspends itself for a GC: on this thread it would wait for itself.
        let gc = info.force_gc();
        let threads = match suspension.threads() {
            Ok(threads) => threads.collect::<Vec<_>>(),
            Err(e) => return format!("sleeper suspended: threads {}", outcome(Err(e))),
        };
        let Some(&thread) = threads.iter().find(|t| t.id() == sleeper) else {
            return format!("sleeper suspended: not among the {} listed thread(s)", threads.len());
        };
        let mut frames = Vec::new();
        let walked = suspension.walk(thread, FrameContext::Without, |frame| {
            if panicky {
                panic!("boom under suspension");
            }
            frames.push(seen(frame));
            ControlFlow::Continue(())
        });
        let os_id = suspension.os_thread_id(thread).map(|id| id != 0);
        let domain = suspension.app_domain(thread).map(|d| !d.is_null());
        let resumed = suspension.resume();
        let app: Vec<String> = self.names(&frames).into_iter().filter(|n| n.starts_with("StacksApp.")).collect();
        format!(
            "sleeper suspended: suspend Ok, again {}, force_gc {}, listed, os id {:?}, app domain {:?}, walk {}: app \
             frames {}; resume {}",
            outcome(again),
            outcome(gc),
            os_id,
            domain,
            outcome(walked),
            app.join(" "),
            outcome(resumed)
        )
    }
}

/// Suspends the runtime, then fails with `?` while the suspension is held.
fn fail_while_suspended(info: &ProfilerInfo) -> Result<()> {
    let _suspension = info.suspend_runtime()?;
    Err(HResult::E_FAIL)?;
    Ok(())
}

/// A panic payload's message.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

impl CorProfilerCallback for Stacks {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::JIT_COMPILATION | COR_PRF_MONITOR::COR_PRF_ENABLE_STACK_SNAPSHOT)?;
        if std::env::var_os("CORPROF_STACK_SAMPLE").is_some() {
            let stop = Arc::new(AtomicBool::new(false));
            let (flag, info) = (Arc::clone(&stop), info.clone());
            let thread = std::thread::spawn(move || sample_until(&info, &flag));
            *self.sampler.lock().unwrap() = Some((stop, thread));
        }
        let _ = self.info.set(info);
        Ok(())
    }

    fn jit_compilation_started(&self, function_id: FunctionID, _safe: bool) -> Result<()> {
        let name = self.name(function_id)?;
        match name.as_str() {
            "StacksApp.Marker::SleeperReady" => {
                *self.sleeper.lock().unwrap() = Some(self.info()?.get_current_thread_id()?);
            }
            "StacksApp.Marker::Hit" => {
                let mut done = self.done.lock().unwrap();
                if !*done {
                    *done = true;
                    if let Err(e) = self.walk_current() {
                        self.say(format!("error {e:?}"));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Some((stop, thread)) = self.sampler.lock().unwrap().take() {
            stop.store(true, Ordering::Relaxed);
            let line = match thread.join() {
                Ok(s) => format!(
                    "sampler: rounds {}, walks {}, frames {}, refused {:?}",
                    s.rounds, s.walks, s.frames, s.refused
                ),
                Err(payload) => format!("sampler panicked: {:?}", panic_message(&*payload)),
            };
            self.say(line);
        }
        if let Some(path) = std::env::var_os("CORPROF_STACK_OUT") {
            let text: String = self.lines.lock().unwrap().iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(path, text).map_err(|_| HResult::E_FAIL)?;
        }
        Ok(())
    }
}

corprof::export_profiler!(Stacks, CLSID);
