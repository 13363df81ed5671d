fn main() {
    eprintln!("corprof-gen: the CLI arrives with its commands (check, bootstrap, diff, expand)");
    std::process::exit(2);
}
