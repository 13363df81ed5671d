//! The safe route to an AssemblyRef: [`MetaDataAssemblyEmit::define_assembly_ref_by_name`].
//!
//! The generated `define_assembly_ref` is `unsafe`: its `ASSEMBLYMETADATA` holds raw pointers
//! (`szLocale`, `rProcessor`, `rOS`) that safe code could fill with made-up addresses, and the
//! runtime reads through `szLocale`. A reference to another assembly needs none of them: the
//! helper here passes them null, with zero counts, and so is safe.

use crate::types::{ASSEMBLYMETADATA, mdAssemblyRef};
use crate::{HResult, MetaDataAssemblyEmit, Result};

impl MetaDataAssemblyEmit {
    /// Adds an AssemblyRef to the module: a reference to the assembly `name` (its simple name,
    /// `"System.Runtime"`), `version` as (major, minor, build, revision), and
    /// `public_key_token` (the 8-byte token, or empty for an assembly without a strong name).
    /// The reference is culture-neutral, carries no hash value and no flags (so the blob is a
    /// token, not a full public key). The token it returns is the resolution scope
    /// [`MetaDataEmit::define_type_ref_by_name`](crate::MetaDataEmit::define_type_ref_by_name)
    /// takes to name a type of that assembly.
    ///
    /// It calls `IMetaDataAssemblyEmit::DefineAssemblyRef` with an `ASSEMBLYMETADATA` whose
    /// pointers are all null and counts zero: the runtime reads the culture through `szLocale`
    /// only when it is not null, and never reads the processor or OS lists. Get the wrapper with
    /// `info.get_module_metadata::<MetaDataAssemblyEmit>(module, CorOpenFlags::ofWrite)`;
    /// [`define_assembly_ref`](Self::define_assembly_ref) has the rest of the runtime's behaviour
    /// (no duplicate check, ApplyMetaData after ModuleLoadFinished).
    ///
    /// # Errors
    ///
    /// `E_INVALIDARG`, before any call, when a version part is 65535 (the runtime reads 0xFFFF as
    /// "leave this part unchanged", so the new row would hold 0 there) or when
    /// `public_key_token` is neither empty nor 8 bytes long; otherwise what the runtime answers
    /// (`E_NOINTERFACE` from a wrapper whose object lacks the interface).
    ///
    /// ```no_run
    /// use corprof::types::{CorOpenFlags, ModuleID, mdTypeRef};
    /// use corprof::{MetaDataAssemblyEmit, MetaDataEmit, ProfilerInfo, Result};
    ///
    /// /// A TypeRef for `System.Runtime.CompilerServices.CallConvSuppressGCTransition`, in
    /// /// `module`, through a new reference to System.Runtime.
    /// fn suppress_gc_transition(info: &ProfilerInfo, module: ModuleID) -> Result<mdTypeRef> {
    ///     let assemblies = info.get_module_metadata::<MetaDataAssemblyEmit>(module, CorOpenFlags::ofWrite)?;
    ///     let token = [0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a];
    ///     let runtime = assemblies.define_assembly_ref_by_name("System.Runtime", (4, 0, 0, 0), &token)?;
    ///     let emit = info.get_module_metadata::<MetaDataEmit>(module, CorOpenFlags::ofWrite)?;
    ///     emit.define_type_ref_by_name(runtime, "System.Runtime.CompilerServices.CallConvSuppressGCTransition")
    /// }
    /// ```
    pub fn define_assembly_ref_by_name(
        &self,
        name: &str,
        version: (u16, u16, u16, u16),
        public_key_token: &[u8],
    ) -> Result<mdAssemblyRef> {
        let (major, minor, build, revision) = version;
        if [major, minor, build, revision].contains(&u16::MAX) || !matches!(public_key_token.len(), 0 | 8) {
            return Err(HResult::E_INVALIDARG);
        }
        // Zeroed: `szLocale`, `rProcessor` and `rOS` null, `cbLocale`, `ulProcessor`, `ulOS` 0.
        let metadata = ASSEMBLYMETADATA {
            usMajorVersion: major,
            usMinorVersion: minor,
            usBuildNumber: build,
            usRevisionNumber: revision,
            ..ASSEMBLYMETADATA::default()
        };
        // SAFETY: the pointers inside `metadata` (`szLocale`, `rProcessor`, `rOS`) are all null,
        // with zero counts. RegMeta::DefineAssemblyRef reads `szLocale` only when it is not null
        // (_SetAssemblyRefProps; its duplicate check, when on, converts a null culture to null
        // and compares it as ""), and reads neither `rProcessor` nor `rOS`.
        unsafe { self.define_assembly_ref(public_key_token, name, &metadata, &[], 0) }
    }
}
