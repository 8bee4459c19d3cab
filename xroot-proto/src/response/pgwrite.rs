//! The `kXR_pgwrite` answer (PROTOCOL.md §6.7; XrdXrootdPgwBadCS): one Final
//! `kXR_status` frame whose info is the request's offset. Its data is empty
//! when every page checksum matched; otherwise it is a CSE block
//! (`ServerResponseBody_pgWrCSE`):
//!
//! ```text
//! cseCRC:u32 (crc32c of everything after it)  dlFirst:i16  dlLast:i16
//! k × offset:i64 (the pages to resend with kXR_pgRetry)
//! ```

use bytes::{BufMut, Bytes, BytesMut};

use super::status::StatusResponse;
use crate::codes::{RequestId, ResponseType};
use crate::error::DecodeError;
use crate::limits::PG_MAX_ERRORS_PER_REQUEST;
use crate::page::crc32c;
use crate::wire::Reader;

/// Bytes of the CSE block before its offsets.
const CSE_HEAD: usize = 8;

/// The pages a pgwrite must resend.
#[doc(alias = "ServerResponseBody_pgWrCSE")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PgWriteCse {
    /// Data length of the page at the first bad offset, bytes.
    pub dl_first: i16,
    /// Data length of the page at the last bad offset, bytes.
    pub dl_last: i16,
    /// File offsets of the pages whose checksum did not match.
    pub bad_offsets: Vec<i64>,
}

/// A decoded `kXR_pgwrite` answer.
#[doc(alias = "kXR_pgwrite")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgWriteResponse {
    /// The request's starting offset, bytes.
    pub offset: i64,
    /// The checksum errors, if any page was bad.
    pub cse: Option<PgWriteCse>,
}

impl PgWriteResponse {
    /// Reads the answer from a decoded `kXR_status`.
    ///
    /// Errors: [`DecodeError::WrongKind`] unless it answers `kXR_pgwrite`;
    /// [`DecodeError::InvalidValue`] for an info that is not an 8-byte
    /// offset or a `cseCRC` that does not match;
    /// [`DecodeError::Truncated`] for a CSE under 8 bytes;
    /// [`DecodeError::Misaligned`] for offsets that are not a multiple of 8
    /// bytes; [`DecodeError::TooManyElements`] for more than 128 offsets
    /// (`kXR_pgMaxEpr`).
    pub fn from_status(status: &StatusResponse) -> Result<Self, DecodeError> {
        status.expect_request(&[RequestId::PGWRITE])?;
        let offset = status.offset()?;
        let data = &status.data;
        if data.is_empty() {
            return Ok(PgWriteResponse { offset, cse: None });
        }
        DecodeError::check_len("pgwrite CSE", CSE_HEAD, data.len())?;
        let list = data.len() - CSE_HEAD;
        if list % 8 != 0 {
            return Err(DecodeError::Misaligned {
                what: "pgwrite CSE offsets",
                len: list as u64,
                unit: 8,
            });
        }
        DecodeError::check_count("pgwrite CSE offsets", list / 8, PG_MAX_ERRORS_PER_REQUEST)?;
        let mut r = Reader::new(data.clone(), "pgwrite CSE");
        let crc = r.u32()?;
        if crc != crc32c(&data[4..]) {
            return Err(DecodeError::InvalidValue {
                what: "pgwrite cseCRC",
                expected: "crc32c of the CSE after it",
                got: crc as i64,
            });
        }
        let dl_first = r.i16()?;
        let dl_last = r.i16()?;
        let bad_offsets = (0..list / 8).map(|_| r.i64()).collect::<Result<_, _>>()?;
        Ok(PgWriteResponse {
            offset,
            cse: Some(PgWriteCse {
                dl_first,
                dl_last,
                bad_offsets,
            }),
        })
    }

    /// The Final `kXR_status` carrying this answer, the CSE's crc computed.
    pub fn to_status(&self) -> StatusResponse {
        let data = match &self.cse {
            None => Bytes::new(),
            Some(cse) => {
                let mut b = BytesMut::with_capacity(CSE_HEAD + 8 * cse.bad_offsets.len());
                b.put_u32(0);
                b.put_i16(cse.dl_first);
                b.put_i16(cse.dl_last);
                for &o in &cse.bad_offsets {
                    b.put_i64(o);
                }
                let crc = crc32c(&b[4..]);
                b[..4].copy_from_slice(&crc.to_be_bytes());
                b.freeze()
            }
        };
        StatusResponse::with_offset(RequestId::PGWRITE, ResponseType::FINAL, self.offset, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::StreamId;
    use crate::response::tests::{decode_one, encode_response};
    use crate::response::Response;
    use proptest::prelude::*;

    fn through_wire(p: &PgWriteResponse) -> (Bytes, PgWriteResponse) {
        let wire = encode_response(&Response::Status(p.to_status()), StreamId([0, 3]));
        let Response::Status(s) = decode_one(wire.clone()) else {
            panic!()
        };
        (wire, PgWriteResponse::from_status(&s).unwrap())
    }

    #[test]
    fn clean_and_with_errors() {
        let clean = PgWriteResponse {
            offset: 8192,
            cse: None,
        };
        let (wire, back) = through_wire(&clean);
        assert_eq!(wire.len(), 8 + 24);
        assert_eq!(&wire[14..16], &[26, 0]); // requestid pgwrite, Final
        assert_eq!(back, clean);

        let bad = PgWriteResponse {
            offset: 0,
            cse: Some(PgWriteCse {
                dl_first: 4096,
                dl_last: 100,
                bad_offsets: vec![4096, 12288],
            }),
        };
        let (wire, back) = through_wire(&bad);
        assert_eq!(&wire[20..24], &24i32.to_be_bytes()); // bdy.dlen: 8 + 2 × 8
        assert_eq!(
            u32::from_be_bytes(wire[32..36].try_into().unwrap()),
            crc32c(&wire[36..])
        );
        assert_eq!(back, bad);
    }

    #[test]
    fn malformed_cse() {
        let status = |data: &[u8]| {
            StatusResponse::with_offset(
                RequestId::PGWRITE,
                ResponseType::FINAL,
                0,
                Bytes::copy_from_slice(data),
            )
        };
        let good = PgWriteResponse {
            offset: 0,
            cse: Some(PgWriteCse {
                dl_first: 1,
                dl_last: 1,
                bad_offsets: vec![0],
            }),
        }
        .to_status()
        .data;
        let mut flipped = good.to_vec();
        flipped[9] ^= 1;
        assert!(matches!(
            PgWriteResponse::from_status(&status(&flipped)),
            Err(DecodeError::InvalidValue {
                what: "pgwrite cseCRC",
                ..
            })
        ));
        assert!(matches!(
            PgWriteResponse::from_status(&status(&good[..5])),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            PgWriteResponse::from_status(&status(&good[..12])),
            Err(DecodeError::Misaligned { .. })
        ));
        assert!(matches!(
            PgWriteResponse::from_status(&status(&vec![0; 8 + 8 * 129])),
            Err(DecodeError::TooManyElements { count: 129, .. })
        ));
        let read =
            StatusResponse::with_offset(RequestId::PGREAD, ResponseType::FINAL, 0, Bytes::new());
        assert!(matches!(
            PgWriteResponse::from_status(&read),
            Err(DecodeError::WrongKind { .. })
        ));
    }

    proptest! {
        #[test]
        fn roundtrip(
            offset in any::<i64>(),
            cse in proptest::option::of((any::<i16>(), any::<i16>(), proptest::collection::vec(any::<i64>(), 0..=128))),
        ) {
            let p = PgWriteResponse {
                offset,
                cse: cse.map(|(dl_first, dl_last, bad_offsets)| PgWriteCse { dl_first, dl_last, bad_offsets }),
            };
            let (wire, back) = through_wire(&p);
            prop_assert_eq!(&back, &p);
            prop_assert_eq!(encode_response(&Response::Status(back.to_status()), StreamId([0, 3])), wire);
        }
    }
}
