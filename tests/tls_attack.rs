//! Hostile clients on our server's TLS path. Each test keeps a good TLS
//! session working meanwhile and checks the server lets the hostile link
//! go (its `LinkStats` disappear from `ServerHandle::stats`):
//!
//! - `kXR_wantTLS`, `kXR_gotoTLS`, then no ClientHello, or half of one:
//!   closed at `Config::handshake_timeout` (small here);
//! - a thousand links stalled mid-handshake at once;
//! - garbage TLS records after the handshake, `close_notify` in the middle
//!   of a request frame, a reset while a large read answer streams;
//! - `kXR_bind`: a plain substream where data needs TLS (3028), a TLS
//!   substream bound to a plain session, a bind from another host.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use xroot::proto::request::{Bind, Request};
use xroot::proto::response::{BindResponse, Response};
use xroot::proto::{ErrorCode, FHandle, StreamId};
use xroot::server::{
    Config, LocalFs, Server, ServerHandle, ServerTls, ServerTlsFiles, TlsConfig, TlsRequirement,
};

use xroot_testkit::pki::TestPki;
use xroot_testkit::raw::GUARD;
use xroot_testkit::tls_link::{self, client_config, read, Link, TlsLink, ABLE, GOTO_TLS, WANT};

const BIG: usize = 16 << 20;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// Answers as large as a whole `BIG` read.
const MAX_DLEN: usize = BIG + 1024;

/// Handshake and `kXR_protocol` with `flags` and `expect` on a plain link.
async fn hello(addr: SocketAddr, flags: u8, expect: u8) -> (Link<TcpStream>, u32) {
    hello_on(TcpStream::connect(addr).await.unwrap(), flags, expect).await
}

async fn hello_on(s: TcpStream, flags: u8, expect: u8) -> (Link<TcpStream>, u32) {
    tls_link::hello_on(Link::new(s).with_max_dlen(MAX_DLEN), flags, expect).await
}

/// TLS on a link told `kXR_gotoTLS`.
async fn start_tls(pki: &TestPki, link: Link<TcpStream>) -> TlsLink {
    tls_link::start_tls(link, client_config(pki, None))
        .await
        .unwrap()
}

/// `kXR_wantTLS`, then TLS: a TLS link, not logged in.
async fn tls_link(pki: &TestPki, addr: SocketAddr) -> TlsLink {
    let (link, flags) = hello(addr, ABLE | WANT, 3).await;
    assert_eq!(flags & GOTO_TLS, GOTO_TLS);
    start_tls(pki, link).await
}

/// The first bytes a rustls client writes: a whole ClientHello record.
fn client_hello(pki: &TestPki) -> Vec<u8> {
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn =
        tokio_rustls::rustls::ClientConnection::new(client_config(pki, None), name).unwrap();
    let mut out = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut out).unwrap();
    }
    out
}

struct Served {
    addr: SocketAddr,
    handle: ServerHandle,
    data: tempfile::TempDir,
    content: Vec<u8>,
}

impl Served {
    /// Links the server holds now.
    fn links(&self) -> usize {
        self.handle.stats().links.len()
    }

    /// Waits (within the guard) until the server holds `n` links.
    async fn links_become(&self, n: usize) {
        tokio::time::timeout(GUARD, async {
            while self.links() != n {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{} links, not {n}", self.links()));
    }

    /// A good TLS session reads a piece of `big.bin` correctly.
    async fn check(&self, good: &mut TlsLink, offset: usize, len: usize) {
        let got = good.read("/big.bin", offset as i64, len as i32).await;
        assert!(
            got[..] == self.content[offset..offset + len],
            "good read differs"
        );
    }
}

async fn serve(pki: &TestPki, level: TlsRequirement, handshake: Duration) -> Served {
    let content = pattern(BIG);
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("big.bin"), &content).unwrap();
    let files = ServerTlsFiles::new(&pki.host_cert, &pki.host_key).with_ca_dir(&pki.ca_dir);
    let config = Config {
        tls: Some(TlsConfig {
            server: Arc::new(ServerTls::load(files).unwrap()),
            requirement: level,
        }),
        handshake_timeout: handshake,
        ..Config::default()
    };
    let fs = LocalFs::new(data.path()).unwrap();
    // both loopbacks when the machine has IPv6 (for the cross-host bind)
    let server = if cfg!(missing_ipv6) {
        Server::bind("127.0.0.1:0", fs, config).await.unwrap()
    } else {
        Server::bind("[::]:0", fs, config).await.unwrap()
    };
    let port = server.local_addr().port();
    let handle = server.handle();
    tokio::spawn(server.serve());
    Served {
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        handle,
        data,
        content,
    }
}

const HANDSHAKE: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn no_client_hello_or_half_of_one_is_closed_at_the_handshake_timeout() {
    let pki = TestPki::new();
    let srv = serve(&pki, TlsRequirement::Capable, HANDSHAKE).await;
    let mut good = tls_link(&pki, srv.addr).await;
    good.login().await;
    srv.check(&mut good, 0, 1000).await;
    assert_eq!(srv.links(), 1);

    // nothing after kXR_gotoTLS
    let (mut silent, flags) = hello(srv.addr, ABLE | WANT, 3).await;
    assert_eq!(flags & GOTO_TLS, GOTO_TLS);
    // half a ClientHello
    let (mut half, _) = hello(srv.addr, ABLE | WANT, 3).await;
    let ch = client_hello(&pki);
    half.s.write_all(&ch[..ch.len() / 2]).await.unwrap();
    // a record header announcing more than is ever sent
    let (mut header, _) = hello(srv.addr, ABLE | WANT, 3).await;
    header
        .s
        .write_all(&[0x16, 0x03, 0x01, 0x40, 0x00, 1, 2])
        .await
        .unwrap();
    assert_eq!(srv.links(), 4);
    // served meanwhile
    srv.check(&mut good, 5000, 100_000).await;
    silent.expect_closed().await;
    half.expect_closed().await;
    header.expect_closed().await;
    srv.links_become(1).await;
    srv.check(&mut good, 1 << 20, 100_000).await;
}

const STALLED: usize = 1000;

/// This process's resident set, bytes (`VmRSS`).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb << 10
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn a_thousand_links_stalled_mid_handshake() {
    let pki = TestPki::new();
    let srv = serve(&pki, TlsRequirement::Login, Duration::from_secs(5)).await;
    let ch = client_hello(&pki);
    let mut stalled = Vec::new();
    let before = rss();
    for i in 0..STALLED {
        let (mut link, flags) = hello(srv.addr, ABLE, 3).await;
        assert_eq!(flags & GOTO_TLS, GOTO_TLS);
        // every other one half a ClientHello, the others a whole one and
        // then nothing (the server's flight unread)
        let n = if i % 2 == 0 { ch.len() / 2 } else { ch.len() };
        link.s.write_all(&ch[..n]).await.unwrap();
        stalled.push(link);
    }
    assert_eq!(srv.links(), STALLED);
    let grown = rss().saturating_sub(before);
    println!(
        "{STALLED} stalled handshakes: resident memory grew {} KiB",
        grown >> 10
    );
    // client and server side together, a little per link
    assert!(grown < (STALLED as u64) * (128 << 10), "grew {grown} bytes");
    // a good session is served meanwhile, and in full
    let mut good = tls_link(&pki, srv.addr).await;
    good.login().await;
    srv.check(&mut good, 0, BIG).await;
    for link in &mut stalled {
        link.expect_closed().await;
    }
    srv.links_become(1).await;
    srv.check(&mut good, 77, 1000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn garbage_records_close_notify_and_reset_after_the_handshake() {
    let pki = TestPki::new();
    let srv = serve(&pki, TlsRequirement::Capable, HANDSHAKE).await;
    let mut good = tls_link(&pki, srv.addr).await;
    good.login().await;

    // a TLS record of garbage (right type and version, wrong MAC)
    let mut bad = tls_link(&pki, srv.addr).await;
    bad.login().await;
    let tcp = bad.s.get_mut().0;
    let mut rec = vec![0x17, 0x03, 0x03, 0x00, 0x40];
    rec.extend_from_slice(&[0xa5; 0x40]);
    tcp.write_all(&rec).await.unwrap();
    bad.expect_closed().await;
    srv.links_become(1).await;
    srv.check(&mut good, 0, 10_000).await;

    // close_notify in the middle of a request frame
    let mut half = tls_link(&pki, srv.addr).await;
    half.login().await;
    let mut frame = BytesMut::new();
    Request::from(read(FHandle([0; 4]), 0, 10)).encode(StreamId::from_u16(3), &mut frame);
    half.s.write_all(&frame[..10]).await.unwrap();
    half.s.shutdown().await.unwrap();
    half.expect_closed().await;
    srv.links_become(1).await;

    // a reset while a 16 MiB read answer streams
    let mut reset = tls_link(&pki, srv.addr).await;
    reset.login().await;
    let fh = reset.open("/big.bin").await;
    reset.send(2, read(fh, 0, BIG as i32)).await.unwrap();
    let mut chunk = vec![0u8; 65536];
    let n = reset.s.read(&mut chunk).await.unwrap();
    assert!(n > 0);
    let tcp = reset.s.into_inner().0;
    #[allow(deprecated)] // a zero linger does not block on drop: it resets
    tcp.set_linger(Some(Duration::ZERO)).unwrap();
    drop(tcp);
    srv.links_become(1).await;
    srv.check(&mut good, 3 << 20, 1 << 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn binds_of_tls_and_plain_substreams() {
    let pki = TestPki::new();

    // data needs TLS: a plain substream's bind is refused with 3028
    let srv = serve(&pki, TlsRequirement::Data, HANDSHAKE).await;
    let (main, _) = hello(srv.addr, ABLE, 3).await;
    let mut main = main;
    let sessid = main.login().await;
    // the session switches after the login answer
    let mut main = start_tls(&pki, main).await;
    srv.check(&mut main, 0, 1000).await;
    let (mut plain, flags) = hello(srv.addr, 0, 1).await;
    assert_eq!(flags & GOTO_TLS, 0, "{flags:#x}");
    plain.send(0, Bind { sessid }).await.unwrap();
    let text = plain.expect_error(ErrorCode::TLS_REQUIRED).await;
    assert!(text.contains("TLS"), "{text}");
    // the same bind over TLS is taken
    let (sub, flags) = hello(srv.addr, ABLE, 1).await;
    assert_eq!(flags & GOTO_TLS, GOTO_TLS, "{flags:#x}");
    let mut sub = start_tls(&pki, sub).await;
    sub.send(0, Bind { sessid }).await.unwrap();
    let Response::Ok(b) = sub.expect().await else {
        panic!("bind answer")
    };
    assert_eq!(BindResponse::decode(b).unwrap().pathid, 1);
    srv.check(&mut main, 1000, 1000).await;

    // capable: a TLS substream bound to a plain session is taken (the
    // client decides), and the session goes on
    let srv = serve(&pki, TlsRequirement::Capable, HANDSHAKE).await;
    let (mut main, _) = hello(srv.addr, ABLE, 3).await;
    let sessid = main.login().await;
    let mut sub = tls_link(&pki, srv.addr).await;
    sub.send(0, Bind { sessid }).await.unwrap();
    let Response::Ok(b) = sub.expect().await else {
        panic!("bind answer")
    };
    assert_eq!(BindResponse::decode(b).unwrap().pathid, 1);
    let got = main.read("/big.bin", 0, 1000).await;
    assert_eq!(&got[..], &srv.content[..1000]);
    let _ = srv.data.path();
}

/// A TLS bind from another host (::1 for a session of 127.0.0.1) is
/// refused, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
#[cfg_attr(missing_ipv6, ignore = "needs an IPv6 loopback")]
async fn a_bind_from_another_host_is_refused() {
    let pki = TestPki::new();
    let srv = serve(&pki, TlsRequirement::Capable, HANDSHAKE).await;
    let (mut main, _) = hello(srv.addr, ABLE, 3).await;
    let sessid = main.login().await;
    let s = TcpStream::connect(("::1", srv.addr.port()))
        .await
        .expect("connect to the server over [::1]");
    let (other, _) = hello_on(s, ABLE | WANT, 1).await;
    let mut other = start_tls(&pki, other).await;
    other.send(0, Bind { sessid }).await.unwrap();
    other.expect_error(ErrorCode::NOT_AUTHORIZED).await;
    let got = main.read("/big.bin", 7, 1000).await;
    assert_eq!(&got[..], &srv.content[7..1007]);
    let _ = srv.data.path();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(missing_openssl, ignore = "needs openssl (scripts/test installs it)")]
async fn a_session_that_never_switches_after_login_is_closed_and_its_session_ended() {
    let pki = TestPki::new();
    let srv = serve(&pki, TlsRequirement::Session, HANDSHAKE).await;
    let mut good = tls_link(&pki, srv.addr).await;
    good.login().await;
    srv.check(&mut good, 0, 1000).await;
    // logged in, told (kXR_tlsSess) to switch now, and silent
    let (mut stalled, _) = hello(srv.addr, ABLE, 3).await;
    let sessid = stalled.login().await;
    srv.check(&mut good, 1000, 1000).await;
    stalled.expect_closed().await;
    srv.links_become(1).await;
    // its session is gone: a bind to it finds nothing
    let mut sub = tls_link(&pki, srv.addr).await;
    sub.send(0, Bind { sessid }).await.unwrap();
    sub.expect_error(ErrorCode::NOT_FOUND).await;
    srv.check(&mut good, 2000, 1000).await;
}
