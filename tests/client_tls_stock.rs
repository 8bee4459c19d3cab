//! xroot-client over TLS against a live stock xrootd 5.5.3 (`xrd.tls`,
//! `xrd.tlsca certdir`, `xrootd.tls ...`), with a throw-away PKI
//! (xroot-testkit/src/pki.rs): `roots://`, `root://` switched by the server at
//! each level, data substreams in TLS or plain (`XRD_TLSNODATA`), and each
//! way it fails — untrusted chain, name mismatch, expired certificate,
//! `roots://` to a server without TLS, a client without TLS told to switch —
//! as its typed error, with what reached the server checked on the wire
//! where it matters.

// a test with several peers missing has several `ignore`s: the first one's
// reason is shown, the others are no mistake
#![allow(unused_attributes)]

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use xroot::client::tls::HandshakeError;
use xroot::client::{Client, Config, Error, OpenFlags, TlsCause};
use xroot::proto::request::ProtocolFlags;
use xroot::proto::response::ProtocolFlags as Srv;
use xroot_testkit::pki::TestPki;
use xroot_testkit::stock::StockServer;
use xroot_testkit::tls_client::{self, client, pattern};

/// A stock server with TLS: certificate `cert`/`key`, the PKI's CA
/// directory, and `xrootd.tls <level>` (none when `level` is empty). The
/// data directory holds `f.bin` (`content`) and `sub/a`, `sub/b`.
fn tls_server(
    pki: &TestPki,
    (cert, key): (&Path, &Path),
    level: &str,
    content: &[u8],
) -> Option<(StockServer, tempfile::TempDir)> {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f.bin"), content).unwrap();
    std::fs::create_dir(data.path().join("sub")).unwrap();
    std::fs::write(data.path().join("sub/a"), b"a").unwrap();
    std::fs::write(data.path().join("sub/b"), b"bb").unwrap();
    let port = xroot_testkit::stock::free_port();
    let server = tls_server_on(port, pki, (cert, key), level, data.path())?;
    Some((server, data))
}

/// As [`tls_server`], on `port`, exporting `data` as it is.
fn tls_server_on(
    port: u16,
    pki: &TestPki,
    (cert, key): (&Path, &Path),
    level: &str,
    data: &Path,
) -> Option<StockServer> {
    let key = TestPki::stock_server_key(key);
    let tls = format!("xrd.tls {} {}", cert.display(), key.display());
    let ca = format!("xrd.tlsca certdir {}", pki.ca_dir.display());
    let level = format!("xrootd.tls {level}");
    let mut lines = vec![tls.as_str(), ca.as_str()];
    if level != "xrootd.tls " {
        lines.push(&level);
    }
    StockServer::start_on(port, data, &lines)
}

/// [`tls_client::read_write_stat_list`] writing `out/<base's host>.bin`.
async fn read_write_stat_list(client: &Client, base: &str, content: &[u8], data: &Path) {
    let host = base.split("://").nth(1).unwrap().split(':').next().unwrap();
    tls_client::read_write_stat_list(client, base, host, content, data, 200_000).await;
}

const SIZE: usize = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn roots_reads_writes_lists_with_tls_substreams() {
    let pki = TestPki::new();
    let content = pattern(SIZE);
    let Some((server, data)) = tls_server(
        &pki,
        (&pki.host_cert, &pki.host_key),
        "capable all",
        &content,
    ) else {
        return;
    };
    let client = client(&pki.ca_dir, 3, false);
    // a host name (SAN DNS:localhost) and an address (SAN IP:127.0.0.1)
    for host in ["localhost", "127.0.0.1"] {
        let base = format!("roots://{host}:{}", server.port);
        read_write_stat_list(&client, &base, &content, data.path()).await;
    }
    assert_eq!(client.channels().len(), 2);
    for ch in client.channels() {
        assert_eq!(ch.key().scheme, "roots");
        let info = ch.server_info().unwrap();
        assert!(info.tls, "{info:?}");
        let subs = ch.substreams();
        assert_eq!(subs.len(), 2, "{subs:?}");
        assert!(subs.iter().all(|&(_, tls)| tls), "{subs:?}");
        let stats = ch.stats();
        assert!(
            stats.paths.iter().any(|p| p.completed > 0),
            "reads went over the substreams: {stats:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn root_is_switched_by_the_server_at_each_level() {
    let pki = TestPki::new();
    let content = pattern(SIZE);
    // each level, with the flag that makes the main stream switch:
    // kXR_gotoTLS right after kXR_protocol (the server saw kXR_ableTLS and
    // requires TLS for the login), or kXR_tlsSess after the login; the data
    // stream of a switched channel asks with kXR_wantTLS (XrdCl's
    // info->encrypted) and runs TLS too
    for (level, switch) in [
        ("capable all", Srv::GOTO_TLS),
        ("capable login", Srv::GOTO_TLS),
        ("capable data session", Srv::TLS_SESS),
        ("all", Srv::GOTO_TLS),
    ] {
        let Some((server, data)) =
            tls_server(&pki, (&pki.host_cert, &pki.host_key), level, &content)
        else {
            return;
        };
        let client = client(&pki.ca_dir, 2, false);
        let base = format!("root://localhost:{}", server.port);
        read_write_stat_list(&client, &base, &content, data.path()).await;
        let ch = &client.channels()[0];
        let info = ch.server_info().unwrap();
        assert!(info.tls, "{level}: main stream not switched: {info:?}");
        assert!(
            info.flags.contains(Srv::HAVE_TLS | switch),
            "{level}: {info:?}"
        );
        if switch == Srv::TLS_SESS {
            assert!(!info.flags.contains(Srv::GOTO_TLS), "{level}: {info:?}");
        }
        let subs = ch.substreams();
        assert_eq!(subs.len(), 1, "{level}: {subs:?}");
        assert!(subs[0].1, "{level}: the data stream is plain");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn tls_no_data_keeps_the_data_stream_plain_unless_the_server_requires_tls() {
    let pki = TestPki::new();
    let content = pattern(SIZE);
    // (level, streams configured, data stream in TLS): a server that
    // requires TLS for data (kXR_tlsData) switches it anyway, and then
    // XRD_TLSNODATA adds no stream (XrdCl's StreamNumber)
    for (level, streams, data_tls) in [("capable login", 1, false), ("capable all", 2, true)] {
        let Some((server, data)) =
            tls_server(&pki, (&pki.host_cert, &pki.host_key), level, &content)
        else {
            return;
        };
        let client = client(&pki.ca_dir, streams, true);
        let base = format!("roots://localhost:{}", server.port);
        read_write_stat_list(&client, &base, &content, data.path()).await;
        let ch = &client.channels()[0];
        assert!(ch.server_info().unwrap().tls);
        let subs = ch.substreams();
        assert_eq!(subs.len(), 1, "{level}: {subs:?}");
        assert_eq!(subs[0].1, data_tls, "{level}: {subs:?}");
        assert!(
            ch.stats().paths.iter().any(|p| p.completed > 0),
            "{level}: reads on the data stream"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn root_stays_plain_where_tls_is_not_asked_for() {
    let pki = TestPki::new();
    let content = pattern(SIZE);
    // TLS configured on the server but required for nothing
    let Some((server, data)) = tls_server(&pki, (&pki.host_cert, &pki.host_key), "", &content)
    else {
        return;
    };
    let client = client(&pki.ca_dir, 2, false);
    let base = format!("root://localhost:{}", server.port);
    read_write_stat_list(&client, &base, &content, data.path()).await;
    let ch = &client.channels()[0];
    let info = ch.server_info().unwrap();
    assert!(info.flags.contains(Srv::HAVE_TLS));
    assert!(!info.tls, "{info:?}");
    assert_eq!(ch.substreams().len(), 1);
    assert!(!ch.substreams()[0].1);
}

/// The TLS cause of `e`, or a panic naming what it was.
fn cause(e: &Error) -> &TlsCause {
    match e {
        Error::Tls { cause, .. } => cause,
        other => panic!("not a TLS error: {other:?}"),
    }
}

/// Opens `f.bin` at `url` with `client`, which must fail.
async fn open_fails(client: &Client, url: &str) -> Error {
    match client.open(url, OpenFlags::READ).await {
        Ok(_) => panic!("{url}: opened"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn an_untrusted_chain_is_refused() {
    let pki = TestPki::new();
    let Some((server, _data)) =
        tls_server(&pki, (&pki.host_cert, &pki.host_key), "capable all", b"x")
    else {
        return;
    };
    // a trust directory without the server's CA
    let other = TestPki::new();
    let client = client(&other.ca_dir, 1, false);
    for url in [
        format!("roots://localhost:{}//f.bin", server.port),
        format!("root://localhost:{}//f.bin", server.port),
    ] {
        let e = open_fails(&client, &url).await;
        assert!(
            matches!(
                cause(&e),
                TlsCause::Handshake(HandshakeError::UntrustedChain(_))
            ),
            "{url}: {e}"
        );
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("untrusted"), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn a_certificate_for_another_name_is_refused() {
    let pki = TestPki::new();
    // SAN DNS:other.example only (and a CN that would match: not looked at)
    let other = pki.leaf("other", "localhost", "DNS:other.example", 1);
    let Some((server, _data)) = tls_server(&pki, (&other.0, &other.1), "capable all", b"x") else {
        return;
    };
    let client = client(&pki.ca_dir, 1, false);
    for host in ["localhost", "127.0.0.1"] {
        let e = open_fails(&client, &format!("roots://{host}:{}//f.bin", server.port)).await;
        match cause(&e) {
            TlsCause::Handshake(HandshakeError::NameMismatch {
                expected,
                presented,
            }) => {
                assert_eq!(expected, host);
                assert!(
                    presented.iter().any(|n| n.contains("other.example")),
                    "{presented:?}"
                );
            }
            other => panic!("{host}: {other:?}"),
        }
        assert!(e.to_string().contains(host), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn an_expired_certificate_is_refused() {
    let pki = TestPki::new();
    let expired = pki.leaf("expired", "localhost", "DNS:localhost,IP:127.0.0.1", 0);
    let Some((server, _data)) = tls_server(&pki, (&expired.0, &expired.1), "capable all", b"x")
    else {
        return;
    };
    let client = client(&pki.ca_dir, 1, false);
    let e = open_fails(
        &client,
        &format!("roots://localhost:{}//f.bin", server.port),
    )
    .await;
    assert!(
        matches!(
            cause(&e),
            TlsCause::Handshake(HandshakeError::Expired { not_after: Some(t) })
                if *t == 946_771_200 // 2000-01-02T00:00:00Z
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("expired"), "{e}");
}

/// A relay to 127.0.0.1:`upstream` for one connection that records what the
/// client sends; the recording is complete once the client has closed.
struct Recorder {
    port: u16,
    sent: Arc<Mutex<Vec<u8>>>,
    done: tokio::task::JoinHandle<()>,
}

impl Recorder {
    async fn start(upstream: u16) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let rec = Arc::clone(&sent);
        let done = tokio::spawn(async move {
            let (client, _) = listener.accept().await.unwrap();
            let server = TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
            let (mut cr, mut cw) = client.into_split();
            let (mut sr, mut sw) = server.into_split();
            let back = tokio::spawn(async move {
                let _ = tokio::io::copy(&mut sr, &mut cw).await;
            });
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match cr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        rec.lock().unwrap().extend_from_slice(&buf[..n]);
                        if sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
            back.abort();
        });
        Recorder { port, sent, done }
    }

    /// Everything the client sent, once it has closed the connection.
    async fn sent(self) -> Vec<u8> {
        self.done.await.unwrap();
        let sent = self.sent.lock().unwrap().clone();
        sent
    }
}

/// The 20-byte handshake then one `kXR_protocol` request (24 bytes, flags
/// at byte 8) and nothing else: its flags.
fn only_protocol_request(sent: &[u8]) -> ProtocolFlags {
    assert_eq!(
        sent.len(),
        20 + 24,
        "more than handshake + kXR_protocol: {sent:?}"
    );
    let req = &sent[20..];
    assert_eq!(u16::from_be_bytes([req[2], req[3]]), 3006, "kXR_protocol");
    ProtocolFlags(req[8])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn roots_to_a_server_without_tls_stops_after_the_protocol_answer() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f.bin"), b"x").unwrap();
    let Some(server) = StockServer::start(data.path(), &[]) else {
        return;
    };
    let pki = TestPki::new();
    let client = client(&pki.ca_dir, 1, false);
    let relay = Recorder::start(server.port).await;
    let e = open_fails(&client, &format!("roots://127.0.0.1:{}//f.bin", relay.port)).await;
    assert!(
        matches!(cause(&e), TlsCause::ServerWithoutTls { .. }),
        "{e:?}"
    );
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    drop(client);
    let flags = only_protocol_request(&relay.sent().await);
    assert!(flags.contains(ProtocolFlags::WANT_TLS | ProtocolFlags::ABLE_TLS));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn a_client_without_tls_told_to_switch_sends_no_login() {
    let pki = TestPki::new();
    // TLS required for everything, of every client
    let Some((server, _data)) = tls_server(&pki, (&pki.host_cert, &pki.host_key), "all", b"x")
    else {
        return;
    };
    let client = Client::with_config(Config::default().without_tls());
    let relay = Recorder::start(server.port).await;
    let e = open_fails(&client, &format!("root://127.0.0.1:{}//f.bin", relay.port)).await;
    assert_eq!(
        cause(&e),
        &TlsCause::Required {
            asked: "kXR_tlsLogin"
        },
        "{e}"
    );
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
    drop(client);
    let flags = only_protocol_request(&relay.sent().await);
    assert!(!flags.contains(ProtocolFlags::ABLE_TLS), "{flags:?}");

    // and roots:// without a configuration never connects
    let client = Client::with_config(Config::default().without_tls());
    let e = open_fails(
        &client,
        &format!("roots://127.0.0.1:{}//f.bin", server.port),
    )
    .await;
    assert_eq!(cause(&e), &TlsCause::NotConfigured);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn the_xrdcp_and_xrdfs_examples_take_roots_urls_and_x509_cert_dir() {
    let pki = TestPki::new();
    let content = pattern(300_000);
    let Some((server, data)) = tls_server(
        &pki,
        (&pki.host_cert, &pki.host_key),
        "capable all",
        &content,
    ) else {
        return;
    };
    let (xrdcp, xrdfs) = tokio::task::spawn_blocking(|| {
        (
            xroot_testkit::example::example_bin("xrdcp"),
            xroot_testkit::example::example_bin("xrdfs"),
        )
    })
    .await
    .unwrap();
    let run = |bin: &Path, cert_dir: &Path, args: &[&str]| {
        let out = Command::new(bin)
            .args(args)
            .env("X509_CERT_DIR", cert_dir)
            .env_remove("XRD_TLSNODATA")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let base = format!("roots://localhost:{}", server.port);
    let local = tempfile::tempdir().unwrap();
    let copy = local.path().join("copy.bin");
    let (ok, text) = run(
        &xrdcp,
        &pki.ca_dir,
        &["-s", &format!("{base}//f.bin"), copy.to_str().unwrap()],
    );
    assert!(ok, "{text}");
    assert!(std::fs::read(&copy).unwrap() == content);
    let (ok, text) = run(
        &xrdcp,
        &pki.ca_dir,
        &["-s", copy.to_str().unwrap(), &format!("{base}//up.bin")],
    );
    assert!(ok, "{text}");
    assert!(std::fs::read(data.path().join("up.bin")).unwrap() == content);
    let (ok, text) = run(&xrdfs, &pki.ca_dir, &[&base, "stat", "/up.bin"]);
    assert!(ok && text.contains("Size:   300000"), "{text}");
    // trust from another CA directory: the handshake fails, naming why
    let other = TestPki::new();
    let (ok, text) = run(&xrdfs, &other.ca_dir, &[&base, "ls", "/"]);
    assert!(
        !ok && text.contains("untrusted certificate chain"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn the_cache_reads_its_origin_over_roots() {
    use xroot::cache::origin::{Origin, OriginFs, RemoteOrigin};
    let pki = TestPki::new();
    let content = pattern(3_000_000);
    let Some((server, _data)) = tls_server(
        &pki,
        (&pki.host_cert, &pki.host_key),
        "capable all",
        &content,
    ) else {
        return;
    };
    let client = client(&pki.ca_dir, 2, false);
    let base = format!("roots://localhost:{}", server.port);
    let origin = RemoteOrigin::new(client.clone(), &base).unwrap();
    let f = origin.open("/f.bin").await.unwrap();
    assert_eq!(Origin::stat(&f).await.unwrap().size, 3_000_000);
    // one run (a pgread), then many (a readv)
    let runs = [(8192u64, 1 << 20)];
    let got = f.read_runs(&runs).await.unwrap();
    assert!(got.data[0][..] == content[8192..8192 + (1 << 20)]);
    let runs: Vec<(u64, usize)> = (0..50u64).map(|i| (i * 57_344, 4096)).collect();
    let got = f.read_runs(&runs).await.unwrap();
    for (&(o, l), d) in runs.iter().zip(&got.data) {
        assert!(d[..] == content[o as usize..o as usize + l], "run at {o}");
    }
    Origin::close(&f).await.unwrap();
    let names: Vec<String> = origin
        .dirlist("/sub", false)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let ch = &client.channels()[0];
    assert_eq!(ch.key().scheme, "roots");
    assert!(ch.server_info().unwrap().tls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_xrootd, ignore = "needs the stock xrootd (see scripts/test)")]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn a_lost_tls_connection_is_made_again_with_tls() {
    let pki = TestPki::new();
    let content = pattern(SIZE);
    // kXR_tlsSess: TLS starts after the login, before kXR_endsess
    let level = "capable data session";
    let Some((mut server, data)) =
        tls_server(&pki, (&pki.host_cert, &pki.host_key), level, &content)
    else {
        return;
    };
    let port = server.port;
    let client = client(&pki.ca_dir, 2, false);
    let f = client
        .open(&format!("root://localhost:{port}//f.bin"), OpenFlags::READ)
        .await
        .unwrap();
    assert!(f.is_secure());
    assert!(f.read_at(0, 1000).await.unwrap()[..] == content[..1000]);
    let ch = Arc::clone(&client.channels()[0]);
    let first = ch.server_info().unwrap().sessid;

    // the server dies; its connections close
    server.kill();
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while ch.server_info().is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the link noticed the server's end");
    let _back = tls_server_on(
        port,
        &pki,
        (&pki.host_cert, &pki.host_key),
        level,
        data.path(),
    )
    .unwrap();

    // the same file reads on: connect, TLS after login, end the old
    // session, open again, and a TLS data stream
    let got = f.read_at(500_000, 100_000).await.unwrap();
    assert!(got[..] == content[500_000..600_000]);
    let info = ch.server_info().unwrap();
    assert!(info.tls && info.sessid != first, "{info:?}");
    assert!(f.is_secure());
    assert_eq!(ch.substreams().len(), 1);
    assert!(ch.substreams()[0].1);
    f.close().await.unwrap();
}
