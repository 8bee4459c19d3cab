//! `LocalFs` against the stock xrootd 5.5.3 serving the same directory:
//! the stat text (every field), dstat listings, error codes and messages,
//! checksums, and the effect of namespace changes must be what the stock
//! server answers through `xroot-client`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use xroot::client::{Client, Config, Error, FileSystem as Remote, OpenFlags};
use xroot::proto::response::StatInfo;
use xroot::proto::ErrorCode;
use xroot::server::{Caller, FileSystem, FsError, LocalFs, OpenMode};
use xroot_testkit::stock::StockServer;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The tree both servers see: files of several modes, directories, a FIFO,
/// symlinks inside the root (one dangling).
fn populate(root: &Path) {
    let w = |p: &str, data: &[u8], mode: u32| {
        std::fs::write(root.join(p), data).unwrap();
        chmod(&root.join(p), mode);
    };
    for d in ["dir/sub", "empty", "full/inner", "locked"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    w("nine", b"123456789", 0o644);
    w("big", &pattern(300_000), 0o644);
    w("exe", b"#!/bin/sh\n", 0o755);
    w("private", b"p", 0o600);
    w("group", b"g", 0o060);
    w("other", b"o", 0o007);
    w("none", b"", 0o000);
    w("zero", b"", 0o644);
    w("tomv", b"move me", 0o644);
    w("torm", b"remove me", 0o644);
    w("small", &pattern(5000), 0o644);
    w("dir/a", b"a", 0o644);
    chmod(&root.join("locked"), 0o700);
    std::os::unix::fs::symlink("nine", root.join("inlink")).unwrap();
    std::os::unix::fs::symlink("dir", root.join("indir")).unwrap();
    std::os::unix::fs::symlink("no-such-file", root.join("dangling")).unwrap();
    let fifo = Command::new("mkfifo").arg(root.join("fifo")).status();
    assert!(fifo.is_ok_and(|s| s.success()), "mkfifo");
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The effective uid and gid of the stock server, from its pid file and
/// `/proc/<pid>/status`.
fn server_user(server: &StockServer) -> (u32, u32) {
    let pid_file = server.state.path().join("run/test/xrootd.pid");
    let pid = std::fs::read_to_string(&pid_file).expect("the stock server's pid file");
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap();
    let id = |key: &str| -> u32 {
        let line = status.lines().find_map(|l| l.strip_prefix(key)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    (id("Uid:"), id("Gid:"))
}

/// A stock server on a populated temp dir, a client of it, and a `LocalFs`
/// on the same dir whose flags describe the stock server's user.
fn start() -> Option<(tempfile::TempDir, StockServer, Remote, LocalFs)> {
    let data = tempfile::tempdir().unwrap();
    populate(data.path());
    let server = StockServer::start(data.path(), &[])?;
    let (uid, gid) = server_user(&server);
    if running_as_root() {
        // the stock server runs as another user and was given the tree;
        // hand some files back to root so all three permission classes show
        let chown = |spec: String, p: &str| {
            let ok = Command::new("chown")
                .arg(spec)
                .arg(data.path().join(p))
                .status();
            assert!(ok.is_ok_and(|s| s.success()));
        };
        chown("0:0".into(), "private");
        chown(format!("0:{gid}"), "group");
        chown("0:0".into(), "other");
        chown("0:0".into(), "locked");
    }
    let client = Client::with_config(Config {
        request_timeout: Duration::from_secs(60),
        ..Config::default()
    });
    let remote = client
        .fs(&format!("root://127.0.0.1:{}", server.port))
        .unwrap();
    let local = LocalFs::new(data.path()).unwrap().with_user(uid, gid);
    Some((data, server, remote, local))
}

/// A result reduced to what a client sees: `Ok(value)` or `(code, message)`.
type Seen<T> = Result<T, (ErrorCode, String)>;

fn theirs<T>(r: Result<T, Error>) -> Seen<T> {
    r.map_err(|e| match e {
        Error::Server { code, message } => (code, message),
        other => panic!("not a server error: {other}"),
    })
}

fn ours<T>(r: Result<T, FsError>) -> Seen<T> {
    r.map_err(|e| match e {
        FsError::Error { code, message } => (code, message),
        other => panic!("not an error answer: {other}"),
    })
}

const STAT_PATHS: [&str; 17] = [
    "/", "/nine", "/big", "/zero", "/exe", "/private", "/group", "/other", "/none", "/dir",
    "/dir/a", "/dir/sub", "/empty", "/locked", "/fifo", "/inlink", "/indir",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn stat_text_and_listings_equal_the_stock_servers() {
    let Some((_data, _server, remote, local)) = start() else {
        return;
    };
    for p in STAT_PATHS {
        let want: StatInfo = remote.stat(p).await.unwrap();
        let got = local.stat(&Caller::local("test"), p).await.unwrap();
        assert_eq!(got, want, "stat {p}");
    }
    for dir in ["/", "/dir", "/empty", "/indir"] {
        for with_stat in [false, true] {
            let want: Vec<(String, Option<StatInfo>)> = remote
                .dirlist(dir, with_stat)
                .await
                .unwrap()
                .into_iter()
                .map(|e| (e.name, e.stat))
                .collect();
            let got: Vec<(String, Option<StatInfo>)> = local
                .dirlist(&Caller::local("test"), dir, with_stat)
                .await
                .unwrap()
                .into_iter()
                .map(|e| (e.name, e.stat))
                .collect();
            // the same directory read in the same (directory) order; the
            // dangling link is left out of the dstat listing by both
            assert_eq!(got, want, "dirlist {dir} with_stat={with_stat}");
        }
    }
}

/// A path exactly as long as the kernel takes beneath the root, one byte
/// longer, one of 2,100 components, and a name past 255 bytes: the stock
/// server's codes (`kXR_NotFound`, then `kXR_ArgTooLong`), and its message
/// where it does not cut it (at about 2 KB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn over_long_paths_are_refused_as_the_stock_server_does() {
    let Some((data, _server, remote, local)) = start() else {
        return;
    };
    let fits = 4095 - data.path().as_os_str().len();
    // `/dir/x/x/…y` of exactly `len` bytes
    let path = |len: usize| format!("/dir/{}y", &"x/".repeat(len / 2)[..len - 6]);
    let paths = [
        path(fits),
        path(fits + 1),
        format!("/{}", "a/".repeat(2100)),
        format!("/dir/{}", "n".repeat(300)),
    ];
    let mut codes = Vec::new();
    for p in paths {
        let want = theirs(remote.stat(&p).await).unwrap_err();
        let got = ours(local.stat(&Caller::local("test"), &p).await).unwrap_err();
        assert_eq!(got.0, want.0, "stat of {} bytes", p.len());
        if want.1.len() < 1000 {
            assert_eq!(got.1, want.1);
        }
        codes.push(got.0);
    }
    assert_eq!(
        codes,
        [
            ErrorCode::NOT_FOUND,
            ErrorCode::ARG_TOO_LONG,
            ErrorCode::ARG_TOO_LONG,
            ErrorCode::ARG_TOO_LONG
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn errors_equal_the_stock_servers() {
    let Some((data, server, remote, local)) = start() else {
        return;
    };
    macro_rules! same {
        ($what:expr, $remote:expr, $local:expr) => {{
            let want = theirs($remote.await);
            let got = ours($local.await);
            assert_eq!(got, want, "{}", $what);
            want.is_err()
        }};
    }
    for p in ["/missing", "/nine/x", "/dir/../nine", "/dangling"] {
        let what = format!("stat {p}");
        assert!(same!(
            what,
            remote.stat(p),
            local.stat(&Caller::local("test"), p)
        ));
    }
    for p in ["/missing", "/nine", "/a/../b"] {
        for s in [false, true] {
            let want = theirs(remote.dirlist(p, s).await).map(drop);
            let got = ours(local.dirlist(&Caller::local("test"), p, s).await).map(drop);
            assert_eq!(got, want, "dirlist {p} {s}");
            got.unwrap_err();
        }
    }
    // mkdir of an existing directory with exactly its bits passes (the
    // last field: whether the stock server refuses)
    for (p, parents, mode, refused) in [
        ("/dir", false, 0o755, false),
        ("/dir", true, 0o755, false),
        ("/dir", false, 0o750, true),
        ("/nine", true, 0o755, true),
        ("/nine/x", true, 0o755, true),
        ("/p/q", false, 0o755, true),
        ("/a/../b", true, 0o755, true),
    ] {
        let what = format!("mkdir {p} {parents} {mode:o}");
        let mkdir = same!(
            what,
            remote.mkdir(p, parents, mode),
            local.mkdir(&Caller::local("test"), p, mode, parents)
        );
        assert_eq!(mkdir, refused, "mkdir {p}");
    }
    for p in ["/missing", "/full", "/a/../b"] {
        let what = format!("rm {p}");
        assert!(same!(
            what,
            remote.rm(p),
            local.rm(&Caller::local("test"), p)
        ));
    }
    // rmdir of a missing directory passes
    for (p, refused) in [
        ("/full", true),
        ("/nine", true),
        ("/missing", false),
        ("/x/../y", true),
    ] {
        let rmdir = same!(
            format!("rmdir {p}"),
            remote.rmdir(p),
            local.rmdir(&Caller::local("test"), p)
        );
        assert_eq!(rmdir, refused, "rmdir {p}");
    }
    for (from, to) in [
        ("/missing", "/x"),
        ("/nine", "/dir"),
        ("/dir", "/full"),
        ("/nine", "/x/../y"),
        ("/x/../y", "/z"),
    ] {
        let what = format!("mv {from} {to}");
        assert!(same!(
            what,
            remote.mv(from, to),
            local.mv(&Caller::local("test"), from, to)
        ));
    }
    for p in ["/missing", "/a/../b"] {
        let what = format!("chmod {p}");
        assert!(same!(
            what,
            remote.chmod(p, 0o644),
            local.chmod(&Caller::local("test"), p, 0o644)
        ));
    }
    for p in ["/missing", "/dir", "/a/../b"] {
        let what = format!("truncate {p}");
        assert!(same!(
            what,
            remote.truncate(p, 1),
            local.truncate(&Caller::local("test"), p, 1)
        ));
    }
    for (p, alg) in [
        ("/missing", None),
        ("/dir", None),
        ("/nine", Some("foo")),
        ("/missing", Some("foo")),
        ("/a/../b", None),
    ] {
        let what = format!("checksum {p} {alg:?}");
        let want = theirs(remote.query_checksum(p, alg).await);
        let got = ours(local.checksum(&Caller::local("test"), p, alg).await);
        assert_eq!(got.map(drop), want.map(drop), "{what}");
    }
    // opens: XrdCl always adds kXR_async, which with kXR_new the reference
    // takes as kXR_mkpath
    let client = Client::new();
    let read = OpenMode {
        mode: 0o644,
        ..OpenMode::default()
    };
    let create = OpenMode {
        write: true,
        create_new: true,
        make_path: true,
        ..read
    };
    for (p, flags, mode) in [
        ("/missing", OpenFlags::READ, read),
        ("/dir", OpenFlags::READ, read),
        ("/nine/x", OpenFlags::READ, read),
        ("/a/../b", OpenFlags::READ, read),
        ("/nine", OpenFlags::NEW, create),
    ] {
        let url = format!("root://127.0.0.1:{}/{p}", server.port);
        let want = theirs(client.open(&url, flags).await);
        let got = ours(local.open(&Caller::local("test"), p, mode, "").await);
        assert_eq!(got.map(drop), want.map(drop), "open {p}");
    }

    // deliberately different: the stock server follows a symlink out of
    // its export, LocalFs refuses it
    std::os::unix::fs::symlink("/etc/hostname", data.path().join("out")).unwrap();
    assert!(remote.stat("/out").await.is_ok());
    let refused = ours(local.stat(&Caller::local("test"), "/out").await).unwrap_err();
    assert_eq!(refused.0, ErrorCode::NOT_AUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn open_files_answer_as_the_stock_servers() {
    use xroot::server::File as _;
    let Some((_data, server, _, local)) = start() else {
        return;
    };
    let client = Client::new();
    let url = format!("root://127.0.0.1:{}//big", server.port);
    let remote = client.open(&url, OpenFlags::READ).await.unwrap();
    let read = OpenMode {
        mode: 0o644,
        ..OpenMode::default()
    };
    let file = local
        .open(&Caller::local("test"), "/big", read, "")
        .await
        .unwrap();
    assert_eq!(file.stat().await.unwrap(), remote.stat().await.unwrap());
    for (offset, len) in [(0, 100), (299_950, 100), (300_000, 10), (123_456, 70_000)] {
        let want = remote.read_at(offset, len).await.unwrap();
        let got = file.read_at(offset, len).await.unwrap();
        assert_eq!(got, want, "read {len} at {offset}");
    }
    let extents = [(0, 10), (299_990, 10), (4096, 65_536)];
    let want = remote.readv(&extents).await.unwrap();
    assert_eq!(file.readv(extents.to_vec()).await.unwrap(), want);
    // an extent past the end fails the whole vector read
    let past = [(0, 10), (299_995, 10)];
    let want = theirs(remote.readv(&past).await);
    let got = ours(file.readv(past.to_vec()).await);
    assert_eq!(got, want);
    // writing through a read-only handle
    let data = bytes::Bytes::from_static(b"x");
    let want = theirs(remote.write_at(0, data.clone()).await);
    let got = ours(file.write_at(0, data).await);
    assert_eq!(got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn checksums_equal_the_stock_servers() {
    let Some((_data, _server, remote, local)) = start() else {
        return;
    };
    for p in ["/nine", "/big", "/zero", "/inlink"] {
        for alg in [None, Some("adler32"), Some("crc32c"), Some("CRC32C")] {
            let (want_alg, want) = remote.query_checksum(p, alg).await.unwrap();
            let got = local
                .checksum(&Caller::local("test"), p, alg)
                .await
                .unwrap();
            assert_eq!(
                (&got.alg[..], &got.value[..]),
                (want_alg.as_bytes(), want.as_bytes()),
                "{p} {alg:?}"
            );
        }
    }
}

/// Every entry beneath `root`: relative path, kind, size, permission bits
/// and the content of regular files.
fn snapshot(root: &Path) -> Vec<(PathBuf, String, u64, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let md = std::fs::symlink_metadata(&path).unwrap();
            let kind = format!("{:?}", md.file_type());
            let content = if md.is_file() {
                std::fs::read(&path).unwrap()
            } else {
                Vec::new()
            };
            if md.is_dir() {
                todo.push(path.clone());
            }
            let size = if md.is_dir() { 0 } else { md.len() };
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            out.push((rel, kind, size, md.mode() & 0o7777, content));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn namespace_changes_equal_the_stock_servers() {
    // twin trees: the stock server changes one, LocalFs the other
    let Some((data, _server, remote, _)) = start() else {
        return;
    };
    let twin = tempfile::tempdir().unwrap();
    populate(twin.path());
    let local = LocalFs::new(twin.path()).unwrap();
    let before = snapshot(twin.path());
    assert_eq!(before.len(), snapshot(data.path()).len());

    macro_rules! same {
        ($what:expr, $remote:expr, $local:expr) => {{
            let want = theirs($remote.await);
            let got = ours($local.await);
            assert_eq!(got, want, "{}", $what);
        }};
    }
    for (p, parents, mode) in [
        ("/made", false, 0o750),
        ("/made", false, 0o750),
        ("/made", false, 0o755),
        ("/made2", false, 0o050),
        ("/a/b/c", true, 0o755),
        ("/a/b/c", true, 0o755),
        ("/a/b/c", false, 0o700),
    ] {
        let what = format!("mkdir {p} {parents} {mode:o}");
        same!(
            what,
            remote.mkdir(p, parents, mode),
            local.mkdir(&Caller::local("test"), p, mode, parents)
        );
    }
    for p in ["/a/b/c", "/a/b/c", "/empty"] {
        same!(
            format!("rmdir {p}"),
            remote.rmdir(p),
            local.rmdir(&Caller::local("test"), p)
        );
    }
    for p in ["/torm", "/a/b", "/inlink", "/dangling"] {
        same!(
            format!("rm {p}"),
            remote.rm(p),
            local.rm(&Caller::local("test"), p)
        );
    }
    same!(
        "mv",
        remote.mv("/tomv", "/dir/moved"),
        local.mv(&Caller::local("test"), "/tomv", "/dir/moved")
    );
    same!(
        "mv dir",
        remote.mv("/full", "/dir/full"),
        local.mv(&Caller::local("test"), "/full", "/dir/full")
    );
    for mode in [0o000, 0o4755, 0o640] {
        let what = format!("chmod {mode:o}");
        same!(
            what,
            remote.chmod("/small", mode),
            local.chmod(&Caller::local("test"), "/small", mode)
        );
    }
    for size in [100, 6000, 0, 7] {
        let what = format!("truncate {size}");
        same!(
            what,
            remote.truncate("/small", size),
            local.truncate(&Caller::local("test"), "/small", size)
        );
    }
    let (theirs_now, ours_now) = (snapshot(data.path()), snapshot(twin.path()));
    assert_eq!(ours_now, theirs_now);
    assert_ne!(ours_now, before, "the script changed something");
}

/// Space and vfs answers: LocalFs reports the file system holding its root
/// as the stock server does (bytes for space, MiB and percent for vfs). Free
/// space moves while other tests write, so free figures get a 1 GiB margin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn space_and_vfs_match_the_stock_server() {
    let dir = tempfile::tempdir().unwrap();
    let Some(server) = StockServer::start(dir.path(), &[]) else {
        return;
    };
    let client = Client::new();
    let stock = client
        .fs(&format!("root://127.0.0.1:{}", server.port))
        .unwrap();
    let ours = LocalFs::new(dir.path()).unwrap();

    let (a, b) = (
        stock.query_space("/").await.unwrap(),
        ours.space(&Caller::local("test"), "/").await.unwrap(),
    );
    assert_eq!((&a.cgroup, a.space, a.quota), (&b.cgroup, b.space, b.quota));
    assert_eq!(b.used + b.free, b.space);
    assert_eq!(b.maxf, b.free);
    assert!((a.free - b.free).abs() < 1 << 30, "stock {a:?} ours {b:?}");

    let (a, b) = (
        stock.stat_vfs("/").await.unwrap(),
        ours.stat_vfs(&Caller::local("test"), "/").await.unwrap(),
    );
    assert_eq!(
        (a.nodes_rw, a.nodes_stage, a.free_stage, a.util_stage),
        (b.nodes_rw, b.nodes_stage, b.free_stage, b.util_stage)
    );
    assert!(
        (a.free_rw - b.free_rw).abs() < 1024,
        "stock {a:?} ours {b:?}"
    );
    assert!((a.util_rw - b.util_rw).abs() <= 1, "stock {a:?} ours {b:?}");
}
