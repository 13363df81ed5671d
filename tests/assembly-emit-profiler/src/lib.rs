//! A test profiler for `tests/runtime/assembly_emit.rs`: when the Rewrite app's module finishes
//! loading, it adds to that module's metadata, through `corprof::MetaDataAssemblyEmit`:
//!
//! - an AssemblyRef to System.Runtime 4.0.0.0 (public key token b03f5f7f11d50a3a) with the safe
//!   `define_assembly_ref_by_name`, read back through `MetaDataAssemblyImport`;
//! - the same reference a second time (does the runtime deduplicate it?), and one whose version
//!   parts all differ, without a token;
//! - a TypeRef under it, `System.Runtime.CompilerServices.CallConvSuppressGCTransition`, read back
//!   through `MetaDataImport`;
//! - the arguments the helper refuses before any call (a version part of 65535, a token that is
//!   not 8 bytes);
//! - an AssemblyRef with a culture, through the `unsafe` generated `define_assembly_ref`.
//!
//! It writes what it read and did, one line per fact, to the file in `CORPROF_ASSEMBLY_EMIT_OUT`.

use corprof::types::{ASSEMBLYMETADATA, COR_PRF_MONITOR, CorOpenFlags, ModuleID, mdAssemblyRef, mdToken};
use corprof::{CorProfilerCallback, HResult, IUnknown, MetaDataAssemblyEmit, MetaDataAssemblyImport};
use corprof::{MetaDataEmit, MetaDataImport, ProfilerInfo, Result};
use std::sync::{Mutex, OnceLock};

pub const CLSID: corprof::GUID = corprof::GUID::parse("4E1C8A52-97D3-4B6F-A0E2-3C5D7B9F1A64");

/// System.Runtime's public key token, as .NET's reference assemblies carry it.
pub const SYSTEM_RUNTIME_TOKEN: [u8; 8] = [0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a];

/// The type named under the new reference (.NET 5+; 3.1 has no such type, and a TypeRef is only
/// a name until something resolves it).
pub const TYPE_NAME: &str = "System.Runtime.CompilerServices.CallConvSuppressGCTransition";

#[derive(Default)]
pub struct AssemblyEmitter {
    info: OnceLock<ProfilerInfo>,
    lines: Mutex<Vec<String>>,
    done: OnceLock<()>,
}

/// The table byte and row number of a token.
fn split(token: mdToken) -> (u32, u32) {
    (token >> 24, token & 0x00FF_FFFF)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `major.minor.build.revision` of an ASSEMBLYMETADATA.
fn version(m: &ASSEMBLYMETADATA) -> String {
    format!("{}.{}.{}.{}", m.usMajorVersion, m.usMinorVersion, m.usBuildNumber, m.usRevisionNumber)
}

impl AssemblyEmitter {
    fn info(&self) -> Result<&ProfilerInfo> {
        self.info.get().ok_or(HResult::E_UNEXPECTED)
    }

    fn say(&self, line: String) {
        self.lines.lock().unwrap().push(line);
    }

    /// The AssemblyRef `r` as `name version, token <hex>, flags 0x.., culture length n`.
    fn describe_ref(&self, assemblies: &MetaDataAssemblyImport, r: mdAssemblyRef) -> Result<String> {
        let props = assemblies.get_assembly_ref_props(r)?;
        let key: &[u8] = if props.public_key_or_token.is_null() {
            &[]
        } else {
            // SAFETY: GetAssemblyRefProps points into the scope's blob heap, which lives as long as
            // `assemblies` holds the scope, and wrote the blob's length beside it.
            unsafe {
                std::slice::from_raw_parts(
                    props.public_key_or_token.cast::<u8>(),
                    props.public_key_or_token_size as usize,
                )
            }
        };
        Ok(format!(
            "{} {}, token {}, flags {:#x}, culture length {}",
            props.name,
            version(&props.metadata),
            if key.is_empty() { "none".to_string() } else { hex(key) },
            props.assembly_ref_flags,
            props.metadata.cbLocale,
        ))
    }

    fn edit(&self, module: ModuleID) -> Result<()> {
        let info = self.info()?;
        let assemblies = info.get_module_metadata::<MetaDataAssemblyImport>(module, CorOpenFlags::ofRead)?;
        let count = || -> Result<usize> { Ok(assemblies.enum_assembly_refs()?.count()) };
        let before = count()?;

        let asm_emit = info.get_module_metadata::<MetaDataAssemblyEmit>(module, CorOpenFlags::ofWrite)?;
        let runtime = asm_emit.define_assembly_ref_by_name("System.Runtime", (4, 0, 0, 0), &SYSTEM_RUNTIME_TOKEN)?;
        let (table, row) = split(runtime);
        self.say(format!(
            "define_assembly_ref_by_name: table {table:#04x}, the row after the module's own: {}",
            row as usize == before + 1
        ));
        self.say(format!("read back: {}", self.describe_ref(&assemblies, runtime)?));

        let again = asm_emit.define_assembly_ref_by_name("System.Runtime", (4, 0, 0, 0), &SYSTEM_RUNTIME_TOKEN)?;
        self.say(format!(
            "the same reference again: {}, references added {}",
            if again == runtime { "the same token" } else { "a new token" },
            count()? - before
        ));

        let emit = info.get_module_metadata::<MetaDataEmit>(module, CorOpenFlags::ofWrite)?;
        let type_ref = emit.define_type_ref_by_name(runtime, TYPE_NAME)?;
        let import = info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead)?;
        let props = import.get_type_ref_props(type_ref)?;
        self.say(format!(
            "TypeRef: table {:#04x}, scope is the new reference: {}, name {}",
            split(type_ref).0,
            props.resolution_scope == runtime,
            props.name
        ));

        // Every version part in its place, and no token.
        let versioned = asm_emit.define_assembly_ref_by_name("Corprof.Versioned", (5, 6, 7, 8), &[])?;
        self.say(format!("define_assembly_ref_by_name: {}", self.describe_ref(&assemblies, versioned)?));

        let added = count()?;
        let refused = |version: (u16, u16, u16, u16), token: &[u8]| -> String {
            match asm_emit.define_assembly_ref_by_name("Corprof.Refused", version, token) {
                Ok(t) => format!("accepted ({t:#x})"),
                Err(e) => e.name().unwrap_or("?").to_string(),
            }
        };
        self.say(format!(
            "refused: version part 65535 {}, a 5-byte token {}, references added {}",
            refused((4, 0, 65535, 0), &SYSTEM_RUNTIME_TOKEN),
            refused((4, 0, 0, 0), &[1, 2, 3, 4, 5]),
            count()? - added
        ));

        // The generated call, with a culture: the runtime reads `szLocale`.
        let culture: Vec<u16> = "de-DE".encode_utf16().chain([0]).collect();
        let metadata = ASSEMBLYMETADATA {
            usMajorVersion: 1,
            usMinorVersion: 2,
            usBuildNumber: 3,
            usRevisionNumber: 4,
            szLocale: culture.as_ptr().cast_mut(),
            cbLocale: culture.len() as u32,
            ..ASSEMBLYMETADATA::default()
        };
        // SAFETY: `szLocale` points to `culture`, NUL-terminated UTF-16 that outlives the call;
        // `rProcessor` and `rOS` are null with zero counts (the runtime reads neither).
        let localized = unsafe { asm_emit.define_assembly_ref(&[], "Corprof.Localized", &metadata, &[], 0)? };
        self.say(format!("define_assembly_ref with a culture: {}", self.describe_ref(&assemblies, localized)?));
        Ok(())
    }
}

impl CorProfilerCallback for AssemblyEmitter {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::MODULE_LOADS)?;
        let _ = self.info.set(info);
        Ok(())
    }

    fn module_load_finished(&self, module_id: ModuleID, hr_status: HResult) -> Result<()> {
        if hr_status.0 < 0 {
            return Ok(());
        }
        let name = self.info()?.get_module_info(module_id)?.name;
        if !name.ends_with("/Rewrite.dll") || self.done.set(()).is_err() {
            return Ok(());
        }
        if let Err(e) = self.edit(module_id) {
            self.say(format!("failed: {e}"));
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Some(path) = std::env::var_os("CORPROF_ASSEMBLY_EMIT_OUT") {
            let text: String = self.lines.lock().unwrap().iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(path, text).map_err(|_| HResult::E_FAIL)?;
        }
        Ok(())
    }
}

corprof::export_profiler!(AssemblyEmitter, CLSID);
