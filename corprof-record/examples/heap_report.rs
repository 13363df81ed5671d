//! Reads a heap snapshot, computes its dominators and writes the table and the treemap, timing
//! each step (for scripts/bench-heap and for looking at a snapshot without the command):
//!
//!     cargo run -p corprof-record --example heap_report -- SNAPSHOT TABLE.txt TREEMAP.html

use corprof_record::{files, heap};
use std::path::Path;
use std::time::Instant;

fn main() -> std::io::Result<()> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let [snapshot, table, treemap] = args.as_slice() else {
        eprintln!("usage: heap_report SNAPSHOT TABLE.txt TREEMAP.html");
        std::process::exit(2);
    };
    let t = Instant::now();
    let s = heap::read(Path::new(snapshot))?;
    let read = t.elapsed();
    let t = Instant::now();
    let d = heap::Dominators::compute(&s);
    let dominators = t.elapsed();
    let t = Instant::now();
    // Only new or regular files are written (corprof_record::files).
    let title = format!("heap snapshot {}", Path::new(snapshot).display());
    files::write_in_place(Path::new(table), |out| heap::write_table(&s, &d, &title, out, Some(50)))?;
    files::write_in_place(Path::new(treemap), |out| heap::write_treemap(&s, &d, &title, out))?;
    let written = t.elapsed();
    println!(
        "objects {} references {} read_ms {:.1} dominators_ms {:.1} write_ms {:.1}",
        s.len(),
        s.edges.len(),
        read.as_secs_f64() * 1e3,
        dominators.as_secs_f64() * 1e3,
        written.as_secs_f64() * 1e3
    );
    Ok(())
}
