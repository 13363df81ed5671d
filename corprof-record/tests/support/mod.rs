//! What the command's integration tests share.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A folder of the test's own under the system's temp folder, removed at the end.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("corprof-record-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The repository's root (this crate's parent).
#[allow(dead_code)]
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Runs `cmd` without the runtime's and corprof's settings of the test's own environment, with
/// invariant globalization (the apps need no ICU).
#[allow(dead_code)]
pub fn clean(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if ["CORECLR_", "CORPROF_", "DOTNET_", "COMPlus_"].iter().any(|p| k.starts_with(p)) {
            cmd.env_remove(&key);
        }
    }
    cmd.env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1");
}

/// The runtime's `dotnet` of `runtime` ("8" or "3"), as `bash scripts/setup` installs it.
#[allow(dead_code)]
pub fn dotnet(runtime: &str) -> PathBuf {
    let path = root().join(format!(".runtimes/dotnet-{runtime}/dotnet"));
    assert!(path.is_file(), "no runtime at {} (run `bash scripts/setup`)", path.display());
    path
}

/// The test app `name`'s assembly, as `bash scripts/setup` builds it.
#[allow(dead_code)]
pub fn app(name: &str) -> PathBuf {
    let path = root().join(format!("tests/apps/{name}/bin/{name}.dll"));
    assert!(path.is_file(), "no {} (run `bash scripts/setup`)", path.display());
    path
}

/// The command's executable, with the profiler library it loads beside it.
#[allow(dead_code)]
pub fn corprof_exe() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_corprof"));
    let lib = exe.with_file_name("libcorprof_record_profiler.so");
    assert!(lib.is_file(), "{} is missing: run `cargo build -p corprof-record-profiler` first", lib.display());
    exe
}

/// What a finished command gave.
#[allow(dead_code)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Waits for `child`, killing it and failing after `timeout`, and collects its output.
#[allow(dead_code)]
pub fn finish_within(mut child: Child, timeout: Duration) -> Output {
    let pipe = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = p {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = pipe(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = pipe(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("did not finish in {timeout:?}: {}", err.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output { code: status.code(), stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}
