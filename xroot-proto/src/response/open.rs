//! The `kXR_open` answer (`ServerResponseBody_Open`, PROTOCOL.md §6.1):
//!
//! | bytes | field | present |
//! |---|---|---|
//! | 0..4 | fhandle | always |
//! | 4..8 | cpsize: i32 | with `kXR_compress` or `kXR_retstat` |
//! | 8..12 | cptype[4] | same |
//! | 12.. | stat text, NUL-terminated | with `kXR_retstat` |

use bytes::{BufMut, Bytes, BytesMut};

use super::stat::StatInfo;
use crate::error::DecodeError;
use crate::header::FHandle;
use crate::wire::Reader;

/// The compression fields of an open answer (zero when not compressed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenCompression {
    /// Compressed page size, bytes; 0 when the file is not compressed.
    pub cpsize: i32,
    /// Compression algorithm name, 4 opaque bytes.
    pub cptype: [u8; 4],
}

/// A decoded `kXR_open` answer: 4, 12, or 12 + stat-text bytes.
#[doc(alias = "kXR_open")]
#[doc(alias = "ServerResponseBody_Open")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenResponse {
    /// The handle for every later request on this file.
    pub fhandle: FHandle,
    /// `cpsize`/`cptype`, present in the 12-byte and longer forms.
    pub compression: Option<OpenCompression>,
    /// The stat of the opened file, present with `kXR_retstat`.
    pub stat: Option<StatInfo>,
}

impl OpenResponse {
    /// Reads the body.
    ///
    /// Errors: [`DecodeError::Truncated`] for a body under 4 bytes or of 5
    /// to 11 bytes; the errors of [`StatInfo::decode`] for the stat text.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body, "kXR_open response");
        let fhandle = FHandle(r.array()?);
        if r.is_empty() {
            return Ok(OpenResponse {
                fhandle,
                compression: None,
                stat: None,
            });
        }
        let compression = Some(OpenCompression {
            cpsize: r.i32()?,
            cptype: r.array()?,
        });
        let text = r.rest();
        let stat = if text.is_empty() {
            None
        } else {
            Some(StatInfo::decode(text)?)
        };
        Ok(OpenResponse {
            fhandle,
            compression,
            stat,
        })
    }

    /// Appends the body. With `stat` set and no `compression`, zero
    /// compression fields are written (the 12-byte prefix is required).
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.fhandle.0);
        let compression = match (&self.compression, &self.stat) {
            (Some(c), _) => Some(*c),
            (None, Some(_)) => Some(OpenCompression::default()),
            (None, None) => None,
        };
        if let Some(c) = compression {
            buf.put_i32(c.cpsize);
            buf.put_slice(&c.cptype);
        }
        if let Some(s) = &self.stat {
            s.encode(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::stat::tests::arb_stat;
    use crate::response::tests::{body_of, ok_roundtrip};
    use proptest::prelude::*;

    #[test]
    fn three_forms() {
        let short = OpenResponse::decode(Bytes::from_static(&[0, 0, 0, 1])).unwrap();
        assert_eq!(short.fhandle, FHandle([0, 0, 0, 1]));
        assert_eq!((short.compression, short.stat.is_none()), (None, true));

        let twelve =
            OpenResponse::decode(Bytes::from_static(&[0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0]))
                .unwrap();
        assert_eq!(twelve.compression, Some(OpenCompression::default()));
        assert!(twelve.stat.is_none());

        let body =
            Bytes::from_static(b"\0\0\0\x03\0\0\0\0\0\0\0\x0012 345 16 1700000000 1 2 0644 u g\0");
        let full = OpenResponse::decode(body.clone()).unwrap();
        assert_eq!(full.stat.as_ref().unwrap().size, 345);
        assert_eq!(body_of(|b| full.encode(b)), body);

        for bad in [&[0u8, 0, 1][..], &[0, 0, 0, 1, 0], &[0; 11]] {
            assert!(matches!(
                OpenResponse::decode(Bytes::copy_from_slice(bad)),
                Err(DecodeError::Truncated { .. })
            ));
        }
        assert!(matches!(
            OpenResponse::decode(Bytes::from_static(b"\0\0\0\x03\0\0\0\0\0\0\0\0junk\0")),
            Err(DecodeError::Malformed { .. })
        ));
    }

    proptest! {
        #[test]
        fn roundtrip(
            fh in any::<[u8; 4]>(),
            comp in proptest::option::of((any::<i32>(), any::<[u8; 4]>())),
            stat in proptest::option::of(arb_stat()),
        ) {
            let compression = comp
                .map(|(cpsize, cptype)| OpenCompression { cpsize, cptype })
                .or(stat.as_ref().map(|_| OpenCompression::default()));
            let o = OpenResponse { fhandle: FHandle(fh), compression, stat };
            let body = body_of(|b| o.encode(b));
            let back = OpenResponse::decode(ok_roundtrip(body.clone())).unwrap();
            prop_assert_eq!(&back, &o);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }
    }
}
