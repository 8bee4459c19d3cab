//! The byte stream under a connection: plain TCP, or TLS over TCP once the
//! connection has switched (`roots://`, or a server's `kXR_gotoTLS` /
//! `kXR_tlsLogin` / `kXR_tlsSess` / `kXR_tlsData`: see [`super::tls`]).
//!
//! The stream and its halves are [`xroot_sec::tls::stream`]'s, shared with
//! the server; the client's side of the handshake is here.

use tokio_rustls::TlsConnector;
use xroot_sec::tls::client::{server_name, ClientTls, HandshakeError};
use xroot_sec::tls::stream::buffered;
pub(crate) use xroot_sec::tls::stream::{ReadHalf, Stream as Transport, WriteHalf};

/// Bytes read from the socket at a time under TLS: 256 KiB, sixteen
/// records (a client has few connections; on a 1 GiB copy this took a
/// third off the system time of 16 KiB reads).
const READ_BUFFER: usize = 256 << 10;

/// Runs the TLS handshake as a client over `sock` (plain), verifying the
/// server's certificate against `tls`'s trust and the URL host `host` (a
/// name or an address, IPv6 with or without brackets). Errors: the
/// [`HandshakeError`] naming why it failed. On a stream already under TLS,
/// returns it unchanged.
pub(crate) async fn start_tls(
    sock: Transport,
    tls: &ClientTls,
    host: &str,
) -> Result<Transport, HandshakeError> {
    let tcp = match sock {
        Transport::Plain(tcp) => tcp,
        Transport::Tls(_) => return Ok(sock),
        Transport::Memory(_) => {
            return Err(HandshakeError::Other(
                "TLS over an in-process stream".into(),
            ))
        }
    };
    let name = server_name(host)?;
    let stream = TlsConnector::from(tls.rustls_config())
        .connect(name, buffered(tcp, READ_BUFFER))
        .await
        .map_err(|e| HandshakeError::from_io(&e))?;
    Ok(Transport::Tls(Box::new(stream.into())))
}
