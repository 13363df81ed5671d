//! Hook data comes back from client data as it went in: only corprof's own kinds may travel,
//! so no type whose values must not be made up from an integer (an ID, a reference) can.
use corprof::hooks::HookData;

#[derive(Clone, Copy)]
struct Handle(&'static u8);

impl HookData for Handle {}

fn main() {}
