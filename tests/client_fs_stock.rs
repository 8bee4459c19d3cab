//! `FileSystem` against a live stock xrootd 5.5.3 data server: every call,
//! its result compared with the exported directory on disk (std::fs), the
//! server's error codes kept; and the `xrdfs` example against the stock
//! `xrdfs` on the same server, output compared byte for byte (and against a
//! scripted peer for what the stock server cannot show).

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use clap::Parser;
use xroot::client::{Client, Config, Error};
use xroot::proto::request::PrepareOptions;
use xroot::proto::response::{LocateAccess, LocateNode, StatFlags, StatInfo};
use xroot::proto::ErrorCode;
use xroot_testkit::stock::StockServer;
use xroot_testkit::tools;
use xroot_tools::xrdfs;

/// Names in the big directory: long enough that a plain listing exceeds
/// the stock server's 4096-byte chunk and a dstat listing its 8192-byte
/// chunk, so both arrive as `kXR_oksofar` chunks and a final `kXR_ok`.
const MANY: usize = 300;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// The exported tree: files of the pattern, a directory with a
/// subdirectory, an empty directory, and a directory of [`MANY`] files.
fn populate(root: &Path) {
    let w = |p: &str, len: usize| std::fs::write(root.join(p), pattern(len)).unwrap();
    w("big.bin", 300_000);
    w("small.bin", 5000);
    w("tomv.bin", 1234);
    w("torm.bin", 10);
    for d in ["dir/sub", "empty", "full/inner", "many"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    w("dir/a.bin", 1000);
    w("dir/b.bin", 5000);
    for i in 0..MANY {
        w(&format!("many/entry-with-a-long-name-{i:04}.dat"), i);
    }
}

/// A client whose requests give up after a minute (a hang guard only).
fn client() -> Client {
    Client::with_config(Config {
        request_timeout: Duration::from_secs(60),
        ..Config::default()
    })
}

fn start() -> Option<(tempfile::TempDir, StockServer)> {
    let data = tempfile::tempdir().unwrap();
    populate(data.path());
    let server = StockServer::start(data.path(), &[])?;
    Some((data, server))
}

fn base(server: &StockServer) -> String {
    format!("root://127.0.0.1:{}", server.port)
}

/// Asserts that `result` failed with the server's `code`.
#[track_caller]
fn assert_code<T: std::fmt::Debug>(result: Result<T, Error>, code: ErrorCode) {
    match result {
        Err(e @ Error::Server { .. }) => assert_eq!(e.server_code(), Some(code), "{e}"),
        other => panic!("expected server error {code:?}, got {other:?}"),
    }
}

/// Asserts that `st` describes the file or directory `path` on disk.
#[track_caller]
fn assert_matches_disk(st: &StatInfo, path: &Path) {
    let md = std::fs::metadata(path).unwrap();
    assert_eq!(st.is_dir(), md.is_dir(), "{}", path.display());
    if md.is_file() {
        assert_eq!(st.size, md.len(), "{}", path.display());
    }
    assert_eq!(st.mtime, md.mtime(), "{}", path.display());
    let x = st
        .extended
        .as_ref()
        .expect("the stock server sends the extended stat");
    assert_eq!(x.mode, md.mode() & 0o7777, "{}", path.display());
    assert_eq!(x.ctime, md.ctime(), "{}", path.display());
    assert!(
        st.flags.contains(StatFlags::READABLE),
        "{}: {:?}",
        path.display(),
        st.flags
    );
}

fn disk_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn stat_statx_and_dirlist_match_the_disk() {
    let Some((_data, server)) = start() else {
        return;
    };
    let fs = client().fs(&base(&server)).unwrap();
    let root = &server.data;

    for p in ["big.bin", "small.bin", "dir", "dir/a.bin", "empty"] {
        let st = fs.stat(&format!("/{p}")).await.unwrap();
        assert_matches_disk(&st, &root.join(p));
    }
    assert!(fs.exists("/dir/b.bin").await.unwrap());
    assert!(!fs.exists("/dir/nope").await.unwrap());
    let missing = fs.stat("/missing").await;
    assert_eq!(missing.as_ref().unwrap_err().kind(), ErrorKind::NotFound);
    assert_code(missing, ErrorCode::NOT_FOUND);

    let flags = fs
        .statx(&["/big.bin", "/dir", "/dir/sub", "/small.bin"])
        .await
        .unwrap();
    let is_dir: Vec<bool> = flags
        .iter()
        .map(|f| f.contains(StatFlags::IS_DIR))
        .collect();
    assert_eq!(is_dir, [false, true, true, false]);
    assert!(flags.iter().all(|f| !f.contains(StatFlags::OFFLINE)));
    assert_code(
        fs.statx(&["/big.bin", "/missing"]).await,
        ErrorCode::NOT_FOUND,
    );
    assert!(fs.statx(&[]).await.unwrap().is_empty());

    for dir in ["dir", "empty", "many", ""] {
        let want = disk_names(&root.join(dir));
        for with_stat in [false, true] {
            let entries = fs.dirlist(&format!("/{dir}"), with_stat).await.unwrap();
            let mut names: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
            names.sort();
            assert_eq!(names, want, "/{dir} with_stat={with_stat}");
            for e in &entries {
                match (&e.stat, with_stat) {
                    (Some(st), true) => assert_matches_disk(st, &root.join(dir).join(&e.name)),
                    (None, false) => {}
                    (st, _) => panic!("/{dir}/{}: stat {st:?} with_stat={with_stat}", e.name),
                }
            }
        }
    }
    let many_bytes: usize = disk_names(&root.join("many"))
        .iter()
        .map(|n| n.len() + 1)
        .sum();
    assert!(many_bytes > 4096, "the big listing spans chunks");
    assert_code(fs.dirlist("/missing", false).await, ErrorCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn namespace_changes_show_on_disk() {
    let Some((_data, server)) = start() else {
        return;
    };
    let fs = client().fs(&base(&server)).unwrap();
    let root = &server.data;

    fs.mkdir("/made", false, 0o750).await.unwrap();
    let md = std::fs::metadata(root.join("made")).unwrap();
    assert!(md.is_dir());
    assert_eq!(md.mode() & 0o777, 0o750);
    // the stock server lets a mkdir of an existing directory with the same
    // permissions pass, and refuses one with other permissions
    fs.mkdir("/made", false, 0o750).await.unwrap();
    let exists = fs.mkdir("/made", false, 0o755).await;
    assert_eq!(
        exists.as_ref().unwrap_err().kind(),
        ErrorKind::AlreadyExists
    );
    assert_code(exists, ErrorCode::ITEM_EXISTS);
    assert_code(fs.mkdir("/dir", false, 0o750).await, ErrorCode::ITEM_EXISTS);
    assert_code(fs.mkdir("/a/b/c", false, 0o755).await, ErrorCode::NOT_FOUND);
    fs.mkdir("/a/b/c", true, 0o755).await.unwrap();
    assert!(root.join("a/b/c").is_dir());
    fs.mkdir("/a/b/c", true, 0o755)
        .await
        .expect("mkdir -p of an existing directory");

    fs.rmdir("/a/b/c").await.unwrap();
    assert!(!root.join("a/b/c").exists() && root.join("a/b").is_dir());
    // the stock server lets an rmdir of a missing directory pass
    fs.rmdir("/a/b/c").await.unwrap();
    assert_code(fs.rmdir("/big.bin").await, ErrorCode::FS_ERROR);
    assert!(root.join("big.bin").is_file());
    // the stock 5.5.3 server answers FSError, not ItExists (PROTOCOL.md Appendix 4)
    assert_code(fs.rmdir("/full").await, ErrorCode::FS_ERROR);
    assert!(root.join("full/inner").is_dir());

    fs.rm("/torm.bin").await.unwrap();
    assert!(!root.join("torm.bin").exists());
    assert_code(fs.rm("/torm.bin").await, ErrorCode::NOT_FOUND);
    assert_code(fs.rm("/full").await, ErrorCode::FS_ERROR);
    assert!(root.join("full/inner").is_dir());

    fs.mv("/tomv.bin", "/dir/moved.bin").await.unwrap();
    assert!(!root.join("tomv.bin").exists());
    assert_eq!(
        std::fs::read(root.join("dir/moved.bin")).unwrap(),
        pattern(1234)
    );
    assert_code(fs.mv("/tomv.bin", "/x.bin").await, ErrorCode::NOT_FOUND);

    fs.chmod("/small.bin", 0o640).await.unwrap();
    assert_eq!(
        std::fs::metadata(root.join("small.bin")).unwrap().mode() & 0o777,
        0o640
    );
    assert_eq!(
        fs.stat("/small.bin").await.unwrap().extended.unwrap().mode,
        0o640
    );
    assert_code(fs.chmod("/missing", 0o640).await, ErrorCode::NOT_FOUND);

    fs.truncate("/small.bin", 100).await.unwrap();
    assert_eq!(std::fs::read(root.join("small.bin")).unwrap(), pattern(100));
    fs.truncate("/small.bin", 200).await.unwrap();
    let grown = std::fs::read(root.join("small.bin")).unwrap();
    assert_eq!(
        (&grown[..100], &grown[100..]),
        (&pattern(100)[..], &[0u8; 100][..])
    );
    assert_code(fs.truncate("/missing", 1).await, ErrorCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn queries_locate_prepare_and_ping() {
    let Some((_data, server)) = start() else {
        return;
    };
    let fs = client().fs(&base(&server)).unwrap();
    let content = pattern(300_000);

    // the first query finds no cached checksum: waitresp, then an asynresp
    let (alg, value) = fs
        .query_checksum("/big.bin", Some("adler32"))
        .await
        .unwrap();
    assert_eq!(
        (alg.as_str(), value),
        (
            "adler32",
            format!("{:08x}", xroot_testkit::vectors::adler32(&content))
        )
    );
    let (alg, value) = fs.query_checksum("/big.bin", Some("crc32c")).await.unwrap();
    let crc = xroot::proto::page::crc32c(&content);
    assert_eq!((alg.as_str(), value), ("crc32c", format!("{crc:08x}")));
    // the server's default is the first configured (adler32); CGI in the path works too
    let (alg, _) = fs.query_checksum("/small.bin", None).await.unwrap();
    assert_eq!(alg, "adler32");
    let (alg, value) = fs
        .query_checksum("/small.bin?cks.type=crc32c", None)
        .await
        .unwrap();
    let crc = xroot::proto::page::crc32c(&pattern(5000));
    assert_eq!((alg.as_str(), value), ("crc32c", format!("{crc:08x}")));
    assert_code(
        fs.query_checksum("/big.bin", Some("md5")).await,
        ErrorCode::SERVER_ERROR,
    );
    assert_code(
        fs.query_checksum("/missing", None).await,
        ErrorCode::NOT_FOUND,
    );

    let version =
        String::from_utf8(tools::run(tools::command("xrootd", &["-v"], &[])).stderr).unwrap();
    let keys = [
        "readv_iov_max",
        "readv_ior_max",
        "chksum",
        "version",
        "no_such_key",
    ];
    let values = fs.query_config(&keys).await.unwrap();
    assert_eq!(
        values,
        [
            "1024",
            "2097136",
            "0:adler32,1:crc32c",
            version.trim(),
            "no_such_key"
        ]
    );
    assert_eq!(fs.query_config(&["readv_iov_max"]).await.unwrap(), ["1024"]);
    assert!(matches!(
        fs.query_config(&["two words"]).await,
        Err(Error::InvalidArgument(_))
    ));

    // the stock server's statistics are XML
    let stats = fs.query_stats("a").await.unwrap();
    assert!(stats.starts_with("<statistics"), "{stats}");
    assert!(matches!(
        fs.query_stats("").await,
        Err(Error::InvalidArgument(_))
    ));

    let space = fs.query_space("/").await.unwrap();
    assert_eq!(&space.cgroup[..], b"public");
    assert_eq!(space.used + space.free, space.space);
    assert_eq!(space.quota, -1);
    let vfs = fs.stat_vfs("/").await.unwrap();
    assert_eq!((vfs.nodes_rw, vfs.nodes_stage), (1, 0));
    assert!((0..=100).contains(&vfs.util_rw), "{vfs:?}");
    // MiB against bytes, a moment apart on a disk other tests write to
    let free_mib = space.free >> 20;
    assert!(
        (vfs.free_rw - free_mib).abs() < 4096,
        "vfs {} MiB, space {free_mib} MiB",
        vfs.free_rw
    );

    let at = fs.locate("/big.bin").await.unwrap();
    assert_eq!(at.len(), 1, "{at:?}");
    assert_eq!(
        (at[0].node, at[0].access),
        (LocateNode::ServerOnline, LocateAccess::ReadWrite)
    );
    let address = String::from_utf8(at[0].address.to_vec()).unwrap();
    assert!(address.ends_with(&format!(":{}", server.port)), "{address}");
    assert_code(fs.locate("/missing").await, ErrorCode::NOT_FOUND);
    // the documented `*path` (any server that could hold it) and `*` (any
    // server) forms go as they are: the stock server refuses `/*` and
    // `/*/big.bin` as missing files
    for any in ["*/big.bin", "*"] {
        let at = fs
            .locate(any)
            .await
            .unwrap_or_else(|e| panic!("locate {any}: {e}"));
        assert_eq!(at.len(), 1, "{any}: {at:?}");
        let address = String::from_utf8(at[0].address.to_vec()).unwrap();
        assert!(address.ends_with(&format!(":{}", server.port)), "{address}");
    }

    let id = fs
        .prepare(&["/big.bin", "/small.bin"], PrepareOptions::STAGE)
        .await
        .unwrap();
    assert!(!id.is_empty() && !id.contains('\0'), "{id:?}");
    assert_eq!(
        fs.prepare(&["/big.bin"], PrepareOptions::EMPTY)
            .await
            .unwrap(),
        ""
    );

    fs.ping().await.unwrap();
}

/// The example's stdout, or its exit status and message.
async fn example(fs_url: &str, args: &[&str]) -> Result<String, xrdfs::Failure> {
    let argv = ["xrdfs", fs_url].into_iter().chain(args.iter().copied());
    let cli = xrdfs::Cli::try_parse_from(argv).expect("arguments parse");
    let mut out = Vec::new();
    xrdfs::run(&cli, &mut out).await?;
    Ok(String::from_utf8(out).unwrap())
}

/// The stock `xrdfs`'s stdout, stderr and exit status, with times in UTC
/// like the example's.
fn stock(fs_url: &str, args: &[&str]) -> (String, String, i32) {
    let mut xrdfs = tools::command("xrdfs", &[fs_url], &[("TZ", "UTC")]);
    xrdfs.args(args);
    let out = tools::run(xrdfs);
    let code = tools::code(&out);
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        code,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn xrdfs_example_prints_what_the_stock_xrdfs_prints() {
    let Some((_data, server)) = start() else {
        return;
    };
    let url = base(&server);
    // listings and stats first (a checksum reads the file and may move its atime)
    for args in [
        &["ls", "-l", "/dir"][..],
        &["ls", "/dir"],
        &["ls", "-l", "/"],
        &["ls", "-l", "/many"],
        &["ls", "-l", "/big.bin"],
        &["ls", "/empty"],
        // CGI on the path goes on the requests, not into the children's names
        &["ls", "/dir?x=1"],
        &["ls", "-l", "/dir?x=1&y=2"],
        &["ls", "/dir/?x=1"],
        &["ls", "/?x=1"],
        &["ls", "-l", "/big.bin?x=1"],
        &["stat", "/big.bin"],
        &["stat", "/dir"],
        &["query", "checksum", "/big.bin"],
        &["query", "checksum", "/big.bin?cks.type=crc32c"],
        &["query", "config", "readv_iov_max"],
        &["query", "config", "chksum"],
    ] {
        let ours = example(&url, args)
            .await
            .unwrap_or_else(|f| panic!("{args:?}: {f:?}"));
        let (theirs, err, code) = stock(&url, args);
        assert_eq!(code, 0, "stock xrdfs {args:?}: {err}");
        assert!(!ours.is_empty() || args == ["ls", "/empty"], "{args:?}");
        assert_eq!(ours, theirs, "xrdfs {args:?}");
    }

    // failures: the same exit status, the server's code in the message
    for (args, code) in [
        (&["stat", "/missing"][..], "[3011]"),
        (&["mkdir", "/dir"], "[3018]"),
        (&["rm", "/missing"], "[3011]"),
        (&["rmdir", "/full"], "[3005]"),
        (&["query", "checksum", "/big.bin?cks.type=md5"], "[3012]"),
    ] {
        let ours = example(&url, args).await.expect_err("fails");
        let (_, err, status) = stock(&url, args);
        assert_eq!(
            i32::from(ours.code),
            status,
            "{args:?}: {} / {err}",
            ours.message
        );
        assert!(ours.message.contains(code), "{args:?}: {}", ours.message);
        assert!(err.contains(code), "stock {args:?}: {err}");
    }

    // changes, checked on disk
    let root = &server.data;
    example(&url, &["mkdir", "-p", "/new/deep"]).await.unwrap();
    assert!(root.join("new/deep").is_dir());
    example(&url, &["mv", "/tomv.bin", "/new/moved.bin"])
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(root.join("new/moved.bin")).unwrap(),
        pattern(1234)
    );
    // rm prints the stock tool's status line, on success and on failure
    let ours = example(&url, &["rm", "/new/moved.bin"]).await.unwrap();
    std::fs::write(root.join("again.bin"), b"x").unwrap();
    let (theirs, err, code) = stock(&url, &["rm", "/again.bin"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ours.replace("/new/moved.bin", "/again.bin"), theirs);
    let mut out = Vec::new();
    let argv = ["xrdfs", url.as_str(), "rm", "/again.bin"];
    let failed = xrdfs::run(&xrdfs::Cli::try_parse_from(argv).unwrap(), &mut out).await;
    assert_eq!(failed.expect_err("gone").code, 54);
    let (theirs, _, code) = stock(&url, &["rm", "/again.bin"]);
    assert_eq!(code, 54);
    assert_eq!(String::from_utf8(out).unwrap(), theirs);
    example(&url, &["rmdir", "/new/deep"]).await.unwrap();
    assert!(disk_names(&root.join("new")).is_empty());

    // the stock tool's HOST:PORT form, without the scheme
    let bare = url.trim_start_matches("root://");
    for args in [&["stat", "/big.bin"][..], &["ls", "-l", "/dir"]] {
        let ours = example(bare, args).await.unwrap();
        let (theirs, err, code) = stock(bare, args);
        assert_eq!(code, 0, "stock xrdfs {bare} {args:?}: {err}");
        assert_eq!(ours, theirs, "xrdfs {bare} {args:?}");
    }

    let bad = example("not a url", &["ls", "/"])
        .await
        .expect_err("bad URL");
    assert_eq!(bad.code, 50, "{}", bad.message);
}

/// A server that ignores `kXR_dstat` (a scripted peer): `xrdfs ls -l` of a
/// directory with CGI stats each child on its own, with the CGI, and prints
/// the children as `dir/name`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xrdfs_ls_stats_each_child_when_the_listing_has_no_stat() {
    use bytes::BytesMut;
    use xroot::proto::request::Request;
    use xroot::proto::response::DirList;
    use xroot::proto::RequestId;
    use xroot_testkit::scripted::{Peer, Step};

    let peer = Peer::start(|call| match &call.request {
        Request::Stat(s) if s.path.starts_with(b"/dir?") => {
            let mut body = BytesMut::new();
            StatInfo {
                flags: StatFlags::IS_DIR | StatFlags::READABLE,
                ..call.stat()
            }
            .encode(&mut body);
            vec![Step::ok(body.freeze())]
        }
        Request::Dirlist(_) => DirList::Plain(vec!["b.bin".into(), "a.bin".into()])
            .responses()
            .into_iter()
            .map(Step::Reply)
            .collect(),
        _ => call.serve(),
    })
    .await;
    let url = format!("root://127.0.0.1:{}", peer.port);
    let out = example(&url, &["ls", "-l", "/dir?authz=t"])
        .await
        .unwrap_or_else(|f| panic!("{f:?}"));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].ends_with(" /dir/a.bin"), "{out}");
    assert!(lines[1].ends_with(" /dir/b.bin"), "{out}");
    assert!(lines.iter().all(|l| l.starts_with("-r--")), "{out}");
    let stats: Vec<String> = peer
        .requests_of(RequestId::STAT)
        .into_iter()
        .map(|s| match s.request {
            Request::Stat(st) => String::from_utf8(st.path.to_vec()).unwrap(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        stats,
        ["/dir?authz=t", "/dir/b.bin?authz=t", "/dir/a.bin?authz=t"]
    );
}

/// Usage errors exit as the stock `xrdfs`'s: 1 with no arguments, 50 for
/// an unknown command or a missing argument.
#[test]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
fn xrdfs_usage_errors_exit_as_the_stock_tool_s() {
    let Some((_data, server)) = start() else {
        return;
    };
    let host = format!("127.0.0.1:{}", server.port);
    let ours = xroot_testkit::example::example_bin("xrdfs");
    for (args, want) in [
        (vec![], 1),
        (vec![host.as_str(), "bogus"], 50),
        (vec![host.as_str(), "stat"], 50),
    ] {
        let run = |program: &std::path::Path| {
            tools::run(tools::command(program, &args, &[]))
                .status
                .code()
        };
        assert_eq!(
            run(std::path::Path::new("xrdfs")),
            Some(want),
            "stock {args:?}"
        );
        assert_eq!(run(&ours), Some(want), "ours {args:?}");
    }
}
