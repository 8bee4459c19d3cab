//! [`OriginError`], why an origin call failed, and what the cache's own
//! clients are told then (`From<OriginError> for FsError`).

use std::io;
use std::time::{Duration, Instant};

use xroot_client::Url;
use xroot_proto::ErrorCode;
use xroot_server::observe::Throttle;
use xroot_server::FsError;

use crate::store::Validators;

/// Why an origin call failed.
#[derive(Debug, thiserror::Error)]
pub enum OriginError {
    /// A call to the XRootD origin `origin` failed: its `kXR_error`
    /// ([`xroot_client::Error::Server`]), a lost connection, a timeout, ...
    #[error("origin {origin}: {source}")]
    Client {
        /// The origin, `host:port`.
        origin: String,
        /// What [`xroot_client`] returned.
        #[source]
        source: xroot_client::Error,
    },
    /// Local I/O failed.
    #[error("origin I/O: {0}")]
    Io(#[from] io::Error),
    /// The local origin's file system refused the call (its code and
    /// message, as a server would send them).
    #[error("origin: {0}")]
    Fs(#[from] FsError),
    /// The origin answered fewer (or more) bytes than a run needs: the file
    /// changed size under the cache, or the origin misbehaved.
    #[error("origin answered {got} of the {expected} bytes at offset {offset}")]
    Short {
        /// File offset of the run, bytes.
        offset: u64,
        /// The run's length, bytes.
        expected: usize,
        /// Bytes answered.
        got: usize,
    },
    /// A file opened on trust (from the cache alone, see
    /// [`CacheConfig::trust_window`](crate::CacheConfig::trust_window))
    /// changed at the origin since it was cached: its blocks are not mixed
    /// with the new file's. The cache entry is reset; a new open reads the
    /// new file.
    #[error("{path} changed at the origin since it was cached ({cached:?} then, {now:?} now)")]
    Changed {
        /// The file's path.
        path: String,
        /// The validators of the cached copy.
        cached: Validators,
        /// The origin's now.
        now: Validators,
    },
}

/// How often the origin's refusal of the cache's own credential is logged
/// (a warning; the others are counted and the next line says how many).
static CREDENTIAL_REFUSALS: Throttle = Throttle::new(1, Duration::from_secs(60));

impl OriginError {
    /// `source`, returned by a call to the origin of `url` (named by its
    /// `host:port`). When it is the origin refusing the cache's own
    /// credential ([`OriginError::credential_refused`]), that is logged as
    /// a warning, at most once a minute.
    pub fn client(url: &Url, source: xroot_client::Error) -> OriginError {
        let e = OriginError::Client {
            origin: url.host_port(),
            source,
        };
        if let Some(reason) = e.credential_refused() {
            if let Some(skipped) = CREDENTIAL_REFUSALS.admit(Instant::now()) {
                tracing::warn!(
                    origin = %url.host_port(),
                    skipped,
                    "origin refused the cache's credential: {reason}"
                );
            }
        }
        e
    }

    /// Why the origin refused the cache's own credential, if that is what
    /// failed: `kXR_AuthFailed` (its token expired, its key unknown), no
    /// protocol the cache can use, or no usable credential of the cache's
    /// (a token file missing or readable by others). `None` for any other
    /// failure.
    pub fn credential_refused(&self) -> Option<String> {
        use xroot_client::Error as E;
        let OriginError::Client { source, .. } = self else {
            return None;
        };
        match source {
            E::Server { code, message } if *code == ErrorCode::AUTH_FAILED => Some(message.clone()),
            E::AuthUnsupported { .. } | E::Credential { .. } => Some(source.to_string()),
            _ => None,
        }
    }
}

/// What the cache tells its own client when the origin failed: the
/// origin's `kXR_error` code and message pass through unchanged (a missing
/// file stays `kXR_NotFound`), as does a local file system's [`FsError`],
/// except a refusal of the cache's own credential
/// ([`OriginError::credential_refused`]), which the client, already
/// authenticated to the cache, would take for a verdict on its own: that
/// becomes `kXR_ServerError` "origin `HOST:PORT` refused the cache's
/// credential: `<reason>`". A
/// connection that failed, timed out or sent bad data (a page that never
/// matched its crc32c, a short run) is `kXR_IOError`, any other failure
/// `kXR_ServerError`, with a message naming the origin.
impl From<&OriginError> for FsError {
    fn from(e: &OriginError) -> FsError {
        use xroot_client::Error as E;
        if let (Some(reason), OriginError::Client { origin, .. }) = (e.credential_refused(), e) {
            return FsError::new(
                ErrorCode::SERVER_ERROR,
                format!("origin {origin} refused the cache's credential: {reason}"),
            );
        }
        match e {
            OriginError::Client {
                source: E::Server { code, message },
                ..
            } => FsError::new(*code, message.clone()),
            OriginError::Fs(fs) => fs.clone(),
            OriginError::Io(io) => FsError::from_io(io),
            OriginError::Client { source, .. } => {
                let code = match source {
                    E::Io { .. }
                    | E::ConnectionLost { .. }
                    | E::Timeout { .. }
                    | E::Protocol { .. }
                    | E::UnexpectedResponse { .. }
                    | E::PageChecksum { .. } => ErrorCode::IO_ERROR,
                    _ => ErrorCode::SERVER_ERROR,
                };
                FsError::new(code, e.to_string())
            }
            OriginError::Short { .. } | OriginError::Changed { .. } => {
                FsError::new(ErrorCode::IO_ERROR, e.to_string())
            }
        }
    }
}

/// As `From<&OriginError>`.
impl From<OriginError> for FsError {
    fn from(e: OriginError) -> FsError {
        FsError::from(&e)
    }
}
