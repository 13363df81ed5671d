use super::*;

const SAMPLE: &str = "\
# callbacks
ICorProfilerCallback:
  JITCachedFunctionSearchStarted:
    pbUseCachedFunction: out
  MovedReferences:
    oldObjectIDRangeStart: { dir: in, len: cMovedObjectIDRanges }
  Shutdown:
";

#[test]
fn parses_short_and_full_forms_with_positions() {
    let a = Annotations::parse("cb.yaml", SAMPLE).unwrap();
    let iface = a.interface("ICorProfilerCallback").unwrap();
    assert_eq!((iface.loc.line, iface.loc.col), (2, 1));
    let m = &iface.methods[0];
    assert_eq!(m.name, "JITCachedFunctionSearchStarted");
    assert_eq!((m.loc.line, m.loc.col), (3, 3));
    assert_eq!(m.params[0].spec, ParamSpec::direction(Direction::Out));
    assert_eq!((m.params[0].loc.line, m.params[0].loc.col), (4, 5));
    let moved = &iface.methods[1].params[0];
    assert_eq!(moved.spec.len.as_deref(), Some("cMovedObjectIDRanges"));
    assert_eq!(moved.spec.dir, Direction::In);
    assert_eq!(moved.loc.line, 6);
    assert!(iface.methods[2].params.is_empty());
}

#[test]
fn malformed_yaml_reports_line_and_column() {
    let err = Annotations::parse("cb.yaml", "ICorProfilerCallback:\n  Shutdown: [1\n").unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("error: malformed annotation YAML"), "{text}");
    assert!(text.contains("--> cb.yaml:3:1"), "{text}");
}

#[test]
fn unknown_direction_and_unknown_field_are_errors_at_the_parameter() {
    let text = "I:\n  M:\n    a: inout\n    b: { dir: in, length: n }\n";
    let err = Annotations::parse("x.yaml", text).unwrap_err();
    assert_eq!(err.items.len(), 2);
    assert!(err.items[0].message.contains("unknown direction `inout`"));
    assert_eq!(err.items[0].at.as_ref().unwrap().line, 3);
    assert!(err.items[1].message.contains("unknown field `length`"), "{}", err.items[1].message);
    assert_eq!(err.items[1].at.as_ref().unwrap().line, 4);
}

#[test]
fn duplicate_keys_are_rejected() {
    let err = Annotations::parse("x.yaml", "I:\n  M:\n    a: in\n    a: out\n").unwrap_err();
    assert!(err.to_string().contains("duplicate entry"), "{err}");
}

#[test]
fn an_interface_in_two_files_is_an_error() {
    let mut all = Annotations::parse("a.yaml", "I:\n  M:\n    a: in\n").unwrap();
    let mut errors = Errors::default();
    all.merge(Annotations::parse("b.yaml", "I:\n  N:\n    b: in\n").unwrap(), &mut errors);
    assert!(errors.has_errors());
    assert!(errors.to_string().contains("first written at a.yaml:1:1"), "{errors}");
}
