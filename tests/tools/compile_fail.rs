//! No safe door to undefined behaviour: nothing written without `unsafe` can corrupt memory.
//! Each file in `compile_fail/` is a safe program that reached undefined behaviour through one
//! door; each must now be refused, for the reason its `.stderr` records. One is not a door:
//! `renamed_methods_warn.rs` holds that a renamed method's old name still compiles, deprecated
//! (refused there by `deny(deprecated)`, with the note naming the new spelling).

#[test]
fn safe_code_cannot_reach_undefined_behaviour() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
