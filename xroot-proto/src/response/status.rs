//! The `kXR_status` response (`ServerResponseStatus` + info + data,
//! PROTOCOL.md §8.1, §15 item 1).
//!
//! ```text
//! hdr:  streamid[2] status=4007:u16 dlen=16+infolen:i32
//! bdy:  crc32c:u32 streamID[2] requestid:u8 resptype:u8 reserved[4] dlen:i32
//!       info[infolen]            (pgread/pgwrite: offset:i64)
//! data: bdy.dlen bytes           (not counted in hdr.dlen)
//! ```
//!
//! The crc32c covers the status body after the crc plus the info: frame
//! bytes 12 .. 8 + hdr.dlen. It does not cover the 8-byte header or the data.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codes::{RequestId, ResponseType, Status};
use crate::error::DecodeError;
use crate::header::{ResponseHeader, StreamId, STATUS_BODY_LEN};
use crate::page::{crc32c, crc32c_append};
use crate::wire::Reader;

/// Bytes of the pgread/pgwrite info (`ServerResponseBody_pgRead::offset`).
pub(crate) const OFFSET_INFO_LEN: usize = 8;

/// A `kXR_status` response without its streamid (which the frame header
/// carries and the body must echo).
#[doc(alias = "kXR_status")]
#[doc(alias = "ServerResponseStatus")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusResponse {
    /// The request answered. On the wire it is one byte, `requestid − 3000`
    /// (pgread 30, pgwrite 26); an id outside 3000..=3255 is truncated to
    /// that byte on encode, as the reference's `kXR_char` field does.
    pub requestid: RequestId,
    /// Final, partial or progress.
    pub resptype: ResponseType,
    /// The info that follows the status body (8 bytes, the offset, for
    /// pgread and pgwrite); a slice of the frame.
    pub info: Bytes,
    /// The `bdy.dlen` data bytes; a slice of the frame.
    pub data: Bytes,
}

impl StatusResponse {
    /// A status whose info is one `offset` (`ServerResponseBody_pgRead` /
    /// `ServerResponseBody_pgWrite`), in bytes.
    pub fn with_offset(
        requestid: RequestId,
        resptype: ResponseType,
        offset: i64,
        data: Bytes,
    ) -> Self {
        StatusResponse {
            requestid,
            resptype,
            info: Bytes::copy_from_slice(&offset.to_be_bytes()),
            data,
        }
    }

    /// The info read as one big-endian `i64` file offset, in bytes.
    /// Errors: [`DecodeError::InvalidValue`] when the info is not 8 bytes.
    pub fn offset(&self) -> Result<i64, DecodeError> {
        let info: [u8; OFFSET_INFO_LEN] =
            self.info[..]
                .try_into()
                .map_err(|_| DecodeError::InvalidValue {
                    what: "kXR_status info length",
                    expected: "8 (offset)",
                    got: self.info.len() as i64,
                })?;
        Ok(i64::from_be_bytes(info))
    }

    /// Whether `resptype` is `kXR_FinalResult`.
    pub fn is_final(&self) -> bool {
        self.resptype == ResponseType::FINAL
    }

    /// Fails with [`DecodeError::WrongKind`] unless this status answers one
    /// of `expected` (XrdCl rejects a status whose requestid differs from
    /// the request's).
    pub fn expect_request(&self, expected: &[RequestId]) -> Result<(), DecodeError> {
        if expected.contains(&self.requestid) {
            Ok(())
        } else {
            Err(DecodeError::WrongKind {
                what: "kXR_status requestid",
                expected: format!("{expected:?}"),
                got: format!("{:?}", self.requestid),
            })
        }
    }

    /// Bytes of the whole frame on the wire: 8 + 16 + info + data.
    pub fn wire_len(&self) -> usize {
        ResponseHeader::LEN + STATUS_BODY_LEN + self.info.len() + self.data.len()
    }

    /// Reads the status body of a frame whose header is `header` and whose
    /// body (status body, info and data) is `body`.
    ///
    /// Errors: [`DecodeError::Truncated`] for a `hdr.dlen` under 16 or a
    /// body shorter than `hdr.dlen + bdy.dlen`;
    /// [`DecodeError::NegativeLength`] for a negative `dlen` or `bdy.dlen`;
    /// [`DecodeError::TrailingBytes`] for a longer body;
    /// [`DecodeError::StatusCrc`] when the crc32c does not match;
    /// [`DecodeError::InvalidValue`] when `bdy.streamID` differs from the
    /// header's streamid.
    pub fn decode(header: &ResponseHeader, body: Bytes) -> Result<Self, DecodeError> {
        if header.dlen < 0 {
            return Err(DecodeError::NegativeLength {
                what: "kXR_status dlen",
                value: header.dlen as i64,
            });
        }
        let dlen = header.dlen as usize;
        DecodeError::check_len("kXR_status body", STATUS_BODY_LEN, dlen)?;
        DecodeError::check_len("kXR_status body and info", dlen, body.len())?;
        let mut r = Reader::new(body.clone(), "kXR_status body");
        let crc = r.u32()?;
        let streamid = StreamId(r.array()?);
        let requestid = RequestId::from_status_code(r.u8()?);
        let resptype = ResponseType(r.u8()?);
        let _reserved: [u8; 4] = r.array()?;
        let bdy_dlen = r.i32()?;
        if bdy_dlen < 0 {
            return Err(DecodeError::NegativeLength {
                what: "kXR_status bdy.dlen",
                value: bdy_dlen as i64,
            });
        }
        let computed = crc32c(&body[4..dlen]);
        if computed != crc {
            return Err(DecodeError::StatusCrc {
                expected: crc,
                computed,
            });
        }
        if streamid != header.streamid {
            return Err(DecodeError::InvalidValue {
                what: "kXR_status bdy.streamID",
                expected: "the header's streamid",
                got: streamid.to_u16() as i64,
            });
        }
        let info = r.bytes(dlen - STATUS_BODY_LEN)?;
        let mut rest = Reader::new(r.rest(), "kXR_status data");
        let data = rest.bytes(bdy_dlen as usize)?;
        rest.finish()?;
        Ok(StatusResponse {
            requestid,
            resptype,
            info,
            data,
        })
    }

    /// Appends the whole frame answering `streamid`, computing the crc32c.
    pub fn encode(&self, streamid: StreamId, buf: &mut BytesMut) {
        buf.reserve(self.wire_len());
        encode_head(
            streamid,
            self.requestid,
            self.resptype,
            &self.info,
            self.data.len(),
            buf,
        );
        buf.put_slice(&self.data);
    }
}

/// Appends header, status body and info of a `kXR_status` frame whose
/// `data_len` data bytes the caller appends next.
pub(crate) fn encode_head(
    streamid: StreamId,
    requestid: RequestId,
    resptype: ResponseType,
    info: &[u8],
    data_len: usize,
    buf: &mut BytesMut,
) {
    ResponseHeader {
        streamid,
        status: Status::STATUS,
        dlen: (STATUS_BODY_LEN + info.len()) as i32,
    }
    .encode(buf);
    let mut covered = [0u8; STATUS_BODY_LEN - 4];
    covered[0..2].copy_from_slice(&streamid.0);
    covered[2] = requestid.0.wrapping_sub(RequestId::FIRST.0) as u8;
    covered[3] = resptype.0;
    covered[8..12].copy_from_slice(&(data_len as i32).to_be_bytes());
    buf.put_u32(crc32c_append(crc32c(&covered), info));
    buf.put_slice(&covered);
    buf.put_slice(info);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::{decode_one, encode_response};
    use crate::response::Response;
    use proptest::prelude::*;

    fn pgread(offset: i64, data: &'static [u8]) -> StatusResponse {
        StatusResponse::with_offset(
            RequestId::PGREAD,
            ResponseType::FINAL,
            offset,
            Bytes::from_static(data),
        )
    }

    #[test]
    fn layout_and_crc_coverage() {
        let s = pgread(1000, b"abcdef");
        let wire = encode_response(&Response::Status(s.clone()), StreamId([7, 9]));
        assert_eq!(wire.len(), 8 + 24 + 6);
        assert_eq!(&wire[0..8], &[7, 9, 0x0f, 0xa7, 0, 0, 0, 24]);
        assert_eq!(&wire[12..16], &[7, 9, 30, 0]);
        assert_eq!(&wire[16..20], &[0, 0, 0, 0]);
        assert_eq!(&wire[20..24], &[0, 0, 0, 6]);
        assert_eq!(&wire[24..32], &1000i64.to_be_bytes());
        // bytes 12..32: the status body after its crc, plus the info
        let crc = u32::from_be_bytes(wire[8..12].try_into().unwrap());
        assert_eq!(crc, crc32c(&wire[12..32]));
        let back = decode_one(wire);
        assert_eq!(back, Response::Status(s));
    }

    #[test]
    fn data_is_outside_the_crc() {
        let mut wire = BytesMut::from(
            &encode_response(&Response::Status(pgread(0, b"xyz")), StreamId([0, 1]))[..],
        );
        let n = wire.len();
        wire[n - 1] ^= 0xff;
        assert!(matches!(decode_one(wire.freeze()), Response::Status(_)));
    }

    #[test]
    fn corruption_is_detected() {
        let wire = encode_response(&Response::Status(pgread(4096, b"")), StreamId([0, 1]));
        for at in 8..32 {
            let mut bad = BytesMut::from(&wire[..]);
            bad[at] ^= 0x01;
            let frame = crate::response::framing::frame_from_exact(bad.freeze(), "test frame");
            // flipping a bdy.dlen bit also changes the frame length; either
            // the frame no longer fits or the crc catches it
            if let Ok(frame) = frame {
                assert!(
                    matches!(Response::decode(frame), Err(DecodeError::StatusCrc { .. })),
                    "byte {at}"
                );
            }
        }
    }

    #[test]
    fn mismatched_inner_streamid() {
        // a frame whose body echoes another streamid, with a correct crc
        let mut wire = BytesMut::new();
        encode_head(
            StreamId([1, 2]),
            RequestId::PGWRITE,
            ResponseType::FINAL,
            &[0; 8],
            0,
            &mut wire,
        );
        wire[0..2].copy_from_slice(&[3, 4]);
        let frame =
            crate::response::framing::frame_from_exact(wire.freeze(), "test frame").unwrap();
        assert!(matches!(
            Response::decode(frame),
            Err(DecodeError::InvalidValue {
                what: "kXR_status bdy.streamID",
                ..
            })
        ));
    }

    #[test]
    fn short_and_negative_lengths() {
        let h = |dlen| ResponseHeader {
            streamid: StreamId::ZERO,
            status: Status::STATUS,
            dlen,
        };
        assert!(matches!(
            StatusResponse::decode(&h(15), Bytes::from_static(&[0; 15])),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            StatusResponse::decode(&h(-1), Bytes::new()),
            Err(DecodeError::NegativeLength { .. })
        ));
        let mut body = [0u8; 16];
        body[12..16].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(
            StatusResponse::decode(&h(16), Bytes::copy_from_slice(&body)),
            Err(DecodeError::NegativeLength {
                what: "kXR_status bdy.dlen",
                ..
            })
        ));
    }

    #[test]
    fn offset_needs_eight_info_bytes() {
        let s = StatusResponse {
            requestid: RequestId::PGREAD,
            resptype: ResponseType::PARTIAL,
            info: Bytes::from_static(&[1, 2, 3]),
            data: Bytes::new(),
        };
        assert!(matches!(s.offset(), Err(DecodeError::InvalidValue { .. })));
        assert!(s.expect_request(&[RequestId::PGWRITE]).is_err());
        assert!(s.expect_request(&[RequestId::PGREAD]).is_ok());
    }

    proptest! {
        #[test]
        fn roundtrip(
            sid in any::<[u8; 2]>(),
            code in any::<u8>(),
            resptype in 0u8..3,
            info in proptest::collection::vec(any::<u8>(), 0..24),
            data in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let s = StatusResponse {
                requestid: RequestId::from_status_code(code),
                resptype: ResponseType(resptype),
                info: Bytes::from(info),
                data: Bytes::from(data),
            };
            let r = Response::Status(s);
            let wire = encode_response(&r, StreamId(sid));
            prop_assert_eq!(wire.len(), match &r { Response::Status(s) => s.wire_len(), _ => 0 });
            let back = decode_one(wire.clone());
            prop_assert_eq!(&back, &r);
            prop_assert_eq!(encode_response(&back, StreamId(sid)), wire);
        }
    }
}
