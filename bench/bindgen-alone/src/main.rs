//! bindgen by itself on the headers `corprof-gen expand` reads, with the same prelude and
//! compiler arguments: the yardstick for the generator's wall time in BENCHMARKS.md.
//!
//! `bindgen-alone --include DIR` prints bindgen's Rust (formatted with prettyplease, as
//! corprof-gen formats its output) for `cor.h` (when DIR has it) and `corprof.h`.

use std::path::PathBuf;
use std::process::ExitCode;

/// corprof-gen's prelude folder (the Windows/MIDL vocabulary the header needs on Linux).
fn prelude_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corprof-gen/prelude")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let include = match args.as_slice() {
        [flag, dir] if flag == "--include" => PathBuf::from(dir),
        _ => {
            eprintln!("usage: bindgen-alone --include DIR");
            return ExitCode::from(2);
        }
    };
    let prelude = prelude_dir();
    // The umbrella corprof-gen parses: cor.h when present (else the prelude's metadata
    // typedefs), then corprof.h.
    let mut umbrella = String::new();
    if include.join("cor.h").is_file() {
        umbrella.push_str("#include \"cor.h\"\n");
    } else {
        umbrella.push_str("#include \"corprof_mdtypes.h\"\n");
    }
    umbrella.push_str("#include \"corprof.h\"\n");
    let builder = bindgen::Builder::default()
        .header_contents(&include.join("bindgen_alone_umbrella.h").display().to_string(), &umbrella)
        // corprof-gen's compiler arguments (C++ mode: cor.h declares interfaces only in C++).
        .clang_args([
            "-x".to_string(),
            "c++".to_string(),
            "-fno-ms-compatibility".to_string(),
            format!("-I{}", prelude.display()),
            "-include".to_string(),
            "corprof_prelude.h".to_string(),
            format!("-I{}", include.display()),
            "-std=c++14".to_string(),
        ])
        .allowlist_file(format!("{}/.*", include.display()))
        .allowlist_file(format!("{}/.*", prelude.display()))
        .layout_tests(false)
        .formatter(bindgen::Formatter::Prettyplease);
    match builder.generate() {
        Ok(bindings) => {
            print!("{bindings}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bindgen-alone: bindgen failed: {e}");
            ExitCode::FAILURE
        }
    }
}
