//! Runs our cache (`examples/xcache.rs`) for a test: in-process
//! ([`RunningCache`], a bound `Server<CacheFs>` served on the test's runtime,
//! so the test can read its [`CacheFs::stats`]) or as a separate process
//! ([`CacheProcess`], the example's binary, which a test can kill -9).
//!
//! Also the deterministic content the cache tests serve ([`content`]).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use xroot_cache::origin::RemoteOrigin;
use xroot_cache::CacheFs;
use xroot_server::{Server, ServerHandle};

use crate::example::example_bin;

/// `len` deterministic bytes, different for each `seed`: a 64-bit LCG's
/// high bytes.
pub fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect()
}

/// The example's command line for a cache of `root://127.0.0.1:origin_port`
/// in `cache_dir` on a free port, for `xcache::Cli::try_parse_from`.
pub fn cli_args(origin_port: u16, cache_dir: &Path) -> Vec<String> {
    let origin = format!("root://127.0.0.1:{origin_port}");
    let dir = cache_dir.to_str().expect("a UTF-8 temp dir");
    [
        "xcache",
        "--origin",
        &origin,
        "--port",
        "0",
        "--cache-dir",
        dir,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A cache served in-process on the test's runtime.
pub struct RunningCache {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The cache below the server (stats, flush).
    pub fs: CacheFs<RemoteOrigin>,
    handle: ServerHandle,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningCache {
    /// Serves `server` (from the example's `start`) on a task.
    pub fn serve(server: Server<CacheFs<RemoteOrigin>>) -> RunningCache {
        RunningCache {
            addr: server.local_addr(),
            fs: server.fs().clone(),
            handle: server.handle(),
            serving: tokio::spawn(server.serve()),
        }
    }

    /// `root://ADDR`, for clients.
    pub fn url(&self) -> String {
        format!("root://{}", self.addr)
    }

    /// Stops as the example does on SIGTERM: a graceful server shutdown,
    /// then every open file's sidecar written.
    pub async fn stop(self) {
        self.handle.shutdown();
        self.serving.await.unwrap().unwrap();
        self.fs.flush_all().await.unwrap();
    }
}

/// The `xcache` example running as its own process; killed (SIGKILL) on
/// drop if still running.
pub struct CacheProcess {
    child: Child,
    /// The address it listens on (from its first stdout line).
    pub addr: SocketAddr,
    stdout: BufReader<ChildStdout>,
}

impl CacheProcess {
    /// Starts `xcache --origin ORIGIN --cache-dir DIR --port 0 EXTRA...`
    /// and waits for its `xcache listening on ADDR` line. Panics if it
    /// exits first.
    pub fn start(origin: &str, cache_dir: &Path, extra: &[&str]) -> CacheProcess {
        let mut child = Command::new(example_bin("xcache"))
            .args(["--origin", origin, "--port", "0", "--cache-dir"])
            .arg(cache_dir)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn xcache");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read xcache's stdout");
        let addr = line
            .trim()
            .strip_prefix("xcache listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let status = child.wait();
                panic!("xcache did not start ({status:?}); it said {line:?}")
            });
        CacheProcess {
            child,
            addr,
            stdout,
        }
    }

    /// `root://ADDR`, for clients.
    pub fn url(&self) -> String {
        format!("root://{}", self.addr)
    }

    /// kill -9, and reaps it.
    pub fn kill9(mut self) {
        self.child.kill().expect("kill -9 xcache");
        self.child.wait().unwrap();
    }

    /// SIGTERM (a graceful stop), waits for it to exit, and returns what it
    /// printed after its first line (the statistics table). Panics unless
    /// it exits 0.
    pub fn stop(mut self) -> String {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM xcache");
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "xcache exited with {status}");
        rest
    }
}

impl Drop for CacheProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
