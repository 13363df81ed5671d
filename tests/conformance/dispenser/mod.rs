//! Conformance scenario "dispenser", after the runtime's `src/tests/profiler/unittest/metadatagetdispenser.cs`
//! (profiler `native/metadatagetdispenser`): for every loading module, the metadata dispenser
//! from libcoreclr's exported `MetaDataGetDispenser` (CLSID_CorMetaDataDispenser,
//! IID_IMetaDataDispenserEx) opens the module's file (GetModuleInfo2's path) with
//! `OpenScope(ofRead, IID_IMetaDataImport)`. The runtime test does so at ModuleLoadStarted; there
//! 8.0.4 answers GetModuleInfo2 with CORPROF_E_DATAINCOMPLETE (asserted) and 3.1.23 crashes in it
//! (not asked), so the scope is opened at ModuleLoadFinished. Beyond the runtime's checks: the scope so opened is read
//! through corprof's `MetaDataImport`, and the app module's name and MVID equal those of the
//! runtime's own view (GetModuleMetaData).

use crate::support::{Recorder, lock};
use corprof::interfaces::{IID_IMetaDataDispenserEx, IID_IMetaDataImport, IMetaDataDispenserEx};
use corprof::types::{COR_PRF_HIGH_MONITOR, COR_PRF_MONITOR, CorOpenFlags, ModuleID};
use corprof::{ComPtr, CorProfilerCallback, GUID, HRESULT, HResult, IUnknown, MetaDataImport, Result};
use std::collections::BTreeSet;
use std::ffi::{CString, c_void};
use std::sync::Mutex;

/// `CLSID_CorMetaDataDispenser` (cor.h declares it extern; its value is in the runtime's guids).
const CLSID_COR_METADATA_DISPENSER: GUID = GUID::parse("E5CB7A31-7512-11D2-89CE-0080C792E5D8");

/// The app's own module, the one compared with the runtime's view.
const APP_MODULE: &str = "ConfDispenser.dll";

/// `MetaDataGetDispenser(REFCLSID, REFIID, LPVOID*)`, as libcoreclr exports it.
type GetDispenser = unsafe extern "system" fn(*const GUID, *const GUID, *mut *mut c_void) -> HRESULT;

#[derive(Default)]
pub struct Dispenser {
    rec: Recorder,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    opened: u32,
    /// Each module whose file the dispenser did not open, with why.
    failures: Vec<String>,
    /// `(scope name, MVID)` of the app module as the dispenser read it.
    app_from_file: Option<(String, GUID)>,
    /// The same as the runtime's GetModuleMetaData gives it.
    app_from_runtime: Option<(String, GUID)>,
    /// What GetModuleInfo2 answered at ModuleLoadStarted, when it failed.
    at_started: BTreeSet<String>,
}

impl Dispenser {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// libcoreclr's path, as mapped into this process (the runtime test reads /proc/self/maps too).
    fn coreclr_path() -> Option<String> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        maps.lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.ends_with("/libcoreclr.so"))
            .map(String::from)
    }

    /// The dispenser, from the already loaded libcoreclr's `MetaDataGetDispenser`.
    fn dispenser() -> std::result::Result<ComPtr<IMetaDataDispenserEx>, String> {
        let path = Self::coreclr_path().ok_or("libcoreclr.so is not mapped")?;
        let cpath = CString::new(path).map_err(|e| e.to_string())?;
        // SAFETY: `cpath` is a NUL-terminated path; RTLD_NOLOAD only looks the loaded library up.
        let lib = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if lib.is_null() {
            return Err("dlopen(RTLD_NOLOAD) found no libcoreclr".into());
        }
        let name = c"MetaDataGetDispenser";
        // SAFETY: `lib` is the handle dlopen just returned, `name` a NUL-terminated symbol name.
        let sym = unsafe { libc::dlsym(lib, name.as_ptr()) };
        // SAFETY: `lib` came from dlopen above; the runtime keeps libcoreclr loaded regardless.
        unsafe { libc::dlclose(lib) };
        if sym.is_null() {
            return Err(format!("no export {}", name.to_str().unwrap_or("?")));
        }
        // SAFETY: libcoreclr's MetaDataGetDispenser has exactly this signature (cor.h, `STDAPI
        // MetaDataGetDispenser(REFCLSID rclsid, REFIID riid, LPVOID FAR *ppv)`).
        let get: GetDispenser = unsafe { std::mem::transmute::<*mut c_void, GetDispenser>(sym) };
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: both GUIDs outlive the call and `out` is a valid place for the interface pointer.
        let hr = HResult(unsafe { get(&CLSID_COR_METADATA_DISPENSER, &IID_IMetaDataDispenserEx, &mut out) });
        hr.ok().map_err(|e| format!("MetaDataGetDispenser: {e}"))?;
        // SAFETY: on success `out` holds a reference to an IMetaDataDispenserEx that is now ours.
        unsafe { ComPtr::from_raw(out.cast::<IMetaDataDispenserEx>()) }.ok_or_else(|| "a null dispenser".into())
    }

    /// Opens `path` for reading through the dispenser, as an IMetaDataImport.
    fn open_scope(path: &str) -> std::result::Result<MetaDataImport, String> {
        let dispenser = Self::dispenser()?;
        let wide: Vec<u16> = path.encode_utf16().chain(std::iter::once(0)).collect();
        let mut out: *mut IUnknown = std::ptr::null_mut();
        // SAFETY: `wide` is a NUL-terminated UTF-16 path, the IID outlives the call, and `out` is a
        // valid place for the returned interface pointer.
        let hr = HResult(unsafe {
            dispenser.OpenScope(wide.as_ptr(), CorOpenFlags::ofRead.0, &IID_IMetaDataImport, &mut out)
        });
        hr.ok().map_err(|e| format!("OpenScope: {e}"))?;
        // SAFETY: on success `out` holds a reference to the opened scope that is now ours.
        let scope = unsafe { ComPtr::from_raw(out) }.ok_or("OpenScope gave null")?;
        MetaDataImport::from_unknown(&scope).map_err(|e| format!("IMetaDataImport: {e}"))
    }
}

/// The file name of a path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl CorProfilerCallback for Dispenser {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        self.rec.start(unknown, COR_PRF_MONITOR::MODULE_LOADS, COR_PRF_HIGH_MONITOR::COR_PRF_HIGH_MONITOR_NONE)?;
        Ok(())
    }

    fn module_load_started(&self, module: ModuleID) -> Result<()> {
        // The runtime test opens the file here; 8.0.4 does not know the path yet, and 3.1.23
        // crashes in GetModuleInfo2 (a SIGSEGV inside ProfToEEInterfaceImpl::GetModuleInfo2 when
        // asked for the base address this early), so it is only asked from .NET 5 on.
        if self.rec.runtime_major() < 5 {
            return Ok(());
        }
        if let Err(e) = self.rec.info()?.get_module_info2(module) {
            self.state().at_started.insert(e.to_string());
        }
        Ok(())
    }

    fn module_load_finished(&self, module: ModuleID, _status: HResult) -> Result<()> {
        let path = match self.rec.info()?.get_module_info2(module) {
            Ok(m) => m.name,
            Err(e) => {
                self.state().failures.push(format!("GetModuleInfo2: {e}"));
                return Ok(());
            }
        };
        let opened = Self::open_scope(&path).and_then(|import| {
            import.get_scope_props().map(|p| (p.name, p.pmvid)).map_err(|e| format!("GetScopeProps: {e}"))
        });
        let is_app = file_name(&path) == APP_MODULE;
        let from_runtime = if is_app {
            let import = self.rec.info()?.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)?;
            let props = import.get_scope_props()?;
            Some((props.name, props.pmvid))
        } else {
            None
        };
        let mut s = self.state();
        match opened {
            Ok(props) => {
                s.opened += 1;
                if is_app {
                    s.app_from_file = Some(props);
                    s.app_from_runtime = from_runtime;
                }
            }
            Err(e) => s.failures.push(format!("{}: {e}", file_name(&path))),
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let s = self.state();
        self.rec.say(format!("GetModuleInfo2 at ModuleLoadStarted failed with: {:?}", s.at_started));
        self.rec.say(format!("modules opened by the dispenser: {}", s.opened > 0));
        self.rec.say(format!("modules it failed on: {:?}", s.failures));
        let described = |v: &Option<(String, GUID)>| v.as_ref().map(|(name, _)| name.clone());
        self.rec.say(format!("{APP_MODULE} scope name through the dispenser: {:?}", described(&s.app_from_file)));
        let same = s.app_from_file.is_some() && s.app_from_file == s.app_from_runtime;
        self.rec.say(format!("{APP_MODULE} name and MVID equal to GetModuleMetaData's: {same}"));
        drop(s);
        self.rec.finish()
    }
}
