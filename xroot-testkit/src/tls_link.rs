//! A raw XRootD link for the TLS tests of our server and the stock one:
//! the handshake and `kXR_protocol` on a plain link, the switch to TLS on
//! the same connection (`kXR_wantTLS` answered `kXR_gotoTLS`), requests
//! written as frames and answers decoded one by one.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use xroot_proto::request::{Expect, Open, OpenOptions, Protocol, ProtocolFlags, Read, Request};
use xroot_proto::response::{LoginResponse, ProtocolResponse, Response};
use xroot_proto::{ClientHandshake, ErrorCode, FHandle, ResponseDecoder, StreamId};

use crate::pki::TestPki;
use crate::raw::{login_request, GUARD};

/// `kXR_ableTLS` in `kXR_protocol`'s flags (XProtocol.hh).
pub const ABLE: u8 = 0x02;
/// `kXR_wantTLS` in `kXR_protocol`'s flags (XProtocol.hh).
pub const WANT: u8 = 0x04;
/// `kXR_gotoTLS` in the `kXR_protocol` answer's flags (XProtocol.hh).
pub const GOTO_TLS: u32 = 0x4000_0000;

/// A link over `S` (TCP, or TLS over TCP) with its unread bytes.
pub struct Link<S> {
    /// The stream.
    pub s: S,
    /// Bytes read and not yet decoded.
    pub buf: BytesMut,
    dec: ResponseDecoder,
}

/// A link under TLS.
pub type TlsLink = Link<tokio_rustls::client::TlsStream<TcpStream>>;

impl<S: AsyncRead + AsyncWrite + Unpin> Link<S> {
    /// A link over `s`, nothing read yet.
    pub fn new(s: S) -> Link<S> {
        Link {
            s,
            buf: BytesMut::new(),
            dec: ResponseDecoder::new(),
        }
    }

    /// The same link, decoding answers of up to `max` bytes.
    pub fn with_max_dlen(self, max: usize) -> Link<S> {
        Link {
            dec: ResponseDecoder::new().with_max_dlen(max),
            ..self
        }
    }

    /// Writes `req`, encoded, on streamid `sid`, and flushes.
    pub async fn send(&mut self, sid: u16, req: impl Into<Request>) -> std::io::Result<()> {
        let mut b = BytesMut::new();
        req.into().encode(StreamId::from_u16(sid), &mut b);
        self.s.write_all(&b).await?;
        self.s.flush().await
    }

    /// The next answer; `Ok(None)` at end of stream, `Err` on a broken
    /// link (a TLS alert).
    pub async fn next(&mut self) -> std::io::Result<Option<Response>> {
        loop {
            if let Some(f) = self.dec.decode(&mut self.buf).unwrap() {
                return Ok(Some(Response::decode(f).unwrap()));
            }
            let n = tokio::time::timeout(GUARD, self.s.read_buf(&mut self.buf))
                .await
                .expect("answer within the guard")?;
            if n == 0 {
                return Ok(None);
            }
        }
    }

    /// The next answer; panics on a closed or broken link.
    pub async fn expect(&mut self) -> Response {
        self.next()
            .await
            .unwrap()
            .expect("an answer, not a closed link")
    }

    /// Expects a `kXR_error` with `code`, and returns its message.
    pub async fn expect_error(&mut self, code: ErrorCode) -> String {
        match self.expect().await {
            Response::Error(e) if e.code == code => e.message_lossy().into_owned(),
            other => panic!("expected {code}, got {other:?}"),
        }
    }

    /// Waits for the end of the stream (or a broken link), whatever comes
    /// before it.
    pub async fn expect_closed(&mut self) {
        loop {
            let mut chunk = [0u8; 65536];
            let n = tokio::time::timeout(GUARD, self.s.read(&mut chunk))
                .await
                .expect("the server closes the link within the guard");
            if !matches!(n, Ok(n) if n > 0) {
                return;
            }
        }
    }

    /// Logs in ([`login_request`] on streamid 0); the session id.
    pub async fn login(&mut self) -> [u8; 16] {
        self.send(0, login_request()).await.unwrap();
        let Response::Ok(body) = self.expect().await else {
            panic!("login answer")
        };
        LoginResponse::decode(body).unwrap().sessid
    }

    /// Opens `path` for reading (on streamid 1); the handle.
    pub async fn open(&mut self, path: &str) -> FHandle {
        let open = Open {
            options: OpenOptions::READ,
            path: Bytes::copy_from_slice(path.as_bytes()),
            ..Default::default()
        };
        self.send(1, open).await.unwrap();
        let Response::Ok(b) = self.expect().await else {
            panic!("open answer")
        };
        FHandle(b[..4].try_into().unwrap())
    }

    /// Opens `path` and reads `len` bytes at `offset`, all the partial
    /// answers joined.
    pub async fn read(&mut self, path: &str, offset: i64, len: i32) -> Bytes {
        let fhandle = self.open(path).await;
        self.send(2, read(fhandle, offset, len)).await.unwrap();
        let mut got = BytesMut::new();
        loop {
            match self.expect().await {
                Response::OkSoFar(d) => got.extend_from_slice(&d),
                Response::Ok(d) => {
                    got.extend_from_slice(&d);
                    return got.freeze();
                }
                other => panic!("read answer: {other:?}"),
            }
        }
    }
}

/// A `kXR_read` request.
pub fn read(fhandle: FHandle, offset: i64, rlen: i32) -> Read {
    Read {
        fhandle,
        offset,
        rlen,
        ..Default::default()
    }
}

/// Handshake and `kXR_protocol` with `flags` and `expect` on a new plain
/// link to `addr`; returns it with the answer's flags.
pub async fn hello(addr: SocketAddr, flags: u8, expect: u8) -> (Link<TcpStream>, u32) {
    hello_on(
        Link::new(TcpStream::connect(addr).await.unwrap()),
        flags,
        expect,
    )
    .await
}

/// Handshake and `kXR_protocol` with `flags` and `expect` on `link`;
/// returns it with the answer's flags.
pub async fn hello_on(mut link: Link<TcpStream>, flags: u8, expect: u8) -> (Link<TcpStream>, u32) {
    let mut b = BytesMut::new();
    ClientHandshake.encode(&mut b);
    link.s.write_all(&b).await.unwrap();
    let proto = Protocol {
        clientpv: 0x511,
        flags: ProtocolFlags(flags),
        expect: Expect(expect),
    };
    link.send(0, proto).await.unwrap();
    let Response::Ok(_) = link.expect().await else {
        panic!("handshake answer")
    };
    let Response::Ok(p) = link.expect().await else {
        panic!("protocol answer")
    };
    let p = ProtocolResponse::decode(p).unwrap();
    assert_eq!(p.pval, 0x511);
    (link, p.flags.0)
}

/// A rustls client trusting the PKI's CA, presenting `cert` (certificate
/// and key files, PEM) if given.
pub fn client_config(pki: &TestPki, cert: Option<(&Path, &Path)>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(&pki.ca_cert).unwrap())
        .unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match cert {
        None => builder.with_no_client_auth(),
        Some((c, k)) => {
            let chain = CertificateDer::pem_file_iter(c)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            builder
                .with_client_auth_cert(chain, PrivateKeyDer::from_pem_file(k).unwrap())
                .unwrap()
        }
    };
    Arc::new(config)
}

/// The TLS handshake (server name `localhost`) on a link told
/// `kXR_gotoTLS`, nothing left unread; the link keeps its decoder.
pub async fn start_tls(
    link: Link<TcpStream>,
    config: Arc<ClientConfig>,
) -> std::io::Result<TlsLink> {
    assert!(link.buf.is_empty());
    let name = ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, link.s)
        .await?;
    Ok(Link {
        s: tls,
        buf: BytesMut::new(),
        dec: link.dec,
    })
}

/// `kXR_protocol` with `kXR_wantTLS` on `link`, then the TLS handshake on
/// the same connection: the TLS link (not logged in yet).
pub async fn tls_link_on(
    link: Link<TcpStream>,
    config: Arc<ClientConfig>,
) -> std::io::Result<TlsLink> {
    let (link, flags) = hello_on(link, ABLE | WANT, 3).await;
    assert_eq!(flags & GOTO_TLS, GOTO_TLS, "wantTLS is answered gotoTLS");
    start_tls(link, config).await
}

/// [`tls_link_on`] on a new connection to `addr`.
pub async fn tls_link(addr: SocketAddr, config: Arc<ClientConfig>) -> std::io::Result<TlsLink> {
    tls_link_on(Link::new(TcpStream::connect(addr).await.unwrap()), config).await
}
