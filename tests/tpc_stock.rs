//! Native third-party copy (issue 30, the server's roles) with the stock
//! 5.5.3 tools: the stock `xrdcp --tpc only` between the stock xrootd
//! (`ofs.tpc`, the testkit's `tpc_config`) and our `serve --tpc`, in the
//! three directions, with and without a checksum check; a file missing at
//! the source; a source read with a guessed, expired or reused key, through
//! raw frames (against ours and the stock, the same input) and through our
//! client library. URLs name `localhost`, as the stock needs (see the
//! testkit's `tpc_config`).

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use xroot::client::{Client, OpenFlags};
use xroot::proto::request::{Close, OpenOptions, Sync};
use xroot::proto::response::{Attn, Response};
use xroot::proto::{ErrorCode, FHandle, StreamId};
use xroot::server::{Config, LocalFs, TpcConfig};
use xroot_testkit::ours::{serve_example, serve_with};
use xroot_testkit::pki::TestPki;
use xroot_testkit::raw::{open_request, Raw};
use xroot_testkit::stock::{xrootd_available, xrootd_client_available, StockServer};
use xroot_testkit::tokens::{secured_args, token_env, token_file, TestIssuer, ISSUER};

/// Seconds a grant lives on every server of these tests.
const TTL: u32 = 2;

/// A file of `len` random-looking bytes.
fn payload(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The flags of our servers here: `--tpc --tpc-ttl TTL`.
fn tpc_flags() -> Vec<String> {
    vec!["--tpc".into(), "--tpc-ttl".into(), TTL.to_string()]
}

/// Seconds a source holds the claim of a pull that is never granted, where
/// a test needs the pull to be still waiting when its next request comes.
const LONG_TTL: u32 = 8;

/// A TPC peer, ours or the stock's, serving a temp dir.
struct Peer {
    port: u16,
    dir: tempfile::TempDir,
    _stock: Option<StockServer>,
}

impl Peer {
    async fn ours() -> Peer {
        Peer::ours_with_ttl(TTL).await
    }

    /// Ours, its grants living `ttl` seconds.
    async fn ours_with_ttl(ttl: u32) -> Peer {
        let dir = tempfile::tempdir().unwrap();
        let flags = ["--tpc".into(), "--tpc-ttl".into(), ttl.to_string()];
        let port = serve_example(&flags, dir.path()).await.port();
        Peer {
            port,
            dir,
            _stock: None,
        }
    }

    /// `None` when the stock xrootd is missing (outside CI).
    fn stock() -> Option<Peer> {
        let dir = tempfile::tempdir().unwrap();
        let stock = StockServer::start_tpc(dir.path(), TTL, &[])?;
        Some(Peer {
            port: stock.port,
            dir,
            _stock: Some(stock),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("root://localhost:{}//{path}", self.port)
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }
}

/// The stock `xrdcp -s ARGS SRC DST`, off the runtime's threads; with
/// `token`, trusting the PKI's CA and presenting the token in that file.
async fn xrdcp(
    token: Option<(&TestPki, &Path)>,
    args: &[&str],
    src: String,
    dst: String,
) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let token = token.map(|(pki, t)| (pki.ca_dir.clone(), t.to_path_buf()));
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new("xrdcp");
        if let Some((ca, token)) = &token {
            token_env(&mut cmd, ca, token);
        }
        cmd.arg("-s")
            .args(&args)
            .args([&src, &dst])
            .output()
            .expect("run xrdcp")
    })
    .await
    .unwrap()
}

/// `xrdcp --tpc only`.
const TPC_ONLY: [&str; 2] = ["--tpc", "only"];

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Copies a 3 MB file from `src` to `dst` by TPC, with `args`, and
/// compares the bytes at the destination.
async fn copies(src: &Peer, dst: &Peer, args: &[&str], name: &str) {
    let data = payload(3_000_000 + 17);
    std::fs::write(src.path(name), &data).unwrap();
    // the stock server runs as another user when the tests run as root
    let _ = Command::new("chmod")
        .arg("a+r")
        .arg(src.path(name))
        .status();
    let out = xrdcp(
        None,
        &[&TPC_ONLY[..], args].concat(),
        src.url(name),
        dst.url(name),
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let got = std::fs::read(dst.path(name)).unwrap();
    assert!(
        got == data,
        "{} bytes arrived, {} sent",
        got.len(),
        data.len()
    );
}

/// The three directions with ours, each without and with the end-to-end
/// checksum check (`--cksum adler32`: the client compares the source's
/// and the destination's, so our server answers both roles' checksums).
async fn each_direction(args: &[&str], tag: &str) {
    if !xrootd_client_available() {
        return;
    }
    let Some(stock) = Peer::stock() else {
        return;
    };
    let (a, b) = (Peer::ours().await, Peer::ours().await);
    copies(&stock, &a, args, &format!("stock_to_ours{tag}")).await;
    copies(&a, &stock, args, &format!("ours_to_stock{tag}")).await;
    copies(&a, &b, args, &format!("ours_to_ours{tag}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp")]
async fn stock_xrdcp_tpc_stock_to_ours_ours_to_stock_ours_to_ours() {
    each_direction(&[], "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp")]
async fn stock_xrdcp_tpc_with_a_checksum_check_and_four_streams() {
    each_direction(&["--cksum", "adler32", "--streams", "3"], "_cks").await;
}

/// A file missing at the source: the stock client fails and our
/// destination has no file, whichever server is the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp")]
async fn a_file_missing_at_the_source_fails_and_leaves_nothing() {
    if !xrootd_client_available() {
        return;
    }
    let Some(stock) = Peer::stock() else {
        return;
    };
    let (a, b) = (Peer::ours().await, Peer::ours().await);
    for src in [&stock, &a] {
        let out = xrdcp(None, &TPC_ONLY, src.url("missing"), b.url("missing")).await;
        assert!(!out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("3011"), "{}", text(&out));
        assert!(!b.path("missing").exists());
    }
}

/// A logged-in raw session (user `tester`, pid 1) at `port`.
async fn session(port: u16) -> Raw {
    Raw::login(SocketAddr::from(([127, 0, 0, 1], port))).await.0
}

/// The answer to an open of `path` (with its CGI) for reading; one
/// deferred with `kXR_waitresp` (the stock holds a claim that way) is the
/// `kXR_attn` asynresp that follows.
async fn open_answer(r: &mut Raw, path: &str) -> Response {
    r.send(9, open_request(path, OpenOptions::READ)).await;
    answers(r).await.pop().expect("an answer")
}

/// The next answer, or the `kXR_waitresp` and the asynresp it announced.
async fn answers(r: &mut Raw) -> Vec<Response> {
    let first = r.expect().await.1;
    if !matches!(first, Response::WaitResp(_)) {
        return vec![first];
    }
    match r.expect().await.1 {
        Response::Attn(Attn::AsynResp { response, .. }) => vec![first, *response],
        other => panic!("an asynresp after waitresp, got {other:?}"),
    }
}

fn is_expired(r: &Response) -> bool {
    matches!(r, Response::Error(e) if e.code == ErrorCode::NOT_AUTHORIZED
        && e.message_lossy() == "tpc authorization expired")
}

/// The same raw frames to ours and to the stock source: a granted key is
/// claimed at once by the destination (`tpc.org` naming the granting
/// session); claimed again, it is refused; a guessed key and one claimed
/// after its ttl are refused too, each after the claim waited the ttl,
/// with `[3010] tpc authorization expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn guessed_expired_and_reused_keys_are_refused_as_the_stock_does() {
    if !xrootd_available() {
        return;
    }
    let Some(stock) = Peer::stock() else {
        return;
    };
    let a = Peer::ours().await;
    for peer in [&stock, &a] {
        std::fs::write(peer.path("f"), b"granted bytes").unwrap();
        let _ = Command::new("chmod")
            .arg("a+r")
            .arg(peer.path("f"))
            .status();
        let who = if peer._stock.is_some() {
            "stock"
        } else {
            "ours"
        };
        let mut client = session(peer.port).await;
        let mut dest = session(peer.port).await;
        let claim = |key: &str| format!("/f?tpc.key={key}&tpc.org=tester.1@localhost");

        // granted, then claimed: the file is read
        let grant = open_answer(
            &mut client,
            "/f?tpc.dst=localhost&tpc.key=k1&tpc.stage=copy",
        )
        .await;
        assert!(matches!(grant, Response::Ok(_)), "{who}: grant {grant:?}");
        let first = open_answer(&mut dest, &claim("k1")).await;
        assert!(matches!(first, Response::Ok(_)), "{who}: claim {first:?}");

        // the same key again, a guessed one: refused after the ttl
        for key in ["k1", "guessed"] {
            let asked = Instant::now();
            let again = open_answer(&mut dest, &claim(key)).await;
            assert!(is_expired(&again), "{who}: claim of {key}: {again:?}");
            let waited = asked.elapsed();
            assert!(
                waited >= Duration::from_secs(TTL.into()) - Duration::from_millis(100),
                "{who}: {waited:?}"
            );
        }

        // granted, claimed after its ttl: refused
        let grant = open_answer(
            &mut client,
            "/f?tpc.dst=localhost&tpc.key=k2&tpc.stage=copy",
        )
        .await;
        assert!(matches!(grant, Response::Ok(_)), "{who}: grant {grant:?}");
        tokio::time::sleep(Duration::from_secs(u64::from(TTL) + 1)).await;
        let late = open_answer(&mut dest, &claim("k2")).await;
        assert!(is_expired(&late), "{who}: late claim: {late:?}");
    }
}

/// Our client library opening our source with a guessed key gets the
/// server's refusal, `kXR_NotAuthorized`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_with_a_guessed_key_is_refused() {
    let a = Peer::ours().await;
    std::fs::write(a.path("f"), b"x").unwrap();
    let client = Client::new();
    let url = format!("{}?tpc.key=guess&tpc.org=nobody.1@localhost", a.url("f"));
    let err = client
        .open(&url, OpenFlags::READ)
        .await
        .expect_err("a guessed key");
    assert_eq!(err.server_code(), Some(ErrorCode::NOT_AUTHORIZED), "{err}");
    assert!(
        err.to_string().contains("tpc authorization expired"),
        "{err}"
    );
}

/// Our `serve` (in-process) on `dir` with the [`secured_args`] of `pki`
/// and `iss` (TLS at login, `ztn` only) and `--tpc`.
async fn ours_secured(pki: &TestPki, iss: &TestIssuer, dir: &Path) -> u16 {
    let flags = [secured_args(pki, iss), tpc_flags()].concat();
    serve_example(&flags, dir).await.port()
}

/// `ztn` on both of our servers (TLS at login, `ztn` only): the stock
/// `xrdcp --tpc delegate only` logs into both with its token and passes
/// the source URL's CGI to the destination (`tpc.scgi=authz=Bearer%20...`),
/// whose pull logs into the source with that token and no other. A
/// delegated token with the source's read scope copies the file; one
/// without it is refused at the source (though the client's own token,
/// which reads, made the grant), and the destination keeps nothing; so
/// does a plain `--tpc only`, which delegates no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn ztn_on_both_servers_the_clients_delegated_token_and_no_other() {
    if !xrootd_client_available() {
        return;
    }
    let pki = TestPki::new();
    let iss = TestIssuer::new(ISSUER);
    // the destination's pull trusts the test CA, as the stock client does
    std::env::set_var("X509_CERT_DIR", &pki.ca_dir);
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::create_dir_all(src.path().join("data")).unwrap();
    std::fs::create_dir_all(dst.path().join("data")).unwrap();
    let data = payload(1_000_000);
    std::fs::write(src.path().join("data/f"), &data).unwrap();
    let a = ours_secured(&pki, &iss, src.path()).await;
    let b = ours_secured(&pki, &iss, dst.path()).await;
    let work = tempfile::tempdir().unwrap();
    let client = iss.es256(&iss.claims("storage.read:/data storage.create:/data"));
    let client = token_file(work.path(), "client.tok", &client);
    let reads = iss.es256(&iss.claims("storage.read:/data"));
    let writes_only = iss.es256(&iss.claims("storage.create:/data"));
    let src_url = |token: &str| format!("roots://localhost:{a}//data/f?authz=Bearer%20{token}");
    let dst_url = || format!("roots://localhost:{b}//data/f");
    let delegate = ["--tpc", "delegate", "only"];

    let out = xrdcp(
        Some((&pki, &client)),
        &delegate,
        src_url(&writes_only),
        dst_url(),
    )
    .await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("missing scope storage.read:/data/f"),
        "{}",
        text(&out)
    );
    assert!(!dst.path().join("data/f").exists());

    let out = xrdcp(Some((&pki, &client)), &TPC_ONLY, src_url(&reads), dst_url()).await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("requires authentication by"),
        "{}",
        text(&out)
    );
    assert!(!dst.path().join("data/f").exists());

    let out = xrdcp(Some((&pki, &client)), &delegate, src_url(&reads), dst_url()).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(std::fs::read(dst.path().join("data/f")).unwrap() == data);
}

/// Orders a pull of `name` from our source at `src`, raw, with `extra`
/// CGI, on the session `client_at_dst` at the destination, and starts it
/// with the first sync (streamid `sid`): the file's handle and that sync's
/// answer.
async fn start_pull(
    client_at_dst: &mut Raw,
    src: u16,
    name: &str,
    extra: &str,
    sid: u16,
) -> (FHandle, Response) {
    let order = format!(
        "/{name}?tpc.dlg=localhost:{src}&tpc.dlgon=0&tpc.key=key{name}&tpc.lfn=/{name}\
         &tpc.spr=root&tpc.src=localhost:{src}&tpc.stage=copy&tpc.str=1&tpc.tpr=root{extra}"
    );
    let fh = client_at_dst
        .open_with(&order, OpenOptions::NEW | OpenOptions::UPDATE)
        .await;
    client_at_dst.send(sid, Sync { fhandle: fh }).await;
    (fh, client_at_dst.expect().await.1)
}

/// The grant of the pull [`start_pull`] ordered for `name`, made by the
/// session `client_at_src` at the source, as the stock client makes it.
async fn grant_pull(client_at_src: &mut Raw, name: &str) {
    let g = format!("/{name}?tpc.dst=localhost&tpc.key=key{name}&tpc.stage=copy");
    let granted = open_answer(client_at_src, &g).await;
    assert!(matches!(granted, Response::Ok(_)), "grant: {granted:?}");
}

/// Orders a pull of `name` from our source at `src` into `dst`, raw, with
/// `extra` CGI, the grant made (or not, `grant`) by a raw client at the
/// source after the first sync, as the stock client does: the two sync
/// answers.
async fn pull_raw(
    src: u16,
    dst: u16,
    name: &str,
    extra: &str,
    grant: bool,
) -> (Response, Vec<Response>) {
    let mut client_at_src = session(src).await;
    let mut client_at_dst = session(dst).await;
    let (fh, first) = start_pull(&mut client_at_dst, src, name, extra, 5).await;
    if grant {
        grant_pull(&mut client_at_src, name).await;
    }
    client_at_dst.send(6, Sync { fhandle: fh }).await;
    (first, answers(&mut client_at_dst).await)
}

/// The same raw frames ordering a pull from our source into our
/// destination and into the stock one: the first sync is answered
/// `kXR_ok`, the second `kXR_waitresp` at once and then `kXR_ok` in an
/// asynresp, and the bytes arrive; a pull whose key was never granted
/// fails in that asynresp, and our destination keeps no file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn sync_answers_on_a_destination_are_the_stocks() {
    if !xrootd_available() {
        return;
    }
    let Some(stock) = Peer::stock() else {
        return;
    };
    let (a, b) = (Peer::ours().await, Peer::ours().await);
    let data = payload(2_000_000);
    for name in [
        "to_ours",
        "to_stock",
        "never_granted_ours",
        "never_granted_stock",
    ] {
        std::fs::write(a.path(name), &data).unwrap();
    }
    for (dst, name) in [(&b, "to_ours"), (&stock, "to_stock")] {
        let (first, second) = pull_raw(a.port, dst.port, name, "", true).await;
        assert!(
            matches!(first, Response::Ok(_)),
            "{name}: first sync {first:?}"
        );
        assert!(
            matches!(&second[..], [Response::WaitResp(_), Response::Ok(_)]),
            "{name}: second sync {second:?}"
        );
        assert!(std::fs::read(dst.path(name)).unwrap() == data, "{name}");
    }
    for (dst, name) in [(&b, "never_granted_ours"), (&stock, "never_granted_stock")] {
        let (first, second) = pull_raw(a.port, dst.port, name, "", false).await;
        assert!(
            matches!(first, Response::Ok(_)),
            "{name}: first sync {first:?}"
        );
        assert!(
            matches!(&second[..], [Response::WaitResp(_), Response::Error(_)]),
            "{name}: second sync {second:?}"
        );
    }
    assert!(!b.path("never_granted_ours").exists());
}

/// `tpc.cks` at our destination: `adler32` (compare with the source's)
/// copies; a wrong `adler32:HEX` fails with `kXR_ChkSumErr` after the
/// bytes came, and the file is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checksum_asked_for_is_verified_by_our_destination() {
    let (a, b) = (Peer::ours().await, Peer::ours().await);
    let data = payload(1_500_000);
    std::fs::write(a.path("good"), &data).unwrap();
    std::fs::write(a.path("bad"), &data).unwrap();
    let (_, second) = pull_raw(a.port, b.port, "good", "&tpc.cks=adler32", true).await;
    assert!(matches!(second.last(), Some(Response::Ok(_))), "{second:?}");
    assert!(std::fs::read(b.path("good")).unwrap() == data);
    let (_, second) = pull_raw(a.port, b.port, "bad", "&tpc.cks=adler32:00000001", true).await;
    match second.last() {
        Some(Response::Error(e)) => {
            assert_eq!(e.code, ErrorCode::CHKSUM_ERR, "{e:?}");
            assert!(e.message_lossy().contains("checksum mismatch"), "{e:?}");
        }
        other => panic!("a checksum error, got {other:?}"),
    }
    assert!(!b.path("bad").exists());
}

/// `TpcConfig::max_jobs` 1 at our destination: a pull ordered while
/// another holds the only turn waits for it. The first pull's key is never
/// granted, so it holds its turn until its claim expires at the source
/// (`TTL`); the second, granted at once, cannot end before that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_beyond_the_job_limit_wait_their_turn() {
    let a = Peer::ours().await;
    let dst = tempfile::tempdir().unwrap();
    let puller = xroot_tools::tpc_pull::ClientPuller::new(Default::default());
    let mut tpc = TpcConfig::new(std::sync::Arc::new(puller));
    tpc.max_jobs = 1;
    let config = Config {
        tpc: Some(tpc),
        ..Config::default()
    };
    let b = serve_with(LocalFs::new(dst.path()).unwrap(), config)
        .await
        .port();
    std::fs::write(a.path("first"), b"never granted").unwrap();
    std::fs::write(a.path("second"), payload(100_000)).unwrap();
    let started = Instant::now();
    let first = tokio::spawn(pull_raw(a.port, b, "first", "", false));
    // the second is ordered once the first holds the turn (its first sync
    // answered)
    while !dst.path().join("first").exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (_, second) = pull_raw(a.port, b, "second", "", true).await;
    assert!(matches!(second.last(), Some(Response::Ok(_))), "{second:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(TTL.into()),
        "the second pull ended after {waited:?}"
    );
    let (_, first) = first.await.unwrap();
    assert!(
        matches!(first.last(), Some(Response::Error(_))),
        "{first:?}"
    );
    assert!(std::fs::read(dst.path().join("second")).unwrap() == payload(100_000));
}

/// The same raw frames to our destination and the stock one: the client
/// orders a pull, starts it with the first sync, and closes the file while
/// the pull still runs (its key not granted yet, so it waits on its claim
/// at the source); the grant comes only after the close. Ours answers the
/// close `kXR_ok`, keeps no file (not even after the late grant), and goes
/// on serving: a pull ordered next on the same session copies. The
/// stock's answers on the same frames are printed, not asserted (5.5.3:
/// the close `kXR_ok`, and an empty file left behind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn a_close_during_the_pull_stops_it_and_leaves_no_file() {
    if !xrootd_available() {
        return;
    }
    let Some(stock) = Peer::stock() else {
        return;
    };
    let (a, b) = (Peer::ours().await, Peer::ours().await);
    let data = payload(1_000_000);
    for name in ["closed_ours", "closed_stock", "after_ours", "after_stock"] {
        std::fs::write(a.path(name), &data).unwrap();
    }
    for (dst, name, ours) in [(&b, "closed_ours", true), (&stock, "closed_stock", false)] {
        let mut client_at_src = session(a.port).await;
        let mut client_at_dst = session(dst.port).await;
        let (fh, first) = start_pull(&mut client_at_dst, a.port, name, "", 5).await;
        assert!(
            matches!(first, Response::Ok(_)),
            "{name}: first sync {first:?}"
        );
        client_at_dst.send(6, Close { fhandle: fh }).await;
        let closed = answers(&mut client_at_dst).await;
        let after_close = dst.path(name).exists();
        grant_pull(&mut client_at_src, name).await;
        // time for a pull the close did not stop to claim the grant and copy
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after_grant = std::fs::read(dst.path(name)).ok().map(|d| d.len());
        if ours {
            assert!(
                matches!(&closed[..], [Response::Ok(_)]),
                "{name}: close {closed:?}"
            );
            assert!(!after_close, "{name}: the file outlived the close");
            assert_eq!(
                after_grant, None,
                "{name}: the pull went on after the close"
            );
        } else {
            eprintln!(
                "stock: close answered {closed:?}; file after the close: {after_close}, \
                 after the grant: {after_grant:?} bytes"
            );
        }
        // the destination keeps serving: the next pull on the same session
        let next = if ours { "after_ours" } else { "after_stock" };
        let (fh, first) = start_pull(&mut client_at_dst, a.port, next, "", 7).await;
        assert!(
            matches!(first, Response::Ok(_)),
            "{next}: first sync {first:?}"
        );
        grant_pull(&mut client_at_src, next).await;
        client_at_dst.send(8, Sync { fhandle: fh }).await;
        let second = answers(&mut client_at_dst).await;
        assert!(
            matches!(second.last(), Some(Response::Ok(_))),
            "{next}: second sync {second:?}"
        );
        assert!(std::fs::read(dst.path(next)).unwrap() == data, "{next}");
    }
}

/// A close sent while the second `kXR_sync` waits for the pull (announced
/// with `kXR_waitresp`) is not queued behind that sync: it stops the pull
/// at once, the sync's asynresp says the copy was cancelled
/// (`kXR_Cancelled`, "destination file prematurely closed"), and no file
/// is left: what the stock destination answers to the same raw frames
/// (it may still hold the file when it answers the close).
/// The source never grants the pull and holds the claim for [`LONG_TTL`]
/// s, so a close that waited for the sync would see the claim expire
/// instead ("tpc authorization expired").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
async fn a_close_while_the_second_sync_waits_cancels_the_pull() {
    if !xrootd_available() {
        return;
    }
    let Some(stock) = Peer::stock() else {
        return;
    };
    let (a, b) = (Peer::ours_with_ttl(LONG_TTL).await, Peer::ours().await);
    let data = payload(100_000);
    for name in ["waiting_ours", "waiting_stock"] {
        std::fs::write(a.path(name), &data).unwrap();
    }
    for (dst, name, ours) in [(&b, "waiting_ours", true), (&stock, "waiting_stock", false)] {
        let mut client_at_dst = session(dst.port).await;
        let (fh, first) = start_pull(&mut client_at_dst, a.port, name, "", 5).await;
        assert!(
            matches!(first, Response::Ok(_)),
            "{name}: first sync {first:?}"
        );
        client_at_dst.send(6, Sync { fhandle: fh }).await;
        let waiting = client_at_dst.expect().await;
        client_at_dst.send(7, Close { fhandle: fh }).await;
        let (x, y) = (client_at_dst.expect().await, client_at_dst.expect().await);
        let left = dst.path(name).exists();
        assert!(
            matches!(waiting.1, Response::WaitResp(_)),
            "{name}: second sync {waiting:?}"
        );
        let (mut closed, mut synced) = (None, None);
        for (sid, frame) in [x, y] {
            match frame {
                Response::Attn(Attn::AsynResp { streamid, response }) => {
                    assert_eq!(streamid, StreamId::from_u16(6), "{name}: asynresp");
                    synced = Some(*response);
                }
                other => {
                    assert_eq!(sid, StreamId::from_u16(7), "{name}: {other:?}");
                    closed = Some(other);
                }
            }
        }
        assert!(
            matches!(closed, Some(Response::Ok(_))),
            "{name}: close {closed:?}"
        );
        assert!(
            matches!(&synced, Some(Response::Error(e)) if e.code == ErrorCode::CANCELLED
                && e.message_lossy() == "destination file prematurely closed"),
            "{name}: the waiting sync's answer {synced:?}"
        );
        // the stock removes its file after answering the close (seen both
        // ways here); ours removes it before
        assert!(!(ours && left), "{name}: the file outlived the close");
    }
}
