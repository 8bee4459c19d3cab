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
