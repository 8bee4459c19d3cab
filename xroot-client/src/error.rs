//! The client's error type: every way a call can fail, each naming what
//! went wrong and keeping what the server said.

use std::io;
use std::time::Duration;

use xroot_proto::{DecodeError, ErrorCode};
use xroot_sec::tls::client::HandshakeError;

/// Why a client call failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered `kXR_error`: its code and message, verbatim.
    #[error("server error {code:?}: {message}")]
    Server {
        /// The `kXR_error` number (PROTOCOL.md §8.2).
        code: ErrorCode,
        /// The server's message, without its trailing NUL.
        message: String,
    },

    /// Connecting, reading or writing the socket failed.
    #[error("I/O error with {endpoint}: {source}")]
    Io {
        /// `host:port` of the server.
        endpoint: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// The server sent bytes that do not decode, or a frame longer than
    /// its request can get: over [`Config::max_response_dlen`], or more
    /// than 64 KiB over the data the request asked for (a read's `rlen`,
    /// [`Config::max_answer_len`] for an answer the request does not
    /// size), refused at its header. Either way the connection can no
    /// longer be trusted to be at a frame boundary: it is dropped, every
    /// request waiting on it fails with this error, and the next request
    /// connects anew.
    ///
    /// [`Config::max_response_dlen`]: crate::Config::max_response_dlen
    /// [`Config::max_answer_len`]: crate::Config::max_answer_len
    #[error("protocol violation from {endpoint}: {source}")]
    Protocol {
        /// `host:port` of the server.
        endpoint: String,
        /// What did not decode.
        #[source]
        source: DecodeError,
    },

    /// A well-formed response that does not fit the request (a `kXR_status`
    /// to a stat, a body of the wrong shape, ...).
    #[error("unexpected response to {request}: {detail}")]
    UnexpectedResponse {
        /// The request, by its protocol name.
        request: &'static str,
        /// What came instead.
        detail: String,
    },

    /// The connection dropped while the request was in flight: closed or
    /// failed, or dropped by the client because another request's deadline
    /// passed inside a frame that blocked it
    /// ([`Config::request_timeout`](crate::Config::request_timeout)).
    #[error("connection to {endpoint} lost")]
    ConnectionLost {
        /// `host:port` of the server.
        endpoint: String,
    },

    /// A deadline passed: the request's own, or the stream's inactivity
    /// timeout while requests were outstanding.
    #[error("{what} timed out after {after:?}")]
    Timeout {
        /// What timed out (`"request"`, `"stream"`, `"connect"`).
        what: &'static str,
        /// The limit that passed.
        after: Duration,
    },

    /// More redirects than the configured limit (16 by default).
    #[error("redirect limit of {limit} reached (last target {last})")]
    RedirectLimit {
        /// The limit.
        limit: u32,
        /// The last redirect target.
        last: String,
    },

    /// The server asked for authentication with protocols this client does
    /// not implement (it implements `host`, `unix`, `sss`, `ztn` and, with
    /// its `gsi` feature, `gsi`), has no credential for (no `sss` keytab)
    /// or may not use (`XrdSecPROTOCOL`).
    #[error(
        "{endpoint} requires authentication by {offered:?}; this client supports host, unix, sss (with a keytab), ztn (with a token, over TLS) and gsi (with X509 credentials)"
    )]
    AuthUnsupported {
        /// `host:port` of the server.
        endpoint: String,
        /// The protocols the server offered (`gsi`, `krb5`, ...).
        offered: Vec<String>,
    },

    /// TLS could not be brought up, or was refused, on a connection: the
    /// cause says which ([`TlsCause`]). Never followed by a plain-text
    /// fallback.
    #[error("TLS with {endpoint}: {cause}")]
    Tls {
        /// `host:port` of the server.
        endpoint: String,
        /// Why.
        cause: TlsCause,
    },

    /// A credential for a protocol the server offered could not be made,
    /// and no later protocol could either: the `sss` keytab is unreadable,
    /// readable by group or others, malformed, or holds no unexpired key;
    /// no X509 proxy or certificate, or an expired one, for `gsi`.
    #[error("no {protocol} credential for {endpoint}: {reason}")]
    Credential {
        /// `host:port` of the server.
        endpoint: String,
        /// The protocol (`sss`, `gsi`).
        protocol: String,
        /// Why, naming the file.
        reason: String,
    },

    /// pgread pages still failed their crc32c after the retry bound.
    #[error("pages at offsets {offsets:?} failed crc32c after {attempts} retries")]
    PageChecksum {
        /// File offsets of the bad pages, in bytes.
        offsets: Vec<u64>,
        /// Retries made for each.
        attempts: u32,
    },

    /// A URL that does not parse.
    #[error("invalid URL: {0}")]
    Url(#[source] DecodeError),

    /// A redirect to a URL this client cannot follow (another scheme).
    #[error("redirected to {0}, which is not a root:// URL")]
    ForeignRedirect(String),

    /// Every one of the channel's 65,535 stream ids is in use.
    #[error("no free stream id on the channel to {endpoint}")]
    StreamIdsExhausted {
        /// `host:port` of the server.
        endpoint: String,
    },

    /// The file was closed (or never opened).
    #[error("file is not open")]
    NotOpen,

    /// An argument the protocol cannot carry (a read of more than 2 GiB, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// The server's `kXR_error` code, if the server refused the request.
    pub fn server_code(&self) -> Option<ErrorCode> {
        match self {
            Error::Server { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The closest [`io::ErrorKind`]: server codes through their errno
    /// (XrdCl's `toErrno`, PROTOCOL.md §8.2), the rest by their nature.
    pub fn kind(&self) -> io::ErrorKind {
        use io::ErrorKind as K;
        match self {
            Error::Server { code, .. } => match code.to_errno() {
                2 => K::NotFound,
                13 => K::PermissionDenied,
                17 => K::AlreadyExists,
                22 | 36 => K::InvalidInput,
                12 => K::OutOfMemory,
                95 => K::Unsupported,
                110 | 62 => K::TimedOut,
                21 => K::IsADirectory,
                28 | 122 => K::StorageFull,
                30 => K::ReadOnlyFilesystem,
                35 => K::ResourceBusy,
                113 => K::HostUnreachable,
                _ => K::Other,
            },
            Error::Io { source, .. } => source.kind(),
            Error::Protocol { .. } | Error::UnexpectedResponse { .. } => K::InvalidData,
            Error::ConnectionLost { .. } => K::ConnectionAborted,
            Error::Timeout { .. } => K::TimedOut,
            Error::PageChecksum { .. } => K::InvalidData,
            Error::Url(_) | Error::InvalidArgument(_) => K::InvalidInput,
            Error::AuthUnsupported { .. } | Error::Credential { .. } => K::PermissionDenied,
            Error::Tls { cause, .. } => cause.kind(),
            Error::NotOpen => K::NotConnected,
            _ => K::Other,
        }
    }

    /// `Ok` when no page is left bad, else [`Error::PageChecksum`] naming
    /// the pages at `offsets` still bad after `attempts` retries each.
    pub(crate) fn pages_left_bad(offsets: Vec<u64>, attempts: u32) -> Result<(), Self> {
        match offsets.is_empty() {
            true => Ok(()),
            false => Err(Error::PageChecksum { offsets, attempts }),
        }
    }

    pub(crate) fn unexpected(request: xroot_proto::RequestId, detail: impl Into<String>) -> Self {
        Error::UnexpectedResponse {
            request: request.protocol_name().unwrap_or("request"),
            detail: detail.into(),
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}

/// Why TLS failed on a connection ([`Error::Tls`]). Wire facts from
/// XProtocol.hh and XrdClXRootDTransport.cc (SECURITY.md).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsCause {
    /// A `roots://` URL, but the client has no TLS configuration (no CA
    /// directory at `X509_CERT_DIR` or `/etc/grid-security/certificates`,
    /// none set in [`Config::tls`](crate::Config::tls)). Nothing was sent.
    #[error("no TLS configuration (no CA directory; set X509_CERT_DIR or Config::tls)")]
    NotConfigured,

    /// The server requires TLS (the flag named, in its `kXR_protocol`
    /// answer) and this client has no TLS configuration, so it did not offer
    /// `kXR_ableTLS`: it stops rather than log in in plain text.
    #[error("server requires TLS ({asked}) but this client has no TLS configuration")]
    Required {
        /// `kXR_gotoTLS`, `kXR_tlsLogin`, `kXR_tlsSess` or `kXR_tlsData`.
        asked: &'static str,
    },

    /// A `roots://` connection to a server that does not run TLS (no
    /// `kXR_haveTLS`, a protocol older than 0x500, or no switch after
    /// `kXR_wantTLS`); the stock client says "Server was not configured to
    /// support encryption".
    #[error("server without TLS: {detail}")]
    ServerWithoutTls {
        /// What the server's answer lacked.
        detail: &'static str,
    },

    /// The TLS handshake failed: untrusted chain, name mismatch, expired
    /// certificate, ...
    #[error("handshake failed: {0}")]
    Handshake(#[from] HandshakeError),

    /// The server sent bytes past the frame after which the connection
    /// switches to TLS, in plain text: a protocol violation (they could be
    /// an attacker's, injected before the encryption starts).
    #[error("{bytes} plain-text bytes received where TLS should start")]
    PlaintextLeftOver {
        /// How many bytes were waiting.
        bytes: usize,
    },
}

impl TlsCause {
    /// The closest [`io::ErrorKind`]: `ConnectionRefused` for a server
    /// without TLS (the stock client's `ECONNREFUSED`), `Unsupported` for a
    /// client without TLS, `PermissionDenied` for a certificate that is
    /// not trusted, not for this host, out of its validity or refused,
    /// `InvalidData` for a handshake or stream that broke.
    pub fn kind(&self) -> io::ErrorKind {
        use io::ErrorKind as K;
        match self {
            TlsCause::NotConfigured | TlsCause::Required { .. } => K::Unsupported,
            TlsCause::ServerWithoutTls { .. } => K::ConnectionRefused,
            TlsCause::Handshake(HandshakeError::Other(_)) => K::InvalidData,
            TlsCause::Handshake(_) => K::PermissionDenied,
            TlsCause::PlaintextLeftOver { .. } => K::InvalidData,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
