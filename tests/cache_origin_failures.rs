//! Our cache (`examples/xcache.rs`, in-process) when its stock xrootd
//! 5.5.3 origin fails:
//!
//! - the origin dies with requests in flight (frozen with SIGSTOP so that
//!   the requests are surely unanswered, then killed): the client's reads
//!   (including one that waited for another's fill) fail with
//!   `kXR_IOError`, promptly, and nothing is cached for them;
//!   once the origin is back on its port, the same reads through the same
//!   client handle give the right bytes, which a restarted cache then serves
//!   from disk;
//! - the origin's pages arrive spoiled (xroot-testkit/src/corrupt_proxy.rs
//!   between cache and origin flips a data byte, keeping the page's
//!   crc32c): one bad page is found by the cache's origin client and
//!   fetched again with `kXR_pgRetry`, the client gets the right bytes and
//!   the right bytes are cached; pages bad on every try fail the client's
//!   read, nothing is cached, and the same read succeeds, fetched again,
//!   once the pages arrive intact.
//!
//! The corrupt-page reads are single-run client reads (under the cache's
//! 1 MiB `io_size`, at aligned and unaligned offsets): the cache fetches a
//! single run with `kXR_pgread`, whose pages carry crc32c. Several runs go
//! to a stock origin as one `kXR_readv`, which carries no checksum, so a
//! spoiled byte there could not be detected by anyone (the stock origin
//! does not offer pgreadv); that is why these tests use single runs.

use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use xroot::client::{Client, Error, File, OpenFlags};
use xroot::proto::ErrorCode;
use xroot_testkit::corrupt_proxy::{CorruptProxy, Spoil};
use xroot_testkit::our_cache::{cli_args, content, RunningCache};
use xroot_testkit::stock::StockServer;
use xroot_tools::xcache;

const SIZE: usize = (2 << 20) + 555;
/// A hang guard, far above what any step takes.
const GUARD: Duration = Duration::from_secs(60);

async fn start_cache(origin_port: u16, dir: &std::path::Path) -> RunningCache {
    let cli = xcache::Cli::try_parse_from(cli_args(origin_port, dir)).unwrap();
    RunningCache::serve(xcache::start(&cli).await.unwrap())
}

async fn open(cache: &RunningCache, path: &str) -> File {
    Client::new()
        .open(&format!("{}//{path}", cache.url()), OpenFlags::READ)
        .await
        .unwrap()
}

/// `f.read_at(offset, len)` under the hang guard.
async fn read(f: &File, offset: u64, len: usize) -> Result<Bytes, Error> {
    tokio::time::timeout(GUARD, f.read_at(offset, len))
        .await
        .expect("hang guard")
}

fn assert_right(got: &[u8], want: &[u8], offset: u64, what: &str) {
    let o = offset as usize;
    assert!(got == &want[o..o + got.len()], "{what}: bytes differ");
    assert!(!got.is_empty(), "{what}: no bytes");
}

fn assert_io_error(result: Result<impl std::fmt::Debug, Error>, what: &str) {
    match result {
        Err(Error::Server { code, .. }) if code == ErrorCode::IO_ERROR => {}
        other => panic!("{what}: expected kXR_IOError, got {other:?}"),
    }
}

/// A one-run read (pgread to the origin) and a vector read of runs far
/// apart (readv to the origin).
const ONE_RUN: (u64, usize) = (300_000, 700_000);
fn scattered() -> Vec<(u64, usize)> {
    (0..20).map(|i| (1_100_000 + i * 50_000, 3000)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn an_origin_dying_mid_request_fails_the_read_and_caches_nothing() {
    let data = tempfile::tempdir().unwrap();
    let want = content(7, SIZE);
    std::fs::write(data.path().join("f.bin"), &want).unwrap();
    let Some(mut origin) = StockServer::start(data.path(), &[]) else {
        return;
    };
    let port = origin.port;
    let store = tempfile::tempdir().unwrap();
    let cache = start_cache(port, store.path()).await;
    let f = std::sync::Arc::new(open(&cache, "f.bin").await);
    assert_right(&read(&f, 0, 100_000).await.unwrap(), &want, 0, "warm-up");
    // a reader has its data before its fill's store write ends: let it land
    cache.fs.flush_all().await.unwrap();
    let before = cache.fs.stats();

    // the origin stops answering, two fills go out, the origin dies
    origin.freeze();
    let one = tokio::spawn({
        let f = f.clone();
        async move { read(&f, ONE_RUN.0, ONE_RUN.1).await }
    });
    // a second reader of the same blocks waits for the first one's fill
    let same = tokio::spawn({
        let f = f.clone();
        async move { read(&f, ONE_RUN.0 + 4096, 8192).await }
    });
    let vector = tokio::spawn({
        let f = f.clone();
        async move { tokio::time::timeout(GUARD, f.readv(&scattered())).await }
    });
    tokio::time::timeout(GUARD, async {
        while cache.fs.stats().origin_requests.current < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("two origin requests in flight");
    origin.kill();
    assert_io_error(one.await.unwrap(), "the one-run read");
    assert_io_error(same.await.unwrap(), "the read waiting for the same blocks");
    assert_io_error(
        vector.await.unwrap().expect("hang guard"),
        "the vector read",
    );
    let failed = cache.fs.stats();
    assert_eq!(failed.bytes_fetched, before.bytes_fetched, "{failed}");
    assert_eq!(failed.block_writes, before.block_writes, "{failed}");

    // the origin is back where it was: the same handle reads right bytes
    let _origin = StockServer::start_on(port, data.path(), &[]).unwrap();
    let got = read(&f, ONE_RUN.0, ONE_RUN.1).await.unwrap();
    assert_right(&got, &want, ONE_RUN.0, "the one-run read, origin back");
    let got = tokio::time::timeout(GUARD, f.readv(&scattered()))
        .await
        .expect("hang guard")
        .unwrap();
    for (&(o, _), d) in scattered().iter().zip(&got) {
        assert_right(d, &want, o, "the vector read, origin back");
    }
    let back = cache.fs.stats();
    assert_eq!(
        back.origin_request_count,
        failed.origin_request_count + 2,
        "{back}"
    );
    f.close().await.unwrap();
    cache.stop().await;

    // what was cached is right
    let cache = start_cache(port, store.path()).await;
    let f = open(&cache, "f.bin").await;
    for (o, l) in [(0, 100_000), ONE_RUN] {
        assert_right(&read(&f, o, l).await.unwrap(), &want, o, "from disk");
    }
    let got = f.readv(&scattered()).await.unwrap();
    for (&(o, _), d) in scattered().iter().zip(&got) {
        assert_right(d, &want, o, "the vector read from disk");
    }
    assert_eq!(cache.fs.stats().origin_request_count, 0);
    f.close().await.unwrap();
    cache.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn corrupted_origin_pages_are_refetched_and_never_cached() {
    let data = tempfile::tempdir().unwrap();
    let want = content(8, SIZE);
    std::fs::write(data.path().join("g.bin"), &want).unwrap();
    let Some(origin) = StockServer::start(data.path(), &[]) else {
        return;
    };
    let proxy = CorruptProxy::start(origin.port, Spoil::Nothing).await;
    let store = tempfile::tempdir().unwrap();
    let cache = start_cache(proxy.port, store.path()).await;
    let f = open(&cache, "g.bin").await;
    // block aligned, and not
    let (a, b) = ((40_960, 300_000), (1_000_003, 200_000));

    // one spoiled page: found, fetched again, right bytes
    proxy.set_spoil(Spoil::FirstPgread);
    let got = read(&f, a.0, a.1).await.unwrap();
    assert_right(&got, &want, a.0, "one spoiled page");
    assert_eq!(proxy.spoiled(), 1);
    assert!(
        proxy.pgread_retries() >= 1,
        "the page was not fetched again"
    );

    // every try spoiled: the read fails and nothing is cached
    proxy.set_spoil(Spoil::EveryPgread);
    assert_io_error(read(&f, b.0, b.1).await, "every page spoiled");
    let failed = cache.fs.stats();
    proxy.set_spoil(Spoil::Nothing);
    let got = read(&f, b.0, b.1).await.unwrap();
    assert_right(&got, &want, b.0, "intact again");
    let again = cache.fs.stats();
    assert_eq!(
        again.origin_request_count,
        failed.origin_request_count + 1,
        "fetched again\n{again}"
    );
    assert!(
        again.bytes_fetched >= failed.bytes_fetched + b.1 as u64,
        "{again}"
    );
    f.close().await.unwrap();
    cache.stop().await;

    // what was cached is right, served without the origin
    let spoiled = proxy.spoiled();
    let cache = start_cache(proxy.port, store.path()).await;
    let f = open(&cache, "g.bin").await;
    for (o, l) in [a, b] {
        assert_right(&read(&f, o, l).await.unwrap(), &want, o, "from disk");
    }
    assert_eq!(cache.fs.stats().origin_request_count, 0);
    assert_eq!(proxy.spoiled(), spoiled);
    f.close().await.unwrap();
    cache.stop().await;
}
