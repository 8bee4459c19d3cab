//! The live file `<path>.cinfo.live`: the blocks every process sharing the
//! cache directory has written into one data file, before any sidecar
//! commits them, so that a process about to fetch a block can see that
//! another one just did (cross-process single flight, with the byte-range
//! locks of [`Live::lock`]).
//!
//! # Format (all integers little-endian)
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `b"xrclive\0"` |
//! | 8 | 8 | validator: origin file size in bytes (u64) |
//! | 16 | 8 | validator: origin modification time (i64) |
//! | 24 | 8 | block size in bytes (u64) |
//! | 32 | `blocks` | one byte per block: 1 once its data is written and the crc32c of its pages below, else 0 |
//! | 32 + `blocks` rounded up to 4 | 4 × pages | the crc32c of each 4 kB page (u32) |
//!
//! Nothing in it is trusted: a block taken from it is served only if its
//! pages match their crc32c, as any cached block. It is made with the entry
//! and removed with it, and when the entry is reset for other validators
//! (the next entry makes a new file, so a process still writing for the old
//! ones writes into a file no one reads). Each block's byte and crc32c are written by
//! the process holding the block's lock, so no two processes write them at
//! once; a byte is cleared without the lock when a page of the block
//! failed its check (that only loses a block).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use xroot_proto::page::PAGE_SIZE;

use super::validators::Validators;

const MAGIC: [u8; 8] = *b"xrclive\0";
const HEADER_LEN: u64 = 32;
const PAGE: u64 = PAGE_SIZE as u64;

/// The live file of one entry, open.
#[derive(Debug)]
pub(crate) struct Live {
    file: File,
    block_size: u64,
    /// Offset of the first page's crc32c.
    crc_base: u64,
}

fn header(validators: Validators, block_size: u64) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..16].copy_from_slice(&validators.size.to_le_bytes());
    h[16..24].copy_from_slice(&validators.mtime.to_le_bytes());
    h[24..32].copy_from_slice(&block_size.to_le_bytes());
    h
}

impl Live {
    /// Opens the live file at `path` for `validators` at `block_size`,
    /// making it if absent. `None` when it is another version's (the entry
    /// was reset by a process that saw another origin file): this entry
    /// then shares nothing.
    ///
    /// Errors: those of opening, reading and writing it.
    pub(crate) fn open(
        path: &Path,
        validators: Validators,
        block_size: u64,
    ) -> io::Result<Option<Live>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let want = header(validators, block_size);
        let mut got = [0u8; HEADER_LEN as usize];
        let n = read_at_most(&file, &mut got, 0)?;
        if n == 0 {
            // new: every process making it writes the same bytes
            file.write_all_at(&want, 0)?;
        } else if n < got.len() || got != want {
            return Ok(None);
        }
        let blocks = validators.size.div_ceil(block_size);
        Ok(Some(Live {
            file,
            block_size,
            crc_base: (HEADER_LEN + blocks).div_ceil(4) * 4,
        }))
    }

    /// Takes the lock of blocks `first..first + blocks` (an exclusive
    /// byte-range lock, `F_OFD_SETLK`, on their bytes here) if no other
    /// open file holds any of it: whether it did (it never waits). A lock
    /// is held by this open file, so the threads of one process never
    /// exclude each other (its single flight is in memory); it is dropped
    /// with the file, so a process killed holding it releases it.
    ///
    /// Errors: those of `fcntl`; `Unsupported` where there are no such
    /// locks (not Linux).
    pub(crate) fn try_lock(&self, first: u64, blocks: u64) -> io::Result<bool> {
        ofd::lock(&self.file, HEADER_LEN + first, blocks, true)
    }

    /// Releases the lock of blocks `first..first + blocks`.
    pub(crate) fn unlock(&self, first: u64, blocks: u64) -> io::Result<()> {
        ofd::lock(&self.file, HEADER_LEN + first, blocks, false).map(drop)
    }

    /// The blocks of `first..first + blocks` whose byte is set and that
    /// `wanted` asks for, each with the crc32c of its pages (of the file's
    /// `pages` pages). Reads the blocks' bytes in pieces of at most 64 KiB.
    ///
    /// Errors: read errors.
    pub(crate) fn written(
        &self,
        first: u64,
        blocks: u64,
        pages: u64,
        wanted: impl Fn(u64) -> bool,
    ) -> io::Result<Vec<(u64, Vec<u32>)>> {
        let mut out = Vec::new();
        let mut at = first;
        let end = first + blocks;
        let mut bytes = vec![0u8; blocks.min(64 << 10) as usize];
        while at < end {
            let piece = (end - at).min(bytes.len() as u64) as usize;
            let n = read_at_most(&self.file, &mut bytes[..piece], HEADER_LEN + at)?;
            for (i, _) in bytes[..n].iter().enumerate().filter(|(_, &b)| b == 1) {
                if let Some(found) = self.crcs_of(at + i as u64, pages, &wanted)? {
                    out.push(found);
                }
            }
            if n < piece {
                break;
            }
            at += piece as u64;
        }
        Ok(out)
    }

    /// The crc32c of the pages of `block`, if `wanted` asks for it and
    /// they are all there.
    fn crcs_of(
        &self,
        block: u64,
        pages: u64,
        wanted: &impl Fn(u64) -> bool,
    ) -> io::Result<Option<(u64, Vec<u32>)>> {
        if !wanted(block) {
            return Ok(None);
        }
        let per_block = self.block_size / PAGE;
        {
            let first_page = block * per_block;
            let count = per_block.min(pages.saturating_sub(first_page));
            let mut raw = vec![0u8; 4 * count as usize];
            if read_at_most(&self.file, &mut raw, self.crc_base + 4 * first_page)? < raw.len() {
                return Ok(None);
            }
            let crcs = raw
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            Ok(Some((block, crcs)))
        }
    }

    /// Records blocks `first..first + blocks` as written, with `crcs`, the
    /// crc32c of their pages from page `first_page` on: the crc32c first,
    /// then the blocks' bytes. Errors: write errors.
    pub(crate) fn publish(
        &self,
        first: u64,
        blocks: u64,
        first_page: u64,
        crcs: &[u32],
    ) -> io::Result<()> {
        let raw: Vec<u8> = crcs.iter().flat_map(|c| c.to_le_bytes()).collect();
        self.file
            .write_all_at(&raw, self.crc_base + 4 * first_page)?;
        self.file
            .write_all_at(&vec![1u8; blocks as usize], HEADER_LEN + first)
    }

    /// Clears the byte of `block` (a page of it failed its check).
    pub(crate) fn clear(&self, block: u64) -> io::Result<()> {
        self.file.write_all_at(&[0], HEADER_LEN + block)
    }
}

/// Reads into `buf` at `offset` until it is full or the file ends; how many
/// bytes were read.
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Open-file-description byte-range locks (`F_OFD_SETLK`), which rustix
/// does not wrap.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod ofd {
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;

    /// Takes (`exclusive`) or releases the lock of `len` bytes at `start`,
    /// without waiting: whether it was taken (released: always).
    pub(super) fn lock(file: &File, start: u64, len: u64, exclusive: bool) -> io::Result<bool> {
        let too_far = || io::Error::new(io::ErrorKind::InvalidInput, "lock range too far");
        // SAFETY: `flock` is a plain C struct for which all-zero bytes are
        // a valid value.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = if exclusive {
            libc::F_WRLCK
        } else {
            libc::F_UNLCK
        } as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = libc::off_t::try_from(start).map_err(|_| too_far())?;
        fl.l_len = libc::off_t::try_from(len).map_err(|_| too_far())?;
        fl.l_pid = 0; // required by F_OFD_*
        loop {
            // SAFETY: the descriptor is open for as long as `file` lives,
            // and `fl` is a valid `flock` the call only reads.
            let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &fl) };
            if rc == 0 {
                return Ok(true);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EACCES) => return Ok(false),
                Some(libc::EINTR) => {}
                _ => return Err(e),
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod ofd {
    use std::fs::File;
    use std::io;

    pub(super) fn lock(_: &File, _: u64, _: u64, _: bool) -> io::Result<bool> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}
