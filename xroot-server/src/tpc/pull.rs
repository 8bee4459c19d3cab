//! The contract of a destination's pull: what the server asks of a
//! [`Puller`] and where the bytes go ([`PullSink`]).

use bytes::Bytes;
use futures::future::BoxFuture;
use xroot_proto::ErrorCode;

use crate::fs::FsResult;

/// One pull, as the server orders it from the client's open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// The source: `root://[user@]host:port//path?tpc.key=K&tpc.org=O`
    /// followed by the client's `tpc.scgi` (its token), the URL the stock
    /// destination's copy program opens.
    pub url: String,
    /// Streams to read with at once (`tpc.str`, 1..=15).
    pub streams: u8,
    /// Bytes per read; `streams × chunk` is the most the pull may hold.
    pub chunk: usize,
    /// The size the client announced (`oss.asize`), bytes, if any.
    pub size: Option<u64>,
}

/// Where a pull writes: the destination's open file.
pub trait PullSink: Send + Sync {
    /// Writes `data` at byte `offset` of the destination file. Errors: the
    /// backend's ([`crate::FsError`]).
    fn write_at(&self, offset: u64, data: Bytes) -> BoxFuture<'_, FsResult<()>>;
}

/// Reads a file from a TPC source into a [`PullSink`]. The server calls it
/// for each pull ([`crate::tpc`]); `xroot-tools` implements it over
/// `xroot-client`.
pub trait Puller: Send + Sync + 'static {
    /// Opens `request.url`, reads the whole file with up to
    /// `request.streams` reads of `request.chunk` bytes in flight, writes
    /// each at its offset into `sink`; the bytes copied. Errors: the
    /// source's refusal or failure, or the sink's, as a [`PullError`].
    fn pull<'a>(
        &'a self,
        request: &'a PullRequest,
        sink: &'a dyn PullSink,
    ) -> BoxFuture<'a, Result<u64, PullError>>;

    /// The source's checksum of `request.url`'s file by algorithm `kind`
    /// (`kXR_Qcksum`), its value in lower-case hex. Errors: as
    /// [`Puller::pull`].
    fn checksum<'a>(
        &'a self,
        request: &'a PullRequest,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<String, PullError>>;
}

/// Why a pull failed: the `kXR_error` the client's `kXR_sync` gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PullError {
    /// The error number (the source's, when it refused).
    pub code: ErrorCode,
    /// What failed, for the client.
    pub message: String,
}

impl PullError {
    /// A failure with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> PullError {
        PullError {
            code,
            message: message.into(),
        }
    }
}
