//! Our `xrdcp --tpc first|only` (examples/xrdcp.rs, driving
//! `xroot_client::ThirdPartyCopy`) between stock xrootd 5.5.3 servers
//! started with `ofs.tpc` (`StockServer::start_tpc`): the bytes at the
//! destination compared with the source's, with and without `--cksum`
//! (the checksum it prints compared with the stock `xrdfs query
//! checksum`), with `--tpc delegate` and the source's CGI; several files
//! into a directory in one run; a missing source failing with the stock
//! tool's exit code and leaving nothing; and `--tpc first` beside the
//! stock tool on the same inputs: the usual copy from a source without
//! TPC, and the same failure (the stock 5.5.3 does not fall back there)
//! towards a destination without it. Then with our servers (`serve
//! --tpc`, in-process): ours → stock, stock → ours and ours → ours, with
//! and without `--cksum`.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use xroot_testkit::ours::serve_example;
use xroot_testkit::stock::{self, StockServer};
use xroot_testkit::tools::{self, code, stderr};

/// Size of the file copied: 3 MB and a bit, not a multiple of a block.
const SIZE: usize = 3_000_017;

/// Byte `i` of a test file is `(i * 7 + seed) % 251`.
fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + seed) % 251) as u8).collect()
}

fn xrdcp_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| xroot_testkit::example::example_bin("xrdcp"))
}

/// Our xrdcp with `args` (one connection attempt, no bar).
async fn ours(args: &[&str]) -> Output {
    let mut all = vec!["-N"];
    all.extend_from_slice(args);
    let cmd = tools::command(xrdcp_bin(), &all, &[("XRD_CONNECTIONRETRY", "1")]);
    tools::run_off_workers(cmd).await
}

/// The stock xrdcp with `args`.
async fn stock(args: &[&str]) -> Output {
    let mut all = vec!["-N".to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    tools::run_tool("xrdcp", &all).await
}

fn assert_ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {:?}\n{}", o.status, stderr(o));
}

/// Two stock TPC servers: the source holding `src.bin` ([`SIZE`] bytes)
/// and `f0`..`f2`, the destination empty but for `dir/`. `None` when
/// xrootd is missing outside CI.
struct Pair {
    src: StockServer,
    dst: StockServer,
    content: Vec<u8>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn pair() -> Option<Pair> {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let content = pattern(SIZE, 0);
    std::fs::write(a.path().join("src.bin"), &content).unwrap();
    for i in 0..3 {
        std::fs::write(a.path().join(format!("f{i}")), pattern(65_536, i + 1)).unwrap();
    }
    std::fs::create_dir(b.path().join("dir")).unwrap();
    let src = StockServer::start_tpc(a.path(), 60, &[])?;
    let dst = StockServer::start_tpc(b.path(), 60, &[])?;
    Some(Pair {
        src,
        dst,
        content,
        _dirs: (a, b),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn only_copies_stock_to_stock_with_and_without_a_checksum() {
    let Some(p) = pair() else { return };
    let from = p.src.tpc_url("/src.bin");
    // without a checksum
    let o = ours(&["--tpc", "only", &from, &p.dst.tpc_url("/plain.bin")]).await;
    assert_ok(&o, "--tpc only");
    assert!(std::fs::read(p.dst.data.join("plain.bin")).unwrap() == p.content);
    // with one: both servers asked, the value printed as the stock's
    let o = ours(&[
        "--cksum",
        "adler32",
        "--tpc",
        "only",
        &from,
        &p.dst.tpc_url("/ck.bin"),
    ])
    .await;
    assert_ok(&o, "--tpc only --cksum adler32");
    assert!(std::fs::read(p.dst.data.join("ck.bin")).unwrap() == p.content);
    let expected = stock::query_checksum(p.src.port, "/src.bin", "adler32").await;
    let printed = stderr(&o);
    let line = printed
        .lines()
        .find_map(|l| l.strip_prefix("adler32: "))
        .unwrap_or_else(|| panic!("no adler32 line in {printed:?}"));
    assert_eq!(line.split_whitespace().next(), Some(expected.as_str()));
    // delegating, with CGI of the source's own (passed as tpc.scgi)
    let with_cgi = format!("{from}?xroot.test=1");
    let o = ours(&[
        "--tpc",
        "delegate",
        "only",
        &with_cgi,
        &p.dst.tpc_url("/dlg.bin"),
    ])
    .await;
    assert_ok(&o, "--tpc delegate only");
    assert!(std::fs::read(p.dst.data.join("dlg.bin")).unwrap() == p.content);
    // an existing target without -f: refused as by the stock tool, kept
    let o = ours(&["--tpc", "only", &from, &p.dst.tpc_url("/plain.bin")]).await;
    let s = stock(&["--tpc", "only", &from, &p.dst.tpc_url("/plain.bin")]).await;
    assert_eq!((code(&o), code(&s)), (50, 50), "{}", stderr(&o));
    assert!(std::fs::read(p.dst.data.join("plain.bin")).unwrap() == p.content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn several_files_go_into_a_directory_in_one_run() {
    let Some(p) = pair() else { return };
    let srcs: Vec<String> = (0..3).map(|i| p.src.tpc_url(&format!("/f{i}"))).collect();
    let dir = p.dst.tpc_url("/dir/");
    let mut args = vec!["--tpc", "only"];
    args.extend(srcs.iter().map(String::as_str));
    args.push(&dir);
    let o = ours(&args).await;
    assert_ok(&o, "--tpc only f0 f1 f2 dir/");
    for i in 0..3 {
        let got = std::fs::read(p.dst.data.join(format!("dir/f{i}"))).unwrap();
        assert!(got == pattern(65_536, i + 1), "f{i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn a_missing_source_fails_as_the_stock_and_leaves_nothing() {
    let Some(p) = pair() else { return };
    let from = p.src.tpc_url("/no-such-file");
    let o = ours(&["--tpc", "only", &from, &p.dst.tpc_url("/ours.bin")]).await;
    let s = stock(&["--tpc", "only", &from, &p.dst.tpc_url("/stock.bin")]).await;
    assert_eq!(code(&s), 54, "the stock tool: {}", stderr(&s));
    assert_eq!(code(&o), code(&s), "ours: {}", stderr(&o));
    assert!(
        stderr(&o).contains("source root://localhost"),
        "{}",
        stderr(&o)
    );
    assert!(!p.dst.data.join("ours.bin").exists());
    assert!(!p.dst.data.join("stock.bin").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn first_falls_back_where_the_stock_does() {
    let Some(p) = pair() else { return };
    let plain_dir = tempfile::tempdir().unwrap();
    std::fs::write(plain_dir.path().join("src.bin"), &p.content).unwrap();
    let Some(plain) = StockServer::start(plain_dir.path(), &[]) else {
        return;
    };
    // a source without TPC: `first` copies the usual way, `only` fails
    let from = plain.tpc_url("/src.bin");
    for (tool, name) in [("ours", "fb-ours.bin"), ("stock", "fb-stock.bin")] {
        let args = ["--tpc", "first", &from, &p.dst.tpc_url(&format!("/{name}"))];
        let o = match tool {
            "ours" => ours(&args).await,
            _ => stock(&args).await,
        };
        assert_ok(&o, &format!("{tool} --tpc first from a source without TPC"));
        assert!(std::fs::read(p.dst.data.join(name)).unwrap() == p.content);
    }
    let only = ["--tpc", "only", &from, &p.dst.tpc_url("/only.bin")];
    let (o, s) = (ours(&only).await, stock(&only).await);
    assert_eq!((code(&o), code(&s)), (50, 50), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not support third-party copy"));
    assert!(!p.dst.data.join("only.bin").exists());
    // a destination without TPC refuses the open (kXR_Unsupported): the
    // stock 5.5.3 tool does not fall back there, and neither do we
    let first = |name: &str| {
        let to = plain.tpc_url(&format!("/{name}"));
        ["--tpc", "first", &p.src.tpc_url("/src.bin"), &to].map(String::from)
    };
    let s = stock(&first("to-plain-stock.bin").each_ref().map(String::as_str)).await;
    let o = ours(&first("to-plain-ours.bin").each_ref().map(String::as_str)).await;
    assert_eq!(code(&s), 54, "the stock tool: {}", stderr(&s));
    assert_eq!(code(&o), code(&s), "ours: {}", stderr(&o));
    assert!(
        stderr(&o).contains("target root://localhost"),
        "{}",
        stderr(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn only_copies_between_ours_and_the_stock_every_way() {
    let Some(p) = pair() else { return };
    let (ours_a, ours_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(ours_a.path().join("src.bin"), &p.content).unwrap();
    let url = |port: u16| format!("root://localhost:{port}/");
    let ours_src = url(serve_example(&["--tpc"], ours_a.path()).await.port());
    let ours_dst = url(serve_example(&["--tpc"], ours_b.path()).await.port());
    let ways = [
        (
            "ours → stock",
            ours_src.clone(),
            p.dst.tpc_url(""),
            p.dst.data.clone(),
        ),
        (
            "stock → ours",
            p.src.tpc_url(""),
            ours_dst.clone(),
            ours_b.path().to_path_buf(),
        ),
        (
            "ours → ours",
            ours_src,
            ours_dst,
            ours_b.path().to_path_buf(),
        ),
    ];
    for (i, (way, from, to, dst_dir)) in ways.iter().enumerate() {
        let from = format!("{from}/src.bin");
        let plain = format!("way{i}.bin");
        let o = ours(&["--tpc", "only", &from, &format!("{to}/{plain}")]).await;
        assert_ok(&o, way);
        assert!(
            std::fs::read(dst_dir.join(&plain)).unwrap() == p.content,
            "{way}"
        );
        let ck = format!("way{i}-ck.bin");
        let o = ours(&[
            "--cksum",
            "adler32",
            "--tpc",
            "only",
            &from,
            &format!("{to}/{ck}"),
        ])
        .await;
        assert_ok(&o, &format!("{way} --cksum adler32"));
        assert!(
            std::fs::read(dst_dir.join(&ck)).unwrap() == p.content,
            "{way}"
        );
    }
}
