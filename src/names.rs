//! Function names for reports: a [`FunctionID`] (and, from a stack walk, its frame's exact
//! instantiation) to the short form `Namespace.Type::Method` that flame graphs and call trees
//! show, and the full signature form, cached per function.
//!
//! The short form writes nested types `Outer+Inner` and generic instantiations out with the type
//! arguments the runtime reports: `System.Collections.Generic.List<System.Int32>::.ctor`,
//! `Shop.Catalog::Pick<System.String>`. The full form adds the return and parameter types
//! (`System.Void System.Collections.Generic.List<System.Int32>::.ctor()`), as
//! [`sig::function_name`](crate::sig::function_name) prints it. Both come from
//! [`sig::function_names`](crate::sig::function_names), which asks the runtime for the
//! instantiation (`GetFunctionInfo2`, `GetClassIDInfo2`) and the module's metadata for the names.
//!
//! Code shared by reference-type instantiations (`List<string>` and `List<object>` run one
//! body) is one FunctionID; only a call knows which instantiation it runs for. Without one,
//! [`FunctionNames::get`] names a shared generic method's own type arguments `System.__Canon`
//! (`Util::Make<System.__Canon>`), and a method of a shared generic class with its class's
//! parameters (`Dictionary<TKey, TValue>::TryInsert`): the runtime gives no class for it.
//! [`FunctionNames::hook_frame`] names the call a with-info `enter` hook runs in exactly
//! (`Outer<System.Int32>+Inner<System.String>::Run`, `Util::Make<System.String>`).
//! [`FunctionNames::frame`] names a stack walk's frame with what the frame reports, which on
//! CoreCLR 3.1.23 and 8.0.4 is no more than the function's own answer for shared code (the
//! runtime's stack walk passes no `this` or instantiation argument with its frames).
//!
//! ```no_run
//! # use corprof::names::FunctionNames;
//! # use corprof::{FrameContext, ProfilerInfo};
//! # use std::ops::ControlFlow;
//! # fn walk(info: &ProfilerInfo) -> corprof::Result<Vec<String>> {
//! let names = FunctionNames::new(info.clone());
//! let mut stack = Vec::new();
//! // This thread's stack; other threads' go through a `Suspension`.
//! info.do_stack_snapshot_with(FrameContext::Without, |frame| {
//!     if let Ok(name) = names.frame(frame) {
//!         stack.push(name.short.to_string());
//!     }
//!     ControlFlow::Continue(())
//! })?;
//! # Ok(stack)
//! # }
//! ```
//!
//! The cache holds at most [`FunctionNames::with_capacity`] names (by default
//! [`DEFAULT_CAPACITY`]) and is emptied when it is full; readers (a sampler thread, callbacks,
//! hooks) share it behind a read-write lock. A FunctionID is never reused for another function
//! while its module is loaded; a profiler that sees collectible modules unload calls
//! [`FunctionNames::clear`].

use crate::hooks::HookFrame;
use crate::sig::{Exact, function_names};
use crate::sync;
use crate::types::{ClassID, FunctionID};
use crate::{Frame, HResult, ProfilerInfo, Result};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// How many names a [`FunctionNames`] keeps by default.
pub const DEFAULT_CAPACITY: usize = 1 << 16;

/// The two names of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionName {
    /// `Namespace.Outer+Inner<Args>::Method<Args>`.
    pub short: Arc<str>,
    /// `ReturnType Namespace.Outer+Inner<Args>::Method<Args>(ParamType, …)`.
    pub signature: Arc<str>,
}

/// What a name is cached under: the function and the instantiation it was named with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    function: FunctionID,
    class: ClassID,
    method_args: Box<[ClassID]>,
}

/// A cache of [`FunctionName`]s, safe to share between threads.
pub struct FunctionNames {
    info: ProfilerInfo,
    capacity: usize,
    names: RwLock<HashMap<Key, Arc<FunctionName>>>,
}

impl FunctionNames {
    /// A cache of up to [`DEFAULT_CAPACITY`] names, asking `info`.
    pub fn new(info: ProfilerInfo) -> FunctionNames {
        FunctionNames::with_capacity(info, DEFAULT_CAPACITY)
    }

    /// A cache of up to `capacity` names (at least 1).
    pub fn with_capacity(info: ProfilerInfo, capacity: usize) -> FunctionNames {
        FunctionNames { info, capacity: capacity.max(1), names: RwLock::new(HashMap::new()) }
    }

    /// `function`'s names as the runtime reports it without a frame: exact for non-generic
    /// code and unshared instantiations (`List<int>`), `System.__Canon` for shared ones.
    pub fn get(&self, function: FunctionID) -> Result<Arc<FunctionName>> {
        self.lookup(Key { function, class: ClassID::NULL, method_args: Box::new([]) }, None)
    }

    /// `function`'s names with the instantiation `class` and `method_args` (as
    /// `GetFunctionInfo2` with a frame reports them; a null class or empty arguments: the
    /// function's own).
    pub fn instantiated(
        &self,
        function: FunctionID,
        class: ClassID,
        method_args: &[ClassID],
    ) -> Result<Arc<FunctionName>> {
        let exact = Exact { class, method_args };
        self.lookup(Key { function, class, method_args: method_args.into() }, Some(exact))
    }

    /// The names of a stack walk's frame, exact for shared generic code; `E_INVALIDARG` for a
    /// run of native frames (no function).
    pub fn frame(&self, frame: &Frame<'_>) -> Result<Arc<FunctionName>> {
        let function = frame.function_id().ok_or(HResult::E_INVALIDARG)?;
        match frame.function_info(&self.info) {
            Ok(f) => self.instantiated(function, f.class_id, &f.type_args),
            // Some frames (a method's prolog, say) have no exact information: the function's own.
            Err(_) => self.get(function),
        }
    }

    /// The names of the function a with-info `enter` hook runs for, exact for shared generic
    /// code ([`HookFrame::function_info`]); `E_UNEXPECTED` outside one.
    pub fn hook_frame(&self, frame: &HookFrame<'_>) -> Result<Arc<FunctionName>> {
        let function = frame.function().ok_or(HResult::E_UNEXPECTED)?;
        let f = frame.function_info()?;
        self.instantiated(function, f.class_id, &f.type_args)
    }

    /// Forgets every name (after collectible modules unloaded, whose FunctionIDs may be reused).
    pub fn clear(&self) {
        sync::write(&self.names).clear();
    }

    /// How many names the cache holds.
    pub fn len(&self) -> usize {
        sync::read(&self.names).len()
    }

    /// Whether the cache holds no name.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lookup(&self, key: Key, exact: Option<Exact<'_>>) -> Result<Arc<FunctionName>> {
        if let Some(name) = sync::read(&self.names).get(&key) {
            return Ok(Arc::clone(name));
        }
        // Named outside the lock: the runtime calls may take a while, and two threads naming
        // the same function at once both get the same text.
        let (short, signature) = function_names(&self.info, key.function, exact)?;
        let name = Arc::new(FunctionName { short: short.into(), signature: signature.into() });
        let mut names = sync::write(&self.names);
        if names.len() >= self.capacity {
            names.clear();
        }
        names.insert(key, Arc::clone(&name));
        Ok(name)
    }
}
