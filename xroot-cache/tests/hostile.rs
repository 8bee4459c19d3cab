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
use xroot_server::{File, FileSystem, FsError, OpenMode};

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
    let fs = s.cache(CacheConfig::default());
    for _ in 0..20 {
        for (path, want) in [
            ("/x.cinfo", ErrorCode::ARG_INVALID),
            ("/g.bin", ErrorCode::IS_DIRECTORY),
        ] {
            let got = fs.open(path, OpenMode::default(), "").await;
            assert_eq!(code(got), want, "{path}");
        }
    }
    assert_eq!(s.open_files(), 0, "origin files left open");
    let opening = s.probe.opening.load(Ordering::SeqCst);
    assert_eq!(
        opening, 20,
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
        async move { fs.open("/f.bin", OpenMode::default(), "").await.map(drop) }
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
    fs.flush_all().await.unwrap();
    let report = fs.purge(Watermarks { low: 0, high: 1 }).await.unwrap();
    assert_eq!(report.removed, ["/f.bin"], "the file stayed in use");
    until("the origin file closed", || s.open_files() == 0).await;
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
