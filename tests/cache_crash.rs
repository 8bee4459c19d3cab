//! kill -9 of our cache (the `xcache` example as a process) while it fills
//! blocks from a stock xrootd 5.5.3 origin 50 ms of round trip away (a
//! delay proxy), then a restart on the same cache directory: every byte
//! then read through it equals the origin's, whatever the fill was doing
//! when the process died (data written, bits in memory or in the sidecar,
//! a sidecar being replaced). Twenty iterations, each on a fresh cold file,
//! each killing at a different point: after a number of sequential reads
//! that varies with the iteration, with the next read and a scattered
//! vector read in flight and a pause of 0 to 60 ms (within one origin round
//! trip) before the kill. At the end, a graceful stop while a client holds
//! a freshly filled file open, a restart and a read of every file, which
//! must not send one request to the origin (every block cached and valid).

use std::time::Duration;

use bytes::Bytes;
use xroot::client::{Client, OpenFlags};
use xroot_testkit::delay_proxy::DelayProxy;
use xroot_testkit::our_cache::{content, CacheProcess};
use xroot_testkit::stock::StockServer;

/// A file of a few MB with a partial last block.
const SIZE: usize = (3 << 20) + 4321;
/// The sequential reads of the cold phase.
const CHUNK: usize = 128 << 10;
const ITERATIONS: u64 = 20;
/// A hang guard for one read, far above what it takes.
const GUARD: Duration = Duration::from_secs(120);

fn name(i: u64) -> String {
    format!("f{i:02}.bin")
}

/// Reads all of `path` through the cache at `url` with a new client
/// session, closing the file after.
async fn read_all(url: &str, path: &str) -> Bytes {
    let client = Client::new();
    let f = client
        .open(&format!("{url}//{path}"), OpenFlags::READ)
        .await
        .unwrap_or_else(|e| panic!("open {path}: {e}"));
    let data = tokio::time::timeout(GUARD, f.read_at(0, SIZE))
        .await
        .expect("hang guard")
        .unwrap_or_else(|e| panic!("read {path}: {e}"));
    f.close().await.unwrap();
    data
}

/// 64 elements of 6000 bytes spread over the file, shifted per iteration.
fn scattered(i: u64) -> Vec<(u64, usize)> {
    let step = (SIZE as u64 - 6000) / 64;
    (0..64).map(|j| (j * step + i * 977, 6000)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn killing_the_cache_mid_fill_never_serves_wrong_bytes() {
    let data = tempfile::tempdir().unwrap();
    // one more file than iterations: the last one is open during the
    // graceful stop
    let files: Vec<Vec<u8>> = (0..=ITERATIONS).map(|i| content(100 + i, SIZE)).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(data.path().join(name(i as u64)), f).unwrap();
    }
    let Some(origin) = StockServer::start(data.path(), &[]) else {
        return;
    };
    let proxy = DelayProxy::start(origin.port, Duration::from_millis(25)).await;
    let origin_url = format!("root://127.0.0.1:{}", proxy.port);
    let store = tempfile::tempdir().unwrap();
    let mut cache = CacheProcess::start(&origin_url, store.path(), &[]);
    // iterations whose kill cut a read in flight (at least those that kill
    // at once: a read takes an origin round trip)
    let mut interrupted = 0;

    for i in 0..ITERATIONS {
        let path = name(i);
        let want = &files[i as usize];
        // the cold phase: k sequential reads, then two reads in flight
        let client = Client::new();
        let f = client
            .open(&format!("{}//{path}", cache.url()), OpenFlags::READ)
            .await
            .unwrap();
        let k = (i * 7 % 12) as usize;
        for c in 0..k {
            let got = tokio::time::timeout(GUARD, f.read_at((c * CHUNK) as u64, CHUNK))
                .await
                .expect("hang guard")
                .unwrap();
            assert!(
                got[..] == want[c * CHUNK..(c + 1) * CHUNK],
                "{path} chunk {c}"
            );
        }
        let f = std::sync::Arc::new(f);
        let next = tokio::spawn({
            let f = f.clone();
            async move { f.read_at((k * CHUNK) as u64, CHUNK).await }
        });
        let vector = tokio::spawn({
            let f = f.clone();
            async move { f.readv(&scattered(i)).await }
        });
        tokio::time::sleep(Duration::from_millis(i % 5 * 15)).await;
        cache.kill9();
        // the reads in flight fail or succeed; if they succeed, right
        match tokio::time::timeout(GUARD, next).await.expect("hang guard") {
            Ok(Ok(got)) => {
                assert!(
                    got[..] == want[k * CHUNK..(k + 1) * CHUNK],
                    "{path} in flight"
                )
            }
            _ => interrupted += 1,
        }
        match tokio::time::timeout(GUARD, vector)
            .await
            .expect("hang guard")
        {
            Ok(Ok(got)) => {
                for (&(o, l), d) in scattered(i).iter().zip(&got) {
                    assert!(d[..] == want[o as usize..o as usize + l], "{path} readv");
                }
            }
            _ => interrupted += 1,
        }
        drop((f, client));

        cache = CacheProcess::start(&origin_url, store.path(), &[]);
        let got = read_all(&cache.url(), &path).await;
        assert!(got[..] == want[..], "{path} after kill -9 at iteration {i}");
    }

    assert!(interrupted >= 1, "no kill cut a read in flight");

    // a graceful restart, with a client reading a file (cold) still
    // connected and holding it open: everything is on disk, valid, and
    // served without the origin
    let client = Client::new();
    let last = name(ITERATIONS);
    let f = client
        .open(&format!("{}//{last}", cache.url()), OpenFlags::READ)
        .await
        .unwrap();
    let got = f.read_at(0, SIZE).await.unwrap();
    assert!(got[..] == files[ITERATIONS as usize][..], "{last}");
    cache.stop();
    drop((f, client));
    let cache = CacheProcess::start(&origin_url, store.path(), &[]);
    for (i, want) in files.iter().enumerate() {
        let got = read_all(&cache.url(), &name(i as u64)).await;
        assert!(got[..] == want[..], "{} warm", name(i as u64));
    }
    let table = cache.stop();
    assert!(
        table.contains("origin requests            0 sent"),
        "{table}"
    );
}
