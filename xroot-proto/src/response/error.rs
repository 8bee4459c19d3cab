//! The `kXR_error` body: `errnum:i32` then the message with a trailing NUL
//! counted in `dlen` (`ServerResponseBody_Error`, PROTOCOL.md §8.1, §8.2,
//! §15 item 7).

use bytes::{BufMut, Bytes, BytesMut};
use core::fmt;

use crate::codes::ErrorCode;
use crate::error::DecodeError;
use crate::wire::{strip_nul, Reader};

/// A `kXR_error` from the server: its code and message.
#[doc(alias = "kXR_error")]
#[doc(alias = "ServerResponseBody_Error")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// `errnum`: the `kXR_*` error code.
    pub code: ErrorCode,
    /// The message without its trailing NUL (a slice of the frame).
    pub message: Bytes,
}

impl ServerError {
    /// An error with `code` and `message` (given without a NUL).
    pub fn new(code: ErrorCode, message: impl Into<Bytes>) -> Self {
        ServerError {
            code,
            message: message.into(),
        }
    }

    /// Reads a `kXR_error` body. One trailing NUL is stripped from the
    /// message if present (the reference always sends it).
    /// Errors: [`DecodeError::Truncated`] for a body under 4 bytes.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body, "kXR_error body");
        let code = ErrorCode(r.i32()?);
        Ok(ServerError {
            code,
            message: strip_nul(&r.rest()),
        })
    }

    /// Appends the body: `errnum`, the message and a NUL.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_i32(self.code.0);
        buf.put_slice(&self.message);
        buf.put_u8(0);
    }

    /// The message as text, invalid UTF-8 replaced.
    pub fn message_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.message)
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message_lossy())
    }
}

impl std::error::Error for ServerError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::StreamId;
    use crate::response::tests::{decode_one, encode_response};
    use crate::response::Response;
    use proptest::prelude::*;

    #[test]
    fn bytes_on_the_wire() {
        let e = ServerError::new(ErrorCode::NOT_FOUND, "no such file");
        let wire = encode_response(&Response::Error(e.clone()), StreamId([0, 5]));
        assert_eq!(&wire[..8], &[0, 5, 0x0f, 0xa3, 0, 0, 0, 4 + 12 + 1]);
        assert_eq!(&wire[8..12], &3011i32.to_be_bytes());
        assert_eq!(&wire[12..], b"no such file\0");
        assert_eq!(decode_one(wire), Response::Error(e));
        assert_eq!(
            ServerError::new(ErrorCode::NOT_FOUND, "x").to_string(),
            "kXR_NotFound(3011): x"
        );
    }

    #[test]
    fn without_nul_and_truncated() {
        let e = ServerError::decode(Bytes::from_static(b"\0\0\x0b\xc3oops")).unwrap();
        assert_eq!(e.code, ErrorCode::NOT_FOUND);
        assert_eq!(&e.message[..], b"oops");
        assert!(matches!(
            ServerError::decode(Bytes::from_static(&[0, 0, 1])),
            Err(DecodeError::Truncated { .. })
        ));
    }

    proptest! {
        #[test]
        fn roundtrip(code in any::<i32>(), msg in proptest::collection::vec(any::<u8>(), 0..200), sid in any::<[u8; 2]>()) {
            let r = Response::Error(ServerError::new(ErrorCode(code), msg));
            let wire = encode_response(&r, StreamId(sid));
            let back = decode_one(wire.clone());
            prop_assert_eq!(&back, &r);
            prop_assert_eq!(encode_response(&back, StreamId(sid)), wire);
        }
    }
}
