//! The lending scope of the callbacks that lend objects ([`LiveObject`](crate::LiveObject)):
//! what lets a lent object refuse questions once a call that may trigger a GC ran while it was
//! lent (see module [`object`](crate::object)). The thunks open a scope through `imp::lend`.

use std::cell::Cell;
use std::marker::PhantomData;
/// The lending callbacks running on one thread.
#[derive(Clone, Copy)]
struct Lent {
    /// How many callbacks that lend objects are running on this thread (one may run inside
    /// another: a type load a lending callback asks for may allocate).
    depth: u32,
    /// Whether a call that may trigger a GC ran on this thread since the outermost began: the
    /// objects lent may have moved. Conservative for objects lent by a callback nested after
    /// that call, which are fresh.
    moved: bool,
}

thread_local! {
    static LENDING: Cell<Lent> = const { Cell::new(Lent { depth: 0, moved: false }) };
}

/// Held by a callback thunk that lends objects, for the callback's duration (an unwind
/// included): the objects it lends are current until a call that may trigger a GC runs.
pub struct Lending {
    /// A raw pointer's auto traits: the scope belongs to the thread that opened it.
    _here: PhantomData<*const ()>,
}

/// Opens the lending scope of one callback (the generated thunks call it first).
#[inline]
pub fn lend() -> Lending {
    LENDING.with(|l| {
        let Lent { depth, moved } = l.get();
        l.set(Lent { depth: depth.saturating_add(1), moved: moved && depth > 0 });
    });
    Lending { _here: PhantomData }
}

impl Drop for Lending {
    #[inline]
    fn drop(&mut self) {
        LENDING.with(|l| {
            let Lent { depth, moved } = l.get();
            let depth = depth.saturating_sub(1);
            l.set(Lent { depth, moved: moved && depth > 0 });
        });
    }
}

/// Called before every call that may trigger a GC (`imp::refuse_in_hook`, and the hand-written
/// ones): the objects lent on this thread may move.
#[inline]
pub(crate) fn gc_may_run() {
    LENDING.with(|l| {
        let lent = l.get();
        if lent.depth > 0 {
            l.set(Lent { moved: true, ..lent });
        }
    });
}

/// Whether a call that may trigger a GC ran on this thread while the running lending callbacks
/// lent their objects.
#[inline]
pub(crate) fn moved() -> bool {
    LENDING.with(Cell::get).moved
}

#[cfg(test)]
mod tests {
    use super::{gc_may_run, lend, moved};

    #[test]
    fn a_gc_while_lending_marks_the_objects_until_the_outermost_scope_ends() {
        gc_may_run();
        assert!(!moved(), "nothing lent: nothing to mark");
        let outer = lend();
        assert!(!moved());
        gc_may_run();
        assert!(moved());
        let inner = lend();
        assert!(moved(), "the outer objects are still lent");
        drop(inner);
        assert!(moved());
        drop(outer);
        assert!(!moved(), "nothing lent any more");
        let again = lend();
        assert!(!moved(), "a new callback's objects are fresh");
        drop(again);
    }
}
