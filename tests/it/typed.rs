//! The types the header's typedefs and enums become: ID newtypes, flag enums with bit operations,
//! enum names in `Display`, and the wrappers typed by them.

use corprof::types::*;
use corprof::{MetaDataImport, ProfilerInfo, Result};

#[test]
fn ids_are_transparent_newtypes_that_print_as_hex() {
    fn traits<T: Copy + Eq + Ord + std::hash::Hash + Send + Sync + Default + std::fmt::Display>() {}
    traits::<FunctionID>();
    traits::<ObjectID>();
    traits::<ReJITID>();
    assert_eq!(std::mem::size_of::<ClassID>(), std::mem::size_of::<UINT_PTR>());
    // SAFETY: only printed and compared.
    let f = unsafe { FunctionID::from_raw(0x7f00) };
    assert_eq!(
        (f.to_string(), format!("{f:?}"), format!("{f:#x}")),
        ("0x7f00".into(), "FunctionID(0x7f00)".into(), "0x7f00".into())
    );
    assert_eq!(f.as_raw(), 0x7f00);
    assert!(FunctionID::default().is_null() && !f.is_null());
}

#[test]
fn flag_enums_combine_and_print_their_flags() {
    let mask = COR_PRF_MONITOR::COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR::COR_PRF_MONITOR_EXCEPTIONS;
    assert!(mask.contains(COR_PRF_MONITOR::COR_PRF_MONITOR_EXCEPTIONS));
    assert!(!mask.contains(COR_PRF_MONITOR::COR_PRF_MONITOR_GC));
    assert_eq!(mask.to_string(), "COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_EXCEPTIONS");
    assert_eq!(COR_PRF_MONITOR::COR_PRF_MONITOR_NONE.to_string(), "COR_PRF_MONITOR_NONE");
    // Short names: the enumerators without their type's name, same values, header names shown.
    assert_eq!(COR_PRF_MONITOR::JIT_COMPILATION, COR_PRF_MONITOR::COR_PRF_MONITOR_JIT_COMPILATION);
    assert_eq!(
        (COR_PRF_MONITOR::JIT_COMPILATION | COR_PRF_MONITOR::EXCEPTIONS).to_string(),
        "COR_PRF_MONITOR_JIT_COMPILATION | COR_PRF_MONITOR_EXCEPTIONS"
    );
    assert_eq!((CorOpenFlags::ofWrite | CorOpenFlags::ofReadOnly).to_string(), "ofWrite | ofReadOnly");
    assert_eq!(
        COR_PRF_SNAPSHOT_INFO::COR_PRF_SNAPSHOT_REGISTER_CONTEXT.to_string(),
        "COR_PRF_SNAPSHOT_REGISTER_CONTEXT"
    );
}

#[test]
fn value_enums_print_the_headers_names() {
    assert_eq!(CorElementType::ELEMENT_TYPE_I4.to_string(), "ELEMENT_TYPE_I4");
    assert_eq!(COR_PRF_GC_REASON::COR_PRF_GC_INDUCED.to_string(), "COR_PRF_GC_INDUCED");
    assert_eq!(COR_PRF_GC_REASON(77).to_string(), "COR_PRF_GC_REASON(77)");
}

#[test]
fn wrappers_take_and_return_the_flag_types_and_bool() {
    let _: fn(&ProfilerInfo, COR_PRF_MONITOR) -> Result<()> = ProfilerInfo::set_event_mask;
    let _: fn(&ProfilerInfo) -> Result<COR_PRF_MONITOR> = ProfilerInfo::get_event_mask;
    let _: fn(&ProfilerInfo, ModuleID, CorOpenFlags) -> Result<MetaDataImport> =
        ProfilerInfo::get_module_metadata::<MetaDataImport>;
    let _: fn(&ProfilerInfo, COR_PRF_MONITOR, COR_PRF_HIGH_MONITOR) -> Result<()> = ProfilerInfo::set_event_mask2;
    let m2 = |info: &ProfilerInfo| -> Result<(COR_PRF_MONITOR, COR_PRF_HIGH_MONITOR)> {
        let m = info.get_event_mask2()?;
        Ok((m.events_low, m.events_high))
    };
    let _ = m2;
}
