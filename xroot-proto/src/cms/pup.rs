//! "Pup", the field encoding of cmsd payloads (`XrdOucPup` in xrootd).
//!
//! A payload is a sequence of fields, each self-describing by its first byte:
//!
//! | first byte | field | bytes |
//! |---|---|---|
//! | `0x00..=0x7f` | string: u16 length (counting its NUL), then the bytes | 2 + length |
//! | `0x80` | short: 2 bytes | 3 |
//! | `0xa0` | int: 4 bytes | 5 |
//! | `0xc0` | long long: 8 bytes | 9 |
//! | `0x90`/`0xb0`/`0xd0` + nibble | the compact form: the low nibble is the value's top 4 bits, then 1, 3 or 7 bytes | 2, 4, 8 |
//!
//! All numbers are big-endian. A string of length 0 (`00 00`) is a null
//! string. Fields after a message's *fence* are optional: the payload may end
//! before them. A decoder accepts both number forms; this encoder writes the
//! full one, which every decoder reads. Strings are at most
//! [`MAX_STRING`] bytes, NUL included.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::DecodeError;

/// The longest string a field may hold, NUL included (`XrdOucPup::MaxLen`,
/// 2047 bytes).
pub const MAX_STRING: usize = 0x7ff;

const SHORT: u8 = 0x80;
const INT: u8 = 0xa0;
const LONG: u8 = 0xc0;
const TYPE_MASK: u8 = 0xe0;
const INLINE: u8 = 0x10;

/// Appends Pup fields to a payload.
#[derive(Debug)]
pub struct PupWriter<'a> {
    out: &'a mut BytesMut,
}

impl<'a> PupWriter<'a> {
    /// Writes fields at the end of `out`.
    pub fn new(out: &'a mut BytesMut) -> Self {
        PupWriter { out }
    }

    /// A string field: `s` and a NUL, or the null string `00 00` for `None`.
    ///
    /// # Errors
    /// [`DecodeError::LengthTooLarge`] when `s` and its NUL exceed
    /// [`MAX_STRING`] bytes (`what` names the field).
    pub fn string(&mut self, what: &'static str, s: Option<&[u8]>) -> Result<(), DecodeError> {
        match s {
            None => self.out.put_u16(0),
            Some(s) => {
                let len = s.len() + 1;
                if len > MAX_STRING {
                    return Err(DecodeError::LengthTooLarge {
                        what,
                        value: len as u64,
                        max: MAX_STRING as u64,
                    });
                }
                self.out.put_u16(len as u16);
                self.out.put_slice(s);
                self.out.put_u8(0);
            }
        }
        Ok(())
    }

    /// A binary string field of exactly `b` (no NUL added).
    ///
    /// # Errors
    /// [`DecodeError::LengthTooLarge`] when `b` exceeds [`MAX_STRING`] bytes.
    pub fn binary(&mut self, what: &'static str, b: &[u8]) -> Result<(), DecodeError> {
        if b.len() > MAX_STRING {
            return Err(DecodeError::LengthTooLarge {
                what,
                value: b.len() as u64,
                max: MAX_STRING as u64,
            });
        }
        self.out.put_u16(b.len() as u16);
        self.out.put_slice(b);
        Ok(())
    }

    /// A short field (3 bytes).
    pub fn short(&mut self, v: u16) {
        self.out.put_u8(SHORT);
        self.out.put_u16(v);
    }

    /// An int field (5 bytes).
    pub fn int(&mut self, v: u32) {
        self.out.put_u8(INT);
        self.out.put_u32(v);
    }

    /// A long long field (9 bytes).
    pub fn long(&mut self, v: u64) {
        self.out.put_u8(LONG);
        self.out.put_u64(v);
    }
}

/// Reads Pup fields off a payload, in order. Strings come back as slices of
/// the payload, without their NUL.
#[derive(Debug, Clone)]
pub struct PupReader {
    what: &'static str,
    buf: Bytes,
}

impl PupReader {
    /// Reads the fields of `payload`; `what` names the message in errors
    /// (`"kYR_login"`, ...).
    pub fn new(what: &'static str, payload: Bytes) -> Self {
        PupReader { what, buf: payload }
    }

    /// Whether every byte has been read: the optional fields after a fence
    /// are absent from here on.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// A string that must be present and not null.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`] when the payload ends first,
    /// [`DecodeError::WrongKind`] when a number is there instead, and
    /// [`DecodeError::Malformed`] for a null string.
    pub fn string(&mut self) -> Result<Bytes, DecodeError> {
        self.optional_string()?
            .ok_or_else(|| DecodeError::malformed(self.what, "a required string field is null"))
    }

    /// A string that may be null (`None`).
    ///
    /// # Errors
    /// As [`PupReader::string`], without the null case.
    pub fn optional_string(&mut self) -> Result<Option<Bytes>, DecodeError> {
        let s = self.binary()?;
        if s.is_empty() {
            return Ok(None);
        }
        Ok(Some(strip_nul(s)))
    }

    /// A binary string field, exactly as sent (no NUL is stripped); empty
    /// for a null string.
    ///
    /// # Errors
    /// As [`PupReader::optional_string`].
    pub fn binary(&mut self) -> Result<Bytes, DecodeError> {
        DecodeError::check_len(self.what, 2, self.buf.len())?;
        if self.buf[0] & SHORT != 0 {
            return Err(self.kind_error("a string", self.buf[0]));
        }
        let len = usize::from(u16::from_be_bytes([self.buf[0], self.buf[1]]));
        DecodeError::check_len(self.what, 2 + len, self.buf.len())?;
        self.buf.advance(2);
        Ok(self.buf.split_to(len))
    }

    /// An optional string after the fence: `None` when the payload has
    /// ended or the string is null.
    ///
    /// # Errors
    /// As [`PupReader::optional_string`] when bytes are left.
    pub fn trailing_string(&mut self) -> Result<Option<Bytes>, DecodeError> {
        if self.is_empty() {
            return Ok(None);
        }
        self.optional_string()
    }

    /// A short field, in either form.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`] or [`DecodeError::WrongKind`].
    pub fn short(&mut self) -> Result<u16, DecodeError> {
        Ok(self.number(SHORT, "a short")? as u16)
    }

    /// An int field, in either form.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`] or [`DecodeError::WrongKind`].
    pub fn int(&mut self) -> Result<u32, DecodeError> {
        Ok(self.number(INT, "an int")? as u32)
    }

    /// A long long field, in either form.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`] or [`DecodeError::WrongKind`].
    pub fn long(&mut self) -> Result<u64, DecodeError> {
        self.number(LONG, "a long long")
    }

    fn number(&mut self, kind: u8, name: &'static str) -> Result<u64, DecodeError> {
        DecodeError::check_len(self.what, 1, self.buf.len())?;
        let first = self.buf[0];
        if first & TYPE_MASK != kind {
            return Err(self.kind_error(name, first));
        }
        let width = match kind {
            SHORT => 2,
            INT => 4,
            _ => 8,
        };
        let (skip, mut value) = if first & INLINE != 0 {
            // the compact form: the value's top nibble sits in the tag byte
            (1, u64::from(first & 0x0f))
        } else {
            (1, 0)
        };
        let rest = if first & INLINE != 0 {
            width - 1
        } else {
            width
        };
        DecodeError::check_len(self.what, skip + rest, self.buf.len())?;
        for &b in &self.buf[skip..skip + rest] {
            value = (value << 8) | u64::from(b);
        }
        self.buf.advance(skip + rest);
        Ok(value)
    }

    fn kind_error(&self, expected: &str, tag: u8) -> DecodeError {
        let got = match tag & TYPE_MASK {
            SHORT => "a short".to_string(),
            INT => "an int".to_string(),
            LONG => "a long long".to_string(),
            t if t & SHORT == 0 => "a string".to_string(),
            _ => format!("a field of unknown type {tag:#04x}"),
        };
        DecodeError::WrongKind {
            what: self.what,
            expected: format!("{expected} field"),
            got,
        }
    }
}

/// `s` without one trailing NUL, if it ends with one.
pub(crate) fn strip_nul(mut s: Bytes) -> Bytes {
    if s.last() == Some(&0) {
        s.truncate(s.len() - 1);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut out = BytesMut::new();
        let mut w = PupWriter::new(&mut out);
        w.short(3);
        w.int(0x0080_0248);
        w.long(u64::MAX - 1);
        w.string("s", Some(b"w /")).unwrap();
        w.string("s", None).unwrap();
        w.binary("b", &[1, 2, 3, 4, 5, 6]).unwrap();
        assert_eq!(&out[..3], &[0x80, 0, 3]);
        assert_eq!(&out[3..8], &[0xa0, 0, 0x80, 0x02, 0x48]);
        let mut r = PupReader::new("test", out.freeze());
        assert_eq!(r.short().unwrap(), 3);
        assert_eq!(r.int().unwrap(), 0x0080_0248);
        assert_eq!(r.long().unwrap(), u64::MAX - 1);
        assert_eq!(&r.string().unwrap()[..], b"w /");
        assert_eq!(r.optional_string().unwrap(), None);
        assert_eq!(&r.string().unwrap()[..], &[1, 2, 3, 4, 5, 6]);
        assert!(r.is_empty());
        assert_eq!(r.trailing_string().unwrap(), None);
    }

    #[test]
    fn the_compact_number_form_decodes() {
        // XrdOucPup::Pack(char**, unsigned int) of 66695 MB: 0xb0 | top nibble, 3 bytes
        let v: u32 = 66695;
        let mut b = v.to_be_bytes();
        b[0] |= 0xb0;
        let mut r = PupReader::new("avail", Bytes::copy_from_slice(&b));
        assert_eq!(r.int().unwrap(), v);
        assert!(r.is_empty());
        // a compact short: 0x90 | nibble, 1 byte
        let mut r = PupReader::new("x", Bytes::from_static(&[0x9a, 0xbc]));
        assert_eq!(r.short().unwrap(), 0xabc);
    }

    #[test]
    fn wrong_kinds_and_short_payloads_are_typed_errors() {
        let mut r = PupReader::new("m", Bytes::from_static(&[0xa0, 0, 0, 0, 1]));
        assert!(matches!(r.short(), Err(DecodeError::WrongKind { .. })));
        assert!(matches!(r.string(), Err(DecodeError::WrongKind { .. })));
        let mut r = PupReader::new("m", Bytes::from_static(&[0xa0, 0, 0]));
        assert!(matches!(r.int(), Err(DecodeError::Truncated { .. })));
        let mut r = PupReader::new("m", Bytes::from_static(&[0x00, 0x09, b'a']));
        assert!(matches!(r.string(), Err(DecodeError::Truncated { .. })));
        let mut r = PupReader::new("m", Bytes::from_static(&[0x00, 0x00]));
        assert!(matches!(r.string(), Err(DecodeError::Malformed { .. })));
        let mut r = PupReader::new("m", Bytes::from_static(&[0xe0, 0x00]));
        assert!(matches!(r.long(), Err(DecodeError::WrongKind { .. })));
        let mut out = BytesMut::new();
        let long = vec![b'x'; MAX_STRING];
        assert!(matches!(
            PupWriter::new(&mut out).string("path", Some(&long)),
            Err(DecodeError::LengthTooLarge { .. })
        ));
    }
}
