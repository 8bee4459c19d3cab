//! `kXR_wait` and `kXR_waitresp`: `seconds:i32` then a message with no NUL
//! (`ServerResponseBody_Wait`, `ServerResponseBody_Waitresp`, PROTOCOL.md §8.4).

use bytes::{BufMut, Bytes, BytesMut};
use core::time::Duration;

use crate::error::DecodeError;
use crate::wire::Reader;

/// Defines one of the two `seconds + message` bodies.
macro_rules! seconds_and_message {
    ($(#[$meta:meta])* $name:ident, $what:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name {
            /// Seconds, as sent (not checked for sign; see [`Self::delay`]).
            pub seconds: i32,
            /// The message, as sent (no NUL on the wire); a slice of the
            /// frame, often empty.
            pub message: Bytes,
        }

        impl $name {
            /// Reads the body. Errors: [`DecodeError::Truncated`] for a body
            /// under 4 bytes.
            pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
                let mut r = Reader::new(body, $what);
                let seconds = r.i32()?;
                Ok($name {
                    seconds,
                    message: r.rest(),
                })
            }

            /// Appends the body: `seconds` then the message.
            pub fn encode(&self, buf: &mut BytesMut) {
                buf.put_i32(self.seconds);
                buf.put_slice(&self.message);
            }

            /// `seconds` as a duration; a negative value counts as zero.
            pub fn delay(&self) -> Duration {
                Duration::from_secs(self.seconds.max(0) as u64)
            }
        }
    };
}

seconds_and_message! {
    /// `kXR_wait`: resend the same request (same server, same streamid)
    /// after `seconds`.
    #[doc(alias = "kXR_wait")]
    #[doc(alias = "ServerResponseBody_Wait")]
    Wait, "kXR_wait body"
}

seconds_and_message! {
    /// `kXR_waitresp`: the request was accepted and its answer arrives later
    /// in a `kXR_attn` asynresp, within `seconds` (server default 1800).
    #[doc(alias = "kXR_waitresp")]
    #[doc(alias = "ServerResponseBody_Waitresp")]
    WaitResp, "kXR_waitresp body"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::StreamId;
    use crate::response::tests::{decode_one, encode_response};
    use crate::response::Response;
    use proptest::prelude::*;

    #[test]
    fn bytes_and_delay() {
        let w = Wait {
            seconds: 5,
            message: Bytes::from_static(b"staging"),
        };
        let wire = encode_response(&Response::Wait(w.clone()), StreamId([0, 1]));
        assert_eq!(&wire[..], b"\0\x01\x0f\xa5\0\0\0\x0b\0\0\0\x05staging");
        assert_eq!(w.delay(), Duration::from_secs(5));
        let neg = WaitResp {
            seconds: -3,
            message: Bytes::new(),
        };
        assert_eq!(neg.delay(), Duration::ZERO);
        assert!(matches!(
            WaitResp::decode(Bytes::from_static(&[0, 0])),
            Err(DecodeError::Truncated { .. })
        ));
    }

    proptest! {
        #[test]
        fn roundtrip(seconds in any::<i32>(), msg in proptest::collection::vec(any::<u8>(), 0..100), resp in any::<bool>()) {
            let message = Bytes::from(msg);
            let r = if resp {
                Response::WaitResp(WaitResp { seconds, message })
            } else {
                Response::Wait(Wait { seconds, message })
            };
            let wire = encode_response(&r, StreamId([1, 1]));
            let back = decode_one(wire.clone());
            prop_assert_eq!(&back, &r);
            prop_assert_eq!(encode_response(&back, StreamId([1, 1])), wire);
        }
    }
}
