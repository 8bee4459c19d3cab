//! The `serve` example (LocalFs behind Server) used by the stock clients:
//! `xrdcp` both ways (with `--cksum` and with `-S 4`), `xrdfs` (ls -l,
//! stat, mkdir -p, mv, rm, rmdir, query checksum and config) and the Python
//! `XRootD.client` (open, read, vector_read, write, dirlist, stat). Bytes
//! and answers are checked against the directory on disk.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};

use clap::Parser;
use xroot::server::ServerHandle;
use xroot_tools::serve;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn adler32_hex(data: &[u8]) -> String {
    format!("{:08x}", xroot_testkit::vectors::adler32(data))
}

/// Runs a stock tool off the runtime's worker threads; panics with its
/// output unless it exits 0.
async fn run(program: &str, args: Vec<String>) -> String {
    let what = format!("{program} {}", args.join(" "));
    let out: Output = tokio::task::spawn_blocking({
        let program = program.to_string();
        move || Command::new(program).env("TZ", "UTC").args(args).output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what}: {stdout}{stderr}");
    stdout
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The example serving `dir` on an ephemeral loopback port.
async fn start(dir: &Path) -> (SocketAddr, ServerHandle) {
    start_with(dir, &[]).await
}

/// [`start`] with more arguments.
async fn start_with(dir: &Path, more: &[&str]) -> (SocketAddr, ServerHandle) {
    let mut argv = vec!["serve", "--port", "0", "--readv-concurrency", "4"];
    argv.extend(more);
    argv.push(dir.to_str().unwrap());
    let cli = serve::Cli::try_parse_from(argv).unwrap();
    let server = serve::start(&cli).await.unwrap();
    let (addr, handle) = (server.local_addr(), server.handle());
    tokio::spawn(server.serve());
    (addr, handle)
}

/// `--read-only`: the stock tools read, and every change is refused with
/// `kXR_NotAuthorized` (the stock xrdcp and xrdfs exit 54), the directory
/// left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn read_only_refuses_every_change() {
    if !xroot_testkit::stock::xrootd_client_available() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let root = data.path();
    std::fs::write(root.join("nine"), b"123456789").unwrap();
    let (addr, handle) = start_with(root, &["--read-only"]).await;
    let url = format!("root://{addr}");
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("copy");
    let copy = copy.to_str().unwrap();
    run("xrdcp", args(&["-f", "-s", &format!("{url}//nine"), copy])).await;
    assert_eq!(std::fs::read(copy).unwrap(), b"123456789");
    let refused = |program: &'static str, list: Vec<String>| async move {
        let out = tokio::task::spawn_blocking(move || {
            Command::new(program).args(&list).output().unwrap()
        })
        .await
        .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(54), "{program}: {text}");
        assert!(text.contains("[3010]"), "{program}: {text}");
    };
    refused("xrdcp", args(&["-f", "-s", copy, &format!("{url}//new")])).await;
    refused("xrdcp", args(&["-f", "-s", copy, &format!("{url}//nine")])).await;
    for cmd in [
        &["mkdir", "/d"][..],
        &["rm", "/nine"],
        &["mv", "/nine", "/ten"],
    ] {
        refused("xrdfs", [vec![url.clone()], args(cmd)].concat()).await;
    }
    assert_eq!(std::fs::read(root.join("nine")).unwrap(), b"123456789");
    let names: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["nine"]);
    handle.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_stock_python, ignore = "needs the stock Python bindings")]
async fn stock_clients_use_the_example_server() {
    if !xroot_testkit::stock::xrootd_client_available()
        || !xroot_testkit::stock::stock_python_available()
    {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let root = data.path();
    let big = pattern(3_000_000);
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::write(root.join("nine"), b"123456789").unwrap();
    std::fs::create_dir(root.join("dir")).unwrap();
    let (addr, handle) = start(root).await;
    let url = format!("root://{addr}");
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("copy");
    let copy = copy.to_str().unwrap();

    // xrdcp down, plain, with a checksum check, and over 4 substreams
    for extra in [&[][..], &["--cksum", "adler32"], &["-S", "4"]] {
        let mut a = args(&["-f", "-s"]);
        a.extend(args(extra));
        a.extend([format!("{url}//big.bin"), copy.to_string()]);
        run("xrdcp", a).await;
        assert!(std::fs::read(copy).unwrap() == big, "xrdcp {extra:?}");
    }
    // and up, into a directory it makes
    let a = args(&["-f", "-s", "--cksum", "adler32", copy]);
    run("xrdcp", [a, vec![format!("{url}//up/loaded.bin")]].concat()).await;
    assert!(std::fs::read(root.join("up/loaded.bin")).unwrap() == big);

    // xrdfs
    let xrdfs = |list: &[&str]| {
        let mut a = vec![url.clone()];
        a.extend(args(list));
        run("xrdfs", a)
    };
    let listing = xrdfs(&["ls", "-l", "/"]).await;
    for name in ["/big.bin", "/nine", "/dir", "/up"] {
        assert!(listing.contains(name), "{listing}");
    }
    assert!(listing.contains(" 3000000 "), "{listing}");
    let stat = xrdfs(&["stat", "/nine"]).await;
    assert!(
        stat.contains("Size:   9") && stat.contains("Mode:   0644"),
        "{stat}"
    );
    let sum = xrdfs(&["query", "checksum", "/big.bin"]).await;
    assert_eq!(sum.trim(), format!("adler32 {}", adler32_hex(&big)));
    let sum = xrdfs(&["query", "checksum", "/nine?cks.type=md5"]).await;
    assert_eq!(sum.trim(), "md5 25f9e794323b453885f5181f1b624d0b");
    assert_eq!(
        xrdfs(&["query", "config", "readv_iov_max"]).await.trim(),
        "1024"
    );
    xrdfs(&["mkdir", "-p", "/a/b/c"]).await;
    assert!(root.join("a/b/c").is_dir());
    xrdfs(&["mv", "/nine", "/a/b/nine"]).await;
    assert_eq!(std::fs::read(root.join("a/b/nine")).unwrap(), b"123456789");
    xrdfs(&["rm", "/a/b/nine"]).await;
    xrdfs(&["rmdir", "/a/b/c"]).await;
    assert!(!root.join("a/b/nine").exists() && !root.join("a/b/c").exists());

    // the Python bindings
    let script = r#"
import sys
from XRootD import client
from XRootD.client.flags import DirListFlags, OpenFlags
url = sys.argv[1]
def ok(st):
    assert st.ok, st
f = client.File()
ok(f.open(url + "//big.bin", OpenFlags.READ)[0])
st, data = f.read(1000, 5000); ok(st)
sys.stdout.write("read %d %d\n" % (len(data), sum(data) % 65521))
st, v = f.vector_read([(0, 10), (2999990, 10), (4096, 65536)]); ok(st)
sys.stdout.write("readv %s\n" % ",".join("%d:%d" % (c.offset, sum(c.buffer) % 65521) for c in v.chunks))
st, s = f.stat(force=True); ok(st)
sys.stdout.write("stat %d\n" % s.size)
f.close()
w = client.File()
ok(w.open(url + "//dir/py.bin", OpenFlags.NEW)[0])
ok(w.write(b"hello from python", 0)[0])
ok(w.close()[0])
fs = client.FileSystem(url)
st, listing = fs.dirlist("/dir", DirListFlags.STAT); ok(st)
sys.stdout.write("dir %s\n" % ",".join("%s:%d" % (e.name, e.statinfo.size) for e in listing))
"#;
    let out = run(
        "/usr/bin/python3",
        vec!["-c".into(), script.into(), url.clone()],
    )
    .await;
    let sum = |d: &[u8]| d.iter().map(|&b| b as u64).sum::<u64>() % 65521;
    let readv: Vec<String> = [(0, 10), (2_999_990, 10), (4096, 65_536)]
        .iter()
        .map(|&(o, l)| format!("{o}:{}", sum(&big[o..o + l])))
        .collect();
    let want = format!(
        "read 5000 {}\nreadv {}\nstat 3000000\ndir py.bin:17\n",
        sum(&big[1000..6000]),
        readv.join(",")
    );
    assert_eq!(out, want);
    assert_eq!(
        std::fs::read(root.join("dir/py.bin")).unwrap(),
        b"hello from python"
    );
    handle.shutdown();
}

/// Startup errors name what failed, in one line, and exit 1: a directory
/// that does not exist, an address in use, a cache directory that cannot
/// be made.
#[test]
fn startup_errors_name_what_failed() {
    let serve = xroot_testkit::example::example_bin("serve");
    let xcache = xroot_testkit::example::example_bin("xcache");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let data = tempfile::tempdir().unwrap();
    let data = data.path().to_str().unwrap();
    let cases: Vec<(&Path, Vec<&str>, String)> = vec![
        (
            &serve,
            vec!["--port", "0", "/nonexistent/dir"],
            "serve: cannot serve /nonexistent/dir: No such file or directory".into(),
        ),
        (
            &serve,
            vec!["--port", &port, data],
            format!("serve: cannot listen on 127.0.0.1:{port}: Address already in use"),
        ),
        (
            &xcache,
            vec![
                "--origin",
                "root://127.0.0.1:1",
                "--cache-dir",
                "/proc/nope",
                "--port",
                "0",
            ],
            "xcache: cannot cache in /proc/nope: No such file or directory".into(),
        ),
    ];
    for (bin, args, want) in cases {
        let out = Command::new(bin).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(&want), "{args:?}: {stderr}");
        assert!(!stderr.contains("Os {"), "{args:?}: a debug dump: {stderr}");
    }
}
