//! [`CacheFs`]: the cache as an [`xroot_server::FileSystem`], which makes
//! [`xroot_server::Server`] a caching proxy (the XCache equivalent).
//!
//! Opens are read-only. Every client handle on one path shares one
//! [`CachedFile`] (one origin file, one store entry, one set of fills in
//! flight); the first open asks the origin for the file and its stat, whose
//! size and modification time validate the store entry (a changed origin
//! file resets it). When the last handle goes, the sidecar is written and
//! the origin file closed; an open before that completes shares the file
//! still (so a path never has two store entries at once). Namespace requests (`stat`, `dirlist`, checksum
//! queries) are forwarded to the origin; requests that would change it are
//! refused with `kXR_NotAuthorized`. `kXR_QStats` answers the cache's
//! [`CacheStats`] as text.
//!
//! Its disk: a background task (started with the cache, or at its first
//! open when it was made outside a tokio runtime) checks the file system
//! holding the store every [`interval`](crate::PurgeConfig::interval),
//! purges it between the watermarks of [`CacheConfig::purge`] (on by
//! default: 0.90 and 0.95 of the disk, as the stock XCache), and turns
//! storing back on when a full disk (see [`CachedFile`]) has room again. A
//! disk that fills up, or a file closed while it is full, wakes it at once.
//! A file opened while the disk is too full for its store entry is served
//! from the origin.
//!
//! With a [`trust_window`](CacheConfig::trust_window), a file in the store
//! whose validators the origin confirmed within the window is opened
//! **without asking the origin**: its stat is the one the origin gave then,
//! and the origin file is opened only if a read needs it (a block not
//! cached, a page that failed its crc32c) and checked then, see
//! [`OriginFile`]. Every open that asks the origin
//! confirms the validators again.

mod origin_file;

pub use origin_file::OriginFile;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::OnceCell;
use xroot_proto::response::{ChecksumAnswer, StatInfo};
use xroot_proto::ErrorCode;
use xroot_server::{
    Caller, DirEntry, File, FileRegion, FileSystem, FsError, FsResult, OpenMode, ReadvConcurrency,
};

use crate::file::{CacheConfig, CacheError, CachedFile, FileAccess, Shared};
use crate::origin::{Origin, OriginFs};
use crate::purge::{purge, purge_disk, DiskPurge, PurgeReport, Watermarks};
use crate::stats::{CacheStats, CacheStatsSnapshot};
use crate::store::{confine, is_full, Checked, Entry, Store, Validators};

/// A caching proxy file system: `origin` below, `store` on local disk.
pub struct CacheFs<F: OriginFs> {
    inner: Arc<FsInner<F>>,
}

impl<F: OriginFs> Clone for CacheFs<F> {
    fn clone(&self) -> Self {
        CacheFs {
            inner: self.inner.clone(),
        }
    }
}

struct FsInner<F: OriginFs> {
    origin: Arc<F>,
    store: Arc<Store>,
    shared: Arc<Shared>,
    /// Paths with client handles open (or opening), and files whose last
    /// handle went, until their sidecar is written: an open meanwhile
    /// shares the file (one store entry per path), purge leaves it alone
    /// and [`CacheFs::flush_all`] flushes it.
    open: Mutex<HashMap<String, Arc<Slot<F>>>>,
    /// Whether the disk check runs.
    checking: AtomicBool,
    /// Bumped by every [`CacheFs::evict`]: an open that began before one
    /// does not confirm what it cached (it may have opened the old file).
    evictions: std::sync::atomic::AtomicU64,
    /// Told about each file whose last handle closed.
    on_close: std::sync::OnceLock<CloseHook>,
}

/// What [`CacheFs::on_file_close`] calls.
type CloseHook = Box<dyn Fn(&str, &FileAccess) + Send + Sync>;

/// The cached file of one path and how many client handles use it.
struct Slot<F: OriginFs> {
    file: OnceCell<(CachedFile<OriginFile<F>>, StatInfo)>,
    /// Client handles open or opening; changed only under `FsInner::open`.
    handles: AtomicUsize,
}

impl<F: OriginFs> CacheFs<F> {
    /// A cache of `origin` storing its blocks in `store`, with `config`.
    /// Starts the disk check (see the module's documentation) when called
    /// in a tokio runtime, else at the first open.
    pub fn new(origin: F, store: Store, config: CacheConfig) -> CacheFs<F> {
        let fs = CacheFs {
            inner: Arc::new(FsInner {
                origin: Arc::new(origin),
                store: Arc::new(store),
                shared: Shared::new(config, CacheStats::new()),
                open: Mutex::new(HashMap::new()),
                checking: AtomicBool::new(false),
                evictions: std::sync::atomic::AtomicU64::new(0),
                on_close: std::sync::OnceLock::new(),
            }),
        };
        fs.start_disk_check();
        fs
    }

    /// Calls `hook` with the path and what its readers were served
    /// ([`FileAccess`]) each time the last client handle of a file closes
    /// (the file detached: the stock XCache's `file_close` record), after
    /// its sidecar is written; on a task, so it must not block. Set once;
    /// `false` when a hook was set before.
    pub fn on_file_close(&self, hook: impl Fn(&str, &FileAccess) + Send + Sync + 'static) -> bool {
        self.inner.on_close.set(Box::new(hook)).is_ok()
    }

    /// The cache's counters now, with the RAM its reads hold and whether it
    /// stores.
    pub fn stats(&self) -> CacheStatsSnapshot {
        let shared = &self.inner.shared;
        let mut snapshot = shared.stats.snapshot();
        snapshot.ram_held = shared.ram_held();
        snapshot.disk_full = !shared.storing();
        snapshot
    }

    /// Checks the file system holding the store now, as the background
    /// check does: with purge [`enabled`](crate::PurgeConfig::enabled),
    /// removes least recently used files no client has open while its
    /// usage is above the high watermark, down to the low one
    /// ([`purge_disk`]); then, if storing stopped because the disk filled
    /// up and usage is now at most the high watermark, stores again.
    ///
    /// Errors: those of statvfs, reading the store's directories or
    /// removing a file.
    pub async fn check_disk(&self) -> std::io::Result<DiskPurge> {
        self.check(true).await
    }

    /// [`CacheFs::check_disk`]; when not `settled` (a check woken by a
    /// full disk or a close), storing resumes only if files were removed,
    /// so that a disk that is full without being above the watermark (a
    /// quota) is not tried again at every wake-up but once per interval.
    async fn check(&self, settled: bool) -> std::io::Result<DiskPurge> {
        let in_use: HashSet<String> = self.inner.open.lock().unwrap().keys().cloned().collect();
        let store = self.inner.store.clone();
        let purge = self.inner.shared.config.purge.clone();
        let report = tokio::task::spawn_blocking(move || {
            purge_disk(&store, purge.low, purge.high, purge.enabled, |p| {
                in_use.contains(p)
            })
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))?;
        if report.used_after <= report.high && (settled || !report.removed.is_empty()) {
            self.inner.shared.resume_storing();
        }
        Ok(report)
    }

    /// Starts the background disk check, once, if there is a runtime to
    /// run it on. It ends when the cache is dropped.
    fn start_disk_check(&self) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.inner.checking.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak: Weak<FsInner<F>> = Arc::downgrade(&self.inner);
        let shared = self.inner.shared.clone();
        rt.spawn(async move {
            let interval = shared.config.purge.interval.max(Duration::from_millis(1));
            let mut settled = true;
            loop {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                match (CacheFs { inner }).check(settled).await {
                    Ok(r) if !r.removed.is_empty() => tracing::info!(
                        used_before = r.used_before,
                        used_after = r.used_after,
                        files = r.removed.len(),
                        "purged"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!("cache disk check failed: {e}"),
                }
                settled = tokio::select! {
                    _ = tokio::time::sleep(interval) => true,
                    _ = shared.wake.notified() => false,
                };
            }
        });
    }

    /// Writes the sidecar of every file open now, or whose last handle
    /// went and whose sidecar is not written yet (for a graceful stop: what
    /// was cached is then on disk).
    ///
    /// Errors: the first sidecar write that failed.
    pub async fn flush_all(&self) -> std::io::Result<()> {
        let files: Vec<_> = {
            let open = self.inner.open.lock().unwrap();
            open.values()
                .filter_map(|s| s.file.get().map(|(f, _)| f.clone()))
                .collect()
        };
        for f in files {
            f.flush().await?;
        }
        Ok(())
    }

    /// Removes least recently used whole files while the store uses more
    /// than `marks.high` bytes, down to `marks.low`, never a file open now.
    ///
    /// Errors: the store's I/O errors.
    pub async fn purge(&self, marks: Watermarks) -> std::io::Result<PurgeReport> {
        let in_use: HashSet<String> = self.inner.open.lock().unwrap().keys().cloned().collect();
        let store = self.inner.store.clone();
        tokio::task::spawn_blocking(move || purge(&store, marks, |p| in_use.contains(p)))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
    }

    /// Stops sharing the cached file of `path` with later opens, for a
    /// caller that changed the file at the origin (wrote, renamed or
    /// removed it): the next open opens the origin afresh and checks the
    /// entry against the new stat. Handles open now keep reading what they
    /// opened.
    pub fn forget(&self, path: &str) {
        self.inner.open.lock().unwrap().remove(path);
    }

    /// [`CacheFs::forget`], and removes what the store holds of `path`
    /// ([`Store::remove`]), so that no open (in this process or another
    /// sharing the directory) serves or trusts the old file. A failure to
    /// remove is logged; the next open that asks the origin resets the
    /// entry anyway.
    pub async fn evict(&self, path: &str) {
        self.inner.evictions.fetch_add(1, Ordering::SeqCst);
        self.forget(path);
        let (store, key) = (self.inner.store.clone(), path.to_string());
        let removed = tokio::task::spawn_blocking(move || store.remove(&key)).await;
        if let Ok(Err(e)) = removed {
            tracing::warn!(path, "removing a cache entry: {e}");
        }
        // an open on trust meanwhile may have shared the old entry
        self.forget(path);
    }

    /// Opens the cached file of `path`: on trust when the store holds it,
    /// confirmed within the trust window; else the origin file, its
    /// stat and the store entry they validate (and confirm). A path the
    /// store can never hold (a sidecar's name) is refused before the origin
    /// is asked; when the entry cannot be made (the cache directory refuses
    /// it, the file is too large), the origin file is closed before the
    /// error is returned.
    async fn open_cached(&self, path: &str) -> FsResult<(CachedFile<OriginFile<F>>, StatInfo)> {
        self.start_disk_check();
        let inner = &self.inner;
        confine(path)?;
        if let Some(opened) = self.open_trusted(path).await {
            return Ok(opened);
        }
        let evictions = inner.evictions.load(Ordering::SeqCst);
        let origin = Unclosed(Some(inner.origin.open(path).await?));
        match self.entry(origin.get(), path).await {
            Ok((entry, stat)) => {
                let evicted = inner.evictions.load(Ordering::SeqCst) != evictions;
                if let (Some(entry), false) = (&entry, evicted) {
                    entry.set_checked(Checked::now(&stat));
                }
                let origin = OriginFile::open(origin.keep());
                let file = CachedFile::new(origin, entry, stat.size, inner.shared.clone());
                Ok((file, stat))
            }
            Err(e) => {
                origin.close().await;
                Err(e)
            }
        }
    }

    /// The cached file of `path` opened on trust, if the trust window is
    /// set and the store holds the file, confirmed within it
    /// ([`Store::trusted`]); `None` otherwise (a store error is logged).
    async fn open_trusted(&self, path: &str) -> Option<(CachedFile<OriginFile<F>>, StatInfo)> {
        let inner = &self.inner;
        let window = inner.shared.config.trust_window;
        if window.is_zero() {
            return None;
        }
        let (store, key) = (inner.store.clone(), path.to_string());
        let bs = inner.shared.config.geometry.block_size;
        let found = tokio::task::spawn_blocking(move || store.trusted(&key, bs, window))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
        let (entry, stat) = match found {
            Ok(Some(found)) => found,
            Ok(None) => return None,
            Err(e) => {
                tracing::debug!(path, "no trusted open: {e}");
                return None;
            }
        };
        inner.shared.stats.add_trusted_open();
        let origin = OriginFile::later(
            inner.origin.clone(),
            path,
            stat.clone(),
            inner.store.clone(),
            bs,
        );
        let file = CachedFile::new(origin, Some(entry), stat.size, inner.shared.clone());
        Some((file, stat))
    }

    /// The stat of `path` as the cache would open it on trust (see
    /// [`CacheConfig::trust_window`]): the store holds the file and the
    /// origin confirmed it within the window. `None` otherwise,
    /// and always without a trust window; the origin is never asked.
    pub async fn trusted_stat(&self, path: &str) -> Option<StatInfo> {
        let config = &self.inner.shared.config;
        let (window, bs) = (config.trust_window, config.geometry.block_size);
        if window.is_zero() {
            return None;
        }
        let (store, key) = (self.inner.store.clone(), path.to_string());
        tokio::task::spawn_blocking(move || store.trusted_stat(&key, bs, window))
            .await
            .ok()?
            .ok()?
    }

    /// The stat of `origin` (the file of `path`) and the store entry it
    /// validates; no entry when the disk is too full to make one (the file
    /// is then served from the origin).
    async fn entry(&self, origin: &F::File, path: &str) -> FsResult<(Option<Entry>, StatInfo)> {
        let stat = origin.stat().await?;
        let validators = Validators::from(&stat);
        let store = self.inner.store.clone();
        let block_size = self.inner.shared.config.geometry.block_size;
        let key = path.to_string();
        let entry = tokio::task::spawn_blocking(move || store.entry(&key, validators, block_size))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
        match entry {
            Ok(entry) => Ok((Some(entry), stat)),
            Err(e) if is_full(&e) => {
                tracing::debug!(path, "no store entry on a full disk: {e}");
                self.inner.shared.store_failed(&e);
                Ok((None, stat))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Drops one handle of `path`. After the last one, on a task, the
    /// sidecar is written, and then, unless a handle was opened meanwhile
    /// (it shares the file; its own release ends it), the path leaves
    /// `open` and the origin file is closed.
    fn release(inner: &Arc<FsInner<F>>, path: &str, slot: &Arc<Slot<F>>) {
        let (file, rt) = {
            let mut open = inner.open.lock().unwrap();
            if slot.handles.fetch_sub(1, Ordering::SeqCst) > 1 {
                return;
            }
            let (Some((file, _)), Ok(rt)) =
                (slot.file.get(), tokio::runtime::Handle::try_current())
            else {
                // nothing was opened (the open failed or was abandoned), or
                // there is no runtime left to write the sidecar on
                remove_slot(&mut open, path, slot);
                return;
            };
            (file.clone(), rt)
        };
        let (inner, path, slot) = (inner.clone(), path.to_string(), slot.clone());
        rt.spawn(async move {
            if let Err(e) = file.flush().await {
                tracing::warn!("cache sidecar flush at close failed: {e}");
            }
            let last = {
                let mut open = inner.open.lock().unwrap();
                let idle = slot.handles.load(Ordering::SeqCst) == 0;
                idle && remove_slot(&mut open, &path, &slot)
            };
            if last {
                if let Some(hook) = inner.on_close.get() {
                    hook(&path, &file.access());
                }
                close_origin(file.origin()).await;
                // its data file closed, what a purge removes of it is freed
                drop(file);
                if !inner.shared.storing() {
                    // a file the disk check may remove now
                    inner.shared.wake.notify_one();
                }
            }
        });
    }
}

/// Takes `slot` out of `open` if it is the one of `path`; whether it was.
fn remove_slot<F: OriginFs>(
    open: &mut HashMap<String, Arc<Slot<F>>>,
    path: &str,
    slot: &Arc<Slot<F>>,
) -> bool {
    let ours = open.get(path).is_some_and(|s| Arc::ptr_eq(s, slot));
    if ours {
        open.remove(path);
    }
    ours
}

/// An origin file opened for a cached file not made yet: closed if the
/// making fails, or on a task if the open is abandoned (dropped), so that
/// no origin file stays open without a cached file to close it.
struct Unclosed<O: Origin>(Option<O>);

impl<O: Origin> Unclosed<O> {
    fn get(&self) -> &O {
        self.0
            .as_ref()
            .expect("an Unclosed holds its file until taken")
    }

    /// The file, kept open.
    fn keep(mut self) -> O {
        self.0
            .take()
            .expect("an Unclosed holds its file until taken")
    }

    /// Closes the file now.
    async fn close(mut self) {
        if let Some(file) = self.0.take() {
            close_origin(&file).await;
        }
    }
}

impl<O: Origin> Drop for Unclosed<O> {
    fn drop(&mut self) {
        if let (Some(file), Ok(rt)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(async move { close_origin(&file).await });
        }
    }
}

/// Closes an origin file (a failure is only logged: the file is done with).
async fn close_origin<O: Origin>(file: &O) {
    if let Err(e) = file.close().await {
        tracing::debug!("closing the origin file: {e}");
    }
}

/// A read-only request: an open for writing, or a namespace change.
fn read_only(what: &str) -> FsError {
    FsError::new(
        ErrorCode::NOT_AUTHORIZED,
        format!("{what} is not allowed: this is a read-only cache"),
    )
}

impl From<CacheError> for FsError {
    fn from(e: CacheError) -> FsError {
        match e {
            CacheError::PastEof { .. } => FsError::new(ErrorCode::FS_ERROR, e.to_string()),
            // shared by every reader that waited for the failed fill: each
            // gets the same code
            CacheError::Origin(o) => FsError::from(&*o),
            CacheError::Store(_) | CacheError::Exhausted(_) => {
                FsError::new(ErrorCode::IO_ERROR, e.to_string())
            }
        }
    }
}

/// A client's handle on a cached file.
pub struct CacheHandle<F: OriginFs> {
    file: CachedFile<OriginFile<F>>,
    stat: StatInfo,
    claim: Claim<F>,
}

/// One client handle counted on the slot of `path`, from the start of its
/// open: dropping it (the handle closed, the open failed or was abandoned)
/// releases it.
struct Claim<F: OriginFs> {
    path: String,
    slot: Arc<Slot<F>>,
    fs: Arc<FsInner<F>>,
}

impl<F: OriginFs> Drop for Claim<F> {
    fn drop(&mut self) {
        CacheFs::release(&self.fs, &self.path, &self.slot);
    }
}

impl<F: OriginFs> CacheHandle<F> {
    /// The origin file below (shared by every handle of the path), for a
    /// caller that reads around the cache when a cached read fails; opened
    /// now if the file was opened on trust and no read needed it yet.
    ///
    /// Errors: as [`OriginFile::file`].
    pub async fn origin(&self) -> Result<&F::File, crate::OriginError> {
        self.file.origin().file().await
    }

    /// Whether the file was opened on trust and the origin has not been
    /// asked for it since (see [`CacheConfig::trust_window`]).
    pub fn on_trust(&self) -> bool {
        self.file.origin().get().is_none()
    }
}

impl<F: OriginFs> File for CacheHandle<F> {
    async fn read_at(&self, offset: u64, len: usize) -> FsResult<Bytes> {
        Ok(self.file.read_at(offset, len).await?)
    }

    /// The blocks' bytes straight from the store's data file when every
    /// block of the range is cached and checked ([`CachedFile::region`]):
    /// a warm plain read costs what `serve` pays for a local file.
    fn region(&self, offset: u64, len: usize) -> FsResult<Option<FileRegion>> {
        Ok(self
            .file
            .region(offset, len)
            .map(|(file, offset, len)| FileRegion { file, offset, len }))
    }

    async fn write_at(&self, _offset: u64, _data: Bytes) -> FsResult<()> {
        Err(read_only("writing"))
    }

    async fn stat(&self) -> FsResult<StatInfo> {
        Ok(self.stat.clone())
    }

    async fn readv(&self, extents: Vec<(u64, usize)>) -> FsResult<Vec<Bytes>> {
        Ok(self.file.readv(&extents).await?)
    }

    fn readv_concurrency(&self) -> ReadvConcurrency {
        ReadvConcurrency::Parallel(self.claim.fs.shared.config.readv_concurrency.max(1))
    }
}

impl<F: OriginFs> CacheFs<F> {
    /// One client handle counted on the slot of `path` (made if absent).
    fn claim(&self, path: &str) -> Claim<F> {
        let mut open = self.inner.open.lock().unwrap();
        let slot = open
            .entry(path.to_string())
            .or_insert_with(|| {
                Arc::new(Slot {
                    file: OnceCell::new(),
                    handles: AtomicUsize::new(0),
                })
            })
            .clone();
        slot.handles.fetch_add(1, Ordering::SeqCst);
        Claim {
            path: path.to_string(),
            slot,
            fs: self.inner.clone(),
        }
    }
}

impl<F: OriginFs> FileSystem for CacheFs<F> {
    type File = CacheHandle<F>;

    async fn open(
        &self,
        _caller: &Caller,
        path: &str,
        mode: OpenMode,
        _cgi: &str,
    ) -> FsResult<CacheHandle<F>> {
        if mode.write || mode.create_new || mode.truncate || mode.append {
            return Err(read_only("opening for writing"));
        }
        // a file found changed at the origin is not shared with new opens:
        // its slot is let go and the file opened afresh (once)
        let mut again = true;
        loop {
            let claim = self.claim(path);
            let (file, stat) = claim
                .slot
                .file
                .get_or_try_init(|| self.open_cached(path))
                .await?
                .clone();
            if !file.origin().is_changed() || !again {
                file.opened();
                return Ok(CacheHandle { file, stat, claim });
            }
            remove_slot(&mut self.inner.open.lock().unwrap(), path, &claim.slot);
            again = false;
        }
    }

    async fn stat(&self, _caller: &Caller, path: &str) -> FsResult<StatInfo> {
        Ok(self.inner.origin.stat(path).await?)
    }

    async fn dirlist(
        &self,
        _caller: &Caller,
        path: &str,
        with_stat: bool,
    ) -> FsResult<Vec<DirEntry>> {
        Ok(self.inner.origin.dirlist(path, with_stat).await?)
    }

    async fn mkdir(
        &self,
        _caller: &Caller,
        _path: &str,
        _mode: u32,
        _parents: bool,
    ) -> FsResult<()> {
        Err(read_only("mkdir"))
    }

    async fn rm(&self, _caller: &Caller, _path: &str) -> FsResult<()> {
        Err(read_only("rm"))
    }

    async fn rmdir(&self, _caller: &Caller, _path: &str) -> FsResult<()> {
        Err(read_only("rmdir"))
    }

    async fn mv(&self, _caller: &Caller, _from: &str, _to: &str) -> FsResult<()> {
        Err(read_only("mv"))
    }

    async fn chmod(&self, _caller: &Caller, _path: &str, _mode: u32) -> FsResult<()> {
        Err(read_only("chmod"))
    }

    async fn truncate(&self, _caller: &Caller, _path: &str, _size: u64) -> FsResult<()> {
        Err(read_only("truncate"))
    }

    async fn checksum(
        &self,
        _caller: &Caller,
        path: &str,
        alg: Option<&str>,
    ) -> FsResult<ChecksumAnswer> {
        Ok(self.inner.origin.checksum(path, alg).await?)
    }

    async fn stats_report(&self, _caller: &Caller, _what: &str) -> FsResult<String> {
        Ok(self.stats().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::{LocalOrigin, OriginError};

    /// A failed fill's error is shared by every reader that waited for it;
    /// each one's client gets the code of the failure (here `kXR_IOError`
    /// for a short answer), not a different one for the readers that did
    /// not hold the last reference.
    #[test]
    fn an_origin_failure_gives_one_code_to_every_reader_sharing_it() {
        let failure = Arc::new(OriginError::Short {
            offset: 4096,
            expected: 8192,
            got: 100,
        });
        let waiter = CacheError::Origin(failure.clone());
        for e in [CacheError::Origin(failure), waiter] {
            match FsError::from(e) {
                FsError::Error { code, .. } => assert_eq!(code, ErrorCode::IO_ERROR),
                other => panic!("{other:?}"),
            }
        }
    }

    /// A graceful stop right after the last handle of a file went (a
    /// client that disconnected during the shutdown) keeps what was cached:
    /// the file stays registered until its close has written the sidecar,
    /// so `flush_all` writes it. On a current-thread runtime the close's
    /// task has not run when `flush_all` is called, so without that the
    /// sidecar would be missing.
    #[tokio::test(flavor = "current_thread")]
    async fn flush_all_waits_for_the_sidecars_of_files_just_closed() {
        let origin = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(origin.path().join("f.bin"), &data).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let fs = cache_fs(origin.path(), cache.path(), CacheConfig::default());
        let h = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        assert!(h.read_at(0, 10_000).await.unwrap() == data);
        let stat = h.stat().await.unwrap();
        drop(h);
        fs.flush_all().await.unwrap();
        let entry = Store::open(cache.path())
            .unwrap()
            .entry("/f.bin", Validators::from(&stat), 4096)
            .unwrap();
        assert!((0..3).all(|b| entry.is_cached(b)), "blocks lost");
    }

    /// A cache of the directory `origin` storing in `cache`.
    fn cache_fs(
        origin: &std::path::Path,
        cache: &std::path::Path,
        config: CacheConfig,
    ) -> CacheFs<LocalOrigin> {
        CacheFs::new(
            LocalOrigin::new(origin).unwrap(),
            Store::open(cache).unwrap(),
            config,
        )
    }

    fn trusting(window: Duration) -> CacheConfig {
        CacheConfig {
            trust_window: window,
            ..CacheConfig::default()
        }
    }

    /// Reads `/f.bin` whole through a new cache of `origin` in `cache` and
    /// closes it, so that its sidecar is written.
    async fn fill(
        origin: &std::path::Path,
        cache: &std::path::Path,
        config: CacheConfig,
    ) -> Vec<u8> {
        let fs = cache_fs(origin, cache, config);
        let h = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        assert!(!h.on_trust());
        let data = h.read_at(0, 1 << 20).await.unwrap().to_vec();
        drop(h);
        fs.flush_all().await.unwrap();
        data
    }

    /// A file held whole and confirmed within the trust window opens and
    /// reads without the origin: here the origin's file is gone. Its stat
    /// is the one the origin gave. Without a window, the open asks the
    /// origin (and fails).
    #[tokio::test]
    async fn a_trusted_file_is_served_without_the_origin() {
        let origin = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(origin.path().join("f.bin"), &data).unwrap();
        let stat = LocalOrigin::new(origin.path())
            .unwrap()
            .stat("/f.bin")
            .await
            .unwrap();
        let cache = tempfile::tempdir().unwrap();
        let hour = Duration::from_secs(3600);
        assert_eq!(
            fill(origin.path(), cache.path(), trusting(hour)).await,
            data
        );
        std::fs::remove_file(origin.path().join("f.bin")).unwrap();

        let fs = cache_fs(origin.path(), cache.path(), trusting(hour));
        assert_eq!(
            fs.trusted_stat("/f.bin").await,
            Some(Checked::now(&stat).stat((&stat).into()))
        );
        let h = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        assert!(h.on_trust());
        assert_eq!(h.stat().await.unwrap().size, stat.size);
        assert_eq!(h.stat().await.unwrap().mtime, stat.mtime);
        assert_eq!(h.read_at(0, 1 << 20).await.unwrap(), data);
        assert_eq!(
            h.readv(vec![(5, 10), (19_990, 10)]).await.unwrap()[1],
            data[19_990..]
        );
        assert!(h.on_trust(), "the origin was opened");
        assert_eq!(fs.stats().trusted_opens, 1);
        drop(h);

        // no window: the open asks the origin, which no longer has the file
        let fs = cache_fs(origin.path(), cache.path(), CacheConfig::default());
        assert_eq!(fs.trusted_stat("/f.bin").await, None);
        let open = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await;
        assert!(open.is_err());
    }

    /// A file cached in part opens on trust too: its cached blocks are
    /// served without the origin, which is opened at the first block
    /// missing. One confirmed longer ago than the window asks the origin.
    #[tokio::test]
    async fn a_part_cached_file_opens_on_trust_and_a_confirmation_expires() {
        let origin = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 3 % 251) as u8).collect();
        std::fs::write(origin.path().join("f.bin"), &data).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let hour = trusting(Duration::from_secs(3600));
        let fs = cache_fs(origin.path(), cache.path(), hour.clone());
        let h = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        h.read_at(0, 4096).await.unwrap();
        drop(h);
        fs.flush_all().await.unwrap();
        let fs = cache_fs(origin.path(), cache.path(), hour.clone());
        let h = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        assert!(h.on_trust());
        assert_eq!(h.read_at(100, 1000).await.unwrap(), data[100..1100]);
        assert!(h.on_trust(), "the origin opened for a cached block");
        assert_eq!(h.read_at(0, 1 << 20).await.unwrap(), data);
        assert!(!h.on_trust(), "the origin not opened for missing blocks");
        drop(h);
        fs.flush_all().await.unwrap();

        std::thread::sleep(Duration::from_millis(20));
        let short = cache_fs(
            origin.path(),
            cache.path(),
            trusting(Duration::from_millis(10)),
        );
        assert_eq!(
            short.trusted_stat("/f.bin").await,
            None,
            "confirmed too long ago"
        );
        let h = short
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        assert!(!h.on_trust());
        assert_eq!(short.stats().trusted_opens, 0);
    }

    /// A trusted file whose cached page went bad is read from the origin:
    /// opened then, and used while its stat matches; one that changed at
    /// the origin is not mixed with the cached blocks: the read fails and
    /// the entry is reset, and the next open reads the new file.
    #[tokio::test]
    async fn a_cache_fault_on_trust_opens_the_origin_and_checks_it() {
        let origin = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 5 % 251) as u8).collect();
        let path = origin.path().join("f.bin");
        std::fs::write(&path, &data).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let hour = trusting(Duration::from_secs(3600));
        fill(origin.path(), cache.path(), hour.clone()).await;
        let spoil = |at: u64| {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(cache.path().join("f.bin"))
                .unwrap();
            f.write_all_at(b"XXXX", at).unwrap();
        };
        spoil(4096);
        let fs = cache_fs(origin.path(), cache.path(), hour.clone());
        let h = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        assert!(h.on_trust());
        assert_eq!(h.read_at(0, 1 << 20).await.unwrap(), data);
        assert!(!h.on_trust(), "the origin was not opened for the bad page");
        drop(h);
        fs.flush_all().await.unwrap();

        // the origin's file changes (another size), a cached page goes bad
        let new: Vec<u8> = (0..30_000u32).map(|i| (i * 11 % 251) as u8).collect();
        std::fs::write(&path, &new).unwrap();
        spoil(8192);
        let fs = cache_fs(origin.path(), cache.path(), hour);
        let h = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        assert!(h.on_trust());
        assert_eq!(
            h.read_at(0, 4096).await.unwrap(),
            data[..4096],
            "a good page"
        );
        let err = h.read_at(8192, 4096).await.unwrap_err();
        assert!(err.to_string().contains("changed at the origin"), "{err}");
        let err = h.read_at(12288, 4096).await.unwrap_err();
        assert!(err.to_string().contains("changed at the origin"), "{err}");
        // a new open, the old handle still open, reads the new file
        let h2 = fs
            .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
            .await
            .unwrap();
        assert!(!h2.on_trust());
        assert_eq!(h2.read_at(0, 1 << 20).await.unwrap(), new);
        drop((h, h2));
        fs.flush_all().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let trusted = fs
            .trusted_stat("/f.bin")
            .await
            .expect("the new file confirmed");
        assert_eq!(trusted.size, new.len() as u64);
    }

    /// `evict` removes the entry from disk: no later open trusts it.
    #[tokio::test]
    async fn evict_removes_what_the_store_holds() {
        let origin = tempfile::tempdir().unwrap();
        std::fs::write(origin.path().join("f.bin"), vec![7u8; 9000]).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let hour = trusting(Duration::from_secs(3600));
        fill(origin.path(), cache.path(), hour.clone()).await;
        let fs = cache_fs(origin.path(), cache.path(), hour);
        assert!(fs.trusted_stat("/f.bin").await.is_some());
        fs.evict("/f.bin").await;
        assert_eq!(fs.trusted_stat("/f.bin").await, None);
        for name in [
            "f.bin",
            "f.bin.cinfo",
            "f.bin.cinfo.tmp",
            "f.bin.cinfo.live",
        ] {
            assert!(!cache.path().join(name).exists(), "{name}");
        }
    }

    /// Two caches on one directory (two entries with their own locks, as
    /// two processes have) reading the same file at once: each block is
    /// fetched from the origin once in all, and both read the right bytes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn two_caches_on_one_directory_fetch_each_block_once() {
        let origin = tempfile::tempdir().unwrap();
        let size = 4 << 20;
        let data: Vec<u8> = (0..size as u32).map(|i| (i * 13 % 251) as u8).collect();
        std::fs::write(origin.path().join("f.bin"), &data).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let caches: Vec<_> = (0..2)
            .map(|_| cache_fs(origin.path(), cache.path(), CacheConfig::default()))
            .collect();
        let data = Arc::new(data);
        let mut handles = Vec::new();
        for fs in &caches {
            let h = fs
                .open(&Caller::local("test"), "/f.bin", OpenMode::default(), "")
                .await
                .unwrap();
            handles.push(Arc::new(h));
        }
        let mut readers = Vec::new();
        for h in &handles {
            // four readers per cache, each over the whole file in 64 kB reads
            for r in 0..4u64 {
                let (h, data) = (h.clone(), data.clone());
                readers.push(tokio::spawn(async move {
                    for k in 0..64u64 {
                        let offset = ((k + 16 * r) % 64) * 65536;
                        let got = h.read_at(offset, 65536).await.unwrap();
                        assert!(got == data[offset as usize..][..65536], "at {offset}");
                    }
                }));
            }
        }
        for r in readers {
            r.await.unwrap();
        }
        let fetched: u64 = caches.iter().map(|c| c.stats().bytes_fetched).sum();
        let from_peers: u64 = caches.iter().map(|c| c.stats().bytes_from_peers).sum();
        assert_eq!(
            fetched, size as u64,
            "fetched twice; {from_peers} bytes from the other"
        );
    }
}
