//! Rust names for the header's names: the one place that decides how a C++ method, parameter or
//! out value is spelled in the safe layer.
//!
//! - [`snake_case`]: acronym-aware (`EnumJITedFunctions` → `enum_jited_functions`,
//!   `GetReJITIDs` → `get_rejit_ids`), by the [`ACRONYMS`] table.
//! - `param_name`: the snake name without the Hungarian prefix (`pClassId` → `class_id`,
//!   `szName` → `name`, `pICorProfilerInfoUnk` → `info_unk`), by the [`HUNGARIAN`] table.
//! - [`field_names`]: the fields of a result struct, named for what they hold.
//! - [`pascal_fixed`]: the header's spelling with its known typos corrected ([`TYPOS`]), for Rust
//!   names only (`Callback::name()` keeps the header's).
//! - Items: [`iid_const`], [`vtbl`], [`thunk`], [`wrapper_name`] (`ICorProfilerInfo` →
//!   `ProfilerInfo`), [`wrapper_method`] (with [`RESERVED`]), [`result_struct`] and
//!   [`results_module`]. The view asks these; its own sources spell no name (the tidy test
//!   `generator::the_view_spells_no_names`).

/// Mixed-case or ambiguous abbreviations, each one word: matched case-sensitively where a word
/// starts and only when the next character does not continue it in lower case (`ID` matches
/// `ClassIDInfo`, not `IDentity`). Longest first, so `IDs` wins over `ID`, `ReJIT` over `JIT`.
/// All-capitals abbreviations followed by a capitalised word (`GCHandle`, `ILToNative`) already
/// split right; they are listed so that the table says what a word is, not the splitter's luck.
pub const ACRONYMS: &[(&str, &str)] = &[
    ("MetaData", "metadata"),
    ("VTable", "vtable"),
    ("JITed", "jited"),
    ("ReJIT", "rejit"),
    ("ReJit", "rejit"),
    ("reJit", "rejit"),
    ("GUID", "guid"),
    ("IDs", "ids"),
    ("IID", "iid"),
    ("JIT", "jit"),
    ("COM", "com"),
    ("RCW", "rcw"),
    ("CCW", "ccw"),
    ("CLR", "clr"),
    ("ID", "id"),
    ("IL", "il"),
    ("GC", "gc"),
    ("IP", "ip"),
];

/// Header typos, fixed in Rust names (runtime-main's `ICorProfilerCallback11` declares
/// `LoadAsNotficationOnly`).
pub const TYPOS: &[(&str, &str)] = &[("Notfication", "Notification"), ("MAchine", "Machine")];

/// Hungarian prefixes dropped from parameter and field names: pointer (`p`, `pp`), count (`c`,
/// `cb`, `cch`, `pc…`), type (`dw`, `ul`, `f`, `b`, `h`), text (`sz`, `wz`, `wsz`) and metadata
/// token (`tk`, `md`, `td`, `mr`) markers, alone or behind a `p`. A lower-case start that is a
/// word (`functionId`, `oldObjectIDRangeStart`, `hrStatus`) is kept.
pub const HUNGARIAN: &[&str] = &[
    "p", "pp", "ppv", "pv", "pb", "ppb", "pc", "pcb", "pcch", "pch", "ppch", "pcc", "pcelt", "c", "cb", "cch", "cc",
    "f", "pf", "b", "dw", "pdw", "ul", "pul", "h", "ph", "sz", "psz", "wsz", "pwsz", "wz", "pwz", "tk", "ptk", "rtk",
    "pmd", "rmd", "ptd", "pmr", "pt", "ix", "pix", "r", "rg",
];

/// Count prefixes: the suffix a count field gets when its stem would collide with the buffer it
/// counts (`ppvSigBlob` → `sig_blob`, `pcbSigBlob` → `sig_blob_size`).
const COUNT_SUFFIXES: &[(&str, &str)] =
    &[("pcb", "_size"), ("pb", "_size"), ("pcch", "_len"), ("pch", "_len"), ("pc", "_count")];

/// Stems that name the profiling API's own interfaces, dropped from parameter names
/// (`pICorProfilerInfoUnk` → `info_unk`).
const INTERFACE_STEMS: &[&str] = &["ICorProfiler"];

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "static", "struct", "super", "trait", "true", "try", "type", "unsafe", "use", "where", "while", "yield",
    "abstract", "become", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "self", "Self",
];

/// A name usable as a Rust identifier (`type` → `r#type`).
/// The IID constant of an interface (`IID_ICorProfilerInfo`), as the header names it.
pub use crate::ir::iid_const;

/// The vtable struct of an interface (`ICorProfilerInfo_Vtbl`), as windows-rs spells it.
pub fn vtbl(interface: &str) -> String {
    format!("{interface}_Vtbl")
}

/// Names that would hide a trait method users expect on a wrapper.
pub const RESERVED: &[&str] =
    &["clone", "next", "drop", "into_iter", "eq", "fmt", "deref", "from", "into", "hash", "version", "get"];

/// The safe wrapper type of an interface family root: `ICorProfilerInfo` → `ProfilerInfo`,
/// `IMetaDataImport` → `MetaDataImport`.
pub fn wrapper_name(root: &str) -> String {
    let s = root.strip_prefix('I').unwrap_or(root);
    s.strip_prefix("Cor").unwrap_or(s).to_string()
}

/// A wrapper's method: the snake name, with `_com` after one that would hide a trait method
/// users expect on a wrapper ([`RESERVED`]: `Clone` → `clone_com`, `Next` → `next_com`).
pub fn wrapper_method(name: &str) -> String {
    let s = method_name(name);
    if RESERVED.contains(&s.as_str()) { format!("{s}_com") } else { s }
}

/// The struct of a method's several results: the method's name without `Get`, typos fixed
/// (`GetFunctionInfo` → `FunctionInfo`), in its family's [`results_module`].
pub fn result_struct(method: &str) -> String {
    pascal_fixed(method.strip_prefix("Get").unwrap_or(method))
}

/// The module holding a wrapper family's result structs (`ProfilerInfo` → `profiler_info`).
pub fn results_module(wrapper: &str) -> String {
    snake_case(wrapper)
}

/// The thunk a callback's vtable slot points to (`ICorProfilerCallback_Initialize__`): private
/// to the generated module, so the header's spelling, with `__` keeping it from any user name.
pub fn thunk(interface: &str, method: &str) -> String {
    format!("{interface}_{method}__")
}

/// Whether `name` is a Rust keyword, which an identifier spells raw (`r#type`).
pub fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

pub fn ident(name: &str) -> String {
    if KEYWORDS.contains(&name) { format!("r#{name}") } else { name.to_string() }
}

/// The header's name with [`TYPOS`] fixed: what Rust items are named after.
pub fn pascal_fixed(name: &str) -> String {
    TYPOS.iter().fold(name.to_string(), |s, (typo, fix)| s.replace(typo, fix))
}

/// The words of a C++ identifier, lower case. A lone `I` (an interface prefix) joins the next
/// word: `IThisThread` → `ithis`, `thread`.
fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    let mut join_next = false;
    while i < chars.len() {
        if chars[i] == '_' {
            i += 1;
            continue;
        }
        let rest: String = chars[i..].iter().collect();
        let acronym = ACRONYMS
            .iter()
            .find(|(a, _)| rest.starts_with(a) && !rest[a.len()..].starts_with(|c: char| c.is_ascii_lowercase()));
        let word = if let Some((a, lower)) = acronym {
            i += a.chars().count();
            lower.to_string()
        } else {
            let start = i;
            if chars[i].is_ascii_uppercase() {
                let mut j = i;
                while j < chars.len() && chars[j].is_ascii_uppercase() {
                    j += 1;
                }
                // `CLRCatcher`: the last capital starts the next word.
                if j - i > 1 && j < chars.len() && chars[j].is_ascii_lowercase() {
                    j -= 1;
                }
                i = j;
            }
            while i < chars.len() && (chars[i].is_ascii_lowercase() || chars[i].is_ascii_digit()) {
                i += 1;
            }
            if i == start {
                i += 1;
            }
            chars[start..i].iter().collect::<String>().to_ascii_lowercase()
        };
        // Digits belong to the word before them (`Info2`, `ICorProfilerInfo12`).
        let mut word = word;
        while i < chars.len() && chars[i].is_ascii_digit() {
            word.push(chars[i]);
            i += 1;
        }
        if join_next {
            let last = out.last_mut().expect("an I before");
            last.push_str(&word);
            join_next = false;
        } else {
            join_next = word == "i";
            out.push(word);
        }
    }
    out.retain(|w| !w.is_empty());
    out
}

/// Acronym-aware snake case: `COMClassicVTableCreated` → `com_classic_vtable_created`.
pub fn snake_case(name: &str) -> String {
    words(&pascal_fixed(name)).join("_")
}

/// A method's Rust name (a keyword gets `r#`).
pub fn method_name(name: &str) -> String {
    ident(&snake_case(name))
}

/// The Hungarian prefix of a C parameter name and the rest, if it has one.
fn split_hungarian(c_name: &str) -> Option<(&str, &str)> {
    let stem_at = c_name.find(|c: char| !c.is_ascii_lowercase())?;
    let (prefix, stem) = c_name.split_at(stem_at);
    (HUNGARIAN.contains(&prefix) && stem.starts_with(|c: char| c.is_ascii_uppercase())).then_some((prefix, stem))
}

/// A parameter's name without its Hungarian prefix, snake case: `pClassId` → `class_id`,
/// `cchName` → `name`, `functionId` → `function_id`. Not an identifier yet (see [`ident`]).
fn stem_name(c_name: &str) -> String {
    let stem = split_hungarian(c_name).map_or(c_name, |(_, s)| s);
    let stem = INTERFACE_STEMS
        .iter()
        .find_map(|i| stem.strip_prefix(i).filter(|s| s.starts_with(|c: char| c.is_ascii_uppercase())))
        .unwrap_or(stem);
    snake_case(stem)
}

/// The Rust names of a method's parameters, in order: `stem_name` of each, except that two
/// shown parameters whose stems collide keep their whole names (`pClass`/`class` stay apart).
/// `shown[i]` says whether parameter `i` appears in the Rust signature: a count the wrapper fills
/// (`cchName` beside `szName`) takes no name away.
pub fn param_names(c_names: &[&str], shown: &[bool]) -> Vec<String> {
    let stems: Vec<String> = c_names.iter().map(|n| stem_name(n)).collect();
    let visible = |i: usize| shown.get(i).copied().unwrap_or(true);
    (0..c_names.len())
        .map(|i| {
            let (s, c) = (&stems[i], c_names[i]);
            let collides = visible(i) && (0..stems.len()).any(|j| j != i && visible(j) && stems[j] == *s);
            // `hEnum` → `h_enum`, not `r#enum`: a prefix that leaves a keyword stays.
            let keyword = KEYWORDS.contains(&s.as_str()) && split_hungarian(c).is_some();
            ident(&if collides || keyword || s.is_empty() { snake_case(c) } else { s.clone() })
        })
        .collect()
}

/// One output of a method, for [`field_names`].
pub struct Output<'a> {
    pub c_name: &'a str,
    /// A text buffer (`szName`, `wzName`): returned as `String`.
    pub is_text: bool,
}

/// The fields of the result struct of `method`, named for what they hold:
/// - the stem without its Hungarian prefix (`pClassId` → `class_id`);
/// - the text buffer of a `Get<Entity>Props`/`Get<Entity>Info` method, when it is the only one and
///   is called `Name` or after the entity (`GetTypeDefProps`'s `szTypeDef`,
///   `GetMethodProps`'s `szMethod`), → `name`;
/// - a count that would collide with the buffer it counts gets its prefix as a suffix
///   (`pcbSigBlob` → `sig_blob_size`); the rest keep their stem (`pcSize` → `size`,
///   `pcRank` → `rank`);
/// - anything still colliding keeps its whole C name (`ppv_sig_blob`).
pub fn field_names(method: &str, outputs: &[Output<'_>]) -> Vec<String> {
    let entity = entity_of(method);
    let texts = outputs.iter().filter(|o| o.is_text).count();
    let mut names: Vec<String> = outputs
        .iter()
        .map(|o| {
            let stem = split_hungarian(o.c_name).map_or(o.c_name, |(_, s)| s);
            // cor.h also spells it all in lower case (`wzname`).
            let lower_name = HUNGARIAN.iter().any(|p| o.c_name.strip_prefix(p) == Some("name"));
            if o.is_text && texts == 1 && (stem == "Name" || lower_name || entity.starts_with(stem)) {
                "name".to_string()
            } else {
                stem_name(o.c_name)
            }
        })
        .collect();
    let collides = |names: &[String], i: usize| names.iter().filter(|n| **n == names[i]).count() > 1;
    let suffixed: Vec<String> = (0..names.len())
        .map(|i| {
            let suffix = split_hungarian(outputs[i].c_name)
                .and_then(|(p, _)| COUNT_SUFFIXES.iter().find(|(cp, _)| *cp == p))
                .map(|(_, s)| *s);
            match suffix {
                Some(s) if collides(&names, i) => format!("{}{s}", names[i]),
                _ => names[i].clone(),
            }
        })
        .collect();
    names = suffixed;
    // Still colliding, or a prefix that leaves a keyword (`ptkType`, `ppEnum`): the whole name.
    let whole: Vec<String> = (0..names.len())
        .map(|i| {
            let keyword = KEYWORDS.contains(&names[i].as_str()) && split_hungarian(outputs[i].c_name).is_some();
            if collides(&names, i) || keyword { snake_case(outputs[i].c_name) } else { names[i].clone() }
        })
        .collect();
    whole.iter().map(|n| ident(n)).collect()
}

/// `GetTypeDefProps` → `TypeDef`, `GetModuleInfo2` → `Module`: what a getter describes.
fn entity_of(method: &str) -> &str {
    let m = method.strip_prefix("Get").unwrap_or(method);
    let m = m.trim_end_matches(|c: char| c.is_ascii_digit());
    m.strip_suffix("Props").or_else(|| m.strip_suffix("Info")).unwrap_or(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IID constant and the vtable are spelled here only: the header's `IID_<name>` constant
    /// (looked up by extract) and the binding's are one spelling.
    #[test]
    fn iid_constants_and_vtables_have_one_spelling() {
        assert_eq!(iid_const("ICorProfilerInfo3"), "IID_ICorProfilerInfo3");
        assert_eq!(vtbl("ICorProfilerInfo3"), "ICorProfilerInfo3_Vtbl");
    }

    #[test]
    fn wrapper_items_are_named_here() {
        assert_eq!(wrapper_method("Clone"), "clone_com");
        assert_eq!(wrapper_method("Next"), "next_com");
        assert_eq!(wrapper_method("GetClassIDInfo"), "get_class_id_info");
        assert_eq!(result_struct("GetFunctionInfo2"), "FunctionInfo2");
        assert_eq!(result_struct("LoadAsNotficationOnly"), "LoadAsNotificationOnly");
        assert_eq!(results_module("MetaDataImport"), "metadata_import");
        assert_eq!(thunk("ICorProfilerCallback", "Shutdown"), "ICorProfilerCallback_Shutdown__");
        assert_eq!(wrapper_name("ICorProfilerInfo"), "ProfilerInfo");
        assert_eq!(wrapper_name("IMetaDataImport"), "MetaDataImport");
    }

    /// Every method name of the shared headers' corprof.h (and cor.h) whose Rust name differs from a
    /// plain snake case (`heck`), with both spellings.
    const CHANGED: &[(&str, &str, &str)] = &[
        ("ApplyMetaData", "apply_meta_data", "apply_metadata"),
        ("COMClassicVTableCreated", "com_classic_v_table_created", "com_classic_vtable_created"),
        ("COMClassicVTableDestroyed", "com_classic_v_table_destroyed", "com_classic_vtable_destroyed"),
        ("EnumJITedFunctions", "enum_ji_ted_functions", "enum_jited_functions"),
        ("EnumJITedFunctions2", "enum_ji_ted_functions2", "enum_jited_functions2"),
        ("GetInprocInspectionIThisThread", "get_inproc_inspection_i_this_thread", "get_inproc_inspection_ithis_thread"),
        ("GetModuleMetaData", "get_module_meta_data", "get_module_metadata"),
        ("GetReJITIDs", "get_re_jiti_ds", "get_rejit_ids"),
        ("GetReJITParameters", "get_re_jit_parameters", "get_rejit_parameters"),
        (
            "GetTokenAndMetaDataFromFunction",
            "get_token_and_meta_data_from_function",
            "get_token_and_metadata_from_function",
        ),
        ("LoadAsNotficationOnly", "load_as_notfication_only", "load_as_notification_only"),
        ("OpenScopeOnITypeInfo", "open_scope_on_i_type_info", "open_scope_on_itype_info"),
        ("ReJITCompilationFinished", "re_jit_compilation_finished", "rejit_compilation_finished"),
        ("ReJITCompilationStarted", "re_jit_compilation_started", "rejit_compilation_started"),
        ("ReJITError", "re_jit_error", "rejit_error"),
        ("RequestReJIT", "request_re_jit", "request_rejit"),
        ("RequestReJITWithInliners", "request_re_jit_with_inliners", "request_rejit_with_inliners"),
        ("SetFunctionReJIT", "set_function_re_jit", "set_function_rejit"),
        ("ValidateMetaData", "validate_meta_data", "validate_metadata"),
    ];

    #[test]
    fn every_changed_method_name() {
        use heck::ToSnakeCase;
        for (c, plain, ours) in CHANGED {
            assert_eq!(c.to_snake_case(), *plain, "heck's spelling of {c}");
            assert_eq!(snake_case(c), *ours, "{c}");
        }
    }

    /// `CHANGED` is complete: every other method of the header in `CORPROF_INCLUDE_DIR` (when set)
    /// keeps heck's spelling.
    #[test]
    fn changed_lists_every_method_of_the_header() {
        use heck::ToSnakeCase;
        let Some(dir) = std::env::var_os(crate::INCLUDE_DIR_VAR) else { return };
        let dir = std::path::PathBuf::from(dir);
        for file in ["corprof.h", "cor.h"] {
            let Ok(text) = std::fs::read_to_string(dir.join(file)) else { continue };
            // `HRESULT STDMETHODCALLTYPE Name(` (MIDL output) and `STDMETHOD(Name)(` (cor.h).
            let names =
                text.split("STDMETHODCALLTYPE ").skip(1).chain(text.split("STDMETHOD(").skip(1)).filter_map(|rest| {
                    let name: String =
                        rest.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    (!name.is_empty()).then_some(name)
                });
            for name in names {
                if snake_case(&name) != name.to_snake_case() {
                    assert!(
                        CHANGED.iter().any(|(c, _, _)| *c == name),
                        "{name} → {} is not listed in CHANGED",
                        snake_case(&name)
                    );
                }
            }
        }
    }

    #[test]
    fn unchanged_names_stay_as_heck_spells_them() {
        use heck::ToSnakeCase;
        for c in [
            "GetClassIDInfo2",
            "GetCurrentThreadID",
            "GetILFunctionBody",
            "ForceGC",
            "ExceptionCLRCatcherExecute",
            "GetLOHObjectSizeThreshold",
            "GetRVAStaticAddress",
            "SetFunctionIDMapper2",
            "JITCompilationStarted",
            "GetFunctionInfo2",
            "ThreadAssignedToOSThread",
            "GetCORSystemDirectory",
        ] {
            assert_eq!(snake_case(c), c.to_snake_case(), "{c}");
        }
    }

    #[test]
    fn parameters_lose_their_hungarian_prefix() {
        let names = param_names(
            &[
                "pICorProfilerInfoUnk",
                "pClassId",
                "cchName",
                "functionId",
                "oldObjectIDRangeStart",
                "cObjectIDRangeLength",
                "hrStatus",
                "szTypeDef",
                "type",
                "reJitId",
                "hEnum",
            ],
            &[],
        );
        assert_eq!(
            names,
            [
                "info_unk",
                "class_id",
                "name",
                "function_id",
                "old_object_id_range_start",
                "object_id_range_length",
                "hr_status",
                "type_def",
                "r#type",
                "rejit_id",
                "h_enum"
            ]
        );
        // Two stems alike: both keep their whole names.
        assert_eq!(param_names(&["pClass", "class"], &[]), ["p_class", "class"]);
        // A hidden count does not count.
        assert_eq!(param_names(&["szString", "cchString"], &[true, false]), ["string", "string"]);
    }

    #[test]
    fn result_fields_are_named_for_what_they_hold() {
        let o = |c_name, is_text| Output { c_name, is_text };
        assert_eq!(
            field_names(
                "GetTypeDefProps",
                &[o("szTypeDef", true), o("pdwTypeDefFlags", false), o("ptkExtends", false)]
            ),
            ["name", "type_def_flags", "extends"]
        );
        assert_eq!(
            field_names(
                "GetMethodProps",
                &[o("pClass", false), o("szMethod", true), o("ppvSigBlob", false), o("pcbSigBlob", false)]
            ),
            ["class", "name", "sig_blob", "sig_blob_size"]
        );
        assert_eq!(field_names("GetPropertyProps", &[o("ppvSig", false), o("pbSig", false)]), ["sig", "sig_size"]);
        assert_eq!(
            field_names("GetCustomAttributeProps", &[o("ptkObj", false), o("ptkType", false)]),
            ["obj", "ptk_type"]
        );
        assert_eq!(field_names("GetGenericParamProps", &[o("ptOwner", false), o("wzname", true)]), ["owner", "name"]);
        assert_eq!(field_names("GetPEKind", &[o("pdwPEKind", false), o("pdwMAchine", false)]), ["pe_kind", "machine"]);
        assert_eq!(field_names("GetCodeInfo", &[o("pStart", false), o("pcSize", false)]), ["start", "size"]);
        assert_eq!(
            field_names("IsArrayClass", &[o("pBaseElemType", false), o("pBaseClassId", false), o("pcRank", false)]),
            ["base_elem_type", "base_class_id", "rank"]
        );
        assert_eq!(
            field_names("GetRuntimeInformation", &[o("pClrInstanceId", false), o("szVersionString", true)]),
            ["clr_instance_id", "version_string"]
        );
    }

    /// An underscore only separates words (cor.h has `_Reserved`-style and `COR_`-style names).
    #[test]
    fn underscores_separate_words() {
        assert_eq!(snake_case("_Reserved"), "reserved");
        assert_eq!(snake_case("Get_ILFunctionBody__2"), "get_il_function_body_2");
    }

    /// C identifiers may hold `$` (a GCC extension) or non-ASCII letters: each such character is a
    /// word of its own, and the splitter moves on past it.
    #[test]
    fn other_characters_are_words_of_their_own() {
        assert_eq!(snake_case("Size$Max"), "size_$_max");
        assert_eq!(snake_case("$Tail"), "$_tail");
        assert_eq!(snake_case("NaïveName"), "na_ï_ve_name");
    }

    #[test]
    fn typos_are_fixed_in_rust_names_only() {
        assert_eq!(pascal_fixed("LoadAsNotficationOnly"), "LoadAsNotificationOnly");
        assert_eq!(method_name("LoadAsNotficationOnly"), "load_as_notification_only");
    }
}
