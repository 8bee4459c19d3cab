//! A real analysis client through our stack: uproot (PyPI) reads NanoAOD-like
//! ROOT files through our server (the `serve` example, LocalFs) and through
//! our cache (the `xcache` example) in front of a stock xrootd 5.5.3 origin
//! and in front of our server, and every figure (entry and branch counts,
//! sums of flat and jagged branches such as `Jet_pt`, multiplicity counts, a
//! digest of every branch, a ranged read) equals a local read of the same
//! files. uproot reads with its `XRootDSource` on the PyPI XRootD bindings,
//! with its `XRootDSource` on Debian's bindings of the stock xrootd 5.5.3,
//! and with its `FSSpecSource` (fsspec-xrootd); each run checks which source
//! and bindings it really used. Through each cache the first read is cold
//! (fetched from the origin) and the second, with another reader, warm
//! (served from the cache's disk). `tests/uproot/check.py` writes the files
//! (deterministic, about 4 MB, 144 branches) and prints the figures.
//!
//! The Python is `$XROOT_UPROOT_PYTHON`, else the venv `.ci/run` makes at
//! `/opt/xroot-uproot` (uproot, awkward, numpy, fsspec-xrootd and the PyPI
//! `xrootd` bindings fsspec-xrootd requires). Without it, or without the
//! stock xrootd, the test is ignored, except under `CI=true` where it fails.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Parser;
use xroot::cache::origin::RemoteOrigin;
use xroot::cache::{CacheFs, CacheStatsSnapshot};
use xroot::server::{Config, LocalFs, Server, ServerHandle};
use xroot_testkit::stock::StockServer;
use xroot_testkit::uproot::{check, python, read, Env};
use xroot_tools::xcache;

/// One way of reading remote files with uproot.
#[derive(Debug, Clone, Copy)]
enum Reader {
    /// `XRootDSource` over the XRootD bindings of the venv (PyPI `xrootd`,
    /// the version fsspec-xrootd requires).
    XRootD,
    /// `XRootDSource` over Debian's bindings of the stock xrootd 5.5.3.
    XRootDStock,
    /// `FSSpecSource` over fsspec-xrootd (on the venv's bindings).
    Fsspec,
}

impl Reader {
    /// The script's handler argument and the source line it must print
    /// (class, then where the bindings came from).
    fn handler(self) -> (&'static str, fn(&str) -> bool) {
        match self {
            Reader::XRootD => ("xrootd", |s| {
                s.starts_with("XRootDSource /") && !s.ends_with(DEBIAN_BINDINGS)
            }),
            Reader::XRootDStock => ("xrootd", |s| {
                s.strip_prefix("XRootDSource ") == Some(DEBIAN_BINDINGS)
            }),
            Reader::Fsspec => ("fsspec", |s| {
                s.starts_with("FSSpecSource/XRootDFileSystem /") && !s.ends_with(DEBIAN_BINDINGS)
            }),
        }
    }
}

/// Where Debian's `python3-xrootd` (5.5.3) keeps the bindings' extension.
const DEBIAN_BINDINGS: &str = "/usr/lib/python3/dist-packages/pyxrootd";

/// A directory to put first on `PYTHONPATH` so that the venv's Python loads
/// Debian's XRootD bindings (links to its `XRootD` and `pyxrootd`) instead
/// of its own; `None` when they are not installed (a failure under CI).
fn debian_bindings() -> Option<tempfile::TempDir> {
    let dist = Path::new(DEBIAN_BINDINGS).parent().unwrap();
    if !dist.join("XRootD").is_dir() || !Path::new(DEBIAN_BINDINGS).is_dir() {
        let why = "Debian's XRootD bindings are not installed (apt-get install python3-xrootd)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {why}");
        }
        eprintln!("reading with the venv's bindings instead: {why}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["XRootD", "pyxrootd"] {
        std::os::unix::fs::symlink(dist.join(name), dir.path().join(name)).unwrap();
    }
    Some(dir)
}

/// The environment that puts `pythonpath` first on `PYTHONPATH`.
fn pythonpath_env(pythonpath: Option<&Path>) -> Env {
    pythonpath
        .map(|p| vec![("PYTHONPATH".to_string(), Some(p.as_os_str().to_owned()))])
        .unwrap_or_default()
}

/// What every read runs with: the Python, Debian's bindings (if any) and
/// the figures of the local read.
struct Setup {
    python: PathBuf,
    debian: Option<tempfile::TempDir>,
    local: String,
}

impl Setup {
    /// Reads `url` with `reader` and checks that uproot used the source and
    /// bindings asked for and saw exactly what the local read saw. Without
    /// Debian's bindings (outside CI), the venv's stand in for them.
    async fn read_as(&self, url: &str, reader: Reader) {
        let (reader, pythonpath) = match (reader, &self.debian) {
            (Reader::XRootDStock, Some(dir)) => (reader, Some(dir.path())),
            (Reader::XRootDStock, None) => (Reader::XRootD, None),
            _ => (reader, None),
        };
        let (handler, source_ok) = reader.handler();
        let (source, figures) = read(&self.python, &pythonpath_env(pythonpath), url, handler).await;
        assert!(source_ok(&source), "{url} {reader:?}: source {source}");
        assert!(
            figures == self.local,
            "{url} with {reader:?} differs from the local read:\n remote {figures}\n local  {}",
            self.local
        );
    }
}

/// Our server exporting `dir` with `LocalFs` on an ephemeral loopback port
/// (what the `serve` example runs).
async fn start_server(dir: &Path) -> (SocketAddr, ServerHandle) {
    let fs = LocalFs::new(dir).unwrap();
    let server = Server::bind("127.0.0.1:0", fs, Config::default())
        .await
        .unwrap();
    let (addr, handle) = (server.local_addr(), server.handle());
    tokio::spawn(server.serve());
    (addr, handle)
}

/// The `xcache` example in front of `origin`, caching in `dir`; returns its
/// address, its CacheFs (for the statistics) and its handle.
async fn start_cache(
    origin: &str,
    dir: &Path,
) -> (SocketAddr, CacheFs<RemoteOrigin>, ServerHandle) {
    let cli = xcache::Cli::try_parse_from([
        "xcache",
        "--origin",
        origin,
        "--cache-dir",
        dir.to_str().unwrap(),
        "--port",
        "0",
    ])
    .unwrap();
    let server = xcache::start(&cli).await.unwrap();
    let (addr, fs, handle) = (server.local_addr(), server.fs().clone(), server.handle());
    tokio::spawn(server.serve());
    (addr, fs, handle)
}

/// Checks the cache's figures after a cold read (`cold`) and a warm one
/// (`warm`): the cold read fetched from the origin, the warm one was served
/// from the cache's disk and fetched almost nothing.
fn assert_warm(what: &str, cold: &CacheStatsSnapshot, warm: &CacheStatsSnapshot) {
    assert!(
        cold.bytes_fetched > 0 && cold.origin_request_count > 0,
        "{what}: the cold read fetched nothing from the origin: {cold:?}"
    );
    let asked = warm.bytes_asked - cold.bytes_asked;
    let fetched = warm.bytes_fetched - cold.bytes_fetched;
    let from_disk = warm.bytes_from_disk - cold.bytes_from_disk;
    assert!(
        asked > 0 && from_disk * 10 >= asked * 9 && fetched * 10 <= asked,
        "{what}: the warm read asked {asked} B, fetched {fetched} B, \
         {from_disk} B from disk:\n cold {cold:?}\n warm {warm:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(
    missing_uproot,
    ignore = "needs the uproot venv (/opt/xroot-uproot or $XROOT_UPROOT_PYTHON; scripts/test as root makes it)"
)]
async fn uproot_reads_through_our_server_and_cache() {
    let Some(python) = python() else { return };
    if !xroot_testkit::stock::xrootd_available() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    check(&python, &Env::new(), &["write", dir]).await;
    let (source, local) = read(&python, &Env::new(), dir, "file").await;
    assert_eq!(source, "MemmapSource");
    let setup = Setup {
        python,
        debian: debian_bindings(),
        local,
    };

    // our server
    let (addr, server) = start_server(data.path()).await;
    let ours = format!("root://{addr}//");
    for reader in [Reader::XRootD, Reader::XRootDStock, Reader::Fsspec] {
        setup.read_as(&ours, reader).await;
    }

    // our cache in front of a stock xrootd 5.5.3 serving the same files,
    // then in front of our server; each read cold, then warm with another
    // reader
    let stock = StockServer::start(data.path(), &[]).expect("xrootd is installed");
    let origins = [
        (
            format!("root://127.0.0.1:{}", stock.port),
            [Reader::XRootDStock, Reader::Fsspec],
        ),
        (format!("root://{addr}"), [Reader::Fsspec, Reader::XRootD]),
    ];
    for (origin, [cold, warm]) in origins {
        let store = tempfile::tempdir().unwrap();
        let (addr, fs, cache) = start_cache(&origin, store.path()).await;
        let url = format!("root://{addr}//");
        setup.read_as(&url, cold).await;
        let after_cold = fs.stats();
        setup.read_as(&url, warm).await;
        assert_warm(&format!("cache of {origin}"), &after_cold, &fs.stats());
        cache.shutdown();
    }
    server.shutdown();
}
