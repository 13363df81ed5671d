//! The conformance suite's profiler: one library for every scenario of tests/conformance/, the
//! scenario chosen when the runtime loads it by the variable [`SCENARIO`]
//! (`CORPROF_CONF_SCENARIO=gc`), as corprof-record's profiler chooses its mode.
//!
//! A scenario is a folder `tests/conformance/<name>/`: its C# app and its module (`mod.rs`,
//! whose doc is the scenario's row in CONFORMANCE.md), holding a profiler type of its own. The
//! class factory below (`DllGetClassObject`) reads [`SCENARIO`] each time the runtime asks for a
//! profiler and serves that scenario's type, so every scenario keeps its own callbacks, hooks
//! and `Drop`, exactly as a library of its own would have them.
//!
//! Every scenario's profiler has the CLSID [`CLSID`]. The notification scenario's second
//! profiler, the notification-only peer beside the main one, has [`PEER_CLSID`]: the runtime
//! loads both from this one file (a path already loaded is not loaded again) into a process with
//! one environment, and asks both the same questions (`LoadAsNotificationOnly` too), so the
//! CLSID it asks for is the only thing that tells them apart.
//!
//! A value of [`SCENARIO`] that names no scenario, or none at all, gets a profiler that says so
//! in one line on stderr and fails `Initialize` (or `InitializeForAttach`) with `E_FAIL`: the
//! runtime unloads it and the app runs on unprofiled.

mod support;

mod allocbyclass;
mod classunload;
mod dispenser;
mod dynamicoptimization;
mod eltslowpath;
mod elttransitions;
mod eventpipe;
mod exceptions;
mod gc;
mod gcbasic;
mod gcheapenumeration;
mod inlining;
mod loading;
mod multiple;
mod notification;
mod rejitinlining;
mod reversestartup;
mod statics;
mod threads;
mod transitions;

// The class factory's plumbing, which `export_profiler!` expands to: that macro serves one type
// under one CLSID, and this library chooses among several types at load time.
use corprof::imp::{ProfilerFactory, dll_get_class_object};
use corprof::{CorProfilerCallback, GUID, HRESULT, HResult, IUnknown, Result};
use std::ffi::{OsString, c_void};
use std::marker::PhantomData;

/// The variable naming the scenario.
pub const SCENARIO: &str = "CORPROF_CONF_SCENARIO";

/// The CLSID of every scenario's profiler.
pub const CLSID: GUID = GUID::parse("6A0F3C21-4B7E-4D9A-8E15-2C3B4A5D6E00");

/// The CLSID of the notification scenario's notification-only peer.
pub const PEER_CLSID: GUID = GUID::parse("6A0F3C21-4B7E-4D9A-8E15-2C3B4A5D6E09");

/// `DllGetClassObject`'s signature: what serves a scenario.
type Serve = unsafe fn(*const GUID, *const GUID, *mut *mut c_void) -> HRESULT;

/// Every scenario: its name (its folder's, and what [`SCENARIO`] says) and what serves it.
const SCENARIOS: &[(&str, Serve)] = &[
    ("allocbyclass", serve::<allocbyclass::AllocByClass>),
    ("classunload", serve::<classunload::ClassUnload>),
    ("dispenser", serve::<dispenser::Dispenser>),
    ("dynamicoptimization", serve::<dynamicoptimization::DynamicOptimization>),
    ("eltslowpath", serve::<eltslowpath::EltSlowPath>),
    ("elttransitions", serve::<elttransitions::EltTransitions>),
    ("eventpipe", serve::<eventpipe::EventPipe>),
    ("exceptions", serve::<exceptions::Exceptions>),
    ("gc", serve::<gc::Gc>),
    ("gcbasic", serve::<gcbasic::GcBasic>),
    ("gcheapenumeration", serve::<gcheapenumeration::GcHeapEnumeration>),
    ("inlining", serve::<inlining::Inlining>),
    ("loading", serve::<loading::Loading>),
    ("multiple", serve::<multiple::Multiple>),
    ("notification", serve_notification),
    ("rejitinlining", serve::<rejitinlining::RejitInlining>),
    ("reversestartup", serve::<reversestartup::ReverseStartup>),
    ("statics", serve::<statics::Statics>),
    ("threads", serve::<threads::Threads>),
    ("transitions", serve::<transitions::Transitions>),
];

/// What serves the scenario `name` (the value of [`SCENARIO`]), or why there is none.
fn scenario(name: Option<OsString>) -> std::result::Result<Serve, String> {
    let names = SCENARIOS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    let Some(name) = name else { return Err(format!("{SCENARIO} is not set: name one of {names}")) };
    SCENARIOS
        .iter()
        .find(|(n, _)| name == *n)
        .map(|(_, serve)| *serve)
        .ok_or_else(|| format!("{SCENARIO}={:?} is not a scenario: name one of {names}", name.to_string_lossy()))
}

/// The class factory of profiler type `P`, under [`CLSID`].
struct Factory<P>(PhantomData<P>);

impl<P: CorProfilerCallback + Default> ProfilerFactory for Factory<P> {
    type Profiler = P;
    const CLSID: GUID = CLSID;
    fn create() -> P {
        P::default()
    }
}

/// The class factory of the notification scenario's peer, under [`PEER_CLSID`].
struct PeerFactory;

impl ProfilerFactory for PeerFactory {
    type Profiler = notification::peer::Peer;
    const CLSID: GUID = PEER_CLSID;
    fn create() -> notification::peer::Peer {
        notification::peer::Peer::default()
    }
}

/// Serves profiler type `P` under [`CLSID`].
///
/// # Safety
/// Pointers as COM's `DllGetClassObject` contract has them.
unsafe fn serve<P: CorProfilerCallback + Default>(
    rclsid: *const GUID,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    // SAFETY: the caller's pointers, as `dll_get_class_object` requires them.
    unsafe { dll_get_class_object::<Factory<P>>(rclsid, riid, ppv) }
}

/// Serves the notification scenario: its main profiler under [`CLSID`], its peer under
/// [`PEER_CLSID`].
///
/// # Safety
/// Pointers as COM's `DllGetClassObject` contract has them.
unsafe fn serve_notification(rclsid: *const GUID, riid: *const GUID, ppv: *mut *mut c_void) -> HRESULT {
    // SAFETY: `rclsid`, when not null, points to a GUID (the contract); null is left to
    // `dll_get_class_object`, which refuses it.
    let peer = !rclsid.is_null() && unsafe { *rclsid } == PEER_CLSID;
    if peer {
        // SAFETY: the caller's pointers, as `dll_get_class_object` requires them.
        unsafe { dll_get_class_object::<PeerFactory>(rclsid, riid, ppv) }
    } else {
        // SAFETY: the caller's pointers, passed on.
        unsafe { serve::<notification::Main>(rclsid, riid, ppv) }
    }
}

/// The profiler served when [`SCENARIO`] names no scenario: it says why and fails to start.
struct NoScenario {
    why: String,
}

impl Default for NoScenario {
    fn default() -> NoScenario {
        NoScenario { why: scenario(std::env::var_os(SCENARIO)).err().unwrap_or_default() }
    }
}

impl NoScenario {
    fn refuse(&self) -> Result<()> {
        eprintln!("conformance: {}", self.why);
        Err(HResult::E_FAIL)
    }
}

impl CorProfilerCallback for NoScenario {
    fn initialize(&self, _unknown: &IUnknown) -> Result<()> {
        self.refuse()
    }

    fn initialize_for_attach(&self, _unknown: &IUnknown, _client_data: &[u8]) -> Result<()> {
        self.refuse()
    }
}

/// Where the runtime asks for a profiler (`CORECLR_PROFILER`, `CORECLR_NOTIFICATION_PROFILERS`,
/// an attach, a startup profiler named through a diagnostic port): the scenario is read now and
/// served, or [`NoScenario`] is.
///
/// # Safety
/// Pointers as COM's `DllGetClassObject` contract has them.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn DllGetClassObject(
    rclsid: *const GUID,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    let serve = scenario(std::env::var_os(SCENARIO)).unwrap_or(serve::<NoScenario>);
    // SAFETY: the runtime's pointers, passed on as the contract has them.
    unsafe { serve(rclsid, riid, ppv) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every folder of tests/conformance with a `mod.rs` is a scenario of the table, and every
    /// scenario of the table has its folder: a module left out of the table would never run.
    #[test]
    fn every_scenario_folder_is_served() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut folders: Vec<String> = std::fs::read_dir(dir)
            .expect("tests/conformance")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.join("mod.rs").is_file())
            .map(|p| p.file_name().and_then(|n| n.to_str()).expect("a UTF-8 folder name").to_string())
            .collect();
        folders.sort();
        let served: Vec<&str> = SCENARIOS.iter().map(|(n, _)| *n).collect();
        assert_eq!(folders, served);
    }

    #[test]
    fn an_unknown_or_missing_name_says_which_names_there_are() {
        let names = "allocbyclass, classunload, dispenser, dynamicoptimization, eltslowpath, elttransitions, \
                     eventpipe, exceptions, gc, gcbasic, gcheapenumeration, inlining, loading, multiple, \
                     notification, rejitinlining, reversestartup, statics, threads, transitions";
        assert_eq!(
            scenario(Some("gcc".into())).err(),
            Some(format!("CORPROF_CONF_SCENARIO=\"gcc\" is not a scenario: name one of {names}"))
        );
        assert_eq!(scenario(None).err(), Some(format!("CORPROF_CONF_SCENARIO is not set: name one of {names}")));
        // Names are matched whole and exactly.
        assert!(scenario(Some("GC".into())).is_err());
        assert!(scenario(Some("gc ".into())).is_err());
        assert!(scenario(Some("gc".into())).is_ok());
    }
}
