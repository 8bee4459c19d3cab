//! Reusable buffers for frame bodies and file reads.
//!
//! A buffer of a few MiB that is allocated, filled, sent and freed for
//! every read costs more than the copy into it: glibc hands memory of that
//! size back to the kernel when it is freed (a heap trim or an `munmap`),
//! so the next buffer takes a page fault, and a zeroed page, for every
//! 4 KiB it touches. Measured on a 1 GiB copy over TLS, that was about a
//! tenth of the CPU of each side. The stock xrootd keeps its buffers for
//! the same reason (`XrdBuffManager`), and XrdCl reads into the caller's.
//!
//! A [`BufferPool`] hands out buffers in power-of-two sizes, from 4 KiB
//! to 64 MiB, and keeps those its [`Bytes`] give back when dropped, up to
//! a bound on the bytes it holds idle. No I/O here: the caller fills the
//! buffer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// The smallest buffer handed out: 2^12 bytes.
const MIN_CLASS: u32 = 12;
/// The largest buffer kept: 2^26 bytes (64 MiB); larger ones are
/// allocated for the one use.
const MAX_CLASS: u32 = 26;
const CLASSES: usize = (MAX_CLASS - MIN_CLASS + 1) as usize;

/// Idle buffers kept for reuse, up to [`BufferPool::idle_limit`] bytes in
/// all. Cheap to clone (one pool shared).
///
/// ```
/// use xroot_proto::pool::BufferPool;
/// let pool = BufferPool::new(64 << 20);
/// let mut buf = pool.take(1 << 20);
/// buf.as_mut_slice()[0] = 7;
/// let data = buf.freeze(1); // one byte filled
/// assert_eq!(&data[..], &[7]);
/// drop(data); // the buffer goes back to the pool
/// assert_eq!(pool.idle_bytes(), 1 << 20);
/// ```
#[derive(Debug, Clone)]
pub struct BufferPool {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Idle buffers by size class: `classes[i]` holds buffers of
    /// `2^(MIN_CLASS + i)` bytes.
    classes: [Mutex<Vec<Vec<u8>>>; CLASSES],
    idle: AtomicUsize,
    idle_limit: usize,
}

/// The size class of a buffer for `len` bytes: `None` past the largest.
fn class_of(len: usize) -> Option<usize> {
    let bits = len
        .max(1)
        .next_power_of_two()
        .trailing_zeros()
        .max(MIN_CLASS);
    (bits <= MAX_CLASS).then(|| (bits - MIN_CLASS) as usize)
}

impl BufferPool {
    /// A pool that keeps at most `idle_limit` bytes of idle buffers.
    pub fn new(idle_limit: usize) -> Self {
        BufferPool {
            inner: Arc::new(Inner {
                classes: std::array::from_fn(|_| Mutex::new(Vec::new())),
                idle: AtomicUsize::new(0),
                idle_limit,
            }),
        }
    }

    /// The most idle bytes this pool keeps.
    pub fn idle_limit(&self) -> usize {
        self.inner.idle_limit
    }

    /// Bytes of idle buffers held now.
    pub fn idle_bytes(&self) -> usize {
        self.inner.idle.load(Ordering::Relaxed)
    }

    /// A buffer of `len` bytes (their content unspecified: zeros, or what
    /// an earlier user left), reused when an idle one of its size class
    /// (`len` rounded up to a power of two, at least 4 KiB) is there, else
    /// newly allocated (zeroed, which the kernel does lazily for large
    /// ones). Past 64 MiB the buffer is not pooled.
    pub fn take(&self, len: usize) -> PooledBuf {
        let Some(class) = class_of(len) else {
            return PooledBuf {
                buf: vec![0; len],
                len,
                pool: None,
            };
        };
        let reused = self.inner.classes[class].lock().unwrap().pop();
        let buf = match reused {
            Some(b) => {
                self.inner.idle.fetch_sub(b.len(), Ordering::Relaxed);
                b
            }
            None => vec![0; 1 << (class as u32 + MIN_CLASS)],
        };
        PooledBuf {
            buf,
            len,
            pool: Some(Arc::clone(&self.inner)),
        }
    }
}

impl Inner {
    /// Keeps `buf` (a whole size class) unless that would pass the limit.
    fn give_back(&self, buf: Vec<u8>) {
        let size = buf.len();
        let Some(class) = class_of(size) else {
            return;
        };
        let kept = self
            .idle
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |idle| {
                (idle + size <= self.idle_limit).then_some(idle + size)
            });
        if kept.is_ok() {
            self.classes[class].lock().unwrap().push(buf);
        }
    }
}

/// A buffer from a [`BufferPool`]: `len` bytes to fill, then
/// [`PooledBuf::freeze`] into [`Bytes`] that return it to the pool when
/// the last of them is dropped. Dropped unfrozen, it returns at once.
#[derive(Debug)]
pub struct PooledBuf {
    buf: Vec<u8>,
    len: usize,
    /// `None` for a buffer too large to pool.
    pool: Option<Arc<Inner>>,
}

impl PooledBuf {
    /// The `len` bytes asked for, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }

    /// Bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether zero bytes were asked for.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first `filled` bytes (at most [`PooledBuf::len`]) as [`Bytes`],
    /// not copied; the buffer goes back to its pool when they (and every
    /// slice of them) are dropped.
    pub fn freeze(mut self, filled: usize) -> Bytes {
        self.len = filled.min(self.len);
        Bytes::from_owner(Filled(self))
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            pool.give_back(std::mem::take(&mut self.buf));
        }
    }
}

/// A frozen [`PooledBuf`]: its filled bytes, read-only.
struct Filled(PooledBuf);

impl AsRef<[u8]> for Filled {
    fn as_ref(&self) -> &[u8] {
        &self.0.buf[..self.0.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_within_their_size_class() {
        let pool = BufferPool::new(8 << 20);
        let first = pool.take(2 << 20);
        let at = first.buf.as_ptr();
        drop(first.freeze(0));
        // same class (2 MiB): the same allocation comes back
        let again = pool.take(1500 << 10);
        assert_eq!(again.buf.as_ptr(), at);
        assert_eq!(again.len(), 1500 << 10);
        assert_eq!(pool.idle_bytes(), 0);
        drop(again);
        // another class: a new buffer, the idle one stays
        let small = pool.take(64 << 10);
        assert_ne!(small.buf.as_ptr(), at);
        assert_eq!(small.buf.len(), 64 << 10);
        assert_eq!(pool.idle_bytes(), 2 << 20);
        // tiny reads take the smallest class
        assert_eq!(pool.take(9).buf.len(), 4096);
        assert_eq!(pool.take(0).buf.len(), 4096);
    }

    #[test]
    fn idle_bytes_stay_under_the_limit() {
        let pool = BufferPool::new(4 << 20);
        let bufs: Vec<_> = (0..5).map(|_| pool.take(1 << 20)).collect();
        drop(bufs);
        assert_eq!(pool.idle_bytes(), 4 << 20);
        assert_eq!(pool.inner.classes[8].lock().unwrap().len(), 4);
        // past the largest class: not pooled
        let huge = pool.take((64 << 20) + 1);
        assert!(huge.pool.is_none());
        assert_eq!(huge.len(), (64 << 20) + 1);
    }

    #[test]
    fn slices_hold_the_buffer_until_the_last_is_dropped() {
        let pool = BufferPool::new(1 << 20);
        let mut buf = pool.take(1000);
        buf.as_mut_slice().fill(5);
        let all = buf.freeze(800);
        assert_eq!(all.len(), 800);
        let part = all.slice(10..20);
        drop(all);
        assert_eq!(pool.idle_bytes(), 0);
        assert_eq!(&part[..], &[5; 10]);
        drop(part);
        assert_eq!(pool.idle_bytes(), 4096);
    }
}
