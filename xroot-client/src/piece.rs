//! Splitting a transfer into requests the server handles, and running the
//! requests of one call concurrently.
//!
//! - [`split`]: one extent into pieces of at most a given size whose
//!   boundaries are multiples of that size in the file (so page-aligned for
//!   pgread and pgwrite, PROTOCOL.md §6.5, §6.7).
//! - [`plan_vectors`]: many extents into vector requests (`kXR_readv`,
//!   `kXR_pgreadv`) that respect an element count, an element size and a
//!   total (PROTOCOL.md §6.4).
//! - [`assemble`]: the pieces back into one buffer per extent, in request
//!   order.
//! - [`run_all`]: the requests of one call, a bounded number in flight.

use std::future::Future;

use bytes::{Bytes, BytesMut};
use futures::stream::{self, StreamExt, TryStreamExt};
use xroot_proto::limits::MAX_READV_ELEMENTS;

use crate::error::Result;

/// Most data one pgread, pgwrite or plain read request of a split transfer
/// carries: 8 MiB (a multiple of the 4096-byte page).
pub(crate) const MAX_PIECE: usize = 8 << 20;

/// Requests of one call in flight at once.
pub(crate) const PARALLEL: usize = 16;

/// The pieces of `len` bytes at `offset`: `(offset, len)` of at most `max`
/// bytes each, every boundary a multiple of `max` in the file. Nothing for
/// `len == 0`. `max` must be positive.
pub(crate) fn split(offset: u64, len: usize, max: usize) -> impl Iterator<Item = (u64, usize)> {
    let end = offset + len as u64;
    let max = max as u64;
    let mut at = offset;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let stop = end.min((at / max + 1) * max);
        let piece = (at, (stop - at) as usize);
        at = stop;
        Some(piece)
    })
}

/// What one vector request may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VectorLimits {
    /// Most elements per request (`readv_iov_max`).
    pub(crate) elements: usize,
    /// Most bytes per element (`readv_ior_max`).
    pub(crate) element_len: usize,
    /// Most bytes per request, `element_overhead` per element included.
    pub(crate) total: u64,
    /// Bytes each element adds to the total (16 for readv's element header).
    pub(crate) element_overhead: u64,
}

/// One `kXR_pgreadv` carries at most 1024 extents (`maxRvecsz`) and, here,
/// 8 MiB of data (the extension itself does not cap an element).
pub(crate) const PGREADV_LIMITS: VectorLimits = VectorLimits {
    elements: MAX_READV_ELEMENTS,
    element_len: MAX_PIECE,
    total: MAX_PIECE as u64,
    element_overhead: 0,
};

/// One element of a planned vector request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Element {
    /// Index of the caller's extent this element serves.
    pub(crate) range: usize,
    /// File offset, bytes.
    pub(crate) offset: u64,
    /// Length, bytes (at least 1).
    pub(crate) len: usize,
}

/// Splits `ranges` (`(offset, len)` each) into vector requests under
/// `limits`: each extent into elements of at most `element_len` bytes, the
/// elements in order into requests of at most `elements` elements and
/// `total` bytes. An empty extent gets no element, so no request is ever
/// empty; no extents (or only empty ones) give no request.
pub(crate) fn plan_vectors(ranges: &[(u64, usize)], limits: &VectorLimits) -> Vec<Vec<Element>> {
    let overhead = limits.element_overhead;
    let element_len = (limits.element_len as u64)
        .min(limits.total.saturating_sub(overhead))
        .max(1) as usize;
    let mut requests = Vec::new();
    let mut current: Vec<Element> = Vec::new();
    let mut total = 0u64;
    let elements = ranges
        .iter()
        .enumerate()
        .flat_map(|(range, &(offset, len))| {
            let pieces = len.div_ceil(element_len);
            (0..pieces).map(move |i| {
                let at = i * element_len;
                Element {
                    range,
                    offset: offset + at as u64,
                    len: element_len.min(len - at),
                }
            })
        });
    for e in elements {
        let cost = e.len as u64 + overhead;
        if !current.is_empty()
            && (current.len() == limits.elements.max(1) || total + cost > limits.total)
        {
            requests.push(std::mem::take(&mut current));
            total = 0;
        }
        current.push(e);
        total += cost;
    }
    if !current.is_empty() {
        requests.push(current);
    }
    requests
}

/// Puts the data of planned elements back together: one buffer per extent
/// of `ranges`, in order. `results[i][j]` is the data of `plan[i][j]`. An
/// extent's data ends at its first element that came back short (end of
/// file); without a copy when it came in one element.
pub(crate) fn assemble(
    ranges: &[(u64, usize)],
    plan: &[Vec<Element>],
    results: Vec<Vec<Bytes>>,
) -> Vec<Bytes> {
    let mut parts: Vec<Vec<Bytes>> = vec![Vec::new(); ranges.len()];
    let mut ended = vec![false; ranges.len()];
    for (elements, data) in plan.iter().zip(results) {
        for (e, d) in elements.iter().zip(data) {
            if ended[e.range] {
                continue;
            }
            ended[e.range] = d.len() < e.len;
            parts[e.range].push(d);
        }
    }
    parts.into_iter().map(join).collect()
}

/// The buffers one after the other, without a copy for one buffer.
pub(crate) fn join(mut parts: Vec<Bytes>) -> Bytes {
    match parts.len() {
        0 => Bytes::new(),
        1 => parts.pop().unwrap(),
        _ => {
            let mut out = BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
            for p in &parts {
                out.extend_from_slice(p);
            }
            out.freeze()
        }
    }
}

/// Runs `f` on every item, at most [`PARALLEL`] at once, and returns the
/// results in item order; the first error ends the call.
pub(crate) async fn run_all<I, F, Fut, T>(items: I, f: F) -> Result<Vec<T>>
where
    I: IntoIterator,
    F: FnMut(I::Item) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    stream::iter(items)
        .map(f)
        .buffered(PARALLEL)
        .try_collect()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const READV: VectorLimits = VectorLimits {
        elements: 1024,
        element_len: 2_097_136,
        total: 0x7fff_ffff,
        element_overhead: 16,
    };

    #[test]
    fn split_on_multiples_of_the_piece() {
        let p: Vec<_> = split(1000, 20 << 20, 8 << 20).collect();
        assert_eq!(
            p,
            [
                (1000, (8 << 20) - 1000),
                (8 << 20, 8 << 20),
                (16 << 20, (4 << 20) + 1000)
            ]
        );
        assert_eq!(split(5, 0, 4096).count(), 0);
        assert_eq!(split(0, 4096, 4096).collect::<Vec<_>>(), [(0, 4096)]);
    }

    #[test]
    fn plan_splits_by_count_size_and_total() {
        // 2500 small ranges: 1024 + 1024 + 452
        let ranges: Vec<_> = (0..2500u64).map(|i| (i * 10, 10)).collect();
        let plan = plan_vectors(&ranges, &READV);
        assert_eq!(
            plan.iter().map(Vec::len).collect::<Vec<_>>(),
            [1024, 1024, 452]
        );
        assert_eq!(plan[1][0].range, 1024);

        // one range of 5 MB: three elements of at most 2,097,136 bytes
        let plan = plan_vectors(&[(7, 5_000_000)], &READV);
        assert_eq!(
            plan[0]
                .iter()
                .map(|e| (e.offset, e.len))
                .collect::<Vec<_>>(),
            [
                (7, 2_097_136),
                (7 + 2_097_136, 2_097_136),
                (7 + 2 * 2_097_136, 5_000_000 - 2 * 2_097_136)
            ]
        );

        // 1024 maximal elements exceed the total with their headers: 1023 + 1
        let ranges = vec![(0u64, 2_097_136usize); 1024];
        let plan = plan_vectors(&ranges, &READV);
        assert_eq!(plan.iter().map(Vec::len).collect::<Vec<_>>(), [1023, 1]);
        for r in &plan {
            let total: u64 = r.iter().map(|e| e.len as u64 + 16).sum();
            assert!(total <= 0x7fff_ffff);
        }

        // empty ranges get no element; nothing at all gives no request
        assert!(plan_vectors(&[], &READV).is_empty());
        assert!(plan_vectors(&[(5, 0), (9, 0)], &READV).is_empty());
        let plan = plan_vectors(&[(5, 0), (9, 3)], &READV);
        assert_eq!(
            plan,
            [vec![Element {
                range: 1,
                offset: 9,
                len: 3
            }]]
        );
    }

    #[test]
    fn assemble_in_order_and_stop_at_a_short_element() {
        let ranges = [(0u64, 6usize), (100, 0), (50, 4)];
        let plan = vec![
            vec![
                Element {
                    range: 0,
                    offset: 0,
                    len: 3,
                },
                Element {
                    range: 0,
                    offset: 3,
                    len: 3,
                },
            ],
            vec![
                Element {
                    range: 2,
                    offset: 50,
                    len: 2,
                },
                Element {
                    range: 2,
                    offset: 52,
                    len: 2,
                },
            ],
        ];
        let b = |s: &'static [u8]| Bytes::from_static(s);
        let results = vec![vec![b(b"abc"), b(b"def")], vec![b(b"x"), b(b"zz")]];
        let out = assemble(&ranges, &plan, results);
        assert_eq!(out, [b(b"abcdef"), b(b""), b(b"x")]);
    }
}
