//! The `kXR_fattr` answers (PROTOCOL.md §7.9; XrdXrootdXeqFAttr.cc).
//!
//! - del, set and get: `nerrs:u8 numattr:u8`, then per attribute
//!   `status:u16 name\0` (status 0, or the `kXR_*` error for that name);
//!   for get, then per attribute `vlen:i32 value[vlen]` (0 for a failed one).
//! - list: per attribute `name\0`, and with `aData` (values asked, as xrootd
//!   5.5.3 answers XrdCl) `vlen:i32 value[vlen]` after each name.
//!
//! A long answer may come in `kXR_oksofar` chunks: parse their concatenation.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codes::ErrorCode;
use crate::error::DecodeError;
use crate::wire::Reader;

/// One attribute of a del/set/get answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FattrItem {
    /// The error for this name, `None` when it succeeded. On the wire a u16
    /// (a code above 65535 is truncated on encode).
    pub error: Option<ErrorCode>,
    /// The attribute name as the request sent it (a slice of the body).
    pub name: Bytes,
    /// The value, in a get answer (empty for a failed name).
    pub value: Option<Bytes>,
}

/// A del, set or get answer.
#[doc(alias = "kXR_fattr")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FattrReply {
    /// The attributes, in request order.
    pub items: Vec<FattrItem>,
}

/// A list answer: names and, with `aData`, values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FattrList {
    /// `(name, value)` pairs; the values are `None` without `aData`.
    pub entries: Vec<(Bytes, Option<Bytes>)>,
}

/// Reads a NUL-terminated name.
fn name(r: &mut Reader, what: &'static str) -> Result<Bytes, DecodeError> {
    let rest = r.rest();
    let end = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| DecodeError::malformed(what, "name without its NUL"))?;
    *r = Reader::new(rest.slice(end + 1..), what);
    Ok(rest.slice(..end))
}

/// Reads `vlen:i32 value[vlen]`.
fn value(r: &mut Reader) -> Result<Bytes, DecodeError> {
    let len = r.i32()?;
    if len < 0 {
        return Err(DecodeError::NegativeLength {
            what: "kXR_fattr value length",
            value: len as i64,
        });
    }
    r.bytes(len as usize)
}

fn put_value(buf: &mut BytesMut, v: &[u8]) {
    buf.put_i32(v.len() as i32);
    buf.put_slice(v);
}

impl FattrReply {
    /// `nerrs`: how many names failed (at most 255 on the wire).
    pub fn nerrs(&self) -> usize {
        self.items.iter().filter(|i| i.error.is_some()).count()
    }

    /// Reads a del/set answer (`with_values == false`) or a get answer.
    ///
    /// Errors: [`DecodeError::Truncated`] for a body shorter than its
    /// counts say; [`DecodeError::Malformed`] for a name without its NUL;
    /// [`DecodeError::NegativeLength`] for a negative value length;
    /// [`DecodeError::InvalidValue`] when `nerrs` does not count the failed
    /// names; [`DecodeError::TrailingBytes`] for bytes left over.
    pub fn decode(body: Bytes, with_values: bool) -> Result<Self, DecodeError> {
        const WHAT: &str = "kXR_fattr response";
        let mut r = Reader::new(body, WHAT);
        let nerrs = r.u8()?;
        let numattr = r.u8()?;
        let mut items = Vec::with_capacity(numattr as usize);
        for _ in 0..numattr {
            let status = r.u16()?;
            items.push(FattrItem {
                error: (status != 0).then_some(ErrorCode(status as i32)),
                name: name(&mut r, WHAT)?,
                value: None,
            });
        }
        if with_values {
            for item in &mut items {
                item.value = Some(value(&mut r)?);
            }
        }
        r.finish()?;
        let reply = FattrReply { items };
        if reply.nerrs() != nerrs as usize {
            return Err(DecodeError::InvalidValue {
                what: "kXR_fattr nerrs",
                expected: "the number of failed names",
                got: nerrs as i64,
            });
        }
        Ok(reply)
    }

    /// Appends the answer: counts, names with their status, then the values
    /// of the items that have one (all of them in a get answer).
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_u8(self.nerrs() as u8);
        buf.put_u8(self.items.len() as u8);
        for i in &self.items {
            buf.put_u16(i.error.map_or(0, |e| e.0 as u16));
            buf.put_slice(&i.name);
            buf.put_u8(0);
        }
        for v in self.items.iter().filter_map(|i| i.value.as_ref()) {
            put_value(buf, v);
        }
    }
}

impl FattrList {
    /// Reads a list answer, with values when `aData` was asked.
    /// Errors: [`DecodeError::Malformed`] for an empty name or one without
    /// its NUL; [`DecodeError::Truncated`] / [`DecodeError::NegativeLength`]
    /// for a bad value length.
    pub fn decode(body: Bytes, with_values: bool) -> Result<Self, DecodeError> {
        const WHAT: &str = "kXR_fattr list";
        let mut r = Reader::new(body, WHAT);
        let mut entries = Vec::new();
        while !r.is_empty() {
            let n = name(&mut r, WHAT)?;
            if n.is_empty() {
                return Err(DecodeError::malformed(WHAT, "empty name"));
            }
            let v = if with_values {
                Some(value(&mut r)?)
            } else {
                None
            };
            entries.push((n, v));
        }
        Ok(FattrList { entries })
    }

    /// Appends `name\0` and, where set, the value, for each entry.
    pub fn encode(&self, buf: &mut BytesMut) {
        for (n, v) in &self.entries {
            buf.put_slice(n);
            buf.put_u8(0);
            if let Some(v) = v {
                put_value(buf, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::{arb_bytes, body_of, ok_roundtrip};
    use proptest::prelude::*;

    #[test]
    fn get_answer_bytes() {
        let body = Bytes::from_static(b"\x01\x02\0\0U.a\0\x0b\xd3U.b\0\0\0\0\x03xyz\0\0\0\0");
        let g = FattrReply::decode(body.clone(), true).unwrap();
        assert_eq!(g.nerrs(), 1);
        assert_eq!(&g.items[0].name[..], b"U.a");
        assert_eq!(g.items[0].error, None);
        assert_eq!(g.items[0].value.as_deref(), Some(&b"xyz"[..]));
        assert_eq!(g.items[1].error, Some(ErrorCode::ATTR_NOT_FOUND));
        assert_eq!(g.items[1].value.as_deref(), Some(&b""[..]));
        assert_eq!(body_of(|b| g.encode(b)), body);
        // the same names answered to a set: no values
        let set = FattrReply::decode(body.slice(..14), false).unwrap();
        assert!(set.items.iter().all(|i| i.value.is_none()));
    }

    #[test]
    fn list_answer_bytes() {
        let body = Bytes::from_static(b"U.a\0\0\0\0\x01xU.bb\0\0\0\0\0");
        let l = FattrList::decode(body.clone(), true).unwrap();
        assert_eq!(l.entries.len(), 2);
        assert_eq!(
            l.entries[1],
            (Bytes::from_static(b"U.bb"), Some(Bytes::new()))
        );
        assert_eq!(body_of(|b| l.encode(b)), body);
        let names = FattrList::decode(Bytes::from_static(b"a\0b\0"), false).unwrap();
        assert_eq!(names.entries.len(), 2);
    }

    #[test]
    fn garbage() {
        for (bad, values) in [
            (&b"\x00\x01\0\0name"[..], false),
            (b"\x01\x01\0\0n\0", false),
            (b"\x00\x02\0\0n\0", false),
            (b"\x00\x01\0\0n\0\xff\xff\xff\xff", true),
            (b"\x00\x01\0\0n\0\0\0\0\x05ab", true),
            (b"\x00\x01\0\0n\0x", false),
        ] {
            assert!(
                FattrReply::decode(Bytes::from_static(bad), values).is_err(),
                "{bad:?}"
            );
        }
        assert!(FattrList::decode(Bytes::from_static(b"\0"), false).is_err());
        assert!(FattrList::decode(Bytes::from_static(b"a"), false).is_err());
        assert!(FattrList::decode(Bytes::from_static(b"a\0\0\0"), true).is_err());
    }

    fn arb_name() -> impl Strategy<Value = Bytes> {
        proptest::collection::vec(1u8..=255, 1..20).prop_map(Bytes::from)
    }

    proptest! {
        #[test]
        fn reply_roundtrip(
            items in proptest::collection::vec((proptest::option::of(1u16..), arb_name(), arb_bytes(40)), 0..16),
            get in any::<bool>(),
        ) {
            let r = FattrReply {
                items: items
                    .into_iter()
                    .map(|(e, name, v)| FattrItem { error: e.map(|c| ErrorCode(c as i32)), name, value: get.then_some(v) })
                    .collect(),
            };
            let body = body_of(|b| r.encode(b));
            let back = FattrReply::decode(ok_roundtrip(body.clone()), get).unwrap();
            prop_assert_eq!(&back, &r);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }

        #[test]
        fn list_roundtrip(entries in proptest::collection::vec((arb_name(), arb_bytes(40)), 0..16), values in any::<bool>()) {
            let l = FattrList { entries: entries.into_iter().map(|(n, v)| (n, values.then_some(v))).collect() };
            let body = body_of(|b| l.encode(b));
            let back = FattrList::decode(ok_roundtrip(body.clone()), values).unwrap();
            prop_assert_eq!(&back, &l);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }

        #[test]
        fn garbage_never_panics(b in arb_bytes(80), values in any::<bool>()) {
            let _ = FattrReply::decode(b.clone(), values);
            let _ = FattrList::decode(b, values);
        }
    }
}
