//! Whether a range of a file is in the page cache, asked of the kernel
//! without reading it: `cachestat(2)` (Linux 6.5). The server sends a
//! resident range with `sendfile(2)` on its own tasks; a range that would
//! wait for the disk is read on the blocking pool instead.
//!
//! `cachestat` has no safe binding (rustix does not wrap it), so this
//! module holds the crate's one `unsafe` call.
#![allow(unsafe_code)]

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// The system call's number: one number on every Linux architecture since
/// the tables were unified (`include/uapi/asm-generic/unistd.h`).
const SYS_CACHESTAT: libc::c_long = 451;

/// Set once the kernel has said it has no `cachestat`, so that it is not
/// asked again.
static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// `struct cachestat_range` (`include/uapi/linux/mman.h`): bytes.
#[repr(C)]
struct Range {
    off: u64,
    len: u64,
}

/// `struct cachestat`: counts of pages.
#[repr(C)]
#[derive(Default)]
struct Stat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Whether every page holding bytes `offset..offset + len` of `file` is
/// in the page cache; `None` when the kernel cannot say (no `cachestat`,
/// or a file system it does not apply to). `len` must not be 0.
pub(crate) fn resident(file: &std::fs::File, offset: u64, len: usize) -> Option<bool> {
    if UNAVAILABLE.load(Ordering::Relaxed) || len == 0 {
        return None;
    }
    let page = rustix::param::page_size() as u64;
    let first = offset / page;
    let last = (offset + len as u64 - 1) / page;
    let range = Range {
        off: first * page,
        len: (last - first + 1) * page,
    };
    let mut stat = Stat::default();
    // SAFETY: the kernel reads `range` and writes `stat`, both live
    // `#[repr(C)]` values of the layouts `cachestat(2)` defines, and the
    // descriptor is open for the whole call (borrowed from `file`).
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const Range,
            &mut stat as *mut Stat,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            UNAVAILABLE.store(true, Ordering::Relaxed);
        }
        return None;
    }
    Some(stat.nr_cache > last - first)
}

/// Bytes per chunk whose residency is remembered.
const CHUNK: u64 = 4 << 20;
/// Chunks remembered per file (direct-mapped): 4 GiB of a file at once.
const SLOTS: usize = 1024;
/// How long an answer about a chunk is trusted, in milliseconds.
const TRUST_MS: u32 = 1000;
/// The bit of a slot's value that says the chunk was wholly resident.
const WHOLE: u32 = 1 << 31;

/// What `cachestat` said about the 4 MiB chunks of one file, remembered for
/// a second, so that many small reads in a chunk cost one system call
/// between them instead of one each (at a thousand sessions reading 64 KiB
/// at random, the call per read took 4.5% of the server's CPU). A chunk
/// evicted within that second makes a read in it wait for the disk on the
/// server's task, as every read of the stock server does. Reads in a chunk
/// not wholly resident ask about their own bytes.
#[derive(Debug)]
pub(crate) struct Residency {
    epoch: std::time::Instant,
    /// Per slot: the chunk's index + 1 (low 32 bits) in the high half; in
    /// the low half [`WHOLE`] and the time, in ms since `epoch` modulo
    /// 2³¹, until which the answer holds.
    slots: Box<[std::sync::atomic::AtomicU64]>,
}

impl Default for Residency {
    fn default() -> Residency {
        Residency {
            epoch: std::time::Instant::now(),
            slots: (0..SLOTS).map(|_| Default::default()).collect(),
        }
    }
}

impl Residency {
    /// Whether every page holding bytes `offset..offset + len` of `file`,
    /// whose size is `size` (`offset + len <= size`, `len > 0`), is in the
    /// page cache, as [`resident`] says, per chunk for up to a second.
    pub(crate) fn check(
        &self,
        file: &std::fs::File,
        offset: u64,
        len: usize,
        size: u64,
    ) -> Option<bool> {
        let first = offset / CHUNK;
        let last = (offset + len as u64 - 1) / CHUNK;
        if last - first >= 4 {
            return resident(file, offset, len);
        }
        let now = (self.epoch.elapsed().as_millis() as u32) & !WHOLE;
        for chunk in first..=last {
            let whole = match self.known(chunk, now) {
                Some(whole) => whole,
                None => {
                    let start = chunk * CHUNK;
                    let end = (start + CHUNK).min(size);
                    let whole = resident(file, start, (end - start) as usize)?;
                    self.remember(chunk, whole, now);
                    whole
                }
            };
            if !whole {
                return resident(file, offset, len);
            }
        }
        Some(true)
    }

    fn slot(&self, chunk: u64) -> (&std::sync::atomic::AtomicU64, u32) {
        let tag = (chunk as u32).wrapping_add(1);
        (&self.slots[chunk as usize % SLOTS], tag)
    }

    /// Whether `chunk` was wholly resident, if asked less than a second
    /// ago.
    fn known(&self, chunk: u64, now: u32) -> Option<bool> {
        let (slot, tag) = self.slot(chunk);
        let v = slot.load(Ordering::Relaxed);
        let (got, low) = ((v >> 32) as u32, v as u32);
        let left = (low & !WHOLE).wrapping_sub(now) & !WHOLE;
        (got == tag && left > 0 && left <= TRUST_MS).then_some(low & WHOLE != 0)
    }

    fn remember(&self, chunk: u64, whole: bool, now: u32) {
        let (slot, tag) = self.slot(chunk);
        let until = now.wrapping_add(TRUST_MS) & !WHOLE;
        let low = if whole { WHOLE | until } else { until };
        slot.store(u64::from(tag) << 32 | u64::from(low), Ordering::Relaxed);
    }
}
