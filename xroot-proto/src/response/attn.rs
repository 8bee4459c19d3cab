//! The `kXR_attn` body: `actnum:i32` then action data (PROTOCOL.md §8.4).
//!
//! Two actions are still sent: `kXR_asynresp` (5008), the deferred answer to
//! a request that got `kXR_waitresp`, and `kXR_asyncms` (5002), a message.
//! An asynresp is `actnum, reserved[4]` followed by a whole embedded
//! response (header with the original streamid, then its body)
//! (`ServerResponseBody_Attn_asynresp`; XrdXrootdResponse.cc sends it with
//! the outer `dlen = 16 + N`). An asyncms is `actnum` then the message text
//! with a NUL (XrdXrootdAdmin.cc `sendResp`).

use bytes::{BufMut, Bytes, BytesMut};

use super::framing::frame_from_exact;
use super::typed::Response;
use crate::codes::{AttnAction, Status};
use crate::error::DecodeError;
use crate::header::StreamId;
use crate::wire::{strip_nul, Reader};

/// A `kXR_attn`: an unsolicited action from the server.
#[doc(alias = "kXR_attn")]
#[doc(alias = "ServerResponseBody_Attn")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attn {
    /// `kXR_asynresp`: the deferred response to the request on `streamid`.
    /// The embedded response is never itself a `kXR_attn`.
    #[doc(alias = "kXR_asynresp")]
    AsynResp {
        /// The streamid of the request answered (from the embedded header).
        streamid: StreamId,
        /// The embedded response, decoded like any other.
        response: Box<Response>,
    },
    /// `kXR_asyncms`: a message for the user, without its NUL.
    #[doc(alias = "kXR_asyncms")]
    Message(Bytes),
    /// Any other (obsolete or unknown) action with its raw parameters.
    Other {
        /// The action number.
        actnum: AttnAction,
        /// Everything after `actnum`.
        parms: Bytes,
    },
}

impl Attn {
    /// Reads a `kXR_attn` body, decoding an asynresp's embedded response.
    ///
    /// Errors: [`DecodeError::Truncated`] for a body under 4 bytes or an
    /// asynresp shorter than its 16-byte prefix or than its embedded `dlen`;
    /// [`DecodeError::TrailingBytes`] for bytes after the embedded response;
    /// [`DecodeError::InvalidValue`] for an embedded `kXR_attn` (the
    /// recursion stops at one level); any error of [`Response::decode`] for
    /// the embedded response.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body, "kXR_attn body");
        let actnum = AttnAction(r.i32()?);
        match actnum {
            AttnAction::ASYNRESP => {
                let _reserved: [u8; 4] = r.array()?;
                let frame = frame_from_exact(r.rest(), "kXR_asynresp embedded response")?;
                if frame.header.status == Status::ATTN {
                    return Err(DecodeError::InvalidValue {
                        what: "kXR_asynresp embedded status",
                        expected: "a response other than kXR_attn",
                        got: Status::ATTN.0 as i64,
                    });
                }
                Ok(Attn::AsynResp {
                    streamid: frame.header.streamid,
                    response: Box::new(Response::decode(frame)?),
                })
            }
            AttnAction::ASYNCMS => Ok(Attn::Message(strip_nul(&r.rest()))),
            _ => Ok(Attn::Other {
                actnum,
                parms: r.rest(),
            }),
        }
    }

    /// Appends the body. An asynresp embeds `response` encoded for
    /// `streamid`; a message gets its NUL.
    pub fn encode(&self, buf: &mut BytesMut) {
        match self {
            Attn::AsynResp { streamid, response } => {
                buf.put_i32(AttnAction::ASYNRESP.0);
                buf.put_u32(0);
                response.encode(*streamid, buf);
            }
            Attn::Message(m) => {
                buf.put_i32(AttnAction::ASYNCMS.0);
                buf.put_slice(m);
                buf.put_u8(0);
            }
            Attn::Other { actnum, parms } => {
                buf.put_i32(actnum.0);
                buf.put_slice(parms);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::{ErrorCode, RequestId, ResponseType};
    use crate::response::tests::{arb_response, as_sent, decode_one, encode_response};
    use crate::response::{ServerError, StatusResponse};
    use proptest::prelude::*;

    #[test]
    fn asynresp_embeds_a_response() {
        let inner = Response::Ok(Bytes::from_static(b"adler32 091e01de\0"));
        let attn = Response::Attn(Attn::AsynResp {
            streamid: StreamId([0, 7]),
            response: Box::new(inner.clone()),
        });
        let wire = encode_response(&attn, StreamId::ZERO);
        // outer header: streamid 0,0, kXR_attn, dlen = 16 + N
        assert_eq!(&wire[..8], &[0, 0, 0x0f, 0xa1, 0, 0, 0, 16 + 17]);
        assert_eq!(&wire[8..12], &5008i32.to_be_bytes());
        assert_eq!(&wire[12..16], &[0; 4]);
        // embedded header: the original streamid, kXR_ok, dlen N
        assert_eq!(&wire[16..24], &[0, 7, 0, 0, 0, 0, 0, 17]);
        let Response::Attn(Attn::AsynResp { streamid, response }) = decode_one(wire.clone()) else {
            panic!("not an asynresp");
        };
        assert_eq!(streamid, StreamId([0, 7]));
        assert_eq!(*response, inner);
        // the embedded body is a slice of the outer frame
        let Response::Ok(b) = *response else { panic!() };
        assert_eq!(&b[..], &wire[24..]);
    }

    #[test]
    fn asynresp_with_error_and_status() {
        for inner in [
            Response::Error(ServerError::new(ErrorCode::IO_ERROR, "bad")),
            Response::Status(StatusResponse::with_offset(
                RequestId::PGWRITE,
                ResponseType::FINAL,
                4096,
                Bytes::new(),
            )),
        ] {
            let attn = Response::Attn(Attn::AsynResp {
                streamid: StreamId([1, 2]),
                response: Box::new(inner),
            });
            assert_eq!(decode_one(encode_response(&attn, StreamId::ZERO)), attn);
        }
    }

    #[test]
    fn nested_asynresp_is_refused() {
        let inner = Response::Attn(Attn::AsynResp {
            streamid: StreamId([0, 1]),
            response: Box::new(Response::Ok(Bytes::new())),
        });
        let mut body = BytesMut::new();
        Attn::AsynResp {
            streamid: StreamId([0, 2]),
            response: Box::new(inner),
        }
        .encode(&mut body);
        assert!(matches!(
            Attn::decode(body.freeze()),
            Err(DecodeError::InvalidValue {
                what: "kXR_asynresp embedded status",
                ..
            })
        ));
    }

    #[test]
    fn asynresp_length_mismatch() {
        let mut body = BytesMut::new();
        Attn::AsynResp {
            streamid: StreamId([0, 2]),
            response: Box::new(Response::Ok(Bytes::from_static(b"abc"))),
        }
        .encode(&mut body);
        let whole = body.freeze();
        assert!(matches!(
            Attn::decode(whole.slice(..whole.len() - 1)),
            Err(DecodeError::Truncated { .. })
        ));
        let mut longer = BytesMut::from(&whole[..]);
        longer.put_u8(0);
        assert!(matches!(
            Attn::decode(longer.freeze()),
            Err(DecodeError::TrailingBytes { .. })
        ));
        assert!(matches!(
            Attn::decode(whole.slice(..12)),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn asyncms_message() {
        let mut b = BytesMut::new();
        b.put_i32(5002);
        b.put_slice(b"going down\0");
        assert_eq!(
            Attn::decode(b.freeze()).unwrap(),
            Attn::Message(Bytes::from_static(b"going down"))
        );
    }

    proptest! {
        #[test]
        fn roundtrip(inner in arb_response(), sid in any::<[u8; 2]>(), other in any::<i32>(), parms in proptest::collection::vec(any::<u8>(), 0..40)) {
            let cases = [
                Response::Attn(Attn::AsynResp { streamid: StreamId(sid), response: Box::new(as_sent(inner, StreamId(sid))) }),
                Response::Attn(Attn::Message(Bytes::from(parms.clone()))),
                Response::Attn(if other == 5002 || other == 5008 {
                    Attn::Message(Bytes::new())
                } else {
                    Attn::Other { actnum: AttnAction(other), parms: Bytes::from(parms) }
                }),
            ];
            for r in cases {
                let wire = encode_response(&r, StreamId::ZERO);
                let back = decode_one(wire.clone());
                prop_assert_eq!(&back, &r);
                prop_assert_eq!(encode_response(&back, StreamId::ZERO), wire);
            }
        }
    }
}
