//! What the header declares, as cfgs for the crate built from it: the build script prints them
//! (`cargo::rustc-cfg`), so code that needs an interface a header may lack is compiled only when
//! the header has it — decided from the header the generator read, never by searching the
//! generated text.
//!
//! - `corprof_iface = "ICorProfilerInfo15"`: one per interface the header declares;
//! - `corprof_method = "ICorProfilerInfo14::EventPipeCreateProvider2"`: one per method an
//!   annotation marks `since:` (appended to an interface after its first version, so its
//!   presence is not implied by the interface's) that the header declares.
//!
//! Use: `#[cfg(corprof_iface = "ICorProfilerInfo13")]`.

use crate::annotations::Annotations;
use crate::ir::Header;

/// The cfg names, for `cargo::rustc-check-cfg` (values: any, since an older header lacks some).
pub const CFG_NAMES: [&str; 2] = ["corprof_iface", "corprof_method"];

/// `corprof_iface="…"` and `corprof_method="…"` cfgs of `header`, in header order.
pub fn cfgs(header: &Header, ann: &Annotations) -> Vec<String> {
    let mut out: Vec<String> = header.interfaces.iter().map(|i| format!("corprof_iface=\"{}\"", i.name)).collect();
    for iface in &ann.interfaces {
        let Some(declared) = header.interface(&iface.name) else { continue };
        for m in iface.methods.iter().filter(|m| m.since.is_some()) {
            if declared.methods.iter().any(|dm| m.is_for(&dm.name)) {
                out.push(format!("corprof_method=\"{}::{}\"", iface.name, m.name));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CType, Interface, Loc, Method};

    fn iface(name: &str, methods: &[&str]) -> Interface {
        Interface {
            name: name.into(),
            iid: String::new(),
            base: None,
            methods: methods
                .iter()
                .map(|m| Method {
                    name: m.to_string(),
                    ret: CType::Named("HRESULT".into()),
                    params: vec![],
                    loc: Loc::default(),
                })
                .collect(),
            loc: Loc::default(),
        }
    }

    /// Every interface, and only the `since:` methods the header declares.
    #[test]
    fn interfaces_and_the_appended_methods_the_header_has() {
        let header = Header { interfaces: vec![iface("IA", &["M", "N"]), iface("IB", &[])], ..Header::default() };
        let ann = Annotations::parse(
            "a.yaml",
            "IA:\n  N:\n    since: \"a later header\"\n  Gone:\n    since: \"a later header\"\nIC:\n  X:\n    since: \"later\"\n",
        )
        .unwrap();
        assert_eq!(
            cfgs(&header, &ann),
            vec!["corprof_iface=\"IA\"", "corprof_iface=\"IB\"", "corprof_method=\"IA::N\""]
        );
    }
}
