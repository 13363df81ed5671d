//! IL method bodies.
