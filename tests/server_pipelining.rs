//! Requests pipelined on one link as uproot and coffea send them: reads,
//! pgreads, vector reads and writes on one handle, then its `kXR_close`,
//! all in one write, without waiting for any answer. Every request must be
//! answered as if they had run one after the other in arrival order: no
//! read fails because the close overtook it, no write is lost, and every
//! answer equals the stock xrootd's for the same requests on the same
//! directory. The same through our cache (`CacheFs`), read-only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use xroot::cache::origin::RemoteOrigin;
use xroot::cache::{CacheConfig, CacheFs, Store};
use xroot::client::Client;
use xroot::proto::request::{Close, OpenOptions, Pgread, Read, Request, Write};
use xroot::proto::response::{PgReadFrame, ReadvIter, Response};
use xroot::proto::{ErrorCode, FHandle, StreamId};
use xroot::server::LocalFs;

use xroot_testkit::our_cache::content;
use xroot_testkit::ours::serve;
use xroot_testkit::raw::{readv_request, Raw};
use xroot_testkit::stock::StockServer;

/// Size of each test file.
const SIZE: usize = 300_000;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One pipelined request on the file.
#[derive(Debug, Clone)]
enum Op {
    Read(u64, usize),
    Pgread(u64, usize),
    Readv(Vec<(u64, usize)>),
    Write(u64, Bytes),
}

/// `n` requests on a file of `SIZE` bytes, writes only if `writes`; reads
/// and writes may start past the end of file (a write there leaves zeros
/// between). With `late_writes` false, no write reaches past the start of
/// a read sent before it (overlaps it, or moves the end of file into or
/// past it): the stock server runs reads asynchronously and writes in
/// line, so a later write can land before an earlier read of the same
/// bytes (seen: a pipelined read answered with the data of a write sent
/// after it); ours keeps arrival order there too.
fn scenario(rng: &mut Rng, n: usize, writes: bool, late_writes: bool) -> Vec<Op> {
    let mut ops: Vec<Op> = Vec::new();
    while ops.len() < n {
        let at = rng.below(SIZE as u64 + 100_000);
        let len = 1 + rng.below(70_000) as usize;
        let op = match rng.below(if writes { 4 } else { 3 }) {
            0 => Op::Read(at, len),
            1 => Op::Pgread(at, len),
            2 => Op::Readv(
                (0..1 + rng.below(8))
                    .map(|_| {
                        let len = 1 + rng.below(20_000) as usize;
                        (rng.below((SIZE - len) as u64), len)
                    })
                    .collect(),
            ),
            _ => Op::Write(at, Bytes::from(content(rng.next(), len))),
        };
        if let Op::Write(at, data) = &op {
            let end = at + data.len() as u64;
            let hits = |s: u64, _: usize| s < end;
            let war = ops.iter().any(|o| match o {
                Op::Read(s, l) | Op::Pgread(s, l) => hits(*s, *l),
                Op::Readv(list) => list.iter().any(|&(s, l)| hits(s, l)),
                Op::Write(..) => false,
            });
            if war && !late_writes {
                continue;
            }
        }
        ops.push(op);
    }
    ops
}

/// What a request was answered, reduced to what must match: the data (or
/// `ok` for a write or close) or the error code.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Data(Vec<u8>),
    Ok,
    Error(ErrorCode),
}

/// What each request must be answered if they run in arrival order on a
/// file holding `file`; `file` ends as it must be after them.
fn model(ops: &[Op], file: &mut Vec<u8>) -> Vec<Answer> {
    let read = |file: &Vec<u8>, at: u64, len: usize| {
        let at = (at as usize).min(file.len());
        file[at..(at + len).min(file.len())].to_vec()
    };
    let mut out: Vec<Answer> = ops
        .iter()
        .map(|op| match op {
            Op::Read(at, len) | Op::Pgread(at, len) => Answer::Data(read(file, *at, *len)),
            Op::Readv(list) => Answer::Data(
                list.iter()
                    .flat_map(|&(at, len)| read(file, at, len))
                    .collect(),
            ),
            Op::Write(at, data) => {
                let end = *at as usize + data.len();
                if file.len() < end {
                    file.resize(end, 0);
                }
                file[*at as usize..end].copy_from_slice(data);
                Answer::Ok
            }
        })
        .collect();
    out.push(Answer::Ok); // the close
    out
}

/// The frames of every op, then a close of `fh`, streamids 100, 101, ….
fn frames(ops: &[Op], fh: FHandle) -> BytesMut {
    let mut wire = BytesMut::new();
    let requests = ops.iter().map(|op| match op {
        Op::Read(at, len) => Request::from(Read {
            fhandle: fh,
            offset: *at as i64,
            rlen: *len as i32,
            args: None,
        }),
        Op::Pgread(at, len) => Request::from(Pgread {
            fhandle: fh,
            offset: *at as i64,
            rlen: *len as i32,
            args: None,
        }),
        Op::Readv(list) => Request::from(readv_request(fh, list.iter().copied())),
        Op::Write(at, data) => Request::from(Write {
            fhandle: fh,
            offset: *at as i64,
            pathid: 0,
            data: data.clone(),
        }),
    });
    let close = Request::from(Close { fhandle: fh });
    for (i, r) in requests.chain([close]).enumerate() {
        r.encode(StreamId::from_u16(100 + i as u16), &mut wire);
    }
    wire
}

/// Sends `ops` and a close on `path` (opened for update when `writes`)
/// in one write; collects every answer, in request order.
async fn run(addr: SocketAddr, path: &str, ops: &[Op], writes: bool) -> Vec<Answer> {
    let (mut raw, _) = Raw::login(addr).await;
    let options = match writes {
        true => OpenOptions::UPDATE,
        false => OpenOptions::READ,
    };
    let fh = raw.open_with(path, options).await;
    raw.write(&frames(ops, fh)).await;
    let mut data: HashMap<u16, Vec<u8>> = HashMap::new();
    let mut answers: HashMap<u16, Answer> = HashMap::new();
    while answers.len() < ops.len() + 1 {
        let (sid, r) = raw.expect().await;
        let sid = u16::from_be_bytes(sid.0);
        let buf = data.entry(sid).or_default();
        let is_readv = matches!(ops.get((sid - 100) as usize), Some(Op::Readv(_)));
        let mut take = |body: &Bytes| match is_readv {
            true => {
                for e in ReadvIter::new(body.clone()) {
                    buf.extend_from_slice(&e.unwrap().1);
                }
            }
            false => buf.extend_from_slice(body),
        };
        let done = match r {
            Response::OkSoFar(b) => {
                take(&b);
                None
            }
            Response::Ok(b) => {
                take(&b);
                let body = std::mem::take(buf);
                Some(match &ops.get((sid - 100) as usize) {
                    Some(Op::Write(..)) | None => Answer::Ok,
                    _ => Answer::Data(body),
                })
            }
            Response::Status(s) => {
                let frame = PgReadFrame::from_status(&s).unwrap();
                for page in frame.pages() {
                    let page = page.unwrap();
                    assert!(page.is_valid(), "page crc");
                    buf.extend_from_slice(&page.data);
                }
                frame.is_final().then(|| Answer::Data(std::mem::take(buf)))
            }
            Response::Error(e) => Some(Answer::Error(e.code)),
            other => panic!("unexpected answer to {sid}: {other:?}"),
        };
        if let Some(a) = done {
            assert!(answers.insert(sid, a).is_none(), "two answers to {sid}");
        }
    }
    (0..=ops.len())
        .map(|i| answers.remove(&(100 + i as u16)).unwrap())
        .collect()
}

/// What differs between an answer `got` and the one wanted, briefly.
fn gist(got: &Answer, want: &Answer) -> String {
    match (got, want) {
        (Answer::Data(g), Answer::Data(w)) => {
            let at = g.iter().zip(w).position(|(a, b)| a != b);
            format!(
                "{} bytes where {} were due, first difference at {at:?}",
                g.len(),
                w.len()
            )
        }
        (Answer::Data(g), w) => format!("{} bytes where {w:?} was due", g.len()),
        (g, Answer::Data(w)) => format!("{g:?} where {} bytes were due", w.len()),
        (g, w) => format!("{g:?} where {w:?} was due"),
    }
}

/// A request, briefly.
fn gist_op(op: Option<&Op>) -> String {
    match op {
        None => "close".into(),
        Some(Op::Read(at, len)) => format!("read {len}@{at}"),
        Some(Op::Pgread(at, len)) => format!("pgread {len}@{at}"),
        Some(Op::Readv(list)) => format!("readv {list:?}"),
        Some(Op::Write(at, d)) => format!("write {}@{at}", d.len()),
    }
}

/// Repetitions of random scenarios of 1 to 24 requests then a close, each
/// on a fresh copy of the file on `servers`: every answer as in arrival
/// order, the file as every write left it, and so every server alike.
/// Without `writes`, only reads, on a handle opened for reading (which our
/// server answers with `sendfile` where it can).
async fn reads_and_writes_then_close(
    dir: &Path,
    servers: &[(&str, SocketAddr)],
    seed: u64,
    writes: bool,
    late_writes: bool,
) {
    let mut rng = Rng(seed);
    for rep in 0..40 {
        let n = 1 + rng.below(24) as usize;
        let ops = scenario(&mut rng, n, writes, late_writes);
        let original = content(rep, SIZE);
        let mut file = original.clone();
        let want = model(&ops, &mut file);
        for &(name, addr) in servers {
            let path = format!("/{name}-{rep}.bin");
            let at = dir.join(&path[1..]);
            std::fs::write(&at, &original).unwrap();
            // the stock server runs as another user when the tests run as root
            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o666)).unwrap();
            let got = run(addr, &path, &ops, writes).await;
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    g == w,
                    "{name}, repetition {rep}, request {i}: {} for {}; the requests: {}",
                    gist(g, w),
                    gist_op(ops.get(i)),
                    ops.iter()
                        .map(|o| gist_op(Some(o)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            let written = std::fs::read(dir.join(&path[1..])).unwrap();
            assert!(written == file, "{name}, repetition {rep}: writes lost");
        }
    }
}

/// The random scenarios of [`reads_and_writes_then_close`] on `servers`,
/// all serving `dir`: with writes, then on read-only handles (what our
/// server sends from the page cache).
async fn pipelined_scenarios(dir: &Path, servers: &[(&str, SocketAddr)]) {
    reads_and_writes_then_close(dir, servers, 0x9e37_79b9_7f4a_7c15, true, false).await;
    reads_and_writes_then_close(dir, servers, 0x2545_f491_4f6c_dd1d, false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_then_close_answer_as_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let ours = serve(LocalFs::new(dir.path()).unwrap()).await;
    pipelined_scenarios(dir.path(), &[("ours", ours)]).await;
}

/// The same scenarios on ours and on the stock server, both serving one
/// directory: every answer as the model's, so the two alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn pipelined_requests_then_close_answer_as_the_stock_server_does() {
    let dir = tempfile::tempdir().unwrap();
    let ours = serve(LocalFs::new(dir.path()).unwrap()).await;
    let Some(server) = StockServer::start(dir.path(), &[]) else {
        return;
    };
    let stock = SocketAddr::from(([127, 0, 0, 1], server.port));
    pipelined_scenarios(dir.path(), &[("ours", ours), ("stock", stock)]).await;
}

/// Ours keeps arrival order also where the stock server does not: a write
/// waits for the reads sent before it whose bytes or end of file it changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_for_the_earlier_reads_it_reaches_past() {
    let dir = tempfile::tempdir().unwrap();
    let ours = serve(LocalFs::new(dir.path()).unwrap()).await;
    reads_and_writes_then_close(
        dir.path(),
        &[("ours", ours)],
        0x5851_f42d_4c95_7f2d,
        true,
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_reads_then_close_through_the_cache() {
    let origin_dir = tempfile::tempdir().unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let origin = serve(LocalFs::new(origin_dir.path()).unwrap()).await;
    let remote = RemoteOrigin::new(Client::new(), &format!("root://{origin}")).unwrap();
    let store = Store::open(cache_dir.path()).unwrap();
    let cache = serve(CacheFs::new(remote, store, CacheConfig::default())).await;
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for rep in 0..30 {
        let n = 1 + rng.below(24) as usize;
        let ops = scenario(&mut rng, n, false, false);
        let mut file = content(1000 + rep, SIZE);
        std::fs::write(origin_dir.path().join(format!("c{rep}.bin")), &file).unwrap();
        let want = model(&ops, &mut file);
        // twice: cold, then (partly) warm
        for pass in ["cold", "warm"] {
            let got = run(cache, &format!("/c{rep}.bin"), &ops, false).await;
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    g == w,
                    "{pass} pass, repetition {rep}, request {i}: {}",
                    gist(g, w)
                );
            }
        }
    }
}

/// A read larger than the link's budget, then a write of the same bytes as
/// large as the budget, pipelined (the stock Python client's async calls,
/// seen to hang): the write waits for the read, whose answer must still
/// get the budget it streams in; both complete, the read with the old
/// bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_sized_write_after_a_larger_read_of_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let old = content(7, 64 << 20);
    std::fs::write(dir.path().join("big.bin"), &old).unwrap();
    let ours = serve(LocalFs::new(dir.path()).unwrap()).await;
    let new = Bytes::from(vec![0x5a; 16 << 20]);
    let ops = [Op::Read(0, 64 << 20), Op::Write(0, new.clone())];
    let got = run(ours, "/big.bin", &ops, true).await;
    assert!(
        got[0] == Answer::Data(old.clone()),
        "the read: {}",
        gist(&got[0], &Answer::Data(old))
    );
    assert_eq!(&got[1..], [Answer::Ok, Answer::Ok]);
    let file = std::fs::read(dir.path().join("big.bin")).unwrap();
    assert!(file[..16 << 20] == new[..], "the write landed");
}
