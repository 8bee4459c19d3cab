//! A UDP collector on loopback for the monitoring streams (`--monitor`,
//! `--report`, the stock `xrootd.monitor` and `xrd.report`): it keeps every
//! datagram it gets, in order, for a test to decode.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::UdpSocket;

/// A UDP collector on 127.0.0.1: every datagram it got, in order. It
/// receives until the runtime it was started in ends.
#[derive(Debug)]
pub struct Collector {
    /// Where to send to.
    pub addr: SocketAddr,
    got: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Collector {
    /// Binds a free port and starts receiving. Must run in a tokio
    /// runtime; panics when no UDP port can be bound.
    pub async fn start() -> Collector {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let keep = got.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = socket.recv(&mut buf).await {
                keep.lock().unwrap().push(buf[..n].to_vec());
            }
        });
        Collector { addr, got }
    }

    /// The datagrams so far.
    pub fn packets(&self) -> Vec<Vec<u8>> {
        self.got.lock().unwrap().clone()
    }
}

/// The Python that imports xrootdlib (a third-party decoder of the
/// monitoring streams): the venv `scripts/test` makes
/// (`XROOT_UPROOT_PYTHON` or `/opt/xroot-uproot/bin/python`). `None`,
/// printing why, when it cannot; panics under `CI=true`.
pub fn xrootdlib_python() -> Option<std::path::PathBuf> {
    let python = std::env::var_os("XROOT_UPROOT_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/opt/xroot-uproot/bin/python".into());
    let found = std::process::Command::new(&python)
        .args(["-c", "import xrootdlib.structs.XrdXrootdMon"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let why = format!(
            "{} cannot import xrootdlib (scripts/test installs it from tests/uproot/requirements.txt)",
            python.display()
        );
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but {why}");
        }
        eprintln!("skipping the xrootdlib check: {why}");
        return None;
    }
    Some(python)
}
