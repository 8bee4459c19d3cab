//! [`object_store::ObjectStore`] over `root://` and `roots://`: the XRootD
//! servers of high-energy physics as a store for DataFusion, parquet's
//! `ParquetObjectReader` and anything else written against `object_store`
//! (version 0.13, the one DataFusion 55 uses).
//!
//! ```no_run
//! # async fn demo() -> object_store::Result<()> {
//! use object_store::{path::Path, ObjectStore};
//! use xroot_object_store::XrootStore;
//!
//! // every object path is below /store/data on that server
//! let store = XrootStore::new("root://eos.example.org:1094//store/data")?;
//! let footer = store
//!     .get_opts(&Path::from("run1/events.parquet"), object_store::GetOptions {
//!         range: Some(object_store::GetRange::Suffix(8)),
//!         ..Default::default()
//!     })
//!     .await?
//!     .bytes()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! DataFusion, with a table of every Parquet file below a directory:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use datafusion::prelude::{ParquetReadOptions, SessionContext};
//! use xroot_object_store::{object_url, server_store};
//!
//! let ctx = SessionContext::new();
//! let (key, store) = server_store(xroot_client::Client::new(), "root://eos.example.org:1094")?;
//! ctx.register_object_store(&key, store);
//! // the stock tools' root://host//abs/path has an empty segment DataFusion refuses: object_url
//! // turns it into root://host/abs/path (a directory keeps its trailing slash)
//! let table = object_url("root://eos.example.org:1094//store/run1/")?;
//! ctx.register_parquet("events", table.as_str(), ParquetReadOptions::default()).await?;
//! ctx.sql(r#"SELECT "nMuon", count(*) FROM events GROUP BY "nMuon""#).await?.show().await?;
//! # Ok(()) }
//! ```
//!
//! # Paths
//!
//! The store's URL names a server and a base directory; object paths are
//! relative to it, `/`-separated, without empty segments (object_store's
//! [`Path`] refuses them). `root://host//data` and `root://host/data` name
//! the same base `/data`, as the stock tools read them; so do
//! `root://host:1094/` and `root://host` (the server's root). The object
//! `a/b.parquet` of the store `root://host//data` is the file
//! `/data/a/b.parquet` on the server.
//!
//! # What each call does on the wire
//!
//! | call | XRootD requests |
//! |---|---|
//! | `get_opts` (any [`GetRange`], bounded, offset or suffix) | `kXR_open` (with its stat) unless a handle is kept (see below), then `kXR_read`s of at most 8 MiB as the stream is polled |
//! | `head` (`get_opts` with `head`) | `kXR_stat` |
//! | `get_ranges` | `kXR_open` unless a handle is kept, then one or more `kXR_readv` split to the server's limits (1024 elements, 2,097,136 bytes each); no coalescing |
//! | `list`, `list_with_delimiter` | `kXR_dirlist` with `kXR_dstat`, per directory |
//! | `put_opts` | a temporary file beside the target (`kXR_open` new, with `kXR_mkpath`; `kXR_pgwrite`s of at most 8 MiB where the server serves them on a plain link, else `kXR_write`s; `kXR_close`), then `kXR_mv` onto the target |
//! | `put_multipart_opts` | the same temporary file, each part written at its offset as it comes, `kXR_mv` on completion (`kXR_rm` on abort) |
//! | `delete_stream` | `kXR_rm` per path |
//! | `copy_opts` | the source read and written to a temporary file, then `kXR_mv` (XRootD 5.5 servers do not offer `kXR_clone`) |
//! | `rename_opts` | `kXR_mv` |
//!
//! Reads keep their file open: calls made within 5 s of a file's open
//! share its handle (parquet asks for each column chunk with a call of its
//! own; an open and a close each would cost two round trips per call), and
//! the file is closed (`kXR_close`) when the last call or stream using it
//! ends after that. A write, rename or delete through the store lets go of
//! the handle at once; so does a failed read, which is tried once more on a
//! fresh open. A file replaced on the server by someone else is seen by
//! calls made 5 s or more after the open that preceded the change.
//!
//! Errors map to object_store's kinds: `kXR_NotFound` (and
//! `kXR_isDirectory`: a directory is no object) to [`Error::NotFound`], `kXR_ItExists` to [`Error::AlreadyExists`],
//! `kXR_NotAuthorized` to [`Error::PermissionDenied`], `kXR_AuthFailed` to
//! [`Error::Unauthenticated`], everything else to [`Error::Generic`] with
//! the client's error as its source. Conditional requests compare against
//! an ETag made of the file's modification time and size; object versions
//! and `PutMode::Update` are not supported ([`Error::NotImplemented`]).
//!
//! `PutMode::Create`, `CopyMode::Create` and a rename that must not
//! overwrite check that the target does not exist, then rename onto it:
//! XRootD has no conditional rename, so two writers racing for the same new
//! name can both succeed (the last rename wins). Unconditional puts are
//! atomic: readers see the old object or the new one, never part of it.
//!
//! # A cache below the client
//!
//! [`XrootStore::with_cache`] reads through a block cache in a local
//! directory (xroot-cache's store, as our XCache uses it): one server
//! request per vector read for the blocks it lacks, cached blocks from
//! disk, the server whenever the cache fails; several processes may share
//! the directory. With a trust window ([`CacheConfig::below_client`]: an
//! hour), a file the server confirmed within the window is opened, stat'ed
//! (`head`) and read from its cached blocks **without contacting the
//! server**, so a query over what was cached runs with the server down. Listings
//! always ask the server: name tables by their files' URLs to query them
//! offline.
//!
//! # Registries
//!
//! [`register`] adds a store for a server (`root://host:port`, base `/`) to
//! an object_store [`ObjectStoreRegistry`]; the registry then resolves any
//! `root://host:port//abs/path` URL to it and the object path `abs/path`.
//! DataFusion's `SessionContext::register_object_store` takes the same
//! store and URL.
//!
//! # Sources
//!
//! A comment citing `PROTOCOL.md §N.M` (or `PROTOCOL.md Appendix item K`)
//! points to the protocol notes that ship with xroot-proto
//! (`xroot-proto/PROTOCOL.md`, rendered as [`xroot_proto::notes`]); one
//! citing `SECURITY.md "TLS"` and the like points to the security notes
//! that ship with xroot-sec (`xroot-sec/SECURITY.md`, rendered as
//! `xroot_sec::notes`). Besides those, the sources are the upstream
//! `src/XProtocol/XProtocol.hh` and the other xrootd files named where they
//! are used (<https://github.com/xrootd/xrootd>).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod handles;
mod temp;
mod upload;

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::registry::ObjectStoreRegistry;
use object_store::{
    Attributes, CopyMode, CopyOptions, Error, GetOptions, GetRange, GetResult, GetResultPayload,
    ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions,
    PutPayload, PutResult, RenameOptions, RenameTargetMode, Result,
};
use xroot_cache::{CacheConfig, CacheFs, CacheStatsSnapshot, RemoteOrigin, Store};
use xroot_client::{Client, File, OpenFlags};
use xroot_proto::response::StatInfo;
use xroot_proto::url::Url;
use xroot_proto::ErrorCode;
use xroot_server::{FileSystem as XrdFileSystem, FsError};

pub use error::STORE;
use error::{client_error, not_implemented};
use handles::OpenFile;
use temp::TempFile;

/// The largest read one `get` stream asks for at a time (8 MiB, as the
/// stock `xrdcp` reads).
pub(crate) const CHUNK: u64 = 8 << 20;

/// An object store over one XRootD server (or redirector) and a base
/// directory on it. Cheap to clone; clones share the client and its
/// connections.
#[derive(Clone)]
pub struct XrootStore {
    client: Client,
    /// `root://host:port` (scheme, user and address; no path).
    endpoint: String,
    /// The base directory, `/` or `/a/b` (no trailing `/`).
    base: String,
    /// Files kept open for reads, by server path.
    handles: Arc<handles::Handles>,
    /// The block cache reads go through, if any.
    cache: Option<CacheFs<RemoteOrigin>>,
}

impl fmt::Debug for XrootStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XrootStore")
            .field("endpoint", &self.endpoint)
            .field("base", &self.base)
            .finish()
    }
}

impl fmt::Display for XrootStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "XrootStore({}/{})", self.endpoint, self.base)
    }
}

impl XrootStore {
    /// A store for `url` (`root://` or `roots://`, with an optional base
    /// directory) with a client of default settings.
    ///
    /// # Errors
    /// [`Error::Generic`] when `url` is not a `root://`-family URL, or
    /// carries CGI (`?...`) or a password: credentials go in the client's
    /// configuration (`xroot_client::Config`: a bearer token, an sss
    /// keytab, TLS), which every request of the store then uses.
    pub fn new(url: &str) -> Result<XrootStore> {
        XrootStore::with_client(Client::new(), url)
    }

    /// A store for `url` using `client` (its settings: TLS, credentials,
    /// timeouts).
    ///
    /// # Errors
    /// As [`XrootStore::new`].
    pub fn with_client(client: Client, url: &str) -> Result<XrootStore> {
        let parsed = parse(url)?;
        let endpoint = server_of(&parsed);
        let base = parsed.path.trim_end_matches('/').to_string();
        Ok(XrootStore {
            client,
            endpoint,
            base,
            handles: Arc::default(),
            cache: None,
        })
    }

    /// A store for `url` using `client`, whose reads go through a block
    /// cache in the directory `dir` (xroot-cache's store: 4 kB blocks, a
    /// crc32c per page, a sparse data file and a sidecar per file, purged
    /// between `config.purge`'s watermarks): a vector read fetches the
    /// blocks it lacks in ONE server request, a read of cached blocks sends
    /// none but the file's open, and any cache fault falls back to the
    /// server. Writes and listings go to the server as without a cache, and
    /// so do stats but within the trust window (below); a file rewritten on the server is detected at the next open
    /// that asks the server (by its size and modification time) and cached
    /// anew; what this store writes, renames or deletes is dropped from the
    /// cache at once.
    ///
    /// `config.trust_window` (an hour in [`CacheConfig::below_client`],
    /// none in [`CacheConfig::default`]): a file whose size and
    /// modification time the server confirmed within it is opened, read
    /// and `head`ed from the cache alone, without contacting the server; a
    /// file changed on the server meanwhile is then served as it was
    /// cached, until the window ends. A block not cached (or a page that
    /// fails its crc32c) opens the file at the server then, and a changed
    /// file is not mixed in: that read fails and the entry is dropped.
    ///
    /// Several processes may share one cache directory: each commit of a
    /// file's block index (its sidecar) holds the file's lock (`flock` on
    /// its data file) and keeps the blocks the others committed, and an
    /// eviction holds it too; a process about to fetch blocks takes their
    /// byte-range locks, so two processes reading the same missing blocks at
    /// once fetch them once (the second waits for the first and reads them
    /// from disk).
    ///
    /// # Errors
    /// As [`XrootStore::new`]; [`Error::Generic`] when `dir` cannot be
    /// created.
    pub fn with_cache(
        client: Client,
        url: &str,
        dir: impl Into<std::path::PathBuf>,
        config: CacheConfig,
    ) -> Result<XrootStore> {
        let mut store = XrootStore::with_client(client.clone(), url)?;
        let dir = dir.into();
        let cache_store = Store::open(&dir).map_err(|e| Error::Generic {
            store: STORE,
            source: format!("cache directory {}: {e}", dir.display()).into(),
        })?;
        let origin = RemoteOrigin::new(client, &store.endpoint).map_err(|e| Error::Generic {
            store: STORE,
            source: Box::new(e),
        })?;
        store.cache = Some(CacheFs::new(origin, cache_store, config));
        Ok(store)
    }

    /// The store changed the file at `server_path`: no read handle opened
    /// before serves a later call, and the cache drops what it holds of it
    /// (in this process and on disk, so that no open trusts it).
    pub(crate) async fn changed(&self, server_path: &str) {
        if let Some(kept) = self.handles.changed(server_path) {
            OpenFile::close_now(kept).await;
        }
        if let Some(cache) = &self.cache {
            cache.evict(server_path).await;
            // a read that opened the old file meanwhile keeps no handle
            if let Some(kept) = self.handles.changed(server_path) {
                OpenFile::close_now(kept).await;
            }
        }
    }

    /// Writes the cache's block index (the sidecars) of every file it has
    /// open, so that what was fetched is found by the next process: the
    /// cache writes them at most every second while it fills and when a
    /// file's last handle goes, so a process that exits right after its
    /// reads calls this first. Nothing to do without a cache.
    ///
    /// # Errors
    /// [`Error::Generic`] with the first sidecar write that failed.
    pub async fn flush_cache(&self) -> Result<()> {
        let Some(cache) = &self.cache else {
            return Ok(());
        };
        cache.flush_all().await.map_err(|e| Error::Generic {
            store: STORE,
            source: Box::new(e),
        })
    }

    /// The cache's counters (requests, bytes asked, fetched from the
    /// server and read from disk), when the store has a cache.
    pub fn cache_stats(&self) -> Option<CacheStatsSnapshot> {
        self.cache.as_ref().map(CacheFs::stats)
    }

    /// The client this store uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The server path of `location`: the base directory joined with it.
    ///
    /// # Errors
    /// [`Error::Generic`] for a location with a `?`: XRootD takes what
    /// follows a `?` in a path as CGI, so such a name would address another
    /// file ([`Path::from`] encodes `?`; [`Path::parse`] and URL paths keep
    /// it).
    pub fn server_path(&self, location: &Path) -> Result<String> {
        let rel = location.as_ref();
        if rel.contains('?') {
            return Err(Error::Generic {
                store: STORE,
                source: format!(
                    "object {rel:?}: a `?` cannot be sent over XRootD, where it starts a path's CGI"
                )
                .into(),
            });
        }
        Ok(if rel.is_empty() {
            if self.base.is_empty() {
                "/".to_string()
            } else {
                self.base.clone()
            }
        } else {
            format!("{}/{rel}", self.base)
        })
    }

    /// The `root://` URL of a server path.
    fn url(&self, server_path: &str) -> String {
        format!("{}/{server_path}", self.endpoint)
    }

    /// The object path of a server path below the base.
    fn object_path(&self, server_path: &str) -> Result<Path> {
        let rel = server_path
            .strip_prefix(&self.base)
            .unwrap_or(server_path)
            .trim_start_matches('/');
        Ok(Path::parse(rel)?)
    }

    fn fs(&self) -> Result<xroot_client::FileSystem> {
        self.client
            .fs(&self.endpoint)
            .map_err(|e| client_error(&self.endpoint, e))
    }

    /// A fresh name beside `server_path` for a file being written:
    /// `.NAME.NONCE.xroot-upload`, NAME clipped to 128 bytes (so the name
    /// stays within NAME_MAX), NONCE from this process's id, the time it
    /// started and a counter shared by every store in it.
    fn temp_path(&self, server_path: &str) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        static STARTED: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
        let started = STARTED.get_or_init(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        });
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let (dir, name) = server_path.rsplit_once('/').unwrap_or(("", server_path));
        let mut cut = name.len().min(128);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        format!(
            "{dir}/.{}.{:x}-{:x}-{n:x}.xroot-upload",
            &name[..cut],
            std::process::id(),
            started & 0xffff_ffff_ffff
        )
    }

    async fn open(&self, server_path: &str, flags: OpenFlags) -> Result<File> {
        self.client
            .open(&self.url(server_path), flags)
            .await
            .map_err(|e| client_error(server_path, e))
    }

    /// A read handle on `server_path`: the one kept open, else a fresh
    /// open, kept from now on. `Ok(true)` with it when it was kept (a read
    /// that fails on it may try a fresh one).
    async fn reader(&self, server_path: &str) -> Result<(Arc<OpenFile>, bool)> {
        if let Some(file) = self.handles.get(server_path) {
            return Ok((file, true));
        }
        let changes = self.handles.changes();
        let file = self.open_reader(server_path).await?;
        self.handles.keep(server_path, &file, changes);
        Ok((file, false))
    }

    /// Opens `server_path` for reading: through the cache when the store
    /// has one (falling back to the server when the cache itself fails),
    /// else at the server.
    async fn open_reader(&self, server_path: &str) -> Result<Arc<OpenFile>> {
        if let Some(cache) = &self.cache {
            let caller = xroot_server::Caller::local("xroot-object-store");
            let mode = xroot_server::OpenMode::default();
            match XrdFileSystem::open(cache, &caller, server_path, mode, "").await {
                Ok(handle) => return Ok(OpenFile::cached(handle)),
                Err(e) => {
                    let verdict = [
                        ErrorCode::NOT_FOUND,
                        ErrorCode::IS_DIRECTORY,
                        ErrorCode::NOT_AUTHORIZED,
                    ];
                    if matches!(&e, FsError::Error { code, .. } if verdict.contains(code)) {
                        return Err(error::fs_error(server_path, e));
                    }
                    tracing::debug!("{server_path}: cache open failed ({e}); reading the server's");
                }
            }
        }
        Ok(OpenFile::direct(
            self.open(server_path, OpenFlags::READ).await?,
        ))
    }

    /// Runs `read` on a read handle of `server_path`; when it fails on a
    /// kept handle (the server restarted, the handle went stale), forgets
    /// that handle and runs it once more on a fresh open. A handle whose
    /// read failed is not kept.
    async fn with_reader<T, Fut>(
        &self,
        server_path: &str,
        read: impl Fn(Arc<OpenFile>) -> Fut,
    ) -> Result<T>
    where
        Fut: std::future::Future<Output = Result<T>>,
    {
        let (file, kept) = self.reader(server_path).await?;
        match read(file.clone()).await {
            Ok(v) => Ok(v),
            // the caller's own conditions, answered from a good handle
            Err(e @ (Error::NotModified { .. } | Error::Precondition { .. })) => Err(e),
            Err(e) => {
                self.handles.forget(server_path, &file);
                if !kept {
                    return Err(e);
                }
                let (file, _) = self.reader(server_path).await?;
                let again = read(file.clone()).await;
                if again.is_err() {
                    self.handles.forget(server_path, &file);
                }
                again
            }
        }
    }

    async fn stat(&self, server_path: &str) -> Result<StatInfo> {
        self.fs()?
            .stat(server_path)
            .await
            .map_err(|e| client_error(server_path, e))
    }

    /// The stat of `server_path` from the cache, when it holds the file
    /// and trusts it (see [`CacheConfig::trust_window`]): no request.
    async fn trusted_stat(&self, server_path: &str) -> Option<StatInfo> {
        self.cache.as_ref()?.trusted_stat(server_path).await
    }

    async fn exists(&self, server_path: &str) -> Result<bool> {
        match self.stat(server_path).await {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The metadata of a file at `server_path`; a directory is not found.
    fn meta(&self, server_path: &str, stat: &StatInfo) -> Result<ObjectMeta> {
        if stat.is_dir() {
            return Err(Error::NotFound {
                path: server_path.to_string(),
                source: "a directory, not an object".into(),
            });
        }
        Ok(ObjectMeta {
            location: self.object_path(server_path)?,
            last_modified: chrono::DateTime::from_timestamp(stat.mtime, 0).unwrap_or_default(),
            size: stat.size,
            e_tag: Some(e_tag(stat)),
            version: None,
        })
    }

    /// Writes `payload` to a temporary file beside `target` and renames it
    /// onto `target` as `mode` allows.
    async fn put_file(&self, target: &str, payload: PutPayload, mode: &PutMode) -> Result<()> {
        if let PutMode::Update(_) = mode {
            return Err(not_implemented("put_opts with PutMode::Update"));
        }
        let create = *mode == PutMode::Create;
        if create && self.exists(target).await? {
            return Err(already_exists(target));
        }
        let temp = TempFile::create(self, target).await?;
        temp.writer().write(0, &payload).await?;
        temp.commit(target, create).await
    }

    /// The files below `dir` (recursively), as a stream of their metadata.
    /// A directory met again (a symbolic link to an ancestor, seen through
    /// the server's stat) is not walked twice.
    fn walk(&self, dir: String) -> BoxStream<'static, Result<ObjectMeta>> {
        let store = self.clone();
        let start = (vec![dir], std::collections::HashSet::new());
        stream::try_unfold(start, move |(mut pending, mut seen)| {
            let store = store.clone();
            async move {
                while let Some(dir) = pending.pop() {
                    let (files, dirs) = store.list_dir(&dir).await?;
                    for (path, id) in dirs {
                        // an id of 0 says nothing (an offline file)
                        if id == 0 || seen.insert(id) {
                            pending.push(path);
                        }
                    }
                    if !files.is_empty() {
                        let files = stream::iter(files.into_iter().map(Ok::<ObjectMeta, Error>));
                        return Ok::<_, Error>(Some((files, (pending, seen))));
                    }
                }
                Ok::<_, Error>(None)
            }
        })
        .try_flatten()
        .boxed()
    }

    /// One directory: its files' metadata and its subdirectories' server
    /// paths with their stat ids. A directory that does not exist, or a
    /// file, is empty. Left out: temporary files of uploads in progress,
    /// names no object path can hold (control characters, a `?`, which
    /// XRootD would read as CGI), and entries gone before their stat.
    async fn list_dir(&self, dir: &str) -> Result<(Vec<ObjectMeta>, Vec<(String, i64)>)> {
        let entries = match self.fs()?.dirlist(dir, true).await {
            Ok(e) => e,
            Err(e) => {
                return match client_error(dir, e) {
                    Error::NotFound { .. } => Ok((Vec::new(), Vec::new())),
                    // a prefix naming a file has nothing below it
                    other => match self.stat(dir).await {
                        Ok(s) if !s.is_dir() => Ok((Vec::new(), Vec::new())),
                        _ => Err(other),
                    },
                };
            }
        };
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for entry in entries {
            let name = &entry.name;
            let temp = name.starts_with('.') && name.ends_with(".xroot-upload");
            if temp || name.contains('?') || Path::parse(name).is_err() {
                if !temp {
                    tracing::debug!("{dir}: {name:?} is no object name, left out");
                }
                continue;
            }
            let path = if dir == "/" {
                format!("/{name}")
            } else {
                format!("{dir}/{name}")
            };
            let stat = match entry.stat {
                Some(s) => s,
                None => match self.stat(&path).await {
                    Ok(s) => s,
                    Err(Error::NotFound { .. }) => continue,
                    Err(e) => return Err(e),
                },
            };
            if stat.is_dir() {
                dirs.push((path, stat.id));
            } else {
                files.push(self.meta(&path, &stat)?);
            }
        }
        // in lexicographic order, as object stores list
        files.sort_by(|a, b| a.location.cmp(&b.location));
        dirs.sort();
        Ok((files, dirs))
    }
}

/// The store for the server of `url` (`root://host:port`; any path is
/// ignored: the store's base is `/`), with `client`, and the URL that
/// registries key it by: `scheme://[user@]host:port`. DataFusion takes the
/// pair as it is:
///
/// ```no_run
/// # fn demo(ctx: &datafusion::prelude::SessionContext) -> object_store::Result<()> {
/// let (key, store) = xroot_object_store::server_store(
///     xroot_client::Client::new(),
///     "root://eos.example.org:1094//store/data/f.parquet",
/// )?;
/// ctx.register_object_store(&key, store);
/// // then any root://eos.example.org:1094/... table URL reads through it
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::Generic`] when `url` is not a `root://`-family URL.
pub fn server_store(client: Client, url: &str) -> Result<(url::Url, Arc<XrootStore>)> {
    let server = server_of(&parse(url)?);
    let store = Arc::new(XrootStore::with_client(client, &server)?);
    let key = url::Url::parse(&server).map_err(|e| Error::Generic {
        store: STORE,
        source: format!("{server:?}: {e}").into(),
    })?;
    Ok((key, store))
}

/// Registers [`server_store`]'s store in `registry` and returns it. The
/// registry then resolves `root://host:port//a/b` and `root://host:port/a/b`
/// to the store and the object path `a/b`.
///
/// # Errors
/// As [`server_store`].
pub fn register(
    registry: &dyn ObjectStoreRegistry,
    client: Client,
    url: &str,
) -> Result<Arc<XrootStore>> {
    let (key, store) = server_store(client, url)?;
    registry.register(key, store.clone());
    Ok(store)
}

/// `url` in the form that object_store's paths (and so DataFusion's table
/// URLs) accept: `root://host:port/abs/path`, one `/` after the address.
/// The stock tools' form `root://host:port//abs/path` names the same file
/// but its empty path segment is refused by [`Path`]; this drops it, and
/// any other empty segment. A trailing `/` (a directory) is kept.
///
/// # Errors
/// [`Error::Generic`] when `url` is not a `root://`-family URL.
pub fn object_url(url: &str) -> Result<url::Url> {
    let parsed = parse(url)?;
    let segments: Vec<&str> = parsed.path.split('/').filter(|s| !s.is_empty()).collect();
    let mut out = format!("{}/{}", server_of(&parsed), segments.join("/"));
    if parsed.path.ends_with('/') && !segments.is_empty() {
        out.push('/');
    }
    url::Url::parse(&out).map_err(|e| Error::Generic {
        store: STORE,
        source: format!("{url:?}: {e}").into(),
    })
}

/// `scheme://[user@]host:port` of `url`: its server, without a path.
fn server_of(url: &Url) -> String {
    let user = url
        .user
        .as_ref()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    format!("{}://{user}{}", url.scheme, url.host_port())
}

/// `url` parsed as a `root://`-family URL, without CGI or a password (the
/// store would not send them: credentials belong in the client's
/// configuration).
fn parse(url: &str) -> Result<Url> {
    let bad = |why: String| Error::Generic {
        store: STORE,
        source: why.into(),
    };
    let parsed = Url::parse(url).map_err(|e| bad(format!("{url:?} is not a root:// URL: {e}")))?;
    if !parsed.cgi.is_empty() || parsed.password.is_some() {
        return Err(bad(format!(
            "{url:?}: a store URL carries no CGI or password; give credentials to the \
             client (xroot_client::Config: bearer token, sss keytab, TLS)"
        )));
    }
    Ok(parsed)
}

/// The ETag of a file: its stat id (device and inode: every put renames a
/// new file into place, so a new object has a new one), modification time
/// and size, in hex.
fn e_tag(stat: &StatInfo) -> String {
    format!("{:x}-{:x}-{:x}", stat.id, stat.mtime, stat.size)
}

pub(crate) fn already_exists(path: &str) -> Error {
    Error::AlreadyExists {
        path: path.to_string(),
        source: "the target exists".into(),
    }
}

/// Reads `range` of `file` as a stream of chunks of at most [`CHUNK`]
/// bytes.
fn read_stream(
    handles: Arc<handles::Handles>,
    file: Arc<OpenFile>,
    path: String,
    range: Range<u64>,
) -> BoxStream<'static, Result<Bytes>> {
    stream::try_unfold(range.start, move |offset| {
        let (file, path, handles) = (file.clone(), path.clone(), handles.clone());
        let end = range.end;
        async move {
            if offset >= end {
                return Ok(None);
            }
            let len = (end - offset).min(CHUNK) as usize;
            let data = file.read_at(offset, len).await.map_err(|e| {
                // a handle that failed serves no other call
                handles.forget(&path, &file);
                client_error(&path, e)
            })?;
            if data.is_empty() {
                return Err(Error::Generic {
                    store: STORE,
                    source: format!("{path} ended at {offset}, before {end}").into(),
                });
            }
            let next = offset + data.len() as u64;
            Ok(Some((data, next)))
        }
    })
    .boxed()
}

/// `ranges` of `file` (the file at `path`), each read whole by vector reads
/// within the server's limits: one per 1024 elements or 2,097,136 bytes a
/// element, as [`File::readv`] splits them. An empty range is not sent.
///
/// Errors: [`Error::Generic`] for a range that is reversed or ends past
/// the end of the file; the server's, as their kinds.
async fn read_ranges(file: Arc<OpenFile>, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
    let size = file.stat().await.map_err(|e| client_error(path, e))?.size;
    let mut extents = Vec::with_capacity(ranges.len());
    for r in ranges {
        if r.start > r.end || r.end > size {
            let why: Box<dyn std::error::Error + Send + Sync> =
                match GetRange::Bounded(r.clone()).as_range(size) {
                    Err(e) => Box::new(e),
                    Ok(_) => format!("range {r:?} is past the end of {path} ({size} bytes)").into(),
                };
            return Err(Error::Generic {
                store: STORE,
                source: why,
            });
        }
        extents.push((r.start, (r.end - r.start) as usize));
    }
    let wanted: Vec<(u64, usize)> = extents.iter().copied().filter(|&(_, l)| l > 0).collect();
    let mut got = file
        .readv(&wanted)
        .await
        .map_err(|e| client_error(path, e))?
        .into_iter();
    Ok(extents
        .iter()
        .map(|&(_, l)| {
            if l == 0 {
                Bytes::new()
            } else {
                got.next().unwrap_or_default()
            }
        })
        .collect())
}

#[async_trait]
impl ObjectStore for XrootStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if !opts.attributes.is_empty() {
            return Err(not_implemented("put_opts with attributes"));
        }
        let target = self.server_path(location)?;
        self.put_file(&target, payload, &opts.mode).await?;
        let stat = self.stat(&target).await?;
        Ok(PutResult {
            e_tag: Some(e_tag(&stat)),
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        if !opts.attributes.is_empty() {
            return Err(not_implemented("put_multipart_opts with attributes"));
        }
        let target = self.server_path(location)?;
        let temp = TempFile::create(self, &target).await?;
        Ok(Box::new(upload::Upload::new(self.clone(), temp, target)))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.version.is_some() {
            return Err(not_implemented("get_opts with a version"));
        }
        let path = self.server_path(location)?;
        if options.head {
            let stat = match self.trusted_stat(&path).await {
                Some(stat) => stat,
                None => self.stat(&path).await?,
            };
            let meta = self.meta(&path, &stat)?;
            options.check_preconditions(&meta)?;
            return Ok(GetResult {
                payload: GetResultPayload::Stream(stream::empty().boxed()),
                range: 0..meta.size,
                meta,
                attributes: Attributes::new(),
            });
        }
        let checked = |file: Arc<OpenFile>| {
            let (path, options) = (&path, &options);
            async move {
                let stat = file.stat().await.map_err(|e| client_error(path, e))?;
                let meta = self.meta(path, &stat)?;
                options.check_preconditions(&meta)?;
                let range = match &options.range {
                    Some(r) => r.as_range(meta.size).map_err(|e| Error::Generic {
                        store: STORE,
                        source: Box::new(e),
                    })?,
                    None => 0..meta.size,
                };
                Ok((file, meta, range))
            }
        };
        let (file, meta, range) = self.with_reader(&path, checked).await?;
        Ok(GetResult {
            payload: GetResultPayload::Stream(read_stream(
                self.handles.clone(),
                file,
                path,
                range.clone(),
            )),
            meta,
            range,
            attributes: Attributes::new(),
        })
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let path = self.server_path(location)?;
        let read = |file: Arc<OpenFile>| read_ranges(file, &path, ranges);
        self.with_reader(&path, read).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let store = self.clone();
        locations
            .map(move |location| {
                let store = store.clone();
                async move {
                    let location = location?;
                    let path = store.server_path(&location)?;
                    let removed = store.fs()?.rm(&path).await;
                    store.changed(&path).await;
                    removed.map_err(|e| client_error(&path, e))?;
                    Ok(location)
                }
            })
            .buffered(10)
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        match self.server_path(&prefix.cloned().unwrap_or_default()) {
            Ok(dir) => self.walk(dir),
            Err(e) => stream::once(async move { Err(e) }).boxed(),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let dir = self.server_path(&prefix.cloned().unwrap_or_default())?;
        let (objects, dirs) = self.list_dir(&dir).await?;
        let common_prefixes = dirs
            .iter()
            .map(|(d, _)| self.object_path(d))
            .collect::<Result<Vec<_>>>()?;
        Ok(ListResult {
            common_prefixes,
            objects,
        })
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let (source, target) = (self.server_path(from)?, self.server_path(to)?);
        let create = options.mode == CopyMode::Create;
        // a missing source is reported before an existing target (the
        // source is closed when `input` is dropped)
        let input = OpenFile::direct(self.open(&source, OpenFlags::READ).await?);
        if create && self.exists(&target).await? {
            return Err(already_exists(&target));
        }
        let temp = TempFile::create(self, &target).await?;
        let writer = temp.writer();
        let mut offset = 0u64;
        loop {
            let data = input
                .read_at(offset, CHUNK as usize)
                .await
                .map_err(|e| client_error(&source, e))?;
            if data.is_empty() {
                break;
            }
            offset = writer.write_bytes(offset, &data).await?;
        }
        drop(input);
        temp.commit(&target, create).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let (source, target) = (self.server_path(from)?, self.server_path(to)?);
        if options.target_mode == RenameTargetMode::Create && self.exists(&target).await? {
            return Err(already_exists(&target));
        }
        let fs = self.fs()?;
        if let Some((parent, _)) = target.rsplit_once('/') {
            if !parent.is_empty() {
                let _ = fs.mkdir(parent, true, 0o755).await;
            }
        }
        let moved = fs.mv(&source, &target).await;
        self.changed(&source).await;
        self.changed(&target).await;
        moved.map_err(|e| match client_error(&source, e) {
            // the error is about the target unless the source is gone
            Error::AlreadyExists { source: e, .. } => Error::AlreadyExists {
                path: target.clone(),
                source: e,
            },
            other => other,
        })
    }
}

/// The README's samples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_url_forms_name_the_same_base() {
        for url in [
            "root://h:1095//data/x",
            "root://h:1095/data/x",
            "root://h:1095//data/x/",
        ] {
            let s = XrootStore::new(url).unwrap();
            assert_eq!(
                s.server_path(&Path::from("a/b.parquet")).unwrap(),
                "/data/x/a/b.parquet"
            );
            assert_eq!(s.url("/data/x/a"), "root://h:1095//data/x/a");
            assert_eq!(
                s.object_path("/data/x/a/b.parquet").unwrap(),
                Path::from("a/b.parquet")
            );
        }
        let root = XrootStore::new("root://h").unwrap();
        assert_eq!(root.server_path(&Path::from("f")).unwrap(), "/f");
        assert_eq!(root.server_path(&Path::from("")).unwrap(), "/");
        assert!(XrootStore::new("http://h/x").is_err());
    }

    #[test]
    fn what_xrootd_would_misread_is_refused() {
        // a `?` starts CGI on the wire: `a?b` would address `a`
        let s = XrootStore::new("root://h//data").unwrap();
        assert!(s.server_path(&Path::parse("a?b").unwrap()).is_err());
        assert_eq!(
            s.server_path(&Path::from("a?b")).unwrap(),
            "/data/a%3Fb",
            "Path::from encodes it"
        );
        // CGI and passwords in the store URL would not be sent
        assert!(XrootStore::new("root://h//data?authz=x").is_err());
        assert!(XrootStore::new("root://u:pw@h//data").is_err());
        assert!(object_url("root://h//d/f.parquet?x=1").is_err());
    }

    #[test]
    fn temporary_names_are_hidden_fresh_and_short() {
        let s = XrootStore::new("root://h//data").unwrap();
        let long = "x".repeat(250);
        let (a, b) = (
            s.temp_path(&format!("/data/{long}")),
            s.temp_path(&format!("/data/{long}")),
        );
        assert_ne!(a, b);
        let name = a.rsplit_once('/').unwrap().1;
        assert!(
            name.starts_with('.') && name.ends_with(".xroot-upload"),
            "{name}"
        );
        assert!(name.len() < 200, "{} bytes", name.len());
        // another store in the same process does not repeat a name
        let t = XrootStore::new("root://h//data").unwrap();
        assert_ne!(t.temp_path("/data/f"), s.temp_path("/data/f"));
    }

    #[test]
    fn object_urls_have_no_empty_segment() {
        for (url, want) in [
            (
                "root://h:1095//data/f.parquet",
                "root://h:1095/data/f.parquet",
            ),
            (
                "root://h:1095/data/f.parquet",
                "root://h:1095/data/f.parquet",
            ),
            ("root://h//data//dir/", "root://h:1094/data/dir/"),
            ("roots://u@h//", "roots://u@h:1094/"),
        ] {
            assert_eq!(object_url(url).unwrap().as_str(), want, "{url}");
        }
    }

    #[test]
    fn a_registry_resolves_both_url_forms() {
        let registry = object_store::registry::DefaultObjectStoreRegistry::new();
        register(&registry, Client::new(), "root://h:1095//ignored").unwrap();
        for url in [
            "root://h:1095/data/f.parquet",
            "root://h:1095//data/f.parquet",
        ] {
            let (store, path) = registry.resolve(&url::Url::parse(url).unwrap()).unwrap();
            assert_eq!(store.to_string(), "XrootStore(root://h:1095/)", "{url}");
            assert_eq!(path, Path::from("data/f.parquet"), "{url}");
        }
    }
}
