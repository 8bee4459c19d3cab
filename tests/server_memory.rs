//! Memory is bounded by configuration, not by what requests ask: our
//! `serve` (a separate process, so that its resident set can be read)
//! receives vector reads and pgreads of 2 GiB that the client never reads,
//! and hostile frames before login; its peak resident set stays within its
//! budget (16 MiB for the whole server by default, plus one 2 MiB piece
//! per link while that is spent) and a fixed overhead.
//! Also the deadlines that make a connection cheap before login: no login
//! in time, or a frame that stalls midway, closes the link.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use xroot::proto::request::{Pgread, Readv};
use xroot::proto::response::Response;
use xroot::proto::{ClientHandshake, ErrorCode, ReadListEntry, RequestHeader, RequestId};
use xroot::server::{Config, LocalFs};

use xroot_testkit::ours::{peak_rss, serve_with, ServeProcess};
use xroot_testkit::raw::Raw;

/// What the server may hold beyond its budget: the binary, the runtime's
/// threads and buffers, the allocator's slack.
const OVERHEAD: u64 = 40 << 20;

/// Watches `serve`'s peak resident set for `span`, failing as soon as it
/// passes `limit`; returns the last reading.
async fn stays_under(serve: &ServeProcess, limit: u64, span: Duration, what: &str) -> u64 {
    let start = Instant::now();
    loop {
        let peak = peak_rss(serve.pid());
        assert!(
            peak <= limit,
            "{what}: the server's peak resident set reached {} MiB (limit {} MiB)",
            peak >> 20,
            limit >> 20
        );
        if start.elapsed() >= span {
            return peak;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A directory with a sparse file of 2 GiB (no disk used).
fn big_file() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(dir.path().join("big.bin")).unwrap();
    f.set_len(2 << 30).unwrap();
    dir
}

/// A readv of exactly 2 GiB with its element headers (1024 × 2,097,136).
fn readv_2gib(fh: xroot::proto::FHandle) -> Readv {
    Readv {
        list: (0..1024)
            .map(|i| ReadListEntry {
                fhandle: fh,
                rlen: 2_097_136,
                offset: i * 2_097_136,
            })
            .collect(),
        ..Default::default()
    }
}

fn pgread_2gib(fh: xroot::proto::FHandle) -> Pgread {
    Pgread {
        fhandle: fh,
        offset: 0,
        rlen: i32::MAX,
        args: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gib_reads_nobody_reads_hold_only_the_budget() {
    let dir = big_file();
    let serve = ServeProcess::start(dir.path());
    let base = peak_rss(serve.pid());
    // 8 readv and 8 pgread of 2 GiB on one link, the same on 3 more links;
    // none of them reads a byte of its answers
    let mut links = Vec::new();
    for _ in 0..4 {
        let (mut r, _) = Raw::login(serve.addr).await;
        let fh = r.open("/big.bin").await;
        for i in 0..8 {
            r.send(100 + i, readv_2gib(fh)).await;
            r.send(200 + i, pgread_2gib(fh)).await;
        }
        links.push(r);
    }
    let limit = base + (16 << 20) + 4 * (33 << 16) + OVERHEAD;
    let peak = stays_under(
        &serve,
        limit,
        Duration::from_secs(3),
        "64 GiB asked, unread",
    )
    .await;
    eprintln!(
        "peak resident set {} MiB (at start {} MiB)",
        peak >> 20,
        base >> 20
    );
    // meanwhile another client is served
    let (mut other, _) = Raw::login(serve.addr).await;
    let fh = other.open("/big.bin").await;
    let read = xroot::proto::request::Read {
        fhandle: fh,
        offset: 4096,
        rlen: 1000,
        args: None,
    };
    other.send(7, read).await;
    match other.expect().await.1 {
        Response::Ok(b) => assert_eq!(b.len(), 1000),
        r => panic!("another client's read while the budget is held: {r:?}"),
    }
    // once its client reads, the link streams on: 256 MiB of answers, each
    // request's frames in offset order
    let r = &mut links[0];
    let mut next: std::collections::HashMap<u16, i64> = Default::default();
    let mut got = 0usize;
    while got < 256 << 20 {
        let (sid, resp) = r.expect().await;
        let sid = u16::from_be_bytes(sid.0);
        let at = next.entry(sid).or_default();
        match resp {
            Response::OkSoFar(b) => {
                got += b.len();
                for e in xroot::proto::response::ReadvIter::new(b) {
                    let (e, data) = e.unwrap();
                    assert_eq!((e.offset, data.len()), (*at, 2_097_136));
                    *at += 2_097_136;
                }
            }
            Response::Status(s) => {
                let frame = xroot::proto::response::PgReadFrame::from_status(&s).unwrap();
                assert_eq!(frame.offset as i64, *at);
                *at += frame.data_len().unwrap() as i64;
                got += frame.data_len().unwrap() as usize;
            }
            other => panic!("answer to {sid}: {other:?}"),
        }
    }
    stays_under(&serve, limit, Duration::ZERO, "after 256 MiB read").await;
}

/// The first bytes of a request whose header claims `dlen` bytes.
fn header(dlen: i32) -> BytesMut {
    let mut b = BytesMut::new();
    ClientHandshake.encode(&mut b);
    RequestHeader {
        streamid: xroot::proto::StreamId::from_u16(1),
        requestid: RequestId::LOGIN,
        params: [0; 16],
        dlen,
    }
    .encode(&mut b);
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_login_a_connection_is_cheap() {
    let dir = tempfile::tempdir().unwrap();
    let serve = ServeProcess::start(dir.path());
    let base = peak_rss(serve.pid());
    // 300 connections announce a 16 MiB login: refused at the header
    for _ in 0..300 {
        let mut r = Raw::connect(serve.addr).await;
        r.write(&header(16 << 20)).await;
        r.write(&vec![b'x'; 64 << 10]).await;
        let _handshake = r.expect().await;
        assert_eq!(
            r.expect_error(ErrorCode::ARG_TOO_LONG).await,
            "Request argument is too long"
        );
        r.expect_closed().await;
    }
    // 500 connections each hold the largest partial frame a login may be
    let mut held = Vec::new();
    for _ in 0..500 {
        let mut s = TcpStream::connect(serve.addr).await.unwrap();
        s.write_all(&header(32 << 10)).await.unwrap();
        s.write_all(&vec![b'x'; (32 << 10) - 1]).await.unwrap();
        held.push(s);
    }
    let peak = stays_under(
        &serve,
        base + OVERHEAD,
        Duration::from_secs(1),
        "500 partial logins",
    )
    .await;
    eprintln!(
        "peak resident set {} MiB (at start {} MiB)",
        peak >> 20,
        base >> 20
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_login_in_time_or_a_stalled_frame_closes_the_link() {
    let config = Config {
        login_timeout: Duration::from_millis(300),
        frame_timeout: Duration::from_millis(300),
        ..Config::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let addr = serve_with(LocalFs::new(dir.path()).unwrap(), config).await;
    // handshake and protocol, then nothing
    let mut idle = Raw::hello(addr, 3).await;
    idle.expect_closed().await;
    // logged in, then half a request
    let (mut stalled, _) = Raw::login(addr).await;
    let mut b = BytesMut::new();
    RequestHeader {
        streamid: xroot::proto::StreamId::from_u16(5),
        requestid: RequestId::MKDIR,
        params: [0; 16],
        dlen: 100,
    }
    .encode(&mut b);
    stalled.write(&b).await;
    stalled.write(b"/half").await;
    stalled.expect_closed().await;
    // a logged-in link that sends nothing more stays up
    let (mut quiet, _) = Raw::login(addr).await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    quiet.send(6, xroot::proto::request::Ping::default()).await;
    assert!(matches!(quiet.expect().await.1, Response::Ok(_)));
}

/// Clients that stop reading their answers, each with as many requests and
/// vector reads in progress as its link allows, hold every slot of the
/// server's limits: a new client is still served (open, read, readv).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_stop_reading_do_not_stop_the_others() {
    let dir = big_file();
    let config = Config {
        max_requests: 8,
        max_requests_per_link: 4,
        max_readv: 4,
        max_readv_per_link: 2,
        ..Config::default()
    };
    let addr = serve_with(LocalFs::new(dir.path()).unwrap(), config).await;
    let mut stuck = Vec::new();
    for _ in 0..4 {
        let (mut r, _) = Raw::login(addr).await;
        let fh = r.open("/big.bin").await;
        for i in 0..2 {
            r.send(100 + i, readv_2gib(fh)).await;
            r.send(200 + i, pgread_2gib(fh)).await;
        }
        stuck.push(r);
    }
    let (mut fresh, _) = Raw::login(addr).await;
    let fh = fresh.open("/big.bin").await;
    let read = xroot::proto::request::Read {
        fhandle: fh,
        offset: 0,
        rlen: 1000,
        args: None,
    };
    fresh.send(7, read).await;
    assert!(matches!(fresh.expect().await.1, Response::Ok(b) if b.len() == 1000));
    let readv = Readv {
        list: vec![ReadListEntry {
            fhandle: fh,
            rlen: 100,
            offset: 4096,
        }],
        ..Default::default()
    };
    fresh.send(8, readv).await;
    assert!(matches!(fresh.expect().await.1, Response::Ok(b) if b.len() == 116));
}

/// Logged-in clients that each send all but the last byte of a 16 MiB
/// write: the server reads a frame's payload only once it has granted it
/// its budget (64 MiB for the whole server by default), so it holds that
/// much, not what the clients send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_uploads_hold_only_the_payload_budget() {
    let dir = tempfile::tempdir().unwrap();
    let serve = ServeProcess::start(dir.path());
    let base = peak_rss(serve.pid());
    let mut senders = Vec::new();
    for i in 0..24 {
        let (mut r, _) = Raw::login(serve.addr).await;
        let fh = r
            .open_with(
                &format!("/up{i}"),
                xroot::proto::request::OpenOptions(
                    xroot::proto::request::OpenOptions::NEW.0
                        | xroot::proto::request::OpenOptions::UPDATE.0,
                ),
            )
            .await;
        let mut frame = BytesMut::new();
        xroot::proto::request::Request::from(xroot::proto::request::Write {
            fhandle: fh,
            offset: 0,
            pathid: 0,
            data: bytes::Bytes::from(vec![7u8; 16 << 20]),
        })
        .encode(xroot::proto::StreamId::from_u16(5), &mut frame);
        frame.truncate(frame.len() - 1);
        // the server may stop reading: send from a task of its own
        senders.push(tokio::spawn(async move {
            let _ = r.s.write_all(&frame).await;
            r
        }));
    }
    let limit = base + (64 << 20) + OVERHEAD;
    let peak = stays_under(
        &serve,
        limit,
        Duration::from_secs(3),
        "24 partial 16 MiB writes",
    )
    .await;
    eprintln!(
        "peak resident set {} MiB (at start {} MiB)",
        peak >> 20,
        base >> 20
    );
    for s in senders {
        s.abort();
    }
}

/// Logged-in clients that each send all but the last byte of a 16 MiB
/// write naming a handle never opened: the server refuses such a write
/// from its header on and drops its data as it comes (as the stock's
/// do_WriteNone), so a hundred of them hold next to nothing (they held
/// the whole 64 MiB payload budget).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_naming_no_open_file_hold_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let serve = ServeProcess::start(dir.path());
    let base = peak_rss(serve.pid());
    let mut senders = Vec::new();
    for _ in 0..100 {
        let (r, _) = Raw::login(serve.addr).await;
        let mut frame = BytesMut::new();
        xroot::proto::request::Request::from(xroot::proto::request::Write {
            fhandle: xroot::proto::FHandle([0x5a; 4]),
            offset: 0,
            pathid: 0,
            data: bytes::Bytes::from(vec![7u8; 16 << 20]),
        })
        .encode(xroot::proto::StreamId::from_u16(5), &mut frame);
        frame.truncate(frame.len() - 1);
        senders.push(tokio::spawn(async move {
            let mut r = r;
            let _ = r.s.write_all(&frame).await;
            r
        }));
    }
    // every byte but the last of each is read and dropped
    let mut held = Vec::new();
    for s in senders {
        held.push(s.await.unwrap());
    }
    // a link's 16 KiB skip buffer and the runtime's slack, not 64 MiB
    let limit = base + (16 << 20);
    let peak = stays_under(&serve, limit, Duration::from_secs(1), "100 refused writes").await;
    eprintln!(
        "peak resident set {} MiB (at start {} MiB)",
        peak >> 20,
        base >> 20
    );
    // the last byte: each is answered kXR_FileNotOpen
    for r in &mut held {
        r.write(&[7]).await;
        let m = r.expect_error(ErrorCode::FILE_NOT_OPEN).await;
        assert_eq!(m, "write does not refer to an open file");
    }
}

/// What links held for their unread answers goes back to the system once
/// they close: the `serve` example has glibc unmap freed buffers of 128
/// KiB and more at once (xroot_server::allocator); it kept 60 MB of 8
/// links' 2 GiB vector reads after they closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_closed_links_held_is_given_back() {
    let dir = big_file();
    let serve = ServeProcess::start(dir.path());
    let base = resident(serve.pid());
    let mut links = Vec::new();
    for _ in 0..8 {
        let (mut r, _) = Raw::login(serve.addr).await;
        let fh = r.open("/big.bin").await;
        for i in 0..16 {
            r.send(100 + i, readv_2gib(fh)).await;
        }
        links.push(r);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let held = resident(serve.pid());
    drop(links);
    // the LocalFs keeps up to 16 MiB of read buffers for reuse, and the
    // allocator's arenas some of what the links' small allocations freed
    let limit = base + (32 << 20);
    let start = Instant::now();
    let mut now = resident(serve.pid());
    while now > limit && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        now = resident(serve.pid());
    }
    eprintln!(
        "resident set {} MiB at start, {} MiB with the links, {} MiB after they closed",
        base >> 20,
        held >> 20,
        now >> 20
    );
    assert!(
        now <= limit,
        "the server kept {} MiB after its links closed (limit {} MiB)",
        now >> 20,
        limit >> 20
    );
}

/// The resident set of process `pid` now, bytes (`VmRSS`).
fn resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kb << 10
}

/// Clients whose 16 MiB writes wait for their own earlier reads of the same
/// bytes, which they never read: their payloads stop counting against the
/// server's budget while they wait, so another client's 8 MiB uploads go
/// on (they waited for ever: the four writes held the whole 64 MiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_waiting_on_their_clients_unread_reads_do_not_stop_uploads() {
    use xroot::proto::request::{OpenOptions, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    for i in 0..4 {
        let f = std::fs::File::create(dir.path().join(format!("h{i}"))).unwrap();
        f.set_len(64 << 20).unwrap();
    }
    let addr = serve_with(LocalFs::new(dir.path()).unwrap(), Config::default()).await;
    let mut stuck = Vec::new();
    for i in 0..4 {
        let (mut r, _) = Raw::login(addr).await;
        let fh = r.open_with(&format!("/h{i}"), OpenOptions::UPDATE).await;
        let read = Read {
            fhandle: fh,
            offset: 0,
            rlen: 64 << 20,
            args: None,
        };
        r.send(1, read).await;
        let write = Write {
            fhandle: fh,
            offset: 0,
            pathid: 0,
            data: bytes::Bytes::from(vec![1u8; 16 << 20]),
        };
        let mut frame = BytesMut::new();
        xroot::proto::request::Request::from(write)
            .encode(xroot::proto::StreamId::from_u16(2), &mut frame);
        // the server may stop reading this link: send from a task
        stuck.push(tokio::spawn(async move {
            let _ = r.s.write_all(&frame).await;
            r
        }));
    }
    let uploads = async {
        let (mut victim, _) = Raw::login(addr).await;
        let new = OpenOptions(OpenOptions::NEW.0 | OpenOptions::UPDATE.0);
        let fh = victim.open_with("/upload", new).await;
        for k in 0..4u16 {
            let write = Write {
                fhandle: fh,
                offset: i64::from(k) << 23,
                pathid: 0,
                data: bytes::Bytes::from(vec![2u8; 8 << 20]),
            };
            victim.send(10 + k, write).await;
            assert!(
                matches!(victim.expect().await.1, Response::Ok(_)),
                "upload {k}"
            );
        }
    };
    tokio::time::timeout(xroot_testkit::raw::GUARD, uploads)
        .await
        .expect("another client's uploads go on");
    for s in stuck {
        s.abort();
    }
}
