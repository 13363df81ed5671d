//! Reads a heap snapshot, computes its dominators and writes the table and the treemap, timing
//! each step (for scripts/bench-heap and for looking at a snapshot without the command):
//!
//!     cargo run -p corprof-record --example heap_report -- SNAPSHOT TABLE.txt TREEMAP.html

use corprof_record::heap;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
    let mut out = std::io::BufWriter::new(std::fs::File::create(table)?);
    heap::write_table(&s, &d, &mut out, Some(50))?;
    out.flush()?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(treemap)?);
    heap::write_treemap(&s, &d, &mut out)?;
    out.flush()?;
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
