//! xroot-cache's origin layer against live servers: `read_runs` of
//! `xroot_client::File` sends ONE request per plan — a pgread for one run, a
//! readv for many against the stock xrootd 5.5.3, a pgreadv for many
//! against our server (which advertises the extension) — counted on the
//! wire by a relay (xroot-testkit/src/corrupt_proxy.rs) and equal to what
//! `Fetched::requests` says; every byte equals the file; errors keep the
//! origin's code. A file's first read costs one round trip: the
//! connection's `kXR_Qconfig` goes out with its pgread, not before it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use xroot::cache::origin::{Origin, OriginError, OriginFs, RemoteOrigin};
use xroot::client::Client;
use xroot::proto::page::crc32c;
use xroot::proto::{ErrorCode, RequestId};
use xroot::server::{Config, FsError, LocalFs, Server};
use xroot_testkit::corrupt_proxy::{CorruptProxy, Spoil};
use xroot_testkit::delay_proxy::DelayProxy;
use xroot_testkit::stock::StockServer;

/// 16 MiB and a partial last block.
const SIZE: usize = (16 << 20) + 1234;

/// A directory holding `f.bin` (SIZE content bytes) and `sub/g.bin` (a
/// small file), and the content of `f.bin`.
fn populate() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let data = xroot_testkit::our_cache::content(0, SIZE);
    std::fs::write(dir.path().join("f.bin"), &data).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/g.bin"), &data[..10_000]).unwrap();
    (dir, data)
}

/// 300 runs of whole 4 kB blocks scattered over the file, ascending and
/// disjoint, the last one the partial block at end of file: what a cache's
/// plan asks for a cold file.
fn scattered() -> Vec<(u64, usize)> {
    let step = (SIZE as u64 / 300) / 4096 * 4096;
    let mut runs: Vec<(u64, usize)> = (0..299u64)
        .map(|i| (i * step, 4096 * (1 + i as usize % 3)))
        .collect();
    let last = SIZE as u64 / 4096 * 4096;
    runs.push((last, SIZE - last as usize));
    runs
}

/// Asserts every run's data equals the file's bytes there.
fn assert_bytes(runs: &[(u64, usize)], got: &[bytes::Bytes], data: &[u8]) {
    assert_eq!(got.len(), runs.len());
    for (&(o, l), d) in runs.iter().zip(got) {
        assert!(
            d[..] == data[o as usize..o as usize + l],
            "run ({o}, {l}) differs"
        );
    }
}

fn code(e: OriginError) -> ErrorCode {
    match FsError::from(e) {
        FsError::Error { code, .. } => code,
        other => panic!("{other:?}"),
    }
}

/// The size and mtime of `path` on disk, as the origin's stat should say.
fn stat_of(path: &Path) -> (u64, i64) {
    let md = std::fs::metadata(path).unwrap();
    (md.len(), md.mtime())
}

/// The checks every origin passes: stat, one run by pgread, a missing file.
/// Returns the open file.
async fn common(
    origin: &RemoteOrigin,
    relay: &CorruptProxy,
    dir: &Path,
    data: &[u8],
) -> impl Origin {
    let f = origin.open("/f.bin").await.unwrap();
    let st = Origin::stat(&f).await.unwrap();
    assert_eq!((st.size, st.mtime), stat_of(&dir.join("f.bin")));

    let one = [(4096 * 7, 1 << 20)];
    let got = f.read_runs(&one).await.unwrap();
    assert_eq!((got.requests, got.checksummed), (1, true), "one pgread");
    assert_eq!(relay.requests(RequestId::PGREAD), 1);
    assert_bytes(&one, &got.data, data);
    let eof = [(SIZE as u64 - 1234, 1234)];
    let got = f.read_runs(&eof).await.unwrap();
    assert_bytes(&eof, &got.data, data);
    assert_eq!(relay.requests(RequestId::PGREAD), 2);
    // the block runs of one long read (cut at io_size): one pgread
    let joined = [(0, 1 << 20), (1 << 20, 1 << 20), (2 << 20, 4096)];
    let got = f.read_runs(&joined).await.unwrap();
    assert_eq!((got.requests, got.checksummed), (1, true), "one pgread");
    assert_eq!(relay.requests(RequestId::PGREAD), 3);
    assert_bytes(&joined, &got.data, data);

    let missing = origin.open("/no/such.bin").await.unwrap_err();
    assert!(matches!(missing, OriginError::Client { .. }), "{missing:?}");
    assert_eq!(code(missing), ErrorCode::NOT_FOUND);
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn stock_origin_pgread_one_run_readv_many() {
    let (dir, data) = populate();
    let Some(server) = StockServer::start(dir.path(), &[]) else {
        return;
    };
    let relay = CorruptProxy::start(server.port, Spoil::Nothing).await;
    let base = format!("root://127.0.0.1:{}", relay.port);
    let origin = RemoteOrigin::new(Client::new(), &base).unwrap();
    let f = common(&origin, &relay, dir.path(), &data).await;

    let runs = scattered();
    let got = f.read_runs(&runs).await.unwrap();
    assert_eq!((got.requests, got.checksummed), (1, false), "one readv");
    assert_eq!(relay.requests(RequestId::READV), 1);
    assert_eq!(relay.requests(RequestId::PGREADV), 0);
    assert_bytes(&runs, &got.data, &data);
    // a run past the end: the stock readv fails the whole call
    let past = f.read_runs(&[(0, 10), (SIZE as u64 - 10, 20)]).await;
    assert_eq!(code(past.unwrap_err()), ErrorCode::FS_ERROR);

    // namespace calls go through
    assert_eq!(origin.stat("/f.bin").await.unwrap().size, SIZE as u64);
    let names: Vec<String> = origin
        .dirlist("/", false)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.contains(&"f.bin".to_string()), "{names:?}");
    let sum = origin.checksum("/f.bin", Some("crc32c")).await.unwrap();
    assert_eq!(sum.value, format!("{:08x}", crc32c(&data)).as_bytes());
    Origin::close(&f).await.unwrap();
}

/// The first read of a file just opened on a new connection (a cold
/// cache's first fill) is one round trip to the stock origin: the
/// connection's `kXR_Qconfig` (for the request counts) is sent with the
/// pgread, in the same wave, not a round trip before it; the next read
/// asks no query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn stock_origin_first_read_is_one_round_trip() {
    let (dir, data) = populate();
    let Some(server) = StockServer::start(dir.path(), &[]) else {
        return;
    };
    let relay = DelayProxy::start(server.port, std::time::Duration::from_millis(5)).await;
    let base = format!("root://127.0.0.1:{}", relay.port);
    let origin = RemoteOrigin::new(Client::new(), &base).unwrap();
    let f = origin.open("/f.bin").await.unwrap();
    let before = relay.traffic();
    let runs = [(0u64, 1 << 20), (1 << 20, 1 << 20)];
    let got = f.read_runs(&runs).await.unwrap();
    assert_bytes(&runs, &got.data, &data);
    assert_eq!((got.requests, got.checksummed), (1, true), "one pgread");
    let first = relay.traffic().since(&before);
    assert_eq!(first.round_trips, 1, "{}", first.waves_text());
    assert_eq!(
        (
            first.count(RequestId::PGREAD),
            first.count(RequestId::QUERY)
        ),
        (1, 1),
        "{}",
        first.waves_text()
    );
    let before = relay.traffic();
    f.read_runs(&[(4 << 20, 4096)]).await.unwrap();
    let next = relay.traffic().since(&before);
    assert_eq!((next.round_trips, next.count(RequestId::QUERY)), (1, 0));
    Origin::close(&f).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_server_origin_pgreadv_many() {
    let (dir, data) = populate();
    let server = Server::bind(
        "127.0.0.1:0",
        LocalFs::new(dir.path()).unwrap(),
        Config::default(),
    )
    .await
    .unwrap();
    let port = server.local_addr().port();
    let handle = server.handle();
    tokio::spawn(server.serve());
    let relay = CorruptProxy::start(port, Spoil::Nothing).await;
    let base = format!("root://127.0.0.1:{}", relay.port);
    let origin = RemoteOrigin::new(Client::new(), &base).unwrap();
    let f = common(&origin, &relay, dir.path(), &data).await;

    let runs = scattered();
    let got = f.read_runs(&runs).await.unwrap();
    assert_eq!((got.requests, got.checksummed), (1, true), "one pgreadv");
    assert_eq!(relay.requests(RequestId::PGREADV), 1);
    assert_eq!(relay.requests(RequestId::READV), 0);
    assert_bytes(&runs, &got.data, &data);
    // a run past the end: pgreadv answers it short, which read_runs refuses
    let past = f.read_runs(&[(0, 10), (SIZE as u64 - 10, 20)]).await;
    assert!(
        matches!(
            past,
            Err(OriginError::Short { offset, expected: 20, got: 10 }) if offset == SIZE as u64 - 10
        ),
        "{past:?}"
    );
    Origin::close(&f).await.unwrap();

    // a base path: files below it
    let sub = RemoteOrigin::new(Client::new(), &format!("{base}//sub")).unwrap();
    let g = sub.open("/g.bin").await.unwrap();
    let got = g.read_runs(&[(0, 10_000)]).await.unwrap();
    assert_eq!(&got.data[0][..], &data[..10_000]);
    handle.shutdown();
}
