//! The largest vector read a client may send — 1024 elements of 2,097,136
//! bytes, exactly 2^31 bytes with their 16-byte headers — through
//! `CacheFs`: answered whole and right, with origin requests a stock
//! xrootd 5.5.3 accepts (do_ReadV refuses a request whose lengths plus
//! headers exceed 0x7fffffff, so this read needs two).
//!
//! The origin file is sparse (2 GiB that cost no disk) with a marker
//! written every MiB; the cache stores 2 GiB of blocks in a temporary
//! directory. One call holds the whole answer (2 GiB) in memory: the test
//! has a binary of its own, so nothing runs beside it.

mod support;

use std::os::unix::fs::FileExt;

use support::{open, Setup};
use xroot_cache::CacheConfig;
use xroot_server::File;

/// `maxRVdsz`: the largest readv element.
const ELEMENT: usize = 2_097_136;
/// `maxRvecsz`: the most readv elements.
const ELEMENTS: usize = 1024;
/// A stock origin's limit on lengths plus 16 bytes per element.
const STOCK_TOTAL: u64 = 0x7fff_ffff;

/// The marker at `offset`: its own offset, little-endian.
fn marker(offset: u64) -> [u8; 8] {
    offset.to_le_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vector_read_of_exactly_2_gib_with_headers_is_answered() {
    let s = Setup::new(0);
    let size = (ELEMENTS * ELEMENT) as u64;
    let path = s.origin_dir.path().join("f.bin");
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(size).unwrap();
    let marks: Vec<u64> = (0..size).step_by(1 << 20).map(|o| o + 1000).collect();
    for &m in &marks {
        file.write_all_at(&marker(m), m).unwrap();
    }
    drop(file);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    let extents: Vec<(u64, usize)> = (0..ELEMENTS)
        .map(|i| ((i * ELEMENT) as u64, ELEMENT))
        .collect();
    assert_eq!(
        extents.iter().map(|e| e.1 as u64 + 16).sum::<u64>(),
        1 << 31
    );
    let data = f.readv(extents.clone()).await.unwrap();
    assert_eq!(data.len(), ELEMENTS);
    for ((offset, len), d) in extents.iter().zip(&data) {
        assert_eq!(d.len(), *len, "element at {offset}");
    }
    // every byte: the markers where written, zeros elsewhere
    let mut next = marks.iter().peekable();
    for (&(offset, _), d) in extents.iter().zip(&data) {
        let end = offset + d.len() as u64;
        let mut at = offset;
        while at < end {
            let m = next.peek().copied().copied().unwrap_or(u64::MAX);
            let stop = m.min(end);
            let zeros = &d[(at - offset) as usize..(stop - offset) as usize];
            assert!(zeros.iter().all(|&b| b == 0), "non-zero in [{at}, {stop})");
            if stop == end {
                break;
            }
            let here = (m - offset) as usize;
            assert_eq!(d[here..here + 8], marker(m), "marker at {m}");
            next.next();
            at = m + 8;
        }
    }
    drop(data);
    // the origin requests: within what a stock origin accepts
    let requests = s.probe.requests.lock().unwrap().clone();
    assert!(requests.len() >= 2, "2^31 needs two origin requests");
    for r in &requests {
        assert!(r.len() <= ELEMENTS, "{} elements", r.len());
        assert!(r.iter().all(|&(_, l)| l <= ELEMENT));
        let total: u64 = r.iter().map(|&(_, l)| l as u64 + 16).sum();
        assert!(total <= STOCK_TOTAL, "an origin request of {total} bytes");
    }
    let fetched: u64 = requests.iter().flatten().map(|&(_, l)| l as u64).sum();
    assert_eq!(fetched, size, "every block fetched once");
}
