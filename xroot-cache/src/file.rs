//! One cached file: the block state of an origin file, fills from the
//! origin in block runs, and reads served from the disk store.
//!
//! A client read or vector read is planned ([`plan`]) against the blocks'
//! states: blocks already cached are served from the [`Entry`], blocks
//! another reader is fetching are awaited (single flight), and the missing
//! ones become runs fetched by ONE origin request per planned request —
//! normally one for the whole client vector read. Each origin request runs
//! on its own task, so a client that goes away mid-fill does not strand the
//! readers waiting for the same blocks. Fetched data is written to the
//! store, and only then are its blocks marked cached and its waiters woken;
//! every byte answered is read back from the store, which checks its page
//! crc32c (a page that fails is fetched again).
//!
//! Memory: fetched data waits in RAM only between the origin's answer and
//! the store write; [`CacheConfig::ram`] bounds those bytes across all
//! files of a cache, and a fill waits for room before it asks the origin
//! (back-pressure on the clients).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{oneshot, watch, Semaphore};

use crate::origin::{Origin, OriginError};
use crate::plan::{plan, BlockState, Geometry, Plan, Run};
use crate::stats::CacheStats;
use crate::store::{Entry, StoreError};

/// How many times a read re-plans when a fill it waited for ended without
/// storing its blocks (not for an origin error, which is the answer) or a
/// cached page failed its checksum.
const ATTEMPTS: usize = 3;

/// A cache's tunables. Sizes in bytes.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// Block size, run cap (`io_size`) and gap merging (`io_gap`).
    pub geometry: Geometry,
    /// Bytes fetched from the origin and not yet in the store, over all
    /// files; a fill waits for room (at least one run always fits).
    pub ram: u64,
    /// Blocks to fetch ahead of each client read, in the background; 0
    /// (the default) turns prefetching off.
    pub prefetch_blocks: u64,
    /// How many vector reads of one file may run at once.
    pub readv_concurrency: usize,
    /// The longest a fill's block bits stay only in memory: after a fill,
    /// the sidecar is written when the last write was longer ago than this.
    /// Bits not yet written are lost by a crash (the data is fetched again),
    /// never served wrong.
    pub flush_interval: Duration,
}

impl Default for CacheConfig {
    fn default() -> CacheConfig {
        CacheConfig {
            geometry: Geometry::default(),
            ram: 1 << 30,
            prefetch_blocks: 0,
            readv_concurrency: 64,
            flush_interval: Duration::from_secs(1),
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

/// How an origin request ended, as its waiters see it.
type FillResult = Result<(), CacheError>;

/// What a fill brought, for the reader that started it: each run's offset
/// (bytes) and data, as written to the store.
type Landed = Vec<(u64, Bytes)>;

/// Limits shared by every file of a cache.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: CacheConfig,
    pub(crate) stats: Arc<CacheStats>,
    /// RAM budget in KiB permits (a tokio semaphore holds < 2^61 permits
    /// and one acquire at most 2^32).
    ram: Arc<Semaphore>,
}

impl Shared {
    pub(crate) fn new(config: CacheConfig, stats: Arc<CacheStats>) -> Arc<Shared> {
        let kib = (config.ram / 1024).clamp(1, u32::MAX as u64) as usize;
        Arc::new(Shared {
            config,
            stats,
            ram: Arc::new(Semaphore::new(kib)),
        })
    }

    /// The KiB permits a fill of `bytes` takes: at most the whole budget,
    /// so that one large fill always fits.
    fn ram_permits(&self, bytes: u64) -> u32 {
        let whole = (self.config.ram / 1024).clamp(1, u32::MAX as u64);
        bytes.div_ceil(1024).clamp(1, whole) as u32
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
    entry: Arc<Entry>,
    /// The origin file's size in bytes (its validator).
    size: u64,
    shared: Arc<Shared>,
    /// Blocks being fetched now, each with the fill that brings it.
    flights: Mutex<HashMap<u64, watch::Receiver<Option<FillResult>>>>,
    /// When the sidecar was last written.
    flushed: Mutex<Instant>,
}

impl<O: Origin> CachedFile<O> {
    /// A cached file over `origin`, whose size is `size` bytes, stored in
    /// `entry`.
    pub(crate) fn new(origin: O, entry: Entry, size: u64, shared: Arc<Shared>) -> CachedFile<O> {
        CachedFile {
            inner: Arc::new(Inner {
                origin,
                entry: Arc::new(entry),
                size,
                shared,
                flights: Mutex::new(HashMap::new()),
                flushed: Mutex::new(Instant::now()),
            }),
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

    /// Each `(offset, len)` extent whole, in order (a client vector read).
    /// Missing blocks are fetched with one origin request per planned
    /// request (one when the extents fit the protocol's vector-read
    /// limits), blocks in flight are awaited, cached blocks are read from
    /// the store.
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
        let result = self.readv_attempts(extents).await;
        stats.add_client_request();
        if result.is_ok() {
            self.prefetch(extents);
        }
        result
    }

    async fn readv_attempts(&self, extents: &[(u64, usize)]) -> Result<Vec<Bytes>, CacheError> {
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let (plan, fills, waits) = self.start_fills(extents);
            let from_disk = self.store_bytes(extents, &plan);
            let mut failed = None;
            let mut landed = Landed::new();
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
            match wait_all(waits).await {
                // the origin's answer for these blocks is every waiter's
                Some(e @ CacheError::Origin(_)) => return Err(e),
                Some(e) => {
                    last = Some(e);
                    continue;
                }
                None => {}
            }
            if plan.wait.is_empty() && plan.cached == 0 {
                // Everything came with this read's own fills: answer from
                // their data (zero copy), not by reading back what was
                // just written.
                if let Some(data) = slice_landed(extents, landed) {
                    return Ok(data);
                }
            }
            match self.serve(extents).await {
                Ok(data) => {
                    self.inner.shared.stats.add_from_disk(from_disk);
                    return Ok(data);
                }
                Err(StoreError::Missing { block }) => {
                    last = Some(CacheError::Exhausted(format!("block {block}")));
                }
                Err(StoreError::Io(e)) => return Err(CacheError::Store(Arc::new(e))),
            }
        }
        Err(last.unwrap_or_else(|| CacheError::Exhausted("a read".into())))
    }

    /// Plans `extents` against the blocks' states and starts one fill task
    /// per planned origin request. Returns the plan, the fills started and
    /// the fills of other readers to wait for.
    #[allow(clippy::type_complexity)]
    fn start_fills(
        &self,
        extents: &[(u64, usize)],
    ) -> (
        Plan,
        Vec<oneshot::Receiver<Result<Landed, CacheError>>>,
        Vec<watch::Receiver<Option<FillResult>>>,
    ) {
        let inner = &self.inner;
        let geo = &inner.shared.config.geometry;
        let mut flights = inner.flights.lock().unwrap();
        let plan = plan(extents, inner.size, geo, |b| {
            if inner.entry.is_cached(b) {
                BlockState::Cached
            } else if flights.contains_key(&b) {
                BlockState::InFlight
            } else {
                BlockState::Missing
            }
        });
        let waits = distinct(plan.wait.iter().filter_map(|b| flights.get(b)));
        let mut fills = Vec::with_capacity(plan.requests.len());
        for range in &plan.requests {
            let runs: Vec<Run> = plan.runs[range.clone()].to_vec();
            let (tx, rx) = watch::channel(None);
            for run in &runs {
                for b in run.first_block..run.first_block + run.blocks {
                    flights.insert(b, rx.clone());
                }
            }
            let (landed_tx, landed_rx) = oneshot::channel();
            tokio::spawn(self.clone().fill(runs, tx, landed_tx));
            fills.push(landed_rx);
        }
        drop(flights);
        (plan, fills, waits)
    }

    /// Fetches `runs` in one origin request and hands their data to the
    /// reader that planned them, then writes them to the store, clears them
    /// from the flights and tells the waiters (who read from the store).
    /// The RAM permits are held until the data is in the store.
    async fn fill(
        self,
        runs: Vec<Run>,
        waiters: watch::Sender<Option<FillResult>>,
        reader: oneshot::Sender<Result<Landed, CacheError>>,
    ) {
        let landing = Landing {
            inner: &self.inner,
            runs: &runs,
        };
        let shared = &self.inner.shared;
        let bytes: u64 = runs.iter().map(|r| r.len as u64).sum();
        let _ram = shared
            .ram
            .acquire_many(shared.ram_permits(bytes))
            .await
            .expect("the RAM semaphore is never closed");
        let result = match self.fetch(&runs, bytes).await {
            Ok(landed) => {
                // the reader may be gone; the blocks are stored regardless
                let _ = reader.send(Ok(landed.clone()));
                self.store(landed).await
            }
            Err(e) => {
                let _ = reader.send(Err(e.clone()));
                Err(e)
            }
        };
        drop(landing);
        waiters.send_replace(Some(result));
    }

    /// One origin request for `runs` (`bytes` in all).
    async fn fetch(&self, runs: &[Run], bytes: u64) -> Result<Landed, CacheError> {
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

    /// Writes landed runs to the store (data, then their bits).
    async fn store(&self, landed: Landed) -> FillResult {
        let entry = self.inner.entry.clone();
        let written = tokio::task::spawn_blocking(move || {
            let mut blocks = 0;
            for (offset, data) in &landed {
                blocks += entry.write_blocks(*offset, data)?;
            }
            Ok(blocks)
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
        .map_err(|e| CacheError::Store(Arc::new(e)))?;
        self.inner.shared.stats.add_block_writes(written);
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
        let entry = self.inner.entry.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = entry.flush() {
                tracing::warn!("cache sidecar flush failed: {e}");
            }
        });
    }

    /// Writes the block bits to the sidecar, once the fills in flight have
    /// landed in the store (a reader gets its data before its fill's store
    /// write ends; a graceful stop must not lose those blocks).
    ///
    /// Errors: the store's I/O error.
    pub async fn flush(&self) -> std::io::Result<()> {
        self.settle().await;
        *self.inner.flushed.lock().unwrap() = Instant::now();
        let entry = self.inner.entry.clone();
        tokio::task::spawn_blocking(move || entry.flush())
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
    }

    /// Waits until no fill of this file is in flight (those that start
    /// meanwhile included).
    async fn settle(&self) {
        loop {
            let pending = distinct(self.inner.flights.lock().unwrap().values());
            if pending.is_empty() {
                return;
            }
            // failures do not matter here: their blocks are simply not cached
            let _ = wait_all(pending).await;
        }
    }

    /// Reads every extent from the store (its blocks are cached by now).
    /// After a block that is missing or fails its check, the other extents
    /// are still read, so that every damaged block is found (and its bit
    /// cleared) for the next attempt to fetch them all in one go.
    async fn serve(&self, extents: &[(u64, usize)]) -> Result<Vec<Bytes>, StoreError> {
        let entry = self.inner.entry.clone();
        let extents = extents.to_vec();
        tokio::task::spawn_blocking(move || {
            entry.touch();
            let mut out = Vec::with_capacity(extents.len());
            let mut missing = None;
            for &(offset, len) in &extents {
                match len {
                    0 => out.push(Bytes::new()),
                    _ => match entry.read(offset, len) {
                        Ok(data) => out.push(data),
                        Err(StoreError::Missing { block }) => {
                            missing.get_or_insert(StoreError::Missing { block });
                        }
                        Err(e) => return Err(e),
                    },
                }
            }
            missing.map_or(Ok(out), Err)
        })
        .await
        .unwrap_or_else(|e| Err(StoreError::Io(std::io::Error::other(e.to_string()))))
    }

    /// Bytes of `extents` this read does not fetch itself: those in blocks
    /// that were cached or in another reader's fill when `plan` was made,
    /// all served from the store.
    fn store_bytes(&self, extents: &[(u64, usize)], plan: &Plan) -> u64 {
        let asked: u64 = extents.iter().map(|&(_, l)| l as u64).sum();
        if plan.runs.is_empty() {
            return asked;
        }
        if plan.cached == 0 && plan.wait.is_empty() {
            return 0;
        }
        let block_size = self.inner.shared.config.geometry.block_size;
        // runs are ascending and disjoint
        let own = |b: u64| {
            let i = plan.runs.partition_point(|r| r.first_block <= b);
            i > 0 && b < plan.runs[i - 1].first_block + plan.runs[i - 1].blocks
        };
        let mut total = 0;
        for &(offset, len) in extents {
            let end = offset + len as u64;
            let mut at = offset;
            while at < end {
                let b = at / block_size;
                let next = ((b + 1) * block_size).min(end);
                if !own(b) {
                    total += next - at;
                }
                at = next;
            }
        }
        total
    }

    /// With prefetch on, starts filling the blocks after the last one
    /// `extents` touched, without waiting.
    fn prefetch(&self, extents: &[(u64, usize)]) {
        let blocks = self.inner.shared.config.prefetch_blocks;
        let block_size = self.inner.shared.config.geometry.block_size;
        let Some(end) = extents.iter().map(|&(o, l)| o + l as u64).max() else {
            return;
        };
        let start = end.div_ceil(block_size) * block_size;
        if blocks == 0 || start >= self.inner.size {
            return;
        }
        let len = (blocks * block_size).min(self.inner.size - start) as usize;
        // The fills run on their own tasks; dropping their handles detaches them.
        let _ = self.start_fills(&[(start, len)]);
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
    }
}

/// Each extent from the landed runs: a slice of the run that holds it whole
/// (zero copy), or the pieces of the adjacent runs it spans (cut at
/// `io_size`) joined. `None` when some byte is not in `landed` (it is then
/// read from the store).
fn slice_landed(extents: &[(u64, usize)], mut landed: Landed) -> Option<Vec<Bytes>> {
    landed.sort_unstable_by_key(|&(offset, _)| offset);
    extents
        .iter()
        .map(|&(offset, len)| {
            if len == 0 {
                return Some(Bytes::new());
            }
            let end = offset.checked_add(len as u64)?;
            let mut i = landed
                .partition_point(|&(o, _)| o <= offset)
                .checked_sub(1)?;
            let mut at = offset;
            let mut joined: Option<bytes::BytesMut> = None;
            loop {
                let (run_offset, data) = landed.get(i)?;
                let run_end = run_offset + data.len() as u64;
                if *run_offset > at || run_end <= at && at < end {
                    return None; // a hole between runs
                }
                let piece = data
                    .slice((at - run_offset) as usize..(end.min(run_end) - run_offset) as usize);
                if end <= run_end && joined.is_none() {
                    return Some(piece); // the whole extent in one run
                }
                joined
                    .get_or_insert_with(|| bytes::BytesMut::with_capacity(len))
                    .extend_from_slice(&piece);
                at = end.min(run_end);
                if at == end {
                    return joined.map(bytes::BytesMut::freeze);
                }
                i += 1;
            }
        })
        .collect()
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

/// Waits for other readers' fills; the first failure, if any.
async fn wait_all(waits: Vec<watch::Receiver<Option<FillResult>>>) -> Option<CacheError> {
    let mut failed = None;
    for mut rx in waits {
        let outcome = match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone().expect("waited for Some"),
            Err(_) => Err(ended_early()),
        };
        if let Err(e) = outcome {
            failed.get_or_insert(e);
        }
    }
    failed
}

/// The error of a fill whose task ended without an answer (it panicked).
fn ended_early() -> CacheError {
    CacheError::Exhausted("a fill that ended early".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_are_cut_from_the_landed_runs() {
        let run = |offset: u64, len: usize| {
            let data: Vec<u8> = (offset..offset + len as u64).map(|i| i as u8).collect();
            (offset, Bytes::from(data))
        };
        let want = |offset: u64, len: usize| run(offset, len).1;
        // two adjacent runs (one cut at io_size), then a hole, then a third
        let landed = vec![run(8192, 4096), run(0, 8192), run(20_480, 4096)];
        let extents = [(100, 50), (8000, 1000), (0, 12_288), (21_000, 10), (5, 0)];
        let got = slice_landed(&extents, landed.clone()).unwrap();
        for (&(o, l), g) in extents.iter().zip(&got) {
            assert_eq!(g, &want(o, l), "extent ({o}, {l})");
        }
        // zero copy when one run holds the extent
        assert_eq!(got[0].as_ptr(), landed[1].1[100..].as_ptr());
        // across the hole, or past the last run: not all landed
        assert!(slice_landed(&[(12_000, 9000)], landed.clone()).is_none());
        assert!(slice_landed(&[(24_000, 1000)], landed.clone()).is_none());
        assert!(slice_landed(&[(u64::MAX - 1, 10)], landed).is_none());
    }
}
