//! cmsd frames: the 8-byte `CmsRRHdr` and the payload it counts.
//!
//! ```text
//! 0      4       5         6        8
//! | streamid | rrCode | modifier | datalen | payload (datalen bytes) |
//! ```
//!
//! Big-endian. `datalen` is 16 bits, so no frame holds more than 64 KiB of
//! payload; a decoder may be given a lower bound
//! ([`CmsDecoder::with_max_dlen`]), e.g. the manager's own
//! [`MAX_REQUEST_DLEN`].

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::DecodeError;

/// Bytes of the frame header (`CmsRRHdr`).
pub const HEADER_LEN: usize = 8;

/// The largest request payload a stock manager accepts (`maxReqSize`,
/// 16384 bytes); it drops a link that sends a larger one.
pub const MAX_REQUEST_DLEN: usize = 16384;

/// The frame header (`CmsRRHdr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmsHeader {
    /// Opaque to the protocol: a request id the answer echoes, the hash of a
    /// path for `state`/`have`, the data port of a `status` resume.
    pub streamid: u32,
    /// The request code ([`super::RrCode`]) or response code
    /// ([`super::RespCode`]).
    pub code: u8,
    /// Request-dependent bits ([`super::RAW`], [`super::codes::state`], ...).
    pub modifier: u8,
    /// Payload bytes that follow.
    pub datalen: u16,
}

impl CmsHeader {
    /// Decodes the first 8 bytes of `b`.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`] when `b` is shorter than 8 bytes.
    pub fn decode(b: &[u8]) -> Result<CmsHeader, DecodeError> {
        DecodeError::check_len("cmsd header", HEADER_LEN, b.len())?;
        Ok(CmsHeader {
            streamid: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            code: b[4],
            modifier: b[5],
            datalen: u16::from_be_bytes([b[6], b[7]]),
        })
    }

    /// Appends the 8 header bytes to `out`.
    pub fn encode(&self, out: &mut BytesMut) {
        out.put_u32(self.streamid);
        out.put_u8(self.code);
        out.put_u8(self.modifier);
        out.put_u16(self.datalen);
    }
}

/// One whole frame: its header and its payload (a slice of the bytes it was
/// decoded from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmsFrame {
    /// The header; `datalen` equals `payload.len()`.
    pub header: CmsHeader,
    /// The payload.
    pub payload: Bytes,
}

impl CmsFrame {
    /// Appends a frame of `code`, `modifier` and `payload` to `out`.
    ///
    /// # Errors
    /// [`DecodeError::LengthTooLarge`] when `payload` is over 65,535 bytes.
    pub fn encode(
        streamid: u32,
        code: u8,
        modifier: u8,
        payload: &[u8],
        out: &mut BytesMut,
    ) -> Result<(), DecodeError> {
        let datalen = u16::try_from(payload.len()).map_err(|_| DecodeError::LengthTooLarge {
            what: "cmsd datalen",
            value: payload.len() as u64,
            max: u64::from(u16::MAX),
        })?;
        CmsHeader {
            streamid,
            code,
            modifier,
            datalen,
        }
        .encode(out);
        out.put_slice(payload);
        Ok(())
    }
}

/// Takes whole cmsd frames off the front of a receive buffer, as bytes
/// arrive.
#[derive(Debug, Clone)]
pub struct CmsDecoder {
    max_dlen: usize,
}

impl Default for CmsDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl CmsDecoder {
    /// A decoder that takes any `datalen` (at most 65,535 by the wire).
    pub fn new() -> Self {
        CmsDecoder {
            max_dlen: usize::from(u16::MAX),
        }
    }

    /// Refuse frames whose `datalen` is over `max` bytes.
    pub fn with_max_dlen(mut self, max: usize) -> Self {
        self.max_dlen = max;
        self
    }

    /// The next whole frame off the front of `buf`, or `None` when `buf`
    /// does not hold one yet (nothing is consumed then).
    ///
    /// # Errors
    /// [`DecodeError::LengthTooLarge`] when the header's `datalen` is over
    /// the decoder's maximum; the stream cannot be resynchronised after it.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<CmsFrame>, DecodeError> {
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let header = CmsHeader::decode(buf)?;
        let dlen = usize::from(header.datalen);
        if dlen > self.max_dlen {
            return Err(DecodeError::LengthTooLarge {
                what: "cmsd datalen",
                value: dlen as u64,
                max: self.max_dlen as u64,
            });
        }
        if buf.len() < HEADER_LEN + dlen {
            buf.reserve(HEADER_LEN + dlen - buf.len());
            return Ok(None);
        }
        buf.advance(HEADER_LEN);
        let payload = buf.split_to(dlen).freeze();
        Ok(Some(CmsFrame { header, payload }))
    }

    /// At end of stream: `Ok` when `buf` is empty, else the frame it holds
    /// part of was cut off.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`] naming the header or payload that was cut.
    pub fn decode_eof(&mut self, buf: &BytesMut) -> Result<(), DecodeError> {
        if buf.is_empty() {
            return Ok(());
        }
        let header = CmsHeader::decode(buf)?;
        Err(DecodeError::truncated(
            "cmsd payload",
            HEADER_LEN + usize::from(header.datalen),
            buf.len(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_off_as_bytes_arrive() {
        let mut wire = BytesMut::new();
        CmsFrame::encode(7, 17, 0, &[], &mut wire).unwrap();
        CmsFrame::encode(9, 20, 0x20, b"/a\0", &mut wire).unwrap();
        let all = wire.split().freeze();
        let mut dec = CmsDecoder::new();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for b in all.iter() {
            buf.put_u8(*b);
            while let Some(f) = dec.decode(&mut buf).unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].header.streamid, 7);
        assert_eq!(got[1].header.modifier, 0x20);
        assert_eq!(&got[1].payload[..], b"/a\0");
        assert!(dec.decode_eof(&buf).is_ok());
    }

    #[test]
    fn lengths_over_the_bound_and_cut_frames_are_errors() {
        let mut buf = BytesMut::from(&[0, 0, 0, 1, 20, 0, 0x40, 0x01][..]);
        let mut dec = CmsDecoder::new().with_max_dlen(super::super::MAX_REQUEST_DLEN);
        assert!(matches!(
            dec.decode(&mut buf),
            Err(DecodeError::LengthTooLarge { value: 16385, .. })
        ));
        let mut buf = BytesMut::from(&[0, 0, 0, 1, 20, 0, 0, 9, b'/'][..]);
        let mut dec = CmsDecoder::new();
        assert_eq!(dec.decode(&mut buf).unwrap(), None);
        assert!(matches!(
            dec.decode_eof(&buf),
            Err(DecodeError::Truncated {
                expected: 17,
                got: 9,
                ..
            })
        ));
        let mut big = BytesMut::new();
        assert!(CmsFrame::encode(0, 0, 0, &vec![0; 65536], &mut big).is_err());
    }
}
