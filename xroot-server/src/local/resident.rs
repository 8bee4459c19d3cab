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
