//! il-roundtrip: decodes and re-encodes every method body of every module the runtime loads,
//! and every signature those bodies reference, and says how many came back byte for byte.
//!
//! At each ModuleLoadFinished it walks the module's metadata (every type definition's methods,
//! the global ones of `<Module>` too), asks the runtime for each method's IL body
//! (`GetILFunctionBody`; abstract, extern, runtime-implemented and P/Invoke methods have none and
//! are not counted), runs it through [`MethodBody::parse`] and [`MethodBody::encode`], and
//! decodes and re-encodes the signatures the body names: its own definition's, its locals'
//! (`StandAloneSig`), and those behind each token operand (`MethodDef`, `MemberRef` and its
//! parent when that is a `TypeSpec`, `MethodSpec` and its method, `TypeSpec`, `FieldDef`, a
//! `calli`'s `StandAloneSig`), each once per module.
//! It writes one line per module to the file in `CORPROF_IL_OUT` (else stderr):
//!
//! ```text
//! <module file name> <methods with a body> <bodies re-encoded byte-identical> <signatures decoded>
//! ```
//!
//! (a signature counts as decoded when it decodes and encodes back to the same bytes). Each
//! failure is a line `il-roundtrip: <module> <token>: <what>` on stderr. Modules without
//! metadata (dynamic, resource) get no line.
//!
//! `CORPROF_IL_DUMP=<file>` also writes the bodies and signature blobs of
//! System.Private.CoreLib to that file, for the `il-bench` binary (scripts/bench-il).
//!
//! Load with `CORECLR_PROFILER={5E1F0C3A-7B2D-4C89-A6E4-1D3F5B7C9E20}`.

use corprof::il::{MethodBody, Operand};
use corprof::sig::{Signature, Token, TypeSpec};
use corprof::types::{COR_PRF_MONITOR, CorOpenFlags, ModuleID, mdMethodDef};
use corprof::{CorProfilerCallback, HResult, IUnknown, MetaDataImport, ProfilerInfo, Result};
use std::collections::HashSet;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("5E1F0C3A-7B2D-4C89-A6E4-1D3F5B7C9E20");

/// The module whose bodies `CORPROF_IL_DUMP` keeps.
const DUMPED_MODULE: &str = "System.Private.CoreLib.dll";

/// What kind of blob a dump record holds.
pub mod record {
    /// A method body, header to the end of its last data section.
    pub const BODY: u8 = 0;
    /// A signature starting with a calling-convention byte ([`corprof::sig::Signature`]).
    pub const SIGNATURE: u8 = 1;
    /// A type specification ([`corprof::sig::TypeSpec`]).
    pub const TYPE_SPEC: u8 = 2;
}

/// Appends one dump record: kind, little-endian `u32` length, bytes.
pub fn write_record(out: &mut Vec<u8>, kind: u8, bytes: &[u8]) {
    out.push(kind);
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// The records of a dump, in order; `None` if it is cut short.
pub fn read_records(mut bytes: &[u8]) -> Option<Vec<(u8, &[u8])>> {
    let mut records = Vec::new();
    while let Some((&kind, rest)) = bytes.split_first() {
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        records.push((kind, rest.get(4..4 + len)?));
        bytes = &rest[4 + len..];
    }
    Some(records)
}

/// Whether `body` parses and encodes back to the same bytes.
pub fn body_round_trips(body: &[u8]) -> std::result::Result<bool, corprof::il::IlError> {
    Ok(MethodBody::parse(body)?.encode()? == body)
}

/// Whether the signature blob (`kind` a [`record`] kind) decodes and encodes back to the same
/// bytes.
pub fn signature_round_trips(kind: u8, blob: &[u8]) -> std::result::Result<bool, corprof::sig::SigError> {
    Ok(match kind {
        record::TYPE_SPEC => TypeSpec::decode(blob)?.encode()? == blob,
        _ => Signature::decode(blob)?.encode()? == blob,
    })
}

/// One module's counts.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Methods the runtime gave an IL body for.
    pub bodies: usize,
    /// Bodies that came back byte for byte.
    pub identical: usize,
    /// Signatures decoded and encoded back byte for byte.
    pub signatures: usize,
}

/// Copies `len` bytes at `ptr`, which the runtime or the metadata handed out.
///
/// # Safety
/// `ptr` must be null or point to `len` readable bytes.
unsafe fn copy(ptr: *const u8, len: u32) -> Vec<u8> {
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: the caller's contract: `len` readable bytes at a non-null `ptr`.
    unsafe { std::slice::from_raw_parts(ptr, len as usize) }.to_vec()
}

/// The signature blob behind `token`, with its [`record`] kind; `None` for a token without one
/// (a `TypeDef`, a string, …).
fn signature_of(import: &MetaDataImport, token: Token) -> Option<Result<(u8, Vec<u8>)>> {
    // SAFETY (each arm): the metadata call succeeded, so the pointer is to `size` bytes of the
    // module's blob heap, alive while `import` is; `copy` copies them out at once.
    let blob = |r: Result<(*const u8, u32)>| r.map(|(p, n)| unsafe { copy(p, n) });
    Some(match token.table() {
        Token::METHOD_DEF => blob(import.get_method_props(token.0).map(|p| (p.sig_blob, p.sig_blob_size)))
            .map(|b| (record::SIGNATURE, b)),
        Token::MEMBER_REF => {
            blob(import.get_member_ref_props(token.0).map(|p| (p.sig_blob, p.sig))).map(|b| (record::SIGNATURE, b))
        }
        Token::METHOD_SPEC => blob(import.get_method_spec_props(token.0).map(|p| (p.sig_blob, p.sig_blob_size)))
            .map(|b| (record::SIGNATURE, b)),
        Token::STANDALONE_SIG => {
            blob(import.get_sig_from_token(token.0).map(|p| (p.sig, p.sig_size))).map(|b| (record::SIGNATURE, b))
        }
        Token::TYPE_SPEC => {
            blob(import.get_type_spec_from_token(token.0).map(|p| (p.sig, p.sig_size))).map(|b| (record::TYPE_SPEC, b))
        }
        FIELD_DEF => {
            blob(import.get_field_props(token.0).map(|p| (p.sig_blob, p.sig_blob_size))).map(|b| (record::SIGNATURE, b))
        }
        _ => return None,
    })
}

/// The `FieldDef` table.
const FIELD_DEF: u8 = 0x04;
/// `<Module>`, the type holding a module's global methods (not listed by `EnumTypeDefs`).
const MODULE_TYPE: u32 = 0x0200_0001;

/// Walks one module.
struct Walk<'a> {
    info: &'a ProfilerInfo,
    module: ModuleID,
    name: &'a str,
    import: MetaDataImport,
    counts: Counts,
    seen: HashSet<u32>,
    dump: Option<Vec<u8>>,
}

impl Walk<'_> {
    fn fail(&self, token: u32, what: impl std::fmt::Display) {
        eprintln!("il-roundtrip: {} 0x{token:08x}: {what}", self.name);
    }

    fn signature(&mut self, token: Token) {
        if !self.seen.insert(token.0) {
            return;
        }
        // A MethodSpec's generic method has a signature too, and so has a member's generic
        // type instance (`Box<int>::.ctor`'s `Box<int>`, a TypeSpec).
        let parent = match token.table() {
            Token::METHOD_SPEC => self.import.get_method_spec_props(token.0).ok().map(|p| p.parent),
            Token::MEMBER_REF => self.import.get_member_ref_props(token.0).ok().map(|p| p.ptk),
            _ => None,
        };
        if let Some(parent) =
            parent.map(Token).filter(|p| matches!(p.table(), Token::TYPE_SPEC | Token::METHOD_DEF | Token::MEMBER_REF))
        {
            self.signature(parent);
        }
        let Some(found) = signature_of(&self.import, token) else { return };
        let (kind, blob) = match found {
            Ok(found) => found,
            Err(e) => return self.fail(token.0, format_args!("no signature: {e}")),
        };
        if let Some(dump) = &mut self.dump {
            write_record(dump, kind, &blob);
        }
        match signature_round_trips(kind, &blob) {
            Ok(true) => self.counts.signatures += 1,
            Ok(false) => self.fail(token.0, format_args!("signature {blob:02x?} re-encoded differently")),
            Err(e) => self.fail(token.0, format_args!("signature {blob:02x?}: {e}")),
        }
    }

    fn method(&mut self, method: mdMethodDef) {
        let Ok(bytes) = self.info.il_body_bytes(self.module, method) else { return };
        self.counts.bodies += 1;
        if let Some(dump) = &mut self.dump {
            write_record(dump, record::BODY, &bytes);
        }
        let body = match MethodBody::parse(&bytes) {
            Ok(body) => body,
            Err(e) => return self.fail(method, format_args!("body: {e}")),
        };
        match body.encode() {
            Ok(again) if again == bytes => self.counts.identical += 1,
            Ok(_) => self.fail(method, "body re-encoded differently"),
            Err(e) => self.fail(method, format_args!("body encode: {e}")),
        }
        self.signature(Token(method));
        if let Some(locals) = body.local_var_sig() {
            self.signature(locals);
        }
        for (_, instruction) in body.iter() {
            if let Operand::Token(token) = instruction.operand {
                self.signature(token);
            }
        }
    }
}

/// The profiler: the runtime's `ProfilerInfo` once initialized, and where the lines go.
pub struct RoundTrip {
    info: OnceLock<ProfilerInfo>,
    out: Mutex<Box<dyn Write + Send>>,
}

impl Default for RoundTrip {
    fn default() -> Self {
        let out: Box<dyn Write + Send> = match std::env::var_os("CORPROF_IL_OUT") {
            Some(path) => match std::fs::File::create(&path) {
                Ok(f) => Box::new(f),
                Err(e) => {
                    eprintln!("il-roundtrip: cannot create {path:?}: {e}; writing to stderr");
                    Box::new(std::io::stderr())
                }
            },
            None => Box::new(std::io::stderr()),
        };
        RoundTrip { info: OnceLock::new(), out: Mutex::new(out) }
    }
}

impl RoundTrip {
    /// Walks `module`: its file name and counts, `None` for a module without metadata.
    pub fn module(&self, module: ModuleID) -> Result<Option<(String, Counts)>> {
        let info = self.info.get().ok_or(HResult::E_UNEXPECTED)?;
        let path = info.get_module_info(module)?.name;
        let name = path.rsplit('/').next().unwrap_or(&path).to_string();
        let Ok(import) = info.get_module_metadata::<MetaDataImport>(module, CorOpenFlags::ofRead) else {
            return Ok(None);
        };
        let dump = (name == DUMPED_MODULE && std::env::var_os("CORPROF_IL_DUMP").is_some()).then(Vec::new);
        let mut walk =
            Walk { info, module, name: &name, import, counts: Counts::default(), seen: HashSet::new(), dump };
        let types: Vec<u32> = walk.import.enum_type_defs()?.collect();
        for ty in std::iter::once(MODULE_TYPE).chain(types) {
            let Ok(methods) = walk.import.enum_methods(ty) else { continue };
            for method in methods.collect::<Vec<_>>() {
                walk.method(method);
            }
        }
        if let (Some(dump), Some(path)) = (&walk.dump, std::env::var_os("CORPROF_IL_DUMP"))
            && let Err(e) = corprof::files::write_regular(path.as_ref(), dump.as_ref())
        {
            eprintln!("il-roundtrip: cannot write {path:?}: {e}");
        }
        let counts = walk.counts;
        Ok(Some((name, counts)))
    }
}

impl CorProfilerCallback for RoundTrip {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::MODULE_LOADS)?;
        let _ = self.info.set(info);
        Ok(())
    }

    fn module_load_finished(&self, module_id: ModuleID, hr_status: HResult) -> Result<()> {
        if !hr_status.is_ok() {
            return Ok(());
        }
        match self.module(module_id) {
            Ok(Some((name, c))) => {
                if let Ok(mut out) = self.out.lock() {
                    // Flushed line by line: CoreCLR 8 never releases the profiler.
                    let _ = writeln!(out, "{name} {} {} {}", c.bodies, c.identical, c.signatures);
                    let _ = out.flush();
                }
            }
            Ok(None) => {}
            Err(e) => eprintln!("il-roundtrip: module {module_id}: {e}"),
        }
        Ok(())
    }
}

corprof::export_profiler!(RoundTrip, CLSID);
