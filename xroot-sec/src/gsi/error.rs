//! Why a `gsi` step failed.

use thiserror::Error;

use super::bucket::BufferError;

/// A `gsi` failure, with the stock's wording where it has one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GsiError {
    /// A buffer that does not decode.
    #[error("bad buffer: {0}")]
    Buffer(#[from] BufferError),
    /// A message out of order or lacking a bucket.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Key agreement, cipher or random tag failure.
    #[error("{0}")]
    Crypto(String),
    /// Data signed with an RSA key does not check out with the peer's key.
    #[error("signature check failed (wrong key or altered data)")]
    BadSignature,
    /// A key that cannot be used.
    #[error("invalid key: {0}")]
    BadKey(String),
    /// A certificate that does not parse.
    #[error("invalid certificate: {0}")]
    BadCertificate(String),
    /// The peer's chain failed a check.
    #[error("certificate chain verification failed: {0}")]
    Chain(String),
    /// No CA in the CA directory for this issuer (a name or a hash).
    #[error("unknown CA: cannot verify credentials (issuer {0})")]
    UnknownCa(String),
    /// A certificate the CA's CRL revokes.
    #[error("certificate chain verification failed: certificate has been revoked: {0}")]
    Revoked(String),
    /// The client's proxy key is not the key its certificate names.
    #[error("client public key does not match the one from the bucket!")]
    KeyMismatch,
    /// The gridmap is required and does not name this DN.
    #[error("user mapping required, but lookup failed for {0}")]
    NotMapped(String),
    /// The server's certificate is not for the host the client asked for.
    #[error("unable to verify server hostname '{0}'")]
    ServerName(String),
    /// Our own certificate, key, CA directory or gridmap cannot be used.
    #[error("{0}")]
    Config(String),
    /// The handshake took longer than the stock's 300 s.
    #[error("handshake expired")]
    Expired,
}
