//! The annotation loader on arbitrary text: every input ends as annotations or as diagnostics,
//! never as a panic, read as interface entries and as a `headers.yaml` list; every entry loaded
//! is placed at its name or at its parent's place. Text that loads also takes drafts
//! (`corprof-gen bootstrap --write`) and still loads after.

#![no_main]

use corprof_gen::Loc;
use corprof_gen::annotations::headers::HeaderList;
use corprof_gen::annotations::{Annotations, Direction, ParamSpec};
use corprof_gen::bootstrap::{Draft, place};
use libfuzzer_sys::fuzz_target;

/// Whether the text at `loc` (lines as YAML counts them, columns in characters) writes `name`,
/// plainly or quoted (a quoted key's escapes are not undone here).
fn writes(text: &str, loc: &Loc, name: &str) -> bool {
    let Some(line) = text.split("\r\n").flat_map(|l| l.split(['\n', '\r'])).nth(loc.line as usize - 1) else {
        return false;
    };
    let rest: String = line.chars().skip(loc.col as usize - 1).collect();
    rest.starts_with(name) || rest.starts_with(['"', '\''])
}

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
    // Every entry is placed where its name is written (the outline, a line scanner beside
    // serde_yaml, found it), or where its closest block parent is (inside a flow map, or a
    // form the outline leaves to its parent).
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    for i in &ann.interfaces {
        let top = Loc { file: i.loc.file.clone(), line: 1, col: 1 };
        assert!(i.loc == top || writes(body, &i.loc, &i.name), "{:?} at {}\n{text:?}", i.name, i.loc);
        for m in &i.methods {
            assert!(m.loc == i.loc || writes(body, &m.loc, &m.name), "{:?} at {}\n{text:?}", m.name, m.loc);
            for p in &m.params {
                let parent = p.loc == m.loc || p.loc == i.loc;
                assert!(parent || writes(body, &p.loc, &p.name), "{:?} at {}\n{text:?}", p.name, p.loc);
            }
        }
    }
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
