//! [`XrootStore`]: one server (or redirector) and a base directory on it,
//! the paths of its objects, and its requests: opens, stats, listings, the
//! read handles it keeps and the block cache its reads may go through. The
//! `object_store` interface is written on top of it (`objects.rs`), and so
//! are the files a write goes through (`temp.rs`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{Error, ObjectMeta, Result};
use xroot_cache::{CacheConfig, CacheFs, CacheStatsSnapshot, RemoteOrigin, Store};
use xroot_client::{Client, File, OpenFlags};
use xroot_proto::response::StatInfo;
use xroot_proto::url::Url;
use xroot_proto::ErrorCode;
use xroot_server::{FileSystem as XrdFileSystem, FsError};

use crate::ahead::{Ahead, DEFAULT_READ_AHEAD};
use crate::error::{self, client_error, STORE};
use crate::handles::{self, OpenFile};
use crate::listing::Listings;

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
    pub(crate) handles: Arc<handles::Handles>,
    /// The block cache reads go through, if any.
    cache: Option<CacheFs<RemoteOrigin>>,
    /// What was read ahead of the calls that will ask for it.
    pub(crate) ahead: Arc<Ahead>,
    /// The listings kept beside the cache, if any.
    listings: Option<Listings>,
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
            ahead: Arc::new(Ahead::new(DEFAULT_READ_AHEAD)),
            listings: None,
        })
    }

    /// This store, holding at most `bytes` read ahead at once (256 MiB
    /// unless set; 0 reads nothing ahead). A Parquet reader asks for one
    /// row group's column chunks at a time; the store reads the same
    /// columns of every row group, of this file and of every other file
    /// whose footer it read within the last 5 s, in one vector read per
    /// file, all at once, and answers the later calls from memory (see the
    /// crate's docs, "What each call does on the wire"). What does not fit
    /// in `bytes` is read when asked.
    pub fn with_read_ahead(mut self, bytes: u64) -> XrootStore {
        self.ahead = Arc::new(Ahead::new(bytes));
        self
    }

    /// A store for `url` using `client`, whose reads go through a block
    /// cache in the directory `dir` (xroot-cache's store: 4 kB blocks, a
    /// crc32c per page, a sparse data file and a sidecar per file, purged
    /// between `config.purge`'s watermarks): a vector read fetches the
    /// blocks it lacks in ONE server request, a read of cached blocks sends
    /// none but the file's open, and any cache fault falls back to the
    /// server. Writes go to the server as without a cache, and so do
    /// listings and stats but within the trust window (below); a file
    /// rewritten on the server is detected at the next open that asks the
    /// server (by its size and modification time) and cached
    /// anew; what this store writes, renames or deletes is dropped from the
    /// cache at once.
    ///
    /// `config.trust_window` (an hour in [`CacheConfig::below_client`],
    /// none in [`CacheConfig::default`]): a file whose size and
    /// modification time the server confirmed within it is opened, read
    /// and `head`ed from the cache alone, without contacting the server; a
    /// file changed on the server meanwhile is then served as it was
    /// cached, until the window ends. So is a directory's listing: kept in
    /// `DIR.listings/` beside `dir` (one small file per directory, named
    /// by the crc32c of its path) after each answer of the server, it is
    /// reused within the window without a request, and dropped when this
    /// store writes, renames or deletes below it; a file added or removed
    /// on the server by someone else is seen once the window ends. The
    /// store prunes `DIR.listings/` as it writes there (at its first
    /// listing and every 256th): listings older than the window go, and
    /// the oldest beyond 4096 files. A block not cached (or a page that
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
        let mut listings = dir.into_os_string();
        listings.push(".listings");
        store.listings = Some(Listings::new(listings.into(), config.trust_window));
        store.cache = Some(CacheFs::new(origin, cache_store, config));
        Ok(store)
    }

    /// The store changed the file at `server_path`: no read handle opened
    /// before serves a later call, and the cache drops what it holds of it
    /// (in this process and on disk, so that no open trusts it).
    pub(crate) async fn changed(&self, server_path: &str) {
        self.ahead.forget(server_path);
        if let Some(listings) = &self.listings {
            listings.forget(server_path);
        }
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
    pub(crate) fn url(&self, server_path: &str) -> String {
        format!("{}/{server_path}", self.endpoint)
    }

    /// The object path of a server path below the base.
    pub(crate) fn object_path(&self, server_path: &str) -> Result<Path> {
        let rel = server_path
            .strip_prefix(&self.base)
            .unwrap_or(server_path)
            .trim_start_matches('/');
        Ok(Path::parse(rel)?)
    }

    pub(crate) fn fs(&self) -> Result<xroot_client::FileSystem> {
        self.client
            .fs(&self.endpoint)
            .map_err(|e| client_error(&self.endpoint, e))
    }

    /// A fresh name beside `server_path` for a file being written:
    /// `.NAME.NONCE.xroot-upload`, NAME clipped to 128 bytes (so the name
    /// stays within NAME_MAX), NONCE from this process's id, the time it
    /// started and a counter shared by every store in it.
    pub(crate) fn temp_path(&self, server_path: &str) -> String {
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

    pub(crate) async fn open(&self, server_path: &str, flags: OpenFlags) -> Result<File> {
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
    pub(crate) async fn with_reader<T, Fut>(
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

    pub(crate) async fn stat(&self, server_path: &str) -> Result<StatInfo> {
        self.fs()?
            .stat(server_path)
            .await
            .map_err(|e| client_error(server_path, e))
    }

    /// The stat of `server_path` from the cache, when it holds the file
    /// and trusts it (see [`CacheConfig::trust_window`]): no request.
    pub(crate) async fn trusted_stat(&self, server_path: &str) -> Option<StatInfo> {
        self.cache.as_ref()?.trusted_stat(server_path).await
    }

    pub(crate) async fn exists(&self, server_path: &str) -> Result<bool> {
        match self.stat(server_path).await {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The metadata of a file at `server_path`; a directory is not found.
    pub(crate) fn meta(&self, server_path: &str, stat: &StatInfo) -> Result<ObjectMeta> {
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

    /// The files below `dir` (recursively), as a stream of their metadata.
    /// A directory met again (a symbolic link to an ancestor, seen through
    /// the server's stat) is not walked twice.
    pub(crate) fn walk(&self, dir: String) -> BoxStream<'static, Result<ObjectMeta>> {
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
    /// XRootD would read as CGI), and entries gone before their stat. With
    /// a cache whose trust window is not zero, a listing the server gave
    /// within the window is reused (no request; see `listing.rs`).
    pub(crate) async fn list_dir(
        &self,
        dir: &str,
    ) -> Result<(Vec<ObjectMeta>, Vec<(String, i64)>)> {
        let entries = match self.listings.as_ref().and_then(|l| l.load(dir)) {
            Some(entries) => entries,
            None => {
                let entries = self.dirlist(dir).await?;
                if let Some(listings) = &self.listings {
                    listings.save(dir, &entries);
                }
                entries
            }
        };
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for (name, stat) in entries {
            let path = if dir == "/" {
                format!("/{name}")
            } else {
                format!("{dir}/{name}")
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

    /// The server's listing of `dir` with each entry's stat, the entries
    /// [`XrootStore::list_dir`] leaves out left out; empty for a directory
    /// that does not exist or a file.
    async fn dirlist(&self, dir: &str) -> Result<Vec<(String, StatInfo)>> {
        let entries = match self.fs()?.dirlist(dir, true).await {
            Ok(e) => e,
            Err(e) => {
                return match client_error(dir, e) {
                    Error::NotFound { .. } => Ok(Vec::new()),
                    // a prefix naming a file has nothing below it
                    other => match self.stat(dir).await {
                        Ok(s) if !s.is_dir() => Ok(Vec::new()),
                        _ => Err(other),
                    },
                };
            }
        };
        let mut out = Vec::new();
        for entry in entries {
            let name = entry.name;
            let temp = name.starts_with('.') && name.ends_with(".xroot-upload");
            if temp || name.contains('?') || Path::parse(&name).is_err() {
                if !temp {
                    tracing::debug!("{dir}: {name:?} is no object name, left out");
                }
                continue;
            }
            let stat = match entry.stat {
                Some(s) => s,
                None => {
                    let path = if dir == "/" {
                        format!("/{name}")
                    } else {
                        format!("{dir}/{name}")
                    };
                    match self.stat(&path).await {
                        Ok(s) => s,
                        Err(Error::NotFound { .. }) => continue,
                        Err(e) => return Err(e),
                    }
                }
            };
            out.push((name, stat));
        }
        Ok(out)
    }
}

/// `scheme://[user@]host:port` of `url`: its server, without a path.
pub(crate) fn server_of(url: &Url) -> String {
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
pub(crate) fn parse(url: &str) -> Result<Url> {
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
pub(crate) fn e_tag(stat: &StatInfo) -> String {
    format!("{:x}-{:x}-{:x}", stat.id, stat.mtime, stat.size)
}
