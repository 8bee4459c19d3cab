//! `CacheFs` over a local origin whose reads the test can hold back: one
//! origin request per cold vector read, single flight for blocks another
//! reader is fetching, back-pressure from the RAM budget, a failed fill
//! caches nothing, a page spoiled on disk is fetched again, a changed origin
//! file is not served from the old copy, reads past end of file fail,
//! prefetch reads ahead without fetching a block twice, a read waiting
//! for read-ahead takes its data, read-ahead is
//! bounded and stops with its reader, and purge keeps the
//! files in use.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use support::{
    calls_reach, from_origin, open, read_first_block_ahead_held, readv, two_reads_in_flight, until,
    Setup, GUARD,
};
use xroot_cache::{CacheConfig, Geometry};
use xroot_proto::ErrorCode;
use xroot_server::{Caller, File, FileSystem, FsError, OpenMode};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_vector_read_is_one_origin_request_and_warm_is_none() {
    let s = Setup::new(8 << 20);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    // 1000 scattered extents, some straddling blocks, one ending at EOF.
    let mut extents: Vec<(u64, usize)> = (0..999u64).map(|i| (i * 8_321 + 77, 300)).collect();
    extents.push(((8 << 20) - 10, 10));
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    let st = fs.stats();
    assert_eq!((st.client_requests, st.origin_request_count), (1, 1));
    assert_eq!(st.origin_requests_per_client_request(), 1.0);
    // warm, once the fill is stored (a read before that takes the fill's
    // data): served from disk, no origin traffic
    fs.flush_all().await.unwrap();
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    let st = fs.stats();
    assert_eq!((st.client_requests, st.origin_request_count), (2, 1));
    assert_eq!(
        st.bytes_from_disk,
        extents.iter().map(|e| e.1 as u64).sum::<u64>()
    );
    assert_eq!(s.calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_read_longer_than_io_size_is_answered_from_its_own_fill() {
    let s = Setup::new(8 << 20);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    // 3 MiB + a bit, unaligned: runs cut at 1 MiB, one origin request
    let extents = [(1000u64, (3 << 20) + 5000)];
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    let st = fs.stats();
    assert_eq!(
        (st.client_requests, st.origin_request_count),
        (1, 1),
        "{st}"
    );
    assert_eq!(st.bytes_from_disk, 0, "nothing was cached before\n{st}");
    assert_eq!(s.calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_in_flight_are_awaited_not_fetched_again() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig::default());
    // A wants blocks 0..10, B blocks 5..15; A's fill is held at the origin.
    two_reads_in_flight(&s, &fs, [(0, 10 * 4096)], [(5 * 4096, 10 * 4096)]).await;
    // B fetched only blocks 10..15: no block was fetched twice.
    let runs = s.probe.runs.lock().unwrap().clone();
    assert_eq!(runs, vec![(0, 10 * 4096), (10 * 4096, 5 * 4096)]);
    assert_eq!(fs.stats().bytes_fetched, 15 * 4096);
    // B's blocks 5..10 came from A's fill, not read back from the store
    assert_eq!(fs.stats().bytes_from_disk, 0);
}

/// A sequential reader whose next read finds its blocks in flight from
/// read-ahead is answered with the data that fill fetched, as it lands:
/// nothing is read back from the store, nothing fetched twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_waiting_for_read_ahead_takes_its_data_not_the_store_copy() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig {
        prefetch_blocks: 8,
        ..CacheConfig::default()
    });
    let f = open(&fs).await;
    read_first_block_ahead_held(&s, &f, 8, 2).await;
    // the next read wants blocks 1..9, all in the read-ahead held at the
    // origin: it waits for that fill
    let next = [(4096u64, 8 * 4096)];
    let reader = tokio::spawn(async move {
        let got = readv(&f, &next).await;
        (f, got)
    });
    until("the read is waiting", || {
        fs.stats().client_reads.current == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(s.calls(), 2, "the read fetched blocks in flight");
    s.open_gate();
    let (_f, got) = reader.await.unwrap();
    assert_eq!(got.unwrap(), s.expect(&next));
    let st = fs.stats();
    assert_eq!(st.bytes_from_disk, 0, "read back from the store\n{st}");
    assert_eq!(
        s.probe.runs.lock().unwrap()[..2],
        [(0, 4096), (4096, 8 * 4096)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ram_budget_holds_a_fill_back_until_room_is_made() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig {
        ram: 64 << 10,
        ..CacheConfig::default()
    });
    let (a, b) = (open(&fs).await, open(&fs).await);
    let first = [(0u64, 64 << 10)];
    let second = [(512 << 10, 64 << 10)];
    let ra = tokio::spawn(async move { readv(&a, &first).await });
    calls_reach(&s, 1).await;
    let rb = tokio::spawn(async move { readv(&b, &second).await });
    // B's fill waits for RAM, so it never reaches the origin while A's
    // data is held; give it every chance to.
    for _ in 0..50 {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(s.calls(), 1, "a fill went to the origin without RAM");
    s.open_gate();
    assert_eq!(ra.await.unwrap().unwrap(), s.expect(&first));
    assert_eq!(rb.await.unwrap().unwrap(), s.expect(&second));
    assert_eq!(s.calls(), 2);
}

/// The RAM budget counts what the cache hands its clients, until they drop
/// it (the server has sent it), not only fill data until it is stored:
/// while A holds its answer, B's cold read waits for room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_held_by_clients_count_in_the_ram_budget() {
    let s = Setup::new(1 << 20);
    s.open_gate();
    let fs = s.cache(CacheConfig {
        ram: 64 << 10,
        ..CacheConfig::default()
    });
    let (a, b) = (open(&fs).await, open(&fs).await);
    let first = [(0u64, 64 << 10)];
    let held = a.readv(first.to_vec()).await.unwrap();
    assert_eq!(s.calls(), 1);
    let second = [(512 << 10, 64 << 10)];
    let rb = tokio::spawn(async move { readv(&b, &second).await });
    // B waits for RAM while A's answer is alive; give it every chance to
    // go to the origin anyway.
    for _ in 0..50 {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(s.calls(), 1, "a read went to the origin without RAM");
    assert_eq!(fs.stats().ram_held, 64 << 10);
    assert!(held[0] == s.data[..64 << 10]);
    drop(held);
    assert_eq!(rb.await.unwrap().unwrap(), s.expect(&second));
    assert_eq!(s.calls(), 2);
    // all given back once the answers are dropped and the fills stored
    until("the RAM given back", || fs.stats().ram_held == 0).await;
}

/// A read answered with a slice of another reader's fill holds that
/// fill's RAM, and none of its own: its bytes count once. A fetches 64 KiB
/// (held at the origin), B asks 8 KiB inside it and waits; once both hold
/// their answers, the budget holds A's 64 KiB, not 64 KiB plus B's copy
/// reservation (8 KiB and two pages of slack).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_answered_from_anothers_fill_counts_its_ram_once() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig::default());
    let (a, b) = (open(&fs).await, open(&fs).await);
    let first = [(0u64, 64 << 10)];
    let second = [(4096u64, 8192)];
    let ra = tokio::spawn(async move { a.readv(first.to_vec()).await });
    calls_reach(&s, 1).await;
    let rb = tokio::spawn(async move { b.readv(second.to_vec()).await });
    until("B is waiting for A's fill", || {
        fs.stats().client_reads.current == 2
    })
    .await;
    s.open_gate();
    let held_a = ra.await.unwrap().unwrap();
    let held_b = rb.await.unwrap().unwrap();
    assert_eq!(s.calls(), 1, "B fetched blocks in flight");
    assert!(held_b[0] == s.data[4096..4096 + 8192]);
    fs.flush_all().await.unwrap(); // the fill stored: only answers hold RAM
    assert_eq!(fs.stats().ram_held, 64 << 10, "B's bytes counted twice");
    drop(held_a);
    // B's slice keeps A's fill's data, and so its RAM
    assert_eq!(fs.stats().ram_held, 64 << 10);
    drop(held_b);
    assert_eq!(fs.stats().ram_held, 0);
}

/// A read of blocks partly cached and partly fetched answers the fetched
/// part from the origin's data as it came (no copy), not by reading back
/// from disk what its own fill has just written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_partly_cached_answers_its_own_fill_without_reading_it_back() {
    let s = Setup::new(1 << 20);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    let warm = [(0u64, 4 * 4096)];
    assert_eq!(readv(&f, &warm).await.unwrap(), s.expect(&warm));
    fs.flush_all().await.unwrap(); // stored: no longer in flight
    s.probe.keep_answers.store(true, Ordering::SeqCst);
    let extents = [(100u64, 4000), (64 << 10, 3 * 4096), (300 << 10, 10)];
    let got = f.readv(extents.to_vec()).await.unwrap();
    for ((o, l), g) in extents.iter().zip(&got) {
        assert!(
            g[..] == s.data[*o as usize..*o as usize + l],
            "extent at {o}"
        );
    }
    assert_eq!(s.calls(), 2, "one origin request for the cold blocks");
    assert!(
        !from_origin(&s.probe, &got[0]),
        "the cached block is read from disk"
    );
    assert!(from_origin(&s.probe, &got[1]), "read back from disk");
    assert!(from_origin(&s.probe, &got[2]), "read back from disk");
    assert_eq!(fs.stats().bytes_from_disk, 4000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fill_fails_its_readers_and_caches_nothing() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig::default());
    let (a, b) = (open(&fs).await, open(&fs).await);
    let extents = [(4096u64, 8192)];
    s.probe.fail.store(true, Ordering::SeqCst);
    let ra = tokio::spawn(async move { readv(&a, &extents).await });
    calls_reach(&s, 1).await;
    // B waits on A's fill of the same blocks and sees its failure.
    let rb = tokio::spawn(async move { readv(&b, &extents).await });
    s.open_gate();
    for r in [ra.await.unwrap(), rb.await.unwrap()] {
        match r {
            Err(FsError::Error { code, message }) => {
                assert_eq!(
                    code,
                    ErrorCode::FS_ERROR,
                    "an I/O error maps as the reference maps errno"
                );
                assert!(message.contains("origin went away"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    // B may have fetched for itself after A failed; nothing got cached.
    let calls = s.calls();
    s.probe.fail.store(false, Ordering::SeqCst);
    let f = open(&fs).await;
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    assert_eq!(
        s.calls(),
        calls + 1,
        "the failed blocks were not fetched again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_spoiled_on_disk_is_fetched_again() {
    let s = Setup::new(1 << 20);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    let extents = [(100_000u64, 20_000)];
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    // the reader had its data before the store write ended: let it land
    fs.flush_all().await.unwrap();
    // flip one byte of the cached copy
    let cached = s.cache_dir.path().join("f.bin");
    let mut bytes = std::fs::read(&cached).unwrap();
    bytes[110_000] ^= 0xff;
    std::fs::write(&cached, &bytes).unwrap();
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    assert_eq!(s.calls(), 2);
    assert_eq!(
        s.probe.runs.lock().unwrap()[1],
        (110_000 / 4096 * 4096, 4096)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_origin_file_is_not_served_from_the_old_copy() {
    let s = Setup::new(1 << 20);
    s.open_gate();
    let extents = [(0u64, 50_000)];
    {
        let fs = s.cache(CacheConfig::default());
        let f = open(&fs).await;
        assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
        drop(f);
        fs.flush_all().await.unwrap();
    }
    // the origin file changes size (and content)
    let new: Vec<u8> = s.data.iter().rev().take(900_000).copied().collect();
    std::fs::write(s.origin_dir.path().join("f.bin"), &new).unwrap();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    assert_eq!(
        readv(&f, &extents).await.unwrap(),
        vec![new[..50_000].to_vec()]
    );
    assert_eq!(s.calls(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_past_the_end_fail_whole_and_reads_at_the_end_are_short() {
    let s = Setup::new(10_000);
    s.open_gate();
    let fs = s.cache(CacheConfig {
        geometry: Geometry::new(4096, 1 << 20, 0).unwrap(),
        ..CacheConfig::default()
    });
    let f = open(&fs).await;
    match readv(&f, &[(0, 10), (9_990, 11)]).await {
        Err(FsError::Error { code, .. }) => assert_eq!(code, ErrorCode::FS_ERROR),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.calls(), 0, "nothing is fetched for a refused read");
    let tail = tokio::time::timeout(GUARD, f.read_at(9_000, 5_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&tail[..], &s.data[9_000..]);
    assert!(f.read_at(10_000, 10).await.unwrap().is_empty());
    match fs
        .open(
            &Caller::local("test"),
            "/f.bin",
            OpenMode {
                write: true,
                ..OpenMode::default()
            },
            "",
        )
        .await
    {
        Err(FsError::Error { code, .. }) => assert_eq!(code, ErrorCode::NOT_AUTHORIZED),
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("opened a cached file for writing"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefetch_fills_the_blocks_after_a_read_in_the_background() {
    let s = Setup::new(1 << 20);
    s.open_gate();
    let fs = s.cache(CacheConfig {
        prefetch_blocks: 8,
        ..CacheConfig::default()
    });
    let f = open(&fs).await;
    let first = [(0u64, 4096)];
    assert_eq!(readv(&f, &first).await.unwrap(), s.expect(&first));
    // the background fill of blocks 1..9 was started by the read
    calls_reach(&s, 2).await;
    assert_eq!(s.probe.runs.lock().unwrap()[1], (4096, 8 * 4096));
    // a read of those blocks waits for that fill or reads them from disk;
    // it only prefetches further (blocks 9..17): no block is fetched twice
    let next = [(4096u64, 8 * 4096)];
    assert_eq!(readv(&f, &next).await.unwrap(), s.expect(&next));
    calls_reach(&s, 3).await;
    let runs = s.probe.runs.lock().unwrap().clone();
    assert_eq!(runs, [(0, 4096), (4096, 8 * 4096), (9 * 4096, 8 * 4096)]);
}

/// Reads a client keeps in flight at once, one after the other in the
/// file (the stock `xrdcp`'s chunks), are each sequential as they arrive:
/// read-ahead starts after the last of them asked, as one run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_ahead_starts_after_the_reads_in_flight() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig {
        prefetch_blocks: 8,
        ..CacheConfig::default()
    });
    two_reads_in_flight(&s, &fs, [(0, 4 * 4096)], [(4 * 4096, 4 * 4096)]).await;
    calls_reach(&s, 3).await;
    until("the read-ahead landed", || {
        fs.stats().origin_requests.current == 0
    })
    .await;
    let runs = s.probe.runs.lock().unwrap().clone();
    assert_eq!(runs[2..], [(8 * 4096, 8 * 4096)], "{runs:?}");
}

/// Read-ahead as the stock XCache's `pfc.prefetch`: at most
/// `prefetch_blocks` blocks of a file fetched ahead at a time, only for a
/// reader that goes on where the reads got to; when the reader stops, the
/// origin sees nothing more once those are in, and a jump starts none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_ahead_is_bounded_and_stops_with_the_reader() {
    let s = Setup::new(4 << 20);
    s.gate.add_permits(1);
    // block 17 cached beforehand, without read-ahead
    let later = [(17 * 4096u64, 4096)];
    {
        let fs = s.cache(CacheConfig::default());
        let f = open(&fs).await;
        assert_eq!(readv(&f, &later).await.unwrap(), s.expect(&later));
        drop(f);
        fs.flush_all().await.unwrap();
    }
    let fs = s.cache(CacheConfig {
        prefetch_blocks: 16,
        ..CacheConfig::default()
    });
    let f = open(&fs).await;
    read_first_block_ahead_held(&s, &f, 16, 3).await;
    // sequential still, but the 16 blocks ahead are all in flight: a
    // read from disk that moves the reads on starts no more read-ahead
    assert_eq!(readv(&f, &later).await.unwrap(), s.expect(&later));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.calls(), 3, "read-ahead past its bound");
    // the reader stops: once the read-ahead is in, nothing more is asked
    s.open_gate();
    until("the read-ahead landed", || {
        fs.stats().origin_requests.current == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.calls(), 3, "read-ahead went on without a reader");
    // a sequential read now: read-ahead of the next 16 blocks, in one run
    let next = [(18 * 4096u64, 4096)];
    assert_eq!(readv(&f, &next).await.unwrap(), s.expect(&next));
    calls_reach(&s, 5).await;
    assert_eq!(s.probe.runs.lock().unwrap()[4], (19 * 4096, 16 * 4096));
    // a jump forward: its own fill only
    until("the read-ahead landed", || {
        fs.stats().origin_requests.current == 0
    })
    .await;
    let far = [(3u64 << 20, 4096)];
    assert_eq!(readv(&f, &far).await.unwrap(), s.expect(&far));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.calls(), 6, "a jump started read-ahead");
    assert_eq!(s.probe.runs.lock().unwrap()[5], (3 << 20, 4096));
}

/// Closing the last handle while a fill the cache started itself (a
/// prefetch) is still at the origin: the close waits for it — the origin
/// file stays open until the fill is done, and its blocks are stored and
/// in the sidecar written at the close, so a restart serves them from disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_waits_for_the_fills_still_running() {
    let s = Setup::new(1 << 20);
    let config = CacheConfig {
        prefetch_blocks: 8,
        ..CacheConfig::default()
    };
    let fs = s.cache(config);
    let f = open(&fs).await;
    let first = [(0u64, 4096)];
    s.gate.add_permits(1); // the read's own fill; the prefetch waits
    assert_eq!(readv(&f, &first).await.unwrap(), s.expect(&first));
    calls_reach(&s, 2).await;
    drop(f);
    for _ in 0..50 {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(s.open_files(), 1, "the origin file closed under a fill");
    s.open_gate();
    until("the origin file closed", || s.open_files() == 0).await;
    drop(fs);
    // a restart (no prefetch now): the prefetched blocks are on disk,
    // indexed
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    let prefetched = [(4096u64, 8 * 4096)];
    let calls = s.calls();
    assert_eq!(
        f.readv(prefetched.to_vec()).await.unwrap()[0],
        s.expect(&prefetched)[0]
    );
    assert_eq!(s.calls(), calls, "the prefetched blocks were not kept");
    assert_eq!(fs.stats().bytes_from_disk, 8 * 4096);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_removes_closed_files_and_keeps_open_ones() {
    let s = Setup::new(256 << 10);
    std::fs::write(s.origin_dir.path().join("g.bin"), &s.data).unwrap();
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let whole = [(0u64, 256 << 10)];
    let g = fs
        .open(&Caller::local("test"), "/g.bin", OpenMode::default(), "")
        .await
        .unwrap();
    readv(&g, &whole).await.unwrap();
    drop(g);
    let f = open(&fs).await;
    readv(&f, &whole).await.unwrap();
    fs.flush_all().await.unwrap();
    // a file is in use until its close (sidecar written) completes
    until("g.bin closed", || s.open_files() == 1).await;
    let marks = xroot_cache::Watermarks { low: 0, high: 1 };
    let report = fs.purge(marks).await.unwrap();
    assert_eq!(report.removed, ["/g.bin"]);
    assert!(!s.cache_dir.path().join("g.bin").exists());
    // the open file is still cached and served without the origin
    let calls = s.calls();
    assert_eq!(readv(&f, &whole).await.unwrap(), s.expect(&whole));
    assert_eq!(s.calls(), calls);
}
