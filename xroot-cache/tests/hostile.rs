//! `CacheFs` under attack: hostile clients (reads past the end, abandoned
//! opens and reads, many readers of the same cold blocks, open/close
//! storms, odd vector reads), a misbehaving origin (a file that shrinks
//! while open, names the cache cannot store) and a damaged disk (a data
//! file truncated under the running cache or lost between runs). Every
//! attack ends with a typed error or the right bytes, never a panic, and
//! the cache keeps serving.

mod support;

use std::sync::atomic::Ordering;

use support::{calls_reach, open, readv, until, Setup, GUARD};
use xroot_cache::{CacheConfig, Watermarks};
use xroot_proto::ErrorCode;
use xroot_server::{Caller, File, FileSystem, FsError, OpenMode};

/// The code of a failed call.
fn code<T>(r: Result<T, FsError>) -> ErrorCode {
    match r {
        Err(FsError::Error { code, .. }) => code,
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("the call succeeded"),
    }
}

/// A read (or pgread) at or after the end of file answers no bytes, as the
/// origin itself does (PROTOCOL.md §6.3: "reading at/after EOF gives an
/// empty kXR_ok"); it is not an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_after_the_end_of_file_answer_no_bytes() {
    let s = Setup::new(10_000);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    for offset in [10_000, 10_001, 1 << 40, i64::MAX as u64, u64::MAX] {
        let got = tokio::time::timeout(GUARD, f.read_at(offset, 4096))
            .await
            .unwrap();
        assert!(got.unwrap().is_empty(), "read at {offset}");
        let got = tokio::time::timeout(GUARD, f.pgread(offset, 4096))
            .await
            .unwrap();
        assert!(got.unwrap().is_empty(), "pgread at {offset}");
    }
    assert_eq!(s.calls(), 0);
}

/// Opens of origin files the cache cannot store — a name reserved for its
/// sidecars, a path whose place in the cache directory is taken by a
/// directory (an unusable cache location) — fail with a typed error, close
/// the origin file they opened (none leaks at the origin, however often a
/// client tries), and the cache keeps serving other files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opens_the_cache_cannot_store_close_their_origin_file() {
    let s = Setup::new(10_000);
    s.open_gate();
    let origin = s.origin_dir.path();
    std::fs::write(origin.join("x.cinfo"), b"not a sidecar").unwrap();
    std::fs::write(origin.join("g.bin"), b"blocked").unwrap();
    std::fs::create_dir(s.cache_dir.path().join("g.bin")).unwrap();
    // a name the origin holds but whose sidecar's name is over NAME_MAX
    let long = format!("/{}", "n".repeat(250));
    std::fs::write(origin.join(&long[1..]), b"long").unwrap();
    let fs = s.cache(CacheConfig::default());
    for _ in 0..20 {
        for (path, want) in [
            ("/x.cinfo", ErrorCode::ARG_INVALID),
            ("/g.bin", ErrorCode::IS_DIRECTORY),
            (&long, ErrorCode::ARG_TOO_LONG),
        ] {
            let got = fs
                .open(&Caller::local("test"), path, OpenMode::default(), "")
                .await;
            assert_eq!(code(got), want, "{path}");
        }
    }
    assert_eq!(s.open_files(), 0, "origin files left open");
    let opening = s.probe.opening.load(Ordering::SeqCst);
    assert_eq!(
        opening, 40,
        "a sidecar's name is refused before the origin is asked"
    );
    let f = open(&fs).await;
    assert_eq!(
        readv(&f, &[(0, 10_000)]).await.unwrap(),
        s.expect(&[(0, 10_000)])
    );
}

/// A client whose open is abandoned while the origin is still opening
/// (its session killed, its task aborted) leaves no handle behind: once
/// every other handle closes, the file is no longer in use (purge may
/// remove it) and its origin file is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_open_leaves_no_handle_behind() {
    let s = Setup::new(64 << 10);
    s.probe.hold_opens.store(true, Ordering::SeqCst);
    let fs = s.cache(CacheConfig::default());
    let abandoned = tokio::spawn({
        let fs = fs.clone();
        async move {
            fs.open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
                .await
                .map(drop)
        }
    });
    until("the origin open started", || {
        s.probe.opening.load(Ordering::SeqCst) == 1
    })
    .await;
    abandoned.abort();
    assert!(abandoned.await.unwrap_err().is_cancelled());
    s.open_gate();
    let f = open(&fs).await;
    let whole = [(0u64, 64 << 10)];
    assert_eq!(readv(&f, &whole).await.unwrap(), s.expect(&whole));
    drop(f);
    until("the origin file closed", || s.open_files() == 0).await;
    let report = fs.purge(Watermarks { low: 0, high: 1 }).await.unwrap();
    assert_eq!(report.removed, ["/f.bin"], "the file stayed in use");
}

/// Cached blocks whose data is lost under the running cache (the data
/// file truncated) are fetched again, all of them at once: a read over
/// many damaged blocks gets the right bytes, not an error after a few
/// attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_file_truncated_under_the_cache_is_fetched_again() {
    let s = Setup::new(1 << 20);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    // one extent over 40 blocks, and 30 extents in other blocks
    let mut extents = vec![(1000u64, 40 * 4096)];
    extents.extend((0..30u64).map(|i| (300_000 + i * 20_000, 100)));
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    fs.flush_all().await.unwrap();
    let calls = s.calls();
    std::fs::OpenOptions::new()
        .write(true)
        .open(s.cache_dir.path().join("f.bin"))
        .unwrap()
        .set_len(0)
        .unwrap();
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    assert_eq!(
        s.calls(),
        calls + 1,
        "one origin request refetches them all"
    );
    // and they are cached again
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    assert_eq!(s.calls(), calls + 1);
}

/// A data file lost between two runs of the cache (its sidecar kept) is
/// fetched again on the next read: right bytes, no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_file_lost_between_runs_is_fetched_again() {
    let s = Setup::new(1 << 20);
    s.open_gate();
    let extents = [(5000u64, 200_000), (700_000, 300_000)];
    {
        let fs = s.cache(CacheConfig::default());
        let f = open(&fs).await;
        assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
        drop(f);
        fs.flush_all().await.unwrap();
    }
    std::fs::remove_file(s.cache_dir.path().join("f.bin")).unwrap();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
}

/// Fifty readers of the same cold blocks, all in flight together, cost one
/// origin request; every one gets the right bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_readers_of_the_same_cold_blocks_cost_one_origin_request() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig::default());
    let extents = [(10_000u64, 100_000), (500_000, 3)];
    let mut readers = Vec::new();
    for _ in 0..50 {
        let f = open(&fs).await;
        readers.push(tokio::spawn(async move { readv(&f, &extents).await }));
    }
    until("fifty reads in flight", || {
        fs.stats().client_reads.current == 50
    })
    .await;
    s.open_gate();
    for r in readers {
        assert_eq!(r.await.unwrap().unwrap(), s.expect(&extents));
    }
    assert_eq!(s.calls(), 1);
    assert_eq!(fs.stats().origin_request_count, 1);
}

/// A reader that goes away in the middle of its cold fill (its client
/// disconnected) strands nobody: the fill completes, the reader waiting for
/// the same blocks gets them, and they are cached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_gone_mid_fill_strands_nobody() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig::default());
    let extents = [(0u64, 64 << 10)];
    let (a, b) = (open(&fs).await, open(&fs).await);
    let gone = tokio::spawn(async move { readv(&a, &extents).await });
    calls_reach(&s, 1).await;
    let waiting = tokio::spawn(async move { readv(&b, &extents).await });
    until("both reads in flight", || {
        fs.stats().client_reads.current == 2
    })
    .await;
    gone.abort();
    assert!(gone.await.unwrap_err().is_cancelled());
    s.open_gate();
    assert_eq!(waiting.await.unwrap().unwrap(), s.expect(&extents));
    let f = open(&fs).await;
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    assert_eq!(
        s.calls(),
        1,
        "the abandoned fill's blocks were fetched again"
    );
}

/// A full-size vector read of odd elements — empty ones, empty ones at the
/// end of file, duplicates, overlaps, descending order, one ending at the
/// end of file — is answered exactly, element by element, with one origin
/// request; one with an element whose offset or end lies past the end of
/// file (up to `u64::MAX`) is refused whole without asking the origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_vector_reads_are_answered_exactly_or_refused_whole() {
    let size = 3 << 20;
    let s = Setup::new(size);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    let size = size as u64;
    let mut extents = Vec::new();
    for i in 0..1024u64 {
        extents.push(match i % 8 {
            0 => (i * 1000, 0),
            1 => (size, 0),
            2 => (5000, 4096),
            3 => (5000 + i, 9000),
            4 => (size - 1 - i * 2000, 1 + i as usize),
            5 => (size - 1, 1),
            6 => (i * 3001 % size, 2),
            _ => ((1024 - i) * 2900, 4097),
        });
    }
    assert_eq!(readv(&f, &extents).await.unwrap(), s.expect(&extents));
    assert_eq!(s.calls(), 1);
    let calls = s.calls();
    for bad in [
        (size, 1),
        (size - 10, 11),
        (1 << 50, 1),
        (i64::MAX as u64, 0),
        (u64::MAX, 1),
        (u64::MAX - 10, 100),
    ] {
        let mut v = vec![(0, 10); 1023];
        v.push(bad);
        assert_eq!(code(readv(&f, &v).await), ErrorCode::FS_ERROR, "{bad:?}");
    }
    assert_eq!(s.calls(), calls);
}

/// Thousands of opens and closes of one file, racing reads on handles
/// open the whole time: every read right, every origin file closed at the
/// end, and the file no longer in use (purge removes it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_close_storm_racing_reads_leaks_nothing() {
    let s = Setup::new(256 << 10);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let fs = fs.clone();
        let extents = [(t * 30_000, 5000 + t as usize)];
        let want = s.expect(&extents);
        tasks.push(tokio::spawn(async move {
            let steady = open(&fs).await;
            for i in 0..250 {
                let f = open(&fs).await;
                if i % 10 == t {
                    assert_eq!(readv(&f, &extents).await.unwrap(), want);
                }
                drop(f);
                if i % 25 == 0 {
                    assert_eq!(readv(&steady, &extents).await.unwrap(), want);
                }
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(GUARD, t).await.unwrap().unwrap();
    }
    until("every origin file closed", || s.open_files() == 0).await;
    let report = fs.purge(Watermarks { low: 0, high: 1 }).await.unwrap();
    assert_eq!(report.removed, ["/f.bin"]);
}

/// An origin file that shrinks while the cache has it open: reads of the
/// blocks it lost fail with the origin's error (no wrong bytes, nothing
/// cached for them), the blocks it kept are still served, and the cache
/// serves the new version once the old one is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_file_shrinking_while_open_fails_the_lost_blocks() {
    let s = Setup::new(1 << 20);
    s.open_gate();
    let fs = s.cache(CacheConfig::default());
    let f = open(&fs).await;
    let kept = [(0u64, 100_000)];
    assert_eq!(readv(&f, &kept).await.unwrap(), s.expect(&kept));
    let origin_file = s.origin_dir.path().join("f.bin");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&origin_file)
        .unwrap()
        .set_len(200_000)
        .unwrap();
    let lost = [(150_000u64, 100_000)];
    for _ in 0..2 {
        assert_eq!(code(readv(&f, &lost).await), ErrorCode::FS_ERROR);
    }
    match tokio::time::timeout(GUARD, f.read_at(900_000, 10))
        .await
        .unwrap()
    {
        Err(FsError::Error { code, .. }) => assert_eq!(code, ErrorCode::FS_ERROR),
        other => panic!("{other:?}"),
    }
    assert_eq!(readv(&f, &kept).await.unwrap(), s.expect(&kept));
    drop(f);
    until("the old version closed", || s.open_files() == 0).await;
    let f = open(&fs).await;
    assert_eq!(f.stat().await.unwrap().size, 200_000);
    let within = [(150_000u64, 50_000)];
    assert_eq!(readv(&f, &within).await.unwrap(), s.expect(&within));
}

/// A file whose last handle closes while a fill is in flight (its reader
/// gone), opened again before that fill lands, shares the fill: nothing is
/// fetched twice and nothing cached is thrown away (a second store entry on
/// the same path would find no sidecar yet and reset the data file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_reopened_while_its_close_is_pending_keeps_its_blocks() {
    let s = Setup::new(1 << 20);
    let fs = s.cache(CacheConfig::default());
    let extents = [(0u64, 64 << 10)];
    let a = open(&fs).await;
    let gone = tokio::spawn(async move { readv(&a, &extents).await });
    calls_reach(&s, 1).await;
    gone.abort();
    assert!(gone.await.unwrap_err().is_cancelled());
    let b = open(&fs).await;
    let again = tokio::spawn(async move { readv(&b, &extents).await });
    until("the second read in flight", || {
        fs.stats().client_reads.current == 1
    })
    .await;
    s.open_gate();
    assert_eq!(again.await.unwrap().unwrap(), s.expect(&extents));
    assert_eq!(s.calls(), 1, "the blocks were fetched twice");
}
