//! The 16-byte list element shared by `kXR_readv` (request `read_list` and
//! response element header), `kXR_read`'s pre-read list, `kXR_writev`'s
//! `write_list` and the `kXR_pgreadv` extension: `fhandle[4] rlen:i32
//! offset:i64` (`readahead_list` / `read_list` / `write_list` in XProtocol.hh,
//! PROTOCOL.md §6.3, §6.4, §6.8).

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::DecodeError;
use crate::header::FHandle;
use crate::limits::{
    MAX_READV_ELEMENT, MAX_READV_ELEMENTS, MAX_READV_TOTAL_ACCEPTED, READ_LIST_LEN,
};

/// One 16-byte list element: which file, how many bytes, where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[doc(alias = "readahead_list")]
#[doc(alias = "read_list")]
#[doc(alias = "write_list")]
pub struct ReadListEntry {
    /// The open file's handle. In the readv-with-crc32c extension's response
    /// this slot carries the element's crc32c instead ([`crate::ext`]).
    pub fhandle: FHandle,
    /// Length in bytes (`rlen`, or `wlen` for writev). Signed on the wire.
    pub rlen: i32,
    /// File offset in bytes.
    pub offset: i64,
}

impl ReadListEntry {
    /// Bytes on the wire.
    pub const LEN: usize = READ_LIST_LEN;

    /// Reads one element from the first 16 bytes of `b`.
    /// Errors: [`DecodeError::Truncated`] if `b` is shorter.
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        DecodeError::check_len("read_list element", Self::LEN, b.len())?;
        Ok(ReadListEntry {
            fhandle: FHandle(b[0..4].try_into().unwrap()),
            rlen: i32::from_be_bytes(b[4..8].try_into().unwrap()),
            offset: i64::from_be_bytes(b[8..16].try_into().unwrap()),
        })
    }

    /// Appends the 16 bytes to `buf`.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.fhandle.0);
        buf.put_i32(self.rlen);
        buf.put_i64(self.offset);
    }

    /// Decodes a whole list. Errors: [`DecodeError::Misaligned`] when
    /// `b.len()` is not a multiple of 16. Does no limit checks; see
    /// [`validate_readv`].
    pub fn decode_list(b: &Bytes, what: &'static str) -> Result<Vec<Self>, DecodeError> {
        if b.len() % Self::LEN != 0 {
            return Err(DecodeError::Misaligned {
                what,
                len: b.len() as u64,
                unit: Self::LEN as u64,
            });
        }
        b.chunks_exact(Self::LEN).map(Self::decode).collect()
    }
}

/// Checks a readv (or pgreadv) list against the reference's limits
/// (do_ReadV, PROTOCOL.md §6.4), in the reference's order. Errors:
/// [`DecodeError::TooManyElements`] over 1024 elements;
/// [`DecodeError::NegativeLength`] for an element with `rlen < 0`;
/// [`DecodeError::ReadvElementTooLarge`] for an element over 2,097,136 bytes;
/// [`DecodeError::ReadvTotalTooLarge`] when the lengths plus 16 bytes per
/// element exceed 2 GiB ([`MAX_READV_TOTAL_ACCEPTED`]).
pub fn validate_readv(list: &[ReadListEntry]) -> Result<(), DecodeError> {
    DecodeError::check_count("read_list", list.len(), MAX_READV_ELEMENTS)?;
    let mut total = (list.len() * READ_LIST_LEN) as u64;
    for (index, e) in list.iter().enumerate() {
        if e.rlen < 0 {
            return Err(DecodeError::NegativeLength {
                what: "read_list rlen",
                value: e.rlen as i64,
            });
        }
        if e.rlen as u32 > MAX_READV_ELEMENT {
            return Err(DecodeError::ReadvElementTooLarge {
                index,
                rlen: e.rlen as u64,
                max: MAX_READV_ELEMENT as u64,
            });
        }
        total += e.rlen as u64;
    }
    if total > MAX_READV_TOTAL_ACCEPTED {
        return Err(DecodeError::ReadvTotalTooLarge {
            total,
            max: MAX_READV_TOTAL_ACCEPTED,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(rlen: i32) -> ReadListEntry {
        ReadListEntry {
            fhandle: FHandle([0; 4]),
            rlen,
            offset: 0,
        }
    }

    #[test]
    fn limits() {
        assert!(validate_readv(&[e(MAX_READV_ELEMENT as i32)]).is_ok());
        assert!(matches!(
            validate_readv(&[e(MAX_READV_ELEMENT as i32 + 1)]),
            Err(DecodeError::ReadvElementTooLarge { index: 0, .. })
        ));
        assert!(matches!(
            validate_readv(&[e(-1)]),
            Err(DecodeError::NegativeLength { .. })
        ));
        assert!(matches!(
            validate_readv(&vec![e(1); 1025]),
            Err(DecodeError::TooManyElements { count: 1025, .. })
        ));
        // 1024 maximal elements with their headers are exactly 2 GiB:
        // accepted (xrootd#2614); no list within the count and element
        // limits can ask more, so one byte more is one of those errors.
        let max = vec![e(MAX_READV_ELEMENT as i32); 1024];
        assert!(validate_readv(&max).is_ok());
        let mut over = max.clone();
        over[1023].rlen += 1;
        assert!(matches!(
            validate_readv(&over),
            Err(DecodeError::ReadvElementTooLarge { index: 1023, .. })
        ));
        let mut more = max;
        more.push(e(0));
        assert!(matches!(
            validate_readv(&more),
            Err(DecodeError::TooManyElements { count: 1025, .. })
        ));
        assert!(validate_readv(&vec![e(MAX_READV_ELEMENT as i32); 1023]).is_ok());
    }
}
