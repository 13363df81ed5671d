//! `corprof`: run a .NET app under corprof's ready profiler and write what it recorded.

fn main() {
    eprintln!("corprof: the record command is being written (issue 20)");
    std::process::exit(2);
}
