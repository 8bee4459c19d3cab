//! One cached file: the block state of an origin file, fills from the
//! origin in block runs, and reads served from the disk store.
//!
//! A client read or vector read is planned ([`plan`]) against the blocks'
//! states: blocks already cached are served from the [`Entry`], blocks
//! another reader is fetching are awaited (single flight), and the missing
//! ones become runs fetched by ONE origin request per planned request —
//! normally one for the whole client vector read. Each origin request runs
//! on its own task, so a client that goes away mid-fill does not strand the
//! readers waiting for the same blocks. A fill hands the data it fetched to
//! the reader that started it and, at once, to every reader waiting for its
//! blocks (a read-ahead's waiters included); then it writes the data to the
//! store, and only then are its blocks marked cached and cleared from the
//! flights (a read planned meanwhile still waits for the fill, and gets its
//! data at once). A read answers the blocks its own fills and the fills it
//! waited for fetched from their data as it came (a slice where an extent
//! lies in one run: no copy) and every other byte from the store, which
//! checks its page crc32c (a page that fails is fetched again). A plain read of blocks this process wrote or already
//! checked is handed to the server as a region of the store's data file
//! ([`CachedFile::region`]), which sends it with `sendfile(2)` unread.
//! Sequential readers get read-ahead ([`CacheConfig::prefetch_blocks`]).
//!
//! Memory: [`CacheConfig::ram`] bounds, across all files of a cache, the
//! bytes the cache holds for reads: fetched data until it is stored, and
//! answers until the server drops them (sent). A read reserves its share
//! before it plans — room for what it may fetch and for each extent it may
//! answer as a copy (read from disk, or joined from several runs) — and
//! gives back what its plan does not need; its fills hold the share until
//! their data is stored, its answers until they are dropped. The data a
//! fill hands to the readers waiting for it holds the fill's share (a
//! read-ahead's too) until the last slice of it is dropped; a reader
//! answered with such a slice gives back what it had reserved for a copy
//! of that extent, so those bytes count once. A slow client
//! is thus back-pressure on new reads. A prefetch uses only room that is
//! free (it never waits), and a read larger than the whole budget takes all
//! of it.
//!
//! A full disk: when a store write fails because the cache's disk is full
//! (or when the store entry could not even be made), the cache stops
//! storing: reads keep being answered, blocks not cached are fetched from
//! the origin by each read for itself (no single flight: there is nothing
//! to wait for) and not stored, cached blocks are still served from disk,
//! and nothing is prefetched. The disk check of [`CacheFs`](crate::CacheFs)
//! (purge) turns storing back on once the disk has room.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::sync::{oneshot, watch, Notify, OwnedSemaphorePermit, Semaphore};
use xroot_proto::page::PAGE_SIZE;

use crate::origin::{Origin, OriginError};
use crate::plan::{fetch_bound, plan, BlockState, Geometry, Plan, Run};
use crate::purge::PurgeConfig;
use crate::stats::CacheStats;
use crate::store::{is_full, Claim, Entry, StoreError};

/// How many times a read re-plans when a fill it waited for ended without
/// storing its blocks (not for an origin error, which is the answer) or a
/// cached page failed its checksum.
const ATTEMPTS: usize = 3;

/// The longest a fill waits for blocks another process sharing the cache
/// directory is fetching, before fetching them itself.
const PEER_WAIT: Duration = Duration::from_secs(30);

/// Entries of the flights table kept allocated when nothing is in flight.
const SMALL_TABLE: usize = 4096;

/// RAM reserved per extent answered as a copy, over its length: a read
/// from the store covers whole pages, up to two pages more than asked.
const COPY_SLACK: u64 = 2 * PAGE_SIZE as u64;

/// A cache's tunables. Sizes in bytes.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// Block size, run cap (`io_size`) and gap merging (`io_gap`).
    pub geometry: Geometry,
    /// Bytes the cache holds for reads, over all files: data fetched and
    /// not yet stored, and answers not yet dropped by the server (sent). A
    /// read waits for room before it asks the origin (one larger than the
    /// whole budget takes all of it); a prefetch only uses free room.
    /// Counted in KiB.
    pub ram: u64,
    /// Read-ahead for sequential readers, the stock XCache's
    /// `pfc.prefetch`: the most blocks of one file being fetched ahead of
    /// its readers at a time; 0 (the default) turns it off. A read of one
    /// extent that starts where the file's reads had got to (within
    /// [`Geometry::io_size`] after the furthest end asked so far, reads
    /// counted as they arrive, so a client's reads in flight at once are
    /// all sequential) fetches, once answered, in the background, the
    /// blocks not cached nor in flight of the next `prefetch_blocks` after
    /// that furthest end, in block runs, as far as
    /// this bound lets (blocks already being fetched ahead count). Vector
    /// reads and reads elsewhere start none, so a reader that stops or
    /// jumps leaves at most this many blocks being fetched. Only free RAM
    /// is used ([`CacheConfig::ram`]).
    pub prefetch_blocks: u64,
    /// How many vector reads of one file may run at once.
    pub readv_concurrency: usize,
    /// The longest a fill's block bits stay only in memory: after a fill,
    /// the sidecar is written when the last write was longer ago than this.
    /// Bits not yet written are lost by a crash (the data is fetched again),
    /// never served wrong.
    pub flush_interval: Duration,
    /// How [`CacheFs`](crate::CacheFs) keeps its disk from filling up: on
    /// by default, between 0.90 and 0.95 of the disk, as the stock XCache.
    pub purge: PurgeConfig,
    /// How long after the origin last confirmed a file (its size and
    /// modification time, at an open that asked it) the file is opened
    /// from the store without asking the origin again: its cached blocks
    /// are served, and the origin is opened (and its stat checked) only
    /// when a read needs a block the store lacks. Zero (the
    /// default) asks at every open; a cache below a client
    /// ([`CacheConfig::below_client`]) trusts for an hour, and `xcache`
    /// for [`CacheConfig::PROXY_TRUST`]. Within the
    /// window a file changed at the origin is served as it was cached; a
    /// read that needs the origin then fails (the new file's bytes are not
    /// mixed with the old) and the entry is reset.
    pub trust_window: Duration,
}

impl Default for CacheConfig {
    fn default() -> CacheConfig {
        CacheConfig {
            geometry: Geometry::default(),
            ram: 1 << 30,
            prefetch_blocks: 0,
            readv_concurrency: 64,
            flush_interval: Duration::from_secs(1),
            purge: PurgeConfig::default(),
            trust_window: Duration::ZERO,
        }
    }
}

impl CacheConfig {
    /// The trust window of a cache below a client: an hour.
    pub const CLIENT_TRUST: Duration = Duration::from_secs(3600);

    /// The trust window `xcache` (a caching proxy serving a site) takes by
    /// default: ten minutes. A warm open then costs no origin round trip,
    /// as with the stock XCache (which does not ask the origin at a warm
    /// open), while a file changed at the origin is noticed at
    /// the first open more than ten minutes after the origin last
    /// confirmed it (its size or modification time differ: the entry is
    /// reset and the new file cached), or earlier by a read that needs a
    /// block not cached. Grid files are written once under a name, so the
    /// window costs nothing there; a site that rewrites files in place
    /// sets it lower, or to zero (every open asks).
    pub const PROXY_TRUST: Duration = Duration::from_secs(600);

    /// The defaults of a cache below a client (one process's reads, in a
    /// directory of the user's): a [`trust_window`](Self::trust_window) of
    /// [`CacheConfig::CLIENT_TRUST`], the rest as [`CacheConfig::default`].
    pub fn below_client() -> CacheConfig {
        CacheConfig {
            trust_window: CacheConfig::CLIENT_TRUST,
            ..CacheConfig::default()
        }
    }
}

/// Why a cached read failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CacheError {
    /// An extent ends past the end of the file (the reference fails the
    /// whole vector read, PROTOCOL.md Appendix item 3).
    #[error("read of {len} bytes at offset {offset} extends past end of file ({size} bytes)")]
    PastEof {
        /// The extent's offset, bytes.
        offset: u64,
        /// The extent's length, bytes.
        len: usize,
        /// The file's size, bytes.
        size: u64,
    },
    /// The origin request that was to bring the blocks failed.
    #[error("origin: {0}")]
    Origin(Arc<OriginError>),
    /// The disk store failed.
    #[error("cache store: {0}")]
    Store(Arc<std::io::Error>),
    /// The blocks could not be brought in after several attempts (another
    /// reader's fill kept failing, or the store kept losing pages).
    #[error("blocks of {0} could not be cached after {ATTEMPTS} attempts")]
    Exhausted(String),
}

/// How an origin request ended, as its waiters see it: the runs it
/// fetched (each holding the fill's RAM while a slice of it lives), or why
/// not.
type FillResult = Result<Landed, CacheError>;

/// What a fill brought, for the reader that started it: each run's offset
/// (bytes) and data, as written to the store.
type Landed = Vec<(u64, Bytes)>;

/// A read's share of the RAM budget, held by its fills until their data is
/// stored and by its answers until they are dropped.
type Hold = Arc<OwnedSemaphorePermit>;

/// The fills a plan started.
struct Started {
    /// The reader's own fills: their data, or their origin error.
    fills: Vec<oneshot::Receiver<Result<Landed, CacheError>>>,
    /// Other readers' fills of blocks this read needs.
    waits: Vec<watch::Receiver<Option<FillResult>>>,
    /// The RAM the fills and the answer hold.
    hold: Hold,
}

/// Limits shared by every file of a cache.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: CacheConfig,
    pub(crate) stats: Arc<CacheStats>,
    /// RAM budget in KiB permits (a tokio semaphore holds < 2^61 permits
    /// and one acquire at most 2^32).
    ram: Arc<Semaphore>,
    /// The whole budget, in permits.
    ram_whole: u32,
    /// The disk filled up: nothing is stored until a disk check finds room.
    full: AtomicBool,
    /// Wakes the disk check (the disk filled up, or a file closed while it
    /// is full).
    pub(crate) wake: Notify,
}

impl Shared {
    pub(crate) fn new(config: CacheConfig, stats: Arc<CacheStats>) -> Arc<Shared> {
        let whole = (config.ram / 1024).clamp(1, u32::MAX as u64) as u32;
        Arc::new(Shared {
            config,
            stats,
            ram: Arc::new(Semaphore::new(whole as usize)),
            ram_whole: whole,
            full: AtomicBool::new(false),
            wake: Notify::new(),
        })
    }

    /// Whether fills are stored (the disk has not filled up).
    pub(crate) fn storing(&self) -> bool {
        !self.full.load(Ordering::SeqCst)
    }

    /// Takes note of a store error: a full disk ([`is_full`]) stops
    /// storing and wakes the disk check.
    pub(crate) fn store_failed(&self, e: &io::Error) {
        if !is_full(e) {
            return;
        }
        if !self.full.swap(true, Ordering::SeqCst) {
            tracing::warn!("cache disk full ({e}): not storing until it has room");
        }
        self.wake.notify_one();
    }

    /// Stores again (the disk has room); whether it had stopped.
    pub(crate) fn resume_storing(&self) -> bool {
        let was = self.full.swap(false, Ordering::SeqCst);
        if was {
            tracing::info!("cache disk has room again: storing");
        }
        was
    }

    /// The KiB permits `bytes` take: at least one, at most the whole
    /// budget, so that one large read always fits.
    fn ram_permits(&self, bytes: u64) -> u32 {
        bytes.div_ceil(1024).clamp(1, u64::from(self.ram_whole)) as u32
    }

    /// Waits for `bytes` of the budget (all of it for more).
    async fn reserve(&self, bytes: u64) -> OwnedSemaphorePermit {
        self.ram
            .clone()
            .acquire_many_owned(self.ram_permits(bytes))
            .await
            .expect("the RAM semaphore is never closed")
    }

    /// `bytes` of the budget if they are free now.
    fn try_reserve(&self, bytes: u64) -> Option<OwnedSemaphorePermit> {
        self.ram
            .clone()
            .try_acquire_many_owned(self.ram_permits(bytes))
            .ok()
    }

    /// Bytes of the budget held now (by fills and answers), in KiB steps.
    pub(crate) fn ram_held(&self) -> u64 {
        let free = u64::try_from(self.ram.available_permits()).unwrap_or(u64::MAX);
        u64::from(self.ram_whole).saturating_sub(free) * 1024
    }
}

/// A file in the cache: an origin file, its store entry and the fills in
/// flight. Shared by every client handle open on the same path.
pub struct CachedFile<O: Origin> {
    inner: Arc<Inner<O>>,
}

impl<O: Origin> Clone for CachedFile<O> {
    fn clone(&self) -> Self {
        CachedFile {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<O> {
    origin: O,
    /// The store entry; none when it could not be made (a full disk): the
    /// file is then served from the origin only.
    entry: Option<Arc<Entry>>,
    /// The origin file's size in bytes (its validator).
    size: u64,
    shared: Arc<Shared>,
    /// Blocks being fetched now, each with the fill that brings it.
    flights: Mutex<HashMap<u64, watch::Receiver<Option<FillResult>>>>,
    /// When the sidecar was last written.
    flushed: Mutex<Instant>,
    /// Fill tasks running (each counted from its start until it ends).
    tasks: Arc<watch::Sender<usize>>,
    /// What this file's readers were served, for its close record.
    accounting: Accounting,
    /// Read-ahead: the furthest end of a sequential read asked so far
    /// (bytes), and the
    /// blocks being fetched ahead ([`CacheConfig::prefetch_blocks`]
    /// permits).
    ahead: Mutex<u64>,
    ahead_blocks: Arc<Semaphore>,
}

/// What the readers of one cached file were served, from its first open
/// (the stock XCache's `AStat` of one attach).
#[derive(Debug)]
struct Accounting {
    attached: std::time::SystemTime,
    accesses: u64,
    opens: AtomicU64,
    hit: AtomicU64,
    missed: AtomicU64,
    bypassed: AtomicU64,
}

/// What a cached file's readers were served while it was open, for the
/// record a cache sends when its last client handle closes (the stock
/// XCache's `file_close` g-stream record: [`xroot_proto::monitor::gstream::CacheFileClose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileAccess {
    /// When the file was first opened (attached).
    pub attached: std::time::SystemTime,
    /// The accesses (attaches) its store entry recorded, this one
    /// included: the stock XCache's `access_cnt` (1 without an entry).
    pub accesses: u64,
    /// Client opens of the file while it was attached.
    pub opens: u64,
    /// Bytes served from blocks already on disk (or fetched by another
    /// reader): the stock's `b_hit`.
    pub hit: u64,
    /// Bytes this file's readers fetched from the origin and stored:
    /// `b_miss`.
    pub missed: u64,
    /// Bytes fetched from the origin and not stored (no store entry, a
    /// full disk): `b_bypass`.
    pub bypassed: u64,
    /// Blocks of the file.
    pub blocks: u64,
    /// Blocks cached now.
    pub blocks_cached: u64,
    /// The block size, bytes.
    pub block_size: u64,
    /// The file's size, bytes.
    pub size: u64,
}

impl<O: Origin> CachedFile<O> {
    /// A cached file over `origin`, whose size is `size` bytes, stored in
    /// `entry` (none: served from the origin only).
    pub(crate) fn new(
        origin: O,
        entry: Option<Entry>,
        size: u64,
        shared: Arc<Shared>,
    ) -> CachedFile<O> {
        let accesses = entry.as_ref().map_or(1, Entry::count_access);
        // one acquire takes at most u32::MAX permits
        let ahead = usize::try_from(shared.config.prefetch_blocks)
            .unwrap_or(usize::MAX)
            .min(Semaphore::MAX_PERMITS)
            .min(u32::MAX as usize);
        CachedFile {
            inner: Arc::new(Inner {
                origin,
                entry: entry.map(Arc::new),
                size,
                shared,
                flights: Mutex::new(HashMap::new()),
                flushed: Mutex::new(Instant::now()),
                tasks: Arc::new(watch::Sender::new(0)),
                accounting: Accounting {
                    attached: std::time::SystemTime::now(),
                    accesses,
                    opens: AtomicU64::new(0),
                    hit: AtomicU64::new(0),
                    missed: AtomicU64::new(0),
                    bypassed: AtomicU64::new(0),
                },
                ahead: Mutex::new(0),
                ahead_blocks: Arc::new(Semaphore::new(ahead)),
            }),
        }
    }

    /// Counts a client open of the file.
    pub(crate) fn opened(&self) {
        self.inner.accounting.opens.fetch_add(1, Ordering::Relaxed);
    }

    /// What its readers were served so far, and its blocks.
    pub fn access(&self) -> FileAccess {
        let a = &self.inner.accounting;
        let block_size = self.inner.shared.config.geometry.block_size;
        FileAccess {
            attached: a.attached,
            accesses: a.accesses,
            opens: a.opens.load(Ordering::Relaxed),
            hit: a.hit.load(Ordering::Relaxed),
            missed: a.missed.load(Ordering::Relaxed),
            bypassed: a.bypassed.load(Ordering::Relaxed),
            blocks: self.inner.size.div_ceil(block_size.max(1)),
            blocks_cached: self.inner.entry.as_ref().map_or(0, |e| e.cached_blocks()),
            block_size,
            size: self.inner.size,
        }
    }

    /// The origin file below.
    pub fn origin(&self) -> &O {
        &self.inner.origin
    }

    /// Up to `len` bytes at `offset`: fewer only at end of file, none at or
    /// past it.
    ///
    /// Errors: as [`CachedFile::readv`], never [`CacheError::PastEof`].
    pub async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes, CacheError> {
        let left = self.inner.size.saturating_sub(offset);
        if left == 0 {
            // at or after the end: no bytes, as the origin answers
            return Ok(Bytes::new());
        }
        let len = len.min(usize::try_from(left).unwrap_or(usize::MAX));
        let mut data = self.readv(&[(offset, len)]).await?;
        Ok(data.pop().unwrap_or_default())
    }

    /// The store's region holding up to `len` bytes at `offset` (fewer
    /// only at end of file), for the server to send with `sendfile(2)`:
    /// `(data file, offset, len)` when every block of it is cached and
    /// was checked by this process ([`Entry::region`]), counted as a read
    /// served from disk. `None` otherwise (nothing counted: read it with
    /// [`CachedFile::read_at`]), at or past end of file, and for a file
    /// with no store entry. Never waits.
    pub fn region(&self, offset: u64, len: usize) -> Option<(Arc<std::fs::File>, u64, usize)> {
        let entry = self.inner.entry.as_ref()?;
        let region = entry.region(offset, len)?;
        entry.touch();
        let (stats, n) = (&self.inner.shared.stats, region.2 as u64);
        stats.add_asked(n);
        stats.add_from_disk(n);
        stats.add_client_request();
        self.inner.accounting.hit.fetch_add(n, Ordering::Relaxed);
        Some(region)
    }

    /// Each `(offset, len)` extent whole, in order (a client vector read).
    /// Missing blocks are fetched with one origin request per planned
    /// request (one when the extents fit the protocol's vector-read
    /// limits), blocks in flight are awaited, cached blocks are read from
    /// the store. First waits for its share of the RAM budget; the answers
    /// hold it until they are all dropped.
    ///
    /// Errors: [`CacheError::PastEof`] when an extent ends past the end of
    /// file (nothing is fetched); [`CacheError::Origin`] when a fill this
    /// read needs failed at the origin; [`CacheError::Store`] on a disk
    /// error; [`CacheError::Exhausted`] when the blocks kept failing.
    pub async fn readv(&self, extents: &[(u64, usize)]) -> Result<Vec<Bytes>, CacheError> {
        let inner = &self.inner;
        let size = inner.size;
        if let Some(&(offset, len)) = extents
            .iter()
            .find(|&&(o, l)| o.checked_add(l as u64).is_none_or(|end| end > size))
        {
            return Err(CacheError::PastEof { offset, len, size });
        }
        let stats = &inner.shared.stats;
        let _reading = stats.client_read();
        stats.add_asked(extents.iter().map(|&(_, l)| l as u64).sum());
        let sequential = self.advance(extents);
        let room = inner.shared.reserve(self.ram_bound(extents)).await;
        let result = self.readv_attempts(extents, room).await;
        stats.add_client_request();
        if sequential && result.is_ok() {
            self.prefetch();
        }
        result
    }

    /// The most RAM a read of `extents` can hold: all it may fetch, and a
    /// copy of every extent.
    fn ram_bound(&self, extents: &[(u64, usize)]) -> u64 {
        let geo = &self.inner.shared.config.geometry;
        let fetch = fetch_bound(extents, self.inner.size, geo);
        extents
            .iter()
            .map(|&(_, len)| copy_cost(len))
            .fold(fetch, u64::saturating_add)
    }

    /// Plans, fetches and answers `extents`, planning again (at most
    /// [`ATTEMPTS`] times) when blocks it waited for or read from the store
    /// turned out missing. `room` is the read's reservation (see
    /// [`CachedFile::ram_bound`]); the first plan keeps two parts of it and
    /// gives back the rest: what its fills fetch (held by them until
    /// stored, and by the answers sliced from their data) and a copy of
    /// each extent not in one of its runs. Once answered, the copy part is
    /// cut to the extents that were copies: an extent answered with a slice
    /// of another reader's fill holds that fill's RAM (see
    /// [`CachedFile::fill`]) and nothing of its own, so its bytes count
    /// once. Later plans share what is left.
    async fn readv_attempts(
        &self,
        extents: &[(u64, usize)],
        room: OwnedSemaphorePermit,
    ) -> Result<Vec<Bytes>, CacheError> {
        let shared = &self.inner.shared;
        let mut room = Some(room);
        let mut fetch_hold: Option<Hold> = None;
        let mut copy_room: Option<OwnedSemaphorePermit> = None;
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let started = self.start_fills(extents, |plan| {
                if let Some(mut room) = room.take() {
                    let fetched: u64 = plan.runs.iter().map(|r| r.len as u64).sum();
                    let copies = answer_need(extents, plan).saturating_sub(fetched);
                    let permits = |bytes: u64| match bytes {
                        0 => 0,
                        _ => shared.ram_permits(bytes) as usize,
                    };
                    let fetch = room.split(permits(fetched).min(room.num_permits()));
                    let copy = room.split(permits(copies).min(room.num_permits()));
                    drop(room); // the surplus
                    fetch_hold = fetch.map(Arc::new);
                    copy_room = copy;
                }
                fetch_hold.clone()
            });
            let Some(Started { fills, waits, hold }) = started else {
                return Err(CacheError::Exhausted("RAM for a read".into()));
            };
            let mut failed = None;
            let mut landed = Landed::new();
            let mut from_others = Landed::new();
            for fill in fills {
                match fill.await.unwrap_or_else(|_| Err(ended_early())) {
                    Ok(runs) => landed.extend(runs),
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = failed {
                // Our own fill failed: the origin's error is the answer.
                return Err(e);
            }
            match wait_all(waits, &mut from_others).await {
                // the origin's answer for these blocks is every waiter's
                Some(e @ CacheError::Origin(_)) => return Err(e),
                Some(e) => {
                    last = Some(e);
                    continue;
                }
                None => {}
            }
            from_others.sort_unstable_by_key(|&(offset, _)| offset);
            let waited = overlap(extents, &from_others);
            landed.append(&mut from_others);
            match self.assemble(extents, landed).await {
                Ok((data, from_disk)) => {
                    shared.stats.add_from_disk(from_disk);
                    let a = &self.inner.accounting;
                    let asked: u64 = extents.iter().map(|&(_, l)| l as u64).sum();
                    // bytes another reader's fill brought are hits, as
                    // the stock's blocks found in RAM
                    let hit = from_disk + waited;
                    let fetched = asked.saturating_sub(hit);
                    a.hit.fetch_add(hit, Ordering::Relaxed);
                    let to = if self.storing() {
                        &a.missed
                    } else {
                        &a.bypassed
                    };
                    to.fetch_add(fetched, Ordering::Relaxed);
                    // the copy part kept for the copies made, no more
                    let copied: u64 = data
                        .iter()
                        .filter(|(_, copy)| *copy)
                        .map(|(d, _)| copy_cost(d.len()))
                        .sum();
                    let copy_hold: Option<Hold> =
                        copy_room.take().filter(|_| copied > 0).map(|mut copy| {
                            let keep =
                                (shared.ram_permits(copied) as usize).min(copy.num_permits());
                            drop(copy.split(copy.num_permits() - keep));
                            Arc::new(copy)
                        });
                    return Ok(data
                        .into_iter()
                        .map(|(d, copy)| match (copy, &copy_hold) {
                            (true, Some(copy_hold)) => held(d, copy_hold),
                            _ => held(d, &hold),
                        })
                        .collect());
                }
                Err(StoreError::Missing { block }) => {
                    last = Some(CacheError::Exhausted(format!("block {block}")));
                }
                Err(StoreError::Io(e)) => return Err(CacheError::Store(Arc::new(e))),
            }
        }
        Err(last.unwrap_or_else(|| CacheError::Exhausted("a read".into())))
    }

    /// Whether fills of this file are stored now: it has a store entry and
    /// the disk has not filled up.
    fn storing(&self) -> bool {
        self.inner.entry.is_some() && self.inner.shared.storing()
    }

    /// Plans `extents` against the blocks' states and starts one fill task
    /// per planned origin request, each holding the RAM `budget` gives for
    /// the plan (asked under the flights lock: it must not wait). Returns
    /// the fills started, the fills of other readers to wait for and the
    /// RAM; `None`, with nothing started, when `budget` gives no RAM.
    ///
    /// When fills are not stored (see [`CachedFile::storing`]), blocks in
    /// other readers' fills count as missing and this read's fills are not
    /// registered: each read fetches what is not cached for itself.
    fn start_fills(
        &self,
        extents: &[(u64, usize)],
        budget: impl FnOnce(&Plan) -> Option<Hold>,
    ) -> Option<Started> {
        self.start_fills_holding(extents, budget, None)
    }

    /// [`CachedFile::start_fills`], each fill task also holding `permits`
    /// (read-ahead's) until it ends.
    fn start_fills_holding(
        &self,
        extents: &[(u64, usize)],
        budget: impl FnOnce(&Plan) -> Option<Hold>,
        permits: Option<Hold>,
    ) -> Option<Started> {
        let inner = &self.inner;
        let geo = &inner.shared.config.geometry;
        let storing = self.storing();
        let mut flights = inner.flights.lock().unwrap();
        let plan = plan(extents, inner.size, geo, |b| {
            if inner.entry.as_ref().is_some_and(|e| e.is_cached(b)) {
                BlockState::Cached
            } else if storing && flights.contains_key(&b) {
                BlockState::InFlight
            } else {
                BlockState::Missing
            }
        });
        let hold = budget(&plan)?;
        let waits = distinct(plan.wait.iter().filter_map(|b| flights.get(b)));
        let mut fills = Vec::with_capacity(plan.requests.len());
        for range in &plan.requests {
            let runs: Vec<Run> = plan.runs[range.clone()].to_vec();
            let waiters = storing.then(|| {
                let (tx, rx) = watch::channel(None);
                for run in &runs {
                    for b in run.first_block..run.first_block + run.blocks {
                        flights.insert(b, rx.clone());
                    }
                }
                tx
            });
            let (landed_tx, landed_rx) = oneshot::channel();
            let task = Task::start(&inner.tasks);
            let fill = self.clone().fill(runs, waiters, landed_tx, hold.clone());
            let permits = permits.clone();
            tokio::spawn(async move {
                fill.await;
                drop(task);
                drop(permits);
            });
            fills.push(landed_rx);
        }
        drop(flights);
        Some(Started { fills, waits, hold })
    }

    /// Fetches `runs` in one origin request and hands their data to the
    /// reader that planned them and, when the fill is registered
    /// (`waiters`), to the readers waiting for it (each run holding `ram`
    /// while a slice of it lives), or the origin's error to all; then —
    /// when the disk has room — writes them to the store and clears them
    /// from the flights. Holds `ram` until the data is in the store.
    async fn fill(
        self,
        runs: Vec<Run>,
        waiters: Option<watch::Sender<Option<FillResult>>>,
        reader: oneshot::Sender<Result<Landed, CacheError>>,
        ram: Hold,
    ) {
        let landing = Landing {
            inner: &self.inner,
            runs: if waiters.is_some() { &runs } else { &[] },
        };
        // another process sharing the directory may be fetching (or have
        // just fetched) some of these blocks: wait for it, fetch the rest
        let (claim, wanted) = match waiters.is_some() && self.storing() {
            true => self.claim(&runs).await,
            false => (None, runs.clone()),
        };
        let bytes: u64 = wanted.iter().map(|r| r.len as u64).sum();
        let fetched = self.fetch(&wanted, bytes).await;
        if let Some(waiters) = &waiters {
            // the waiters' copy holds the RAM until they drop it: it may
            // be a read-ahead's, whose reader is gone
            let shared = fetched.as_ref().map_err(Clone::clone).map(|landed| {
                landed
                    .iter()
                    .map(|(offset, data)| (*offset, held(data.clone(), &ram)))
                    .collect()
            });
            waiters.send_replace(Some(shared));
        }
        match fetched {
            Ok(landed) if waiters.is_some() && self.storing() => {
                // the reader may be gone; the blocks are stored regardless
                let _ = reader.send(Ok(landed.clone()));
                // its waiters have the data: a failed store is the next
                // reader's miss
                let _ = self.store(landed, bytes).await;
            }
            Ok(landed) => {
                let _ = reader.send(Ok(landed));
                self.inner.shared.stats.add_not_stored(bytes);
            }
            Err(e) => {
                let _ = reader.send(Err(e));
            }
        }
        drop(claim);
        drop(ram);
        drop(landing);
    }

    /// Takes the cross-process locks of the blocks of `runs`
    /// ([`Entry::try_claim`]), trying again after a pause (1 ms, doubling
    /// up to 50 ms) while another process holds some (it is fetching them),
    /// for at most [`PEER_WAIT`]: the claim, and the parts of `runs` still
    /// not cached once the others are done. Without the locks (an error,
    /// logged, or the wait ran out), every run is fetched.
    async fn claim(&self, runs: &[Run]) -> (Option<Claim>, Vec<Run>) {
        let Some(entry) = self.inner.entry.clone() else {
            return (None, runs.to_vec());
        };
        let ranges: Arc<Vec<(u64, u64)>> =
            Arc::new(runs.iter().map(|r| (r.first_block, r.blocks)).collect());
        let deadline = Instant::now() + PEER_WAIT;
        let mut pause = Duration::from_millis(1);
        let claim = loop {
            let (locked, ranges) = (entry.clone(), ranges.clone());
            match tokio::task::spawn_blocking(move || locked.try_claim(&ranges)).await {
                Ok(Ok(Some(claim))) => break claim,
                Ok(Ok(None)) if Instant::now() < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Ok(Ok(None)) => {
                    tracing::debug!(
                        "blocks held by another process for {PEER_WAIT:?}: fetching them"
                    );
                    return (None, runs.to_vec());
                }
                Ok(Err(e)) => {
                    tracing::debug!("cache block locks: {e}");
                    return (None, runs.to_vec());
                }
                Err(_) => return (None, runs.to_vec()),
            }
        };
        let (bs, size) = (
            self.inner.shared.config.geometry.block_size,
            self.inner.size,
        );
        let mut wanted = Vec::with_capacity(runs.len());
        for run in runs {
            let mut start = None;
            for b in run.first_block..=run.first_block + run.blocks {
                let missing = b < run.first_block + run.blocks && !entry.is_cached(b);
                match (missing, start) {
                    (true, None) => start = Some(b),
                    (false, Some(first)) => {
                        let offset = first * bs;
                        let len = ((b - first) * bs).min(size - offset) as usize;
                        wanted.push(Run {
                            first_block: first,
                            blocks: b - first,
                            offset,
                            len,
                        });
                        start = None;
                    }
                    _ => {}
                }
            }
        }
        if wanted.len() != runs.len() || wanted.iter().zip(runs).any(|(w, r)| w != r) {
            let have: u64 = runs.iter().map(|r| r.len as u64).sum::<u64>()
                - wanted.iter().map(|r| r.len as u64).sum::<u64>();
            self.inner.shared.stats.add_from_peers(have);
        }
        (Some(claim), wanted)
    }

    /// One origin request for `runs` (`bytes` in all); none for no runs.
    async fn fetch(&self, runs: &[Run], bytes: u64) -> Result<Landed, CacheError> {
        if runs.is_empty() {
            return Ok(Landed::new());
        }
        let shared = &self.inner.shared;
        let extents: Vec<(u64, usize)> = runs.iter().map(|r| (r.offset, r.len)).collect();
        let fetched = {
            let _origin = shared.stats.origin_request();
            self.inner.origin.read_runs(&extents).await
        }
        .and_then(|fetched| fetched.check(&extents).map(|()| fetched))
        .map_err(|e| CacheError::Origin(Arc::new(e)))?;
        shared.stats.add_fetched(bytes, fetched.requests);
        Ok(extents.iter().map(|e| e.0).zip(fetched.data).collect())
    }

    /// Writes landed runs (`bytes` in all) to the store (data, then their
    /// bits). A failure stops at the run that failed; a full disk stops
    /// storing ([`Shared::store_failed`]).
    async fn store(&self, landed: Landed, bytes: u64) -> Result<(), CacheError> {
        let shared = &self.inner.shared;
        let Some(entry) = self.inner.entry.clone() else {
            shared.stats.add_not_stored(bytes);
            return Err(not_stored());
        };
        let written = tokio::task::spawn_blocking(move || {
            let mut blocks = 0;
            let mut stored = 0;
            for (offset, data) in &landed {
                match entry.write_blocks(*offset, data) {
                    Ok(n) => blocks += n,
                    Err(e) => return (blocks, stored, Err(e)),
                }
                stored += data.len() as u64;
            }
            (blocks, stored, Ok(()))
        })
        .await
        .unwrap_or_else(|e| (0, 0, Err(io::Error::other(e.to_string()))));
        let (blocks, stored, result) = written;
        shared.stats.add_block_writes(blocks);
        if let Err(e) = result {
            shared.stats.add_not_stored(bytes - stored);
            shared.store_failed(&e);
            return Err(CacheError::Store(Arc::new(e)));
        }
        self.flush_if_due();
        Ok(())
    }

    /// Writes the sidecar in the background when the last write is older
    /// than the flush interval.
    fn flush_if_due(&self) {
        let interval = self.inner.shared.config.flush_interval;
        {
            let mut flushed = self.inner.flushed.lock().unwrap();
            if flushed.elapsed() < interval {
                return;
            }
            *flushed = Instant::now();
        }
        let Some(entry) = self.inner.entry.clone() else {
            return;
        };
        let shared = self.inner.shared.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = entry.flush() {
                tracing::warn!("cache sidecar flush failed: {e}");
                shared.store_failed(&e);
            }
        });
    }

    /// Writes the block bits to the sidecar, once the fills running have
    /// ended (a reader gets its data before its fill's store write ends; a
    /// graceful stop must not lose those blocks). Nothing to write for a
    /// file without a store entry.
    ///
    /// Errors: the store's I/O error (on a full disk the blocks that could
    /// not be indexed are dropped, see [`Entry::flush`]).
    pub async fn flush(&self) -> std::io::Result<()> {
        self.settle().await;
        *self.inner.flushed.lock().unwrap() = Instant::now();
        let Some(entry) = self.inner.entry.clone() else {
            return Ok(());
        };
        let result = tokio::task::spawn_blocking(move || entry.flush())
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
        if let Err(e) = &result {
            self.inner.shared.store_failed(e);
        }
        result
    }

    /// Waits until no fill task of this file runs: registered fills and
    /// prefetches, and the fills of reads that do not store (full disk),
    /// those that start meanwhile included.
    async fn settle(&self) {
        let mut tasks = self.inner.tasks.subscribe();
        // the sender lives in `inner`, so the channel cannot close
        let _ = tasks.wait_for(|&n| n == 0).await;
    }

    /// Each extent, from the runs this read's fills and the fills it
    /// waited for fetched (`landed`: a slice of the run where the extent
    /// lies in one, else the pieces joined) and from the store for every
    /// other byte (blocks that were cached). Returns the answers, each
    /// with whether it is a copy (read from the store, or joined: not one
    /// slice of a run), and the bytes read from the store.
    ///
    /// Errors: as [`CachedFile::read_store`].
    async fn assemble(
        &self,
        extents: &[(u64, usize)],
        mut landed: Landed,
    ) -> Result<(Vec<(Bytes, bool)>, u64), StoreError> {
        landed.sort_unstable_by_key(|&(offset, _)| offset);
        // runs of distinct fills are disjoint (a block is in one fill at a
        // time); should two overlap, the later one is not used
        let mut reach = 0;
        landed.retain(|(offset, data)| {
            let keep = *offset >= reach;
            if keep {
                reach = offset + data.len() as u64;
            }
            keep
        });
        let layout: Vec<Vec<Piece>> = extents.iter().map(|&e| cut(e, &landed)).collect();
        drop(landed); // the pieces keep what they slice
        let wanted: Vec<(u64, usize)> = layout
            .iter()
            .flatten()
            .filter_map(|p| match p {
                Piece::Store { offset, len } => Some((*offset, *len)),
                Piece::Landed(_) => None,
            })
            .collect();
        let from_disk = wanted.iter().map(|&(_, l)| l as u64).sum();
        let mut stored = self.read_store(wanted).await?.into_iter();
        let answers = layout
            .into_iter()
            .zip(extents)
            .map(|(pieces, &(_, len))| {
                let slice = matches!(pieces[..], [Piece::Landed(_)]);
                let mut pieces: Vec<Bytes> = pieces
                    .into_iter()
                    .map(|p| match p {
                        Piece::Landed(data) => data,
                        Piece::Store { .. } => stored.next().unwrap_or_default(),
                    })
                    .collect();
                let data = match pieces.len() {
                    0 => Bytes::new(),
                    1 => pieces.pop().unwrap_or_default(),
                    _ => {
                        let mut joined = BytesMut::with_capacity(len);
                        for p in pieces {
                            joined.extend_from_slice(&p);
                        }
                        joined.freeze()
                    }
                };
                (data, !slice && len > 0)
            })
            .collect();
        Ok((answers, from_disk))
    }

    /// Reads each `(offset, len)` range from the store (its blocks are
    /// cached by now), one answer per range (ranges on neighbouring pages
    /// read together, [`Entry::read_ranges`]); nothing for no ranges. After a
    /// block that is missing or fails its check, the other ranges are still
    /// read, so that every damaged block is found (and its bit cleared) for
    /// the next attempt to fetch them all in one go.
    ///
    /// Errors: [`StoreError::Missing`] for the first such block;
    /// [`StoreError::Io`] for a disk error.
    async fn read_store(&self, ranges: Vec<(u64, usize)>) -> Result<Vec<Bytes>, StoreError> {
        let Some(entry) = self.inner.entry.clone() else {
            // nothing is cached without an entry: plan again
            let block = ranges.first().map_or(0, |&(offset, _)| {
                offset / self.inner.shared.config.geometry.block_size.max(1)
            });
            return match ranges.is_empty() {
                true => Ok(Vec::new()),
                false => Err(StoreError::Missing { block }),
            };
        };
        entry.touch();
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        tokio::task::spawn_blocking(move || entry.read_ranges(&ranges))
            .await
            .unwrap_or_else(|e| Err(StoreError::Io(std::io::Error::other(e.to_string()))))
    }

    /// Whether a read of `extents`, as it arrives, goes on where the
    /// file's reads had got to (see [`CacheConfig::prefetch_blocks`]): one
    /// extent that starts at most an `io_size` after the furthest end asked
    /// so far, which it then moves on. Always false with read-ahead off.
    /// Counted at arrival, not at the answer, so that the reads a client
    /// keeps in flight at once (the stock `xrdcp`: 4 chunks of 8 MiB) are
    /// each sequential and read-ahead starts after the last of them.
    fn advance(&self, extents: &[(u64, usize)]) -> bool {
        let inner = &self.inner;
        let geo = &inner.shared.config.geometry;
        let &[(offset, len)] = extents else {
            return false;
        };
        if inner.shared.config.prefetch_blocks == 0 {
            return false;
        }
        let mut far = inner.ahead.lock().unwrap();
        if offset > far.saturating_add(geo.io_size.max(geo.block_size)) {
            return false; // a jump: not sequential
        }
        *far = (*far).max(offset + len as u64);
        true
    }

    /// Read-ahead after a sequential read ([`CachedFile::advance`]):
    /// starts fills of the blocks not cached of the next `prefetch_blocks`
    /// after the furthest end asked so far, one origin request per
    /// `io_size` of the file, each fill holding its blocks' read-ahead
    /// permits until it ends, without waiting (none without free permits
    /// or RAM).
    fn prefetch(&self) {
        let inner = &self.inner;
        let config = &inner.shared.config;
        let (bs, size) = (config.geometry.block_size.max(1), inner.size);
        let blocks = config.prefetch_blocks;
        if blocks == 0 || !self.storing() {
            return;
        }
        let far = *inner.ahead.lock().unwrap();
        let start = far.div_ceil(bs) * bs;
        let end = start.saturating_add(blocks.saturating_mul(bs)).min(size);
        if start >= end {
            return;
        }
        // as far as the free permits go in blocks neither cached nor in
        // flight from `start`, in pieces of `io_size` (one origin request
        // each, so that the data lands, and is handed to the readers
        // waiting for it, piece by piece), with the missing blocks of each
        let free = inner.ahead_blocks.available_permits() as u64;
        let step = (config.geometry.io_size / bs).max(1);
        let mut pieces: Vec<(u64, u64, u32)> = Vec::new();
        let mut take = 0;
        {
            let flights = inner.flights.lock().unwrap();
            for b in start / bs..end.div_ceil(bs) {
                if take == free {
                    break;
                }
                let stop = ((b + 1) * bs).min(size);
                match pieces.last_mut() {
                    Some(p) if (b * bs - p.0) / bs < step => p.1 = stop,
                    _ => pieces.push((b * bs, stop, 0)),
                }
                if !inner.entry.as_ref().is_some_and(|e| e.is_cached(b))
                    && !flights.contains_key(&b)
                {
                    take += 1;
                    if let Some(p) = pieces.last_mut() {
                        p.2 += 1;
                    }
                }
            }
        }
        if take == 0 {
            return;
        }
        let Ok(mut permits) = inner
            .ahead_blocks
            .clone()
            .try_acquire_many_owned(take as u32)
        else {
            return;
        };
        let shared = &inner.shared;
        for (from, to, missing) in pieces {
            if missing == 0 {
                continue;
            }
            let Some(mine) = permits.split(missing as usize) else {
                return; // cannot be: the pieces' missing blocks sum to `take`
            };
            // The fills run on their own tasks, holding the permits;
            // dropping their handles detaches them. Without free RAM
            // nothing starts.
            let _ = self.start_fills_holding(
                &[(from, (to - from) as usize)],
                |plan| {
                    let bytes: u64 = plan.runs.iter().map(|r| r.len as u64).sum();
                    match bytes {
                        0 => None,
                        _ => shared.try_reserve(bytes).map(Arc::new),
                    }
                },
                Some(Arc::new(mine)),
            );
        }
    }
}

/// Clears a fill's blocks from the flights when the fill ends, however it
/// ends (a panicking fill must not leave its blocks "in flight" forever;
/// its waiters see the channel close and plan again).
struct Landing<'a, O> {
    inner: &'a Inner<O>,
    runs: &'a [Run],
}

impl<O> Drop for Landing<'_, O> {
    fn drop(&mut self) {
        let mut flights = self
            .inner
            .flights
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for run in self.runs {
            for b in run.first_block..run.first_block + run.blocks {
                flights.remove(&b);
            }
        }
        // a large read (2 GiB: 512 Ki blocks) leaves a large table; do not
        // keep it once nothing is in flight
        if flights.is_empty() && flights.capacity() > SMALL_TABLE {
            flights.shrink_to_fit();
        }
    }
}

/// Where a piece of an extent comes from.
#[derive(Debug)]
enum Piece {
    /// A slice of a run this read fetched.
    Landed(Bytes),
    /// Bytes to read from the store.
    Store {
        /// File offset, bytes.
        offset: u64,
        /// Length, bytes.
        len: usize,
    },
}

/// The pieces of extent `(offset, len)`, in order: slices of the runs in
/// `landed` (ascending, disjoint) where they hold its bytes, store reads
/// between them. None for an empty extent.
fn cut((offset, len): (u64, usize), landed: &[(u64, Bytes)]) -> Vec<Piece> {
    let end = offset.saturating_add(len as u64);
    let mut pieces = Vec::new();
    let mut at = offset;
    // the first run that ends after `at`
    let mut i = landed.partition_point(|(o, d)| o + d.len() as u64 <= at);
    while at < end {
        match landed.get(i) {
            Some((o, data)) if *o <= at => {
                let stop = end.min(o + data.len() as u64);
                pieces.push(Piece::Landed(
                    data.slice((at - o) as usize..(stop - o) as usize),
                ));
                at = stop;
                i += 1;
            }
            next => {
                let stop = next.map_or(end, |(o, _)| end.min(*o));
                pieces.push(Piece::Store {
                    offset: at,
                    len: (stop - at) as usize,
                });
                at = stop;
            }
        }
    }
    pieces
}

/// RAM an extent of `len` bytes may take as a copy (read from the store,
/// or joined).
fn copy_cost(len: usize) -> u64 {
    match len {
        0 => 0,
        _ => len as u64 + COPY_SLACK,
    }
}

/// RAM a read of `extents` needs under `plan`: the runs it fetches, and a
/// copy of each extent that is not one slice of a run.
fn answer_need(extents: &[(u64, usize)], plan: &Plan) -> u64 {
    let fetched: u64 = plan.runs.iter().map(|r| r.len as u64).sum();
    let in_one_run = |offset: u64, len: usize| {
        let i = plan.runs.partition_point(|r| r.offset <= offset);
        i > 0 && {
            let r = &plan.runs[i - 1];
            offset + len as u64 <= r.offset + r.len as u64
        }
    };
    extents
        .iter()
        .filter(|&&(offset, len)| !in_one_run(offset, len))
        .map(|&(_, len)| copy_cost(len))
        .fold(fetched, u64::saturating_add)
}

/// `data`, holding `hold` until it (and every slice of it) is dropped.
fn held(data: Bytes, hold: &Hold) -> Bytes {
    if data.is_empty() {
        return data;
    }
    Bytes::from_owner(Held {
        data,
        _hold: hold.clone(),
    })
}

/// An answer and the RAM it holds.
struct Held {
    data: Bytes,
    _hold: Hold,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

/// One receiver per fill among `receivers` (a fill is registered once per
/// block it brings).
fn distinct<'a>(
    receivers: impl Iterator<Item = &'a watch::Receiver<Option<FillResult>>>,
) -> Vec<watch::Receiver<Option<FillResult>>> {
    let mut out: Vec<watch::Receiver<_>> = Vec::new();
    for rx in receivers {
        if !out.iter().any(|o| o.same_channel(rx)) {
            out.push(rx.clone());
        }
    }
    out
}

/// Waits for other readers' fills, adding the runs they fetched to
/// `landed`; the first failure, if any.
async fn wait_all(
    waits: Vec<watch::Receiver<Option<FillResult>>>,
    landed: &mut Landed,
) -> Option<CacheError> {
    let mut failed = None;
    for mut rx in waits {
        let outcome = match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone().expect("waited for Some"),
            Err(_) => Err(ended_early()),
        };
        match outcome {
            Ok(runs) => landed.extend(runs),
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    failed
}

/// Bytes of `extents` that lie in `runs` (disjoint, by offset), each byte
/// counted once per extent holding it.
fn overlap(extents: &[(u64, usize)], runs: &Landed) -> u64 {
    let mut total = 0;
    for &(offset, len) in extents {
        let end = offset.saturating_add(len as u64);
        // the first run that ends after `offset`
        let first = runs.partition_point(|(o, d)| o + d.len() as u64 <= offset);
        for (o, data) in runs[first..].iter().take_while(|(o, _)| *o < end) {
            let stop = end.min(o + data.len() as u64);
            total += stop.saturating_sub(offset.max(*o));
        }
    }
    total
}

/// A fill task, counted in `Inner::tasks` from its start (when it is
/// spawned) until the guard drops (when it ends, however it ends).
struct Task(Arc<watch::Sender<usize>>);

impl Task {
    /// Counts one more task on `tasks`.
    fn start(tasks: &Arc<watch::Sender<usize>>) -> Task {
        tasks.send_modify(|n| *n += 1);
        Task(tasks.clone())
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The error a fill's waiters get when its data was not stored (the disk
/// is full, or the file has no store entry): they plan again.
fn not_stored() -> CacheError {
    CacheError::Store(Arc::new(io::Error::new(
        io::ErrorKind::StorageFull,
        "the cache disk is full: not stored",
    )))
}

/// The error of a fill whose task ended without an answer (it panicked).
fn ended_early() -> CacheError {
    CacheError::Exhausted("a fill that ended early".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The extent's bytes from its pieces, the store's read from `file`.
    fn join(pieces: Vec<Piece>, file: &[u8]) -> Vec<u8> {
        pieces
            .into_iter()
            .flat_map(|p| match p {
                Piece::Landed(d) => d.to_vec(),
                Piece::Store { offset, len } => file[offset as usize..][..len].to_vec(),
            })
            .collect()
    }

    #[test]
    fn extents_are_cut_from_the_landed_runs_and_the_store() {
        let file: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let run = |offset: u64, len: usize| {
            let data = file[offset as usize..offset as usize + len].to_vec();
            (offset, Bytes::from(data))
        };
        // two adjacent runs (one cut at io_size), then a hole, then a third
        let landed = vec![run(0, 8192), run(8192, 4096), run(20_480, 4096)];
        let extents = [
            (100, 50),
            (8000, 1000),
            (0, 12_288),
            (21_000, 10),
            (5, 0),
            (12_000, 9000),
            (24_000, 1000),
            (30_000, 100),
        ];
        for &(o, l) in &extents {
            let pieces = cut((o, l), &landed);
            assert_eq!(
                join(pieces, &file),
                file[o as usize..][..l],
                "extent ({o}, {l})"
            );
        }
        // zero copy when one run holds the extent
        match &cut((100, 50), &landed)[..] {
            [Piece::Landed(d)] => assert_eq!(d.as_ptr(), landed[0].1[100..].as_ptr()),
            other => panic!("{other:?}"),
        }
        // across the hole: run, store, run; past the last run: store
        match &cut((12_000, 9000), &landed)[..] {
            [Piece::Landed(a), Piece::Store { offset, len }, Piece::Landed(b)] => {
                assert_eq!((a.len(), *offset, *len, b.len()), (288, 12_288, 8192, 520));
            }
            other => panic!("{other:?}"),
        }
        match &cut((30_000, 100), &landed)[..] {
            [Piece::Store { offset, len }] => assert_eq!((*offset, *len), (30_000, 100)),
            other => panic!("{other:?}"),
        }
        assert!(cut((5, 0), &landed).is_empty());
    }
}
