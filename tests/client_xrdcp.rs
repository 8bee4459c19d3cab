//! The xrdcp example (examples/xrdcp.rs) against the stock xrootd 5.5.3:
//! copies both ways with every checksum and with `XRD_CPUSEPGWRTRD` 0 and
//! 1, the bytes compared with the source and the checksum it prints
//! compared with what the stock `xrdcp --cksum ALG:print` and `xrdfs query
//! checksum` report; `-f` semantics; several sources into a directory with
//! `--parallel`; `--connections` spreading one file over channels; a page
//! spoiled in transit repaired by pgread; a checksum mismatch failing the
//! copy; against a scripted peer, a server's checksum written another
//! way (no leading zeros, `0x`, upper case) compared as a value; and the
//! exit codes beside the stock tool's on the same failures, a credential
//! refused at login (`sss`, `ztn`; by our server and the stock one) among
//! them.
//!
//! The example binary is the one cargo builds next to this test
//! (`target/<profile>/examples/xrdcp`); the test runs `cargo build
//! --example xrdcp` first, a no-op when it is fresh.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use xroot::proto::RequestId;
use xroot_testkit::corrupt_proxy::{CorruptProxy, Spoil};
use xroot_testkit::stock::StockServer;
use xroot_testkit::tools::{self, stderr};

/// Size of the file copied both ways: 64 MiB, eight 8 MiB blocks.
const SIZE: usize = 64 << 20;

const ALGS: [&str; 3] = ["adler32", "crc32c", "md5"];

/// Byte `i` of every test file is `(i * 7) % 251`, from `seed` on.
fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (seed..seed + len).map(|i| (i * 7 % 251) as u8).collect()
}

/// The example binary, built by cargo for the profile of this test.
fn xrdcp_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| xroot_testkit::example::example_bin("xrdcp"))
}

/// Runs `program` with `args` and `env` (off the async workers).
async fn run(program: PathBuf, args: Vec<String>, env: Vec<(&'static str, String)>) -> Output {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    tools::run_off_workers(tools::command(program, &args, &env)).await
}

/// Our xrdcp with `args`, `XRD_CPUSEPGWRTRD=pg`.
async fn ours(pg: u8, args: &[&str]) -> Output {
    run(
        xrdcp_bin().to_path_buf(),
        args.iter().map(|s| s.to_string()).collect(),
        // one connection attempt, as the stock tool's runs here: the
        // default (5 attempts, 120 s apart) would wait minutes on a
        // refused port
        vec![
            ("XRD_CPUSEPGWRTRD", pg.to_string()),
            ("XRD_CONNECTIONRETRY", "1".to_string()),
        ],
    )
    .await
}

/// The value of the `ALG: VALUE TARGET SIZE` line both tools print.
fn printed_checksum(o: &Output, alg: &str) -> String {
    let text = stderr(o);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{alg}: ")))
        .unwrap_or_else(|| panic!("no {alg} line in {text:?}"));
    line.split_whitespace().next().unwrap().to_string()
}

fn assert_ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {:?}\n{}", o.status, stderr(o));
}

/// A stock server exporting a fresh directory holding `src.bin` (`len`
/// pattern bytes), with md5 checksums too; `None` when xrootd is missing
/// outside CI.
fn serve(len: usize) -> Option<(StockServer, Vec<u8>, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let content = pattern(len, 0);
    std::fs::write(dir.path().join("src.bin"), &content).unwrap();
    let server = StockServer::start(dir.path(), &["xrootd.chksum max 4 adler32 crc32c md5"])?;
    Some((server, content, dir))
}

/// What the stock `xrdfs` answers to `query checksum PATH?cks.type=ALG`.
async fn stock_query(port: u16, path: &str, alg: &str) -> String {
    xroot_testkit::stock::query_checksum(port, path, alg).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn copies_both_ways_with_every_checksum_and_io_mode() {
    let Some((server, content, _dir)) = serve(SIZE) else {
        return;
    };
    let base = format!("root://127.0.0.1:{}", server.port);
    let local = tempfile::tempdir().unwrap();
    for alg in ALGS {
        let expected = stock_query(server.port, "/src.bin", alg).await;
        let stock = run(
            "xrdcp".into(),
            vec![
                "--nopbar".into(),
                "-f".into(), // the stock tool wants it even for /dev/null
                "--cksum".into(),
                format!("{alg}:print"),
                format!("{base}//src.bin"),
                "/dev/null".into(),
            ],
            vec![],
        )
        .await;
        assert_ok(&stock, "stock xrdcp");
        assert_eq!(printed_checksum(&stock, alg), expected, "stock xrdcp {alg}");

        for pg in [0u8, 1] {
            let what = format!("{alg}, XRD_CPUSEPGWRTRD={pg}");
            // download
            let down = local.path().join(format!("down-{alg}-{pg}.bin"));
            let o = ours(
                pg,
                &[
                    "--cksum",
                    alg,
                    &format!("{base}//src.bin"),
                    down.to_str().unwrap(),
                ],
            )
            .await;
            assert_ok(&o, &format!("download, {what}"));
            assert_eq!(printed_checksum(&o, alg), expected, "download, {what}");
            assert!(std::fs::read(&down).unwrap() == content, "download, {what}");
            // upload it again under another name
            let name = format!("up/{alg}-{pg}.bin");
            let o = ours(
                pg,
                &[
                    "--cksum",
                    alg,
                    down.to_str().unwrap(),
                    &format!("{base}//{name}"),
                ],
            )
            .await;
            assert_ok(&o, &format!("upload, {what}"));
            assert_eq!(printed_checksum(&o, alg), expected, "upload, {what}");
            let on_server = std::fs::read(server.data.join(&name)).unwrap();
            assert!(on_server == content, "upload, {what}");
            std::fs::remove_file(&down).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn an_existing_target_needs_force() {
    let Some((server, content, _dir)) = serve(1_000_000) else {
        return;
    };
    let src = format!("root://127.0.0.1:{}//src.bin", server.port);
    let local = tempfile::tempdir().unwrap();
    let target = local.path().join("t.bin");
    let t = target.to_str().unwrap();
    std::fs::write(&target, b"old").unwrap();
    let o = ours(1, &[&src, t]).await;
    assert!(!o.status.success(), "local target exists");
    assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    assert_ok(&ours(1, &["-f", &src, t]).await, "local -f");
    assert!(std::fs::read(&target).unwrap() == content);

    // remote: kXR_new refused, kXR_delete with -f
    std::fs::write(&target, b"new content").unwrap();
    let remote = format!("root://127.0.0.1:{}//src.bin", server.port);
    let o = ours(1, &[t, &remote]).await;
    assert!(!o.status.success(), "remote target exists");
    assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
    assert!(std::fs::read(server.data.join("src.bin")).unwrap() == content);
    assert_ok(&ours(1, &["-f", t, &remote]).await, "remote -f");
    assert_eq!(
        std::fs::read(server.data.join("src.bin")).unwrap(),
        b"new content"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn several_sources_go_into_a_directory_in_parallel() {
    let Some((server, _, _dir)) = serve(10) else {
        return;
    };
    let base = format!("root://127.0.0.1:{}", server.port);
    let local = tempfile::tempdir().unwrap();
    let files: Vec<(PathBuf, Vec<u8>)> = (0..4)
        .map(|i| {
            let p = local.path().join(format!("f{i}.bin"));
            let data = pattern(3_000_000 + i * 777_777, i);
            std::fs::write(&p, &data).unwrap();
            (p, data)
        })
        .collect();
    let mut args: Vec<String> = vec!["--parallel".into(), "3".into()];
    args.extend(files.iter().map(|(p, _)| p.display().to_string()));
    args.push(format!("{base}//many/"));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_ok(&ours(1, &argv).await, "upload into a remote directory");
    for (i, (_, data)) in files.iter().enumerate() {
        let got = std::fs::read(server.data.join(format!("many/f{i}.bin"))).unwrap();
        assert!(&got == data, "remote f{i}");
    }

    // and back into an existing local directory, several at once
    let back = local.path().join("back");
    std::fs::create_dir(&back).unwrap();
    let mut args: Vec<String> = vec!["--parallel".into(), "4".into()];
    args.extend((0..4).map(|i| format!("{base}//many/f{i}.bin")));
    args.push(back.display().to_string());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_ok(&ours(0, &argv).await, "download into a local directory");
    for (i, (_, data)) in files.iter().enumerate() {
        assert!(&std::fs::read(back.join(format!("f{i}.bin"))).unwrap() == data);
    }

    // several sources need a directory
    let o = ours(
        1,
        &[
            &format!("{base}//many/f0.bin"),
            &format!("{base}//many/f1.bin"),
            local.path().join("nodir.bin").to_str().unwrap(),
        ],
    )
    .await;
    assert!(!o.status.success());

    // standard output
    let o = ours(1, &[&format!("{base}//many/f2.bin"), "-"]).await;
    assert_ok(&o, "to stdout");
    assert!(o.stdout == files[2].1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn a_spoiled_page_is_fetched_again_and_the_checksum_matches() {
    let Some((server, content, _dir)) = serve(20 << 20) else {
        return;
    };
    let proxy = CorruptProxy::start(server.port, Spoil::FirstPgread).await;
    let local = tempfile::tempdir().unwrap();
    let down = local.path().join("d.bin");
    let o = ours(
        1,
        &[
            "--cksum",
            "adler32",
            &format!("root://127.0.0.1:{}//src.bin", proxy.port),
            down.to_str().unwrap(),
        ],
    )
    .await;
    assert_ok(&o, "download through the spoiling proxy");
    assert_eq!(proxy.spoiled(), 1);
    assert!(
        proxy.pgread_retries() >= 1,
        "the bad page was fetched again"
    );
    assert!(std::fs::read(&down).unwrap() == content);
    assert_eq!(
        printed_checksum(&o, "adler32"),
        stock_query(server.port, "/src.bin", "adler32").await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_user_xattrs, ignore = "needs user xattrs in the temp dir")]
async fn a_checksum_mismatch_fails_the_copy() {
    let Some((server, _, _dir)) = serve(2_000_000) else {
        return;
    };
    // The server keeps a computed checksum with the file's mtime (in a user
    // xattr): change a byte, keep the mtime, and the server's answer no
    // longer fits the bytes.
    let before = stock_query(server.port, "/src.bin", "adler32").await;
    let path = server.data.join("src.bin");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[1000] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    assert_eq!(
        stock_query(server.port, "/src.bin", "adler32").await,
        before,
        "the server kept no checksum (user xattrs work in the temp dir)"
    );
    let local = tempfile::tempdir().unwrap();
    let down = local.path().join("d.bin");
    let src = format!("root://127.0.0.1:{}//src.bin", server.port);
    let o = ours(1, &["--cksum", "adler32", &src, down.to_str().unwrap()]).await;
    assert_eq!(
        o.status.code(),
        Some(53),
        "mismatch must fail as the stock tool: {}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("checksum mismatch"), "{}", stderr(&o));
    // ALG:print only prints
    let o = ours(
        1,
        &[
            "-f",
            "--cksum",
            "adler32:print",
            &src,
            down.to_str().unwrap(),
        ],
    )
    .await;
    assert_ok(&o, "adler32:print");
    assert_ne!(printed_checksum(&o, "adler32"), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn connections_and_streams_spread_a_file() {
    let Some((server, content, _dir)) = serve(40 << 20) else {
        return;
    };
    // a plain relay counts the logins: one per channel
    let relay = CorruptProxy::start(server.port, Spoil::Nothing).await;
    let base = format!("root://127.0.0.1:{}", relay.port);
    let local = tempfile::tempdir().unwrap();
    let down = local.path().join("d.bin");
    let d = down.to_str().unwrap();
    let src = format!("{base}//src.bin");
    let o = ours(1, &["--connections", "3", "--cksum", "crc32c", &src, d]).await;
    assert_ok(&o, "download on 3 connections");
    assert!(std::fs::read(&down).unwrap() == content);
    // the checksum query goes on the first channel: still 3
    assert_eq!(relay.requests(RequestId::LOGIN), 3);
    assert_eq!(relay.requests(RequestId::PGREAD), 5, "five 8 MiB blocks");

    let up = format!("{base}//spread/up.bin");
    let o = ours(0, &["--connections", "3", "--cksum", "adler32", d, &up]).await;
    assert_ok(&o, "upload on 3 connections");
    assert_eq!(relay.requests(RequestId::LOGIN), 6);
    assert_eq!(relay.requests(RequestId::WRITE), 5);
    assert!(std::fs::read(server.data.join("spread/up.bin")).unwrap() == content);

    // --streams 3: one channel, two kXR_bind substreams
    std::fs::remove_file(&down).unwrap();
    let o = ours(1, &["--streams", "3", &src, d]).await;
    assert_ok(&o, "download on 3 streams");
    assert!(std::fs::read(&down).unwrap() == content);
    assert_eq!(relay.requests(RequestId::LOGIN), 7);
    assert_eq!(relay.requests(RequestId::BIND), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksums_compare_as_values_not_text() {
    use std::sync::{Arc, Mutex};
    use xroot::proto::request::{QueryCode, Request};
    use xroot_testkit::scripted::{Options, Peer, Step};

    // adler32 of 1000 zero bytes is 0x03e80001: a leading zero to drop
    let content = vec![0u8; 1000];
    assert_eq!(xroot_testkit::vectors::adler32(&content), 0x03e8_0001);
    let answer = Arc::new(Mutex::new(String::new()));
    let said = Arc::clone(&answer);
    let peer = Peer::start_with(
        Options::serving(content.clone().into()),
        move |call| match &call.request {
            Request::Query(q) if q.infotype == QueryCode::CKSUM => {
                vec![Step::ok(format!("adler32 {}\0", said.lock().unwrap()))]
            }
            _ => call.serve(),
        },
    )
    .await;
    let src = format!("root://127.0.0.1:{}//src.bin", peer.port);
    let local = tempfile::tempdir().unwrap();
    let down = local.path().join("d.bin");
    let d = down.to_str().unwrap();
    // how servers write the same value: no leading zeros, a 0x prefix, upper case
    for value in ["3e80001", "0x03e80001", "03E80001", "0X3E80001", "03e80001"] {
        *answer.lock().unwrap() = value.to_string();
        let o = ours(0, &["-f", "--cksum", "adler32", &src, d]).await;
        assert_ok(&o, &format!("the server says {value}"));
        assert_eq!(printed_checksum(&o, "adler32"), "03e80001", "{value}");
        assert!(std::fs::read(&down).unwrap() == content);
    }
    // another value is a mismatch, however it is written
    for value in ["3e80002", "0x13e80001", "0x", "zz"] {
        *answer.lock().unwrap() = value.to_string();
        let o = ours(0, &["-f", "--cksum", "adler32", &src, d]).await;
        assert!(!o.status.success(), "the server says {value}");
        assert!(stderr(&o).contains("checksum mismatch"), "{}", stderr(&o));
    }
}

/// The stock `xrdcp` with `args`, trying a connection once (by default
/// it tries for up to ten minutes).
async fn stock(args: &[&str]) -> Output {
    let once = vec![
        ("XRD_CONNECTIONRETRY", "1".to_string()),
        ("XRD_CONNECTIONWINDOW", "2".to_string()),
    ];
    run(
        PathBuf::from("xrdcp"),
        args.iter().map(|s| s.to_string()).collect(),
        once,
    )
    .await
}

/// Exit codes by failure class, side by side with the stock `xrdcp` 5.5.3
/// on the same input: usage errors 22, a refused connection 51, an error
/// the server answers 54 (not found), a local target that exists 54 and a
/// remote one 50, a missing local source 2 (its errno); and `--version`
/// prints `v` and a version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn exit_codes_are_the_stock_tool_s() {
    let Some((server, _content, _dir)) = serve(10_000) else {
        return;
    };
    let local = tempfile::tempdir().unwrap();
    let exists = local.path().join("exists.bin");
    std::fs::write(&exists, b"old").unwrap();
    let (exists, fresh) = (
        exists.to_str().unwrap().to_string(),
        local.path().join("fresh.bin").to_str().unwrap().to_string(),
    );
    let missing = local
        .path()
        .join("missing.bin")
        .to_str()
        .unwrap()
        .to_string();
    let url = |p: &str| format!("root://127.0.0.1:{}/{p}", server.port);
    let cases: Vec<(&str, Vec<String>, i32)> = vec![
        ("no arguments", vec![], 22),
        (
            "an unknown flag",
            vec!["--bogus".into(), "a".into(), "b".into()],
            22,
        ),
        (
            "a refused connection",
            vec!["root://127.0.0.1:1//src.bin".into(), fresh.clone()],
            51,
        ),
        (
            "a file not found",
            vec![url("/nope.bin"), fresh.clone()],
            54,
        ),
        (
            "a local target that exists",
            vec![url("/src.bin"), exists.clone()],
            54,
        ),
        (
            "a remote target that exists",
            vec![exists.clone(), url("/src.bin")],
            50, // the stock tool: "Invalid operation: file exists"
        ),
        ("a missing local source", vec![missing, url("/new.bin")], 2),
    ];
    for (what, args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let theirs = stock(&args).await;
        let mine = ours(1, &args).await;
        assert_eq!(
            theirs.status.code(),
            Some(want),
            "stock, {what}: {}",
            stderr(&theirs)
        );
        assert_eq!(
            mine.status.code(),
            Some(want),
            "ours, {what}: {}",
            stderr(&mine)
        );
    }
    for o in [stock(&["--version"]).await, ours(1, &["--version"]).await] {
        let printed = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert_eq!(o.status.code(), Some(0), "{printed}");
        assert!(printed.trim().starts_with('v'), "{printed:?}");
    }
}

/// The stock `xrdcp` and ours with `args` and `env` (`HOME` a fresh
/// directory, no token or proxy from the test's environment, one
/// connection attempt): their exit codes and what each printed.
async fn both(args: &[&str], env: &[(&str, &str)]) -> [(Option<i32>, String); 2] {
    let home = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    for program in [PathBuf::from("xrdcp"), xrdcp_bin().to_path_buf()] {
        let mut cmd = tools::command(program, args, env);
        cmd.env("HOME", home.path())
            .env("XRD_CONNECTIONRETRY", "1")
            .env("XRD_CONNECTIONWINDOW", "2")
            .env_remove("BEARER_TOKEN")
            .env_remove("X509_USER_PROXY");
        let o = tools::run_off_workers(cmd).await;
        out.push((o.status.code(), stderr(&o)));
    }
    out.try_into().unwrap()
}

/// Asserts that both tools exited 52 for `what`.
fn both_52(what: &str, [theirs, mine]: [(Option<i32>, String); 2]) {
    assert_eq!(theirs.0, Some(52), "stock, {what}: {}", theirs.1);
    assert_eq!(mine.0, Some(52), "ours, {what}: {}", mine.1);
}

/// A credential the server refuses at login (`kXR_AuthFailed`): an `sss`
/// credential sealed with a key the server's keytab does not hold, against
/// our server (the `serve` example) and the stock one; both `xrdcp`s exit
/// 52, the stock tool's "Auth failed" (ours exited 54, a server error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
async fn a_refused_sss_credential_exits_52_as_with_the_stock_tool() {
    use xroot_testkit::sss::{admin_add, stock_server, tools_available};
    if !tools_available() || !xroot_testkit::stock::xrootd_client_available() {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let (server_kt, client_kt) = (keys.path().join("server.kt"), keys.path().join("client.kt"));
    admin_add(&server_kt, "site", "anybody", "users");
    admin_add(&client_kt, "stranger", "anybody", "users");
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f.bin"), b"sss").unwrap();
    let local = tempfile::tempdir().unwrap();
    let got = local.path().join("got.bin");
    let got = got.to_str().unwrap();
    let env = [
        ("XrdSecSSSKT", client_kt.to_str().unwrap()),
        ("XrdSecPROTOCOL", "sss"),
    ];

    let ours = xroot_testkit::ours::ServeProcess::start_with(
        data.path(),
        &["--auth", "sss", "--sss-keytab", server_kt.to_str().unwrap()],
    );
    let url = format!("root://{}//f.bin", ours.addr);
    both_52(
        "sss refused by our server",
        both(&["-f", &url, got], &env).await,
    );

    let Some((stock, _kt)) = stock_server(data.path(), &server_kt) else {
        return;
    };
    let url = format!("root://127.0.0.1:{}//f.bin", stock.port);
    both_52(
        "sss refused by the stock server",
        both(&["-f", &url, got], &env).await,
    );
    assert!(!Path::new(got).exists());
}

/// The same for a `ztn` token that expired an hour ago, over TLS, against
/// our server and the stock one with its SciTokens plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
#[cfg_attr(
    missing_scitokens,
    ignore = "needs the SciTokens plugin (xrootd-scitokens-plugins, scitokens-cpp; scripts/test as root installs them)"
)]
#[cfg_attr(
    missing_sqlite3,
    ignore = "needs sqlite3 (scripts/test as root installs it)"
)]
async fn a_refused_token_exits_52_as_with_the_stock_tool() {
    use xroot_testkit::pki::TestPki;
    use xroot_testkit::tokens::{
        now, scitokens_available, secured_args, stock_ztn_server, token_file, TestIssuer,
    };
    if !xroot_testkit::stock::xrootd_available()
        || !xroot_testkit::stock::xrootd_client_available()
        || !scitokens_available()
    {
        return;
    }
    let pki = TestPki::new();
    let issuer = "https://localhost:8443/test";
    let iss = TestIssuer::new(issuer);
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f.bin"), b"ztn").unwrap();
    let local = tempfile::tempdir().unwrap();
    let mut old = iss.claims("storage.read:/");
    old["exp"] = serde_json::json!(now() - 3600);
    let expired = token_file(local.path(), "old.tok", &iss.es256(&old));
    let got = local.path().join("got.bin");
    let got = got.to_str().unwrap();
    let env = [
        ("X509_CERT_DIR", pki.ca_dir.to_str().unwrap()),
        ("BEARER_TOKEN_FILE", expired.to_str().unwrap()),
    ];

    let args = secured_args(&pki, &iss);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ours = xroot_testkit::ours::ServeProcess::start_with(data.path(), &args);
    let url = format!("roots://localhost:{}//f.bin", ours.addr.port());
    both_52(
        "ztn refused by our server",
        both(&["-f", &url, got], &env).await,
    );

    let valid = iss.es256(&iss.claims("storage.read:/"));
    let Some(stock) = stock_ztn_server(data.path(), &pki, issuer, &iss.ec_pub, "ec1", &valid)
    else {
        return;
    };
    let url = format!("roots://localhost:{}//f.bin", stock.port);
    both_52(
        "ztn refused by the stock server",
        both(&["-f", &url, got], &env).await,
    );
    assert!(!Path::new(got).exists());
}
