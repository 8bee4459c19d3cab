//! Peak resident memory of the server under requests that ask for far more
//! than it should hold, ours (the `serve` example, release) against the
//! stock xrootd 5.5.3 exporting the same directory; one run, one table
//! (`cargo bench --bench server_memory`; about two minutes).
//!
//! Each row starts a fresh server of each kind (so its peak, `VmHWM` in
//! `/proc/PID/status`, is the row's alone) and:
//! - **readv / pgread, N × L**: L links (1 or 8), each logged in with the
//!   file open, send N (1, 4, 16) vector reads of 1023 × 2,097,136 bytes
//!   (just under 2 GiB with the element headers, which 5.5.3 serves) or
//!   pgreads of 2 GiB - 1 on a sparse 2 GiB file, at once, and never read
//!   an answer; the peak after [`HOLD`];
//! - **partial logins**: 500 connections send the handshake and a
//!   `kXR_login` header claiming 16 MiB, then 1 MiB of it (what each
//!   server accepts of it), and hold; the peak after [`HOLD`].
//!
//! The target: ours within 4× of stock (stock ≤ 25 MB throughout)
//! and flat in N and L. Prints "skipped" without the stock xrootd.
//!
//! Last, `summary: server_memory.WHO.max_mib VALUE` (the largest peak of
//! any row, MiB) for WHO = ours, stock.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use xroot::proto::request::{Pgread, Readv, Request};
use xroot::proto::{ClientHandshake, FHandle, ReadListEntry, RequestHeader, RequestId, StreamId};

use xroot_testkit::ours::ServeProcess;
use xroot_testkit::raw::Raw;
use xroot_testkit::stock::StockServer;
use xroot_testkit::{bench, ours, stock};

/// How long each row's clients hold their requests unread.
const HOLD: Duration = Duration::from_secs(3);

/// A server under test: our `serve` process or the stock xrootd.
enum Peer {
    Ours(ServeProcess),
    Stock(StockServer),
}

impl Peer {
    fn addr(&self) -> SocketAddr {
        match self {
            Peer::Ours(p) => p.addr,
            Peer::Stock(s) => SocketAddr::from(([127, 0, 0, 1], s.port)),
        }
    }

    fn pid(&self) -> u32 {
        match self {
            Peer::Ours(p) => p.pid(),
            Peer::Stock(s) => s.server_pid().expect("the stock server's pid"),
        }
    }

    /// Peak resident set, MiB.
    fn peak_mib(&self) -> f64 {
        ours::peak_rss(self.pid()) as f64 / (1 << 20) as f64
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Peer::Stock(s) = self {
            s.kill();
        }
    }
}

fn request(kind: &str, fh: FHandle) -> Request {
    match kind {
        "readv" => Readv {
            list: (0..1023)
                .map(|i| ReadListEntry {
                    fhandle: fh,
                    rlen: 2_097_136,
                    offset: i * 2_097_136,
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        _ => Pgread {
            fhandle: fh,
            offset: 0,
            rlen: i32::MAX,
            args: None,
        }
        .into(),
    }
}

/// N requests of `kind` on each of `links` links, unread, for [`HOLD`].
async fn unread(peer: &Peer, kind: &str, n: u16, links: usize) -> f64 {
    let mut held = Vec::new();
    for _ in 0..links {
        let (mut r, _) = Raw::login(peer.addr()).await;
        let fh = r.open("/big.bin").await;
        for i in 0..n {
            r.send(100 + i, request(kind, fh)).await;
        }
        held.push(r);
    }
    tokio::time::sleep(HOLD).await;
    peer.peak_mib()
}

/// 500 connections each holding a partial 16 MiB login frame.
async fn partial_logins(peer: &Peer) -> f64 {
    let mut frame = BytesMut::new();
    ClientHandshake.encode(&mut frame);
    RequestHeader {
        streamid: StreamId::from_u16(1),
        requestid: RequestId::LOGIN,
        params: [0; 16],
        dlen: 16 << 20,
    }
    .encode(&mut frame);
    frame.extend_from_slice(&vec![b'x'; 1 << 20]);
    let mut held = Vec::new();
    for _ in 0..500 {
        let mut s = TcpStream::connect(peer.addr()).await.unwrap();
        // a server that refuses the header closes: what it took is enough
        let _ = tokio::time::timeout(Duration::from_secs(2), s.write_all(&frame)).await;
        held.push(s);
    }
    tokio::time::sleep(HOLD).await;
    peer.peak_mib()
}

#[tokio::main]
async fn main() {
    if !stock::xrootd_available() {
        println!("server_memory: skipped (the stock xrootd is not installed)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let big = std::fs::File::create(dir.path().join("big.bin")).unwrap();
    big.set_len(2 << 30).unwrap();
    drop(big);
    // the stock server runs as another user when this runs as root
    let start_stock = || Peer::Stock(StockServer::start(dir.path(), &[]).expect("stock xrootd"));
    let start_ours = || Peer::Ours(ServeProcess::start(dir.path()));

    println!("peak resident set, MiB (a fresh server per row; clients never read)\n");
    println!("{:<28} {:>8} {:>8} {:>7}", "", "ours", "stock", "ratio");
    let (mut max_ours, mut max_stock) = (0f64, 0f64);
    let mut row = |name: String, ours: f64, stock: f64| {
        println!("{name:<28} {ours:>8.1} {stock:>8.1} {:>7.2}", ours / stock);
        max_ours = max_ours.max(ours);
        max_stock = max_stock.max(stock);
    };
    for kind in ["readv", "pgread"] {
        for links in [1, 8] {
            for n in [1u16, 4, 16] {
                let ours = unread(&start_ours(), kind, n, links).await;
                let stock = unread(&start_stock(), kind, n, links).await;
                row(format!("{kind} 2 GiB, {n} x {links} link(s)"), ours, stock);
            }
        }
    }
    let ours = partial_logins(&start_ours()).await;
    let stock = partial_logins(&start_stock()).await;
    row("500 partial 16 MiB logins".into(), ours, stock);
    println!("\nload average: {}", bench::load_average());
    bench::summary("server_memory.ours.max_mib", max_ours);
    bench::summary("server_memory.stock.max_mib", max_stock);
}
