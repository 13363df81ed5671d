//! callback-logger: a profiler that implements every callback of every `ICorProfilerCallback`
//! version and writes one line per call, `<tid> <CallbackName> <arg> <arg> …`, to the file named
//! by `CORPROF_LOG_OUT`.
//!
//! It is one half of the differential oracle (tests/runtime/oracle.rs): the other half is a logger written
//! in plain C from the header (tests/oracle/), and the two must write the same lines for the same
//! calls. So this logger prints exactly what corprof's generated thunks hand it, in the header's
//! form: the arguments are the header's C parameters in declaration order, count parameters
//! included, formatted as [`fmt`] describes. Where corprof's safe types hide the raw shape (a
//! `bool` for a `BOOL`, a slice for a pointer and its count), the header's form is rebuilt from
//! what arrived: a `true` prints `0x1`, a slice prints its length where the count parameter stands.
//!
//! Settings (environment):
//! - `CORPROF_LOG_OUT`: the file the lines are appended to (no file: nothing is written);
//! - `CORPROF_EVENT_MASK`, `CORPROF_EVENT_MASK_HIGH`: the two event masks, in hex (`0x` optional;
//!   default 0), set in `Initialize` with `SetEventMask2`;
//! - `CORPROF_LOG_NOTIFICATION=1`: answer `LoadAsNotificationOnly` with true, so the logger can be
//!   loaded through `CORECLR_NOTIFICATION_PROFILERS` beside a main profiler.

pub mod fmt;

use corprof::LiveObject;
use corprof::interfaces::{ICorProfilerAssemblyReferenceProvider, ICorProfilerFunctionControl};
use corprof::types::*;
use corprof::{CorProfilerCallback, HResult, IUnknown, Out, ProfilerInfo, Result, WStr};
use fmt::{Arg, Count, Guid, OUT, OptGuid, Ptr, Text};
use std::fs::File;
use std::io::Write;
use std::sync::OnceLock;

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("5E2A7C41-93B8-4F0D-A6E1-3C8B0D7F2A19");

/// Parses a hex mask, with or without `0x` (an absent setting is 0).
pub fn parse_hex_mask(text: Option<&str>) -> Option<u32> {
    let Some(text) = text else { return Some(0) };
    let t = text.trim();
    let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    u32::from_str_radix(digits, 16).ok()
}

/// The logger: the output file, opened at the first line.
#[derive(Default)]
pub struct Logger {
    out: OnceLock<Option<File>>,
}

impl Logger {
    /// Writes `<tid> <name> <args…>` as one `write(2)` on the `O_APPEND` file, so lines from
    /// different threads never interleave inside a line.
    fn log(&self, name: &str, args: &[&dyn Arg]) {
        let out = self.out.get_or_init(|| {
            let path = std::env::var_os("CORPROF_LOG_OUT")?;
            match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
                Ok(file) => Some(file),
                Err(e) => {
                    eprintln!("callback-logger: cannot open {}: {e}", path.to_string_lossy());
                    None
                }
            }
        });
        let Some(mut file) = out.as_ref() else { return };
        let mut line = format!("{} {name}", fmt::thread_id());
        for arg in args {
            line.push(' ');
            arg.put(&mut line);
        }
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            eprintln!("callback-logger: cannot write a line: {e}");
        }
    }
}

/// The two masks from the environment; a malformed one is reported and refuses the load.
fn masks_from_env() -> Result<(COR_PRF_MONITOR, COR_PRF_HIGH_MONITOR)> {
    let read = |key: &str| {
        let text = std::env::var(key).ok();
        parse_hex_mask(text.as_deref()).ok_or_else(|| {
            eprintln!("callback-logger: {key}={text:?} is not a hex number");
            HResult::E_INVALIDARG
        })
    };
    Ok((COR_PRF_MONITOR(read("CORPROF_EVENT_MASK")?), COR_PRF_HIGH_MONITOR(read("CORPROF_EVENT_MASK_HIGH")?)))
}

impl CorProfilerCallback for Logger {
    fn initialize(&self, info_unk: &IUnknown) -> Result<()> {
        self.log("Initialize", &[&Ptr(true)]);
        let (low, high) = masks_from_env()?;
        ProfilerInfo::from_unknown(info_unk)?.set_event_mask2(low, high)
    }

    fn shutdown(&self) -> Result<()> {
        self.log("Shutdown", &[]);
        Ok(())
    }

    fn app_domain_creation_started(&self, app_domain_id: AppDomainID) -> Result<()> {
        self.log("AppDomainCreationStarted", &[&app_domain_id]);
        Ok(())
    }

    fn app_domain_creation_finished(&self, app_domain_id: AppDomainID, hr_status: HResult) -> Result<()> {
        self.log("AppDomainCreationFinished", &[&app_domain_id, &hr_status]);
        Ok(())
    }

    fn app_domain_shutdown_started(&self, app_domain_id: AppDomainID) -> Result<()> {
        self.log("AppDomainShutdownStarted", &[&app_domain_id]);
        Ok(())
    }

    fn app_domain_shutdown_finished(&self, app_domain_id: AppDomainID, hr_status: HResult) -> Result<()> {
        self.log("AppDomainShutdownFinished", &[&app_domain_id, &hr_status]);
        Ok(())
    }

    fn assembly_load_started(&self, assembly_id: AssemblyID) -> Result<()> {
        self.log("AssemblyLoadStarted", &[&assembly_id]);
        Ok(())
    }

    fn assembly_load_finished(&self, assembly_id: AssemblyID, hr_status: HResult) -> Result<()> {
        self.log("AssemblyLoadFinished", &[&assembly_id, &hr_status]);
        Ok(())
    }

    fn assembly_unload_started(&self, assembly_id: AssemblyID) -> Result<()> {
        self.log("AssemblyUnloadStarted", &[&assembly_id]);
        Ok(())
    }

    fn assembly_unload_finished(&self, assembly_id: AssemblyID, hr_status: HResult) -> Result<()> {
        self.log("AssemblyUnloadFinished", &[&assembly_id, &hr_status]);
        Ok(())
    }

    fn module_load_started(&self, module_id: ModuleID) -> Result<()> {
        self.log("ModuleLoadStarted", &[&module_id]);
        Ok(())
    }

    fn module_load_finished(&self, module_id: ModuleID, hr_status: HResult) -> Result<()> {
        self.log("ModuleLoadFinished", &[&module_id, &hr_status]);
        Ok(())
    }

    fn module_unload_started(&self, module_id: ModuleID) -> Result<()> {
        self.log("ModuleUnloadStarted", &[&module_id]);
        Ok(())
    }

    fn module_unload_finished(&self, module_id: ModuleID, hr_status: HResult) -> Result<()> {
        self.log("ModuleUnloadFinished", &[&module_id, &hr_status]);
        Ok(())
    }

    fn module_attached_to_assembly(&self, module_id: ModuleID, assembly_id: AssemblyID) -> Result<()> {
        self.log("ModuleAttachedToAssembly", &[&module_id, &assembly_id]);
        Ok(())
    }

    fn class_load_started(&self, class_id: ClassID) -> Result<()> {
        self.log("ClassLoadStarted", &[&class_id]);
        Ok(())
    }

    fn class_load_finished(&self, class_id: ClassID, hr_status: HResult) -> Result<()> {
        self.log("ClassLoadFinished", &[&class_id, &hr_status]);
        Ok(())
    }

    fn class_unload_started(&self, class_id: ClassID) -> Result<()> {
        self.log("ClassUnloadStarted", &[&class_id]);
        Ok(())
    }

    fn class_unload_finished(&self, class_id: ClassID, hr_status: HResult) -> Result<()> {
        self.log("ClassUnloadFinished", &[&class_id, &hr_status]);
        Ok(())
    }

    fn function_unload_started(&self, function_id: FunctionID) -> Result<()> {
        self.log("FunctionUnloadStarted", &[&function_id]);
        Ok(())
    }

    fn jit_compilation_started(&self, function_id: FunctionID, is_safe_to_block: bool) -> Result<()> {
        self.log("JITCompilationStarted", &[&function_id, &is_safe_to_block]);
        Ok(())
    }

    fn jit_compilation_finished(
        &self,
        function_id: FunctionID,
        hr_status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        self.log("JITCompilationFinished", &[&function_id, &hr_status, &is_safe_to_block]);
        Ok(())
    }

    fn jit_cached_function_search_started(
        &self,
        function_id: FunctionID,
        _use_cached_function: Out<'_, bool>,
    ) -> Result<()> {
        // The out value is left as the runtime set it.
        self.log("JITCachedFunctionSearchStarted", &[&function_id, &OUT]);
        Ok(())
    }

    fn jit_cached_function_search_finished(&self, function_id: FunctionID, result: COR_PRF_JIT_CACHE) -> Result<()> {
        self.log("JITCachedFunctionSearchFinished", &[&function_id, &result]);
        Ok(())
    }

    fn jit_function_pitched(&self, function_id: FunctionID) -> Result<()> {
        self.log("JITFunctionPitched", &[&function_id]);
        Ok(())
    }

    fn jit_inlining(&self, caller_id: FunctionID, callee_id: FunctionID, _should_inline: Out<'_, bool>) -> Result<()> {
        // The out value is left as the runtime set it (it defaults to inlining).
        self.log("JITInlining", &[&caller_id, &callee_id, &OUT]);
        Ok(())
    }

    fn thread_created(&self, thread_id: ThreadID) -> Result<()> {
        self.log("ThreadCreated", &[&thread_id]);
        Ok(())
    }

    fn thread_destroyed(&self, thread_id: ThreadID) -> Result<()> {
        self.log("ThreadDestroyed", &[&thread_id]);
        Ok(())
    }

    fn thread_assigned_to_os_thread(&self, managed_thread_id: ThreadID, os_thread_id: DWORD) -> Result<()> {
        self.log("ThreadAssignedToOSThread", &[&managed_thread_id, &os_thread_id]);
        Ok(())
    }

    fn remoting_client_invocation_started(&self) -> Result<()> {
        self.log("RemotingClientInvocationStarted", &[]);
        Ok(())
    }

    fn remoting_client_sending_message(&self, cookie: &GUID, is_async: bool) -> Result<()> {
        self.log("RemotingClientSendingMessage", &[&Guid(cookie), &is_async]);
        Ok(())
    }

    fn remoting_client_receiving_reply(&self, cookie: &GUID, is_async: bool) -> Result<()> {
        self.log("RemotingClientReceivingReply", &[&Guid(cookie), &is_async]);
        Ok(())
    }

    fn remoting_client_invocation_finished(&self) -> Result<()> {
        self.log("RemotingClientInvocationFinished", &[]);
        Ok(())
    }

    fn remoting_server_receiving_message(&self, cookie: &GUID, is_async: bool) -> Result<()> {
        self.log("RemotingServerReceivingMessage", &[&Guid(cookie), &is_async]);
        Ok(())
    }

    fn remoting_server_invocation_started(&self) -> Result<()> {
        self.log("RemotingServerInvocationStarted", &[]);
        Ok(())
    }

    fn remoting_server_invocation_returned(&self) -> Result<()> {
        self.log("RemotingServerInvocationReturned", &[]);
        Ok(())
    }

    fn remoting_server_sending_reply(&self, cookie: &GUID, is_async: bool) -> Result<()> {
        self.log("RemotingServerSendingReply", &[&Guid(cookie), &is_async]);
        Ok(())
    }

    fn unmanaged_to_managed_transition(
        &self,
        function_id: FunctionID,
        reason: COR_PRF_TRANSITION_REASON,
    ) -> Result<()> {
        self.log("UnmanagedToManagedTransition", &[&function_id, &reason]);
        Ok(())
    }

    fn managed_to_unmanaged_transition(
        &self,
        function_id: FunctionID,
        reason: COR_PRF_TRANSITION_REASON,
    ) -> Result<()> {
        self.log("ManagedToUnmanagedTransition", &[&function_id, &reason]);
        Ok(())
    }

    fn runtime_suspend_started(&self, suspend_reason: COR_PRF_SUSPEND_REASON) -> Result<()> {
        self.log("RuntimeSuspendStarted", &[&suspend_reason]);
        Ok(())
    }

    fn runtime_suspend_finished(&self) -> Result<()> {
        self.log("RuntimeSuspendFinished", &[]);
        Ok(())
    }

    fn runtime_suspend_aborted(&self) -> Result<()> {
        self.log("RuntimeSuspendAborted", &[]);
        Ok(())
    }

    fn runtime_resume_started(&self) -> Result<()> {
        self.log("RuntimeResumeStarted", &[]);
        Ok(())
    }

    fn runtime_resume_finished(&self) -> Result<()> {
        self.log("RuntimeResumeFinished", &[]);
        Ok(())
    }

    fn runtime_thread_suspended(&self, thread_id: ThreadID) -> Result<()> {
        self.log("RuntimeThreadSuspended", &[&thread_id]);
        Ok(())
    }

    fn runtime_thread_resumed(&self, thread_id: ThreadID) -> Result<()> {
        self.log("RuntimeThreadResumed", &[&thread_id]);
        Ok(())
    }

    fn moved_references(
        &self,
        old_object_id_range_start: &[ObjectID],
        new_object_id_range_start: &[ObjectID],
        object_id_range_length: &[ULONG],
    ) -> Result<()> {
        let count = Count(old_object_id_range_start.len());
        self.log(
            "MovedReferences",
            &[&count, &old_object_id_range_start, &new_object_id_range_start, &object_id_range_length],
        );
        Ok(())
    }

    fn object_allocated(&self, object_id: LiveObject<'_>, class_id: ClassID) -> Result<()> {
        self.log("ObjectAllocated", &[&object_id, &class_id]);
        Ok(())
    }

    fn objects_allocated_by_class(&self, class_ids: &[ClassID], objects: &[ULONG]) -> Result<()> {
        self.log("ObjectsAllocatedByClass", &[&Count(class_ids.len()), &class_ids, &objects]);
        Ok(())
    }

    fn object_references(
        &self,
        object_id: LiveObject<'_>,
        class_id: ClassID,
        object_ref_ids: &[LiveObject<'_>],
    ) -> Result<()> {
        self.log("ObjectReferences", &[&object_id, &class_id, &Count(object_ref_ids.len()), &object_ref_ids]);
        Ok(())
    }

    fn root_references(&self, root_ref_ids: &[LiveObject<'_>]) -> Result<()> {
        self.log("RootReferences", &[&Count(root_ref_ids.len()), &root_ref_ids]);
        Ok(())
    }

    fn exception_thrown(&self, thrown_object_id: LiveObject<'_>) -> Result<()> {
        self.log("ExceptionThrown", &[&thrown_object_id]);
        Ok(())
    }

    fn exception_search_function_enter(&self, function_id: FunctionID) -> Result<()> {
        self.log("ExceptionSearchFunctionEnter", &[&function_id]);
        Ok(())
    }

    fn exception_search_function_leave(&self) -> Result<()> {
        self.log("ExceptionSearchFunctionLeave", &[]);
        Ok(())
    }

    fn exception_search_filter_enter(&self, function_id: FunctionID) -> Result<()> {
        self.log("ExceptionSearchFilterEnter", &[&function_id]);
        Ok(())
    }

    fn exception_search_filter_leave(&self) -> Result<()> {
        self.log("ExceptionSearchFilterLeave", &[]);
        Ok(())
    }

    fn exception_search_catcher_found(&self, function_id: FunctionID) -> Result<()> {
        self.log("ExceptionSearchCatcherFound", &[&function_id]);
        Ok(())
    }

    fn exception_os_handler_enter(&self, unused: UINT_PTR) -> Result<()> {
        self.log("ExceptionOSHandlerEnter", &[&unused]);
        Ok(())
    }

    fn exception_os_handler_leave(&self, unused: UINT_PTR) -> Result<()> {
        self.log("ExceptionOSHandlerLeave", &[&unused]);
        Ok(())
    }

    fn exception_unwind_function_enter(&self, function_id: FunctionID) -> Result<()> {
        self.log("ExceptionUnwindFunctionEnter", &[&function_id]);
        Ok(())
    }

    fn exception_unwind_function_leave(&self) -> Result<()> {
        self.log("ExceptionUnwindFunctionLeave", &[]);
        Ok(())
    }

    fn exception_unwind_finally_enter(&self, function_id: FunctionID) -> Result<()> {
        self.log("ExceptionUnwindFinallyEnter", &[&function_id]);
        Ok(())
    }

    fn exception_unwind_finally_leave(&self) -> Result<()> {
        self.log("ExceptionUnwindFinallyLeave", &[]);
        Ok(())
    }

    fn exception_catcher_enter(&self, function_id: FunctionID, object_id: LiveObject<'_>) -> Result<()> {
        self.log("ExceptionCatcherEnter", &[&function_id, &object_id]);
        Ok(())
    }

    fn exception_catcher_leave(&self) -> Result<()> {
        self.log("ExceptionCatcherLeave", &[]);
        Ok(())
    }

    fn com_classic_vtable_created(
        &self,
        wrapped_class_id: ClassID,
        implemented_iid: &GUID,
        vtable: *mut core::ffi::c_void,
        slots: ULONG,
    ) -> Result<()> {
        let vtable = Ptr(!vtable.is_null());
        self.log("COMClassicVTableCreated", &[&wrapped_class_id, &Guid(implemented_iid), &vtable, &slots]);
        Ok(())
    }

    fn com_classic_vtable_destroyed(
        &self,
        wrapped_class_id: ClassID,
        implemented_iid: &GUID,
        vtable: *mut core::ffi::c_void,
    ) -> Result<()> {
        let vtable = Ptr(!vtable.is_null());
        self.log("COMClassicVTableDestroyed", &[&wrapped_class_id, &Guid(implemented_iid), &vtable]);
        Ok(())
    }

    fn exception_clr_catcher_found(&self) -> Result<()> {
        self.log("ExceptionCLRCatcherFound", &[]);
        Ok(())
    }

    fn exception_clr_catcher_execute(&self) -> Result<()> {
        self.log("ExceptionCLRCatcherExecute", &[]);
        Ok(())
    }

    fn thread_name_changed(&self, thread_id: ThreadID, name: Option<WStr<'_>>) -> Result<()> {
        // The header's cchName is the number of units corprof read; a null name arrives as None,
        // its count unseen (the C logger prints 0x0 for a null name's count).
        let count = Count(name.map_or(0, |n| n.units().len()));
        self.log("ThreadNameChanged", &[&thread_id, &count, &Text(name.map(|n| n.units()))]);
        Ok(())
    }

    fn garbage_collection_started(&self, generation_collected: &[BOOL], reason: COR_PRF_GC_REASON) -> Result<()> {
        self.log("GarbageCollectionStarted", &[&Count(generation_collected.len()), &generation_collected, &reason]);
        Ok(())
    }

    fn surviving_references(&self, object_id_range_start: &[ObjectID], object_id_range_length: &[ULONG]) -> Result<()> {
        let count = Count(object_id_range_start.len());
        self.log("SurvivingReferences", &[&count, &object_id_range_start, &object_id_range_length]);
        Ok(())
    }

    fn garbage_collection_finished(&self) -> Result<()> {
        self.log("GarbageCollectionFinished", &[]);
        Ok(())
    }

    fn finalizeable_object_queued(&self, finalizer_flags: DWORD, object_id: LiveObject<'_>) -> Result<()> {
        self.log("FinalizeableObjectQueued", &[&finalizer_flags, &object_id]);
        Ok(())
    }

    fn root_references2(
        &self,
        root_ref_ids: &[LiveObject<'_>],
        root_kinds: &[COR_PRF_GC_ROOT_KIND],
        root_flags: &[COR_PRF_GC_ROOT_FLAGS],
        root_ids: &[UINT_PTR],
    ) -> Result<()> {
        let count = Count(root_ref_ids.len());
        self.log("RootReferences2", &[&count, &root_ref_ids, &root_kinds, &root_flags, &root_ids]);
        Ok(())
    }

    fn handle_created(&self, handle_id: GCHandleID, initial_object_id: LiveObject<'_>) -> Result<()> {
        self.log("HandleCreated", &[&handle_id, &initial_object_id]);
        Ok(())
    }

    fn handle_destroyed(&self, handle_id: GCHandleID) -> Result<()> {
        self.log("HandleDestroyed", &[&handle_id]);
        Ok(())
    }

    fn initialize_for_attach(&self, info: &IUnknown, client_data: &[u8]) -> Result<()> {
        self.log("InitializeForAttach", &[&Ptr(true), &client_data, &Count(client_data.len())]);
        let (low, high) = masks_from_env()?;
        ProfilerInfo::from_unknown(info)?.set_event_mask2(low, high)
    }

    fn profiler_attach_complete(&self) -> Result<()> {
        self.log("ProfilerAttachComplete", &[]);
        Ok(())
    }

    fn profiler_detach_succeeded(&self) -> Result<()> {
        self.log("ProfilerDetachSucceeded", &[]);
        Ok(())
    }

    fn rejit_compilation_started(
        &self,
        function_id: FunctionID,
        rejit_id: ReJITID,
        is_safe_to_block: bool,
    ) -> Result<()> {
        self.log("ReJITCompilationStarted", &[&function_id, &rejit_id, &is_safe_to_block]);
        Ok(())
    }

    fn get_rejit_parameters(
        &self,
        module_id: ModuleID,
        method_id: mdMethodDef,
        _function_control: &ICorProfilerFunctionControl,
    ) -> Result<()> {
        self.log("GetReJITParameters", &[&module_id, &method_id, &Ptr(true)]);
        Ok(())
    }

    fn rejit_compilation_finished(
        &self,
        function_id: FunctionID,
        rejit_id: ReJITID,
        hr_status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        self.log("ReJITCompilationFinished", &[&function_id, &rejit_id, &hr_status, &is_safe_to_block]);
        Ok(())
    }

    fn rejit_error(
        &self,
        module_id: ModuleID,
        method_id: mdMethodDef,
        function_id: FunctionID,
        hr_status: HResult,
    ) -> Result<()> {
        self.log("ReJITError", &[&module_id, &method_id, &function_id, &hr_status]);
        Ok(())
    }

    fn moved_references2(
        &self,
        old_object_id_range_start: &[ObjectID],
        new_object_id_range_start: &[ObjectID],
        object_id_range_length: &[SIZE_T],
    ) -> Result<()> {
        let count = Count(old_object_id_range_start.len());
        self.log(
            "MovedReferences2",
            &[&count, &old_object_id_range_start, &new_object_id_range_start, &object_id_range_length],
        );
        Ok(())
    }

    fn surviving_references2(
        &self,
        object_id_range_start: &[ObjectID],
        object_id_range_length: &[SIZE_T],
    ) -> Result<()> {
        let count = Count(object_id_range_start.len());
        self.log("SurvivingReferences2", &[&count, &object_id_range_start, &object_id_range_length]);
        Ok(())
    }

    fn conditional_weak_table_element_references(
        &self,
        key_ref_ids: &[LiveObject<'_>],
        value_ref_ids: &[LiveObject<'_>],
        root_ids: &[GCHandleID],
    ) -> Result<()> {
        let count = Count(key_ref_ids.len());
        self.log("ConditionalWeakTableElementReferences", &[&count, &key_ref_ids, &value_ref_ids, &root_ids]);
        Ok(())
    }

    fn get_assembly_references(
        &self,
        assembly_path: WStr<'_>,
        _asm_ref_provider: &ICorProfilerAssemblyReferenceProvider,
    ) -> Result<()> {
        self.log("GetAssemblyReferences", &[&Text(Some(assembly_path.units())), &Ptr(true)]);
        Ok(())
    }

    fn module_in_memory_symbols_updated(&self, module_id: ModuleID) -> Result<()> {
        self.log("ModuleInMemorySymbolsUpdated", &[&module_id]);
        Ok(())
    }

    fn dynamic_method_jit_compilation_started(
        &self,
        function_id: FunctionID,
        is_safe_to_block: bool,
        il_header: &[BYTE],
    ) -> Result<()> {
        let count = Count(il_header.len());
        self.log("DynamicMethodJITCompilationStarted", &[&function_id, &is_safe_to_block, &il_header, &count]);
        Ok(())
    }

    fn dynamic_method_jit_compilation_finished(
        &self,
        function_id: FunctionID,
        hr_status: HResult,
        is_safe_to_block: bool,
    ) -> Result<()> {
        self.log("DynamicMethodJITCompilationFinished", &[&function_id, &hr_status, &is_safe_to_block]);
        Ok(())
    }

    fn dynamic_method_unloaded(&self, function_id: FunctionID) -> Result<()> {
        self.log("DynamicMethodUnloaded", &[&function_id]);
        Ok(())
    }

    fn event_pipe_event_delivered(
        &self,
        provider: EVENTPIPE_PROVIDER,
        event_id: DWORD,
        event_version: DWORD,
        metadata_blob: &[BYTE],
        event_data: &[BYTE],
        activity_id: Option<&GUID>,
        related_activity_id: Option<&GUID>,
        event_thread: ThreadID,
        stack_frames: &[UINT_PTR],
    ) -> Result<()> {
        self.log(
            "EventPipeEventDelivered",
            &[
                &provider,
                &event_id,
                &event_version,
                &Count(metadata_blob.len()),
                &metadata_blob,
                &Count(event_data.len()),
                &event_data,
                &OptGuid(activity_id),
                &OptGuid(related_activity_id),
                &event_thread,
                &Count(stack_frames.len()),
                &stack_frames,
            ],
        );
        Ok(())
    }

    fn event_pipe_provider_created(&self, provider: EVENTPIPE_PROVIDER) -> Result<()> {
        self.log("EventPipeProviderCreated", &[&provider]);
        Ok(())
    }

    fn load_as_notification_only(&self, notification_only: Out<'_, bool>) -> Result<()> {
        self.log("LoadAsNotificationOnly", &[&OUT]);
        if std::env::var("CORPROF_LOG_NOTIFICATION").is_ok_and(|v| v == "1") {
            notification_only.write(true);
        }
        Ok(())
    }
}

corprof::export_profiler!(Logger, CLSID);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_hex_with_or_without_prefix() {
        assert_eq!(parse_hex_mask(None), Some(0));
        assert_eq!(parse_hex_mask(Some("0x80")), Some(0x80));
        assert_eq!(parse_hex_mask(Some(" 10 ")), Some(0x10));
        assert_eq!(parse_hex_mask(Some("0xZZ")), None);
    }
}
