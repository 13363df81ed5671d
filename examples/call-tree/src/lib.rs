//! call-tree: a call-tree profiler on corprof's fast function hooks. Each thread keeps a shadow
//! stack of the hooked calls in progress and a tree of the call paths it has seen; at Shutdown
//! the profiler writes, per method, its calls and its inclusive and exclusive time, and the call
//! paths as folded stacks (`a;b;c <weight>`, what flamegraph tools read).
//!
//! Load with `CORECLR_PROFILER={4F2A6C81-3D5E-4B97-8A10-6E2C9D7B5F34}`. Settings:
//!
//! - `CORPROF_CALLTREE_FILTER=<prefix>`: hook only methods whose type's full name starts with it;
//! - `CORPROF_CALLTREE_OUT=<file>` (else stderr): `<Namespace.Type::Method> <calls> <inclusive
//!   ns> <exclusive ns>` per method name, sorted;
//! - `CORPROF_CALLTREE_FOLDED=<file>` (else after the table, on stderr): the folded stacks, one
//!   per call path, weighted by exclusive nanoseconds, or by calls with
//!   `CORPROF_CALLTREE_WEIGHT=calls`.
//!
//! A call that an exception unwinds ends there like a return ([`FunctionHooks::unwind`], driven
//! by the exception callbacks this profiler forwards to corprof).
//! Time is wall-clock time between the enter and leave hooks, so it includes the time a thread
//! spends blocked and the hooks' own cost.
#![deny(unsafe_code)]

use corprof::LiveObject;
use corprof::hooks::{self, HookFrame, HookTable};
use corprof::names::FunctionNames;
use corprof::sync::lock;
use corprof::types::{COR_PRF_MONITOR, FunctionID};
use corprof::{CorProfilerCallback, FunctionHooks, HResult, HookMode, IUnknown, ProfilerInfo, Result};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The CLSID this profiler answers to.
pub const CLSID: corprof::GUID = corprof::GUID::parse("4F2A6C81-3D5E-4B97-8A10-6E2C9D7B5F34");

/// The call-path tree's root node.
const ROOT: usize = 0;

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

/// One thread's call paths and shadow stack. Only its thread touches it until Shutdown reads it,
/// so its lock is never contended.
struct ThreadTree {
    nodes: Vec<Node>,
    stack: Vec<Active>,
    /// Per function: its calls in progress, and the time of its outermost calls (a recursive
    /// call's time is already inside its caller's).
    active: HashMap<u32, u32>,
    method_inclusive_ns: HashMap<u32, u64>,
}

impl ThreadTree {
    fn new() -> ThreadTree {
        ThreadTree {
            nodes: vec![Node::default()],
            stack: Vec::new(),
            active: HashMap::new(),
            method_inclusive_ns: HashMap::new(),
        }
    }

    fn enter(&mut self, function: u32, now: Instant) {
        let parent = self.stack.last().map_or(ROOT, |a| a.node);
        let node = match self.nodes[parent].children.get(&function) {
            Some(&node) => node,
            None => {
                let node = self.nodes.len();
                self.nodes.push(Node { function, parent, ..Node::default() });
                self.nodes[parent].children.insert(function, node);
                node
            }
        };
        self.stack.push(Active { node, start: now, children_ns: 0 });
        *self.active.entry(function).or_default() += 1;
    }

    fn leave(&mut self, now: Instant) {
        let Some(done) = self.stack.pop() else { return };
        let elapsed = u64::try_from(now.duration_since(done.start).as_nanos()).unwrap_or(u64::MAX);
        let node = &mut self.nodes[done.node];
        node.calls += 1;
        node.exclusive_ns += elapsed.saturating_sub(done.children_ns);
        let function = node.function;
        if let Some(parent) = self.stack.last_mut() {
            parent.children_ns += elapsed;
        }
        let active = self.active.entry(function).or_default();
        *active = active.saturating_sub(1);
        if *active == 0 {
            *self.method_inclusive_ns.entry(function).or_default() += elapsed;
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
    /// This thread's tree, registered with the profiler on first use.
    static TREE: RefCell<Option<Arc<Mutex<ThreadTree>>>> = const { RefCell::new(None) };
}

pub struct CallTree {
    /// Names functions (`Namespace.Type<Args>::Method<Args>`) for the mapper.
    naming: OnceLock<FunctionNames>,
    filter: Option<String>,
    by_calls: bool,
    /// Hooked functions' names; the mapper's client data is the index.
    names: HookTable<String>,
    threads: Mutex<Vec<Arc<Mutex<ThreadTree>>>>,
}

impl Default for CallTree {
    fn default() -> Self {
        CallTree {
            naming: OnceLock::new(),
            filter: std::env::var("CORPROF_CALLTREE_FILTER").ok().filter(|f| !f.is_empty()),
            by_calls: std::env::var("CORPROF_CALLTREE_WEIGHT").as_deref() == Ok("calls"),
            names: HookTable::default(),
            threads: Mutex::new(Vec::new()),
        }
    }
}

impl CallTree {
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

    fn name(&self, function: FunctionID) -> Result<String> {
        let naming = self.naming.get().ok_or(HResult::E_UNEXPECTED)?;
        Ok(naming.get(function)?.short.to_string())
    }

    fn report(&self) -> std::io::Result<()> {
        let mut methods: BTreeMap<&str, [u64; 3]> = BTreeMap::new();
        let mut folded: BTreeMap<String, u64> = BTreeMap::new();
        for tree in lock(&self.threads).iter() {
            let tree = lock(tree);
            for (index, node) in tree.nodes.iter().enumerate().skip(1) {
                if node.calls == 0 {
                    continue;
                }
                let name = self.names.get(node.function as usize).map_or("?", String::as_str);
                let sums = methods.entry(name).or_default();
                sums[0] += node.calls;
                sums[2] += node.exclusive_ns;
                let path: Vec<&str> =
                    tree.path(index).iter().map(|&f| self.names.get(f as usize).map_or("?", String::as_str)).collect();
                let weight = if self.by_calls { node.calls } else { node.exclusive_ns };
                *folded.entry(path.join(";")).or_default() += weight;
            }
            for (&function, &ns) in &tree.method_inclusive_ns {
                let name = self.names.get(function as usize).map_or("?", String::as_str);
                methods.entry(name).or_default()[1] += ns;
            }
        }
        let mut table = String::new();
        for (name, [calls, inclusive, exclusive]) in methods {
            table.push_str(&format!("{name} {calls} {inclusive} {exclusive}\n"));
        }
        let stacks: String = folded.iter().map(|(path, weight)| format!("{path} {weight}\n")).collect();
        match std::env::var_os("CORPROF_CALLTREE_OUT") {
            Some(path) => corprof::files::write_regular(path.as_ref(), table.as_bytes())?,
            None => std::io::stderr().lock().write_all(table.as_bytes())?,
        }
        match std::env::var_os("CORPROF_CALLTREE_FOLDED") {
            Some(path) => corprof::files::write_regular(path.as_ref(), stacks.as_bytes()),
            None => std::io::stderr().lock().write_all(stacks.as_bytes()),
        }
    }
}

impl FunctionHooks for CallTree {
    type Data = u32;

    fn map_function(&self, function: FunctionID) -> Option<u32> {
        let name = self.name(function).ok()?;
        if self.filter.as_deref().is_some_and(|prefix| !name.starts_with(prefix)) {
            return None;
        }
        u32::try_from(self.names.push(name)?).ok()
    }

    fn enter(&self, function: u32, _frame: &HookFrame<'_>) {
        let now = Instant::now();
        self.with_tree(|t| t.enter(function, now));
    }

    fn leave(&self, _function: u32, _frame: &HookFrame<'_>) {
        let now = Instant::now();
        self.with_tree(|t| t.leave(now));
    }

    fn tailcall(&self, _function: u32, _frame: &HookFrame<'_>) {
        let now = Instant::now();
        self.with_tree(|t| t.leave(now));
    }

    /// An exception unwound the call: it ends here like a return.
    fn unwind(&self, _function: u32) {
        let now = Instant::now();
        self.with_tree(|t| t.leave(now));
    }
}

impl CorProfilerCallback for CallTree {
    fn initialize(&self, unknown: &IUnknown) -> Result<()> {
        let info = ProfilerInfo::from_unknown(unknown)?;
        info.set_event_mask(COR_PRF_MONITOR::EXCEPTIONS)?;
        let _ = self.naming.set(FunctionNames::new(info.clone()));
        hooks::install(self, &info, HookMode::Fast)
    }

    // The three callbacks that drive `FunctionHooks::unwind`.
    fn exception_unwind_function_enter(&self, function_id: FunctionID) -> Result<()> {
        hooks::exception_unwind_function_enter(function_id);
        Ok(())
    }

    fn exception_unwind_function_leave(&self) -> Result<()> {
        hooks::exception_unwind_function_leave();
        Ok(())
    }

    fn exception_catcher_enter(&self, function_id: FunctionID, _object_id: LiveObject<'_>) -> Result<()> {
        hooks::exception_catcher_enter(function_id);
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        if let Err(e) = self.report() {
            eprintln!("call-tree: cannot write the report: {e}");
        }
        Ok(())
    }
}

corprof::export_profiler!(CallTree, CLSID);
