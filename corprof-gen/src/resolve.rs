//! IR + annotations → [`Api`]: every interface of the header with each parameter's annotation
//! attached. Validates the merge and collects every problem before failing: names that do not
//! exist (with a suggestion), directions on non-pointers, bad `len`/`string` uses, and pointer
//! parameters of a generated-safe interface that have no direction.

use crate::annotations::{Annotations, Direction, InterfaceAnn, MethodAnn, ParamAnn, ParamSpec, WrapperSpec};
use crate::diag::{Diagnostic, Errors, Fold, suggest};
use crate::ir::{CALLBACK_ROOT, CType, Header, Interface, Loc, Method, Param};

mod agree;
mod docs;

#[derive(Clone, Debug)]
pub struct Api {
    /// In header order; made by [`Api::new`] and not changed after (the lineage indexes it).
    pub interfaces: Vec<ApiInterface>,
    /// Each interface's index by name, and its family's root and depth (see [`Lineage`]).
    lineage: Lineage,
}

/// Each interface's index by name (the first of a name), its chain's length and its chain's
/// root, made once: the domain rules below ask them per interface and per parameter, and a
/// search of every interface each time made a header of a few thousand interfaces take minutes.
#[derive(Clone, Debug, Default)]
struct Lineage {
    by_name: std::collections::HashMap<String, usize>,
    /// Per interface: the length of [`Api::chain`] from it, and the index of its first (the root).
    depth_root: Vec<(usize, usize)>,
}

impl Lineage {
    fn of(interfaces: &[ApiInterface]) -> Lineage {
        let by_name = crate::ir::first_of_each_name(interfaces.iter().map(|i| i.ir.name.as_str()));
        let base = |at: usize| interfaces[at].ir.base.as_deref().and_then(|b| by_name.get(b).copied());
        let mut depth_root: Vec<Option<(usize, usize)>> = vec![None; interfaces.len()];
        for start in 0..interfaces.len() {
            // Up the bases to one already known, the root, or (no compiled header has one) a
            // cycle, which ends the chain as `Api::chain` ends it.
            let mut path: Vec<usize> = Vec::new();
            let mut on_path = std::collections::HashSet::new();
            let mut cur = Some(start);
            let mut known = None;
            while let Some(at) = cur {
                if let Some(k) = depth_root[at] {
                    known = Some(k);
                    break;
                }
                if !on_path.insert(at) {
                    break;
                }
                path.push(at);
                cur = base(at);
            }
            let (mut depth, root) = known.unwrap_or((0, *path.last().unwrap_or(&start)));
            for &at in path.iter().rev() {
                depth += 1;
                depth_root[at] = Some((depth, root));
            }
        }
        Lineage { by_name, depth_root: depth_root.into_iter().map(|d| d.unwrap_or((1, 0))).collect() }
    }
}

#[derive(Clone, Debug)]
pub struct ApiInterface {
    pub ir: Interface,
    /// Part of the ICorProfilerCallback family: gets the safe trait.
    pub is_callback: bool,
    /// Gets a safe layer (trait or wrapper), so every pointer parameter is annotated.
    pub safe: bool,
    pub methods: Vec<ApiMethod>,
}

#[derive(Clone, Debug)]
pub struct ApiMethod {
    pub ir: Method,
    pub params: Vec<ApiParam>,
    /// What S_FALSE means, when the method answers "no" with it (annotation `return:`).
    pub s_false: Option<String>,
    /// How the safe wrapper departs from its parameters (annotation `wrapper:`).
    pub wrapper: WrapperRule,
    /// The runtime suspends itself for the call (annotation `wrapper: { suspends: true }`).
    pub suspends: bool,
    /// The contexts the wrapper refuses the call in (annotation `wrapper: { refuse_in: [...] }`).
    pub refuse_in: Vec<crate::annotations::Context>,
    /// Its entry in the docs table (annotations/docs/), if any.
    pub docs: Option<crate::annotations::docs::MethodDocs>,
    /// The `imp` function a callback's thunk calls first (annotation `answered_by:`).
    pub answered_by: Option<String>,
}

/// What annotation `wrapper:` decided for a method the profiler calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum WrapperRule {
    /// The wrapper its parameters give.
    #[default]
    Generated,
    /// An `unsafe fn`, whose `# Safety` section states this requirement.
    Unsafe(String),
    /// No generated wrapper; corprof's hand-written one is where this says.
    Manual(String),
}

#[derive(Clone, Debug)]
pub struct ApiParam {
    pub ir: Param,
    pub spec: Option<ParamSpec>,
    /// Where the annotation was written.
    pub spec_loc: Option<Loc>,
}

/// The domain rules over the resolved API, each in one place: later stages ask these instead of
/// re-deriving them.
impl Api {
    /// The resolved interfaces, in header order.
    pub fn new(interfaces: Vec<ApiInterface>) -> Api {
        let lineage = Lineage::of(&interfaces);
        Api { interfaces, lineage }
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.lineage.by_name.get(name).copied()
    }

    pub fn interface(&self, name: &str) -> Option<&ApiInterface> {
        let found = self.index_of(name).map(|at| &self.interfaces[at]);
        debug_assert!(found.is_none_or(|i| i.ir.name == name), "Api::interfaces changed after Api::new");
        found
    }

    /// `name` and the bases this header declares, root first (IUnknown is not in it).
    pub fn chain(&self, name: &str) -> Vec<&ApiInterface> {
        let mut chain: Vec<&ApiInterface> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut cur = self.index_of(name);
        while let Some(at) = cur.filter(|&at| seen.insert(at)) {
            let i = &self.interfaces[at];
            chain.push(i);
            cur = i.ir.base.as_deref().and_then(|b| self.index_of(b));
        }
        chain.reverse();
        chain
    }

    /// The root of `name`'s family (`ICorProfilerInfo` for `ICorProfilerInfo12`).
    pub fn family_root<'a>(&'a self, name: &'a str) -> &'a str {
        match self.index_of(name) {
            Some(at) => &self.interfaces[self.lineage.depth_root[at].1].ir.name,
            None => name,
        }
    }

    /// The longest chain among `members`: a family's versions, root first, newest last (the
    /// last member of the greatest depth).
    fn longest_chain<'a>(&'a self, members: impl Iterator<Item = &'a ApiInterface>) -> Vec<&'a ApiInterface> {
        let depth = |i: &ApiInterface| self.index_of(&i.ir.name).map_or(0, |at| self.lineage.depth_root[at].0);
        members.max_by_key(|i| depth(i)).map(|i| self.chain(&i.ir.name)).unwrap_or_default()
    }

    /// The callback versions, root first: the vtable order of the profiler object.
    pub fn callback_chain(&self) -> Vec<&ApiInterface> {
        self.longest_chain(self.interfaces.iter().filter(|i| i.is_callback))
    }

    /// Each family that gets a safe wrapper, with its versions root first, in declaration order.
    pub fn wrapper_families(&self) -> Vec<Vec<&ApiInterface>> {
        // Each family's members, the families in the order their first member is declared.
        let mut families: Vec<Vec<&ApiInterface>> = Vec::new();
        let mut family_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for i in self.interfaces.iter().filter(|i| i.gets_wrapper()) {
            let at = *family_of.entry(self.family_root(&i.ir.name)).or_insert_with(|| {
                families.push(Vec::new());
                families.len() - 1
            });
            families[at].push(i);
        }
        families.into_iter().map(|members| self.longest_chain(members.into_iter())).collect()
    }
}

impl ApiInterface {
    /// Gets a safe wrapper on the calling side (`ProfilerInfo`, `MetaDataImport`, …).
    pub fn gets_wrapper(&self) -> bool {
        self.safe && !self.is_callback
    }
}

impl ApiMethod {
    /// The counts, capacities and IIDs the method's annotated parameters fill themselves
    /// (`cchName` of `szName`): never in a safe signature, and needing no annotation. A `raw`
    /// parameter leaves its count to the caller.
    pub fn consumed(&self) -> Vec<&str> {
        self.params.iter().filter_map(|p| p.spec.as_ref()).filter(|s| !s.raw).flat_map(|s| s.consumes()).collect()
    }
}

/// The one numbering of a family's versions: the n-th interface of its chain (root first, as
/// [`Api::chain`], [`Api::callback_chain`] and [`Api::wrapper_families`] give it) is version n.
/// That is its position in the IIDs a wrapper negotiates over (`FamilyMember::VERSION`,
/// `Negotiated::version`) and the callback versions the trait documents; for the headers' families
/// it is also the number in the name (`ICorProfilerInfo12` is 12; test
/// `versions_are_positions_and_the_names_numbers`).
pub fn numbered<'a>(chain: &[&'a ApiInterface]) -> Vec<(u32, &'a ApiInterface)> {
    (1..).zip(chain.iter().copied()).collect()
}

/// Whether an interface belongs to the metadata API (cor.h's `IMetaData*`), not the profiling
/// API: its docs live elsewhere, its wrappers go to `corprof::metadata`, and the runtime documents
/// it free-threaded. The one home of that rule.
pub fn is_metadata(iface: &str) -> bool {
    iface.starts_with("IMetaData")
}

/// The Microsoft Learn page of a method.
pub fn doc_url(iface: &str, method: &str) -> String {
    let area = if is_metadata(iface) { "metadata/interfaces" } else { "profiling" };
    format!(
        "https://learn.microsoft.com/dotnet/core/unmanaged-api/{area}/{}-{}-method",
        iface.to_ascii_lowercase(),
        method.to_ascii_lowercase()
    )
}

/// Merges and validates. `Ok` carries the warnings too (drafts, interfaces this header lacks).
///
/// An interface gets the safe layer (and so needs every pointer parameter annotated) when it is
/// a callback, is declared by the main header (corprof.h), or is named in the annotations.
pub fn resolve(header: &Header, ann: &Annotations) -> Result<(Api, Errors), Errors> {
    let mut errors = Errors::default();
    check_header(header, &mut errors);
    let unstated: usize = ann.interfaces.iter().map(|ia| check_interface_entry(header, ia, &mut errors)).sum();
    if unstated > 0 {
        errors.push(
            Diagnostic::info(format!(
                "{unstated} `len`/`cap` count(s) of `[size_is]`/`[length_is]` parameters unconfirmed (warned above): \
                 the header does not say which parameter counts them"
            ))
            .note("MIDL's C header drops the count expression; the IDL it was made from (`corprof.idl`) has it")
            .help(
                "add a folder holding the matching corprof.idl to the header folders (`--include a:b`) to check them",
            ),
        );
    }
    docs::check_names(header, ann, &mut errors);
    let mut undocumented: Vec<String> = Vec::new();
    let mut drafts: Vec<&Loc> = Vec::new();
    let mut interfaces = Vec::new();
    for iface in &header.interfaces {
        let is_callback = header.is_callback(iface);
        let iface_ann = ann.interface(&iface.name);
        let safe = is_callback || *iface.loc.file == *header.main_header || iface_ann.is_some();
        let mut methods = Vec::new();
        for m in &iface.methods {
            let method_ann = iface_ann.and_then(|ia| ia.methods.iter().find(|ma| ma.is_for(&m.name)));
            let find = |name: &str| method_ann.and_then(|ma| ma.params.iter().find(|pa| pa.name == name));
            let params: Vec<ApiParam> = m
                .params
                .iter()
                .map(|p| {
                    let pa = find(&p.name);
                    if let Some(pa) = pa.filter(|pa| pa.spec.draft) {
                        drafts.push(&pa.loc);
                    }
                    // `flags` naming an enum this header lacks leaves the C type (noted in the check).
                    let spec = pa.map(|pa| {
                        let mut spec = pa.spec.clone();
                        spec.flags = spec.flags.filter(|f| header.enums.iter().any(|e| e.is_named(f) && e.flags));
                        spec
                    });
                    ApiParam { ir: p.clone(), spec, spec_loc: pa.map(|pa| pa.loc.clone()) }
                })
                .collect();
            let s_false = method_ann.and_then(|ma| ma.ret.as_deref()).and_then(|(r, _)| r.s_false.clone());
            let wrapper = match method_ann.and_then(|ma| ma.wrapper.as_deref()) {
                Some((WrapperSpec { manual: Some(at), .. }, _)) => WrapperRule::Manual(at.clone()),
                Some((WrapperSpec { unsafe_reason: Some(why), .. }, _)) => WrapperRule::Unsafe(why.clone()),
                _ => WrapperRule::Generated,
            };
            let suspends = method_ann.and_then(|ma| ma.wrapper.as_deref()).is_some_and(|(w, _)| w.suspends);
            let refuse_in =
                method_ann.and_then(|ma| ma.wrapper.as_deref()).map(|(w, _)| w.refuse_in.clone()).unwrap_or_default();
            let docs = docs::entry_for(&ann.docs, &iface.name, &m.name, method_ann).cloned();
            if safe && docs.is_none() {
                undocumented.push(format!("{}::{}", iface.name, m.name));
            }
            let answered_by = method_ann.and_then(|ma| ma.answered_by.as_deref()).map(|(f, _)| f.clone());
            let method = ApiMethod { ir: m.clone(), params, s_false, wrapper, suspends, refuse_in, docs, answered_by };
            let consumed = method.consumed();
            for p in method.params.iter().filter(|p| safe && p.ir.ty.is_pointer() && p.spec.is_none()) {
                if !consumed.contains(&p.ir.name.as_str()) {
                    let at = method_ann.map(|ma| ma.loc.clone()).or_else(|| iface_ann.map(|ia| ia.loc.clone()));
                    errors.push(missing_direction(iface, m, &p.ir, at));
                }
            }
            methods.push(method);
        }
        interfaces.push(ApiInterface { ir: iface.clone(), is_callback, safe, methods });
    }
    // Only where a table is kept: a small annotation set (a fixture, an experiment) need not have one.
    if !ann.docs.methods.is_empty() {
        docs::warn_undocumented(&undocumented, &mut errors);
    }
    // One warning per file, not one per entry: a fresh bootstrap drafts hundreds.
    let mut files: Vec<&str> = drafts.iter().map(|l| &*l.file).collect();
    files.dedup();
    for file in files {
        let here: Vec<&&Loc> = drafts.iter().filter(|l| &*l.file == file).collect();
        errors.push(
            Diagnostic::warning(format!("{} draft annotation(s) in {file} are not reviewed yet", here.len()))
                .at((*here[0]).clone())
                .help("check each against the documentation, then remove `draft: true`"),
        );
    }
    errors.check()?;
    Ok((Api::new(interfaces), errors))
}

/// `ICorProfilerCallback12` → `ICorProfilerCallback`: entries for a later (or earlier) version of
/// a family the header declares are skipped, so one annotation set serves several SDK headers.
pub fn family_name(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// What would otherwise fail in rustc: no callback interface to implement (the corprof crate
/// re-exports the trait), a base interface that gets no binding (the vtable embeds the base's).
fn check_header(header: &Header, errors: &mut Errors) {
    if !header.interfaces.iter().any(|i| header.is_callback(i)) {
        let at = Loc { file: header.main_header.as_str().into(), line: 1, col: 0 };
        errors.push(
            Diagnostic::error(format!(
                "{} declares no callback interface (`{CALLBACK_ROOT}` or one derived from it)",
                header.main_header
            ))
            .at(at)
            .help(format!(
                "a profiler implements {CALLBACK_ROOT}: point CORPROF_INCLUDE_DIR at the runtime's corprof.h"
            )),
        );
    }
    for iface in &header.interfaces {
        let Some(base) = iface.base.as_deref().filter(|b| *b != "IUnknown" && header.interface(b).is_none()) else {
            continue;
        };
        let mut d = Diagnostic::error(format!("`{}` derives from `{base}`, which gets no binding", iface.name))
            .at(iface.loc.clone());
        if let Some((_, loc)) = header.without_iid.iter().find(|(n, _)| n == base) {
            d = d.note(format!("`{base}` is declared at {loc} without an IID")).help(IID_HELP);
        }
        errors.push(d);
    }
}

const IID_HELP: &str = "declare it with `MIDL_INTERFACE(\"<iid>\")` or an `IID_<name>` GUID constant";

/// What the `check_*` functions of annotation entries share: the header and the errors so far.
struct Cx<'a> {
    header: &'a Header,
    errors: &'a mut Errors,
}

/// One annotated parameter and where it sits, for the per-parameter checks.
struct ParamCx<'a> {
    /// `ICorProfilerInfo::GetFunctionInfo`
    qualified: String,
    method: &'a Method,
    param: &'a Param,
    pointee: &'a CType,
    pa: &'a ParamAnn,
    is_callback: bool,
}

impl ParamCx<'_> {
    /// An error at the annotation, pointing at `decl` in the header.
    fn error(&self, msg: String, decl: &Loc) -> Diagnostic {
        Diagnostic::error(msg).at(self.pa.loc.clone()).declared_at(decl)
    }
}

/// Checks one interface's entries; returns how many counts the header gave no way to check
/// (see [`agree::check`]).
fn check_interface_entry(header: &Header, ia: &InterfaceAnn, errors: &mut Errors) -> usize {
    let mut cx = Cx { header, errors };
    let mut unstated = 0;
    let Some(iface) = check_interface_known(&mut cx, ia) else { return 0 };
    for ma in &ia.methods {
        let Some(method) = check_method_known(&mut cx, iface, ma) else { continue };
        check_return(&mut cx, iface, method, ma);
        check_wrapper(&mut cx, iface, method, ma);
        check_answered_by(&mut cx, iface, method, ma);
        for pa in &ma.params {
            let Some(p) = check_param_known(&mut cx, iface, method, pa) else { continue };
            let counts_fit = check_counts(&mut cx, &p);
            check_cap(&mut cx, &p);
            check_corenum(&mut cx, &p);
            check_iid(&mut cx, &p);
            let idl = cx.header.idl.get(&crate::idl::key(&iface.name, &method.name, &p.param.name));
            let place = agree::Place { qualified: &p.qualified, is_callback: p.is_callback, idl };
            // A count already refused needs no second word.
            if let Some(quote) = agree::check(&place, p.param, pa, cx.errors).filter(|_| counts_fit) {
                cx.errors.push(unconfirmed(&p, &quote));
                unstated += 1;
            }
            check_string(&mut cx, &p);
        }
    }
    unstated
}

/// The warning for a count the header marks (`[size_is]`) but does not name, so that a `len`/`cap`
/// naming the wrong integer parameter cannot be caught here: its type was checked
/// ([`check_counts`]), not which parameter it is. The build folds these into one line
/// ([`Fold::UnconfirmedCounts`]); `corprof-gen check` lists each.
fn unconfirmed(p: &ParamCx<'_>, quote: &str) -> Diagnostic {
    let spec = &p.pa.spec;
    let named: Vec<String> = [("len", &spec.len), ("cap", &spec.cap)]
        .into_iter()
        .filter_map(|(key, v)| v.as_ref().map(|v| format!("`{key}: {v}`")))
        .collect();
    Diagnostic::warning(format!(
        "{} of `{}` in {} unconfirmed: the header says `{quote}` without naming the count",
        named.join(" and "),
        p.pa.name,
        p.qualified
    ))
    .at(p.pa.loc.clone())
    .declared_at(&p.param.loc)
    .folded(Fold::UnconfirmedCounts)
}

/// The interface exists and has an IID; an entry for another version of a declared family (or a
/// name close to none) is skipped with a note, one close to a declared name is a typo.
fn check_interface_known<'a>(cx: &mut Cx<'a>, ia: &InterfaceAnn) -> Option<&'a Interface> {
    let header = cx.header;
    if let Some((_, loc)) = header.without_iid.iter().find(|(n, _)| *n == ia.name) {
        cx.errors.push(
            Diagnostic::error(format!(
                "interface `{}` has no IID, so it gets no binding and its entries cannot apply",
                ia.name
            ))
            .at(ia.loc.clone())
            .declared_at(loc)
            .help(IID_HELP),
        );
        return None;
    }
    if let Some(iface) = header.interface(&ia.name) {
        return Some(iface);
    }
    let same_family = header.interfaces.iter().any(|i| family_name(&i.name) == family_name(&ia.name));
    let close = suggest(&ia.name, header.interfaces.iter().map(|i| i.name.as_str()));
    match close {
        Some(s) if !same_family => cx.errors.push(
            Diagnostic::error(format!("unknown interface `{}`", ia.name))
                .at(ia.loc.clone())
                .help(format!("did you mean `{s}`?")),
        ),
        _ => cx.errors.push(
            Diagnostic::info(format!(
                "interface `{}` is not declared by this header; its entries are skipped",
                ia.name
            ))
            .at(ia.loc.clone()),
        ),
    }
    None
}

/// The method is declared by this interface (not a base: say which one declares it).
fn check_method_known<'a>(cx: &mut Cx<'a>, iface: &'a Interface, ma: &MethodAnn) -> Option<&'a Method> {
    let matching: Vec<&Method> = iface.methods.iter().filter(|m| ma.is_for(&m.name)).collect();
    if let [m, other, ..] = matching[..] {
        let (_, loc) = ma.aka.iter().find(|(a, _)| *a == other.name || *a == m.name).expect("an aka matched");
        cx.errors.push(
            Diagnostic::error(format!(
                "`aka` makes the entry `{}` match two methods of `{}`: `{}` and `{}`",
                ma.name, iface.name, m.name, other.name
            ))
            .at(loc.clone())
            .declared_at(&other.loc)
            .help("`aka` is for one method the header renamed (same slot); annotate the two methods separately"),
        );
        return None;
    }
    if let [m] = matching[..] {
        return Some(m);
    }
    if let Some((since, loc)) = ma.since.as_deref() {
        // An older header's interface, from before the method was appended: skip, as for an
        // absent interface, but still say which declared name is close (a typo stays visible).
        let mut d = Diagnostic::info(format!(
            "method `{}` is not declared by this header's `{}` (added by {since}); its entries are skipped",
            ma.name, iface.name
        ))
        .at(loc.clone());
        if let Some(s) = suggest(&ma.name, iface.methods.iter().map(|m| m.name.as_str())) {
            d = d.help(format!("did you mean `{s}`?"));
        }
        cx.errors.push(d);
        return None;
    }
    let mut d = Diagnostic::error(format!("unknown method `{}` in interface `{}`", ma.name, iface.name))
        .at(ma.loc.clone())
        .declared_at(&iface.loc);
    if let Some(owner) =
        cx.header.chain(iface).into_iter().skip(1).find(|b| b.methods.iter().any(|m| m.name == ma.name))
    {
        d = d.help(format!("`{}` is declared by `{}`: annotate it there", ma.name, owner.name));
    } else if let Some(s) = suggest(&ma.name, iface.methods.iter().map(|m| m.name.as_str())) {
        d = d.help(format!("did you mean `{s}`?"));
    }
    cx.errors.push(d);
    None
}

/// `return:` describes an HRESULT of a method the profiler calls.
fn check_return(cx: &mut Cx<'_>, iface: &Interface, method: &Method, ma: &MethodAnn) {
    let Some((_, loc)) = ma.ret.as_deref() else { return };
    let returns_hresult = method.ret.is_hresult();
    if cx.header.is_callback(iface) || !returns_hresult {
        cx.errors.push(
            Diagnostic::error(format!(
                "`return:` of {}::{} describes the answer of a method the profiler calls and that returns HRESULT",
                iface.name, method.name
            ))
            .at(loc.clone())
            .declared_at(&method.loc),
        );
    }
}

/// `wrapper:` is about the safe wrapper of a method the profiler calls, and says one thing.
fn check_wrapper(cx: &mut Cx<'_>, iface: &Interface, method: &Method, ma: &MethodAnn) {
    let Some((spec, loc)) = ma.wrapper.as_deref() else { return };
    let returns_hresult = method.ret.is_hresult();
    let problem = if cx.header.is_callback(iface) || !returns_hresult {
        Some("describes the safe wrapper of a method the profiler calls and that returns HRESULT")
    } else {
        match (&spec.unsafe_reason, &spec.manual) {
            (Some(_), Some(_)) => Some("says both `unsafe` and `manual`: a hand-written wrapper states its own safety"),
            (None, Some(_)) if spec.suspends || !spec.refuse_in.is_empty() => {
                Some("says both `suspends` or `refuse_in` and `manual`: a hand-written wrapper refuses on its own")
            }
            (None, None) if !spec.suspends && spec.refuse_in.is_empty() => Some(
                "says none of `unsafe: \"<requirement>\"`, `manual: \"<where>\"`, `suspends: true`, `refuse_in: [...]`",
            ),
            (Some(t), _) | (_, Some(t)) if t.trim().is_empty() => Some("needs its text: the requirement, or where"),
            _ => None,
        }
    };
    if let Some(problem) = problem {
        cx.errors.push(
            Diagnostic::error(format!("`wrapper:` of {}::{} {problem}", iface.name, method.name))
                .at(loc.clone())
                .declared_at(&method.loc),
        );
    }
}

/// `answered_by:` names a function of corprof's `imp` module, and only a callback's thunk can
/// call one first.
fn check_answered_by(cx: &mut Cx<'_>, iface: &Interface, method: &Method, ma: &MethodAnn) {
    let Some((name, loc)) = ma.answered_by.as_deref() else { return };
    let identifier = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let problem = if !cx.header.is_callback(iface) {
        Some("is for a callback, which corprof's thunk can answer before the profiler".to_string())
    } else if !identifier {
        Some(format!("names {name:?}, not a function of corprof's `imp` module (a snake_case name)"))
    } else {
        None
    };
    if let Some(problem) = problem {
        cx.errors.push(
            Diagnostic::error(format!("`answered_by:` of {}::{} {problem}", iface.name, method.name))
                .at(loc.clone())
                .declared_at(&method.loc),
        );
    }
}

/// The parameter exists and is a pointer (only pointers take a direction).
fn check_param_known<'a>(
    cx: &mut Cx<'_>,
    iface: &Interface,
    method: &'a Method,
    pa: &'a ParamAnn,
) -> Option<ParamCx<'a>> {
    let qualified = format!("{}::{}", iface.name, method.name);
    let Some(param) = method.params.iter().find(|p| p.name == pa.name) else {
        let mut d = Diagnostic::error(format!("unknown parameter `{}` of {qualified}", pa.name))
            .at(pa.loc.clone())
            .declared_at(&method.loc);
        if let Some(s) = suggest(&pa.name, method.params.iter().map(|p| p.name.as_str())) {
            d = d.help(format!("did you mean `{s}`?"));
        }
        cx.errors.push(d);
        return None;
    };
    if let Some(flags) = &pa.spec.flags {
        check_flags(cx, &qualified, param, pa, flags);
        // `dwEvents: { flags: COR_PRF_MONITOR }`: a typed value, no direction to check.
        let value_flags = pa.spec.dir == Direction::In
            && pa.spec.consumes().next().is_none()
            && !(pa.spec.corenum || pa.spec.raw || pa.spec.optional || pa.spec.string);
        if !param.ty.is_pointer() && value_flags {
            return None;
        }
    }
    // `thrownObjectId: { live: "…" }`: a value lent for the callback; classify checks its type.
    let plain_value = pa.spec.dir == Direction::In
        && pa.spec.consumes().next().is_none()
        && !(pa.spec.corenum || pa.spec.raw || pa.spec.optional || pa.spec.string);
    if pa.spec.live.is_some() && !param.ty.is_pointer() && plain_value {
        return None;
    }
    let Some(pointee) = param.ty.pointee() else {
        cx.errors.push(
            Diagnostic::error(format!(
                "`{}` of {qualified} is not a pointer (its type is `{}`): only pointer parameters take a direction",
                pa.name, param.ty
            ))
            .at(pa.loc.clone())
            .declared_at(&param.loc),
        );
        return None;
    };
    Some(ParamCx { qualified, method, param, pointee, pa, is_callback: cx.header.is_callback(iface) })
}

/// `len`, `cap` and `iid` name another parameter of the method, of the right shape: counts of
/// `in` arrays and capacities are integer values; counts of `out` buffers are written back, so
/// they are pointers; an IID is a pointer. Returns whether all of them are.
fn check_counts(cx: &mut Cx<'_>, p: &ParamCx<'_>) -> bool {
    let before = cx.errors.items.len();
    let (pa, method) = (p.pa, p.method);
    let wants_pointer_len = pa.spec.dir != Direction::In;
    for (role, name, want_pointer) in
        [("length", &pa.spec.len, wants_pointer_len), ("capacity", &pa.spec.cap, false), ("IID", &pa.spec.iid, true)]
    {
        let Some(name) = name else { continue };
        if *name == pa.name {
            cx.errors.push(p.error(format!("`{}` cannot be its own {role} parameter", pa.name), &p.param.loc));
            continue;
        }
        match method.params.iter().find(|o| o.name == *name) {
            None => cx.errors.push(p.error(
                format!("{role} parameter `{name}` of `{}` does not exist in {}", pa.name, p.qualified),
                &method.loc,
            )),
            Some(lp) if role != "IID" && !lp.is_count => {
                // `ClassID` is an integer to C: say why it still is not one here.
                let base = match &lp.ty {
                    CType::Pointer { pointee, .. } => pointee.as_ref(),
                    ty => ty,
                };
                let named = match base {
                    CType::Named(n) => Some(n.as_str()),
                    _ => None,
                };
                let what = match (named, named.and_then(crate::ir::not_a_count)) {
                    (Some(n), _) if cx.header.id_types.iter().any(|i| i.name == n) => {
                        "an ID, not a plain integer".to_string()
                    }
                    (_, Some(holds)) if lp.ty.is_pointer() => format!("a pointer to {holds}"),
                    (_, Some(holds)) => holds.to_string(),
                    _ => "not an integer count".to_string(),
                };
                cx.errors.push(p.error(
                    format!(
                        "{role} parameter `{name}` of `{}` is `{}`, {what}: it cannot count elements",
                        pa.name, lp.ty
                    ),
                    &lp.loc,
                ))
            }
            Some(lp) if lp.ty.is_pointer() != want_pointer => cx.errors.push(p.error(
                format!(
                    "{role} parameter `{name}` of `{}` {} a pointer (`{}`)",
                    pa.name,
                    if want_pointer { "must be" } else { "is" },
                    lp.ty
                ),
                &lp.loc,
            )),
            Some(_) => {}
        }
    }
    cx.errors.items.len() == before
}

/// `flags: T` names a flag enum of the header, on an integer (or a pointer to one) of its size.
fn check_flags(cx: &mut Cx<'_>, qualified: &str, param: &Param, pa: &ParamAnn, flags: &str) {
    let (header, errors) = (cx.header, &mut *cx.errors);
    let at = |msg: String| Diagnostic::error(msg).at(pa.loc.clone()).declared_at(&param.loc);
    match header.enums.iter().find(|e| e.is_named(flags)) {
        // A name close to a declared enum is a typo; another one names a type of a header not
        // parsed this time (cor.h's `CorOpenFlags` when only corprof.h is): the parameter keeps
        // its C type, with a note.
        None => match suggest(flags, header.enums.iter().filter(|e| e.flags).map(|e| e.name.as_str())) {
            Some(s) => errors.push(
                at(format!("`flags: {flags}` of `{}` in {qualified}: the header declares no enum `{flags}`", pa.name))
                    .help(format!("did you mean `{s}`?")),
            ),
            None => errors.push(
                Diagnostic::info(format!(
                    "`flags: {flags}` of `{}` in {qualified}: this header declares no enum `{flags}`; the parameter keeps its C type",
                    pa.name
                ))
                .at(pa.loc.clone()),
            ),
        },
        Some(e) if !e.flags => errors.push(
            at(format!("`flags: {flags}` of `{}` in {qualified}: `{flags}` is not a flag enum", pa.name))
                .note(format!("`{flags}` is declared at {}", e.loc))
                .note(
                    "a flag enum writes its enumerators as bits (hex, other enumerators, `|`), mostly single bits; \
                     this one is a list of values",
                ),
        ),
        Some(_) if !param.is_count => errors.push(at(format!(
            "`flags: {flags}` of `{}` in {qualified}: the parameter is `{}`, not an integer (or a pointer to one)",
            pa.name, param.ty
        ))),
        Some(_) => {}
    }
}

/// `cap` belongs to `out` buffers.
fn check_cap(cx: &mut Cx<'_>, p: &ParamCx<'_>) {
    if p.pa.spec.cap.is_some() && p.pa.spec.dir == Direction::In {
        cx.errors
            .push(p.error(format!("`cap` of `{}` belongs to `out` buffers, not `in` ones", p.pa.name), &p.param.loc));
    }
}

/// `corenum` marks an `HCORENUM *`.
fn check_corenum(cx: &mut Cx<'_>, p: &ParamCx<'_>) {
    if p.pa.spec.corenum && !matches!(p.pointee, CType::Named(n) if n == "HCORENUM") {
        cx.errors.push(p.error(
            format!("`{}` is marked `corenum` but points to `{}`, not HCORENUM", p.pa.name, p.pointee),
            &p.param.loc,
        ));
    }
}

/// `iid` names the type of a `void **`/`IUnknown **` out.
fn check_iid(cx: &mut Cx<'_>, p: &ParamCx<'_>) {
    if p.pa.spec.iid.is_some() && !p.pointee.is_untyped_interface_pointer() {
        cx.errors.push(p.error(
            format!("`{}` has an `iid` but is `{}`, not `void **`/`IUnknown **`", p.pa.name, p.param.ty),
            &p.param.loc,
        ));
    }
}

/// `string` marks WCHAR text.
fn check_string(cx: &mut Cx<'_>, p: &ParamCx<'_>) {
    if p.pa.spec.string && !matches!(p.pointee, CType::Named(n) if n == "WCHAR") {
        cx.errors.push(p.error(
            format!("`{}` of {} is marked `string` but points to `{}`, not WCHAR", p.pa.name, p.qualified, p.pointee),
            &p.param.loc,
        ));
    }
}

fn missing_direction(iface: &Interface, m: &Method, p: &Param, at: Option<Loc>) -> Diagnostic {
    let hint = if p.midl.is_empty() {
        String::new()
    } else {
        format!(" (the header's MIDL attributes say [{}])", p.midl.join("]["))
    };
    Diagnostic::error(format!("pointer parameter `{}` of {}::{} has no direction", p.name, iface.name, m.name))
        .at_opt(at)
        .declared_at(&p.loc)
        .help(format!(
            "add `{}: in`, `out` or `ref` under `{}:` → `{}:` in an annotation file{hint}",
            p.name, iface.name, m.name
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(name: &str) -> ApiInterface {
        let ir = Interface { name: name.into(), iid: String::new(), base: None, methods: vec![], loc: Loc::default() };
        ApiInterface { ir, is_callback: false, safe: true, methods: vec![] }
    }

    fn derived(name: &str, base: &str) -> ApiInterface {
        let mut i = iface(name);
        i.ir.base = Some(base.into());
        i
    }

    /// Families and chains from the lineage made once, as the searches they replaced gave them:
    /// declaration order, the root first, the deepest chain (the last of equal ones), a base the
    /// header does not declare ending a chain, and a cycle (which no compiled header has) ending
    /// it without hanging.
    #[test]
    fn families_roots_and_chains_come_from_the_bases() {
        let api = Api::new(vec![
            iface("IA"),
            derived("IB", "IUnknown"),
            derived("IA2", "IA"),
            derived("IA3", "IA2"),
            derived("IB2", "IB"),
            derived("IA2b", "IA"),
            derived("IC", "ID"),
            derived("ID", "IC"),
        ]);
        let names = |v: &[&ApiInterface]| v.iter().map(|i| i.ir.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&api.chain("IA3")), ["IA", "IA2", "IA3"]);
        assert_eq!(api.family_root("IA3"), "IA");
        assert_eq!(api.family_root("IA2b"), "IA");
        assert_eq!(api.family_root("IB2"), "IB");
        assert_eq!(api.family_root("INone"), "INone");
        assert_eq!(api.interface("IB2").map(|i| i.ir.name.as_str()), Some("IB2"));
        assert!(api.interface("IUnknown").is_none());
        let families: Vec<Vec<String>> = api.wrapper_families().iter().map(|f| names(f)).collect();
        assert_eq!(families[..2], [vec!["IA", "IA2", "IA3"], vec!["IB", "IB2"]]);
        // The cycle: one family, each chain ending where it would revisit.
        assert_eq!(names(&api.chain("IC")), ["ID", "IC"]);
        assert_eq!(families.len(), 3, "{families:?}");
        // Of two chains of one length, the last declared.
        let tie = Api::new(vec![iface("IX"), derived("IX2", "IX"), derived("IX2b", "IX")]);
        assert_eq!(names(&tie.wrapper_families()[0]), ["IX", "IX2b"]);
    }

    /// The former homes of the version number: resolve read it from the name
    /// (`ICorProfilerCallback7` → 7, an unnumbered root 1), the wrappers and the template from the
    /// position in the chain. On the headers' numbered families the two agree, so the position is
    /// the one numbering.
    #[test]
    fn versions_are_positions_and_the_names_numbers() {
        let by_name = |name: &str| -> u32 { name[family_name(name).len()..].parse().unwrap_or(1) };
        for (root, n) in [("ICorProfilerInfo", 15), ("ICorProfilerCallback", 11), ("IMetaDataImport", 2)] {
            let owned: Vec<ApiInterface> =
                (1..=n).map(|v| if v == 1 { iface(root) } else { iface(&format!("{root}{v}")) }).collect();
            let chain: Vec<&ApiInterface> = owned.iter().collect();
            for (version, i) in numbered(&chain) {
                assert_eq!(version, by_name(&i.ir.name), "{}", i.ir.name);
            }
        }
    }
}
