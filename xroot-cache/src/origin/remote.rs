//! An XRootD server as the origin: [`RemoteOrigin`] for the namespace and
//! `impl Origin for xroot_client::File` for the reads.

use bytes::Bytes;
use xroot_client::{Client, File, FileSystem, OpenFlags, Url};
use xroot_proto::response::{ChecksumAnswer, StatInfo};
use xroot_server::DirEntry;

use super::api::{Fetched, Origin, OriginFs};
use super::error::OriginError;

/// Reads from an XRootD server.
impl Origin for File {
    /// The stat the server returned at open (`kXR_retstat`), so no request;
    /// a `kXR_stat` when it sent none. Errors: the server's and the
    /// connection's.
    async fn stat(&self) -> Result<StatInfo, OriginError> {
        match self.cached_stat() {
            Some(st) => Ok(st),
            None => File::stat(self)
                .await
                .map_err(|e| OriginError::client(self.url(), e)),
        }
    }

    /// One run → [`File::pgread`] (checksummed when the server serves
    /// pgread); several → [`File::pgreadv`] when the server advertises the
    /// `kXR_pgreadv` extension (checksummed), else [`File::readv`] (not
    /// checksummed). `requests` counts the requests the client planned
    /// ([`xroot_client::ReadSupport`]): 1 for runs within the protocol
    /// limits (a pgread ≤ 8 MiB; ≤ 1024 runs and 8 MiB for pgreadv; ≤ 1024
    /// runs of ≤ 2,097,136 bytes for readv), not counting single-page
    /// retries after a crc32c mismatch.
    async fn read_runs(&self, runs: &[(u64, usize)]) -> Result<Fetched, OriginError> {
        if runs.is_empty() {
            return Ok(Fetched::nothing());
        }
        let err = |e| OriginError::client(self.url(), e);
        if let Some((offset, len)) = contiguous(runs) {
            // one range (the block runs of a long read, cut at io_size):
            // one pgread, as a client reading it directly would send, not
            // a vector read the origin answers element after element. It
            // needs nothing of kXR_Qconfig, so the query (asked once per
            // connection, for the counts) goes out with it, not a round
            // trip before the file's first read.
            let (data, support) = tokio::join!(self.pgread(offset, len), self.read_support());
            let (data, support) = (data.map_err(err)?, support.map_err(err)?);
            return Fetched::checked(
                runs,
                cut_runs(data, runs),
                support.pgread_requests(offset, len),
                support.pgread(),
            );
        }
        let support = self.read_support().await.map_err(err)?;
        let (data, requests, checksummed) = if support.pgreadv() {
            (
                self.pgreadv(runs).await.map_err(err)?,
                support.pgreadv_requests(runs),
                true,
            )
        } else {
            (
                self.readv(runs).await.map_err(err)?,
                support.readv_requests(runs),
                false,
            )
        };
        Fetched::checked(runs, data, requests, checksummed)
    }

    async fn close(&self) -> Result<(), OriginError> {
        File::close(self)
            .await
            .map_err(|e| OriginError::client(self.url(), e))
    }
}

/// An XRootD server (a data server or a redirector) as the origin: files
/// opened read-only through a [`Client`], namespace calls through its
/// [`FileSystem`]. Paths are taken below the base URL's path. Cheap to
/// clone.
///
/// ```no_run
/// # async fn demo() -> Result<(), xroot_cache::origin::OriginError> {
/// use xroot_cache::origin::{Origin, OriginFs, RemoteOrigin};
/// let origin = RemoteOrigin::new(xroot_client::Client::new(), "root://origin.example:1094")?;
/// let file = origin.open("/store/f.root").await?;
/// let fetched = file.read_runs(&[(0, 4096), (65536, 8192)]).await?;
/// assert_eq!(fetched.requests, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RemoteOrigin {
    client: Client,
    base: Url,
    fs: FileSystem,
}

impl RemoteOrigin {
    /// The origin at `base` (`root://host[:port]`, optionally with a path
    /// prefix: `root://host//prefix` serves `/a` from `/prefix/a`), reached
    /// with `client` (whose settings and spreading policy apply).
    ///
    /// Errors: [`OriginError::Client`] with [`xroot_client::Error::Url`] for
    /// a URL that does not parse.
    pub fn new(client: Client, base: &str) -> Result<RemoteOrigin, OriginError> {
        let url_error = |e| OriginError::Client {
            origin: base.to_string(),
            source: e,
        };
        let base = Url::parse(base).map_err(|e| url_error(xroot_client::Error::Url(e)))?;
        let fs = client.fs(&base.to_string()).map_err(url_error)?;
        Ok(RemoteOrigin { client, base, fs })
    }

    /// The base URL.
    pub fn base(&self) -> &Url {
        &self.base
    }

    /// The client every call goes through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// `path` on the origin: below the base URL's path.
    fn full_path(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.base.path.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }

    /// `source`, from a call to this origin.
    fn error(&self, source: xroot_client::Error) -> OriginError {
        OriginError::client(&self.base, source)
    }
}

impl OriginFs for RemoteOrigin {
    type File = File;

    /// Opens the file read-only (`kXR_open_read`).
    async fn open(&self, path: &str) -> Result<File, OriginError> {
        let mut url = self.base.clone();
        url.path = self.full_path(path);
        self.client
            .open(&url.to_string(), OpenFlags::READ)
            .await
            .map_err(|e| self.error(e))
    }

    async fn stat(&self, path: &str) -> Result<StatInfo, OriginError> {
        let path = self.full_path(path);
        self.fs.stat(&path).await.map_err(|e| self.error(e))
    }

    /// Lists the directory where it is: on a data server, there; through
    /// a manager (whose own namespace is empty), on every data server that
    /// holds the directory, merged ([`FileSystem::dirlist_located`]).
    async fn dirlist(&self, path: &str, with_stat: bool) -> Result<Vec<DirEntry>, OriginError> {
        let path = self.full_path(path);
        let listing = self
            .fs
            .dirlist_located(&path, with_stat)
            .await
            .map_err(|e| self.error(e))?;
        if listing.partial {
            tracing::debug!(origin = %self.base, path, "part of the cluster did not list");
        }
        Ok(listing
            .entries
            .into_iter()
            .map(|e| DirEntry {
                name: e.name,
                stat: e.stat,
            })
            .collect())
    }

    async fn checksum(&self, path: &str, alg: Option<&str>) -> Result<ChecksumAnswer, OriginError> {
        let path = self.full_path(path);
        let (alg, value) = self
            .fs
            .query_checksum(&path, alg)
            .await
            .map_err(|e| self.error(e))?;
        Ok(ChecksumAnswer {
            alg: Bytes::from(alg),
            value: Bytes::from(value),
        })
    }
}

/// The range `runs` cover when each starts where the one before ends:
/// `(offset, len)`; `None` otherwise (or for a length past `usize`).
fn contiguous(runs: &[(u64, usize)]) -> Option<(u64, usize)> {
    let (&(offset, first), rest) = runs.split_first()?;
    let mut end = offset.checked_add(first as u64)?;
    for &(o, len) in rest {
        if o != end {
            return None;
        }
        end = end.checked_add(len as u64)?;
    }
    Some((offset, usize::try_from(end - offset).ok()?))
}

/// `data`, read for the contiguous `runs`, cut into one slice per run (no
/// copy); a short answer gives short or empty slices at the end, which
/// [`Fetched::check`] refuses.
fn cut_runs(data: Bytes, runs: &[(u64, usize)]) -> Vec<Bytes> {
    let mut at = 0;
    runs.iter()
        .map(|&(_, len)| {
            let from = at.min(data.len());
            at = at.saturating_add(len);
            data.slice(from..at.min(data.len()))
        })
        .collect()
}
