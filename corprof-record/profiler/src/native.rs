//! `--native`: native frames named and unwound. Outside the signal handler, the libraries mapped
//! into the process are read once each (regular files only, at most [`MAX_LIBRARY_BYTES`]): their
//! ELF symbols (`.symtab` and `.dynsym`) name native addresses as `lib!symbol`, or `lib` where no
//! symbol covers the address, and their `.eh_frame` (found through `.eh_frame_hdr`) is copied
//! into memory of the profiler's own. The handler unwinds a frame of such a library by its call
//! frame information ([`step`]), reading the unwind tables only from those copies and the stack
//! only within its bounds; the table of libraries it looks in ([`UnwindTable`]) is published
//! through an atomic pointer and an old one freed only when no handler runs.

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The largest library file read (a bigger one is named by its file name only).
pub(crate) const MAX_LIBRARY_BYTES: u64 = 256 << 20;
/// The most libraries read in one recording (more are named by their file name only).
const MAX_LIBRARIES: usize = 512;

/// One mapping of `/proc/self/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub start: usize,
    pub end: usize,
    pub executable: bool,
    /// Offset of the mapping's first byte in its file.
    pub offset: u64,
    pub inode: u64,
    /// The file's path, a bracketed name (`[vdso]`, `[stack]`) or empty for anonymous memory.
    pub path: String,
}

/// The mappings of `maps` (the text of `/proc/self/maps`), lines that do not parse left out.
pub(crate) fn parse_maps(maps: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut fields = line.splitn(6, ' ');
        let (Some(range), Some(perms), Some(offset), Some(_dev), Some(inode)) =
            (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Some((start, end)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end), Ok(offset), Ok(inode)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
            u64::from_str_radix(offset, 16),
            inode.parse::<u64>(),
        ) else {
            continue;
        };
        let path = fields.next().unwrap_or("").trim_start().to_string();
        out.push(Mapping { start, end, executable: perms.as_bytes().get(2) == Some(&b'x'), offset, inode, path });
    }
    out.sort_by_key(|m| m.start);
    out
}

/// A library's call frame information, copied out of its file: `.eh_frame_hdr` and `.eh_frame`
/// and where the ELF puts them.
pub(crate) struct Unwind {
    hdr: Vec<u8>,
    hdr_at: u64,
    frame: Vec<u8>,
    frame_at: u64,
    text_at: u64,
}

/// What was read of one library file.
pub(crate) struct Library {
    /// The file name, what its frames are named by.
    pub name: String,
    /// Function symbols, `(start, end, name)` by start (ELF virtual addresses), as the file has
    /// them (demangled when one names a frame: a library may have hundreds of thousands).
    symbols: Vec<(u64, u64, Box<str>)>,
    /// The loadable segments: `(file offset, virtual address)`.
    segments: Vec<(u64, u64)>,
    pub unwind: Option<Unwind>,
}

impl Library {
    /// A library known by name only (its file missing, not regular, too big, or not ELF).
    fn named(path: &str) -> Library {
        Library { name: file_name(path), symbols: Vec::new(), segments: Vec::new(), unwind: None }
    }

    /// Reads the library at `path`, if it is the file of inode `inode`, a regular file of at
    /// most [`MAX_LIBRARY_BYTES`] and ELF; else it is known by name only.
    pub(crate) fn read(path: &str, inode: u64) -> Library {
        let bytes = (|| {
            let file = corprof_record::files::open_regular(Path::new(path), MAX_LIBRARY_BYTES).ok()??;
            // The file now at the path must be the one mapped (not a new one put in its place).
            if file.metadata().ok()?.ino() != inode {
                return None;
            }
            let mut bytes = Vec::new();
            let mut magic = [0u8; 4];
            let mut file = file;
            file.read_exact(&mut magic).ok()?;
            if &magic != b"\x7fELF" {
                return None;
            }
            bytes.extend_from_slice(&magic);
            file.take(MAX_LIBRARY_BYTES).read_to_end(&mut bytes).ok()?;
            Some(bytes)
        })();
        match bytes {
            Some(bytes) => Library::parse(path, &bytes).unwrap_or_else(|| Library::named(path)),
            None => Library::named(path),
        }
    }

    /// The library whose file holds `bytes`, `None` if they are not a 64-bit ELF file.
    pub(crate) fn parse(path: &str, bytes: &[u8]) -> Option<Library> {
        let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(bytes).ok()?;
        let mut symbols: Vec<(u64, u64, Box<str>)> = elf
            .symbols()
            .chain(elf.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.address() > 0)
            .filter_map(|s| Some((s.address(), s.address().saturating_add(s.size()), Box::from(s.name().ok()?))))
            .collect();
        symbols.sort();
        symbols.dedup_by_key(|s| (s.0, s.1));
        let segments = elf.segments().map(|s| (s.file_range().0, s.address())).collect();
        let section = |name: &str| {
            let s = elf.section_by_name(name)?;
            Some((s.data().ok()?.to_vec(), s.address()))
        };
        let unwind = match (section(".eh_frame_hdr"), section(".eh_frame")) {
            (Some((hdr, hdr_at)), Some((frame, frame_at))) => {
                let text_at = elf.section_by_name(".text").map_or(0, |s| s.address());
                Some(Unwind { hdr, hdr_at, frame, frame_at, text_at })
            }
            _ => None,
        };
        Some(Library { name: file_name(path), symbols, segments, unwind })
    }

    /// The load bias of a mapping of this library at `start` from file offset `offset`: what
    /// is added to an ELF virtual address to give the address in the process.
    pub(crate) fn bias(&self, start: usize, offset: u64) -> Option<u64> {
        // The segment whose file range (from its page) holds the mapping's offset.
        self.segments
            .iter()
            .filter(|&&(file_at, _)| file_at & !0xfff <= offset)
            .max_by_key(|&&(file_at, _)| file_at)
            .map(|&(file_at, vaddr)| (start as u64).wrapping_sub(vaddr.wrapping_sub(file_at).wrapping_add(offset)))
    }

    /// The function symbol covering virtual address `at`.
    pub(crate) fn symbol(&self, at: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|s| s.0 <= at);
        // The symbols starting at or below `at`, the latest first; sizes may nest (aliases).
        self.symbols[..i].iter().rev().take(8).find(|s| at < s.1).map(|s| &*s.2)
    }
}

/// A C++ symbol's demangled name (without its parameters), a Rust one's without its hash, else
/// the name as it is.
pub(crate) fn demangle(name: &str) -> String {
    if name.starts_with("_Z")
        && let Ok(symbol) = cpp_demangle::Symbol::new(name)
    {
        let options = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
        if let Ok(text) = symbol.demangle_with_options(&options) {
            // Rust's legacy mangling ends in `::h<16 hex digits>`, a hash of no use to a reader.
            return match text.rsplit_once("::h") {
                Some((path, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    path.to_string()
                }
                _ => text,
            };
        }
    }
    name.to_string()
}

/// The last part of a path.
fn file_name(path: &str) -> String {
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// One executable mapping of a library, for the handler: its addresses, its bias, its library.
pub(crate) struct Range {
    start: usize,
    end: usize,
    bias: u64,
    library: Arc<Library>,
}

/// The executable mappings of the libraries that have call frame information, by address: what
/// the handler unwinds by. Built and freed outside the handler; immutable once published.
#[derive(Default)]
pub(crate) struct UnwindTable {
    /// Which table this is (each one made gets the next number): what a thread's cached rules
    /// were found in. (An address would not do: a new table may be allocated where a freed one
    /// was.)
    generation: u64,
    ranges: Vec<Range>,
}

impl UnwindTable {
    /// The range holding `ip`.
    fn find(&self, ip: usize) -> Option<&Range> {
        let i = self.ranges.partition_point(|r| r.start <= ip);
        self.ranges[..i].last().filter(|r| ip < r.end)
    }
}

/// The table the handler uses; null when native frames are not recorded.
pub(crate) static UNWIND: AtomicPtr<UnwindTable> = AtomicPtr::new(std::ptr::null_mut());

/// What the handler's unwinder keeps between frames: at most this many register rules a row.
struct Rules;

impl gimli::UnwindContextStorage<usize> for Rules {
    type Rules = [(gimli::Register, gimli::RegisterRule<usize>); 24];
    type Stack = [gimli::UnwindTableRow<usize, Self>; 4];
}

/// How many rules a thread's unwinder keeps (a direct-mapped cache by lookup address): a
/// thread's samples come back to the same few hundred call sites again and again.
const CACHED_RULES: usize = 256;

/// How a frame's caller is found, as the handler follows it: the CFA from RSP or RBP plus an
/// offset, the return address at an offset from the CFA, RBP kept or restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// No rule followed here (no FDE, an expression, another register): walk by RBP.
    None,
    Cfa {
        from_rbp: bool,
        offset: i64,
        ra: i64,
        rbp: Rbp,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rbp {
    Same,
    At(i64),
    Is(i64),
}

/// The unwinder's working memory, allocated outside the handler: gimli's context and the
/// thread's cached rules, with the table they were found in.
pub(crate) struct Context {
    unwind: gimli::UnwindContext<usize, Rules>,
    /// The [`UnwindTable::generation`] the rules were found in (0: none yet).
    table: u64,
    rules: [(usize, Rule); CACHED_RULES],
}

impl Context {
    pub(crate) fn new() -> Box<Context> {
        Box::new(Context { unwind: gimli::UnwindContext::new_in(), table: 0, rules: [(0, Rule::None); CACHED_RULES] })
    }
}

/// A frame's registers, as far as the unwinder follows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Regs {
    pub ip: usize,
    pub sp: usize,
    pub fp: usize,
}

const RSP: gimli::Register = gimli::X86_64::RSP;
const RBP: gimli::Register = gimli::X86_64::RBP;
const RA: gimli::Register = gimli::X86_64::RA;

/// The caller's registers of the frame at `regs`, by the call frame information of the library
/// `table` has at `lookup` (the frame's address, or a return address less one); `None` where
/// there is none or it is not a rule followed here (then the caller walks by RBP). `read` gives
/// the word at an address if it lies within the stack's known bounds. Allocates nothing, takes no
/// lock: it reads `table`'s copies of the libraries' sections and the stack through `read` only.
pub(crate) fn step(
    table: &UnwindTable,
    context: &mut Context,
    lookup: usize,
    regs: Regs,
    read: impl Fn(usize) -> Option<usize>,
) -> Option<Regs> {
    let range = table.find(lookup)?;
    // Rules found in another table may be another library's (one unloaded, another mapped at
    // its addresses): forgotten when the table changes.
    if context.table != table.generation {
        context.rules.fill((0, Rule::None));
        context.table = table.generation;
    }
    let index = (lookup ^ lookup >> 8) % CACHED_RULES;
    let rule = match context.rules[index] {
        (at, rule) if at == lookup && lookup != 0 => rule,
        _ => {
            let rule = find_rule(range, &mut context.unwind, lookup);
            context.rules[index] = (lookup, rule);
            rule
        }
    };
    let Rule::Cfa { from_rbp, offset, ra, rbp } = rule else { return None };
    let cfa = (if from_rbp { regs.fp } else { regs.sp } as i64).wrapping_add(offset) as usize;
    // Every frame lies above the one it called: no progress, no frame.
    if cfa <= regs.sp {
        return None;
    }
    let ip = read((cfa as i64).wrapping_add(ra) as usize)?;
    let fp = match rbp {
        Rbp::Same => regs.fp,
        Rbp::At(n) => read((cfa as i64).wrapping_add(n) as usize)?,
        Rbp::Is(n) => (cfa as i64).wrapping_add(n) as usize,
    };
    Some(Regs { ip, sp: cfa, fp })
}

/// The rule of the frame at `lookup` in `range`'s library, by its `.eh_frame`.
fn find_rule(range: &Range, unwind: &mut gimli::UnwindContext<usize, Rules>, lookup: usize) -> Rule {
    use gimli::{BaseAddresses, CfaRule, EhFrame, EhFrameHdr, LittleEndian, RegisterRule, UnwindSection};
    let found = (|| {
        let info = range.library.unwind.as_ref()?;
        let at = (lookup as u64).wrapping_sub(range.bias);
        let bases =
            BaseAddresses::default().set_eh_frame_hdr(info.hdr_at).set_eh_frame(info.frame_at).set_text(info.text_at);
        let hdr = EhFrameHdr::new(&info.hdr, LittleEndian).parse(&bases, 8).ok()?;
        let frame = EhFrame::new(&info.frame, LittleEndian);
        let row = hdr.table()?.unwind_info_for_address(&frame, &bases, unwind, at, EhFrame::cie_from_offset).ok()?;
        let (from_rbp, offset) = match *row.cfa() {
            CfaRule::RegisterAndOffset { register: RSP, offset } => (false, offset),
            CfaRule::RegisterAndOffset { register: RBP, offset } => (true, offset),
            _ => return None,
        };
        let ra = match row.register(RA) {
            Some(RegisterRule::Offset(n)) => n,
            _ => return None,
        };
        let rbp = match row.register(RBP) {
            Some(RegisterRule::Offset(n)) => Rbp::At(n),
            Some(RegisterRule::ValOffset(n)) => Rbp::Is(n),
            None | Some(RegisterRule::SameValue) => Rbp::Same,
            _ => return None,
        };
        Some(Rule::Cfa { from_rbp, offset, ra, rbp })
    })();
    found.unwrap_or(Rule::None)
}

/// What a native address is: a library's frame, or memory of no library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Native {
    /// In a library: `lib!symbol` or `lib`, and the address's ELF virtual address in it.
    Library { name: String, offset: u64 },
    /// Executable memory of no file (the runtime's stubs and generated code), a bracketed
    /// mapping (`[vdso]`), or no mapping at all.
    Other(&'static str),
}

impl Native {
    /// The frame's name as the profile keeps it (a library's with its offset).
    pub(crate) fn frame(&self) -> String {
        match self {
            Native::Library { name, offset } => corprof_record::profile::native_frame(name, *offset),
            Native::Other(name) => name.to_string(),
        }
    }
}

/// Names native addresses and keeps the handler's [`UnwindTable`] current.
pub(crate) struct Resolver {
    maps: Vec<Mapping>,
    /// Each library read, by path and inode (a file replaced at the same path is another).
    libraries: HashMap<(String, u64), Arc<Library>>,
    /// Tables replaced but perhaps still used by a handler: freed once none runs.
    retired: Vec<*mut UnwindTable>,
    /// The last table's [`UnwindTable::generation`].
    generation: u64,
}

// SAFETY: the raw pointers in `retired` are tables this resolver made (Box::into_raw) and owns;
// they are only freed by it.
unsafe impl Send for Resolver {}

impl Resolver {
    pub(crate) fn new() -> Resolver {
        Resolver { maps: Vec::new(), libraries: HashMap::new(), retired: Vec::new(), generation: 0 }
    }

    /// Reads `/proc/self/maps` again, reads the libraries not read yet, and publishes a new
    /// table for the handler if the executable mappings changed. `idle` says whether no handler
    /// runs now (tables retired before may then be freed).
    pub(crate) fn refresh(&mut self, idle: impl Fn() -> bool) {
        let Ok(Some(text)) = corprof_record::files::read_regular(Path::new("/proc/self/maps"), 64 << 20) else {
            return;
        };
        let maps = parse_maps(&String::from_utf8_lossy(&text));
        let executable = |maps: &[Mapping]| -> Vec<Mapping> { maps.iter().filter(|m| m.executable).cloned().collect() };
        let changed = executable(&maps) != executable(&self.maps);
        self.maps = maps;
        if changed {
            let mut ranges = Vec::new();
            for m in self.maps.clone().iter().filter(|m| m.executable && m.path.starts_with('/')) {
                let Some(library) = self.library(&m.path, m.inode) else { continue };
                if library.unwind.is_none() {
                    continue;
                }
                let Some(bias) = library.bias(m.start, m.offset) else { continue };
                ranges.push(Range { start: m.start, end: m.end, bias, library });
            }
            self.generation += 1;
            let table = Box::into_raw(Box::new(UnwindTable { generation: self.generation, ranges }));
            let old = UNWIND.swap(table, Ordering::SeqCst);
            if !old.is_null() {
                self.retired.push(old);
            }
        }
        if idle() {
            self.free_retired();
        }
    }

    fn free_retired(&mut self) {
        for table in self.retired.drain(..) {
            // SAFETY: made by Box::into_raw in `refresh`, no longer published, and no handler
            // runs (the caller checked after the swap): nothing can read it.
            drop(unsafe { Box::from_raw(table) });
        }
    }

    /// The library at `path` (inode `inode`), read on first use.
    fn library(&mut self, path: &str, inode: u64) -> Option<Arc<Library>> {
        if path.ends_with(" (deleted)") {
            return Some(Arc::new(Library::named(path)));
        }
        let key = (path.to_string(), inode);
        if let Some(library) = self.libraries.get(&key) {
            return Some(Arc::clone(library));
        }
        if self.libraries.len() >= MAX_LIBRARIES {
            return Some(Arc::new(Library::named(path)));
        }
        let library = Arc::new(Library::read(path, inode));
        self.libraries.insert(key, Arc::clone(&library));
        Some(library)
    }

    /// The mapping holding `ip`, if `maps` has one.
    fn mapping(&self, ip: usize) -> Option<&Mapping> {
        let i = self.maps.partition_point(|m| m.start <= ip);
        self.maps[..i].last().filter(|m| ip < m.end)
    }

    /// What native address `ip` is (`refresh` first if the mappings may have changed).
    pub(crate) fn name(&mut self, ip: usize) -> Native {
        let Some(m) = self.mapping(ip).cloned() else { return Native::Other("[unknown]") };
        // CoreCLR 7 and later map their executable memory from a memfd ("double mapping"):
        // the runtime's own code, never a library.
        if !m.path.starts_with('/') || m.path.starts_with("/memfd:") {
            return Native::Other(match m.path.as_str() {
                "[vdso]" => "[vdso]",
                _ if !m.executable => "[unknown]",
                path if path.is_empty() || path.starts_with("/memfd:") => "[runtime stub]",
                _ => "[unknown]",
            });
        }
        let Some(library) = self.library(&m.path, m.inode) else { return Native::Other("[unknown]") };
        let offset = library
            .bias(m.start, m.offset)
            .map_or(ip as u64 - m.start as u64 + m.offset, |bias| (ip as u64).wrapping_sub(bias));
        let name = match library.symbol(offset) {
            Some(symbol) => format!("{}!{}", library.name, demangle(symbol)),
            None => library.name.clone(),
        };
        Native::Library { name, offset }
    }

    /// Unpublishes the table and frees every one, if no handler runs (`idle`); else they are
    /// left, never freed (a handler may still read them).
    pub(crate) fn stop(&mut self, idle: bool) {
        let table = UNWIND.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !table.is_null() {
            self.retired.push(table);
        }
        if idle {
            self.free_retired();
        } else {
            self.retired.clear();
        }
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        // Left to `stop`, which knows whether a handler runs; here they leak instead.
        self.retired.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(test: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("corprof-native-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn maps_are_read_line_by_line_and_garbage_left_out() {
        let maps = "\
7f0000001000-7f0000002000 r-xp 00001000 08:01 1234                       /usr/lib/libc.so.6
7f0000000000-7f0000001000 r--p 00000000 08:01 1234                       /usr/lib/libc.so.6
7f0000003000-7f0000004000 r-xp 00000000 00:00 0 
7f0000005000-7f0000006000 r-xp 00000000 00:01 77                         /memfd:doublemapper (deleted)
7f0000007000-7f0000008000 r-xp 00002000 08:01 99                         /tmp/a lib.so (deleted)
7ffd0000a000-7ffd0000b000 r-xp 00000000 00:00 0                          [vdso]
garbage
zz-yy r-xp 0 0 0
";
        let m = parse_maps(maps);
        assert_eq!(m.len(), 6);
        assert_eq!(m[0].path, "/usr/lib/libc.so.6");
        assert!(!m[0].executable && m[1].executable);
        assert_eq!((m[1].start, m[1].end, m[1].offset, m[1].inode), (0x7f00_0000_1000, 0x7f00_0000_2000, 0x1000, 1234));
        assert_eq!(m[2].path, "");
        assert_eq!(m[4].path, "/tmp/a lib.so (deleted)");
        let mut resolver = Resolver::new();
        resolver.maps = m;
        let other = |r: &mut Resolver, ip| match r.name(ip) {
            Native::Other(name) => name,
            library => panic!("{library:?}"),
        };
        assert_eq!(other(&mut resolver, 0x7f00_0000_3010), "[runtime stub]");
        assert_eq!(other(&mut resolver, 0x7f00_0000_5010), "[runtime stub]");
        assert_eq!(other(&mut resolver, 0x7ffd_0000_a010), "[vdso]");
        assert_eq!(other(&mut resolver, 0x7f00_0000_4010), "[unknown]");
        assert_eq!(other(&mut resolver, 0x10), "[unknown]");
        // A deleted file is not read (another may be at its path): its name and its offset.
        assert_eq!(resolver.name(0x7f00_0000_7010), Native::Library { name: "a lib.so".to_string(), offset: 0x2010 });
    }

    #[test]
    fn a_file_that_is_not_the_mapped_library_is_named_only_and_never_waited_on() {
        let dir = temp("hostile");
        let name_only = |path: &Path, inode: u64| {
            let library = Library::read(path.to_str().unwrap(), inode);
            assert!(library.symbols.is_empty() && library.unwind.is_none(), "{}", path.display());
            library.name
        };
        // A FIFO (opening it for reading would wait for a writer forever).
        let fifo = dir.join("libfifo.so");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let inode = std::fs::metadata(&fifo).unwrap().ino();
        assert_eq!(name_only(&fifo, inode), "libfifo.so");
        // Gone; not ELF; too big (sparse, so nothing is written); another file than the one
        // mapped (its inode differs).
        assert_eq!(name_only(&dir.join("libgone.so"), 1), "libgone.so");
        let text = dir.join("libtext.so");
        std::fs::write(&text, b"not an ELF file").unwrap();
        assert_eq!(name_only(&text, std::fs::metadata(&text).unwrap().ino()), "libtext.so");
        let huge = dir.join("libhuge.so");
        let file = std::fs::File::create(&huge).unwrap();
        file.set_len(MAX_LIBRARY_BYTES + 1).unwrap();
        assert_eq!(name_only(&huge, file.metadata().unwrap().ino()), "libhuge.so");
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let copy = dir.join("libcopy.so");
        std::fs::write(&copy, &exe).unwrap();
        let inode = std::fs::metadata(&copy).unwrap().ino();
        assert_eq!(name_only(&copy, inode + 1), "libcopy.so");
        assert!(!Library::read(copy.to_str().unwrap(), inode).symbols.is_empty());
        // Bytes that are ELF in part only.
        assert!(Library::parse("x", &exe[..exe.len() / 3]).is_none_or(|l| l.name == "x"));
        assert!(Library::parse("x", b"\x7fELF\x02\x01\x01").is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[inline(never)]
    fn marker() -> usize {
        std::hint::black_box(marker as fn() -> usize as usize)
    }

    /// This test binary as the resolver sees it: the mapping of `marker`'s code, its bias, and
    /// the symbol covering it, demangled.
    fn own_library() -> (Arc<Library>, Mapping, u64) {
        let maps = parse_maps(&std::fs::read_to_string("/proc/self/maps").unwrap());
        let at = marker();
        let m = maps.iter().find(|m| m.start <= at && at < m.end).unwrap().clone();
        let library = Arc::new(Library::read(&m.path, m.inode));
        let bias = library.bias(m.start, m.offset).unwrap();
        (library, m, bias)
    }

    #[test]
    fn a_symbol_names_the_code_it_covers() {
        let (library, _, bias) = own_library();
        let at = marker() as u64 - bias;
        let name = demangle(library.symbol(at + 1).unwrap());
        assert_eq!(name, "corprof_record_profiler::native::tests::marker");
        assert!(library.symbol(u64::MAX).is_none());
        assert_eq!(demangle("_ZN3foo3bar17h0123456789abcdefE"), "foo::bar");
        assert_eq!(demangle("_ZN3WKS7gc_heap10mark_phaseEib"), "WKS::gc_heap::mark_phase");
        assert_eq!(demangle("memset"), "memset");
        assert_eq!(demangle("_Zgarbage"), "_Zgarbage");
    }

    /// Calls `f` with the registers of a point inside this function, while its frame is live.
    #[inline(never)]
    fn probe(f: &mut dyn FnMut(Regs)) {
        let (ip, sp, fp): (usize, usize, usize);
        // SAFETY: reads the instruction pointer, RSP and RBP into registers; no memory touched.
        unsafe {
            std::arch::asm!("lea {ip}, [rip]", "mov {sp}, rsp", "mov {fp}, rbp", ip = out(reg) ip, sp = out(reg) sp, fp = out(reg) fp)
        };
        f(Regs { ip, sp, fp });
        std::hint::black_box(());
    }

    #[test]
    fn a_frame_is_unwound_by_its_call_frame_information() {
        let (library, m, bias) = own_library();
        let range = Range { start: m.start, end: m.end, bias, library: Arc::clone(&library) };
        let table = UnwindTable { generation: 1, ranges: vec![range] };
        let mut context = Context::new();
        let mut seen = None;
        probe(&mut |regs| {
            // Reads within 64 KiB above the probe's stack pointer: this thread's live stack.
            let read = |addr: usize| {
                (addr >= regs.sp && addr + 8 <= regs.sp + (64 << 10) && addr.is_multiple_of(8))
                    // SAFETY: an aligned word of this thread's stack above the probe's stack
                    // pointer: the probe's frame and its callers', live while this runs.
                    .then(|| unsafe { std::ptr::read_volatile(addr as *const usize) })
            };
            let caller = step(&table, &mut context, regs.ip, regs, read);
            // The second time from the thread's cached rules: the same.
            let again = step(&table, &mut context, regs.ip, regs, read);
            let elsewhere = step(&UnwindTable::default(), &mut context, regs.ip, regs, read);
            let unreadable = step(&table, &mut context, regs.ip, regs, |_| None);
            seen = Some((regs, caller, again, elsewhere, unreadable));
        });
        let (regs, caller, again, elsewhere, unreadable) = seen.unwrap();
        let caller = caller.expect("no caller");
        assert!(caller.sp > regs.sp);
        assert_eq!(again, Some(caller));
        let name = demangle(library.symbol(caller.ip as u64 - 1 - bias).unwrap());
        assert_eq!(name, "corprof_record_profiler::native::tests::a_frame_is_unwound_by_its_call_frame_information");
        // No table entry for the address, or a stack that cannot be read: no step.
        assert_eq!((elsewhere, unreadable), (None, None));
    }
}
