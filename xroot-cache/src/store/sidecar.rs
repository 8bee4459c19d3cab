//! The sidecar `<path>.cinfo`: which blocks of one data file are cached, the
//! crc32c of every 4 kB page, the origin's validators, when the origin last
//! confirmed them (with the rest of its stat) and the access time.
//!
//! # Format (version 2, all integers little-endian)
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `b"xrcinfo\0"` |
//! | 8 | 4 | version, `2` (u32); a sidecar of version 1 (without the checked fields) is reset |
//! | 12 | 4 | page size, `4096` (u32, [`PAGE_SIZE`]) |
//! | 16 | 8 | block size in bytes (u64): a power of two, at least 4096 |
//! | 24 | 8 | validator: origin file size in bytes (u64) |
//! | 32 | 8 | validator: origin modification time (i64, as the origin's stat gives it) |
//! | 40 | 8 | access time, nanoseconds since the Unix epoch (i64) |
//! | 48 | 8 | checked: when the origin last confirmed the validators, nanoseconds since the Unix epoch (i64; 0: never) |
//! | 56 | 8 | the origin's stat id when checked (i64) |
//! | 64 | 4 | the origin's stat flags when checked (u32, `kXR_isDir` etc.) |
//! | 68 | 4 | accesses recorded (u32): one per attach, a first open while no other is open (the stock XCache's `.cinfo` access count); sidecars written before it have 0 |
//! | 72 | 8 × ⌈blocks / 64⌉ | block bitmap: u64 words; block `i` is bit `i % 64` of word `i / 64`; bits past the last block are zero |
//! | … | 4 × ⌈size / 4096⌉ | crc32c of each page (u32); the last page may be short; meaningful only where the page's block bit is set |
//! | end − 4 | 4 | trailer: crc32c (u32) of every byte before it |
//!
//! `blocks = ⌈size / block size⌉`. The whole length follows from the size and
//! the block size, so a sidecar is accepted only if its file has exactly that
//! length, its trailer matches, and every header field equals what the caller
//! expects; anything else (absent, torn, garbage, another version, block size
//! or origin file) makes the caller reset the entry. Nothing is allocated from
//! a length read out of the file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use xroot_proto::page::{crc32c, PAGE_SIZE};

use super::bitmap::Bitmap;
use super::validators::{Checked, Validators};

const MAGIC: [u8; 8] = *b"xrcinfo\0";
const VERSION: u32 = 2;
const HEADER_LEN: usize = 72;
const TRAILER_LEN: usize = 4;
const PAGE: u64 = PAGE_SIZE as u64;

/// Largest origin file the store caches, in bytes (1 TiB): its in-memory
/// state (one crc32c per 4 kB page) is then at most 1 GiB.
pub const MAX_FILE_SIZE: u64 = 1 << 40;

/// The cached state of one data file, as held in memory and in its sidecar.
#[derive(Debug, Clone)]
pub(crate) struct Sidecar {
    validators: Validators,
    block_size: u64,
    /// Nanoseconds since the Unix epoch.
    atime_ns: i64,
    checked: Checked,
    accesses: u32,
    bits: Bitmap,
    crcs: Vec<u32>,
}

/// Why a sidecar on disk was not accepted (for the reset's log line).
pub(crate) type Rejected = &'static str;

/// Counts derived from a (size, block size) pair, checked.
struct Layout {
    blocks: u64,
    words: usize,
    pages: usize,
}

impl Layout {
    fn new(validators: Validators, block_size: u64) -> io::Result<Layout> {
        if !block_size.is_power_of_two() || block_size < PAGE {
            return Err(invalid(format!(
                "block size {block_size} is not a power of two of at least {PAGE} bytes"
            )));
        }
        if validators.size > MAX_FILE_SIZE {
            return Err(invalid(format!(
                "file size {} exceeds the cache's limit of {MAX_FILE_SIZE} bytes",
                validators.size
            )));
        }
        // Bounded by MAX_FILE_SIZE, so these fit a usize on 64-bit targets.
        let blocks = validators.size.div_ceil(block_size);
        let words = usize::try_from(blocks.div_ceil(64)).map_err(|_| invalid("too many blocks"))?;
        let pages = usize::try_from(validators.size.div_ceil(PAGE))
            .map_err(|_| invalid("too many pages"))?;
        Ok(Layout {
            blocks,
            words,
            pages,
        })
    }

    /// Bytes of the encoded sidecar.
    fn encoded_len(&self) -> usize {
        HEADER_LEN + 8 * self.words + 4 * self.pages + TRAILER_LEN
    }
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

/// A zeroed vector of `n` elements, or `OutOfMemory` instead of an abort.
fn zeroed<T: Clone + Default>(n: usize) -> io::Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
    v.resize(n, T::default());
    Ok(v)
}

impl Sidecar {
    /// An entry with nothing cached. Errors (`InvalidInput`): a block size that
    /// is not a power of two of at least 4096 bytes, a size over
    /// [`MAX_FILE_SIZE`].
    pub(crate) fn empty(
        validators: Validators,
        block_size: u64,
        atime_ns: i64,
    ) -> io::Result<Sidecar> {
        let layout = Layout::new(validators, block_size)?;
        Ok(Sidecar {
            validators,
            block_size,
            atime_ns,
            checked: Checked::default(),
            accesses: 0,
            bits: Bitmap::from_words(zeroed(layout.words)?),
            crcs: zeroed(layout.pages)?,
        })
    }

    /// Loads the sidecar at `path` for an origin file with `validators` at
    /// `block_size`. `Ok(Err(why))` when it is absent, unreadable or does not
    /// match; `Err` only for the argument checks of [`Sidecar::empty`] or a
    /// failed allocation.
    pub(crate) fn load(
        path: &Path,
        validators: Validators,
        block_size: u64,
    ) -> io::Result<Result<Sidecar, Rejected>> {
        let layout = Layout::new(validators, block_size)?;
        let expected = layout.encoded_len();
        let Ok(mut file) = File::open(path) else {
            return Ok(Err("absent or unreadable"));
        };
        match file.metadata() {
            Ok(meta) if meta.len() == expected as u64 => {}
            Ok(_) => return Ok(Err("wrong length")),
            Err(_) => return Ok(Err("unreadable")),
        }
        let mut buf = zeroed::<u8>(expected)?;
        if file.read_exact(&mut buf).is_err() {
            return Ok(Err("unreadable"));
        }
        Ok(Sidecar::decode(&buf, &layout, validators, block_size))
    }

    fn decode(
        buf: &[u8],
        layout: &Layout,
        validators: Validators,
        block_size: u64,
    ) -> Result<Sidecar, Rejected> {
        if buf.len() != layout.encoded_len() {
            return Err("wrong length");
        }
        let (body, trailer) = buf.split_at(buf.len() - TRAILER_LEN);
        if crc32c(body).to_le_bytes() != trailer {
            return Err("bad trailer crc32c");
        }
        let (header, rest) = body.split_at(HEADER_LEN);
        if header[0..8] != MAGIC {
            return Err("bad magic");
        }
        let u32_at =
            |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap_or_default());
        let u64_at =
            |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or_default());
        if u32_at(8) != VERSION {
            return Err("unknown version");
        }
        if u64::from(u32_at(12)) != PAGE {
            return Err("another page size");
        }
        if u64_at(16) != block_size {
            return Err("another block size");
        }
        let stored = Validators {
            size: u64_at(24),
            mtime: u64_at(32) as i64,
        };
        if stored != validators {
            return Err("validators differ");
        }
        let (bitmap, crcs) = rest.split_at(8 * layout.words);
        let bits: Vec<u64> = bitmap
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
            .collect();
        let tail = layout.blocks % 64;
        if tail != 0 && bits.last().is_some_and(|w| w >> tail != 0) {
            return Err("bits set past the last block");
        }
        Ok(Sidecar {
            validators,
            block_size,
            atime_ns: u64_at(40) as i64,
            checked: Checked {
                at_ns: u64_at(48) as i64,
                id: u64_at(56) as i64,
                flags: u32_at(64),
            },
            accesses: u32_at(68),
            bits: Bitmap::from_words(bits),
            crcs: crcs
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect(),
        })
    }

    /// The sidecar's bytes, trailer included.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(PAGE as u32).to_le_bytes());
        out.extend_from_slice(&self.block_size.to_le_bytes());
        out.extend_from_slice(&self.validators.size.to_le_bytes());
        out.extend_from_slice(&self.validators.mtime.to_le_bytes());
        out.extend_from_slice(&self.atime_ns.to_le_bytes());
        out.extend_from_slice(&self.checked.at_ns.to_le_bytes());
        out.extend_from_slice(&self.checked.id.to_le_bytes());
        out.extend_from_slice(&self.checked.flags.to_le_bytes());
        out.extend_from_slice(&self.accesses.to_le_bytes());
        self.bits
            .words()
            .iter()
            .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
        self.crcs
            .iter()
            .for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
        let trailer = crc32c(&out);
        out.extend_from_slice(&trailer.to_le_bytes());
        out
    }

    pub(crate) fn set_atime(&mut self, atime_ns: i64) {
        self.atime_ns = atime_ns;
    }

    /// Records one more access; the count, this one included.
    pub(crate) fn count_access(&mut self) -> u32 {
        self.accesses = self.accesses.saturating_add(1);
        self.accesses
    }

    pub(crate) fn validators(&self) -> Validators {
        self.validators
    }

    pub(crate) fn block_size(&self) -> u64 {
        self.block_size
    }

    /// When the origin last confirmed the validators, and its stat then.
    pub(crate) fn checked(&self) -> Checked {
        self.checked
    }

    pub(crate) fn set_checked(&mut self, checked: Checked) {
        self.checked = checked;
    }

    /// Whether every block is cached (true for an empty file).
    pub(crate) fn is_complete(&self) -> bool {
        let blocks = self.blocks();
        let full = blocks / 64;
        let tail = blocks % 64;
        let words = self.bits.words();
        let whole = words[..full as usize].iter().all(|&w| w == u64::MAX);
        whole && (tail == 0 || words[full as usize] == (1u64 << tail) - 1)
    }

    /// Number of blocks of the file.
    pub(crate) fn blocks(&self) -> u64 {
        self.validators.size.div_ceil(self.block_size)
    }

    /// Whether `block` is cached (false past the last block).
    pub(crate) fn is_cached(&self, block: u64) -> bool {
        self.bits.get(block)
    }

    /// Sets (`true`) or clears the bit of `block`; ignored past the last block.
    pub(crate) fn set_cached(&mut self, block: u64, cached: bool) {
        if block < self.blocks() {
            self.bits.set(block, cached);
        }
    }

    /// Recorded crc32c of page `page` (0 past the end).
    pub(crate) fn crc(&self, page: u64) -> u32 {
        usize::try_from(page)
            .ok()
            .and_then(|p| self.crcs.get(p).copied())
            .unwrap_or(0)
    }

    /// Records the crc32c of page `page`; ignored past the end.
    pub(crate) fn set_crc(&mut self, page: u64, crc: u32) {
        if let Some(c) = usize::try_from(page)
            .ok()
            .and_then(|p| self.crcs.get_mut(p))
        {
            *c = crc;
        }
    }

    /// Takes from `other` (the same origin file's sidecar as another
    /// process wrote it) every block it has cached that this one has not
    /// and that `known` (the bits this one last wrote or loaded) has not:
    /// blocks another process added, not those this one dropped since (a
    /// page that failed its crc32c). Takes each block's bit and the crc32c
    /// of its pages; returns how many. `other` must have the same
    /// validators and block size (the caller loaded it for them). Takes
    /// `other`'s [`Checked`] too when it is the later.
    pub(crate) fn adopt(&mut self, other: &Sidecar, known: &[u64]) -> u64 {
        if other.checked.at_ns > self.checked.at_ns {
            self.checked = other.checked;
        }
        let mut adopted = 0;
        let pages_per_block = self.block_size / PAGE;
        let known = known.iter().chain(std::iter::repeat(&0));
        let words = self.bits.clone();
        let words = words.words().iter().zip(other.bits.words()).zip(known);
        for (w, ((&mine, &theirs), &known)) in words.enumerate() {
            let new = theirs & !mine & !known;
            for i in (0..64u64).filter(|i| new & (1 << i) != 0) {
                let block = w as u64 * 64 + i;
                self.set_cached(block, true);
                let first = block * pages_per_block;
                for page in first..first + pages_per_block {
                    self.set_crc(page, other.crc(page));
                }
                adopted += 1;
            }
        }
        adopted
    }

    /// The block bitmap: block `i` is bit `i % 64` of word `i / 64`.
    pub(crate) fn bits(&self) -> &[u64] {
        self.bits.words()
    }

    /// Bytes of the encoded sidecar.
    pub(crate) fn encoded_len(&self) -> usize {
        HEADER_LEN + 8 * self.bits.words().len() + 4 * self.crcs.len() + TRAILER_LEN
    }

    /// Bytes of the cached blocks (the last block counts its real length).
    pub(crate) fn cached_blocks(&self) -> u64 {
        self.bits.count()
    }

    pub(crate) fn cached_bytes(&self) -> u64 {
        let count = self.cached_blocks();
        let blocks = self.blocks();
        let mut bytes = count * self.block_size;
        if blocks > 0 && self.is_cached(blocks - 1) {
            bytes -= blocks * self.block_size - self.validators.size;
        }
        bytes
    }
}

/// Replaces `path` by `bytes` atomically: write `temp`, fsync it, rename it
/// over `path`, fsync the directory. Errors: those of the calls; `temp` is
/// removed when it could not be written (a full disk keeps no half file).
pub(crate) fn replace(path: &Path, temp: &Path, bytes: &[u8]) -> io::Result<()> {
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(temp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        });
    if let Err(e) = written {
        let _ = fs::remove_file(temp);
        return Err(e);
    }
    fs::rename(temp, path)?;
    sync_dir(path)
}

/// Updates `path` to `bytes` atomically, writing into the space `temp`
/// holds: `bytes` are written over `temp`'s content (a file of the same
/// length is overwritten in place, so on a file system that does so no new
/// disk space is needed), `temp` is fsynced and exchanged with `path`
/// (`renameat2(RENAME_EXCHANGE)`), so that `temp` then holds the previous
/// sidecar, the space of the next update; the directory is fsynced. Where
/// the exchange is not available (another platform or file system, or no
/// `path` yet), `temp` is renamed over `path` instead. Returns whether
/// `temp` still exists.
///
/// Errors: those of the calls (`StorageFull` when `temp` must grow on a
/// full disk); `path` is then unchanged.
pub(crate) fn update(path: &Path, temp: &Path, bytes: &[u8]) -> io::Result<bool> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(temp)?;
    file.write_all_at(bytes, 0)?;
    if file.metadata()?.len() > bytes.len() as u64 {
        file.set_len(bytes.len() as u64)?;
    }
    file.sync_all()?;
    drop(file);
    let kept = exchange(temp, path)?;
    sync_dir(path)?;
    Ok(kept)
}

/// Swaps `temp` and `path` (both kept), or renames `temp` over `path` where
/// a swap is not available; whether they were swapped.
fn exchange(temp: &Path, path: &Path) -> io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        use rustix::io::Errno;
        match renameat_with(CWD, temp, CWD, path, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(true),
            Err(Errno::INVAL | Errno::NOSYS | Errno::NOENT | Errno::OPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
    }
    fs::rename(temp, path)?;
    Ok(false)
}

/// fsyncs the directory holding `path`.
fn sync_dir(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) => File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}

/// Makes `temp` a file of `len` bytes with its disk space allocated, the
/// space a later [`update`] writes into (`fallocate`, or zeros written
/// where that is not supported). Nothing to do when it is one already.
///
/// Errors: those of the calls (`StorageFull` on a full disk); `temp` is
/// then removed.
pub(crate) fn reserve(temp: &Path, len: u64) -> io::Result<()> {
    if fs::metadata(temp).is_ok_and(|m| m.len() == len && m.blocks() * 512 >= len) {
        return Ok(());
    }
    let result = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(temp)
        .and_then(|file| allocate(&file, len));
    if result.is_err() {
        let _ = fs::remove_file(temp);
    }
    result
}

/// Allocates `len` bytes of disk for `file` (empty), extending it.
fn allocate(file: &File, len: u64) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{fallocate, FallocateFlags};
        use rustix::io::Errno;
        match fallocate(file, FallocateFlags::empty(), 0, len) {
            Ok(()) => return Ok(()),
            Err(Errno::OPNOTSUPP | Errno::NOSYS) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let zeros = [0u8; 64 << 10];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// The header of the sidecar at `path`, or `None` if it is not one of ours
/// (of this version). Reads the header only: no trailer check.
fn read_header(path: &Path) -> io::Result<Option<[u8; HEADER_LEN]>> {
    let mut header = [0u8; HEADER_LEN];
    match File::open(path)?.read_exact(&mut header) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    Ok((header[0..8] == MAGIC && version == VERSION).then_some(header))
}

fn i64_at(header: &[u8; HEADER_LEN], at: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&header[at..at + 8]);
    i64::from_le_bytes(b)
}

/// The access time (nanoseconds since the Unix epoch) in the header of the
/// sidecar at `path`, or `None` if the header is not one of ours. Reads the
/// header only: no trailer check.
pub(crate) fn read_atime(path: &Path) -> io::Result<Option<i64>> {
    Ok(read_header(path)?.map(|h| i64_at(&h, 40)))
}

/// The validators in the header of the sidecar at `path`, or `None` if
/// there is none of ours there (absent, unreadable, another version). Reads
/// the header only: [`Sidecar::load`] with them checks the rest.
pub(crate) fn read_validators(path: &Path) -> Option<Validators> {
    let header = read_header(path).ok()??;
    Some(Validators {
        size: i64_at(&header, 24) as u64,
        mtime: i64_at(&header, 32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(size: u64) -> Validators {
        Validators { size, mtime: 7 }
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut s = Sidecar::empty(v(10_000), 4096, 42).unwrap();
        s.set_cached(2, true);
        s.set_crc(2, 0xdead_beef);
        let checked = Checked {
            at_ns: 1_700_000_000_000_000_000,
            id: -5,
            flags: 0x10,
        };
        s.set_checked(checked);
        assert_eq!((s.count_access(), s.count_access()), (1, 2));
        let bytes = s.encode();
        let layout = Layout::new(v(10_000), 4096).unwrap();
        assert_eq!(bytes.len(), layout.encoded_len());
        assert_eq!(bytes.len(), 72 + 8 + 3 * 4 + 4);
        let back = Sidecar::decode(&bytes, &layout, v(10_000), 4096).unwrap();
        assert!(back.is_cached(2) && !back.is_cached(0) && !back.is_cached(1));
        assert_eq!(back.crc(2), 0xdead_beef);
        assert_eq!(back.atime_ns, 42);
        assert_eq!(back.checked(), checked);
        assert_eq!(back.cached_bytes(), 10_000 - 2 * 4096);
        assert_eq!(back.clone().count_access(), 3, "the count is kept");
    }

    #[test]
    fn every_flipped_byte_is_rejected() {
        let mut s = Sidecar::empty(v(70 * 4096), 4096, 1).unwrap();
        (0..70).step_by(3).for_each(|b| s.set_cached(b, true));
        let bytes = s.encode();
        let layout = Layout::new(v(70 * 4096), 4096).unwrap();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(Sidecar::decode(&bad, &layout, v(70 * 4096), 4096).is_err());
        }
    }

    #[test]
    fn bits_past_the_end_are_rejected_even_with_a_good_trailer() {
        let s = Sidecar::empty(v(3 * 4096), 4096, 1).unwrap();
        let mut bytes = s.encode();
        bytes[HEADER_LEN] = 0b1000; // block 3 of a 3-block file
        let n = bytes.len() - TRAILER_LEN;
        let crc = crc32c(&bytes[..n]).to_le_bytes();
        bytes[n..].copy_from_slice(&crc);
        let layout = Layout::new(v(3 * 4096), 4096).unwrap();
        assert_eq!(
            Sidecar::decode(&bytes, &layout, v(3 * 4096), 4096).unwrap_err(),
            "bits set past the last block"
        );
    }

    #[test]
    fn complete_means_every_block() {
        for blocks in [0u64, 1, 63, 64, 65, 130] {
            let mut s = Sidecar::empty(v(blocks * 4096), 4096, 0).unwrap();
            assert_eq!(s.is_complete(), blocks == 0, "{blocks} blocks, none cached");
            (0..blocks).for_each(|b| s.set_cached(b, true));
            assert!(s.is_complete(), "{blocks} blocks");
            if blocks > 0 {
                s.set_cached(blocks - 1, false);
                assert!(!s.is_complete(), "{blocks} blocks, the last missing");
                s.set_cached(blocks - 1, true);
                s.set_cached(0, false);
                assert!(!s.is_complete(), "{blocks} blocks, the first missing");
            }
        }
    }

    #[test]
    fn adopting_keeps_the_later_check() {
        let mut mine = Sidecar::empty(v(4096), 4096, 0).unwrap();
        let mut theirs = mine.clone();
        let later = Checked {
            at_ns: 20,
            id: 1,
            flags: 0,
        };
        theirs.set_checked(later);
        mine.set_checked(Checked {
            at_ns: 10,
            id: 1,
            flags: 0,
        });
        mine.adopt(&theirs, &[]);
        assert_eq!(mine.checked(), later);
        theirs.set_checked(Checked {
            at_ns: 5,
            id: 1,
            flags: 0,
        });
        mine.adopt(&theirs, &[]);
        assert_eq!(mine.checked(), later);
    }

    #[test]
    fn arguments_are_checked() {
        for bs in [0, 1000, 2048, 4096 * 3] {
            assert!(Sidecar::empty(v(1), bs, 0).is_err(), "block size {bs}");
        }
        assert!(Sidecar::empty(v(MAX_FILE_SIZE + 1), 4096, 0).is_err());
        assert!(Sidecar::empty(v(u64::MAX), 4096, 0).is_err());
        let empty = Sidecar::empty(v(0), 4096, 0).unwrap();
        assert_eq!((empty.blocks(), empty.cached_bytes()), (0, 0));
    }

    #[test]
    fn bit_ops_ignore_out_of_range() {
        let mut s = Sidecar::empty(v(4096 * 5), 8192, 0).unwrap();
        s.set_cached(3, true);
        s.set_cached(u64::MAX, true);
        s.set_crc(u64::MAX, 1);
        assert!(!s.is_cached(3) && !s.is_cached(u64::MAX));
        assert_eq!(s.crc(u64::MAX), 0);
        s.set_cached(2, true);
        assert_eq!(s.cached_bytes(), 4096);
    }
}
