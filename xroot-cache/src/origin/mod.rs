//! The origin below the cache: where missing block runs come from and where
//! the namespace calls the cache does not answer itself go.
//!
//! - [`Origin`]: an open origin file. [`Origin::read_runs`] fetches the runs
//!   of one plan as **one** origin request when the protocol allows, and
//!   says how many wire requests it took and whether the data was checked
//!   by page crc32c on its way ([`Fetched`]).
//! - [`OriginFs`]: the origin's namespace (open, stat, dirlist, checksum).
//! - [`RemoteOrigin`] (and `impl Origin for xroot_client::File`): an XRootD
//!   server reached with [`xroot_client`].
//! - [`LocalOrigin`] / [`LocalOriginFile`]: a local directory, for tests.
//! - `From<OriginError> for FsError`: what the cache's own clients are told
//!   when the origin fails.

mod local;
mod remote;

use std::future::Future;
use std::io;

use bytes::Bytes;
use xroot_client::Url;
use xroot_proto::response::{ChecksumAnswer, StatInfo};
use xroot_proto::ErrorCode;
use xroot_server::{DirEntry, FsError};

use crate::store::Validators;

pub use local::{LocalOrigin, LocalOriginFile};
pub use remote::RemoteOrigin;

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

impl OriginError {
    /// `source`, returned by a call to the origin of `url` (named by its
    /// `host:port`).
    pub fn client(url: &Url, source: xroot_client::Error) -> OriginError {
        OriginError::Client {
            origin: url.host_port(),
            source,
        }
    }
}

/// What the cache tells its own client when the origin failed: the
/// origin's `kXR_error` code and message pass through unchanged (a missing
/// file stays `kXR_NotFound`), as does a local file system's [`FsError`],
/// except `kXR_AuthFailed`: that one is the cache's own login to the origin
/// failing (its token expired, its key unknown), which the client, already
/// authenticated to the cache, would take for a verdict on its own
/// credentials — it becomes `kXR_ServerError` naming the origin. A
/// connection that failed, timed out or sent bad data (a page that never
/// matched its crc32c, a short run) is `kXR_IOError`, any other failure
/// `kXR_ServerError`, with a message naming the origin.
impl From<&OriginError> for FsError {
    fn from(e: &OriginError) -> FsError {
        use xroot_client::Error as E;
        match e {
            OriginError::Client {
                source: E::Server { code, .. },
                ..
            } if *code == ErrorCode::AUTH_FAILED => {
                FsError::new(ErrorCode::SERVER_ERROR, e.to_string())
            }
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

/// What one [`Origin::read_runs`] fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The data of each run, in the order asked, each exactly the run's
    /// length.
    pub data: Vec<Bytes>,
    /// Requests it took to the origin (wire requests for a remote origin,
    /// counted as the client planned them; one per call for a local one).
    pub requests: u64,
    /// Whether every byte was checked against a page crc32c sent by the
    /// origin (pgread, pgreadv); `false` for readv and local reads.
    pub checksummed: bool,
}

impl Fetched {
    /// Nothing fetched: no runs, no request.
    fn nothing() -> Fetched {
        Fetched {
            data: Vec::new(),
            requests: 0,
            checksummed: false,
        }
    }

    /// The answer to `runs` once [`Fetched::check`]ed.
    fn checked(
        runs: &[(u64, usize)],
        data: Vec<Bytes>,
        requests: usize,
        checksummed: bool,
    ) -> Result<Fetched, OriginError> {
        let fetched = Fetched {
            data,
            requests: requests as u64,
            checksummed,
        };
        fetched.check(runs)?;
        Ok(fetched)
    }

    /// Checks that there is one piece of data per run of `runs`, each
    /// exactly the run's length (a cache checks what any [`Origin`]
    /// answers before storing it). Errors: [`OriginError::Short`] for the
    /// first run whose data is not (a missing run counts as 0 bytes, an
    /// extra piece as a run of 0 bytes).
    pub fn check(&self, runs: &[(u64, usize)]) -> Result<(), OriginError> {
        for (i, &(offset, expected)) in runs.iter().enumerate() {
            let got = self.data.get(i).map_or(0, Bytes::len);
            if got != expected {
                return Err(OriginError::Short {
                    offset,
                    expected,
                    got,
                });
            }
        }
        match self.data.get(runs.len()) {
            Some(extra) => Err(OriginError::Short {
                offset: 0,
                expected: 0,
                got: extra.len(),
            }),
            None => Ok(()),
        }
    }
}

/// An open origin file.
pub trait Origin: Send + Sync + 'static {
    /// The file's stat (its size and modification time validate cached
    /// copies, [`Validators`]).
    fn stat(&self) -> impl Future<Output = Result<StatInfo, OriginError>> + Send;

    /// Reads every run `(offset, len)` (bytes) whole — `len` is exact: the
    /// caller clipped it at end of file — as ONE origin request when the
    /// protocol allows: one run → `kXR_pgread` (network crc32c); several →
    /// `kXR_pgreadv` when the origin advertises it, else `kXR_readv` (no
    /// network checksum). No runs → no request.
    ///
    /// Errors: [`OriginError::Short`] when a run's data is not exactly its
    /// length; the origin's errors (a run past end of file fails the call).
    fn read_runs(
        &self,
        runs: &[(u64, usize)],
    ) -> impl Future<Output = Result<Fetched, OriginError>> + Send;

    /// Closes the file.
    fn close(&self) -> impl Future<Output = Result<(), OriginError>> + Send;
}

/// The origin's namespace: opens files and answers the namespace calls a
/// cache forwards. Paths are absolute (`/a/b.root`), without CGI.
pub trait OriginFs: Send + Sync + 'static {
    /// An open file.
    type File: Origin;

    /// Opens `path` for reading. Errors: the origin's (`kXR_NotFound`, ...).
    fn open(&self, path: &str) -> impl Future<Output = Result<Self::File, OriginError>> + Send;

    /// The stat of `path`.
    fn stat(&self, path: &str) -> impl Future<Output = Result<StatInfo, OriginError>> + Send;

    /// The entries of directory `path`, with their stat when `with_stat`.
    fn dirlist(
        &self,
        path: &str,
        with_stat: bool,
    ) -> impl Future<Output = Result<Vec<DirEntry>, OriginError>> + Send;

    /// The checksum of `path` by algorithm `alg` (`adler32`, `crc32c`, ...),
    /// or the origin's default when `None`.
    fn checksum(
        &self,
        path: &str,
        alg: Option<&str>,
    ) -> impl Future<Output = Result<ChecksumAnswer, OriginError>> + Send;
}

#[cfg(test)]
mod tests;
