//! The method names `ProfilerInfo` had before the acronym-aware spelling (`view/names.rs`):
//! heck's plain snake case of the header's name (`GetModuleMetaData` → `get_module_meta_data`).
//! Each forwards to the method as it is named now, with the same meaning and arguments; the
//! deprecation note names the new spelling. CHANGELOG.md lists them.
//!
//! Renamed callbacks (`re_jit_compilation_started` → `rejit_compilation_started`, …) get no
//! forwarder: a trait method of the old name would compile and never be called.

#[cfg(corprof_iface = "IMetaDataImport")]
use crate::types::CorOpenFlags;
use crate::types::{COR_PRF_REJIT_FLAGS, FunctionID, ModuleID, ReJITID, mdMethodDef};
use crate::{ComPtr, IUnknown, ProfilerInfo, Result, Wrapper};

impl ProfilerInfo {
    /// Renamed [`ProfilerInfo::get_module_metadata`].
    #[cfg(corprof_iface = "IMetaDataImport")]
    #[deprecated(note = "renamed: get_module_metadata")]
    pub fn get_module_meta_data<W: Wrapper>(&self, module_id: ModuleID, open_flags: CorOpenFlags) -> Result<W> {
        self.get_module_metadata(module_id, open_flags)
    }

    /// Renamed [`ProfilerInfo::get_token_and_metadata_from_function`].
    #[deprecated(note = "renamed: get_token_and_metadata_from_function")]
    pub fn get_token_and_meta_data_from_function<W: Wrapper>(
        &self,
        function_id: FunctionID,
    ) -> Result<crate::info::TokenAndMetaDataFromFunction<W>> {
        self.get_token_and_metadata_from_function(function_id)
    }

    /// Renamed [`ProfilerInfo::set_function_rejit`].
    #[deprecated(note = "renamed: set_function_rejit")]
    pub fn set_function_re_jit(&self, function_id: FunctionID) -> Result<()> {
        self.set_function_rejit(function_id)
    }

    /// Renamed [`ProfilerInfo::get_inproc_inspection_ithis_thread`].
    #[deprecated(note = "renamed: get_inproc_inspection_ithis_thread")]
    pub fn get_inproc_inspection_i_this_thread(&self) -> Result<ComPtr<IUnknown>> {
        self.get_inproc_inspection_ithis_thread()
    }

    /// Renamed [`ProfilerInfo::enum_jited_functions`].
    #[deprecated(note = "renamed: enum_jited_functions")]
    pub fn enum_ji_ted_functions(&self) -> Result<crate::info::ProfilerFunctionEnum> {
        self.enum_jited_functions()
    }

    /// Renamed [`ProfilerInfo::request_rejit`].
    #[deprecated(note = "renamed: request_rejit")]
    pub fn request_re_jit(&self, module_ids: &[ModuleID], method_ids: &[mdMethodDef]) -> Result<()> {
        self.request_rejit(module_ids, method_ids)
    }

    /// Renamed [`ProfilerInfo::get_rejit_ids`].
    #[deprecated(note = "renamed: get_rejit_ids")]
    pub fn get_re_jiti_ds(&self, function_id: FunctionID) -> Result<Vec<ReJITID>> {
        self.get_rejit_ids(function_id)
    }

    /// Renamed [`ProfilerInfo::enum_jited_functions2`].
    #[deprecated(note = "renamed: enum_jited_functions2")]
    pub fn enum_ji_ted_functions2(&self) -> Result<crate::info::ProfilerFunctionEnum> {
        self.enum_jited_functions2()
    }

    /// Renamed [`ProfilerInfo::apply_metadata`].
    #[cfg(corprof_iface = "ICorProfilerInfo7")]
    #[deprecated(note = "renamed: apply_metadata")]
    pub fn apply_meta_data(&self, module_id: ModuleID) -> Result<()> {
        self.apply_metadata(module_id)
    }

    /// Renamed [`ProfilerInfo::request_rejit_with_inliners`].
    #[cfg(corprof_iface = "ICorProfilerInfo10")]
    #[deprecated(note = "renamed: request_rejit_with_inliners")]
    pub fn request_re_jit_with_inliners(
        &self,
        rejit_flags: COR_PRF_REJIT_FLAGS,
        module_ids: &[ModuleID],
        method_ids: &[mdMethodDef],
    ) -> Result<()> {
        self.request_rejit_with_inliners(rejit_flags, module_ids, method_ids)
    }
}
