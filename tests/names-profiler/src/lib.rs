//! A test profiler for `tests/runtime/names.rs`: corprof's [`FunctionNames`] and [`ThreadNames`] in a
//! real runtime, on the Names app. Writes one line per fact to the file in `CORPROF_NAMES_OUT`
//! at Shutdown.
//!
//! Every time the app throws its `NamesApp.ProbeException`, the ExceptionThrown callback walks
//! the current thread's stack and writes `walk <tag> <thread name> <OS thread id>`, then per
//! managed frame up to the app's `Main` or a thread's start: `frame <short> | <signature> | <short
//! without the frame>` (the last: `FunctionNames::get`, what the runtime says with no frame).
//! With-info hooks on the app's generic methods (`Outer<T>.Inner<U>.Run`, `Util.Make<T>`) write
//! `enter <short> | <signature>` per call, named with the call's exact instantiation.
//! ThreadDestroyed writes `destroyed <name>` for a named thread, and `stale <name>` if the table
//! still answers for the destroyed ID.
#![deny(unsafe_code)]

use corprof::LiveObject;
use corprof::hooks::{self, HookFrame};
use corprof::names::FunctionNames;
use corprof::sync::lock;
use corprof::threads::ThreadNames;
use corprof::types::{COR_PRF_MONITOR, DWORD, FunctionID, ThreadID};
use corprof::{
    CorProfilerCallback, FrameContext, FunctionHooks, HResult, HookMode, IUnknown, ProfilerInfo, Result, WStr,
};
use std::ops::ControlFlow;
use std::sync::{Mutex, OnceLock};

pub const CLSID: corprof::GUID = corprof::GUID::parse("D958D093-865F-4B9F-A915-C12E3BF41C48");

/// The functions the hooks name, by the start of their short name without a frame.
const HOOKED: &[&str] = &["NamesApp.Outer<T>+Inner<U>::Run", "NamesApp.Util::Make<"];

#[derive(Default)]
pub struct Names {
    info: OnceLock<ProfilerInfo>,
    names: OnceLock<FunctionNames>,
    threads: ThreadNames,
    lines: Mutex<Vec<String>>,
}

impl Names {
    fn say(&self, line: String) {
        lock(&self.lines).push(line);
    }

    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(HResult::E_UNEXPECTED)
    }

    /// The exception's message: the probe's tag.
    fn walk(&self, tag: &str) -> Result<()> {
        let info = self.info()?;
        let names = self.names.get().ok_or(HResult::E_UNEXPECTED)?;
        let thread = info.get_current_thread_id()?;
        let name = self.threads.name(thread);
        let os = self.threads.os_thread_id(thread);
        self.say(format!("walk {tag} {} {}", name.as_deref().unwrap_or("-"), os.map_or("-".into(), |o| o.to_string())));
        let mut frames = Vec::new();
        let r = info.do_stack_snapshot_with(FrameContext::Without, |frame| {
            let Some(function) = frame.function_id() else { return ControlFlow::Continue(()) };
            let exact = names.frame(frame).map(|n| (n.short.to_string(), n.signature.to_string()));
            let plain = names.get(function).map(|n| n.short.to_string());

            frames.push((exact, plain));
            ControlFlow::Continue(())
        });
        r?;
        for (exact, plain) in frames {
            let (short, signature) = exact.unwrap_or_else(|e| (format!("error {e:?}"), String::new()));
            let plain = plain.unwrap_or_else(|e| format!("error {e:?}"));
            let outermost = short.ends_with("Program::Main") || short.contains("::Worker");
            self.say(format!("frame {short} | {signature} | {plain}"));
            if outermost {
                break;
            }
        }
        Ok(())
    }
}

impl CorProfilerCallback for Names {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(
            COR_PRF_MONITOR::THREADS | COR_PRF_MONITOR::EXCEPTIONS | COR_PRF_MONITOR::COR_PRF_ENABLE_STACK_SNAPSHOT,
        )?;
        let _ = self.names.set(FunctionNames::new(info.clone()));
        let info = self.info.get_or_init(|| info);
        hooks::install(self, info, HookMode::WithInfo)
    }

    fn thread_created(&self, thread: ThreadID) -> Result<()> {
        self.threads.created(thread);
        Ok(())
    }

    fn thread_destroyed(&self, thread: ThreadID) -> Result<()> {
        let name = self.threads.name(thread);
        self.threads.destroyed(thread);
        if let Some(name) = name {
            self.say(format!("destroyed {name}"));
            if let Some(stale) = self.threads.name(thread) {
                self.say(format!("stale {stale}"));
            }
        }
        Ok(())
    }

    fn thread_assigned_to_os_thread(&self, thread: ThreadID, os_thread: DWORD) -> Result<()> {
        self.threads.assigned_to_os_thread(thread, os_thread);
        Ok(())
    }

    fn thread_name_changed(&self, thread: ThreadID, name: Option<WStr<'_>>) -> Result<()> {
        self.threads.name_changed(thread, name);
        Ok(())
    }

    fn exception_thrown(&self, _exception: LiveObject<'_>) -> Result<()> {
        // The tag is the exception's message; reading it needs the object's layout, so the
        // walk's own frames tell which probe this is: the frame under Probe::Fire.
        if let Err(e) = self.walk("probe") {
            self.say(format!("error {e:?}"));
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Some(path) = std::env::var_os("CORPROF_NAMES_OUT") {
            let text: String = lock(&self.lines).iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(path, text).map_err(|_| HResult::E_FAIL)?;
        }
        Ok(())
    }
}

/// With-info hooks on the app's generic methods: each call's exact name.
impl FunctionHooks for Names {
    type Data = FunctionID;

    fn map_function(&self, function: FunctionID) -> Option<FunctionID> {
        let name = self.names.get()?.get(function).ok()?;
        HOOKED.iter().any(|prefix| name.short.starts_with(prefix)).then_some(function)
    }

    fn enter(&self, _function: FunctionID, frame: &HookFrame<'_>) {
        let Some(names) = self.names.get() else { return };
        match names.hook_frame(frame) {
            Ok(name) => self.say(format!("enter {} | {}", name.short, name.signature)),
            Err(e) => self.say(format!("enter error {e:?}")),
        }
    }
}

corprof::export_profiler!(Names, CLSID);
