//! The `kXR_bind` answer (`ServerResponseBody_Bind`, PROTOCOL.md §5.4): one
//! byte, the path id (1..15) of the new substream.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::DecodeError;
use crate::wire::Reader;

/// A `kXR_bind` answer.
#[doc(alias = "kXR_bind")]
#[doc(alias = "ServerResponseBody_Bind")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindResponse {
    /// The substream's path id (`substreamid`), to put in `pathid` fields.
    pub pathid: u8,
}

impl BindResponse {
    /// Reads the body. Errors: [`DecodeError::Truncated`] when empty,
    /// [`DecodeError::TrailingBytes`] when longer than one byte.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body, "kXR_bind response");
        let pathid = r.u8()?;
        r.finish()?;
        Ok(BindResponse { pathid })
    }

    /// Appends the one byte.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_u8(self.pathid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::{body_of, ok_roundtrip};

    #[test]
    fn one_byte() {
        for pathid in 0..=u8::MAX {
            let b = BindResponse { pathid };
            let body = body_of(|buf| b.encode(buf));
            assert_eq!(&body[..], &[pathid]);
            assert_eq!(BindResponse::decode(ok_roundtrip(body)).unwrap(), b);
        }
        assert!(matches!(
            BindResponse::decode(Bytes::new()),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            BindResponse::decode(Bytes::from_static(&[1, 2])),
            Err(DecodeError::TrailingBytes { extra: 1, .. })
        ));
    }
}
