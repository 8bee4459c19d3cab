//! Open files kept for reads: object_store has no file handles, and parquet
//! asks for each column chunk with a call of its own, so opening (and
//! closing) the file on every `get_ranges` would cost two round trips per
//! call. Calls within [`FRESH`] of an open share its handle instead.
//!
//! A handle serves new calls for [`FRESH`] after its open, and none once
//! this store writes, renames or deletes its path (an open begun before
//! such a change is not kept at all) or a read on it failed (the read is
//! then tried once more on a fresh open). A file replaced on the server by
//! someone else is thus seen by calls made [`FRESH`] or more after the open
//! that preceded the change. The file is closed (`kXR_close`, on a task)
//! when the last call or stream using it ends after that; dropped without
//! a tokio runtime it is left to the server, which closes it with the
//! connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use xroot_cache::{CacheHandle, OriginError, RemoteOrigin};
use xroot_client::{Error as ClientError, File};
use xroot_proto::response::StatInfo;
use xroot_server::{File as XrdFile, FsError};

/// How long after its open a handle serves new calls.
pub(crate) const FRESH: Duration = Duration::from_secs(5);

/// At most this many handles are kept; past it the oldest are let go.
const MAX_KEPT: usize = 64;

/// An open file: directly at the server, or through the store's cache
/// directory. Closed (on a task) when the last of its users drops it.
pub(crate) struct OpenFile(Option<Opened>);

enum Opened {
    Direct(Box<File>),
    /// The cache's handle; its origin file is the server's.
    Cached(CacheHandle<RemoteOrigin>),
}

impl std::fmt::Debug for OpenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.0 {
            Some(Opened::Direct(_)) => "direct",
            Some(Opened::Cached(_)) => "cached",
            None => "closed",
        };
        f.debug_tuple("OpenFile").field(&kind).finish()
    }
}

impl OpenFile {
    /// `file`, opened at the server.
    pub(crate) fn direct(file: File) -> Arc<OpenFile> {
        Arc::new(OpenFile(Some(Opened::Direct(Box::new(file)))))
    }

    /// `handle`, opened through the cache.
    pub(crate) fn cached(handle: CacheHandle<RemoteOrigin>) -> Arc<OpenFile> {
        Arc::new(OpenFile(Some(Opened::Cached(handle))))
    }

    fn opened(&self) -> &Opened {
        self.0
            .as_ref()
            .expect("an OpenFile holds its file until dropped")
    }

    /// The file at the server (for a cached one, its origin file, opened
    /// now if the cache opened the file on trust and needed no server yet).
    ///
    /// # Errors
    /// For a cached file opened on trust: the server's open error, or
    /// `kXR_IOError` when the file changed at the server since it was
    /// cached.
    pub(crate) async fn server_file(&self) -> Result<&File, ClientError> {
        match self.opened() {
            Opened::Direct(f) => Ok(f),
            Opened::Cached(h) => h.origin().await.map_err(origin_error),
        }
    }

    /// The stat the server returned at open (for a cached file, the one the
    /// cache holds: at its open, or when the file was cached if it was
    /// opened on trust), else a `kXR_stat`.
    ///
    /// # Errors
    /// The server's.
    pub(crate) async fn stat(&self) -> Result<StatInfo, ClientError> {
        let file = match self.opened() {
            Opened::Cached(h) => return XrdFile::stat(h).await.map_err(fs_error),
            Opened::Direct(f) => f,
        };
        match file.cached_stat() {
            Some(s) => Ok(s),
            None => file.stat().await,
        }
    }

    /// Up to `len` bytes at `offset` (fewer only at the end): from the
    /// cache when there is one, falling back to the server when the cache
    /// fails.
    ///
    /// # Errors
    /// The server's.
    pub(crate) async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes, ClientError> {
        if let Opened::Cached(h) = self.opened() {
            match XrdFile::read_at(h, offset, len).await {
                Ok(data) => return Ok(data),
                Err(e) => tracing::debug!("cache read at {offset}: {e}; reading the server's"),
            }
        }
        self.server_file().await?.read_at(offset, len).await
    }

    /// Asks the server now for what its vector reads need (its limits,
    /// `kXR_Qconfig`, once per file), so that a vector read to come does
    /// not wait a round trip for it. Nothing for a file opened through the
    /// cache; an error is left to the read that needs the answer.
    pub(crate) async fn warm(&self) {
        if let Opened::Direct(f) = self.opened() {
            if let Err(e) = f.read_support().await {
                tracing::debug!("{}: kXR_Qconfig: {e}", f.url());
            }
        }
    }

    /// Each `(offset, len)` whole, as [`File::readv`] reads them (one
    /// vector read per 1024 elements or 2,097,136 bytes an element): from
    /// the cache when there is one (one server request per vector read for
    /// the blocks it lacks), falling back to the server when it fails.
    ///
    /// # Errors
    /// The server's.
    pub(crate) async fn readv(&self, extents: &[(u64, usize)]) -> Result<Vec<Bytes>, ClientError> {
        if let Opened::Cached(h) = self.opened() {
            match XrdFile::readv(h, extents.to_vec()).await {
                Ok(data) => return Ok(data),
                Err(e) => tracing::debug!("cache vector read: {e}; reading the server's"),
            }
        }
        self.server_file().await?.readv(extents).await
    }
}

/// The client error of a cache's failure to reach the server: the client's
/// own where it has one, else a `kXR_error` of the code the cache gives it.
fn origin_error(e: OriginError) -> ClientError {
    match e {
        OriginError::Client { source, .. } => source,
        other => fs_error(FsError::from(&other)),
    }
}

/// A cache's [`FsError`] as the `kXR_error` a server would send.
fn fs_error(e: FsError) -> ClientError {
    match e {
        FsError::Error { code, message } => ClientError::Server { code, message },
        other => ClientError::Server {
            code: xroot_proto::ErrorCode::SERVER_ERROR,
            message: other.to_string(),
        },
    }
}

impl OpenFile {
    /// Closes the file now, when `file` is its last user (else the last
    /// one closes it, on a task, as any drop does). A file opened at the
    /// server is closed before this returns: the stock server shares one
    /// open file per path, so a handle left open on a file since replaced
    /// would serve the old file to a new open of the path.
    pub(crate) async fn close_now(file: Arc<OpenFile>) {
        let Ok(mut file) = Arc::try_unwrap(file) else {
            return;
        };
        if let Some(Opened::Direct(f)) = file.0.take() {
            if let Err(e) = f.close().await {
                tracing::debug!("closing {}: {e}", f.url());
            }
        }
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        match self.0.take() {
            // without a runtime the server closes it with the connection
            Some(Opened::Direct(file)) => {
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        if let Err(e) = file.close().await {
                            tracing::debug!("closing {}: {e}", file.url());
                        }
                    });
                }
            }
            // the cache closes its origin file after its last handle
            Some(Opened::Cached(handle)) => drop(handle),
            None => {}
        }
    }
}

/// The open read handles of one store (and its clones), by server path.
#[derive(Debug, Default)]
pub(crate) struct Handles {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    open: HashMap<String, Kept>,
    /// Bumped by every change the store makes to a file: an open begun
    /// before a change is not kept (it may show the old file).
    changes: u64,
}

#[derive(Debug)]
struct Kept {
    file: Arc<OpenFile>,
    opened: Instant,
}

impl Handles {
    /// The kept handle of `path`, if it was opened within [`FRESH`]. Lets
    /// go of the handles that are no longer fresh.
    pub(crate) fn get(&self, path: &str) -> Option<Arc<OpenFile>> {
        let mut table = self.table.lock().unwrap();
        table.prune(Instant::now());
        table.open.get(path).map(|k| k.file.clone())
    }

    /// What [`Handles::keep`] checks: the count of changes so far. Read it
    /// before an open.
    pub(crate) fn changes(&self) -> u64 {
        self.table.lock().unwrap().changes
    }

    /// Keeps `file`, whose open began when [`Handles::changes`] said
    /// `changes`, as the handle of `path` (in place of one another call
    /// opened meanwhile) — unless the store changed a file since. Lets go
    /// of it after [`FRESH`] (on a task; without a runtime at the next
    /// call).
    pub(crate) fn keep(self: &Arc<Self>, path: &str, file: &Arc<OpenFile>, changes: u64) {
        let opened = Instant::now();
        {
            let mut table = self.table.lock().unwrap();
            if table.changes != changes {
                return;
            }
            table.prune(opened);
            let kept = Kept {
                file: file.clone(),
                opened,
            };
            table.open.insert(path.to_string(), kept);
            while table.open.len() > MAX_KEPT {
                let oldest = table
                    .open
                    .iter()
                    .min_by_key(|(_, k)| k.opened)
                    .map(|(p, _)| p.clone());
                match oldest {
                    Some(p) => table.open.remove(&p),
                    None => break,
                };
            }
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (handles, file, path) =
                (Arc::downgrade(self), Arc::downgrade(file), path.to_string());
            rt.spawn(async move {
                tokio::time::sleep(FRESH).await;
                if let (Some(handles), Some(file)) = (handles.upgrade(), file.upgrade()) {
                    handles.forget(&path, &file);
                }
            });
        }
    }

    /// Lets go of the handle of `path` if it is `file`.
    pub(crate) fn forget(&self, path: &str, file: &Arc<OpenFile>) {
        let mut table = self.table.lock().unwrap();
        let ours = table
            .open
            .get(path)
            .is_some_and(|k| Arc::ptr_eq(file, &k.file));
        if ours {
            table.open.remove(path);
        }
    }

    /// The store changed the file at `path` (wrote, renamed or removed
    /// it): lets go of its handle, and no open begun before keeps one.
    /// Returns the handle let go of, for the caller to close.
    pub(crate) fn changed(&self, path: &str) -> Option<Arc<OpenFile>> {
        let mut table = self.table.lock().unwrap();
        table.changes += 1;
        table.open.remove(path).map(|k| k.file)
    }
}

impl Table {
    /// Lets go of the handles opened [`FRESH`] or longer before `now`.
    fn prune(&mut self, now: Instant) {
        self.open
            .retain(|_, k| now.duration_since(k.opened) < FRESH);
    }
}
