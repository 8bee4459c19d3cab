//! Listing a directory through a stock cluster manager, whose own
//! namespace is empty (issue 28, item 4): the client library's
//! [`FileSystem::dirlist_located`] and our `xrdfs ls` locate the directory
//! on every data server, list each and merge, as the stock `xrdfs ls`
//! does; and our cache, whose origin is the manager, lists the same way,
//! where the stock XCache answers `kXR_NotFound` (xrootd#1565): before,
//! `xrdfs CACHE ls /dir` failed with 3011 here too. Stat, locate and
//! reads through the cache keep working.
//!
//! Data server 1 holds `/dir/a.bin`, `/dir/both.bin` and `/dir/sub/`;
//! data server 2 holds `/dir/b.bin` and `/dir/both.bin`.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use clap::Parser;
use xroot::client::{Client, DirEntry};
use xroot::proto::ErrorCode;
use xroot_testkit::cluster::Cluster;
use xroot_testkit::example::example_bin;
use xroot_testkit::our_cache::{cli_args, content, RunningCache};
use xroot_testkit::tools::{run_ok, run_tool, stderr, stdout};
use xroot_tools::xcache;

/// Awaits `f`, failing the test if it takes more than 120 s (a hang).
async fn guard<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("hang: no answer within 120 s")
}

/// The files of data server `i`: (path below the export, bytes).
fn files(i: usize) -> Vec<(&'static str, Vec<u8>)> {
    match i {
        0 => vec![
            ("dir/a.bin", content(1, 10_000)),
            ("dir/both.bin", content(3, 5_000)),
        ],
        _ => vec![
            ("dir/b.bin", content(2, 20_000)),
            ("dir/both.bin", content(3, 5_000)),
        ],
    }
}

fn fill(i: usize, dir: &Path) {
    std::fs::create_dir_all(dir.join("dir")).unwrap();
    if i == 0 {
        std::fs::create_dir_all(dir.join("dir/sub")).unwrap();
    }
    for (path, bytes) in files(i) {
        std::fs::write(dir.join(path), bytes).unwrap();
    }
}

/// The names of a listing.
fn names(entries: &[DirEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.name.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn a_directory_is_listed_through_a_manager_and_through_a_cache_of_it() {
    let Some(cluster) = Cluster::start(2, fill) else {
        return;
    };
    let client = Client::new();
    let fs = client.fs(&cluster.url("/")).unwrap();

    // the cause: the manager's own namespace has no /dir
    let err = guard(fs.dirlist("/dir", false)).await.unwrap_err();
    assert!(
        matches!(err, xroot::client::Error::Server { code, .. } if code == ErrorCode::NOT_FOUND),
        "a plain dirlist at the manager: {err:?}"
    );
    assert!(!guard(fs.server_info()).await.unwrap().is_data_server());

    // located and merged: each name once, sorted, with stats when asked
    let listing = guard(fs.dirlist_located("/dir", true))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()));
    assert_eq!(
        names(&listing.entries),
        ["a.bin", "b.bin", "both.bin", "sub"]
    );
    assert!(!listing.partial);
    let size = |name: &str| {
        let e = listing.entries.iter().find(|e| e.name == name).unwrap();
        e.stat.as_ref().expect("a stat with kXR_dstat").size
    };
    assert_eq!((size("a.bin"), size("b.bin")), (10_000, 20_000));
    assert!(listing.entries[3].stat.as_ref().unwrap().is_dir());
    // at a data server, the listing is that server's
    let ds2 = client
        .fs(&format!("root://127.0.0.1:{}", cluster.servers[1].port))
        .unwrap();
    let there = guard(ds2.dirlist_located("/dir", false)).await.unwrap();
    let mut listed = names(&there.entries);
    listed.sort();
    assert_eq!(listed, ["b.bin", "both.bin"]);
    // a directory no data server has
    let err = guard(fs.dirlist_located("/nowhere", false))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err:?}");

    // our xrdfs ls prints what the stock xrdfs ls prints
    let manager = format!("root://127.0.0.1:{}", cluster.port);
    let args = vec![manager.clone(), "ls".into(), "/dir".into()];
    let stock = run_ok("xrdfs", &args).await;
    let ours = run_ok(example_bin("xrdfs").to_str().unwrap(), &args).await;
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&stock)
    );
    assert_eq!(
        String::from_utf8_lossy(&stock),
        "/dir/a.bin\n/dir/b.bin\n/dir/both.bin\n/dir/sub\n"
    );

    // our cache in front of the manager: the stock xrdfs lists through it
    let cache_dir = tempfile::tempdir().unwrap();
    let cli = xcache::Cli::try_parse_from(cli_args(cluster.port, cache_dir.path())).unwrap();
    let cache = RunningCache::serve(xcache::start(&cli).await.unwrap());
    let at_cache = vec![cache.url(), "ls".into(), "/dir".into()];
    let o = guard(run_tool("xrdfs", &at_cache)).await;
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), String::from_utf8_lossy(&stock));
    let long = vec![cache.url(), "ls".into(), "-l".into(), "/dir".into()];
    let o = guard(run_tool("xrdfs", &long)).await;
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    // `-rw-r--r-- owner group SIZE date time path`, sorted by path
    let listed = stdout(&o);
    let sizes: Vec<&str> = listed
        .lines()
        .map(|l| l.split_whitespace().nth(3).unwrap_or(""))
        .collect();
    assert_eq!(sizes[..3], ["10000", "20000", "5000"], "{listed}");
    // stat of the directory and of a file, and the bytes, through the cache
    let stat_dir = vec![cache.url(), "stat".into(), "/dir".into()];
    let o = guard(run_tool("xrdfs", &stat_dir)).await;
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("IsDir"), "{}", stdout(&o));
    let scratch = tempfile::tempdir().unwrap();
    for (name, bytes) in [("a.bin", &files(0)[0].1), ("b.bin", &files(1)[0].1)] {
        let copy = scratch.path().join(name);
        let args = vec![
            "-f".into(),
            "-s".into(),
            format!("{}//dir/{name}", cache.url()),
            copy.to_str().unwrap().to_string(),
        ];
        run_ok("xrdcp", &args).await;
        assert_eq!(&std::fs::read(&copy).unwrap(), bytes, "{name}");
    }
    cache.stop().await;
}
