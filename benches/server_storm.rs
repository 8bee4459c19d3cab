//! Peak resident memory of the server under hostile clients, ours (the
//! `serve` example, release) against the stock xrootd 5.5.3 exporting the
//! same directory, on the same inputs; one run, one table (`cargo bench
//! --bench server_storm`; about three minutes). Issue 25, item 4.
//!
//! Each row starts a fresh server of each kind (so its peak, `VmHWM` in
//! `/proc/PID/status`, is the row's alone):
//! - **storm**: [`STORM_FRAMES`] frames over [`STORM_LINKS`] connections
//!   at once, from a seeded generator (the same bytes for both servers):
//!   on [`STORM_LOGGED_IN`] of them, after a valid handshake, login and
//!   open, random requests (random ids and parameters, reads, vector reads
//!   and pgreads of the open file whose answers are drained), truncated
//!   frames that leave the rest of the stream misframed, random bytes,
//!   vector-read lists too long or misaligned, `dlen`s past any limit or
//!   negative, and now and then a whole request of up to 16 MiB or a
//!   16 MiB header with part of its payload and a close; on the others,
//!   raw garbage, with or without a valid handshake first. A link the
//!   server closes is opened again until its share of the frames is sent.
//!   Meanwhile an honest reader reads a 16 MiB file in 1 MiB reads,
//!   checking every byte, and counts its errors. The peak, and the
//!   resident set once the storm's clients have gone;
//! - **partial writes**: [`PARTIAL_LINKS`] connections each log in, open
//!   a new file for writing and send a `kXR_write` header announcing
//!   16 MiB, then part of its data (1 MiB, or all but the last byte), and
//!   hold; the same with a handle never opened (what a hostile client
//!   sends); the peak after [`HOLD`];
//! - **readv, then close**: 8 links each send 16 vector reads of just
//!   under 2 GiB (1023 × 2,097,136 bytes of a sparse file) and never read
//!   an answer; the peak after [`HOLD`], then every link closes and the
//!   resident set is read again after [`SETTLE`]: what a server keeps of
//!   what closed links held.
//!
//! The target: ours within 4× of stock in each row, and no error for the
//! honest reader. Prints "skipped" without the stock xrootd.
//! `SERVER_STORM_ONLY=storm,partial,readv` runs only those rows;
//! `SERVER_STORM_AT=HOST:PORT SERVER_STORM_DIR=DIR` only sends the storm
//! to a server started by hand (under a profiler, say) that serves DIR,
//! where it writes the storm's files first.
//!
//! Last, `summary: server_storm.WHO.KEY VALUE` for WHO = ours, stock and
//! KEY = `storm_mib`, `partial_writes_mib` (all but 1 byte, open files),
//! `refused_writes_mib` (all but 1 byte, no open file), `readv_closed_mib`
//! (the resident set once closed), MiB, and `honest_errors`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use xroot::proto::request::{
    Login, Open, OpenOptions, Pgread, Protocol, Read, Readv, Request, Write,
};
use xroot::proto::response::Response;
use xroot::proto::{
    ClientHandshake, FHandle, ReadListEntry, RequestHeader, RequestId, ResponseDecoder, StreamId,
};
use xroot_testkit::ours::ServeProcess;
use xroot_testkit::stock::StockServer;
use xroot_testkit::{bench, ours, stock};

/// Frames the storm sends in all.
const STORM_FRAMES: u64 = 100_000;
/// Connections the storm sends them on, at once.
const STORM_LINKS: u64 = 20;
/// Of those, the ones that log in first; the others send garbage.
const STORM_LOGGED_IN: u64 = 12;
/// The storm stops here even if frames are left (a server too slow).
const STORM_MAX: Duration = Duration::from_secs(120);
/// Connections each holding a partial write.
const PARTIAL_LINKS: usize = 100;
/// What the partial writes announce.
const PARTIAL_DLEN: usize = 16 << 20;
/// How long clients hold what they sent before the peak is read.
const HOLD: Duration = Duration::from_secs(3);
/// How long after the last client closed the resident set is read again.
const SETTLE: Duration = Duration::from_secs(3);
/// The honest reader's file.
const HONEST_SIZE: u64 = 16 << 20;
/// Any single wait on the network, past which a client gives up.
const WAIT: Duration = Duration::from_secs(5);

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

    /// Peak resident set so far, MiB.
    fn peak_mib(&self) -> f64 {
        mib(ours::peak_rss(self.pid()))
    }

    /// Resident set now, MiB.
    fn rss_mib(&self) -> f64 {
        mib(status_kb(self.pid(), "VmRSS:") << 10)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Peer::Stock(s) = self {
            s.kill();
        }
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// A `kB` field of `/proc/PID/status`.
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A small seeded generator (xorshift64*): the same inputs for both
/// servers, no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(n);
        v
    }
}

fn encode(sid: u16, req: impl Into<Request>) -> BytesMut {
    let mut b = BytesMut::new();
    req.into().encode(StreamId::from_u16(sid), &mut b);
    b
}

fn header(sid: u16, id: RequestId, params: [u8; 16], dlen: i32) -> BytesMut {
    let mut b = BytesMut::new();
    RequestHeader {
        streamid: StreamId::from_u16(sid),
        requestid: id,
        params,
        dlen,
    }
    .encode(&mut b);
    b
}

/// A client link: frames decoded as they arrive, every wait bounded.
struct Link {
    s: TcpStream,
    buf: BytesMut,
    dec: ResponseDecoder,
}

impl Link {
    async fn connect(addr: SocketAddr) -> Option<Link> {
        let s = tokio::time::timeout(WAIT, TcpStream::connect(addr))
            .await
            .ok()?
            .ok()?;
        let _ = s.set_nodelay(true);
        Some(Link {
            s,
            buf: BytesMut::new(),
            dec: ResponseDecoder::new(),
        })
    }

    async fn write(&mut self, bytes: &[u8]) -> Option<()> {
        tokio::time::timeout(WAIT, self.s.write_all(bytes))
            .await
            .ok()?
            .ok()
    }

    async fn next(&mut self) -> Option<(StreamId, Response)> {
        loop {
            if let Some(f) = self.dec.decode(&mut self.buf).ok()? {
                return Some((f.header.streamid, Response::decode(f).ok()?));
            }
            let n = tokio::time::timeout(WAIT, self.s.read_buf(&mut self.buf))
                .await
                .ok()?
                .ok()?;
            if n == 0 {
                return None;
            }
        }
    }

    /// The `kXR_ok` body of the final answer to the request just sent.
    async fn ok(&mut self) -> Option<Bytes> {
        loop {
            match self.next().await? {
                (_, Response::Ok(b)) => return Some(b),
                (_, Response::OkSoFar(_)) => {}
                _ => return None,
            }
        }
    }

    /// Handshake, protocol and login.
    async fn login(addr: SocketAddr) -> Option<Link> {
        let mut l = Link::connect(addr).await?;
        let mut b = BytesMut::new();
        ClientHandshake.encode(&mut b);
        b.extend_from_slice(&encode(
            0,
            Protocol {
                clientpv: 0x511,
                ..Default::default()
            },
        ));
        l.write(&b).await?;
        l.ok().await?; // the handshake's answer
        l.ok().await?; // kXR_protocol's
        let login = Login {
            pid: 1,
            username: Login::pack_username("storm"),
            capver: xroot::proto::request::Capver(0x85),
            ..Default::default()
        };
        l.write(&encode(0, login)).await?;
        l.ok().await?;
        Some(l)
    }

    async fn open(&mut self, path: &str, options: OpenOptions) -> Option<FHandle> {
        let open = Open {
            options,
            mode: xroot::proto::request::Mode(0o644),
            path: Bytes::copy_from_slice(path.as_bytes()),
            ..Default::default()
        };
        self.write(&encode(9, open)).await?;
        let body = self.ok().await?;
        Some(FHandle(body.get(..4)?.try_into().ok()?))
    }
}

/// A readv of `n` elements of `len` bytes at random offsets of `fh`.
fn random_readv(rng: &mut Rng, fh: FHandle, n: u64, len: u64, size: u64) -> Readv {
    Readv {
        list: (0..n)
            .map(|_| ReadListEntry {
                fhandle: fh,
                rlen: (1 + rng.below(len)) as i32,
                offset: rng.below(size) as i64,
            })
            .collect(),
        ..Default::default()
    }
}

/// What one storm frame does to its link after it is sent.
enum After {
    /// The link goes on.
    Go,
    /// The server will close it (or we do): open another.
    Close,
}

/// The next hostile frame for a logged-in link whose open file is `fh`.
fn logged_in_frame(rng: &mut Rng, fh: FHandle) -> (BytesMut, After) {
    let sid = rng.below(1 << 16) as u16;
    let pick = rng.below(1000);
    let mut params: [u8; 16] = rng.bytes(16).try_into().unwrap();
    match pick {
        // a random request id and parameters with a small random payload
        0..=349 => {
            let id = RequestId(3000 + rng.below(40) as u16);
            if id == RequestId::ENDSESS || id == RequestId::BIND {
                // ends the session or is refused: the link goes on elsewhere
                return (header(sid, RequestId::PING, params, 0), After::Go);
            }
            if id == RequestId::SIGVER {
                params = [0; 16];
            }
            let dlen = rng.below(512) as usize;
            let mut f = header(sid, id, params, dlen as i32);
            f.extend_from_slice(&rng.bytes(dlen));
            (f, After::Go)
        }
        // reads, vector reads and pgreads of the open file
        350..=449 => {
            let req: Request = match rng.below(3) {
                0 => Read {
                    fhandle: fh,
                    offset: rng.below(HONEST_SIZE) as i64,
                    rlen: (1 + rng.below(8 << 20)) as i32,
                    args: None,
                }
                .into(),
                1 => {
                    let n = 1 + rng.below(64);
                    random_readv(rng, fh, n, 256 << 10, HONEST_SIZE).into()
                }
                _ => Pgread {
                    fhandle: fh,
                    offset: rng.below(HONEST_SIZE) as i64,
                    rlen: (1 + rng.below(4 << 20)) as i32,
                    args: None,
                }
                .into(),
            };
            (encode(sid, req), After::Go)
        }
        // a truncated frame: what follows is read as its payload
        450..=599 => {
            let dlen = 1 + rng.below(64 << 10) as usize;
            let id = RequestId(3000 + rng.below(33) as u16);
            let mut f = header(sid, id, params, dlen as i32);
            let sent = rng.below(dlen as u64) as usize;
            f.extend_from_slice(&rng.bytes(sent));
            (f, After::Go)
        }
        // random bytes
        600..=749 => {
            let n = 1 + rng.below(1024) as usize;
            (BytesMut::from(&rng.bytes(n)[..]), After::Go)
        }
        // a vector-read list too long or misaligned
        750..=849 => {
            let id = [RequestId::READV, RequestId::PGREADV][rng.below(2) as usize];
            let dlen = match rng.below(2) {
                0 => 16 * (1025 + rng.below(4096)) as usize,
                _ => 16 * rng.below(1024) as usize + 1 + rng.below(15) as usize,
            };
            let mut f = header(sid, id, params, dlen as i32);
            f.extend_from_slice(&rng.bytes(dlen));
            (f, After::Go)
        }
        // a dlen past any limit, or negative
        850..=979 => {
            let dlen = match rng.below(2) {
                0 => ((16 << 20) + 1 + rng.below(i32::MAX as u64 - (16 << 20))) as i32,
                _ => -((1 + rng.below(i32::MAX as u64)) as i32),
            };
            let id = RequestId(3000 + rng.below(33) as u16);
            let mut f = header(sid, id, params, dlen);
            let n = rng.below(4096) as usize;
            f.extend_from_slice(&rng.bytes(n));
            (f, After::Close)
        }
        // a large header with part of its payload, then a close
        980..=994 => {
            let id = [RequestId::WRITE, RequestId::QUERY, RequestId::SET][rng.below(3) as usize];
            let dlen = (1 << 20) + rng.below(15 << 20) as usize;
            let mut f = header(sid, id, params, dlen as i32);
            let n = rng.below(dlen as u64) as usize;
            f.extend_from_slice(&rng.bytes(n));
            (f, After::Close)
        }
        // a whole request of up to 16 MiB (a write on a read-only handle)
        _ => {
            let n = 1 + rng.below(16 << 20) as usize;
            let data = Bytes::from(rng.bytes(n));
            let write = Write {
                fhandle: fh,
                offset: rng.below(HONEST_SIZE) as i64,
                pathid: 0,
                data,
            };
            (encode(sid, write), After::Go)
        }
    }
}

/// The next garbage for a link that never logs in: random bytes, or a
/// valid handshake and then random frames or bytes.
fn garbage_frame(rng: &mut Rng, first: bool) -> BytesMut {
    let mut f = BytesMut::new();
    if first && rng.below(2) == 0 {
        ClientHandshake.encode(&mut f);
    }
    match rng.below(3) {
        0 => {
            let n = 1 + rng.below(2048) as usize;
            f.extend_from_slice(&rng.bytes(n));
        }
        1 => {
            let params: [u8; 16] = rng.bytes(16).try_into().unwrap();
            let id = RequestId(3000 + rng.below(40) as u16);
            let dlen = rng.below(64 << 10) as i32;
            f.extend_from_slice(&header(1, id, params, dlen));
            let n = rng.below(dlen as u64 + 1) as usize;
            f.extend_from_slice(&rng.bytes(n));
        }
        _ => {
            let params: [u8; 16] = rng.bytes(16).try_into().unwrap();
            let dlen = rng.next() as i32;
            f.extend_from_slice(&header(1, RequestId::LOGIN, params, dlen));
        }
    }
    f
}

/// Reads and drops whatever the server sends on a storm link; sets
/// `closed` at its end.
async fn drain(mut rd: tokio::net::tcp::OwnedReadHalf, closed: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 256 << 10];
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(30), rd.read(&mut buf)).await {
        if n == 0 {
            break;
        }
    }
    closed.store(true, Ordering::Release);
}

/// One storm link's share: `quota` frames, opening the link again each
/// time it closes. Returns the connections it took.
async fn storm_link(addr: SocketAddr, seed: u64, quota: u64, logged_in: bool, end: Instant) -> u64 {
    let mut rng = Rng::new(seed);
    let (mut sent, mut connections) = (0, 0);
    while sent < quota && Instant::now() < end {
        connections += 1;
        let (wr, fh, closed) = match logged_in {
            true => {
                let Some(mut l) = Link::login(addr).await else {
                    continue;
                };
                let Some(fh) = l.open("/storm.bin", OpenOptions::READ).await else {
                    continue;
                };
                let (rd, wr) = l.s.into_split();
                let closed = Arc::new(AtomicBool::new(false));
                tokio::spawn(drain(rd, closed.clone()));
                (wr, fh, closed)
            }
            false => {
                let Some(l) = Link::connect(addr).await else {
                    continue;
                };
                let (rd, wr) = l.s.into_split();
                let closed = Arc::new(AtomicBool::new(false));
                tokio::spawn(drain(rd, closed.clone()));
                (wr, FHandle([0; 4]), closed)
            }
        };
        sent += storm_connection(&mut rng, wr, fh, &closed, quota - sent, logged_in).await;
    }
    connections
}

/// Sends frames on one connection until it closes or `left` are sent, in
/// batches of up to 32; returns how many were sent.
async fn storm_connection(
    rng: &mut Rng,
    mut wr: OwnedWriteHalf,
    fh: FHandle,
    closed: &AtomicBool,
    left: u64,
    logged_in: bool,
) -> u64 {
    let mut sent = 0;
    let mut first = true;
    while sent < left && !closed.load(Ordering::Acquire) {
        let mut batch = BytesMut::new();
        let mut last = false;
        for _ in 0..(1 + rng.below(32)).min(left - sent) {
            sent += 1;
            if !logged_in {
                batch.extend_from_slice(&garbage_frame(rng, first));
                first = false;
                last = rng.below(4) == 0;
            } else {
                let (f, after) = logged_in_frame(rng, fh);
                batch.extend_from_slice(&f);
                last = matches!(after, After::Close);
            }
            if last {
                break;
            }
        }
        let written = tokio::time::timeout(Duration::from_secs(2), wr.write_all(&batch)).await;
        if !matches!(written, Ok(Ok(()))) || last {
            break;
        }
    }
    // what the server makes of the last batch before the link goes
    let deadline = Instant::now() + Duration::from_millis(50);
    while !closed.load(Ordering::Acquire) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    sent
}

/// What the honest reader saw.
#[derive(Debug, Default)]
struct Honest {
    reads: u64,
    errors: u64,
    slowest: Duration,
}

/// Reads `/honest.bin` in 1 MiB reads, checking every byte, until `stop`;
/// an error answer, wrong bytes, a closed link or a wait past [`WAIT`] is
/// an error (and a new link).
async fn honest_reader(addr: SocketAddr, stop: Arc<AtomicBool>) -> Honest {
    let mut out = Honest::default();
    let mut at = 0u64;
    'link: while !stop.load(Ordering::Acquire) {
        let Some(mut l) = Link::login(addr).await else {
            out.errors += 1;
            continue;
        };
        let Some(fh) = l.open("/honest.bin", OpenOptions::READ).await else {
            out.errors += 1;
            continue;
        };
        while !stop.load(Ordering::Acquire) {
            let start = Instant::now();
            let read = Read {
                fhandle: fh,
                offset: at as i64,
                rlen: 1 << 20,
                args: None,
            };
            if l.write(&encode(1, read)).await.is_none() {
                out.errors += 1;
                continue 'link;
            }
            let mut data = BytesMut::new();
            loop {
                match l.next().await {
                    Some((_, Response::OkSoFar(b))) => data.extend_from_slice(&b),
                    Some((_, Response::Ok(b))) => {
                        data.extend_from_slice(&b);
                        break;
                    }
                    _ => {
                        out.errors += 1;
                        continue 'link;
                    }
                }
            }
            if data.len() != 1 << 20 || !bench::is_pattern(0, at, &data) {
                out.errors += 1;
            }
            out.reads += 1;
            out.slowest = out.slowest.max(start.elapsed());
            at = (at + (1 << 20)) % HONEST_SIZE;
        }
    }
    out
}

/// The storm against `peer`: its peak, its resident set once the storm's
/// clients have gone, what the honest reader saw and the storm's
/// connections.
async fn storm(peer: &Peer) -> (f64, f64, Honest, u64) {
    let (honest, connections) = storm_at(peer.addr()).await;
    let peak = peer.peak_mib();
    tokio::time::sleep(SETTLE).await;
    (peak, peer.rss_mib(), honest, connections)
}

/// The storm and the honest reader against `addr`, until the storm's last
/// link is done: what the honest reader saw and the storm's connections.
async fn storm_at(addr: SocketAddr) -> (Honest, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let honest = tokio::spawn(honest_reader(addr, stop.clone()));
    let end = Instant::now() + STORM_MAX;
    let links: Vec<_> = (0..STORM_LINKS)
        .map(|i| {
            let quota = STORM_FRAMES / STORM_LINKS;
            tokio::spawn(storm_link(
                addr,
                0x5701 + i,
                quota,
                i < STORM_LOGGED_IN,
                end,
            ))
        })
        .collect();
    let mut connections = 0;
    for l in links {
        connections += l.await.unwrap();
    }
    stop.store(true, Ordering::Release);
    (honest.await.unwrap(), connections)
}

/// [`PARTIAL_LINKS`] logged-in links each holding a `kXR_write` of
/// [`PARTIAL_DLEN`] of which `part` bytes were sent, on a file each opened
/// for writing if `open`, else naming a handle never opened; the peak
/// after [`HOLD`].
async fn partial_writes(peer: &Peer, who: &str, part: usize, open: bool) -> f64 {
    let addr = peer.addr();
    let mut held = Vec::new();
    for i in 0..PARTIAL_LINKS {
        let mut l = Link::login(addr).await.expect("login");
        let fh = match open {
            true => {
                let options = OpenOptions(OpenOptions::NEW.0 | OpenOptions::UPDATE.0);
                let path = format!("/partial-{who}-{part}-{i}.bin");
                l.open(&path, options).await.expect("open for writing")
            }
            false => FHandle([0x5a; 4]),
        };
        let mut params = [0u8; 16];
        params[..4].copy_from_slice(&fh.0);
        let mut frame = header(2, RequestId::WRITE, params, PARTIAL_DLEN as i32);
        frame.extend_from_slice(&vec![0x5a; part]);
        // a server that stops reading holds what it took
        held.push(tokio::spawn(async move {
            let _ = l.s.write_all(&frame).await;
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }));
    }
    tokio::time::sleep(HOLD).await;
    let peak = peer.peak_mib();
    for h in held {
        h.abort();
    }
    peak
}

/// 8 links × 16 unread vector reads of just under 2 GiB: the peak after
/// [`HOLD`], and the resident set [`SETTLE`] after every link closed.
async fn readv_then_close(peer: &Peer) -> (f64, f64) {
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut l = Link::login(peer.addr()).await.expect("login");
        let fh = l.open("/big.bin", OpenOptions::READ).await.expect("open");
        for i in 0..16 {
            let readv = Readv {
                list: (0..1023)
                    .map(|k| ReadListEntry {
                        fhandle: fh,
                        rlen: 2_097_136,
                        offset: k * 2_097_136,
                    })
                    .collect(),
                ..Default::default()
            };
            l.write(&encode(100 + i, readv)).await.expect("send");
        }
        held.push(l);
    }
    tokio::time::sleep(HOLD).await;
    let peak = peer.peak_mib();
    drop(held);
    tokio::time::sleep(SETTLE).await;
    (peak, peer.rss_mib())
}

/// The storm's files in `dir`: `honest.bin` and `storm.bin` (16 MiB of
/// the pattern of [`common::write_file`]) and `big.bin` (a sparse 2 GiB).
fn files(dir: &std::path::Path) {
    bench::write_file(&dir.join("honest.bin"), HONEST_SIZE);
    bench::write_file(&dir.join("storm.bin"), HONEST_SIZE);
    let big = std::fs::File::create(dir.join("big.bin")).unwrap();
    big.set_len(2 << 30).unwrap();
}

#[tokio::main]
async fn main() {
    if !stock::xrootd_available() {
        println!("server_storm: skipped (the stock xrootd is not installed)");
        return;
    }
    if let Ok(addr) = std::env::var("SERVER_STORM_AT") {
        // a server started by hand (under a profiler, say) that serves
        // SERVER_STORM_DIR, where the files go: the storm alone
        let at = std::env::var("SERVER_STORM_DIR").expect("SERVER_STORM_DIR with SERVER_STORM_AT");
        files(std::path::Path::new(&at));
        let addr = addr.parse().expect("SERVER_STORM_AT=HOST:PORT");
        let (honest, connections) = storm_at(addr).await;
        println!("{connections} storm connections; honest reader: {honest:?}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    files(dir.path());
    // the stock server runs as another user when this runs as root
    let start_stock = || Peer::Stock(StockServer::start(dir.path(), &[]).expect("stock xrootd"));
    let start_ours = || Peer::Ours(ServeProcess::start(dir.path()));
    let only = std::env::var("SERVER_STORM_ONLY").unwrap_or_default();
    let runs = |row: &str| only.is_empty() || only.split(',').any(|r| r == row);

    println!("resident set, MiB (a fresh server per row)\n");
    println!("{:<70} {:>8} {:>8} {:>7}", "", "ours", "stock", "ratio");
    let row = |name: &str, ours: f64, stock: f64| {
        println!("{name:<70} {ours:>8.1} {stock:>8.1} {:>7.2}", ours / stock);
    };
    let mut summary = Vec::new();
    {
        let (ours, stock) = (start_ours(), start_stock());
        row("idle, just started", ours.rss_mib(), stock.rss_mib());
    }
    if runs("storm") {
        let ours_peer = start_ours();
        let started = Instant::now();
        let ours = storm(&ours_peer).await;
        let ours_secs = started.elapsed().as_secs_f64();
        drop(ours_peer);
        let stock_peer = start_stock();
        let started = Instant::now();
        let stock = storm(&stock_peer).await;
        let stock_secs = started.elapsed().as_secs_f64();
        drop(stock_peer);
        let name = format!("storm, {STORM_FRAMES} frames on {STORM_LINKS} links: peak");
        row(&name, ours.0, stock.0);
        row("  after the storm's clients left", ours.1, stock.1);
        for (who, (_, _, h, c), secs) in [("ours", &ours, ours_secs), ("stock", &stock, stock_secs)]
        {
            println!(
                "  {who}: {c} storm connections, {secs:.1} s; honest reader: {} reads of 1 MiB, \
                 {} errors, slowest {:.0} ms",
                h.reads,
                h.errors,
                h.slowest.as_secs_f64() * 1e3
            );
            summary.push((format!("{who}.honest_errors"), h.errors as f64));
        }
        summary.push(("ours.storm_mib".into(), ours.0));
        summary.push(("stock.storm_mib".into(), stock.0));
    }
    if runs("partial") {
        let cases = [
            (1 << 20, true, "on open files, 1 MiB sent", ""),
            (
                PARTIAL_DLEN - 1,
                true,
                "on open files, all but 1 byte",
                "partial_writes",
            ),
            (
                PARTIAL_DLEN - 1,
                false,
                "naming no open file, all but 1 byte",
                "refused_writes",
            ),
        ];
        for (part, open, name, key) in cases {
            let ours = partial_writes(&start_ours(), "ours", part, open).await;
            let stock = partial_writes(&start_stock(), "stock", part, open).await;
            row(
                &format!("{PARTIAL_LINKS} partial 16 MiB writes {name}: peak"),
                ours,
                stock,
            );
            if !key.is_empty() {
                summary.push((format!("ours.{key}_mib"), ours));
                summary.push((format!("stock.{key}_mib"), stock));
            }
        }
    }
    if runs("readv") {
        let ours = readv_then_close(&start_ours()).await;
        let stock = readv_then_close(&start_stock()).await;
        row("8 links x 16 unread 2 GiB readvs: peak", ours.0, stock.0);
        row("  the same links closed: resident", ours.1, stock.1);
        summary.push(("ours.readv_closed_mib".into(), ours.1));
        summary.push(("stock.readv_closed_mib".into(), stock.1));
    }
    println!("\nload average: {}", bench::load_average());
    for (key, value) in summary {
        bench::summary(&format!("server_storm.{key}"), value);
    }
}
