//! The two halves of a link's socket, plain or TLS, and the switch from one
//! to the other on the same connection (the in-protocol upgrade of
//! XrdXrootdXeq `do_Protocol`/`logLogin`, SECURITY.md "TLS").
//!
//! The halves are [`xroot_sec::tls::stream`]'s, shared with the client: a
//! plain link is split with [`TcpStream::into_split`], so reading and
//! writing cost what they cost without TLS: one `match` per call. To
//! switch, the halves are reunited, the rustls handshake runs on the
//! socket, and the TLS stream is split again.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls::ServerConfig;
use xroot_sec::tls::stream::buffered;
use xroot_sec::tls::stream::Stream;
pub(crate) use xroot_sec::tls::stream::{
    ReadHalf as LinkRead, Stream as LinkStream, WriteHalf as LinkWrite,
};

/// Bytes read from the socket at a time under TLS: two records. Requests
/// are small; uploads gain from more, but every TLS link holds this much.
const READ_BUFFER: usize = 32 << 10;

/// Bytes of records rustls encrypts ahead of the socket: one record, each
/// written as soon as it is sealed. Sending 1 GiB to the stock `xrdcp`,
/// this took 5–10% off the server's CPU time against rustls' default of
/// 64 KiB, and 1 MiB was slower still (its record buffers, allocated and
/// freed in turn, made the heap shrink and fault back in).
const SEND_BUFFER: usize = 16 << 10;

/// Runs the server side of a TLS handshake on a plain link's reunited
/// halves, within `timeout`, and returns the TLS halves.
///
/// Errors: the halves are not two plain halves of one socket: the link
/// already runs TLS, or runs in process (`InvalidInput`); the handshake
/// failed (what rustls says: garbage instead of a ClientHello, a client
/// certificate that does not verify, …) or took longer than `timeout`
/// (`TimedOut`).
pub(crate) async fn accept(
    rd: LinkRead,
    wr: LinkWrite,
    config: Arc<ServerConfig>,
    timeout: Duration,
) -> io::Result<(LinkRead, LinkWrite)> {
    let (LinkRead::Plain(rd), LinkWrite::Plain(wr)) = (rd, wr) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the link already runs TLS, or runs in process",
        ));
    };
    let stream = rd
        .reunite(wr)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let mut tls = tokio::time::timeout(timeout, acceptor.accept(buffered(stream, READ_BUFFER)))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
    tls.get_mut().1.set_buffer_limit(Some(SEND_BUFFER));
    Ok(Stream::Tls(Box::new(tls.into())).into_split())
}
