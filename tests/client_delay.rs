//! Many vector reads in flight on one channel across a 50 ms round trip:
//! the stock xrootd behind the test's delay proxy
//! (xroot-testkit/src/delay_proxy.rs, 25 ms each way). K = 1, 4 and 8
//! concurrent `readv` of 64 × 16 kB each on one `File` (one channel, one
//! connection) all return the bytes on disk. The wall time of each K is
//! printed for the benchmark note; nothing is asserted about it.

use std::future::Future;
use std::time::{Duration, Instant};

use xroot::client::{Client, OpenFlags};
use xroot_testkit::delay_proxy::DelayProxy;
use xroot_testkit::stock::StockServer;

const ELEMENTS: usize = 64;
const ELEMENT_LEN: usize = 16 * 1024;
const FILE_LEN: usize = 9 << 20;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// Awaits `f`, failing the test if it takes more than 60 s (a hang).
async fn guard<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("hang: no answer within 60 s")
}

/// The ranges of vector read `r`: 64 scattered, unaligned 16 kB pieces,
/// different for every `r`.
fn ranges(r: usize) -> Vec<(u64, usize)> {
    (0..ELEMENTS)
        .map(|j| {
            let slot = (r * ELEMENTS + j) * 7919 % 512;
            ((slot * ELEMENT_LEN + r * 13) as u64, ELEMENT_LEN)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn concurrent_readv_on_one_channel_across_a_50_ms_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let content = pattern(FILE_LEN);
    std::fs::write(dir.path().join("v.bin"), &content).unwrap();
    let Some(server) = StockServer::start(dir.path(), &[]) else {
        return;
    };
    let proxy = DelayProxy::start(server.port, Duration::from_millis(25)).await;
    let client = Client::new();
    let url = format!("root://127.0.0.1:{}//v.bin", proxy.port);
    let f = guard(client.open(&url, OpenFlags::READ)).await.unwrap();
    // the server's readv limits are asked once; not part of the timings
    guard(f.readv(&[(0, 1)])).await.unwrap();

    for k in [1, 4, 8] {
        let lists: Vec<_> = (0..k).map(ranges).collect();
        let start = Instant::now();
        let answers = guard(futures::future::join_all(lists.iter().map(|l| f.readv(l)))).await;
        let took = start.elapsed();
        for (list, answer) in lists.iter().zip(answers) {
            let answer = answer.unwrap();
            assert_eq!(answer.len(), ELEMENTS);
            for (&(offset, len), data) in list.iter().zip(answer) {
                let at = offset as usize;
                assert_eq!(&data[..], &content[at..at + len], "{len} bytes at {offset}");
            }
        }
        eprintln!("K = {k}: {k} concurrent readv of {ELEMENTS} x 16 kB in {took:?}");
    }
    assert_eq!(client.channels().len(), 1, "one channel");
    assert_eq!(proxy.connections(), 1, "one connection");
    guard(f.close()).await.unwrap();
}
