//! Locates the binary of one of the workspace's examples for a test or
//! bench ([`example_bin`]), and runs a daemon among them reading what it
//! prints and logs ([`Daemon`]). The binary is built first: `$CARGO build
//! --workspace --example NAME` into the target dir and profile of the
//! running test. `--workspace` resolves
//! features as `scripts/test` (`cargo test --workspace`) does, so after
//! that command built the examples this build is a no-op; a build for one
//! package would resolve them differently and rebuild much of the tree
//! (tokio, DataFusion). Cargo holds no lock while tests run, so the nested
//! build does not wait.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>/examples/NAME`, built for the profile of the running
/// test or bench binary (`target/<profile>/deps/...`). Panics when cargo
/// fails.
pub fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target dir");
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--workspace", "--example", name, "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
        .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap());
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some(profile) => {
            cargo.args(["--profile", profile]);
        }
        None => panic!("unexpected target dir {}", profile_dir.display()),
    }
    let out = cargo.output().expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build --example {name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.exists(), "{} not built", bin.display());
    bin
}

/// One of the example daemons (`serve`, `xcache`) as its own process, for
/// tests of what it prints: its stdout piped and read line by line, its
/// standard error (the `tracing` log) written to a file [`Daemon::log`]
/// reads. Killed on drop.
pub struct Daemon {
    child: std::process::Child,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    log: tempfile::NamedTempFile,
}

impl Daemon {
    /// Starts the example `name` with `args`; returns at once (read its
    /// first line with [`Daemon::line`] to wait for it to listen).
    pub fn start<A: AsRef<std::ffi::OsStr>>(name: &str, args: &[A]) -> Daemon {
        let log = tempfile::NamedTempFile::new().expect("a log file");
        let mut child = Command::new(example_bin(name))
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(log.reopen().expect("the log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Daemon { child, stdout, log }
    }

    /// The address after `prefix` on its next stdout line (`"serve
    /// listening on "`, `"serve metrics on http://"`, a trailing
    /// `/metrics` dropped). Panics, with its log, when the line is another
    /// (or none: it exited).
    pub fn line(&mut self, prefix: &str) -> std::net::SocketAddr {
        use std::io::BufRead;
        let mut l = String::new();
        self.stdout.read_line(&mut l).unwrap();
        l.trim()
            .strip_prefix(prefix)
            .map(|a| a.trim_end_matches("/metrics"))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("said {l:?}, not {prefix}...; log:\n{}", self.log()))
    }

    /// What it has logged so far (its standard error).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `GET /metrics` at `addr` (a daemon's `--metrics`) answers: the
/// body parsed into `series → value` (`name{labels}` as written), after
/// checking the status line and the OpenMetrics `# EOF`. Panics on
/// anything else.
pub fn scrape(addr: std::net::SocketAddr) -> std::collections::BTreeMap<String, f64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.ends_with("# EOF\n"), "an OpenMetrics text ends so");
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.to_string(), value.parse().unwrap())
        })
        .collect()
}
