//! TLS in our server, used by the stock clients: `xrdcp` (trust from
//! `X509_CERT_DIR`, the TestPki CA directory) at every requirement level,
//! over `roots://` and `root://` (the stock client always says
//! `kXR_ableTLS`), reading and writing, with substreams (`-S 2`) where data
//! needs TLS; the Python bindings over `roots://`. Bytes are compared.
//!
//! Refusals, with raw frames and a rustls client: a client that cannot do
//! TLS gets `kXR_TLSRequired` where the reference answers it; garbage
//! instead of a ClientHello closes only that link; bytes pipelined past
//! the switch close the link; a client certificate from another CA fails
//! the handshake. Reload: `serve` reloads its certificate on SIGHUP and a
//! new connection is served the new one.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use clap::Parser;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use xroot::proto::request::{Bind, Expect, Protocol, ProtocolFlags, Request};
use xroot::proto::response::{LoginResponse, ProtocolResponse, Response};
use xroot::proto::{ClientHandshake, ErrorCode, StreamId};
use xroot::server::ServerHandle;

use xroot_testkit::pki::TestPki;
use xroot_testkit::raw::login_request;
use xroot_testkit::tls_link::{client_config, hello, tls_link, Link, ABLE, GOTO_TLS, WANT};
use xroot_tools::serve;

const LEVELS: [&str; 5] = ["capable", "login", "session", "data", "all"];

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// Our `serve` example (in-process) on `dir` with the PKI's host
/// certificate, at `level`, with `extra` flags.
async fn start(
    pki: &TestPki,
    dir: &Path,
    level: &str,
    extra: &[&str],
) -> (SocketAddr, ServerHandle) {
    let mut argv = vec![
        "serve".to_string(),
        "--port".into(),
        "0".into(),
        "--tls-cert".into(),
        pki.host_cert.display().to_string(),
        "--tls-key".into(),
        pki.host_key.display().to_string(),
        "--tls".into(),
        level.into(),
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    argv.push(dir.display().to_string());
    let cli = serve::Cli::try_parse_from(argv).unwrap();
    let server = serve::start(&cli).await.unwrap();
    let (addr, handle) = (server.local_addr(), server.handle());
    tokio::spawn(server.serve());
    (addr, handle)
}

/// Runs a stock tool (trust: the PKI's CA directory; no proxy: none at
/// `/tmp/x509up_u<uid>` on the test machines) off the
/// runtime's threads.
async fn stock(pki: &TestPki, program: &str, args: Vec<String>) -> Output {
    stock_as(pki, None, program, args).await
}

/// As [`stock`], presenting the certificate and key in the PEM file
/// `proxy` (`X509_USER_PROXY`).
async fn stock_as(pki: &TestPki, proxy: Option<&Path>, program: &str, args: Vec<String>) -> Output {
    let ca_dir = pki.ca_dir.clone();
    let program = program.to_string();
    let proxy = proxy.map(Path::to_path_buf);
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(&program);
        cmd.env("X509_CERT_DIR", &ca_dir)
            .env_remove("X509_USER_PROXY");
        if let Some(p) = proxy {
            cmd.env("X509_USER_PROXY", p);
        }
        cmd.args(&args)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"))
    })
    .await
    .unwrap()
}

async fn xrdcp(pki: &TestPki, args: &[&str]) {
    let mut argv = vec!["-f".to_string(), "-s".into()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let out = stock(pki, "xrdcp", argv.clone()).await;
    assert!(
        out.status.success(),
        "xrdcp {argv:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, data) in files {
        std::fs::write(d.path().join(name), data).unwrap();
    }
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn stock_xrdcp_reads_and_writes_at_every_level() {
    if !xroot_testkit::stock::xrootd_client_available() {
        return;
    }
    let pki = TestPki::new();
    let big = pattern(3_000_000);
    let data = dir_with(&[("big.bin", &big)]);
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("src.bin");
    std::fs::write(&src, &big).unwrap();
    let src = src.to_str().unwrap();
    for level in LEVELS {
        let (addr, handle) = start(&pki, data.path(), level, &[]).await;
        let host = format!("localhost:{}", addr.port());
        let mut runs = vec![("roots", "1"), ("root", "1")];
        if matches!(level, "data" | "all") {
            runs.extend([("roots", "2"), ("root", "2")]);
        }
        for (scheme, streams) in runs {
            let what = format!("{level} {scheme}:// -S {streams}");
            let got = local.path().join("got.bin");
            let url = format!("{scheme}://{host}//big.bin");
            xrdcp(&pki, &["-S", streams, &url, got.to_str().unwrap()]).await;
            assert!(
                std::fs::read(&got).unwrap() == big,
                "{what}: read bytes differ"
            );
            let name = format!("up-{level}-{scheme}-{streams}.bin");
            let url = format!("{scheme}://{host}//{name}");
            xrdcp(&pki, &["-S", streams, src, &url]).await;
            assert!(
                std::fs::read(data.path().join(&name)).unwrap() == big,
                "{what}: written bytes differ"
            );
        }
        handle.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn protocol_answer_flags_and_switch_points_per_level() {
    let pki = TestPki::new();
    let data = dir_with(&[("f", b"0123456789")]);
    // haveTLS, the requirement flags, and gotoTLS when the link switches now
    // (kXR_isServer | kXR_supposc | kXR_suppgrw = 0x00300001)
    let cases: [(&str, u32, bool, bool); 5] = [
        ("capable", 0x8030_0001, false, false),
        ("login", 0x8430_0001, true, false),
        ("session", 0x8830_0001, false, false),
        ("data", 0x8930_0001, false, true),
        ("all", 0x9730_0001, true, true),
    ];
    for (level, flags, goto_login, goto_bind) in cases {
        let (addr, handle) = start(&pki, data.path(), level, &[]).await;
        let goto = |b: bool| if b { GOTO_TLS } else { 0 };
        // a client that cannot do TLS: the flags, never gotoTLS
        let (_, f) = hello(addr, 0, 3).await;
        assert_eq!(f, flags, "{level}: incapable");
        // ableTLS: gotoTLS where login (expect login) or data (expect bind) needs TLS
        let (_, f) = hello(addr, ABLE, 3).await;
        assert_eq!(f, flags | goto(goto_login), "{level}: able, expect login");
        let (_, f) = hello(addr, ABLE, 1).await;
        assert_eq!(f, flags | goto(goto_bind), "{level}: able, expect bind");
        // wantTLS: always
        let (_, f) = hello(addr, ABLE | WANT, 3).await;
        assert_eq!(f, flags | GOTO_TLS, "{level}: want");
        handle.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn session_level_switches_after_the_login_answer() {
    let pki = TestPki::new();
    let data = dir_with(&[("f", b"0123456789")]);
    for level in ["session", "data"] {
        let (addr, handle) = start(&pki, data.path(), level, &[]).await;
        let (mut link, _) = hello(addr, ABLE, 3).await;
        link.login().await;
        let name = ServerName::try_from("localhost").unwrap();
        let tls = tokio_rustls::TlsConnector::from(client_config(&pki, None))
            .connect(name, link.s)
            .await
            .unwrap_or_else(|e| panic!("{level}: TLS after login: {e}"));
        let mut link = Link::new(tls);
        assert_eq!(&link.read("/f", 2, 5).await[..], b"23456", "{level}");
        handle.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn clients_that_cannot_do_tls_get_tls_required() {
    let pki = TestPki::new();
    let data = dir_with(&[("f", b"0123456789")]);
    for level in ["login", "all"] {
        let (addr, handle) = start(&pki, data.path(), level, &[]).await;
        let (mut link, _) = hello(addr, 0, 3).await;
        link.send(0, login_request()).await.unwrap();
        let m = link.expect_error(ErrorCode::TLS_REQUIRED).await;
        assert_eq!(m, "login requires TLS support", "{level}");
        // a client that said ableTLS but logs in plain anyway
        let (mut link, _) = hello(addr, ABLE, 0).await;
        link.send(0, login_request()).await.unwrap();
        let m = link.expect_error(ErrorCode::TLS_REQUIRED).await;
        assert_eq!(m, "login requires TLS be enabled", "{level}");
        handle.shutdown();
    }
    for level in ["session", "data"] {
        let (addr, handle) = start(&pki, data.path(), level, &[]).await;
        let (mut link, _) = hello(addr, 0, 3).await;
        link.send(0, login_request()).await.unwrap();
        let Response::Ok(_) = link.expect().await else {
            panic!("{level}: the login is answered first")
        };
        let m = link.expect_error(ErrorCode::TLS_REQUIRED).await;
        assert_eq!(m, "session requires TLS support", "{level}");
        link.expect_closed().await;
        handle.shutdown();
    }
    for level in ["data", "all"] {
        let (addr, handle) = start(&pki, data.path(), level, &[]).await;
        let config = client_config(&pki, None);
        let mut main = tls_link(addr, config.clone()).await.unwrap();
        let sessid = main.login().await;
        let (mut link, _) = hello(addr, 0, 1).await;
        link.send(0, Bind { sessid }).await.unwrap();
        let m = link.expect_error(ErrorCode::TLS_REQUIRED).await;
        assert_eq!(m, "bind requires TLS", "{level}");
        // over TLS the bind is taken, and the session still reads
        let mut sub = tls_link(addr, config).await.unwrap();
        sub.send(0, Bind { sessid }).await.unwrap();
        let Response::Ok(_) = sub.expect().await else {
            panic!("{level}: a TLS bind is answered kXR_ok")
        };
        assert_eq!(&main.read("/f", 0, 3).await[..], b"012");
        handle.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn garbage_instead_of_a_client_hello_closes_only_that_link() {
    let pki = TestPki::new();
    let big = pattern(100_000);
    let data = dir_with(&[("big.bin", &big)]);
    let (addr, _handle) = start(&pki, data.path(), "capable", &[]).await;
    let mut good = tls_link(addr, client_config(&pki, None)).await.unwrap();
    good.login().await;
    assert_eq!(&good.read("/big.bin", 0, 1000).await[..], &big[..1000]);

    let (mut bad, flags) = hello(addr, ABLE | WANT, 3).await;
    assert_eq!(flags & GOTO_TLS, GOTO_TLS);
    bad.s
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\nnot a ClientHello at all")
        .await
        .unwrap();
    bad.expect_closed().await;

    assert_eq!(
        &good.read("/big.bin", 5000, 90_000).await[..],
        &big[5000..95_000]
    );
    // and the server still takes new TLS sessions
    let mut again = tls_link(addr, client_config(&pki, None)).await.unwrap();
    again.login().await;
    assert_eq!(
        &again.read("/big.bin", 99_000, 1000).await[..],
        &big[99_000..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn bytes_pipelined_past_the_switch_close_the_link() {
    let pki = TestPki::new();
    let data = dir_with(&[("f", b"0123456789")]);
    let (addr, _handle) = start(&pki, data.path(), "login", &[]).await;
    // handshake, kXR_protocol with wantTLS and the login in one write
    let mut b = BytesMut::new();
    ClientHandshake.encode(&mut b);
    let proto = Protocol {
        clientpv: 0x511,
        flags: ProtocolFlags(ABLE | WANT),
        expect: Expect(3),
    };
    Request::from(proto).encode(StreamId::from_u16(0), &mut b);
    Request::from(login_request()).encode(StreamId::from_u16(0), &mut b);
    let mut link = Link::new(TcpStream::connect(addr).await.unwrap());
    link.s.write_all(&b).await.unwrap();
    let Response::Ok(_) = link.expect().await else {
        panic!("handshake answer")
    };
    let Response::Ok(p) = link.expect().await else {
        panic!("protocol answer")
    };
    assert_eq!(
        ProtocolResponse::decode(p).unwrap().flags.0 & GOTO_TLS,
        GOTO_TLS
    );
    // no TLS, no login answer: the link is closed
    assert!(
        link.next().await.unwrap().is_none(),
        "nothing after the protocol answer"
    );
}

/// Our `serve` example at level `login` on a directory holding `f`,
/// verifying client certificates against the CA directory of `pki`.
struct VerifyingServer {
    pki: TestPki,
    /// A PKI of another CA.
    other: TestPki,
    addr: SocketAddr,
    _data: tempfile::TempDir,
    _handle: ServerHandle,
}

impl VerifyingServer {
    async fn start() -> VerifyingServer {
        let pki = TestPki::new();
        let other = TestPki::new();
        let data = dir_with(&[("f", b"0123456789")]);
        let ca_dir = pki.ca_dir.display().to_string();
        let (addr, handle) = start(&pki, data.path(), "login", &["--tls-ca-dir", &ca_dir]).await;
        VerifyingServer {
            pki,
            other,
            addr,
            _data: data,
            _handle: handle,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn client_certificates_are_verified_against_the_ca_dir() {
    let server = VerifyingServer::start().await;
    let VerifyingServer { pki, other, .. } = &server;
    let addr = server.addr;
    // none presented: served
    let mut link = tls_link(addr, client_config(pki, None)).await.unwrap();
    link.login().await;
    assert_eq!(&link.read("/f", 0, 4).await[..], b"0123");
    // one from the server's CA: served
    let (cert, key) = pki.leaf("user", "xroot user", "DNS:user.example", 1);
    let mut link = tls_link(addr, client_config(pki, Some((&cert, &key))))
        .await
        .unwrap();
    link.login().await;
    assert_eq!(&link.read("/f", 4, 4).await[..], b"4567");
    // one from another CA: the handshake fails (TLS 1.3: the client learns
    // it on its first read) and the login is never answered
    let refused = client_config(pki, Some((&other.host_cert, &other.host_key)));
    match tls_link(addr, refused).await {
        Err(_) => {}
        Ok(mut link) => {
            let _ = link.send(0, login_request()).await;
            let answer = link.next().await;
            assert!(
                !matches!(answer, Ok(Some(_))),
                "a certificate from another CA is refused: {answer:?}"
            );
        }
    }
    // an expired one from the right CA: refused too
    let (cert, key) = pki.leaf("old", "old user", "DNS:old.example", 0);
    match tls_link(addr, client_config(pki, Some((&cert, &key)))).await {
        Err(_) => {}
        Ok(mut link) => {
            let _ = link.send(0, login_request()).await;
            assert!(
                !matches!(link.next().await, Ok(Some(_))),
                "expired is refused"
            );
        }
    }
}

/// The stock client on the server of
/// [`client_certificates_are_verified_against_the_ca_dir`]: served without
/// a proxy; presenting a certificate (`X509_USER_PROXY`, certificate and
/// key in one file), served when it is from the server's CA, refused when
/// from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn stock_xrdcp_client_certificates_are_verified_against_the_ca_dir() {
    let server = VerifyingServer::start().await;
    let VerifyingServer { pki, other, .. } = &server;
    let addr = server.addr;
    // the stock client without a proxy
    let got = tempfile::tempdir().unwrap();
    let got = got.path().join("f");
    let url = format!("roots://localhost:{}//f", addr.port());
    xrdcp(pki, &[&url, got.to_str().unwrap()]).await;
    assert_eq!(std::fs::read(&got).unwrap(), b"0123456789");
    // presenting a certificate (X509_USER_PROXY, certificate and key in
    // one file): from the server's CA it is served, from another refused
    let args = vec!["-f".to_string(), url, got.display().to_string()];
    let good = pki.leaf("stock", "stock user", "DNS:stock.example", 1);
    let bad = (other.host_cert.clone(), other.host_key.clone());
    for ((cert, key), served) in [(good, true), (bad, false)] {
        let proxy = got.with_extension(if served { "good.pem" } else { "bad.pem" });
        let pem = [std::fs::read(&cert).unwrap(), std::fs::read(&key).unwrap()].concat();
        std::fs::write(&proxy, pem).unwrap();
        std::fs::set_permissions(&proxy, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let o = stock_as(pki, Some(&proxy), "xrdcp", args.clone()).await;
        assert_eq!(
            o.status.success(),
            served,
            "xrdcp presenting {}: {}",
            cert.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_stock_python, ignore = "needs the stock Python bindings")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn python_bindings_read_over_roots() {
    if !xroot_testkit::stock::stock_python_available() {
        return;
    }
    let pki = TestPki::new();
    let big = pattern(1_500_000);
    let data = dir_with(&[("big.bin", &big)]);
    let out = tempfile::tempdir().unwrap();
    for level in ["capable", "session", "all"] {
        let (addr, handle) = start(&pki, data.path(), level, &[]).await;
        let target = out.path().join(format!("{level}.bin"));
        let script = "import sys\nfrom XRootD import client\n\
            f = client.File()\n\
            st, _ = f.open(sys.argv[1])\n\
            assert st.ok, st\n\
            st, data = f.read(0, 2000000)\n\
            assert st.ok, st\n\
            open(sys.argv[2], 'wb').write(data)\n\
            f.close()\n";
        let url = format!("roots://localhost:{}//big.bin", addr.port());
        let args = vec![
            "-c".to_string(),
            script.to_string(),
            url,
            target.display().to_string(),
        ];
        let o = stock(&pki, "/usr/bin/python3", args).await;
        assert!(
            o.status.success(),
            "{level}: python: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            std::fs::read(&target).unwrap() == big,
            "{level}: bytes differ"
        );
        handle.shutdown();
    }
}

/// The certificate a new TLS connection is served.
async fn served_cert(addr: SocketAddr, pki: &TestPki) -> Vec<u8> {
    let link = tls_link(addr, client_config(pki, None)).await.unwrap();
    let (_, conn) = link.s.get_ref();
    conn.peer_certificates().unwrap()[0].to_vec()
}

fn der(pem: &Path) -> Vec<u8> {
    CertificateDer::from_pem_file(pem).unwrap().to_vec()
}

type Log = std::io::Lines<BufReader<std::process::ChildStderr>>;

/// Reads `serve`'s log up to the first line containing `what`; returns
/// that line and the rest of the log.
async fn wait_log(mut log: Log, what: &'static str) -> (String, Log) {
    tokio::task::spawn_blocking(move || loop {
        let line = log.next().expect("serve logs until it is stopped").unwrap();
        if line.contains(what) {
            return (line, log);
        }
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn serve_reloads_its_certificate_on_sighup() {
    let pki = TestPki::new();
    let (b_cert, b_key) = pki.leaf("second", "localhost", "DNS:localhost,IP:127.0.0.1", 1);
    let files = tempfile::tempdir().unwrap();
    let (cert, key) = (files.path().join("cert.pem"), files.path().join("key.pem"));
    std::fs::copy(&pki.host_cert, &cert).unwrap();
    std::fs::copy(&pki.host_key, &key).unwrap();
    let data = dir_with(&[("f", b"0123456789")]);
    let mut child = Command::new(xroot_testkit::example::example_bin("serve"))
        .args(["--port", "0", "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .arg(data.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("serve listening on ")
        .unwrap()
        .parse()
        .unwrap();
    let log = BufReader::new(child.stderr.take().unwrap()).lines();
    let hup = |pid: u32| {
        let ok = Command::new("kill")
            .args(["-HUP", &pid.to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    };
    assert_eq!(served_cert(addr, &pki).await, der(&pki.host_cert));
    let mut old = tls_link(addr, client_config(&pki, None)).await.unwrap();
    old.login().await;

    // a broken pair (new certificate, old key): the old one is kept
    std::fs::copy(&b_cert, &cert).unwrap();
    hup(child.id());
    let (failed, log) = wait_log(log, "TLS reload failed").await;
    assert!(failed.contains("key.pem"), "{failed}");
    assert_eq!(served_cert(addr, &pki).await, der(&pki.host_cert));

    std::fs::copy(&b_key, &key).unwrap();
    hup(child.id());
    let (_, _log) = wait_log(log, "TLS certificate reloaded").await;
    assert_eq!(served_cert(addr, &pki).await, der(&b_cert));
    // the link opened before still works
    assert_eq!(&old.read("/f", 0, 2).await[..], b"01");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
fn serve_names_the_tls_file_that_failed() {
    let pki = TestPki::new();
    let data = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(xroot_testkit::example::example_bin("serve"))
            .args(["--port", "0"])
            .args(args)
            .arg(data.path())
            .output()
            .unwrap()
    };
    let o = run(&["--tls", "login"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--tls without a certificate is a usage error"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--tls-cert"));
    let cert = pki.host_cert.to_str().unwrap();
    let o = run(&["--tls-cert", cert, "--tls-key", "/nonexistent/host.key"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/nonexistent/host.key"), "{err}");
    let o = run(&["--tls-cert", cert, "--tls-key", cert]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("no private key"),
        "{err}"
    );
    let o = run(&[
        "--tls-cert",
        cert,
        "--tls-key",
        pki.host_key.to_str().unwrap(),
        "--tls",
        "sometimes",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// Our server requiring TLS from the session on, with host authentication,
/// on a directory holding `big.bin` (the bytes returned); the directory
/// keeps it serving.
async fn authenticating_at_session_level() -> (TestPki, Vec<u8>, tempfile::TempDir, SocketAddr) {
    use xroot::server::{Config, HostAuth, LocalFs, Server, ServerTls, ServerTlsFiles};
    use xroot::server::{TlsConfig, TlsRequirement};
    let pki = TestPki::new();
    let big = pattern(200_000);
    let data = dir_with(&[("big.bin", &big)]);
    let files = ServerTlsFiles::new(&pki.host_cert, &pki.host_key);
    let config = Config {
        authenticator: Some(Arc::new(HostAuth)),
        tls: Some(TlsConfig {
            server: Arc::new(ServerTls::load(files).unwrap()),
            requirement: TlsRequirement::Session,
        }),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", LocalFs::new(data.path()).unwrap(), config)
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve());
    (pki, big, data, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn with_authentication_the_session_switches_after_the_final_auth_answer() {
    use xroot::proto::request::Auth;
    let (pki, big, _data, addr) = authenticating_at_session_level().await;

    // login answered with the security token, no switch yet; kXR_auth in
    // plain, then TLS
    let (mut link, _) = hello(addr, ABLE, 3).await;
    link.send(0, login_request()).await.unwrap();
    let Response::Ok(body) = link.expect().await else {
        panic!("login answer")
    };
    assert!(LoginResponse::decode(body).unwrap().sec.is_some());
    let auth = Auth {
        credtype: *b"host",
        credentials: Bytes::from_static(b"host\0"),
    };
    link.send(1, auth).await.unwrap();
    let Response::Ok(_) = link.expect().await else {
        panic!("auth answer")
    };
    let name = ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(client_config(&pki, None))
        .connect(name, link.s)
        .await
        .unwrap();
    let mut link = Link::new(tls);
    assert_eq!(&link.read("/big.bin", 10, 10).await[..], &big[10..20]);
}

/// The stock client authenticates to the server of
/// [`with_authentication_the_session_switches_after_the_final_auth_answer`]
/// and reads over TLS from the session on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd_client, ignore = "needs the stock xrdcp and xrdfs")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn stock_xrdcp_reads_with_authentication_and_session_tls() {
    let (pki, big, _data, addr) = authenticating_at_session_level().await;
    let got = tempfile::tempdir().unwrap();
    let got = got.path().join("big.bin");
    let url = format!("root://localhost:{}//big.bin", addr.port());
    xrdcp(&pki, &[&url, got.to_str().unwrap()]).await;
    assert!(std::fs::read(&got).unwrap() == big);
}
