//! The capability cfgs the generator prints (`corprof_iface`, `corprof_method`) agree with the
//! bindings it wrote from the same header: a cfg that went missing would silently compile out
//! the parts of corprof (and the tests) that need it.

const BINDINGS: &str = include_str!(concat!(env!("OUT_DIR"), "/corprof_bindings.rs"));

#[test]
fn the_capability_cfgs_follow_the_header() {
    // Checked when this test compiles: every header declares these, none declares Info99.
    const { assert!(cfg!(corprof_iface = "ICorProfilerCallback")) };
    const { assert!(cfg!(corprof_iface = "ICorProfilerInfo")) };
    const { assert!(!cfg!(corprof_iface = "ICorProfilerInfo99")) };
    assert_eq!(cfg!(corprof_iface = "ICorProfilerInfo12"), BINDINGS.contains("pub struct ICorProfilerInfo12 "));
    assert_eq!(cfg!(corprof_iface = "ICorProfilerInfo13"), BINDINGS.contains("pub struct ICorProfilerInfo13 "));
    assert_eq!(cfg!(corprof_iface = "ICorProfilerInfo15"), BINDINGS.contains("pub struct ICorProfilerInfo15 "));
    assert_eq!(
        cfg!(corprof_method = "ICorProfilerInfo14::EventPipeCreateProvider2"),
        BINDINGS.contains("fn event_pipe_create_provider2(")
    );
}
