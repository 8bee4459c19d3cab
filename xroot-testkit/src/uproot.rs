//! Running `tests/uproot/check.py` (uproot writing and reading NanoAOD-like
//! files) from the tests: finding a Python that has uproot, fsspec-xrootd
//! and the XRootD bindings, and running the script with a given
//! environment, off the runtime's threads and with a time limit.
//!
//! The Python is `$XROOT_UPROOT_PYTHON`, else the venv `.ci/run` makes at
//! `/opt/xroot-uproot`. A test that needs it is marked
//! `#[cfg_attr(missing_uproot, ignore = "...")]`: where that Python cannot
//! import uproot, fsspec_xrootd, XRootD.client and pyarrow the build
//! script sets the cfg ([`crate::probes`]), so `cargo test` reports
//! the test as ignored, with the reason. [`python`] stays behind that: a
//! failure under `CI=true` (no cfg is set then), elsewhere an early return
//! printing "skipping" should the build script not have seen it missing.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one run of the script may take before it is killed.
pub const SCRIPT_TIMEOUT: Duration = Duration::from_secs(300);

/// `tests/uproot/check.py`.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/uproot/check.py")
}

/// The Python to run the script with, if it has uproot, fsspec-xrootd and
/// the XRootD bindings (prints "skipping" when it has not). Panics when it
/// has not and `CI=true`.
pub fn python() -> Option<PathBuf> {
    let python = std::env::var_os("XROOT_UPROOT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/xroot-uproot/bin/python"));
    let found = Command::new(&python)
        .args(["-c", "import uproot, fsspec_xrootd, XRootD.client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let why = format!(
            "{} cannot import uproot, fsspec_xrootd and XRootD.client \
             (.ci/run installs them; or set XROOT_UPROOT_PYTHON)",
            python.display()
        );
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {why}");
        }
        eprintln!("skipping: {why}");
        return None;
    }
    Some(python)
}

/// Environment given to (`Some`) or removed from (`None`) the script.
pub type Env = Vec<(String, Option<OsString>)>;

/// Runs `python check.py ARGS` with `env` off the runtime's worker
/// threads, killing it after [`SCRIPT_TIMEOUT`] (a panic); `Ok(stdout)`
/// when it exits 0, else `Err(stdout + stderr)`.
pub async fn run(python: &Path, env: &Env, args: &[&str]) -> Result<String, String> {
    let python = python.to_path_buf();
    let env = env.clone();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let what = format!("check.py {}", args.join(" "));
        let out = tempfile::tempdir().unwrap();
        let (stdout, stderr) = (out.path().join("stdout"), out.path().join("stderr"));
        let mut cmd = Command::new(&python);
        cmd.arg(script())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap());
        for (k, v) in env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
        let deadline = Instant::now() + SCRIPT_TIMEOUT;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = std::fs::read_to_string(&stdout).unwrap();
        let stderr = std::fs::read_to_string(&stderr).unwrap();
        match status {
            Some(s) if s.success() => Ok(stdout),
            Some(s) => Err(format!("{what} exited with {s}:\n{stdout}{stderr}")),
            None => panic!("{what} killed after {SCRIPT_TIMEOUT:?}:\n{stdout}{stderr}"),
        }
    })
    .await
    .unwrap()
}

/// [`run`], panicking with the script's output unless it exits 0.
pub async fn check(python: &Path, env: &Env, args: &[&str]) -> String {
    run(python, env, args)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The two lines of a read (`check.py read LOCATION HANDLER`): the source
/// uproot used, and the figures.
pub async fn read(python: &Path, env: &Env, location: &str, handler: &str) -> (String, String) {
    let out = check(python, env, &["read", location, handler]).await;
    let mut lines = out.lines();
    let source = lines.next().and_then(|l| l.strip_prefix("source "));
    let (Some(source), Some(figures), None) = (source, lines.next(), lines.next()) else {
        panic!("read {location} {handler}: unexpected output {out:?}")
    };
    (source.to_string(), figures.to_string())
}
