//! The calls mode: takes the enter/leave/tailcall hooks of the functions its filter admits and
//! the exception-unwind callbacks, and gives a [`Profile`] in [`Unit::Microseconds`]: per call
//! path (root first, hooked functions only), the calls that ended there (`Entry::count`) and
//! their exclusive wall-clock time (`Entry::value`).
//!
//! Each thread keeps a shadow stack of the hooked calls in progress and a tree of the call paths
//! it has seen. A call that an exception unwinds (ExceptionUnwindFunctionLeave) ends there like a
//! return, so the shadow stack stays balanced. Time includes the time a thread is blocked and the
//! hooks' own cost.

use crate::alloc::function_short_name;
use corprof::ProfilerInfo;
use corprof::hooks::HookTable;
use corprof::types::{COR_PRF_MONITOR, FunctionID};
use corprof_record::profile::{Profile, Unit};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// The call-path tree's root node.
const ROOT: usize = 0;

/// Call paths kept per thread; calls on further new paths are counted on their parent path so
/// memory stays bounded (deep recursion makes a new path per level).
const MAX_NODES: usize = 200_000;

/// One call path: the function at its end, and what the calls along it cost.
#[derive(Default)]
struct Node {
    function: u32,
    parent: usize,
    children: HashMap<u32, usize>,
    calls: u64,
    exclusive_ns: u64,
}

/// A hooked call in progress.
struct Active {
    node: usize,
    start: Instant,
    children_ns: u64,
}

/// One thread's call paths and shadow stack. Only its thread touches it until the profile is
/// read, so its lock is not contended.
struct ThreadTree {
    nodes: Vec<Node>,
    stack: Vec<Active>,
    /// Whether each function an exception is unwinding is hooked, innermost last.
    unwinding: Vec<bool>,
}

impl ThreadTree {
    fn new() -> ThreadTree {
        ThreadTree { nodes: vec![Node::default()], stack: Vec::new(), unwinding: Vec::new() }
    }

    fn enter(&mut self, function: u32, now: Instant) {
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
        self.stack.push(Active { node, start: now, children_ns: 0 });
    }

    fn leave(&mut self, now: Instant) {
        let Some(done) = self.stack.pop() else { return };
        let elapsed = u64::try_from(now.duration_since(done.start).as_nanos()).unwrap_or(u64::MAX);
        let node = &mut self.nodes[done.node];
        node.calls += 1;
        node.exclusive_ns += elapsed.saturating_sub(done.children_ns);
        if let Some(parent) = self.stack.last_mut() {
            parent.children_ns += elapsed;
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The calls mode's state. The profiler forwards its `FunctionHooks` and exception callbacks
/// here (see the methods) and asks for the [`Profile`] at the end.
pub struct CallsMode {
    filter: Option<String>,
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
    /// `Namespace.Type::Method` contains it; `None` or empty hooks every function.
    pub fn new(filter: Option<&str>) -> CallsMode {
        CallsMode {
            filter: filter.filter(|f| !f.is_empty()).map(str::to_string),
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
        let name = function_short_name(info, function).ok()?;
        if self.filter.as_deref().is_some_and(|text| !name.contains(text)) {
            return None;
        }
        let index = u32::try_from(self.names.push(name)?).ok()?;
        lock(&self.by_function).insert(function, index);
        Some(index)
    }

    /// `FunctionHooks::enter`.
    pub fn enter(&self, function: u32) {
        let now = Instant::now();
        self.with_tree(|t| t.enter(function, now));
    }

    /// `FunctionHooks::leave` and `FunctionHooks::tailcall` (a tail call ends the caller).
    pub fn leave(&self) {
        let now = Instant::now();
        self.with_tree(|t| t.leave(now));
    }

    /// `ExceptionUnwindFunctionEnter`.
    pub fn exception_unwind_function_enter(&self, function: FunctionID) {
        let hooked = lock(&self.by_function).contains_key(&function);
        self.with_tree(|t| t.unwinding.push(hooked));
    }

    /// `ExceptionUnwindFunctionLeave`: the unwound call ends.
    pub fn exception_unwind_function_leave(&self) {
        let now = Instant::now();
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
        let mut ns: HashMap<Vec<u32>, (u64, u64)> = HashMap::new();
        for tree in lock(&self.threads).iter() {
            let tree = lock(tree);
            for (index, node) in tree.nodes.iter().enumerate().skip(1) {
                if node.calls > 0 {
                    let sums = ns.entry(tree.path(index)).or_default();
                    sums.0 += node.exclusive_ns;
                    sums.1 += node.calls;
                }
            }
        }
        let mut profile = Profile::new(Unit::Microseconds);
        for (path, (exclusive_ns, calls)) in ns {
            let frames: Vec<String> = path
                .iter()
                .map(|&f| self.names.get(f as usize).cloned().unwrap_or_else(|| "[unknown]".into()))
                .collect();
            profile.add(&frames, exclusive_ns.div_ceil(1000), calls);
        }
        profile
    }
}
