//! 4 kB page geometry and crc32c, as used by `kXR_pgread`, `kXR_pgwrite`, the
//! `kXR_pgreadv` extension and the `kXR_status` body (PROTOCOL.md §6.5, §6.7, §11).
//!
//! Pages align to **absolute file offsets**: a transfer starting at an
//! unaligned offset begins with a partial page of `4096 - offset % 4096` bytes
//! (or fewer) and may end with a partial page. On the wire each page is
//! preceded by its crc32c as a big-endian `u32`: `[crc][page][crc][page]…`.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::DecodeError;

/// `kXR_pgPageSZ`: bytes of data per page.
#[doc(alias = "kXR_pgPageSZ")]
pub const PAGE_SIZE: usize = 4096;
/// `kXR_pgUnitSZ`: bytes per full page on the wire (crc + data).
#[doc(alias = "kXR_pgUnitSZ")]
pub const PAGE_UNIT: usize = PAGE_SIZE + CRC_LEN;
/// Bytes of one crc32c on the wire.
pub const CRC_LEN: usize = 4;

/// crc32c (Castagnoli) of `data`: init `0xFFFFFFFF`, final xor, reflected
/// polynomial `0x82F63B78` (PROTOCOL.md §11). `"123456789"` → `0xE3069283`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// crc32c of `data` continuing from a previous value (`Calc32C(data, len, prev)`).
pub fn crc32c_append(prev: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(prev, data)
}

/// The length of the page that starts at file `offset` when at most
/// `remaining` bytes are left: up to the next 4096-byte boundary.
pub fn page_len_at(offset: u64, remaining: u64) -> usize {
    let to_boundary = PAGE_SIZE as u64 - offset % PAGE_SIZE as u64;
    to_boundary.min(remaining) as usize
}

/// Number of pages (and so of crc32c values) that `len` bytes at `offset`
/// span: XrdOucPgrwUtils `csNum`. Zero for `len == 0`.
pub fn page_count(offset: u64, len: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    let first = page_len_at(offset, len) as u64;
    let rest = len - first;
    1 + rest.div_ceil(PAGE_SIZE as u64)
}

/// Bytes on the wire for `len` data bytes at `offset`: data plus one crc per page.
pub fn wire_len(offset: u64, len: u64) -> u64 {
    len + CRC_LEN as u64 * page_count(offset, len)
}

/// The `(offset, len)` of each page of `len` bytes at `offset`.
pub fn pages(offset: u64, len: u64) -> impl Iterator<Item = (u64, usize)> {
    let end = offset.saturating_add(len);
    let mut at = offset;
    core::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let n = page_len_at(at, end - at);
        let item = (at, n);
        at += n as u64;
        Some(item)
    })
}

/// Appends `data`, which starts at file `offset`, as interleaved
/// `[crc32c][page]` units computed here.
pub fn encode_pages(offset: u64, data: &[u8], buf: &mut BytesMut) {
    buf.reserve(wire_len(offset, data.len() as u64) as usize);
    let mut at = 0usize;
    for (_, n) in pages(offset, data.len() as u64) {
        let page = &data[at..at + n];
        buf.put_u32(crc32c(page));
        buf.put_slice(page);
        at += n;
    }
}

/// One page of an interleaved page stream: its file offset, the crc32c that
/// came with it and its data (a slice of the frame, not a copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// File offset of the first byte, in bytes.
    pub offset: u64,
    /// The crc32c sent on the wire before the page.
    pub crc: u32,
    /// The page's data, 1..=4096 bytes.
    pub data: Bytes,
}

impl Page {
    /// Whether `crc` matches the data.
    pub fn is_valid(&self) -> bool {
        crc32c(&self.data) == self.crc
    }
}

/// Iterates the pages of an interleaved `[crc][page]…` stream whose first data
/// byte is at file `offset`. Yields [`DecodeError::Truncated`] once if the
/// stream ends inside a crc or with a crc and no data ("last page too short").
#[derive(Debug, Clone)]
pub struct PageIter {
    offset: u64,
    wire: Bytes,
    failed: bool,
}

impl PageIter {
    /// Walks `wire`, whose first page starts at file `offset`.
    pub fn new(offset: u64, wire: Bytes) -> Self {
        PageIter {
            offset,
            wire,
            failed: false,
        }
    }

    /// Data bytes that `wire_bytes` of interleaved stream at `offset` carry,
    /// or an error if the stream cannot end where it does.
    pub fn data_len(offset: u64, wire_bytes: usize) -> Result<u64, DecodeError> {
        let mut at = offset;
        let mut left = wire_bytes;
        let mut data = 0u64;
        while left > 0 {
            if left <= CRC_LEN {
                return Err(DecodeError::truncated(
                    "page (crc without data)",
                    CRC_LEN + 1,
                    left,
                ));
            }
            let n = page_len_at(at, (left - CRC_LEN) as u64);
            left -= CRC_LEN + n;
            data += n as u64;
            at += n as u64;
        }
        Ok(data)
    }
}

impl Iterator for PageIter {
    type Item = Result<Page, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.wire.is_empty() || self.failed {
            return None;
        }
        if self.wire.len() <= CRC_LEN {
            self.failed = true;
            return Some(Err(DecodeError::truncated(
                "page (crc without data)",
                CRC_LEN + 1,
                self.wire.len(),
            )));
        }
        let crc = u32::from_be_bytes(self.wire[..CRC_LEN].try_into().unwrap());
        let n = page_len_at(self.offset, (self.wire.len() - CRC_LEN) as u64);
        let unit = self.wire.split_to(CRC_LEN + n);
        let page = Page {
            offset: self.offset,
            crc,
            data: unit.slice(CRC_LEN..),
        };
        self.offset += n as u64;
        Some(Ok(page))
    }
}

/// Checks every page of an interleaved stream at `offset` and returns the
/// file offsets of the pages whose crc32c does not match (empty when all are
/// good). Errors: [`DecodeError::Truncated`] for a stream that ends inside a
/// page header.
pub fn verify_pages(offset: u64, wire: Bytes) -> Result<Vec<u64>, DecodeError> {
    let mut bad = Vec::new();
    for page in PageIter::new(offset, wire) {
        let page = page?;
        if !page.is_valid() {
            bad.push(page.offset);
        }
    }
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_vectors() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 4096]), 0x98F9_4189);
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c_append(crc32c(b"1234"), b"56789"), 0xE306_9283);
    }

    #[test]
    fn geometry_of_unaligned_read() {
        // PROTOCOL.md §6.5 example: offset 1000, 10000 bytes → 3096, 4096, 2808.
        let p: Vec<_> = pages(1000, 10000).collect();
        assert_eq!(p, vec![(1000, 3096), (4096, 4096), (8192, 2808)]);
        assert_eq!(page_count(1000, 10000), 3);
        assert_eq!(wire_len(1000, 10000), 10012);
        assert_eq!(page_count(0, 4096), 1);
        assert_eq!(page_count(0, 4097), 2);
        assert_eq!(page_count(4095, 2), 2);
        assert_eq!(page_count(7, 0), 0);
    }

    #[test]
    fn encode_verify_and_find_bad_page() {
        let data: Vec<u8> = (0..10000u32).map(|i| (i * 7) as u8).collect();
        let mut b = BytesMut::new();
        encode_pages(1000, &data, &mut b);
        assert_eq!(b.len(), 10012);
        let wire = b.freeze();
        assert_eq!(PageIter::data_len(1000, wire.len()).unwrap(), 10000);
        assert!(verify_pages(1000, wire.clone()).unwrap().is_empty());
        let mut corrupt = BytesMut::from(&wire[..]);
        corrupt[3100 + 4 + 10] ^= 1; // inside the second page
        assert_eq!(verify_pages(1000, corrupt.freeze()).unwrap(), vec![4096]);
        let joined: Vec<u8> = PageIter::new(1000, wire)
            .flat_map(|p| p.unwrap().data.to_vec())
            .collect();
        assert_eq!(joined, data);
    }

    #[test]
    fn crc_without_data_is_truncated() {
        let wire = Bytes::from_static(&[0, 0, 0, 0]);
        assert!(matches!(
            verify_pages(0, wire),
            Err(DecodeError::Truncated { .. })
        ));
    }
}
