//! The byte stream under a connection: plain TCP, or TLS over TCP once the
//! connection has switched (`roots://`, or a server's `kXR_gotoTLS` /
//! `kXR_tlsLogin` / `kXR_tlsSess` / `kXR_tlsData`: see [`super::tls`]).
//!
//! The link's reader and writer tasks each own one half. A plain stream
//! splits into tokio's owned TCP halves, as before TLS existed (no lock
//! between them); a TLS stream into `tokio::io::split` halves, which share
//! the one rustls session.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use xroot_sec::tls::client::{server_name, ClientTls, HandshakeError};

/// A connection's stream.
pub(crate) enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Transport {
    /// Runs the TLS handshake as a client over this (plain) stream,
    /// verifying the server's certificate against `tls`'s trust and the
    /// URL host `host` (a name or an address, IPv6 with or without
    /// brackets). Errors: the [`HandshakeError`] naming why it failed.
    /// On a stream already under TLS, returns it unchanged.
    pub(crate) async fn start_tls(
        self,
        tls: &ClientTls,
        host: &str,
    ) -> Result<Transport, HandshakeError> {
        let tcp = match self {
            Transport::Plain(tcp) => tcp,
            already => return Ok(already),
        };
        let name = server_name(host)?;
        let stream = TlsConnector::from(tls.rustls_config())
            .connect(name, tcp)
            .await
            .map_err(|e| HandshakeError::from_io(&e))?;
        Ok(Transport::Tls(Box::new(stream)))
    }

    /// Whether the stream runs TLS.
    pub(crate) fn is_tls(&self) -> bool {
        matches!(self, Transport::Tls(_))
    }

    fn tcp(&self) -> &TcpStream {
        match self {
            Transport::Plain(t) => t,
            Transport::Tls(t) => t.get_ref().0,
        }
    }

    /// Our address on the connection.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp().local_addr()
    }

    /// The server's address.
    pub(crate) fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.tcp().peer_addr()
    }

    /// The read and write halves, for the link's tasks.
    pub(crate) fn into_split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Transport::Plain(t) => {
                let (r, w) = t.into_split();
                (ReadHalf::Plain(r), WriteHalf::Plain(w))
            }
            Transport::Tls(t) => {
                let (r, w) = tokio::io::split(*t);
                (ReadHalf::Tls(r), WriteHalf::Tls(w))
            }
        }
    }
}

/// The reading half of a [`Transport`].
pub(crate) enum ReadHalf {
    Plain(OwnedReadHalf),
    Tls(tokio::io::ReadHalf<TlsStream<TcpStream>>),
}

/// The writing half of a [`Transport`]. Over TLS, a write may leave
/// ciphertext in the session's buffer: flush after each batch.
pub(crate) enum WriteHalf {
    Plain(OwnedWriteHalf),
    Tls(tokio::io::WriteHalf<TlsStream<TcpStream>>),
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ReadHalf::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_write(cx, buf),
            WriteHalf::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_flush(cx),
            WriteHalf::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_shutdown(cx),
            WriteHalf::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
