//! The process's allocator under a server's load: buffers of 128 KiB and
//! more given back to the kernel when they are freed.
//!
//! A server allocates a buffer for each large request frame it receives
//! (up to [`crate::Config::max_request_dlen`]) and for each piece of an
//! answer it reads, and frees it once the request is done, often on another
//! thread. glibc's `malloc` gives an allocation of at least its mmap
//! threshold (128 KiB at start) a mapping of its own, unmapped when freed;
//! but freeing one raises the threshold to that size (up to 32 MiB), after
//! which every buffer below it comes from the arena of the thread that
//! allocates it. What is freed there stays mapped: an arena shrinks only
//! from its top, and the trim threshold rose with the mmap threshold.
//! Measured with `benches/server_storm.rs` on the `serve` example: after a
//! storm of hostile frames it held 148 MB with its clients gone, nearly all
//! of it freed buffers in two arenas; 27 MB with the threshold fixed.
//!
//! [`unmap_large_buffers`] fixes the threshold at 128 KiB, which also stops
//! glibc from moving it. The `serve` and `xcache` examples call it first
//! thing; a program embedding a server may do the same, or set
//! `MALLOC_MMAP_THRESHOLD_=131072` in its environment, which glibc reads at
//! start. The cost: a large buffer is mapped anew each time, its pages
//! zeroed by the kernel as they are first touched (reads of a
//! [`crate::LocalFs`] reuse their buffers, see [`xroot_proto::pool`]).
//!
//! `mallopt` has no safe binding, so this module holds an `unsafe` call.
#![allow(unsafe_code)]

/// The mmap threshold [`unmap_large_buffers`] fixes: glibc's own at start.
pub const MMAP_THRESHOLD: usize = 128 << 10;

/// Makes `malloc` serve every allocation of [`MMAP_THRESHOLD`] bytes or
/// more with a mapping of its own, unmapped as soon as it is freed, for
/// the rest of the process (glibc's `M_MMAP_THRESHOLD`). Does nothing when
/// the environment sets `MALLOC_MMAP_THRESHOLD_` (glibc applied that), or
/// on a C library other than glibc. Returns whether it set the threshold.
pub fn unmap_large_buffers() -> bool {
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
        return false;
    }
    set_mmap_threshold(MMAP_THRESHOLD)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_mmap_threshold(bytes: usize) -> bool {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: mallopt only sets a tunable of glibc's allocator; it takes
    // the allocator's lock and may be called from any thread at any time.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, bytes) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_mmap_threshold(_bytes: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_set_unless_the_environment_set_it() {
        let set = unmap_large_buffers();
        let by_env = std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some();
        let glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
        assert_eq!(set, glibc && !by_env);
    }
}
