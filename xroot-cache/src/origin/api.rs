//! What an origin is to the cache: an open file ([`Origin`]) that fetches
//! block runs ([`Fetched`]), and a namespace ([`OriginFs`]) that opens them.

use std::future::Future;

use bytes::Bytes;
use xroot_proto::response::{ChecksumAnswer, StatInfo};
use xroot_server::DirEntry;

use super::error::OriginError;

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
    pub(super) fn nothing() -> Fetched {
        Fetched {
            data: Vec::new(),
            requests: 0,
            checksummed: false,
        }
    }

    /// The answer to `runs` once [`Fetched::check`]ed.
    pub(super) fn checked(
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
    /// copies, [`Validators`](crate::store::Validators)).
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
