//! Deep paths: resolving one costs our server time linear in its length,
//! direct and through our cache (issue 25: a stat of 1,000 directories and
//! 300 missing components took 5.8 s of CPU when every prefix was
//! canonicalized; the stock server answers in milliseconds), and a path
//! past the kernel's limit is `kXR_ArgTooLong` before any lookup.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use xroot::cache::origin::RemoteOrigin;
use xroot::cache::{CacheConfig, CacheFs, Store};
use xroot::client::{Client, FileSystem as Remote};
use xroot::proto::ErrorCode;
use xroot::server::LocalFs;
use xroot_testkit::ours::serve;

/// `/d/d/…` (`depth` directories) then `missing` components `m`.
fn deep(depth: usize, missing: usize) -> String {
    let mut p = "/d".repeat(depth);
    p.push_str(&"/m".repeat(missing));
    p
}

/// The export root with `depth` nested directories `d`.
fn tree(depth: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(format!("{}{}", dir.path().display(), deep(depth, 0))).unwrap();
    dir
}

/// The fastest of three stats of `path`, which must be "not found".
async fn stat_time(fs: &Remote, path: &str) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let e = fs.stat(path).await.unwrap_err();
        best = best.min(start.elapsed());
        assert_eq!(e.server_code(), Some(ErrorCode::NOT_FOUND), "{e}");
    }
    best
}

/// A stat of 1,000 directories and 300 missing components answers well
/// under a second (a fixed budget: it took 5.8 s when every prefix was
/// canonicalized), eight at once too, and twice the depth costs no more
/// than about twice the time (a cubic cost would be eight times).
async fn deep_stats_answer_in_linear_time(addr: SocketAddr, what: &str) {
    let fs = Client::new().fs(&format!("root://{addr}")).unwrap();
    let half = stat_time(&fs, &deep(500, 150)).await;
    let full = stat_time(&fs, &deep(1000, 300)).await;
    assert!(full < Duration::from_secs(1), "{what}: {full:?}");
    assert!(
        full <= half * 3 + Duration::from_millis(100),
        "{what}: 500+150 components {half:?}, 1000+300 {full:?}"
    );
    let start = Instant::now();
    let stats = (0..8).map(|_| {
        let fs = fs.clone();
        async move { fs.stat(&deep(1000, 300)).await }
    });
    for r in futures::future::join_all(stats).await {
        assert_eq!(r.unwrap_err().server_code(), Some(ErrorCode::NOT_FOUND));
    }
    let eight = start.elapsed();
    assert!(
        eight < Duration::from_secs(2),
        "{what}: 8 at once {eight:?}"
    );
    println!("{what}: 500+150 components {half:?}, 1000+300 {full:?}, 8 at once {eight:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_stats_answer_in_linear_time_direct_and_through_the_cache() {
    let data = tree(1000);
    let origin = serve(LocalFs::new(data.path()).unwrap()).await;
    deep_stats_answer_in_linear_time(origin, "our server").await;

    let cache_dir = tempfile::tempdir().unwrap();
    let remote = RemoteOrigin::new(Client::new(), &format!("root://{origin}")).unwrap();
    let store = Store::open(cache_dir.path()).unwrap();
    let cache = serve(CacheFs::new(remote, store, CacheConfig::default())).await;
    deep_stats_answer_in_linear_time(cache, "our cache").await;
}

/// The root and the path together past `PATH_MAX` less its NUL (4,095
/// bytes): `kXR_ArgTooLong` "file name too long", as the stock server's
/// kernel calls fail; a request path past 4,095 bytes whatever the root;
/// one just inside the limit is looked up ("not found").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_past_the_kernels_limit_are_arg_too_long() {
    let data = tree(1);
    let root_len = std::fs::canonicalize(data.path())
        .unwrap()
        .as_os_str()
        .len();
    let fs = Client::new()
        .fs(&format!(
            "root://{}",
            serve(LocalFs::new(data.path()).unwrap()).await
        ))
        .unwrap();
    let code = |p: String| {
        let fs = fs.clone();
        async move { fs.stat(&p).await.unwrap_err() }
    };
    let fits = 4095 - root_len;
    // `/d/x/x/…` of exactly `len` bytes
    let path = |len: usize| format!("/d/{}y", &"x/".repeat(len / 2)[..len - 4]);
    assert_eq!(path(fits).len(), fits);
    let e = code(path(fits)).await;
    assert_eq!(e.server_code(), Some(ErrorCode::NOT_FOUND), "{e}");
    let e = code(path(fits + 1)).await;
    assert_eq!(e.server_code(), Some(ErrorCode::ARG_TOO_LONG), "{e}");
    assert!(e.to_string().ends_with("; file name too long"), "{e}");
    let e = code(format!("/{}", "a/".repeat(2100))).await;
    assert_eq!(e.server_code(), Some(ErrorCode::ARG_TOO_LONG), "{e}");
    // a name longer than the kernel's NAME_MAX (255 bytes)
    let e = code(format!("/d/{}", "n".repeat(300))).await;
    assert_eq!(e.server_code(), Some(ErrorCode::ARG_TOO_LONG), "{e}");
}
