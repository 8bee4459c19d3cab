//! Answers to `kXR_query` (PROTOCOL.md §7.7, §11):
//!
//! - `kXR_Qconfig`: one `value\n` line per key asked, in key order, no NUL
//!   (an unknown key is echoed back unchanged).
//! - `kXR_Qcksum`: `"<alg> <hex>"` and a NUL.
//! - `kXR_Qspace`: `oss.cgroup=<name>&oss.space=<n>&oss.free=<n>&oss.maxf=<n>&oss.used=<n>&oss.quota=<n>`
//!   and a NUL (XrdOssSys::StatLS, XrdOfs fsctl `blen+1`).

use bytes::{BufMut, Bytes, BytesMut};
use std::io::Write as _;

use super::text::{forbid, parse_int, split_checksum, sub};
use crate::error::DecodeError;
use crate::wire::strip_nul;

/// A `kXR_Qconfig` answer: one value per key, in the order the keys were asked.
#[doc(alias = "kXR_Qconfig")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QconfigAnswer {
    /// The values (slices of the body), without their `\n`.
    pub values: Vec<Bytes>,
}

impl QconfigAnswer {
    /// Splits the answer into its lines. A last line without `\n` counts,
    /// and one trailing NUL is stripped (`xrootd`/`cmsd` alone answer
    /// `"\n\0"`, one empty value). Errors: [`DecodeError::Malformed`] for a
    /// NUL inside the text.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let text = strip_nul(&body);
        forbid(&text, 0, "kXR_Qconfig answer")?;
        let mut values: Vec<Bytes> = text.split(|&b| b == b'\n').map(|l| sub(&text, l)).collect();
        if values.last().is_some_and(|v| v.is_empty()) {
            values.pop();
        }
        Ok(QconfigAnswer { values })
    }

    /// Pairs the values with the keys asked.
    /// Errors: [`DecodeError::Malformed`] when the counts differ.
    pub fn with_keys<'k>(&self, keys: &[&'k str]) -> Result<Vec<(&'k str, Bytes)>, DecodeError> {
        if keys.len() != self.values.len() {
            return Err(DecodeError::malformed(
                "kXR_Qconfig answer",
                format!("{} values for {} keys", self.values.len(), keys.len()),
            ));
        }
        Ok(keys
            .iter()
            .copied()
            .zip(self.values.iter().cloned())
            .collect())
    }

    /// Appends `value\n` for each value.
    pub fn encode(&self, buf: &mut BytesMut) {
        for v in &self.values {
            buf.put_slice(v);
            buf.put_u8(b'\n');
        }
    }
}

/// A `kXR_Qcksum` answer: `"<alg> <hex>"` with a NUL.
#[doc(alias = "kXR_Qcksum")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumAnswer {
    /// Algorithm name (`adler32`, `crc32c`, `md5`, …).
    pub alg: Bytes,
    /// The value as sent: lowercase hex, most significant byte first (or
    /// plugin text).
    pub value: Bytes,
}

impl ChecksumAnswer {
    /// Parses the answer (one trailing NUL stripped).
    /// Errors: [`DecodeError::Malformed`] unless it is two non-empty words
    /// separated by one space.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        const WHAT: &str = "kXR_Qcksum answer";
        let text = strip_nul(&body);
        forbid(&text, 0, WHAT)?;
        let (alg, value) = split_checksum(&text, b' ', WHAT, "expected `<alg> <value>`")?;
        Ok(ChecksumAnswer { alg, value })
    }

    /// The value decoded from hex, most significant byte first.
    /// Errors: [`DecodeError::Malformed`] for an odd length or a non-hex digit.
    pub fn value_bytes(&self) -> Result<Vec<u8>, DecodeError> {
        const WHAT: &str = "checksum hex value";
        if self.value.len() % 2 != 0 {
            return Err(DecodeError::malformed(WHAT, "odd number of digits"));
        }
        self.value
            .chunks_exact(2)
            .map(|p| {
                let digit = |c: u8| (c as char).to_digit(16);
                match (digit(p[0]), digit(p[1])) {
                    (Some(h), Some(l)) => Ok((h * 16 + l) as u8),
                    _ => Err(DecodeError::malformed(WHAT, "not a hex digit")),
                }
            })
            .collect()
    }

    /// An answer for `value`, written as lowercase hex.
    pub fn from_value(alg: impl Into<Bytes>, value: &[u8]) -> Self {
        let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
        ChecksumAnswer {
            alg: alg.into(),
            value: hex.into(),
        }
    }

    /// Appends `alg`, a space, `value` and a NUL.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.alg);
        buf.put_u8(b' ');
        buf.put_slice(&self.value);
        buf.put_u8(0);
    }
}

/// A `kXR_Qspace` answer. Sizes are bytes; `quota` is −1 for none.
#[doc(alias = "kXR_Qspace")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceInfo {
    /// `oss.cgroup`: the space name (`public`, `all`, …).
    pub cgroup: Bytes,
    /// `oss.space`: total bytes.
    pub space: i64,
    /// `oss.free`: free bytes.
    pub free: i64,
    /// `oss.maxf`: largest free extent, bytes.
    pub maxf: i64,
    /// `oss.used`: used bytes.
    pub used: i64,
    /// `oss.quota`: quota bytes, −1 for none.
    pub quota: i64,
}

impl SpaceInfo {
    /// Parses the `&`-separated `key=value` pairs (one trailing NUL
    /// stripped). Unknown keys are ignored; the first of a repeated key wins.
    /// Errors: [`DecodeError::Malformed`] for a piece without `=`, a missing
    /// key or a value that is not a number.
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        const WHAT: &str = "kXR_Qspace answer";
        const KEYS: [&[u8]; 6] = [
            b"oss.cgroup",
            b"oss.space",
            b"oss.free",
            b"oss.maxf",
            b"oss.used",
            b"oss.quota",
        ];
        let text = strip_nul(&body);
        forbid(&text, 0, WHAT)?;
        let mut found: [Option<&[u8]>; 6] = [None; 6];
        for piece in text.split(|&b| b == b'&') {
            let eq = piece
                .iter()
                .position(|&b| b == b'=')
                .ok_or_else(|| DecodeError::malformed(WHAT, "a piece without `=`"))?;
            let (key, value) = (&piece[..eq], &piece[eq + 1..]);
            if let Some(i) = KEYS.iter().position(|k| *k == key) {
                found[i].get_or_insert(value);
            }
        }
        let get = |i: usize| {
            found[i].ok_or_else(|| {
                DecodeError::malformed(WHAT, format!("no {}", String::from_utf8_lossy(KEYS[i])))
            })
        };
        let num = |i: usize| parse_int(get(i)?, "kXR_Qspace value");
        Ok(SpaceInfo {
            cgroup: sub(&text, get(0)?),
            space: num(1)?,
            free: num(2)?,
            maxf: num(3)?,
            used: num(4)?,
            quota: num(5)?,
        })
    }

    /// Appends the answer as the stock server formats it, with a NUL.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_slice(b"oss.cgroup=");
        buf.put_slice(&self.cgroup);
        let _ = write!(
            buf.writer(),
            "&oss.space={}&oss.free={}&oss.maxf={}&oss.used={}&oss.quota={}\0",
            self.space,
            self.free,
            self.maxf,
            self.used,
            self.quota
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::{arb_word, body_of, ok_roundtrip};
    use proptest::prelude::*;

    #[test]
    fn qconfig_lines() {
        let q =
            QconfigAnswer::decode(Bytes::from_static(b"1024\n2097136\nxroot.pgreadv\n")).unwrap();
        assert_eq!(q.values, [&b"1024"[..], b"2097136", b"xroot.pgreadv"]);
        let pairs = q
            .with_keys(&["readv_iov_max", "readv_ior_max", "xroot.pgreadv"])
            .unwrap();
        assert_eq!(pairs[1].0, "readv_ior_max");
        assert!(q.with_keys(&["one"]).is_err());
        assert_eq!(
            QconfigAnswer::decode(Bytes::from_static(b"\n\0"))
                .unwrap()
                .values,
            [Bytes::new()]
        );
        assert_eq!(
            QconfigAnswer::decode(Bytes::new()).unwrap().values,
            Vec::<Bytes>::new()
        );
        assert!(QconfigAnswer::decode(Bytes::from_static(b"a\0b\n")).is_err());
    }

    #[test]
    fn checksum() {
        let c = ChecksumAnswer::decode(Bytes::from_static(b"adler32 091e01de\0")).unwrap();
        assert_eq!(&c.alg[..], b"adler32");
        assert_eq!(c.value_bytes().unwrap(), [0x09, 0x1e, 0x01, 0xde]);
        assert_eq!(
            ChecksumAnswer::from_value("adler32", &[0x09, 0x1e, 0x01, 0xde]),
            c
        );
        for bad in [
            &b"adler32\0"[..],
            b" 1234",
            b"adler32 ",
            b"a b c",
            b"a 1\x002",
        ] {
            assert!(
                ChecksumAnswer::decode(Bytes::copy_from_slice(bad)).is_err(),
                "{bad:?}"
            );
        }
        let odd = ChecksumAnswer::decode(Bytes::from_static(b"x 123")).unwrap();
        assert!(odd.value_bytes().is_err());
        assert!(ChecksumAnswer::decode(Bytes::from_static(b"x 1g"))
            .unwrap()
            .value_bytes()
            .is_err());
    }

    #[test]
    fn space() {
        let body = Bytes::from_static(b"oss.cgroup=public&oss.space=1000&oss.free=400&oss.maxf=400&oss.used=600&oss.quota=-1\0");
        let s = SpaceInfo::decode(body.clone()).unwrap();
        assert_eq!(
            (&s.cgroup[..], s.space, s.free, s.quota),
            (&b"public"[..], 1000, 400, -1)
        );
        assert_eq!(body_of(|b| s.encode(b)), body);
        assert!(SpaceInfo::decode(Bytes::from_static(b"oss.cgroup=x&oss.space=1")).is_err());
        assert!(SpaceInfo::decode(Bytes::from_static(
            b"oss.cgroup=x&oss.space=1&oss.free=z&oss.maxf=1&oss.used=1&oss.quota=1"
        ))
        .is_err());
        assert!(SpaceInfo::decode(Bytes::from_static(b"junk")).is_err());
    }

    fn line() -> impl Strategy<Value = Bytes> {
        proptest::collection::vec(
            any::<u8>().prop_filter("line byte", |b| *b != b'\n' && *b != 0),
            0..20,
        )
        .prop_map(Bytes::from)
    }

    proptest! {
        #[test]
        fn qconfig_roundtrip(values in proptest::collection::vec(line(), 0..10)) {
            let q = QconfigAnswer { values };
            let body = body_of(|b| q.encode(b));
            prop_assert_eq!(QconfigAnswer::decode(ok_roundtrip(body)).unwrap(), q);
        }

        #[test]
        fn checksum_roundtrip(alg in arb_word(16), value in proptest::collection::vec(any::<u8>(), 1..64)) {
            let c = ChecksumAnswer::from_value(alg, &value);
            let body = body_of(|b| c.encode(b));
            let back = ChecksumAnswer::decode(ok_roundtrip(body.clone())).unwrap();
            prop_assert_eq!(back.value_bytes().unwrap(), value);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }

        #[test]
        fn space_roundtrip(cgroup in arb_word(12).prop_filter("no & =", |w| !w.contains(&b'&') && !w.contains(&b'=')), n in any::<[i64; 5]>()) {
            let s = SpaceInfo { cgroup, space: n[0], free: n[1], maxf: n[2], used: n[3], quota: n[4] };
            let body = body_of(|b| s.encode(b));
            let back = SpaceInfo::decode(ok_roundtrip(body.clone())).unwrap();
            prop_assert_eq!(&back, &s);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let b = Bytes::from(b);
            let _ = QconfigAnswer::decode(b.clone());
            let _ = ChecksumAnswer::decode(b.clone()).map(|c| c.value_bytes());
            let _ = SpaceInfo::decode(b);
        }
    }
}
