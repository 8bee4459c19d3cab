//! The two halves of a link's socket, plain or TLS, and the switch from one
//! to the other on the same connection (the in-protocol upgrade of
//! XrdXrootdXeq `do_Protocol`/`logLogin`, SECURITY-FACTS.md "TLS").
//!
//! A plain link is split with [`TcpStream::into_split`], so reading and
//! writing cost what they cost without TLS: one `match` per call. To switch,
//! the halves are reunited, the rustls handshake runs on the socket, and the
//! TLS stream is split again.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::server::TlsStream;

/// The reading half of a link.
#[derive(Debug)]
pub(crate) enum LinkRead {
    Plain(OwnedReadHalf),
    Tls(tokio::io::ReadHalf<TlsStream<TcpStream>>),
}

/// The writing half of a link.
#[derive(Debug)]
pub(crate) enum LinkWrite {
    Plain(OwnedWriteHalf),
    Tls(tokio::io::WriteHalf<TlsStream<TcpStream>>),
}

/// The halves of a plain link.
pub(crate) fn split(stream: TcpStream) -> (LinkRead, LinkWrite) {
    let (rd, wr) = stream.into_split();
    (LinkRead::Plain(rd), LinkWrite::Plain(wr))
}

/// Runs the server side of a TLS handshake on a plain link's reunited
/// halves, within `timeout`, and returns the TLS halves.
///
/// Errors: the halves are not two plain halves of one socket, or the link
/// already runs TLS (`InvalidInput`); the handshake failed (what rustls
/// says: garbage instead of a ClientHello, a client certificate that does
/// not verify, …) or took longer than `timeout` (`TimedOut`).
pub(crate) async fn accept(
    rd: LinkRead,
    wr: LinkWrite,
    config: Arc<ServerConfig>,
    timeout: Duration,
) -> io::Result<(LinkRead, LinkWrite)> {
    let (LinkRead::Plain(rd), LinkWrite::Plain(wr)) = (rd, wr) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the link already runs TLS",
        ));
    };
    let stream = rd
        .reunite(wr)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let tls = tokio::time::timeout(timeout, acceptor.accept(stream))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
    let (rd, wr) = tokio::io::split(tls);
    Ok((LinkRead::Tls(rd), LinkWrite::Tls(wr)))
}

impl AsyncRead for LinkRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LinkRead::Plain(r) => Pin::new(r).poll_read(cx, buf),
            LinkRead::Tls(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for LinkWrite {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            LinkWrite::Plain(w) => Pin::new(w).poll_write(cx, buf),
            LinkWrite::Tls(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            LinkWrite::Plain(w) => Pin::new(w).poll_write_vectored(cx, bufs),
            LinkWrite::Tls(w) => Pin::new(w).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            LinkWrite::Plain(w) => w.is_write_vectored(),
            LinkWrite::Tls(w) => w.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LinkWrite::Plain(w) => Pin::new(w).poll_flush(cx),
            LinkWrite::Tls(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LinkWrite::Plain(w) => Pin::new(w).poll_shutdown(cx),
            LinkWrite::Tls(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}
