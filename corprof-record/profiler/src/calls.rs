//! The calls mode: takes the enter/leave/tailcall hooks of the functions its filter admits and
//! the exception-unwind callbacks, and gives a [`Profile`] in [`Unit::Microseconds`]: per call
//! path (root first, hooked functions only), the calls that ended there (`Entry::count`) and
//! their exclusive wall-clock time (`Entry::value`).
//!
//! Each thread keeps a shadow stack of the hooked calls in progress and a tree of the call paths
//! it has seen. A call that an exception unwinds (ExceptionUnwindFunctionLeave) ends there like a
//! return, so the shadow stack stays balanced. Time includes the time a thread is blocked and the
//! hooks' own cost.
//!
//! The modes cannot start on attach: the runtime accepts the enter/leave hooks only in
//! `Initialize` of a profiler loaded at startup (`COR_PRF_MONITOR_ENTERLEAVE` is not in
//! `COR_PRF_ALLOWABLE_AFTER_ATTACH`).
//!
//! Use (the library's modes.rs and its FunctionHooks do exactly this): in `Initialize`, `set_event_mask(CallsMode::MASK)`,
//! keep a `CallsMode::new(FILTER)`, then `corprof::hooks::install(profiler, info, HookMode::Fast)`
//! (it adds the hooks' bits to the mask it finds); the profiler's `FunctionHooks` (`Data = u32`)
//! forwards `map_function`, `enter`, `leave` and `tailcall` (both to [`CallsMode::leave`]), its
//! callbacks forward ExceptionUnwindFunctionEnter/Leave and ExceptionCatcherEnter; at Shutdown it
//! writes [`CallsMode::profile`]. Methods the JIT inlines get no hooks, so they are not counted.

use crate::alloc::function_short_name;
use corprof::ProfilerInfo;
use corprof::hooks::HookTable;
use corprof::sync::lock;
use corprof::types::{COR_PRF_MONITOR, FunctionID, ModuleID};
use corprof_record::profile::{Profile, Unit};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The call-path tree's root node.
const ROOT: usize = 0;

/// Call paths kept per thread; calls on further new paths are counted on their parent path so
/// memory stays bounded (deep recursion makes a new path per level).
const MAX_NODES: usize = 200_000;

/// A hasher for the small integer keys of the hot path (function indexes): one multiply, where
/// the default SipHash was a tenth of a hooked call's cost.
#[derive(Default)]
struct IndexHasher(u64);

impl Hasher for IndexHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IndexMap<V> = HashMap<u32, V, BuildHasherDefault<IndexHasher>>;

/// Timestamps for the hooks, in ticks: the x86-64 time-stamp counter where it runs at a
/// constant rate (`clock_gettime` was a third of a hooked call's cost on a VM), else nanoseconds
/// since the mode started. [`Clock::ns_per_tick`] converts them with the rate measured over the
/// recording.
struct Clock {
    start: Instant,
    start_ticks: u64,
    tsc: bool,
}

impl Clock {
    fn new() -> Clock {
        let tsc = invariant_tsc();
        let start = Instant::now();
        let mut clock = Clock { start, start_ticks: 0, tsc };
        clock.start_ticks = clock.ticks();
        clock
    }

    fn ticks(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.tsc {
            // SAFETY: RDTSC only reads the time-stamp counter: every x86-64 CPU has it, and it
            // touches no memory.
            return unsafe { core::arch::x86_64::_rdtsc() };
        }
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn ns_per_tick(&self) -> f64 {
        let ticks = self.ticks().saturating_sub(self.start_ticks);
        if !self.tsc || ticks == 0 {
            return 1.0;
        }
        self.start.elapsed().as_nanos() as f64 / ticks as f64
    }
}

/// Whether the CPU says its TSC runs at a constant rate in every power state (CPUID
/// 0x8000_0007, EDX bit 8), so ticks measure time.
fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        // Leaf 0x8000_0000 gives the highest extended leaf, asked before 0x8000_0007 is read.
        let max = __cpuid(0x8000_0000).eax;
        max >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// One call path: the function at its end, and what the calls along it cost.
#[derive(Default)]
struct Node {
    function: u32,
    parent: usize,
    children: IndexMap<usize>,
    calls: u64,
    exclusive_ticks: u64,
}

/// A hooked call in progress.
struct Active {
    node: usize,
    start: u64,
    children_ticks: u64,
}

/// One thread's call paths and shadow stack. Only its thread touches it until the profile is
/// read, so its lock is not contended.
struct ThreadTree {
    nodes: Vec<Node>,
    stack: Vec<Active>,
    /// Whether each function an exception is unwinding is hooked, innermost last.
    unwinding: Vec<bool>,
    /// Hooked calls ended, for the live count (summing the nodes would take longer).
    ended: u64,
}

impl ThreadTree {
    fn new() -> ThreadTree {
        ThreadTree { nodes: vec![Node::default()], stack: Vec::new(), unwinding: Vec::new(), ended: 0 }
    }

    fn enter(&mut self, function: u32, now: u64) {
        let parent = self.stack.last().map_or(ROOT, |a| a.node);
        let node = match self.nodes[parent].children.get(&function) {
            Some(&node) => node,
            None if self.nodes.len() < MAX_NODES => {
                let node = self.nodes.len();
                self.nodes.push(Node { function, parent, ..Node::default() });
                self.nodes[parent].children.insert(function, node);
                node
            }
            None => parent,
        };
        self.stack.push(Active { node, start: now, children_ticks: 0 });
    }

    fn leave(&mut self, now: u64) {
        let Some(done) = self.stack.pop() else { return };
        // A thread moved to another core may read a counter a little behind: no negative time.
        let elapsed = now.saturating_sub(done.start);
        self.ended += 1;
        let node = &mut self.nodes[done.node];
        node.calls += 1;
        node.exclusive_ticks += elapsed.saturating_sub(done.children_ticks);
        if let Some(parent) = self.stack.last_mut() {
            parent.children_ticks += elapsed;
        }
    }

    /// The function indexes from the root to `node`.
    fn path(&self, mut node: usize) -> Vec<u32> {
        let mut path = Vec::new();
        while node != ROOT {
            path.push(self.nodes[node].function);
            node = self.nodes[node].parent;
        }
        path.reverse();
        path
    }
}

thread_local! {
    /// This thread's tree, registered with the mode on first use. One mode per process (the
    /// profiler's), so the thread-local need not know which mode it belongs to.
    static TREE: RefCell<Option<Arc<Mutex<ThreadTree>>>> = const { RefCell::new(None) };
}

/// Which functions the calls mode hooks.
enum Filter {
    /// The app's own (no filter set).
    App,
    /// Every one (an empty filter).
    All,
    /// Those whose `Namespace.Type::Method` contains the text.
    Contains(String),
}

/// Whether a module, by its file's path, is the app's own code rather than the framework's: a
/// module with no file (dynamic, loaded from bytes) is; one beside `System.Private.CoreLib.dll`
/// (the shared framework's folder, or a self-contained app's) is the framework's when its name
/// says so (`System.*`, `Microsoft.*`, `mscorlib`, `netstandard`, `WindowsBase`).
pub fn is_apps_own(path: &std::path::Path) -> bool {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else { return true };
    if !dir.join("System.Private.CoreLib.dll").is_file() {
        return true;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    !(name.starts_with("System.")
        || name.starts_with("Microsoft.")
        || ["mscorlib.dll", "netstandard.dll", "WindowsBase.dll"].contains(&name))
}

/// The calls mode's state. The profiler forwards its `FunctionHooks` and exception callbacks
/// here (see the methods) and asks for the [`Profile`] at the end.
pub struct CallsMode {
    filter: Filter,
    /// Per module: whether it is the app's own ([`Filter::App`]).
    apps: Mutex<HashMap<ModuleID, bool>>,
    clock: Clock,
    /// Hooked functions' names; the hooks' data is the index.
    names: HookTable<String>,
    /// FunctionID → index, for the unwind callbacks (which name a function, not hook data).
    by_function: Mutex<HashMap<FunctionID, u32>>,
    threads: Mutex<Vec<Arc<Mutex<ThreadTree>>>>,
}

impl CallsMode {
    /// The event-mask bits this mode needs besides the hooks' own (which
    /// `corprof::hooks::install` adds): the exception callbacks that end unwound calls.
    pub const MASK: COR_PRF_MONITOR = COR_PRF_MONITOR::EXCEPTIONS;

    /// `filter` ([`corprof_record::settings::FILTER`]): hook only functions whose
    /// `Namespace.Type::Method` contains it; empty hooks every function; `None` (not set) hooks
    /// the app's own code only, not the framework's (see [`is_apps_own`]), so that a first
    /// recording shows the app rather than the runtime's start-up.
    pub fn new(filter: Option<&str>) -> CallsMode {
        CallsMode {
            filter: match filter {
                None => Filter::App,
                Some("") => Filter::All,
                Some(text) => Filter::Contains(text.to_string()),
            },
            apps: Mutex::new(HashMap::new()),
            clock: Clock::new(),
            names: HookTable::default(),
            by_function: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` on this thread's tree.
    fn with_tree(&self, f: impl FnOnce(&mut ThreadTree)) {
        TREE.with(|slot| {
            let mut slot = slot.borrow_mut();
            let tree = slot.get_or_insert_with(|| {
                let tree = Arc::new(Mutex::new(ThreadTree::new()));
                lock(&self.threads).push(Arc::clone(&tree));
                tree
            });
            f(&mut lock(tree));
        });
    }

    /// `FunctionHooks::map_function`: `Some(index)` for a function to hook.
    pub fn map_function(&self, info: &ProfilerInfo, function: FunctionID) -> Option<u32> {
        if let Filter::App = self.filter {
            let module = info.get_function_info(function).ok()?.module_id;
            let apps = *lock(&self.apps).entry(module).or_insert_with(|| {
                let path = info.get_module_info(module).map(|m| m.name).unwrap_or_default();
                is_apps_own(std::path::Path::new(&path))
            });
            if !apps {
                return None;
            }
        }
        let name = function_short_name(info, function).ok()?;
        if let Filter::Contains(text) = &self.filter
            && !name.contains(text.as_str())
        {
            return None;
        }
        let index = u32::try_from(self.names.push(name)?).ok()?;
        lock(&self.by_function).insert(function, index);
        Some(index)
    }

    /// The hooked calls ended so far, on every thread (each thread's lock taken in turn, briefly).
    pub fn calls_ended(&self) -> u64 {
        let trees: Vec<_> = lock(&self.threads).clone();
        trees.iter().map(|tree| lock(tree).ended).sum()
    }

    /// `FunctionHooks::enter`.
    pub fn enter(&self, function: u32) {
        let now = self.clock.ticks();
        self.with_tree(|t| t.enter(function, now));
    }

    /// `FunctionHooks::leave` and `FunctionHooks::tailcall` (a tail call ends the caller).
    pub fn leave(&self) {
        let now = self.clock.ticks();
        self.with_tree(|t| t.leave(now));
    }

    /// `ExceptionUnwindFunctionEnter`.
    pub fn exception_unwind_function_enter(&self, function: FunctionID) {
        let hooked = lock(&self.by_function).contains_key(&function);
        self.with_tree(|t| t.unwinding.push(hooked));
    }

    /// `ExceptionUnwindFunctionLeave`: the unwound call ends.
    pub fn exception_unwind_function_leave(&self) {
        let now = self.clock.ticks();
        self.with_tree(|t| {
            if t.unwinding.pop() == Some(true) {
                t.leave(now);
            }
        });
    }

    /// `ExceptionCatcherEnter`: the catching frame got an unwind-enter but gets no unwind-leave;
    /// the unwind is over.
    pub fn exception_catcher_enter(&self) {
        self.with_tree(|t| t.unwinding.clear());
    }

    /// The calls that have ended so far, as a profile in microseconds of exclusive time.
    pub fn profile(&self) -> Profile {
        let mut ticks: HashMap<Vec<u32>, (u64, u64)> = HashMap::new();
        for tree in lock(&self.threads).iter() {
            let tree = lock(tree);
            for (index, node) in tree.nodes.iter().enumerate().skip(1) {
                if node.calls > 0 {
                    let sums = ticks.entry(tree.path(index)).or_default();
                    sums.0 += node.exclusive_ticks;
                    sums.1 += node.calls;
                }
            }
        }
        let ns_per_tick = self.clock.ns_per_tick();
        let mut profile = Profile::new(Unit::Microseconds);
        for (path, (exclusive_ticks, calls)) in ticks {
            let frames: Vec<String> = path
                .iter()
                .map(|&f| self.names.get(f as usize).cloned().unwrap_or_else(|| "[unknown]".into()))
                .collect();
            profile.add(&frames, (exclusive_ticks as f64 * ns_per_tick / 1000.0).ceil() as u64, calls);
        }
        profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apps_own_modules_are_told_from_the_frameworks() {
        let dir = std::env::temp_dir().join(format!("corprof-calls-{}", std::process::id()));
        let (framework, app) = (dir.join("shared"), dir.join("app"));
        std::fs::create_dir_all(&framework).unwrap();
        std::fs::create_dir_all(&app).unwrap();
        std::fs::write(framework.join("System.Private.CoreLib.dll"), b"").unwrap();
        for (path, own) in [
            (framework.join("System.Runtime.dll"), false),
            (framework.join("System.Private.CoreLib.dll"), false),
            (framework.join("Microsoft.Win32.Primitives.dll"), false),
            (framework.join("mscorlib.dll"), false),
            // A self-contained app's own assembly sits beside CoreLib.
            (framework.join("Shop.dll"), true),
            (app.join("Shop.dll"), true),
            (app.join("System.Text.Json.dll"), true),
            (std::path::PathBuf::new(), true),
            (std::path::PathBuf::from("Shop"), true),
        ] {
            assert_eq!(is_apps_own(&path), own, "{}", path.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
