//! The annotation loader on arbitrary text: every input ends as annotations or as diagnostics,
//! never as a panic, read as interface entries and as a `headers.yaml` list. Text that loads also takes drafts (`corprof-gen bootstrap --write`) and
//! still loads after.

#![no_main]

use corprof_gen::annotations::headers::HeaderList;
use corprof_gen::annotations::{Annotations, Direction, ParamSpec};
use corprof_gen::bootstrap::{Draft, place};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Err(errors) = HeaderList::parse("headers.yaml", text) {
        let _ = errors.to_string();
    }
    let ann = match Annotations::parse("fuzz.yaml", text) {
        Ok(ann) => ann,
        Err(errors) => {
            let _ = errors.to_string();
            return;
        }
    };
    // Drafts as `bootstrap` makes them: only names the file does not have yet.
    let param = || vec![("pFuzz".to_string(), ParamSpec { draft: true, ..ParamSpec::direction(Direction::Out) })];
    let mut drafts: Vec<Draft> = ann
        .interfaces
        .iter()
        .map(|i| {
            let mut methods: Vec<_> = i
                .methods
                .iter()
                .filter(|m| !m.params.iter().any(|p| p.name == "pFuzz"))
                .map(|m| (m.name.clone(), param()))
                .collect();
            if !i.methods.iter().any(|m| m.name == "FuzzNewMethod") {
                methods.push(("FuzzNewMethod".to_string(), param()));
            }
            Draft { interface: i.name.clone(), annotated: true, methods }
        })
        .collect();
    if ann.interface("IFuzzNew").is_none() {
        drafts.push(Draft {
            interface: "IFuzzNew".to_string(),
            annotated: false,
            methods: vec![("M".to_string(), param())],
        });
    }
    let placed = place(text, drafts);
    if let Err(e) = Annotations::parse("placed.yaml", &placed.text) {
        panic!("drafts broke a file that loaded:\n{text:?}\nbecame\n{:?}\n{e}", placed.text);
    }
});
