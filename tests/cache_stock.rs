//! Our cache (`examples/xcache.rs`, in-process) between a stock xrootd
//! 5.5.3 origin and the stock clients (`xrdcp`, `xrdfs`, the Python
//! `XRootD.client`):
//!
//! - every byte `xrdcp` and `vector_read` get equals the origin's file, cold
//!   and warm; warm reads send nothing to the origin; after a graceful
//!   restart on the same cache directory, the new instance serves the same
//!   reads without one origin request;
//! - a cold vector read of scattered elements (some straddling 4 kB blocks,
//!   one ending at the last byte) costs ONE origin request;
//! - `xrdfs query stats a` answers the cache's table;
//! - `xrdfs ls -l` and `stat` answer as the origin does, a vector-read
//!   element past end of file fails with the origin's error code, and an
//!   open for writing is refused.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use clap::Parser;
use xroot_testkit::our_cache::{cli_args, content, RunningCache};
use xroot_testkit::stock::StockServer;
use xroot_testkit::tools::{run_ok, run_tool};
use xroot_tools::xcache;

/// A multi-MB file with a partial last 4 kB block.
const BIG: usize = (5 << 20) + 1234;
/// The file read by vectors.
const VR: usize = (3 << 20) + 77;

/// The Python client: `URL PATH readv O:L,O:L...` prints `ok` and the
/// elements' bytes, concatenated; `URL PATH open FLAG` opens with
/// `OpenFlags.FLAG` and prints `ok`. A failure prints `err CODE ERRNO`.
const PYTHON: &str = r#"
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
url, path, mode, arg = sys.argv[1:5]
out = sys.stdout.buffer
f = client.File()
if mode == "open":
    st, _ = f.open(url + "/" + path, getattr(OpenFlags, arg))
    data = b""
else:
    st, _ = f.open(url + "/" + path, OpenFlags.READ)
    assert st.ok, st
    chunks = [tuple(int(x) for x in c.split(":")) for c in arg.split(",")]
    st, v = f.vector_read(chunks)
    data = b"".join(c.buffer for c in v.chunks) if st.ok else b""
if st.ok:
    out.write(b"ok\n" + data)
else:
    out.write(("err %d %d\n" % (st.code, st.errno)).encode())
f.close()
"#;

/// Runs [`PYTHON`]; its status line and the data after it.
async fn python(url: &str, path: &str, mode: &str, arg: &str) -> (String, Vec<u8>) {
    let args: Vec<String> = ["-c", PYTHON, url, path, mode, arg]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let out = run_ok("/usr/bin/python3", &args).await;
    let nl = out.iter().position(|&b| b == b'\n').expect("a status line");
    (
        String::from_utf8_lossy(&out[..nl]).into_owned(),
        out[nl + 1..].to_vec(),
    )
}

/// Scattered vector-read elements over a file of `size` bytes: 200
/// elements of 100 bytes to ~9 kB, many straddling a 4 kB block boundary,
/// ascending, the last one ending at the last byte of the file.
fn scattered(size: usize) -> Vec<(usize, usize)> {
    let step = size / 201;
    let mut chunks: Vec<(usize, usize)> = (0..199)
        .map(|i| (i * step + 4096 - 50 + i % 97, 100 + (i * 37) % 9000))
        .collect();
    chunks.push((size - 4100, 4100));
    chunks
}

fn as_arg(chunks: &[(usize, usize)]) -> String {
    let parts: Vec<String> = chunks.iter().map(|(o, l)| format!("{o}:{l}")).collect();
    parts.join(",")
}

fn expected(data: &[u8], chunks: &[(usize, usize)]) -> Vec<u8> {
    chunks
        .iter()
        .flat_map(|&(o, l)| data[o..o + l].iter().copied())
        .collect()
}

/// Starts the example in-process in front of `origin_port`, caching in `dir`.
async fn start_cache(origin_port: u16, dir: &std::path::Path) -> RunningCache {
    let cli = xcache::Cli::try_parse_from(cli_args(origin_port, dir)).unwrap();
    RunningCache::serve(xcache::start(&cli).await.unwrap())
}

/// `xrdcp -f URL//PATH` into a temp file; its bytes.
async fn xrdcp(url: &str, path: &str) -> Vec<u8> {
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("copy");
    let args = vec![
        "-f".to_string(),
        "-s".to_string(),
        format!("{url}/{path}"),
        copy.to_str().unwrap().to_string(),
    ];
    run_ok("xrdcp", &args).await;
    std::fs::read(copy).unwrap()
}

/// `xrdfs HOST:PORT ARGS...`'s stdout.
async fn xrdfs(url: &str, list: &[&str]) -> String {
    let mut args = vec![url.to_string()];
    args.extend(list.iter().map(|s| s.to_string()));
    String::from_utf8(run_ok("xrdfs", &args).await).unwrap()
}

/// An origin exporting `big.bin`, `vr.bin` and `sub/small`.
fn origin_files(dir: &std::path::Path) -> (Vec<u8>, Vec<u8>) {
    let big = content(1, BIG);
    let vr = content(2, VR);
    std::fs::write(dir.join("big.bin"), &big).unwrap();
    std::fs::write(dir.join("vr.bin"), &vr).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/small"), &big[..5000]).unwrap();
    (big, vr)
}

/// A stock origin serving [`origin_files`] and our cache in front of it.
struct Stack {
    data: tempfile::TempDir,
    big: Vec<u8>,
    vr: Vec<u8>,
    origin: StockServer,
    store: tempfile::TempDir,
    cache: RunningCache,
}

/// The [`Stack`]; `None` when the stock xrootd is missing outside CI.
async fn stack() -> Option<Stack> {
    let data = tempfile::tempdir().unwrap();
    let (big, vr) = origin_files(data.path());
    let origin = StockServer::start(data.path(), &[])?;
    let store = tempfile::tempdir().unwrap();
    let cache = start_cache(origin.port, store.path()).await;
    Some(Stack {
        data,
        big,
        vr,
        origin,
        store,
        cache,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_stock_python, ignore = "needs the stock Python bindings")]
async fn stock_clients_read_through_the_cache_cold_warm_and_after_a_restart() {
    // every field bound: an unbound TempDir would be deleted here
    let Some(Stack {
        data: _data,
        big,
        vr,
        origin,
        store,
        cache,
    }) = stack().await
    else {
        return;
    };
    let url = cache.url();
    let chunks = scattered(VR);
    let arg = as_arg(&chunks);

    // cold, then warm: xrdcp
    assert!(xrdcp(&url, "/big.bin").await == big, "xrdcp cold");
    let cold = cache.fs.stats();
    assert!(cold.origin_request_count >= 1, "{cold}");
    assert_eq!(cold.bytes_fetched, BIG as u64, "{cold}");
    assert!(xrdcp(&url, "/big.bin").await == big, "xrdcp warm");
    let warm = cache.fs.stats();
    assert_eq!(
        warm.origin_request_count, cold.origin_request_count,
        "{warm}"
    );
    assert!(warm.bytes_from_disk >= BIG as u64, "{warm}");

    // a cold vector read: one client request, ONE origin request
    let (status, got) = python(&url, "/vr.bin", "readv", &arg).await;
    assert_eq!(status, "ok");
    assert!(got == expected(&vr, &chunks), "vector_read cold");
    let after = cache.fs.stats();
    assert_eq!(after.client_requests, warm.client_requests + 1, "{after}");
    assert_eq!(
        after.origin_request_count,
        warm.origin_request_count + 1,
        "one origin request for the cold vector read\n{after}"
    );
    // warm: nothing more from the origin
    let (status, got) = python(&url, "/vr.bin", "readv", &arg).await;
    assert_eq!(status, "ok");
    assert!(got == expected(&vr, &chunks), "vector_read warm");
    let warm = cache.fs.stats();
    assert_eq!(
        warm.origin_request_count, after.origin_request_count,
        "{warm}"
    );

    // the table, to a query
    let table = xrdfs(&url, &["query", "stats", "a"]).await;
    let line = format!("{} sent", warm.origin_request_count);
    assert!(
        table.contains("origin requests") && table.contains(&line),
        "{table}"
    );
    // the same through our client
    let ours = xroot::client::Client::new()
        .fs(&url)
        .unwrap()
        .query_stats("a")
        .await
        .unwrap();
    assert!(ours.contains(&line), "{ours}");

    // a new cache on the same directory serves it all from disk
    cache.stop().await;
    let cache = start_cache(origin.port, store.path()).await;
    let url = cache.url();
    assert!(xrdcp(&url, "/big.bin").await == big, "xrdcp after restart");
    let (status, got) = python(&url, "/vr.bin", "readv", &arg).await;
    assert_eq!(status, "ok");
    assert!(got == expected(&vr, &chunks), "vector_read after restart");
    let restarted = cache.fs.stats();
    assert_eq!(restarted.origin_request_count, 0, "{restarted}");
    assert_eq!(restarted.bytes_fetched, 0, "{restarted}");
    cache.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_stock_python, ignore = "needs the stock Python bindings")]
async fn the_cache_answers_the_namespace_and_errors_as_the_origin_does() {
    let Some(Stack {
        data,
        big,
        vr,
        origin,
        store: _store,
        cache,
    }) = stack().await
    else {
        return;
    };
    let url = cache.url();
    let direct = format!("root://127.0.0.1:{}", origin.port);

    for (list, has) in [
        (&["ls", "-l", "/"][..], "/big.bin"),
        (&["ls", "-l", "/sub"], "/sub/small"),
        (&["stat", "/big.bin"], "5244114"),
        (&["stat", "/sub"], "IsDir"),
    ] {
        let answer = xrdfs(&url, list).await;
        assert!(answer.contains(has), "xrdfs {list:?}: {answer}");
        assert_eq!(answer, xrdfs(&direct, list).await, "xrdfs {list:?}");
    }

    // an element crossing the end of file fails the vector read, with the
    // origin's code
    let past = as_arg(&[(0, 10), (VR - 5, 10)]);
    let want = python(&direct, "/vr.bin", "readv", &past).await;
    assert_eq!(
        want.0, "err 400 3005",
        "kXR_FSError (PROTOCOL.md Appendix 3)"
    );
    assert_eq!(python(&url, "/vr.bin", "readv", &past).await, want);
    // and nothing was fetched for it
    assert_eq!(cache.fs.stats().origin_request_count, 0);

    // opening for writing is refused (kXR_NotAuthorized), the origin
    // untouched
    for flag in ["UPDATE", "DELETE", "NEW"] {
        for path in ["/big.bin", "/new.bin"] {
            let (status, _) = python(&url, path, "open", flag).await;
            assert_eq!(status, "err 400 3010", "open {path} {flag}");
        }
    }
    let up = tempfile::tempdir().unwrap();
    let local = up.path().join("up");
    std::fs::write(&local, b"upload").unwrap();
    let args = vec![
        "-f".to_string(),
        local.to_str().unwrap().to_string(),
        format!("{url}//big.bin"),
    ];
    assert!(!run_tool("xrdcp", &args).await.status.success());
    assert!(std::fs::read(data.path().join("big.bin")).unwrap() == big);
    assert!(!data.path().join("new.bin").exists());
    assert!(std::fs::read(data.path().join("vr.bin")).unwrap() == vr);
    cache.stop().await;
}

/// `xrdcp` as [`xrdcp`] with plain reads (`XRD_CPUSEPGWRTRD=0`), which our
/// cache answers with `sendfile(2)` from its store once the blocks are
/// cached and checked; its bytes.
async fn xrdcp_plain(url: &str, path: &str) -> Vec<u8> {
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("copy");
    let cmd = xroot_testkit::tools::command(
        "timeout",
        &[
            "300",
            "xrdcp",
            "-f",
            "-s",
            &format!("{url}/{path}"),
            copy.to_str().unwrap(),
        ],
        &[("XRD_CPUSEPGWRTRD", "0")],
    );
    let out = xroot_testkit::tools::run_off_workers(cmd).await;
    assert!(
        out.status.success(),
        "{}",
        xroot_testkit::tools::stderr(&out)
    );
    std::fs::read(copy).unwrap()
}

/// With `xcache`'s defaults, through a relay that counts what the cache
/// asks of the origin: the origin's `kXR_Qconfig` is asked once for two
/// files on its one connection; a warm copy with plain reads (sendfile)
/// and with pgread has the origin's bytes and asks the origin nothing, not
/// even an open (the trust window); a file changed at the origin is served
/// as cached within the window and noticed at the first open after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn warm_copies_ask_the_origin_nothing_and_a_changed_file_is_noticed_after_the_window() {
    use xroot::proto::RequestId;
    use xroot_testkit::corrupt_proxy::{CorruptProxy, Spoil};

    let data = tempfile::tempdir().unwrap();
    let (big, vr) = origin_files(data.path());
    let Some(origin) = StockServer::start(data.path(), &[]) else {
        return;
    };
    let relay = CorruptProxy::start(origin.port, Spoil::Nothing).await;
    let store = tempfile::tempdir().unwrap();
    let cache = start_cache(relay.port, store.path()).await;
    let url = cache.url();

    assert!(xrdcp(&url, "/big.bin").await == big, "xrdcp cold");
    assert!(xrdcp(&url, "/vr.bin").await == vr, "xrdcp cold");
    assert_eq!(relay.requests(RequestId::OPEN), 2);
    assert_eq!(
        relay.requests(RequestId::QUERY),
        1,
        "Qconfig per connection"
    );
    let asked = |relay: &CorruptProxy| {
        [
            RequestId::OPEN,
            RequestId::STAT,
            RequestId::READ,
            RequestId::PGREAD,
            RequestId::READV,
        ]
        .map(|id| relay.requests(id))
    };
    let cold = asked(&relay);
    let from_disk = cache.fs.stats().bytes_from_disk;
    assert!(xrdcp_plain(&url, "/big.bin").await == big, "plain warm");
    assert!(
        xrdcp_plain(&url, "/big.bin").await == big,
        "plain warm again"
    );
    assert!(xrdcp(&url, "/big.bin").await == big, "pgread warm");
    assert_eq!(asked(&relay), cold, "a warm copy asked the origin");
    assert!(cache.fs.stats().bytes_from_disk >= from_disk + 3 * BIG as u64);

    // the origin's file changes (same size, a later modification time)
    let changed = content(9, BIG);
    let path = data.path().join("big.bin");
    std::fs::write(&path, &changed).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(later)
        .unwrap();
    // within the window (the default, ten minutes): served as cached
    assert!(xrdcp(&url, "/big.bin").await == big, "within the window");
    assert_eq!(asked(&relay), cold, "asked the origin within the window");
    cache.stop().await;

    // a cache on the same directory whose window is one second: the first
    // open after it asks the origin, sees the change, caches the new file
    let mut args = cli_args(relay.port, store.path());
    args.extend(["--trust-window".to_string(), "1".to_string()]);
    let cli = xcache::Cli::try_parse_from(args).unwrap();
    let cache = RunningCache::serve(xcache::start(&cli).await.unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(
        xrdcp(&cache.url(), "/big.bin").await == changed,
        "the change was not noticed after the window"
    );
    assert_eq!(relay.requests(RequestId::OPEN), cold[0] + 1);
    cache.stop().await;
}
