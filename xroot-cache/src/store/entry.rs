//! The cache directory ([`Store`]) and its entries ([`Entry`]), each a
//! data file and its sidecar (see the [store](super) module for what they
//! guarantee).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use xroot_proto::page::{crc32c, PAGE_SIZE};
use xroot_proto::response::StatInfo;

use super::bitmap::Bitmap;
use super::data::{self, DataFile};
use super::live::Live;
use super::sidecar::{self, Sidecar};
use super::validators::{now_ns, Checked, Validators};

const PAGE: u64 = PAGE_SIZE as u64;

/// File-name suffix of a sidecar.
pub(crate) const SIDECAR_SUFFIX: &str = ".cinfo";
/// File-name suffix of a sidecar being written.
pub(crate) const TEMP_SUFFIX: &str = ".cinfo.tmp";
/// File-name suffix of the blocks written and not committed yet, shared
/// between processes (the [`live`](super::live) module).
pub(crate) const LIVE_SUFFIX: &str = ".cinfo.live";

/// Whether `e` says the disk (or the user's quota on it) is full: ENOSPC or
/// EDQUOT.
pub fn is_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// Error of [`Entry::read`].
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `block` is not cached, or one of its pages failed its crc32c check
    /// (its bit is then cleared): fetch it again from the origin.
    #[error("block {block} is not cached")]
    Missing {
        /// Index of the block (file offset / block size).
        block: u64,
    },
    /// An I/O error, or `InvalidInput` for a read starting past the end of file.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The cache directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// Opens the cache directory `root`, creating it (and its parents) if
    /// absent. Errors: those of `create_dir_all`.
    pub fn open(root: impl Into<PathBuf>) -> io::Result<Store> {
        let root = root.into();
        fs::create_dir_all(&root)?;
        Ok(Store { root })
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The entry for logical path `path` (`"/a/b.root"`; the leading `/` is
    /// optional), an origin file with `validators`, cached in blocks of
    /// `block_size` bytes. Creates its directories and data file as needed
    /// and marks it accessed now (see [`Entry::touch`]).
    ///
    /// Loads its sidecar; if it is absent, unreadable, torn (bad trailer
    /// crc32c), of another version, page or block size, or its validators
    /// differ from `validators`, the entry is reset: an empty sidecar replaces
    /// it, then the data file is truncated to 0 bytes (first, when the disk
    /// is too full for the new sidecar: the old blocks are of no use). Then
    /// sets aside the space of the next sidecar (see
    /// [`Entry::write_blocks`]); a full disk does not fail the call for that.
    ///
    /// Keep at most one `Entry` per path at a time in a process (each
    /// commit keeps the blocks the others committed, but the blocks one
    /// clears after a failed crc32c may come back from another's).
    ///
    /// Errors: `InvalidInput` for a path with an empty, `.` or `..` segment, a
    /// NUL byte, a segment ending in `.cinfo`, `.cinfo.tmp` or `.cinfo.live`
    /// (reserved for the store's own files), a `block_size` that is not a power of two of at least 4096,
    /// or a size over [`MAX_FILE_SIZE`](super::MAX_FILE_SIZE);
    /// `OutOfMemory` if the block state cannot be allocated; otherwise
    /// file-system errors (`StorageFull` when the disk is too full for a new
    /// sidecar even so, see [`is_full`]).
    pub fn entry(&self, path: &str, validators: Validators, block_size: u64) -> io::Result<Entry> {
        let data_path = self.root.join(confine(path)?);
        let sidecar_path = with_suffix(&data_path, SIDECAR_SUFFIX);
        let temp_path = with_suffix(&data_path, TEMP_SUFFIX);
        let now = now_ns();
        let loaded = Sidecar::load(&sidecar_path, validators, block_size)?;
        if let Some(parent) = data_path.parent() {
            fs::create_dir_all(parent)?;
        }
        let data = DataFile::open(&data_path)?;
        let mut state = match loaded {
            Ok(state) => state,
            Err(_) => reset(
                path,
                &data,
                &sidecar_path,
                &temp_path,
                validators,
                block_size,
                now,
            )?,
        };
        state.set_atime(now);
        Entry::new(state, data, data_path, sidecar_path, temp_path)
    }

    /// The entry for `path` (as [`Store::entry`]) if its sidecar says the
    /// origin confirmed its validators within `window` of now
    /// ([`Entry::set_checked`]), with the stat the origin gave then: what a
    /// cache with a trust window serves without asking the origin (its
    /// cached blocks; a missing one needs the origin). `None` otherwise (no
    /// sidecar, a damaged one, confirmed too long ago, no data file);
    /// nothing is reset.
    /// Marks the entry accessed now.
    ///
    /// Errors: as [`Store::entry`].
    pub fn trusted(
        &self,
        path: &str,
        block_size: u64,
        window: Duration,
    ) -> io::Result<Option<(Entry, StatInfo)>> {
        let Some((mut state, paths)) = self.trusted_state(path, block_size, window)? else {
            return Ok(None);
        };
        let [data_path, sidecar_path, temp_path] = paths;
        let data = match DataFile::open_existing(&data_path) {
            Ok(data) => data,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let stat = state.checked().stat(state.validators());
        state.set_atime(now_ns());
        let entry = Entry::new(state, data, data_path, sidecar_path, temp_path)?;
        Ok(Some((entry, stat)))
    }

    /// Removes the entry of `path` (its sidecar first, then the space set
    /// aside for the next one, then its data) under the entry's lock, as a
    /// purge does: an [`Entry`] of it open elsewhere commits nothing more.
    /// Nothing to do when there is none.
    ///
    /// Errors: `InvalidInput` for a path [`Store::entry`] refuses; those of
    /// the lock and the removals.
    pub fn remove(&self, path: &str) -> io::Result<()> {
        let data_path = self.root.join(confine(path)?);
        let _locked = lock_data(&data_path)?;
        for p in [
            with_suffix(&data_path, SIDECAR_SUFFIX),
            with_suffix(&data_path, TEMP_SUFFIX),
            with_suffix(&data_path, LIVE_SUFFIX),
            data_path,
        ] {
            match fs::remove_file(&p) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// The stat [`Store::trusted`] would open `path` with, without opening
    /// it (nor marking it accessed); `None` when it would not.
    ///
    /// Errors: as [`Store::entry`].
    pub fn trusted_stat(
        &self,
        path: &str,
        block_size: u64,
        window: Duration,
    ) -> io::Result<Option<StatInfo>> {
        let Some((state, [data_path, ..])) = self.trusted_state(path, block_size, window)? else {
            return Ok(None);
        };
        if !data_path.exists() {
            return Ok(None);
        }
        Ok(Some(state.checked().stat(state.validators())))
    }

    /// The sidecar of `path` if the origin confirmed it within `window`,
    /// with the paths of its data file, sidecar and temporary
    /// sidecar.
    fn trusted_state(
        &self,
        path: &str,
        block_size: u64,
        window: Duration,
    ) -> io::Result<Option<(Sidecar, [PathBuf; 3])>> {
        let data_path = self.root.join(confine(path)?);
        let sidecar_path = with_suffix(&data_path, SIDECAR_SUFFIX);
        let temp_path = with_suffix(&data_path, TEMP_SUFFIX);
        let Some(validators) = sidecar::read_validators(&sidecar_path) else {
            return Ok(None);
        };
        let Ok(state) = Sidecar::load(&sidecar_path, validators, block_size)? else {
            return Ok(None);
        };
        if !state.checked().within(window) {
            return Ok(None);
        }
        Ok(Some((state, [data_path, sidecar_path, temp_path])))
    }
}

/// The sidecar of an entry whose sidecar on disk was not accepted: the one
/// another process sharing the directory wrote meanwhile, if it now is,
/// else an empty one, written, with the data file truncated. Under the
/// entry's lock, so that no process reads data truncated under a sidecar
/// still claiming it.
fn reset(
    path: &str,
    data: &DataFile,
    sidecar_path: &Path,
    temp_path: &Path,
    validators: Validators,
    block_size: u64,
    now: i64,
) -> io::Result<Sidecar> {
    let _locked = data.lock()?;
    let why = match Sidecar::load(sidecar_path, validators, block_size)? {
        Ok(theirs) => return Ok(theirs),
        Err(why) => why,
    };
    tracing::debug!(path, why, "cache entry reset");
    // a new live file is made for the new validators (see the live module)
    match fs::remove_file(with_suffix(sidecar_path, ".live")) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let empty = Sidecar::empty(validators, block_size, now)?;
    let bytes = empty.encode();
    match sidecar::replace(sidecar_path, temp_path, &bytes) {
        Err(e) if is_full(&e) => {
            data.truncate()?;
            sidecar::replace(sidecar_path, temp_path, &bytes)?;
        }
        other => other?,
    }
    data.truncate()?;
    Ok(empty)
}

/// Takes the cross-process lock of the data file at `path` (see
/// [`Entry::flush`]) for removing the entry; `None` when the file is gone.
/// The lock is released when the returned file is closed.
pub(crate) fn lock_data(path: &Path) -> io::Result<Option<fs::File>> {
    data::lock_path(path)
}

/// Checks a logical path and returns it relative, to join under the root.
pub(crate) fn confine(path: &str) -> io::Result<PathBuf> {
    let bad = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cache path {path:?}: {why}"),
        )
    };
    let rel = path.strip_prefix('/').unwrap_or(path);
    if rel.contains('\0') {
        return Err(bad("contains NUL"));
    }
    let mut out = PathBuf::new();
    for seg in rel.split('/') {
        match seg {
            "" => return Err(bad("empty segment")),
            "." | ".." => return Err(bad("`.` or `..` segment")),
            s if [SIDECAR_SUFFIX, TEMP_SUFFIX, LIVE_SUFFIX]
                .iter()
                .any(|suffix| s.ends_with(suffix)) =>
            {
                return Err(bad("a segment ends with a sidecar suffix"))
            }
            s => out.push(s),
        }
    }
    Ok(out)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    s.into()
}

/// One cached file: a sparse data file `<root>/<path>` and its sidecar
/// `<root>/<path>.cinfo`. Thread-safe (`Sync`); its methods block on disk
/// I/O (call them from `spawn_blocking`). Dropping it without
/// [`flush`](Entry::flush) loses the blocks written since the last flush (as
/// a crash would), never correctness.
#[derive(Debug)]
pub struct Entry {
    validators: Validators,
    block_size: u64,
    data: DataFile,
    data_path: PathBuf,
    sidecar_path: PathBuf,
    temp_path: PathBuf,
    /// Whether `temp_path` holds the disk space of the next sidecar.
    reserved: AtomicBool,
    state: Mutex<State>,
    /// Serialises flushes (so sidecars are renamed in snapshot order) and
    /// the reservation of `temp_path`.
    flush: Mutex<()>,
    /// The blocks the processes sharing the directory wrote and have not
    /// committed, and their locks; none when it could not be opened or is
    /// another version's.
    live: Option<Live>,
}

#[derive(Debug)]
struct State {
    sidecar: Sidecar,
    /// The block bits of the sidecar on disk (as last written or loaded).
    durable: Vec<u64>,
    /// Changed since the last flush.
    dirty: bool,
    /// Blocks whose every page this process wrote, or read and found
    /// matching its crc32c, since their bit was last set: a bit per block
    /// (what [`Entry::region`] may hand out unread).
    checked: Bitmap,
}

impl State {
    /// Marks `block` checked or not.
    fn set_checked(&mut self, block: u64, checked: bool) {
        self.checked.set(block, checked);
    }

    /// Whether `block` is cached and checked.
    fn is_checked(&self, block: u64) -> bool {
        self.checked.get(block) && self.sidecar.is_cached(block)
    }

    /// Clears the bit of `block`: it must be fetched again.
    fn uncache(&mut self, block: u64) {
        self.sidecar.set_cached(block, false);
        self.set_checked(block, false);
    }
}

/// The cross-process locks of some blocks of an [`Entry`], from
/// [`Entry::try_claim`]; released when dropped.
#[derive(Debug)]
pub struct Claim {
    entry: std::sync::Arc<Entry>,
    /// The runs locked: first block and count.
    runs: Vec<(u64, u64)>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(live) = &self.entry.live {
            for &(first, blocks) in &self.runs {
                if let Err(e) = live.unlock(first, blocks) {
                    tracing::debug!("cache block unlock: {e}");
                }
            }
        }
    }
}

/// Locks ignoring poison: every update of the state is complete when made.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn invalid_input(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl Entry {
    /// An entry of `state` (loaded or reset), setting aside the space of
    /// its next sidecar (a full disk does not fail the call for that).
    fn new(
        state: Sidecar,
        data: DataFile,
        data_path: PathBuf,
        sidecar_path: PathBuf,
        temp_path: PathBuf,
    ) -> io::Result<Entry> {
        let reserved = match sidecar::reserve(&temp_path, state.encoded_len() as u64) {
            Ok(()) => true,
            Err(e) if is_full(&e) => false,
            Err(e) => return Err(e),
        };
        let durable = state.bits().to_vec();
        let (validators, block_size) = (state.validators(), state.block_size());
        let live_path = with_suffix(&sidecar_path, ".live");
        // under the entry's lock, as a reset removes it: a process never
        // makes the live file of another version than the sidecar's
        let live = data
            .lock()
            .and_then(|_locked| Live::open(&live_path, validators, block_size))
            .unwrap_or_else(|e| {
                tracing::debug!(path = %live_path.display(), "no live file: {e}");
                None
            });
        let entry = Entry {
            validators,
            block_size,
            data,
            data_path,
            sidecar_path,
            temp_path,
            reserved: AtomicBool::new(reserved),
            state: Mutex::new(State {
                sidecar: state,
                durable,
                dirty: true,
                checked: Bitmap::default(),
            }),
            flush: Mutex::new(()),
            live,
        };
        // what other processes wrote and did not commit yet
        let blocks = validators.size.div_ceil(block_size);
        entry.adopt_live(0, blocks);
        Ok(entry)
    }

    /// Takes in the blocks of `first..first + blocks` that the live file
    /// says a process wrote (with their pages' crc32c) and this entry does
    /// not have. Returns how many. A read error only loses them.
    fn adopt_live(&self, first: u64, blocks: u64) -> u64 {
        let Some(live) = &self.live else { return 0 };
        let pages = self.validators.size.div_ceil(PAGE);
        let cached = |b| lock(&self.state).sidecar.is_cached(b);
        let written = match live.written(first, blocks, pages, |b| !cached(b)) {
            Ok(written) => written,
            Err(e) => {
                tracing::debug!("reading the live file: {e}");
                return 0;
            }
        };
        let per_block = self.block_size / PAGE;
        let mut state = lock(&self.state);
        let mut adopted = 0;
        for (block, crcs) in written {
            if state.sidecar.is_cached(block) {
                continue;
            }
            for (page, crc) in (block * per_block..).zip(crcs) {
                state.sidecar.set_crc(page, crc);
            }
            state.sidecar.set_cached(block, true);
            state.dirty = true;
            adopted += 1;
        }
        adopted
    }

    /// Takes the cross-process locks of the blocks of `runs` (each a first
    /// block and a count) if no process sharing the directory holds any of
    /// them (it is fetching those blocks), and then takes in what the others
    /// wrote: afterwards [`Entry::is_cached`] says which blocks still need
    /// fetching. `None`, holding nothing, when one is held: try again
    /// later. Never waits. The locks are held until the [`Claim`] drops:
    /// write the fetched blocks before. Locks are per entry, so two claims
    /// in one process never exclude each other (keep them disjoint: the
    /// process's own single flight).
    ///
    /// Errors: those of the locks (`Unsupported` on platforms without
    /// them); no lock is then held.
    pub fn try_claim(
        self: &std::sync::Arc<Self>,
        runs: &[(u64, u64)],
    ) -> io::Result<Option<Claim>> {
        let mut claim = Claim {
            entry: self.clone(),
            runs: Vec::with_capacity(runs.len()),
        };
        let Some(live) = &self.live else {
            return Ok(Some(claim));
        };
        for &(first, blocks) in runs {
            // on a miss or an error the claim's drop releases what was taken
            if !live.try_lock(first, blocks)? {
                return Ok(None);
            }
            claim.runs.push((first, blocks));
        }
        for &(first, blocks) in &claim.runs {
            self.adopt_live(first, blocks);
        }
        Ok(Some(claim))
    }

    /// When the origin last confirmed this file's validators, and its stat
    /// then (as loaded, or as [`Entry::set_checked`] set it).
    pub fn checked(&self) -> Checked {
        lock(&self.state).sidecar.checked()
    }

    /// Records that the origin confirmed the validators (its stat matched
    /// them) as `checked` says; persisted at the next flush.
    pub fn set_checked(&self, checked: Checked) {
        let mut state = lock(&self.state);
        state.sidecar.set_checked(checked);
        state.dirty = true;
    }

    /// Whether every block is cached.
    pub fn is_complete(&self) -> bool {
        lock(&self.state).sidecar.is_complete()
    }

    /// The origin file's validators this entry caches.
    pub fn validators(&self) -> Validators {
        self.validators
    }

    /// Block size in bytes.
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// Whether block `block` (file offset / block size) is cached (its bit is
    /// set; its pages are checked only when read). False past the last block.
    pub fn is_cached(&self, block: u64) -> bool {
        lock(&self.state).sidecar.is_cached(block)
    }

    /// Writes `data` at file `offset` to the data file, THEN records the
    /// crc32c of each of its 4 kB pages and sets the blocks' bits in memory
    /// (durable at the next [`flush`](Entry::flush)). `offset` must be block
    /// aligned and `data` whole blocks, except that the last may be short if
    /// it ends exactly at the file size. Returns the number of blocks written
    /// (0 for empty `data`).
    ///
    /// First sets aside the disk space of the next sidecar, if that is not
    /// done yet, so that blocks written can be indexed. A failed write frees
    /// whatever part of `data` it wrote (punches a hole there) and sets no
    /// bit.
    ///
    /// Errors: `InvalidInput` for an unaligned offset, a partial block not at
    /// the end of file, or data past the end of file; write errors
    /// (`StorageFull` for a full disk, see [`is_full`]), including those of
    /// setting the sidecar's space aside (then nothing is written).
    pub fn write_blocks(&self, offset: u64, data: &[u8]) -> io::Result<u64> {
        if data.is_empty() {
            return Ok(0);
        }
        let (size, bs, len) = (self.validators.size, self.block_size, data.len() as u64);
        let end = offset
            .checked_add(len)
            .filter(|&end| end <= size)
            .ok_or_else(|| {
                invalid_input(format!(
                    "write of {len} bytes at {offset} past the end of file ({size} bytes)"
                ))
            })?;
        if !offset.is_multiple_of(bs) || (!len.is_multiple_of(bs) && end != size) {
            return Err(invalid_input(format!(
                "write of {len} bytes at {offset} is not whole blocks of {bs} bytes"
            )));
        }
        self.reserve()?;
        if let Err(e) = self.data.write_at(offset, data) {
            // not indexed, so of no use: give its space back
            if let Err(p) = self.data.punch(offset, len) {
                tracing::debug!("freeing a failed block write: {p}");
            }
            return Err(e);
        }
        let crcs: Vec<u32> = data.chunks(PAGE_SIZE).map(crc32c).collect();
        let (first_page, first_block, blocks) = (offset / PAGE, offset / bs, len.div_ceil(bs));
        {
            let mut state = lock(&self.state);
            for (page, &crc) in (first_page..).zip(&crcs) {
                state.sidecar.set_crc(page, crc);
            }
            for block in first_block..first_block + blocks {
                state.sidecar.set_cached(block, true);
                state.set_checked(block, true);
            }
            state.dirty = true;
        }
        if let Some(live) = &self.live {
            if let Err(e) = live.publish(first_block, blocks, first_page, &crcs) {
                tracing::debug!("writing the live file: {e}");
            }
        }
        Ok(blocks)
    }

    /// Reads `len` bytes at file `offset`, clipped to the file size (empty at
    /// the end of file), and checks every 4 kB page it touches against its
    /// recorded crc32c.
    ///
    /// Errors: [`StoreError::Missing`] with the first block whose bit is
    /// clear, or else the first whose page does not match its crc32c (the
    /// bits of every block with such a page in the span are then cleared):
    /// fetch them again; [`StoreError::Io`] for read errors, and with
    /// `InvalidInput` for an `offset` past the end of file.
    pub fn read(&self, offset: u64, len: usize) -> Result<Bytes, StoreError> {
        let size = self.validators.size;
        if offset > size {
            return Err(invalid_input(format!(
                "read at {offset} past the end of file ({size} bytes)"
            ))
            .into());
        }
        let end = offset.saturating_add(len as u64).min(size);
        if end == offset {
            return Ok(Bytes::new());
        }
        let first_page = offset / PAGE;
        let span_start = first_page * PAGE;
        let span_end = end.div_ceil(PAGE).saturating_mul(PAGE).min(size);
        let expected: Vec<u32> = {
            let state = lock(&self.state);
            let blocks = offset / self.block_size..=(end - 1) / self.block_size;
            if let Some(block) = blocks.into_iter().find(|&b| !state.sidecar.is_cached(b)) {
                return Err(StoreError::Missing { block });
            }
            (first_page..span_end.div_ceil(PAGE))
                .map(|p| state.sidecar.crc(p))
                .collect()
        };
        // Bounded: at most `len` plus two partial pages, all inside the file.
        let mut buf = vec![0u8; (span_end - span_start) as usize];
        self.data.read_at(span_start, &mut buf)?;
        // Every bad page is found (not only the first), so that the caller
        // refetches all of them at once.
        let mut bad = None;
        for ((page, bytes), &want) in (first_page..).zip(buf.chunks(PAGE_SIZE)).zip(&expected) {
            if crc32c(bytes) != want {
                let block = page * PAGE / self.block_size;
                let mut state = lock(&self.state);
                // Unless a concurrent write_blocks has just replaced the page.
                if state.sidecar.crc(page) == want {
                    state.uncache(block);
                    state.dirty = true;
                    if let Some(live) = &self.live {
                        let _ = live.clear(block);
                    }
                }
                bad.get_or_insert(block);
            }
        }
        if let Some(block) = bad {
            return Err(StoreError::Missing { block });
        }
        {
            // the blocks whose every page was in the span are checked,
            // unless a page changed meanwhile (a reset, another write)
            let bs = self.block_size;
            let mut state = lock(&self.state);
            for block in span_start.div_ceil(bs)..span_end.div_ceil(bs) {
                let pages = block * bs / PAGE..((block + 1) * bs).min(size).div_ceil(PAGE);
                let whole = ((block + 1) * bs).min(size) <= span_end;
                let same = || {
                    pages
                        .clone()
                        .all(|p| state.sidecar.crc(p) == expected[(p - first_page) as usize])
                };
                if whole && state.sidecar.is_cached(block) && same() {
                    state.set_checked(block, true);
                }
            }
        }
        let from = (offset - span_start) as usize;
        Ok(Bytes::from(buf).slice(from..from + (end - offset) as usize))
    }

    /// Each `(offset, len)` range as [`Entry::read`] reads it (clipped to
    /// the file size, every page checked), one answer per range in the
    /// order given; ranges whose 4 kB page spans overlap or touch are read
    /// together, with one `pread` and one check of their span, and answered
    /// as slices of it (no copy). A vector read of neighbouring baskets
    /// (the NanoAOD trace, `benches/trace/`: 5050 elements in 1330 such
    /// groups) then reads 1.21× the bytes asked instead of 1.65× (each
    /// element's partial pages read again by its neighbour) in a quarter
    /// of the calls. No page is read that no range touches. After a range
    /// whose block is missing or fails its check, the other ranges are
    /// still read, so that every damaged block is found (and its bit
    /// cleared) at once.
    ///
    /// Errors: [`StoreError::Missing`] with the first such block (in
    /// offset order); [`StoreError::Io`] as [`Entry::read`].
    pub fn read_ranges(&self, ranges: &[(u64, usize)]) -> Result<Vec<Bytes>, StoreError> {
        let size = self.validators.size;
        let end = |(offset, len): (u64, usize)| offset.saturating_add(len as u64).min(size);
        let mut order: Vec<usize> = (0..ranges.len()).collect();
        order.sort_unstable_by_key(|&i| ranges[i].0);
        let mut out = vec![Bytes::new(); ranges.len()];
        let mut missing = None;
        let mut group = order.iter().copied().peekable();
        while let Some(first) = group.next() {
            // the ranges whose page spans reach this group's: read as one
            let (start, mut reach) = (ranges[first].0, end(ranges[first]));
            let mut members = vec![first];
            while let Some(&next) = group.peek() {
                if ranges[next].0 / PAGE > reach.div_ceil(PAGE) {
                    break;
                }
                reach = reach.max(end(ranges[next]));
                members.push(next);
                group.next();
            }
            let span = usize::try_from(reach.saturating_sub(start)).unwrap_or(usize::MAX);
            match self.read(start, span) {
                Ok(data) => {
                    for i in members {
                        let (offset, _) = ranges[i];
                        let from = usize::try_from(offset.min(reach) - start).unwrap_or(0);
                        let to = usize::try_from(end(ranges[i]).max(offset) - start).unwrap_or(0);
                        out[i] = data.slice(from.min(data.len())..to.min(data.len()));
                    }
                }
                Err(StoreError::Missing { block }) => {
                    missing.get_or_insert(StoreError::Missing { block });
                }
                Err(e) => return Err(e),
            }
        }
        missing.map_or(Ok(out), Err)
    }

    /// The data file's region holding `len` bytes at file `offset`
    /// (clipped to the file size), for the caller to send with
    /// `sendfile(2)` unread: `(file, offset, len)`, only when every block
    /// it touches is cached and checked in this process (written by it, or
    /// read through [`Entry::read`] and found matching its crc32c since its
    /// bit was set). `None` otherwise (read it with [`Entry::read`], which
    /// checks it), and for an empty range. Never blocks on I/O.
    ///
    /// What is not checked: a page damaged on disk after it was checked is
    /// sent as it is (the pgread path and vector reads still check every
    /// page they read).
    pub fn region(&self, offset: u64, len: usize) -> Option<(Arc<std::fs::File>, u64, usize)> {
        let end = offset.saturating_add(len as u64).min(self.validators.size);
        if end <= offset {
            return None;
        }
        let state = lock(&self.state);
        let mut blocks = offset / self.block_size..=(end - 1) / self.block_size;
        if !blocks.all(|b| state.is_checked(b)) {
            return None;
        }
        Some((self.data.shared(), offset, (end - offset) as usize))
    }

    /// Makes the bits set so far durable: takes a snapshot of the state,
    /// fdatasyncs the data file (so every block in the snapshot is on disk),
    /// then, holding the entry's cross-process lock (`flock` on the data
    /// file), adds to the snapshot the blocks another process sharing the
    /// directory has committed since (and takes them into this entry too),
    /// writes the sidecar into `<path>.cinfo.tmp` (the space set aside for
    /// it), fsyncs it, swaps it with `<path>.cinfo` (atomic) and fsyncs the
    /// directory. The sidecar carries the access time last marked by
    /// [`touch`](Entry::touch) (or by [`Store::entry`]). Does nothing if
    /// nothing changed since the last flush, or once the entry was evicted
    /// (its data file removed or replaced by another process: its bits
    /// would index another file's data) or superseded (the sidecar on disk
    /// is of other validators: the entry was reset for a newer version of
    /// the origin file).
    ///
    /// Errors: those of the sync, lock, write and rename; the state stays to
    /// flush again. When the disk is full ([`is_full`]), the blocks written
    /// since the sidecar on disk was written are dropped first (their bits
    /// cleared, their space freed): nothing on disk is left unindexed.
    pub fn flush(&self) -> io::Result<()> {
        let _serial = lock(&self.flush);
        let (mut snapshot, known) = {
            let mut state = lock(&self.state);
            if !state.dirty {
                return Ok(());
            }
            state.dirty = false;
            (state.sidecar.clone(), state.durable.clone())
        };
        let result = self.data.sync().and_then(|()| {
            let _locked = self.data.lock()?;
            if !self.data.is_at(&self.data_path)? {
                tracing::debug!(path = %self.data_path.display(), "cache entry evicted: not indexed");
                return Ok(None);
            }
            if sidecar::read_validators(&self.sidecar_path).is_some_and(|v| v != self.validators) {
                // reset for another version of the origin file (by another
                // process, or by this one on finding the file changed)
                tracing::debug!(path = %self.data_path.display(), "cache entry superseded: not indexed");
                return Ok(None);
            }
            if let Ok(theirs) = Sidecar::load(&self.sidecar_path, self.validators, self.block_size)? {
                if snapshot.adopt(&theirs, &known) > 0 {
                    lock(&self.state).sidecar.adopt(&theirs, &known);
                }
            }
            let kept = sidecar::update(&self.sidecar_path, &self.temp_path, &snapshot.encode())?;
            Ok(Some(kept))
        });
        match result {
            Ok(Some(kept)) => {
                self.reserved.store(kept, Ordering::SeqCst);
                lock(&self.state).durable = snapshot.bits().to_vec();
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => {
                // the space set aside is checked again before the next write
                self.reserved.store(false, Ordering::SeqCst);
                let mut state = lock(&self.state);
                state.dirty = true;
                if is_full(&e) {
                    let dropped = self.drop_unindexed(&mut state);
                    tracing::warn!(
                        path = %self.sidecar_path.display(),
                        dropped,
                        "cache disk full: blocks that could not be indexed dropped"
                    );
                }
                Err(e)
            }
        }
    }

    /// Sets aside the disk space of the next sidecar, unless it is already
    /// (see [`sidecar::reserve`]). Errors: those of the allocation.
    fn reserve(&self) -> io::Result<()> {
        if self.reserved.load(Ordering::SeqCst) {
            return Ok(());
        }
        let _serial = lock(&self.flush);
        if self.reserved.load(Ordering::SeqCst) {
            return Ok(());
        }
        let len = lock(&self.state).sidecar.encoded_len() as u64;
        sidecar::reserve(&self.temp_path, len)?;
        self.reserved.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Clears the bit of every block set since the sidecar on disk was
    /// written and punches its data out: blocks nothing on disk indexes.
    /// Returns how many. A write of those blocks racing with this may lose
    /// its data to the punch; its pages then fail their crc32c and are
    /// fetched again, never served wrong.
    fn drop_unindexed(&self, state: &mut State) -> u64 {
        let extra: Vec<u64> = state
            .sidecar
            .bits()
            .iter()
            .zip(state.durable.iter().chain(std::iter::repeat(&0)))
            .enumerate()
            .flat_map(|(w, (&now, &durable))| {
                let extra = now & !durable;
                (0..64u64)
                    .filter(move |i| extra & (1 << i) != 0)
                    .map(move |i| w as u64 * 64 + i)
            })
            .collect();
        let bs = self.block_size;
        let mut start = 0;
        while start < extra.len() {
            let mut end = start + 1;
            while end < extra.len() && extra[end] == extra[end - 1] + 1 {
                end += 1;
            }
            for &b in &extra[start..end] {
                state.uncache(b);
                if let Some(live) = &self.live {
                    let _ = live.clear(b);
                }
            }
            let blocks = (end - start) as u64;
            if let Err(e) = self.data.punch(extra[start] * bs, blocks * bs) {
                tracing::debug!("freeing unindexed blocks: {e}");
            }
            start = end;
        }
        extra.len() as u64
    }

    /// Records one more access of the file (an attach: its first open while
    /// no other is open), persisted at the next flush; returns the accesses
    /// recorded, this one included (the stock XCache's `access_cnt`).
    pub fn count_access(&self) -> u64 {
        let mut state = lock(&self.state);
        state.dirty = true;
        u64::from(state.sidecar.count_access())
    }

    /// Marks the entry accessed now (for purge's least-recently-used order;
    /// persisted at the next flush).
    pub fn touch(&self) {
        self.touch_at(now_ns());
    }

    /// Marks the entry accessed at `atime_ns` (nanoseconds since the Unix epoch).
    pub(crate) fn touch_at(&self, atime_ns: i64) {
        let mut state = lock(&self.state);
        state.sidecar.set_atime(atime_ns);
        state.dirty = true;
    }

    /// Bytes of the cached blocks (the last, short block counts its real length).
    pub fn cached_bytes(&self) -> u64 {
        lock(&self.state).sidecar.cached_bytes()
    }

    /// How many blocks are cached.
    pub fn cached_blocks(&self) -> u64 {
        lock(&self.state).sidecar.cached_blocks()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: u64 = 4096;

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    /// The bytes of a region, as `sendfile(2)` would send them.
    fn region_bytes(e: &Entry, offset: u64, len: usize) -> Option<Vec<u8>> {
        let (file, at, n) = e.region(offset, len)?;
        let mut buf = vec![0; n];
        std::os::unix::fs::FileExt::read_exact_at(&*file, &mut buf, at).unwrap();
        Some(buf)
    }

    #[test]
    fn ranges_on_neighbouring_pages_are_read_together_as_each_alone() {
        let dir = tempfile::tempdir().unwrap();
        let data = bytes(8 * BLOCK as usize + 100);
        let v = Validators {
            size: data.len() as u64,
            mtime: 7,
        };
        let e = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        e.write_blocks(0, &data[..6 * BLOCK as usize]).unwrap();
        e.write_blocks(7 * BLOCK, &data[7 * BLOCK as usize..])
            .unwrap();
        // out of order; adjacent, overlapping, sharing a page, on the next
        // page, pages apart, empty, a duplicate, and through the end of file
        let ranges = [
            (3 * BLOCK + 5, 100),
            (10, 90),
            (100, 4000),
            (50, 20),
            (4100, 10),
            (2 * BLOCK, 10),
            (5 * BLOCK, 0),
            (10, 90),
            (7 * BLOCK + 1, 2 * BLOCK as usize),
        ];
        let got = e.read_ranges(&ranges).unwrap();
        assert_eq!(got.len(), ranges.len());
        for (&(offset, len), got) in ranges.iter().zip(&got) {
            let end = (offset + len as u64).min(v.size) as usize;
            assert_eq!(&got[..], &data[offset as usize..end], "range at {offset}");
            assert_eq!(&got[..], &e.read(offset, len).unwrap()[..]);
        }
        // a missing block fails the call, naming it; the others are read
        let err = e
            .read_ranges(&[(7 * BLOCK, 10), (6 * BLOCK + 10, 10), (0, 10)])
            .unwrap_err();
        assert!(matches!(err, StoreError::Missing { block: 6 }), "{err:?}");
        assert!(e.read_ranges(&[]).unwrap().is_empty());
    }

    #[test]
    fn regions_only_of_blocks_checked_in_this_process() {
        let dir = tempfile::tempdir().unwrap();
        let data = bytes(3 * BLOCK as usize + 100);
        let v = Validators {
            size: data.len() as u64,
            mtime: 7,
        };
        let store = Store::open(dir.path()).unwrap();
        let e = store.entry("/f", v, BLOCK).unwrap();
        assert!(e.region(0, 10).is_none(), "nothing cached");
        e.write_blocks(0, &data[..2 * BLOCK as usize]).unwrap();
        // written here: checked; clipped to what is asked and to the file
        assert_eq!(region_bytes(&e, 10, 5000).unwrap(), &data[10..5010]);
        assert!(
            e.region(BLOCK, 2 * BLOCK as usize).is_none(),
            "block 2 missing"
        );
        e.write_blocks(3 * BLOCK, &data[3 * BLOCK as usize..])
            .unwrap();
        assert_eq!(
            region_bytes(&e, 3 * BLOCK + 50, 1 << 20).unwrap(),
            &data[3 * BLOCK as usize + 50..]
        );
        assert!(e.region(v.size, 10).is_none(), "at end of file");
        e.flush().unwrap();
        drop(e);

        // another process: the bits are there, the checks are not, until a
        // read has checked the pages
        let e = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        assert!(e.is_cached(0) && e.region(0, 10).is_none());
        assert_eq!(&e.read(100, 10).unwrap()[..], &data[100..110]);
        assert_eq!(region_bytes(&e, 0, 10).unwrap(), &data[..10]);
        assert!(e.region(0, BLOCK as usize + 1).is_none(), "block 1 unread");

        // a page damaged on disk fails its read: no region of it after that
        std::os::unix::fs::FileExt::write_all_at(
            &std::fs::OpenOptions::new()
                .write(true)
                .open(dir.path().join("f"))
                .unwrap(),
            b"XX",
            BLOCK + 7,
        )
        .unwrap();
        assert!(e.read(BLOCK, 10).is_err());
        assert!(e.region(BLOCK, 10).is_none());
    }

    #[test]
    fn entries_of_two_processes_keep_what_each_cached() {
        // two stores on one directory, each entry with its own descriptor
        // and so its own lock, as two processes have
        let dir = tempfile::tempdir().unwrap();
        let data = bytes(4 * BLOCK as usize);
        let v = Validators {
            size: data.len() as u64,
            mtime: 7,
        };
        let a = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        let b = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        a.write_blocks(0, &data[..2 * BLOCK as usize]).unwrap();
        a.flush().unwrap();
        b.write_blocks(2 * BLOCK, &data[2 * BLOCK as usize..])
            .unwrap();
        b.flush().unwrap();
        // b's commit kept a's blocks, and b took them in
        assert!(b.is_cached(0) && b.is_cached(1));
        assert_eq!(&b.read(0, data.len()).unwrap()[..], &data[..]);
        let c = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        assert_eq!(&c.read(0, data.len()).unwrap()[..], &data[..]);
        // a's next commit keeps b's blocks too
        a.touch();
        a.flush().unwrap();
        let d = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        assert_eq!(d.cached_bytes(), data.len() as u64);
    }

    #[test]
    fn a_claim_fails_while_another_process_fetches_then_takes_its_blocks() {
        // two stores on one directory: two entries, two open files, so
        // their locks exclude each other as two processes' do
        let dir = tempfile::tempdir().unwrap();
        let data = bytes(8 * BLOCK as usize);
        let v = Validators {
            size: data.len() as u64,
            mtime: 7,
        };
        let a = std::sync::Arc::new(
            Store::open(dir.path())
                .unwrap()
                .entry("/f", v, BLOCK)
                .unwrap(),
        );
        let b = std::sync::Arc::new(
            Store::open(dir.path())
                .unwrap()
                .entry("/f", v, BLOCK)
                .unwrap(),
        );
        let held = a.try_claim(&[(0, 4)]).unwrap().expect("free blocks");
        // blocks 2 and 3 are held: b gets nothing, and keeps none of what
        // it took before the miss (6 and 7)
        assert!(b.try_claim(&[(6, 2), (2, 3)]).unwrap().is_none());
        drop(
            a.try_claim(&[(6, 2)])
                .unwrap()
                .expect("blocks 6 and 7 released"),
        );
        a.write_blocks(0, &data[..4 * BLOCK as usize]).unwrap();
        drop(held);
        let claim = b.try_claim(&[(2, 3), (6, 2)]).unwrap().expect("released");
        let cached: Vec<bool> = (0..8).map(|i| b.is_cached(i)).collect();
        drop(claim);
        // the blocks b claimed that a wrote, and only those
        assert_eq!(
            cached,
            [false, false, true, true, false, false, false, false]
        );
        let (two, four) = (2 * BLOCK as usize, 4 * BLOCK as usize);
        assert_eq!(&b.read(two as u64, two).unwrap()[..], &data[two..four]);
        // a new entry (a third process) takes in what was written, uncommitted
        let c = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        assert_eq!(c.cached_bytes(), 4 * BLOCK);
    }

    #[test]
    fn a_live_block_that_fails_its_check_is_not_taken_again() {
        let dir = tempfile::tempdir().unwrap();
        let data = bytes(2 * BLOCK as usize);
        let v = Validators {
            size: data.len() as u64,
            mtime: 7,
        };
        let a = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        a.write_blocks(0, &data).unwrap();
        std::os::unix::fs::FileExt::write_all_at(
            &fs::OpenOptions::new()
                .write(true)
                .open(dir.path().join("f"))
                .unwrap(),
            b"bad",
            10,
        )
        .unwrap();
        let b = std::sync::Arc::new(
            Store::open(dir.path())
                .unwrap()
                .entry("/f", v, BLOCK)
                .unwrap(),
        );
        assert!(matches!(
            b.read(0, 100),
            Err(StoreError::Missing { block: 0 })
        ));
        drop(b.try_claim(&[(0, 2)]).unwrap().unwrap());
        assert!(!b.is_cached(0) && b.is_cached(1));
        let c = Store::open(dir.path())
            .unwrap()
            .entry("/f", v, BLOCK)
            .unwrap();
        assert!(!c.is_cached(0) && c.is_cached(1));
    }

    #[test]
    fn an_entry_evicted_by_another_process_writes_no_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let data = bytes(2 * BLOCK as usize);
        let v = Validators {
            size: data.len() as u64,
            mtime: 7,
        };
        let store = Store::open(dir.path()).unwrap();
        let a = store.entry("/f", v, BLOCK).unwrap();
        a.write_blocks(0, &data).unwrap();
        // another process's purge: under the entry's lock, files removed
        {
            let _locked = lock_data(&dir.path().join("f")).unwrap().unwrap();
            for name in ["f.cinfo", "f.cinfo.tmp", "f"] {
                let _ = fs::remove_file(dir.path().join(name));
            }
        }
        a.flush().unwrap();
        assert!(!dir.path().join("f.cinfo").exists());
        // a new entry starts empty, its data file a new one
        let b = store.entry("/f", v, BLOCK).unwrap();
        assert_eq!(b.cached_bytes(), 0);
    }

    #[test]
    fn confine_accepts_plain_paths() {
        assert_eq!(confine("/a/b.root").unwrap(), PathBuf::from("a/b.root"));
        assert_eq!(confine("a").unwrap(), PathBuf::from("a"));
        assert_eq!(
            confine("/a/.hidden/b..c").unwrap(),
            PathBuf::from("a/.hidden/b..c")
        );
    }

    #[test]
    fn confine_rejects_escapes_and_reserved_names() {
        for p in [
            "",
            "/",
            "//a",
            "/a//b",
            "/a/",
            "/../a",
            "/a/../b",
            "/a/..",
            "/./a",
            "/a/.",
            "/a\0b",
            "/a.cinfo",
            "/a.cinfo/b",
            "/a/b.cinfo.tmp",
            "/a/b.cinfo.live",
        ] {
            let err = confine(p).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{p:?}");
        }
    }
}
