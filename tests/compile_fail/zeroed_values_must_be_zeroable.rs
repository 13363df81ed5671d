//! Door 3: buffers, HCORENUM batches and out values start zeroed; a zeroed reference, `fn` pointer
//! or fieldless enum is undefined behaviour.
use corprof::imp::{Buffer, CorEnum, zeroed};

#[derive(Clone, Copy)]
enum Fieldless {
    One = 1,
}

fn main() {
    let mut refs = Buffer::<&'static u8>::new();
    refs.grow(4);
    let _fns = CorEnum::<fn()>::new(|_, _, _| 0, |_| {});
    let _e: Fieldless = zeroed();
    let _ = Fieldless::One;
}
