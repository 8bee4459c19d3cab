//! The traits a backend implements: [`FileSystem`] for the namespace and
//! [`File`] for an open file. The server turns every request into one call
//! and every answer (or [`FsError`]) into the reference's response.
//!
//! Every method is async and returns a `Send` future. Defaults: `readv`
//! and `pgread` are built from `read_at`; the namespace calls a backend does
//! not support answer `kXR_Unsupported`. Any call may answer with a
//! redirect ([`FsError::Redirect`]) or a wait ([`FsError::Wait`]); a call
//! that takes longer than the server's `waitresp_after` is answered with
//! `kXR_waitresp` and later with the result in a `kXR_attn` asynresp,
//! without the backend doing anything.

use crate::auth::Caller;
use std::future::Future;

use bytes::Bytes;
use xroot_proto::response::{ChecksumAnswer, SpaceInfo, StatInfo, StatVfs};
use xroot_proto::ErrorCode;

/// How a backend call failed, or where the client should go instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// A `kXR_error` with this code and message (PROTOCOL.md §8.2).
    #[error("{code:?}: {message}")]
    Error {
        /// The error number sent.
        code: ErrorCode,
        /// The message sent (a NUL is added on the wire).
        message: String,
    },
    /// A `kXR_redirect` to `host:port`, with optional opaque CGI for the
    /// client to add to its request path.
    #[error("redirect to {host}:{port}")]
    Redirect {
        /// Target host.
        host: String,
        /// Target port.
        port: u16,
        /// CGI appended to the request path, without the `?`.
        opaque: Option<String>,
    },
    /// A `kXR_wait`: the client resends the same request after `seconds`.
    #[error("wait {seconds} s: {message}")]
    Wait {
        /// Seconds to wait.
        seconds: u32,
        /// Why.
        message: String,
    },
}

impl FsError {
    /// A `kXR_error` with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> FsError {
        FsError::Error {
            code,
            message: message.into(),
        }
    }

    /// `kXR_Unsupported` naming what is not supported.
    pub fn unsupported(what: &str) -> FsError {
        FsError::new(ErrorCode::UNSUPPORTED, format!("{what} is not supported"))
    }

    /// The `kXR_error` the reference sends for an OS error (`mapError`,
    /// PROTOCOL.md §8.2), with the OS message.
    pub fn from_io(e: &std::io::Error) -> FsError {
        let code = match e.raw_os_error() {
            Some(errno) => ErrorCode::from_errno(errno),
            None => match e.kind() {
                std::io::ErrorKind::NotFound => ErrorCode::NOT_FOUND,
                std::io::ErrorKind::PermissionDenied => ErrorCode::NOT_AUTHORIZED,
                std::io::ErrorKind::AlreadyExists => ErrorCode::ITEM_EXISTS,
                std::io::ErrorKind::InvalidInput => ErrorCode::ARG_INVALID,
                _ => ErrorCode::FS_ERROR,
            },
        };
        FsError::new(code, e.to_string())
    }
}

impl From<std::io::Error> for FsError {
    fn from(e: std::io::Error) -> FsError {
        FsError::from_io(&e)
    }
}

/// Shorthand for backend results.
pub type FsResult<T> = Result<T, FsError>;

/// What a client asked of an open (`kXR_open` options that apply to a
/// POSIX backend, PROTOCOL.md §6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenMode {
    /// Open for writing (`kXR_open_updt` or `kXR_open_wrto`).
    pub write: bool,
    /// Create; fail if it exists (`kXR_new`).
    pub create_new: bool,
    /// Create or truncate (`kXR_delete`).
    pub truncate: bool,
    /// Create missing parent directories (`kXR_mkpath`, or `kXR_async` with
    /// new/delete, the reference's compatibility quirk).
    pub make_path: bool,
    /// Append (`kXR_open_apnd`).
    pub append: bool,
    /// Permission bits for a created file (POSIX `0o777`).
    pub mode: u32,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name (no slashes).
    pub name: String,
    /// Its stat, when the listing was asked with `kXR_dstat`.
    pub stat: Option<StatInfo>,
}

/// Whether a file's vector reads may overlap (the backend decides: a cache
/// in front of a WAN origin says parallel, a spinning disk says serial).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadvConcurrency {
    /// One vector read at a time on this file.
    Serial,
    /// Up to this many at once on this file (at least 1).
    Parallel(usize),
}

/// Bytes of an open OS file, for the server to send with `sendfile(2)`
/// straight from the page cache (zero-copy: no buffer holds them). `len`
/// is what the file held at `offset` when the region was made.
#[derive(Debug, Clone)]
pub struct FileRegion {
    /// The file, kept open until the region is sent.
    pub file: std::sync::Arc<std::fs::File>,
    /// Where the bytes start, in bytes from the start of the file.
    pub offset: u64,
    /// How many bytes.
    pub len: usize,
}

/// An open file.
pub trait File: Send + Sync + 'static {
    /// Up to `len` bytes at `offset`; fewer only at end of file.
    fn read_at(&self, offset: u64, len: usize) -> impl Future<Output = FsResult<Bytes>> + Send;

    /// Up to `len` bytes at `offset` as a [`FileRegion`] the server sends
    /// with `sendfile(2)` instead of calling `read_at`, when the backend's
    /// data is an OS file and is at hand; fewer bytes only at end of file
    /// (none past it). Called on the server's tasks: it must not block, so
    /// `Ok(None)` where the data would have to wait for a disk or the
    /// backend cannot say; the server then calls `read_at`. Used only for
    /// `kXR_read` answered on a plain (not TLS) link, of a handle opened for
    /// reading only: the kernel sends the bytes as they are when they
    /// leave, which may be after `region` returned. Errors: as `read_at`.
    /// Default: `Ok(None)`.
    fn region(&self, offset: u64, len: usize) -> FsResult<Option<FileRegion>> {
        let _ = (offset, len);
        Ok(None)
    }

    /// The most bytes the server reads of this file at a time (one
    /// `kXR_oksofar` frame each) to answer a `kXR_read` on a plain (not
    /// TLS) link, where the backend knows a better size than
    /// [`crate::Config::read_chunk`]; the smaller of the two counts.
    /// Default: `None` (the server's).
    fn read_chunk(&self) -> Option<usize> {
        None
    }

    /// Writes `data` at `offset`.
    fn write_at(&self, offset: u64, data: Bytes) -> impl Future<Output = FsResult<()>> + Send;

    /// The file's stat.
    fn stat(&self) -> impl Future<Output = FsResult<StatInfo>> + Send;

    /// Reads each `(offset, len)` extent whole. An extent that reads short
    /// (past end of file) fails the whole call, as the reference does
    /// (`kXR_FSError`, PROTOCOL.md Appendix item 3). Default: `read_at` per
    /// extent, in order.
    fn readv(
        &self,
        extents: Vec<(u64, usize)>,
    ) -> impl Future<Output = FsResult<Vec<Bytes>>> + Send {
        async move {
            let mut out = Vec::with_capacity(extents.len());
            for (offset, len) in extents {
                let data = self.read_at(offset, len).await?;
                if data.len() != len {
                    return Err(FsError::new(ErrorCode::FS_ERROR, "readv past EOF"));
                }
                out.push(data);
            }
            Ok(out)
        }
    }

    /// Data for a `kXR_pgread` of `len` bytes at `offset`; the server
    /// computes the page crc32c. A backend that stores page checksums can
    /// override this to verify them. Default: `read_at`.
    fn pgread(&self, offset: u64, len: usize) -> impl Future<Output = FsResult<Bytes>> + Send {
        self.read_at(offset, len)
    }

    /// How many vector reads of this file may run at once.
    fn readv_concurrency(&self) -> ReadvConcurrency {
        ReadvConcurrency::Parallel(8)
    }

    /// Flushes to stable storage. Default: nothing to do.
    fn sync(&self) -> impl Future<Output = FsResult<()>> + Send {
        async { Ok(()) }
    }

    /// Sets the size to `size` bytes. Default: `kXR_Unsupported`.
    fn truncate(&self, size: u64) -> impl Future<Output = FsResult<()>> + Send {
        let _ = size;
        async { Err(FsError::unsupported("truncate")) }
    }

    /// Called once when the client closes the file. Default: nothing.
    fn close(&self) -> impl Future<Output = FsResult<()>> + Send {
        async { Ok(()) }
    }
}

/// A namespace the server exports. Paths are absolute (`/a/b`), without CGI;
/// the CGI of the request is passed separately where it matters. Every call
/// names its [`Caller`]: who the session authenticated as (see
/// [`crate::Authenticator`]), so a backend can authorize or map users;
/// calls made with an open [`File`] were authorized at its open.
pub trait FileSystem: Send + Sync + 'static {
    /// The open file type.
    type File: File;

    /// Whether this backend sends every client elsewhere rather than
    /// serving files (a redirector, [`crate::cluster::Redirector`]): the
    /// handshake and `kXR_protocol` answers then say `kXR_LBalServer` and
    /// `kXR_isManager`, as the stock manager's do. Default `false`.
    const REDIRECTOR: bool = false;

    /// Opens `path`.
    fn open(
        &self,
        caller: &Caller,
        path: &str,
        mode: OpenMode,
        cgi: &str,
    ) -> impl Future<Output = FsResult<Self::File>> + Send;

    /// The stat of `path`.
    fn stat(&self, caller: &Caller, path: &str) -> impl Future<Output = FsResult<StatInfo>> + Send;

    /// Where `path` is, for `kXR_locate`: the answer's text in the
    /// reference's format (`"Sw[::127.0.0.1]:1094 Sr[::10.0.0.2]:1094"`)
    /// when the backend knows which other servers hold it (a redirector,
    /// [`crate::cluster::Redirector`]); `refresh` asks it not to answer from
    /// a cache. `Ok(None)`, the default: the server answers with its own
    /// address after a [`FileSystem::stat`].
    fn locate(
        &self,
        caller: &Caller,
        path: &str,
        refresh: bool,
    ) -> impl Future<Output = FsResult<Option<Bytes>>> + Send {
        let _ = (caller, path, refresh);
        async { Ok(None) }
    }

    /// File system usage for `path` (`kXR_stat` with `kXR_vfs`).
    fn stat_vfs(
        &self,
        caller: &Caller,
        path: &str,
    ) -> impl Future<Output = FsResult<StatVfs>> + Send {
        let _ = (caller, path);
        async { Err(FsError::unsupported("stat vfs")) }
    }

    /// The entries of directory `path` (not `.` and `..`), with their stat
    /// when `with_stat`.
    fn dirlist(
        &self,
        caller: &Caller,
        path: &str,
        with_stat: bool,
    ) -> impl Future<Output = FsResult<Vec<DirEntry>>> + Send;

    /// Creates directory `path` with `mode`, and its parents when `parents`.
    fn mkdir(
        &self,
        caller: &Caller,
        path: &str,
        mode: u32,
        parents: bool,
    ) -> impl Future<Output = FsResult<()>> + Send {
        let _ = (caller, path, mode, parents);
        async { Err(FsError::unsupported("mkdir")) }
    }

    /// Removes file `path`.
    fn rm(&self, caller: &Caller, path: &str) -> impl Future<Output = FsResult<()>> + Send {
        let _ = (caller, path);
        async { Err(FsError::unsupported("rm")) }
    }

    /// Removes empty directory `path`.
    fn rmdir(&self, caller: &Caller, path: &str) -> impl Future<Output = FsResult<()>> + Send {
        let _ = (caller, path);
        async { Err(FsError::unsupported("rmdir")) }
    }

    /// Renames `from` to `to`.
    fn mv(
        &self,
        caller: &Caller,
        from: &str,
        to: &str,
    ) -> impl Future<Output = FsResult<()>> + Send {
        let _ = (caller, from, to);
        async { Err(FsError::unsupported("mv")) }
    }

    /// Sets the permission bits of `path`.
    fn chmod(
        &self,
        caller: &Caller,
        path: &str,
        mode: u32,
    ) -> impl Future<Output = FsResult<()>> + Send {
        let _ = (caller, path, mode);
        async { Err(FsError::unsupported("chmod")) }
    }

    /// Sets the size of `path` to `size` bytes.
    fn truncate(
        &self,
        caller: &Caller,
        path: &str,
        size: u64,
    ) -> impl Future<Output = FsResult<()>> + Send {
        let _ = (caller, path, size);
        async { Err(FsError::unsupported("truncate")) }
    }

    /// The checksum of `path` with algorithm `alg` (`adler32`, `crc32c`,
    /// `md5`, ...), or the default algorithm when `None`.
    fn checksum(
        &self,
        caller: &Caller,
        path: &str,
        alg: Option<&str>,
    ) -> impl Future<Output = FsResult<ChecksumAnswer>> + Send {
        let _ = (caller, path, alg);
        async { Err(FsError::unsupported("checksum")) }
    }

    /// The checksum algorithms supported, default first (for the `chksum`
    /// config key, e.g. `0:adler32,1:crc32c`).
    fn checksum_algorithms(&self) -> Vec<String> {
        Vec::new()
    }

    /// Space usage of the space holding `path` (`kXR_Qspace`).
    fn space(
        &self,
        caller: &Caller,
        path: &str,
    ) -> impl Future<Output = FsResult<SpaceInfo>> + Send {
        let _ = (caller, path);
        async { Err(FsError::unsupported("space query")) }
    }

    /// The answer to `kXR_query` with `kXR_QStats` (`xrdfs HOST query
    /// stats WHAT`): a report of this backend's activity as text, `what`
    /// being the client's argument (the reference's letters, e.g. `a` for
    /// all). Default: `kXR_Unsupported`, and the server then answers its
    /// own report of links and requests, in the stock server's XML shape.
    #[doc(alias = "kXR_QStats")]
    fn stats_report(
        &self,
        caller: &Caller,
        what: &str,
    ) -> impl Future<Output = FsResult<String>> + Send {
        let _ = (caller, what);
        async { Err(FsError::unsupported("kXR_QStats")) }
    }

    /// Extended attributes: the value of `name` on `path`.
    fn get_xattr(
        &self,
        caller: &Caller,
        path: &str,
        name: &str,
    ) -> impl Future<Output = FsResult<Bytes>> + Send {
        let _ = (caller, path, name);
        async { Err(FsError::unsupported("fattr")) }
    }

    /// Extended attributes: set `name` on `path` to `value`.
    fn set_xattr(
        &self,
        caller: &Caller,
        path: &str,
        name: &str,
        value: Bytes,
    ) -> impl Future<Output = FsResult<()>> + Send {
        let _ = (caller, path, name, value);
        async { Err(FsError::unsupported("fattr")) }
    }

    /// Extended attributes: remove `name` from `path`.
    fn del_xattr(
        &self,
        caller: &Caller,
        path: &str,
        name: &str,
    ) -> impl Future<Output = FsResult<()>> + Send {
        let _ = (caller, path, name);
        async { Err(FsError::unsupported("fattr")) }
    }

    /// Extended attributes: the names on `path`.
    fn list_xattr(
        &self,
        caller: &Caller,
        path: &str,
    ) -> impl Future<Output = FsResult<Vec<String>>> + Send {
        let _ = (caller, path);
        async { Err(FsError::unsupported("fattr")) }
    }
}
