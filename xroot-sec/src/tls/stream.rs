//! The byte stream under an XRootD link, plain TCP or TLS over TCP, and its
//! read and write halves, for the client's and the server's link tasks
//! (the connect and the accept stay in their crates).
//!
//! A third kind, an in-process byte stream ([`DuplexStream`]), serves
//! tests and fuzzing: it has no address and never runs TLS.
//!
//! A plain stream splits into tokio's owned TCP halves
//! ([`TcpStream::into_split`]), so reading and writing cost what they cost
//! without TLS: one `match` per call, no lock between the halves. A TLS
//! stream splits into [`tokio::io::split`] halves, which share the one
//! rustls session.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, BufReader, DuplexStream, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// A TLS session over TCP, the client's or the server's side. The socket
/// is read through a buffer ([`buffered`]): rustls asks for at most one
/// record (16 KiB) per read, and reading the socket in larger pieces costs
/// fewer system calls than it costs to copy the bytes once more.
pub type TlsTcp = tokio_rustls::TlsStream<BufReader<TcpStream>>;

/// `tcp` read through a buffer of `capacity` bytes, for a TLS handshake
/// ([`TlsTcp`]). Allocates the buffer now.
pub fn buffered(tcp: TcpStream, capacity: usize) -> BufReader<TcpStream> {
    BufReader::with_capacity(capacity, tcp)
}

/// A link's whole stream.
#[derive(Debug)]
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP, after the handshake.
    Tls(Box<TlsTcp>),
    /// In process, for tests and fuzzing.
    Memory(DuplexStream),
}

/// The reading half of a [`Stream`].
#[derive(Debug)]
pub enum ReadHalf {
    /// Of a plain stream.
    Plain(OwnedReadHalf),
    /// Of a TLS stream.
    Tls(tokio::io::ReadHalf<TlsTcp>),
    /// Of an in-process stream.
    Memory(tokio::io::ReadHalf<DuplexStream>),
}

/// The writing half of a [`Stream`]. Over TLS, a write may leave
/// ciphertext in the session's buffer: flush after each batch.
#[derive(Debug)]
pub enum WriteHalf {
    /// Of a plain stream.
    Plain(OwnedWriteHalf),
    /// Of a TLS stream.
    Tls(tokio::io::WriteHalf<TlsTcp>),
    /// Of an in-process stream.
    Memory(tokio::io::WriteHalf<DuplexStream>),
}

impl Stream {
    /// Whether the stream runs TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// The TCP socket under the stream; `None` in process.
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Plain(t) => Some(t),
            Stream::Tls(t) => Some(t.get_ref().0.get_ref()),
            Stream::Memory(_) => None,
        }
    }

    /// Our address on the connection. Errors: the socket's
    /// (`getsockname`); `Unsupported` in process.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp().ok_or_else(no_address)?.local_addr()
    }

    /// The peer's address. Errors: the socket's (`getpeername`);
    /// `Unsupported` in process.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.tcp().ok_or_else(no_address)?.peer_addr()
    }

    /// The read and write halves, for a link's tasks.
    pub fn into_split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Stream::Plain(t) => {
                let (r, w) = t.into_split();
                (ReadHalf::Plain(r), WriteHalf::Plain(w))
            }
            Stream::Tls(t) => {
                let (r, w) = tokio::io::split(*t);
                (ReadHalf::Tls(r), WriteHalf::Tls(w))
            }
            Stream::Memory(m) => {
                let (r, w) = tokio::io::split(m);
                (ReadHalf::Memory(r), WriteHalf::Memory(w))
            }
        }
    }
}

fn no_address() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "an in-process stream has no address",
    )
}

/// Forwards `AsyncRead` to whichever stream the enum holds.
macro_rules! forward_read {
    ($ty:ident) => {
        impl AsyncRead for $ty {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $ty::Plain(s) => Pin::new(s).poll_read(cx, buf),
                    $ty::Tls(s) => Pin::new(s).poll_read(cx, buf),
                    $ty::Memory(s) => Pin::new(s).poll_read(cx, buf),
                }
            }
        }
    };
}

/// Forwards `AsyncWrite` (vectored writes included) to whichever stream
/// the enum holds.
macro_rules! forward_write {
    ($ty:ident) => {
        impl AsyncWrite for $ty {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                match self.get_mut() {
                    $ty::Plain(s) => Pin::new(s).poll_write(cx, buf),
                    $ty::Tls(s) => Pin::new(s).poll_write(cx, buf),
                    $ty::Memory(s) => Pin::new(s).poll_write(cx, buf),
                }
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                match self.get_mut() {
                    $ty::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
                    $ty::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
                    $ty::Memory(s) => Pin::new(s).poll_write_vectored(cx, bufs),
                }
            }

            fn is_write_vectored(&self) -> bool {
                match self {
                    $ty::Plain(s) => s.is_write_vectored(),
                    $ty::Tls(s) => s.is_write_vectored(),
                    $ty::Memory(s) => s.is_write_vectored(),
                }
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $ty::Plain(s) => Pin::new(s).poll_flush(cx),
                    $ty::Tls(s) => Pin::new(s).poll_flush(cx),
                    $ty::Memory(s) => Pin::new(s).poll_flush(cx),
                }
            }

            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $ty::Plain(s) => Pin::new(s).poll_shutdown(cx),
                    $ty::Tls(s) => Pin::new(s).poll_shutdown(cx),
                    $ty::Memory(s) => Pin::new(s).poll_shutdown(cx),
                }
            }
        }
    };
}

forward_read!(Stream);
forward_write!(Stream);
forward_read!(ReadHalf);
forward_write!(WriteHalf);
