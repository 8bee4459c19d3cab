//! Planning a fill: the extents a client asks for → the blocks they touch →
//! runs of missing blocks → origin vector reads within the protocol limits.
//!
//! Blocks are the unit of cache state, runs the unit of transfer: a run is
//! a stretch of contiguous missing blocks, fetched as one element of an
//! origin vector read. Two runs merge across a small gap of missing blocks
//! (the gap is fetched too) so that scattered small reads do not become as
//! many elements; no run exceeds the transfer size. The runs are then
//! grouped into as few origin requests as the limits of `kXR_readv`
//! allow (PROTOCOL.md §10, [`xroot_proto::limits`]): at most
//! [`MAX_READV_ELEMENTS`] elements, each at most [`MAX_READV_ELEMENT`]
//! bytes, and the element lengths plus [`READ_LIST_LEN`] bytes per element
//! at most [`MAX_READV_TOTAL`] — what a stock xrootd 5.5.3 origin
//! accepts, whatever our own decoder accepts from clients. A client vector
//! read of exactly 2^31 bytes with its headers (1024 elements of 2,097,136
//! bytes) therefore becomes two origin requests (it does anyway: runs are
//! whole blocks, at most 2,093,056 bytes at 4 kB, so it is more than 1024
//! runs).
//!
//! Everything here is pure: no I/O, no clock, no locks. The caller passes
//! each block's state as a function and owns what the plan implies
//! (marking the runs' blocks in flight, awaiting the others).

use std::ops::Range;

use xroot_proto::limits::{MAX_READV_ELEMENT, MAX_READV_ELEMENTS, MAX_READV_TOTAL, READ_LIST_LEN};
use xroot_proto::page::PAGE_SIZE;

#[cfg(test)]
mod tests;

/// Why a [`Geometry`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The block size, transfer size or gap cannot work; the text says
    /// which value and why.
    #[error("invalid cache geometry: {0}")]
    InvalidGeometry(String),
}

/// Block geometry and transfer shaping. All sizes in bytes.
///
/// Build it with [`Geometry::new`], which enforces the rules below; a
/// value built by hand that breaks them never makes [`plan`] panic, but
/// its runs may break the protocol limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per block, the unit of cache state: a power of two, at least
    /// one page ([`PAGE_SIZE`], 4096) and small enough that a run of one
    /// block fits a readv element (at most 1 MiB).
    pub block_size: u64,
    /// Most bytes in one run (one origin readv element): a multiple of
    /// `block_size`, at most [`MAX_READV_ELEMENT`] (2,097,136).
    pub io_size: u64,
    /// Most bytes of unrequested missing blocks between two runs that are
    /// fetched to merge them into one. Merging saves readv elements, not
    /// origin requests (a client vector read is one origin request either
    /// way), and costs bytes: on the NanoAOD trace (`benches/trace/`) a
    /// 16 KiB gap fetches 1.36× the bytes asked against 1.21× without.
    pub io_gap: u64,
}

impl Default for Geometry {
    /// 4096-byte blocks, runs of at most 1 MiB, no gap merging.
    fn default() -> Geometry {
        Geometry {
            block_size: PAGE_SIZE as u64,
            io_size: 1 << 20,
            io_gap: 0,
        }
    }
}

impl Geometry {
    /// Checks and shapes a geometry (sizes in bytes).
    ///
    /// `block_size` must be a power of two of at least [`PAGE_SIZE`] (so a
    /// multiple of it) whose size fits a readv element; `io_size` must be
    /// at least `block_size` and is clamped down to the largest multiple of
    /// `block_size` that is no more than itself and [`MAX_READV_ELEMENT`]
    /// (2,097,136: so 2,093,056 at 4 kB blocks); `io_gap` may be anything.
    ///
    /// # Errors
    /// [`PlanError::InvalidGeometry`] naming the offending value.
    pub fn new(block_size: u64, io_size: u64, io_gap: u64) -> Result<Geometry, PlanError> {
        let invalid = |why: String| Err(PlanError::InvalidGeometry(why));
        if block_size < PAGE_SIZE as u64 || !block_size.is_power_of_two() {
            return invalid(format!(
                "block size {block_size} bytes is not a power of two of at least {PAGE_SIZE} bytes"
            ));
        }
        let max_io = u64::from(MAX_READV_ELEMENT) / block_size * block_size;
        if max_io == 0 {
            return invalid(format!(
                "block size {block_size} bytes exceeds the largest readv element \
                 ({MAX_READV_ELEMENT} bytes)"
            ));
        }
        if io_size < block_size {
            return invalid(format!(
                "io size {io_size} bytes is smaller than the block size {block_size} bytes"
            ));
        }
        Ok(Geometry {
            block_size,
            io_size: (io_size / block_size * block_size).min(max_io),
            io_gap,
        })
    }

    /// The block size, never zero.
    fn bs(&self) -> u64 {
        self.block_size.max(1)
    }

    /// Most blocks in one run: as many as `io_size` and a readv element
    /// hold, at least one.
    fn run_blocks(&self) -> u64 {
        (self.io_size.min(u64::from(MAX_READV_ELEMENT)) / self.bs()).max(1)
    }

    /// Blocks in a file of `file_size` bytes: `ceil(file_size / block_size)`.
    pub fn blocks_in(&self, file_size: u64) -> u64 {
        file_size.div_ceil(self.bs())
    }

    /// The byte range `(offset, len)` of `block` in a file of `file_size`
    /// bytes: `len` is `block_size`, less for the last block (short at
    /// EOF), 0 for a block past the end.
    pub fn block_range(&self, block: u64, file_size: u64) -> (u64, usize) {
        self.blocks_range(block, 1, file_size)
    }

    /// The byte range of `blocks` blocks from `first`, clipped at EOF.
    fn blocks_range(&self, first: u64, blocks: u64, file_size: u64) -> (u64, usize) {
        let offset = first.saturating_mul(self.bs());
        let len = blocks
            .saturating_mul(self.bs())
            .min(file_size.saturating_sub(offset));
        (offset, usize::try_from(len).unwrap_or(usize::MAX))
    }
}

/// What the cache knows of one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockState {
    /// Neither cached nor being fetched: the plan fetches it.
    Missing,
    /// Being fetched by someone else: the plan awaits it.
    InFlight,
    /// In the store: the plan serves it from there.
    Cached,
}

/// A run of contiguous blocks fetched as ONE element of an origin vector
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The run's first block number.
    pub first_block: u64,
    /// How many blocks it holds (at least one).
    pub blocks: u64,
    /// Its byte offset in the file: `first_block × block_size`.
    pub offset: u64,
    /// Its length in bytes: `blocks × block_size`, clipped at EOF (the
    /// readv element's `rlen`).
    pub len: usize,
}

/// What to do for one client read: fetch `runs` in `requests`, await
/// `wait`, serve the rest from the store.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Runs to fetch, ascending, disjoint.
    pub runs: Vec<Run>,
    /// The runs grouped into origin vector reads: each a non-empty range
    /// of indices into `runs`, in order, of at most [`MAX_READV_ELEMENTS`]
    /// (1024) runs whose lengths plus [`READ_LIST_LEN`] (16) bytes per run
    /// total at most [`MAX_READV_TOTAL`] (`0x7fffffff`) bytes. Each request
    /// holds as many runs as fit, so when all runs fit, there is one.
    pub requests: Vec<Range<usize>>,
    /// Blocks needed by the extents that are InFlight (fetched by someone
    /// else): await them. Ascending, distinct.
    pub wait: Vec<u64>,
    /// How many blocks needed by the extents are Cached (serve them from
    /// the store).
    pub cached: u64,
}

/// Plans the fetch of the requested `extents`, each `(offset, len)` in
/// bytes, of a file of `file_size` bytes, where `state(block)` gives each
/// block's state.
///
/// Extents may come in any order, overlap or be empty; the caller has
/// clipped them to `file_size` (whatever lies beyond is ignored). Every
/// block an extent touches is needed: a needed Missing block goes into a
/// run, an InFlight one into [`Plan::wait`], a Cached one is counted in
/// [`Plan::cached`]. Runs are built in ascending block order: contiguous
/// needed Missing blocks, and two runs merge across a gap of at most
/// `io_gap` bytes when every gap block is Missing (the gap blocks are then
/// fetched too) and the merged run stays within `io_size`; a run is cut at
/// `io_size`. The result depends only on the arguments (not on the order
/// of `extents`); no block is in two runs, no Cached or InFlight block in
/// any run. `state` is asked once about each needed block and each gap
/// block considered, never about a block past the end of the file.
pub fn plan(
    extents: &[(u64, usize)],
    file_size: u64,
    geo: &Geometry,
    state: impl Fn(u64) -> BlockState,
) -> Plan {
    let mut runs = RunBuilder {
        geo,
        file_size,
        runs: Vec::new(),
        open: None,
        barrier: false,
    };
    let mut wait = Vec::new();
    let mut cached = 0;
    for block in needed(extents, file_size, geo.bs()).into_iter().flatten() {
        match state(block) {
            BlockState::Missing => runs.missing(block, &state),
            BlockState::InFlight => {
                runs.barrier = true;
                wait.push(block);
            }
            BlockState::Cached => {
                runs.barrier = true;
                cached += 1;
            }
        }
    }
    let runs = runs.finish();
    Plan {
        requests: requests(&runs),
        runs,
        wait,
        cached,
    }
}

/// The most bytes a [`plan`] of `extents` (as [`plan`] takes them) can
/// fetch, whatever the blocks' states: every block they touch, clipped at
/// the end of the file, plus `io_gap` bytes between each two stretches of
/// touched blocks (the gaps a run may be merged across).
pub(crate) fn fetch_bound(extents: &[(u64, usize)], file_size: u64, geo: &Geometry) -> u64 {
    let ranges = needed(extents, file_size, geo.bs());
    let gaps = (ranges.len() as u64).saturating_sub(1);
    ranges
        .iter()
        .map(|r| geo.blocks_range(r.start, r.end - r.start, file_size).1 as u64)
        .fold(gaps.saturating_mul(geo.io_gap), u64::saturating_add)
}

/// The blocks the extents touch, as ascending disjoint ranges of block
/// numbers, within the file.
fn needed(extents: &[(u64, usize)], file_size: u64, block_size: u64) -> Vec<Range<u64>> {
    let mut ranges: Vec<Range<u64>> = extents
        .iter()
        .filter_map(|&(offset, len)| {
            let end = offset
                .saturating_add(u64::try_from(len).unwrap_or(u64::MAX))
                .min(file_size);
            (offset < end).then(|| offset / block_size..end.div_ceil(block_size))
        })
        .collect();
    ranges.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// Builds runs from needed Missing blocks fed in ascending order.
struct RunBuilder<'g> {
    geo: &'g Geometry,
    file_size: u64,
    runs: Vec<Run>,
    /// The blocks of the run being built.
    open: Option<Range<u64>>,
    /// A needed block that is not Missing came after the open run: it can
    /// no longer grow.
    barrier: bool,
}

impl RunBuilder<'_> {
    /// Adds the needed Missing `block`, above every block added before.
    fn missing(&mut self, block: u64, state: &impl Fn(u64) -> BlockState) {
        if let Some(open) = &self.open {
            if self.joins(open, block, state) {
                self.open = Some(open.start..block + 1);
                return;
            }
            self.close();
        }
        self.open = Some(block..block + 1);
        self.barrier = false;
    }

    /// Whether the open run may grow up to and including `block`: nothing
    /// needed but not Missing in between, the gap within `io_gap` bytes and
    /// all Missing, the result within `io_size`.
    fn joins(&self, open: &Range<u64>, block: u64, state: &impl Fn(u64) -> BlockState) -> bool {
        let gap = block - open.end;
        !self.barrier
            && block + 1 - open.start <= self.geo.run_blocks()
            && gap
                .checked_mul(self.geo.bs())
                .is_some_and(|bytes| bytes <= self.geo.io_gap)
            && (open.end..block).all(|b| state(b) == BlockState::Missing)
    }

    fn close(&mut self) {
        if let Some(open) = self.open.take() {
            let blocks = open.end - open.start;
            let (offset, len) = self.geo.blocks_range(open.start, blocks, self.file_size);
            self.runs.push(Run {
                first_block: open.start,
                blocks,
                offset,
                len,
            });
        }
    }

    fn finish(mut self) -> Vec<Run> {
        self.close();
        self.runs
    }
}

/// Groups `runs` in order into as few vector reads as the limits allow,
/// filling each before starting the next.
fn requests(runs: &[Run]) -> Vec<Range<usize>> {
    let mut requests = Vec::new();
    let mut start = 0;
    let mut total = 0u64;
    for (i, run) in runs.iter().enumerate() {
        let cost = u64::try_from(run.len)
            .unwrap_or(u64::MAX)
            .saturating_add(READ_LIST_LEN as u64);
        if i > start
            && (i - start == MAX_READV_ELEMENTS || total.saturating_add(cost) > MAX_READV_TOTAL)
        {
            requests.push(start..i);
            start = i;
            total = 0;
        }
        total = total.saturating_add(cost);
    }
    if start < runs.len() {
        requests.push(start..runs.len());
    }
    requests
}
