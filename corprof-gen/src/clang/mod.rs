//! The only module that touches `clang-sys`: thin, safe wrappers over libclang's index API
//! (after bindgen's `clang.rs`). It takes a header path plus compiler arguments and gives
//! [`TranslationUnit`], [`Cursor`], [`Type`] and [`Location`] values; nothing clang-typed leaves
//! the `extract` stage that walks them.
//!
//! The invariant every `unsafe` block below relies on: a [`Cursor`] or [`Type`] holds a value
//! libclang returned for a [`TranslationUnit`] of this module and borrows that unit (`'tu`),
//! so the unit, which owns what the value points into, is alive for every query made with it.
//! libclang's queries accept any such cursor or type, answering a null or sentinel value for a
//! kind they do not apply to.

#![allow(non_upper_case_globals)] // clang-sys spells its constants like the C API

use clang_sys::*;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_uint};
use std::path::Path;

/// Loads libclang at run time, so a missing library is an error message instead of a link failure.
pub fn load() -> Result<(), String> {
    if clang_sys::is_loaded() {
        return Ok(());
    }
    clang_sys::load().map_err(|e| {
        format!(
            "libclang could not be loaded: {e}\n  = help: install it (Debian/Ubuntu: `apt-get install libclang-dev`, \
             or run `scripts/setup`), or point LIBCLANG_PATH at the folder holding libclang.so"
        )
    })
}

/// Copies and disposes a string libclang returned (only ever called on one, once).
fn cx_string(s: CXString) -> String {
    // SAFETY: `s` comes straight from a libclang call and is disposed of exactly once, here;
    // a non-null `clang_getCString` is a NUL-terminated string alive until then.
    unsafe {
        let p = clang_getCString(s);
        let out = if p.is_null() { String::new() } else { CStr::from_ptr(p).to_string_lossy().into_owned() };
        clang_disposeString(s);
        out
    }
}

/// A parsed header, with the index that owns it.
pub struct TranslationUnit {
    index: CXIndex,
    tu: CXTranslationUnit,
}

/// A diagnostic clang reported while parsing.
pub struct Diagnostic {
    pub is_error: bool,
    pub text: String,
}

impl TranslationUnit {
    /// Parses `file` with `args`; `Err` carries clang's own reason when it produced no unit at all.
    pub fn parse(file: &Path, args: &[String], unsaved: &[(String, String)]) -> Result<TranslationUnit, String> {
        let c_file = CString::new(file.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
        let c_args: Vec<CString> =
            args.iter().map(|a| CString::new(a.as_bytes()).expect("argument without NUL")).collect();
        let ptrs: Vec<*const c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
        let unsaved_c: Vec<(CString, CString)> = unsaved
            .iter()
            .map(|(name, text)| {
                (CString::new(name.as_bytes()).unwrap_or_default(), CString::new(text.as_bytes()).unwrap_or_default())
            })
            .collect();
        let mut unsaved_files: Vec<CXUnsavedFile> = unsaved_c
            .iter()
            .map(|(name, text)| CXUnsavedFile {
                Filename: name.as_ptr(),
                Contents: text.as_ptr(),
                Length: text.as_bytes().len() as _,
            })
            .collect();
        // SAFETY: every pointer passed (file name, argument array, unsaved files) points into the
        // CStrings and vectors above, alive for the call; `tu` is a local out pointer, and the
        // index is disposed of here if no unit comes back, else by the unit's `Drop`.
        unsafe {
            let index = clang_createIndex(0, 0);
            let mut tu: CXTranslationUnit = std::ptr::null_mut();
            let code = clang_parseTranslationUnit2(
                index,
                c_file.as_ptr(),
                ptrs.as_ptr(),
                ptrs.len() as i32,
                unsaved_files.as_mut_ptr(),
                unsaved_files.len() as c_uint,
                CXTranslationUnit_SkipFunctionBodies,
                &mut tu,
            );
            if tu.is_null() {
                clang_disposeIndex(index);
                return Err(format!("libclang could not parse {} (error code {code})", file.display()));
            }
            Ok(TranslationUnit { index, tu })
        }
    }

    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        // SAFETY: `self.tu` is live; each diagnostic is fetched by an index below the count and
        // disposed of once, after its text is copied.
        unsafe {
            let n = clang_getNumDiagnostics(self.tu);
            (0..n)
                .map(|i| {
                    let d = clang_getDiagnostic(self.tu, i);
                    let sev = clang_getDiagnosticSeverity(d);
                    let text = cx_string(clang_formatDiagnostic(d, clang_defaultDiagnosticDisplayOptions()));
                    clang_disposeDiagnostic(d);
                    Diagnostic { is_error: sev >= CXDiagnostic_Error, text }
                })
                .collect()
        }
    }

    pub fn cursor(&self) -> Cursor<'_> {
        // SAFETY: `self.tu` is live; the cursor borrows `self`.
        Cursor { raw: unsafe { clang_getTranslationUnitCursor(self.tu) }, _tu: std::marker::PhantomData }
    }

    /// Every file the parse read (for `rerun-if-changed`).
    pub fn included_files(&self) -> Vec<String> {
        extern "C" fn visit(file: CXFile, _stack: *mut CXSourceLocation, _len: c_uint, data: CXClientData) {
            // SAFETY: `data` is the `&mut files` passed to clang_getInclusions below, which calls
            // this only during that call; `file` is one of the unit's files.
            let files = unsafe { &mut *(data as *mut Vec<String>) };
            files.push(cx_string(unsafe { clang_getFileName(file) }));
        }
        let mut files: Vec<String> = Vec::new();
        // SAFETY: `self.tu` is live; `visit` reads `data` as the `Vec<String>` it is.
        unsafe { clang_getInclusions(self.tu, visit, &mut files as *mut Vec<String> as CXClientData) };
        files.sort();
        files.dedup();
        files
    }
}

impl Drop for TranslationUnit {
    fn drop(&mut self) {
        // SAFETY: both were created by `parse` and are disposed of once; no cursor or type
        // outlives the unit (they borrow it).
        unsafe {
            clang_disposeTranslationUnit(self.tu);
            clang_disposeIndex(self.index);
        }
    }
}

/// Where a cursor sits in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub offset: u32,
}

/// The declaration kinds the generator asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorKind {
    Struct,
    Method,
    Param,
    BaseSpecifier,
    Annotation,
    Typedef,
    Var,
    LinkageSpec,
    Enum,
    EnumConstant,
    Field,
    Other,
}

#[derive(Clone, Copy)]
pub struct Cursor<'tu> {
    raw: CXCursor,
    _tu: std::marker::PhantomData<&'tu TranslationUnit>,
}

impl<'tu> Cursor<'tu> {
    fn wrap(raw: CXCursor) -> Self {
        Cursor { raw, _tu: std::marker::PhantomData }
    }

    pub fn kind(&self) -> CursorKind {
        // SAFETY: a live cursor (module invariant).
        match unsafe { clang_getCursorKind(self.raw) } {
            CXCursor_StructDecl | CXCursor_ClassDecl => CursorKind::Struct,
            CXCursor_CXXMethod => CursorKind::Method,
            CXCursor_ParmDecl => CursorKind::Param,
            CXCursor_CXXBaseSpecifier => CursorKind::BaseSpecifier,
            CXCursor_VarDecl => CursorKind::Var,
            CXCursor_AnnotateAttr => CursorKind::Annotation,
            CXCursor_TypedefDecl => CursorKind::Typedef,
            CXCursor_EnumDecl => CursorKind::Enum,
            CXCursor_EnumConstantDecl => CursorKind::EnumConstant,
            CXCursor_FieldDecl => CursorKind::Field,
            // libclang 14 reports `extern "C" {` blocks as unexposed declarations.
            CXCursor_LinkageSpec | CXCursor_UnexposedDecl => CursorKind::LinkageSpec,
            _ => CursorKind::Other,
        }
    }

    pub fn spelling(&self) -> String {
        // SAFETY: a live cursor (module invariant).
        cx_string(unsafe { clang_getCursorSpelling(self.raw) })
    }

    pub fn is_definition(&self) -> bool {
        // SAFETY: a live cursor (module invariant).
        unsafe { clang_isCursorDefinition(self.raw) != 0 }
    }

    pub fn is_virtual_method(&self) -> bool {
        // SAFETY: a live cursor (module invariant); libclang answers 0 for a non-method.
        unsafe { clang_CXXMethod_isVirtual(self.raw) != 0 }
    }

    pub fn location(&self) -> Location {
        // SAFETY: a live cursor (module invariant); the out pointers are locals.
        unsafe {
            let loc = clang_getCursorLocation(self.raw);
            let mut file: CXFile = std::ptr::null_mut();
            let (mut line, mut column, mut offset) = (0, 0, 0);
            clang_getSpellingLocation(loc, &mut file, &mut line, &mut column, &mut offset);
            let file = if file.is_null() { String::new() } else { cx_string(clang_getFileName(file)) };
            Location { file, line, column, offset }
        }
    }

    /// The value of an enumerator, widened so both signed and unsigned ones fit.
    pub fn enum_value(&self) -> i128 {
        // SAFETY: a live cursor (module invariant); for a cursor of another kind libclang
        // answers a sentinel rather than failing.
        unsafe {
            let underlying = clang_getEnumDeclIntegerType(clang_getCursorSemanticParent(self.raw));
            match underlying.kind {
                CXType_UInt | CXType_ULong | CXType_ULongLong | CXType_UShort | CXType_UChar | CXType_Char_U => {
                    clang_getEnumConstantDeclUnsignedValue(self.raw) as i128
                }
                _ => clang_getEnumConstantDeclValue(self.raw) as i128,
            }
        }
    }

    /// The byte offsets where the declaration starts and ends in its file.
    pub fn extent(&self) -> (u32, u32) {
        // SAFETY: as above; the out pointers are locals.
        unsafe {
            let range = clang_getCursorExtent(self.raw);
            let (mut start, mut end) = (0, 0);
            let (mut file, mut line, mut col): (CXFile, c_uint, c_uint) = (std::ptr::null_mut(), 0, 0);
            clang_getSpellingLocation(clang_getRangeStart(range), &mut file, &mut line, &mut col, &mut start);
            clang_getSpellingLocation(clang_getRangeEnd(range), &mut file, &mut line, &mut col, &mut end);
            (start, end)
        }
    }

    pub fn ty(&self) -> Type<'tu> {
        // SAFETY: a live cursor (module invariant); the type borrows the same unit.
        Type::wrap(unsafe { clang_getCursorType(self.raw) })
    }

    pub fn result_type(&self) -> Type<'tu> {
        // SAFETY: a live cursor (module invariant); the type borrows the same unit.
        Type::wrap(unsafe { clang_getCursorResultType(self.raw) })
    }

    pub fn typedef_underlying(&self) -> Type<'tu> {
        // SAFETY: a live cursor (module invariant); the type borrows the same unit.
        Type::wrap(unsafe { clang_getTypedefDeclUnderlyingType(self.raw) })
    }

    pub fn children(&self) -> Vec<Cursor<'tu>> {
        extern "C" fn visit(c: CXCursor, _parent: CXCursor, data: CXClientData) -> CXChildVisitResult {
            // SAFETY: `data` is the `&mut raw` passed to clang_visitChildren below, which calls
            // this only during that call.
            let out = unsafe { &mut *(data as *mut Vec<CXCursor>) };
            out.push(c);
            CXChildVisit_Continue
        }
        let mut raw: Vec<CXCursor> = Vec::new();
        // SAFETY: a live cursor (module invariant); `visit` reads `data` as the `Vec<CXCursor>` it is.
        unsafe { clang_visitChildren(self.raw, visit, &mut raw as *mut Vec<CXCursor> as CXClientData) };
        raw.into_iter().map(Cursor::wrap).collect()
    }

    /// The `annotate("…")` strings attached to this declaration, in source order.
    pub fn annotations(&self) -> Vec<String> {
        self.children().into_iter().filter(|c| c.kind() == CursorKind::Annotation).map(|c| c.spelling()).collect()
    }

    /// The declaration a base specifier or type refers to.
    pub fn referenced(&self) -> Option<Cursor<'tu>> {
        // SAFETY: a live cursor (module invariant), and `r` one libclang returned for its unit.
        let r = unsafe { clang_getCursorReferenced(self.raw) };
        if unsafe { clang_Cursor_isNull(r) } != 0 { None } else { Some(Cursor::wrap(r)) }
    }
}

/// The type kinds the generator distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeKind {
    Void,
    Builtin,
    Pointer,
    Reference,
    Array,
    Typedef,
    Elaborated,
    Record,
    Enum,
    FunctionProto,
    Other,
}

#[derive(Clone, Copy)]
pub struct Type<'tu> {
    raw: CXType,
    _tu: std::marker::PhantomData<&'tu TranslationUnit>,
}

impl<'tu> Type<'tu> {
    fn wrap(raw: CXType) -> Self {
        Type { raw, _tu: std::marker::PhantomData }
    }

    pub fn kind(&self) -> TypeKind {
        match self.raw.kind {
            CXType_Void => TypeKind::Void,
            CXType_Pointer => TypeKind::Pointer,
            CXType_LValueReference | CXType_RValueReference => TypeKind::Reference,
            CXType_IncompleteArray | CXType_ConstantArray => TypeKind::Array,
            CXType_Typedef => TypeKind::Typedef,
            CXType_Elaborated => TypeKind::Elaborated,
            CXType_Record => TypeKind::Record,
            CXType_Enum => TypeKind::Enum,
            CXType_FunctionProto | CXType_FunctionNoProto => TypeKind::FunctionProto,
            k if (CXType_Bool..=CXType_Float128).contains(&k) || k == CXType_Half => TypeKind::Builtin,
            _ => TypeKind::Other,
        }
    }

    pub fn spelling(&self) -> String {
        // SAFETY: a live type (module invariant).
        cx_string(unsafe { clang_getTypeSpelling(self.raw) })
    }

    /// A C integer type (`char` … `__int128`, signed or not; not `bool`, not floating point).
    pub fn is_integer(&self) -> bool {
        (CXType_Char_U..=CXType_Int128).contains(&self.raw.kind)
    }

    /// A character type (`char`, `unsigned char`, `wchar_t`, `char16_t`, …): an integer to C
    /// that holds text or bytes.
    pub fn is_character(&self) -> bool {
        matches!(
            self.raw.kind,
            CXType_Char_U | CXType_UChar | CXType_Char16 | CXType_Char32 | CXType_Char_S | CXType_SChar | CXType_WChar
        )
    }

    pub fn is_const(&self) -> bool {
        // SAFETY: a live type (module invariant).
        unsafe { clang_isConstQualifiedType(self.raw) != 0 }
    }

    pub fn pointee(&self) -> Type<'tu> {
        // SAFETY: a live type (module invariant); an invalid type comes back for other kinds.
        Type::wrap(unsafe { clang_getPointeeType(self.raw) })
    }

    pub fn element(&self) -> Type<'tu> {
        // SAFETY: a live type (module invariant); an invalid type comes back for other kinds.
        Type::wrap(unsafe { clang_getArrayElementType(self.raw) })
    }

    pub fn canonical(&self) -> Type<'tu> {
        // SAFETY: a live type (module invariant); an invalid type comes back for other kinds.
        Type::wrap(unsafe { clang_getCanonicalType(self.raw) })
    }

    pub fn named(&self) -> Type<'tu> {
        // SAFETY: a live type (module invariant); an invalid type comes back for other kinds.
        Type::wrap(unsafe { clang_Type_getNamedType(self.raw) })
    }

    pub fn typedef_name(&self) -> String {
        // SAFETY: a live type (module invariant).
        cx_string(unsafe { clang_getTypedefName(self.raw) })
    }

    pub fn declaration(&self) -> Cursor<'tu> {
        // SAFETY: a live type (module invariant); the cursor borrows the same unit.
        Cursor::wrap(unsafe { clang_getTypeDeclaration(self.raw) })
    }
}
