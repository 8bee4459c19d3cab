//! Stat text: the `kXR_stat` answer, also embedded in `kXR_open` (retstat)
//! and in dstat dirlists; the `kXR_vfs` answer; the `kXR_statx` flag bytes
//! (PROTOCOL.md §7.1, §7.2).
//!
//! The stock server formats (XrdXrootdProtocol::StatGen)
//! `"%lld %lld %d %lld"` (id, size, flags, mtime) and, when it can,
//! `" %lld %lld %04o %s %s"` (ctime, atime, mode, owner, group), then a NUL
//! counted in `dlen`. XrdCl parses the numbers with `strtoll(…, 0)`; so does
//! this module, strictly: exactly 4 or 9 fields, each wholly a number where
//! one is expected.

use bytes::{BufMut, Bytes, BytesMut};
use std::io::Write as _;

use super::text::{fields, parse_int, parse_octal, parse_uint, sub};
use crate::error::DecodeError;
use crate::wire::strip_nul;

wire_newtype! {
    /// The `flags` field of stat text (`XStatRespFlags`). PROTOCOL.md §7.1.
    flags StatFlags(u32);
    /// A regular file: no bit set.
    FILE = 0 => "kXR_file";
    XSET = 1 => "kXR_xset";
    IS_DIR = 2 => "kXR_isDir";
    OTHER = 4 => "kXR_other";
    OFFLINE = 8 => "kXR_offline";
    READABLE = 16 => "kXR_readable";
    WRITABLE = 32 => "kXR_writable";
    POSCPEND = 64 => "kXR_poscpend";
    BKPEXIST = 128 => "kXR_bkpexist";
    CACHERSP = 512 => "kXR_cachersp";
}

/// The five fields the extended stat text adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatExtended {
    /// Change time, Unix seconds.
    pub ctime: i64,
    /// Access time, Unix seconds.
    pub atime: i64,
    /// Permission bits (`st_mode & 07777`), written as octal (`0644`).
    pub mode: u32,
    /// Owner name (a slice of the frame; no spaces).
    pub owner: Bytes,
    /// Group name (a slice of the frame; no spaces).
    pub group: Bytes,
}

/// Parsed stat text: `"<id> <size> <flags> <mtime>[ <ctime> <atime> <mode> <owner> <group>]"`.
#[doc(alias = "kXR_stat")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatInfo {
    /// An opaque number from device and inode (xrootd 5.5.3 on x86-64
    /// prints `st_ino << 32 | st_dev`);
    /// zero marks the file offline. Signed as the reference prints it.
    pub id: i64,
    /// Size in bytes.
    pub size: u64,
    /// File type and access bits.
    pub flags: StatFlags,
    /// Modification time, Unix seconds.
    pub mtime: i64,
    /// The extended fields, which current servers add unless formatting fails.
    pub extended: Option<StatExtended>,
}

impl StatInfo {
    /// Whether `flags` has `kXR_isDir`.
    pub fn is_dir(&self) -> bool {
        self.flags.contains(StatFlags::IS_DIR)
    }

    /// Parses stat text, with or without its trailing NUL (one NUL is
    /// stripped). Fields are separated by spaces; runs of spaces are
    /// tolerated, as by XrdCl.
    ///
    /// Errors: [`DecodeError::Malformed`] for a field count other than 4 or
    /// 9, a number that is not wholly a number (`strtoll` base 0: decimal,
    /// `0x` hex, leading-`0` octal; `mode` is octal digits), a negative size
    /// or flags, or a NUL or newline inside the text.
    pub fn decode(text: Bytes) -> Result<Self, DecodeError> {
        const WHAT: &str = "stat text";
        let text = strip_nul(&text);
        super::text::forbid(&text, 0, WHAT)?;
        super::text::forbid(&text, b'\n', WHAT)?;
        let f: Vec<&[u8]> = fields(&text).take(10).collect();
        if f.len() != 4 && f.len() != 9 {
            return Err(DecodeError::malformed(
                WHAT,
                format!("{} fields, expected 4 or 9", f.len()),
            ));
        }
        let flags = parse_uint(f[2], "stat flags")?;
        let flags = u32::try_from(flags)
            .map_err(|_| DecodeError::malformed("stat flags", format!("{flags} out of range")))?;
        let extended = match f.len() {
            9 => Some(StatExtended {
                ctime: parse_int(f[4], "stat ctime")?,
                atime: parse_int(f[5], "stat atime")?,
                mode: parse_octal(f[6], "stat mode")?,
                owner: sub(&text, f[7]),
                group: sub(&text, f[8]),
            }),
            _ => None,
        };
        Ok(StatInfo {
            id: parse_int(f[0], "stat id")?,
            size: parse_uint(f[1], "stat size")?,
            flags: StatFlags(flags),
            mtime: parse_int(f[3], "stat mtime")?,
            extended,
        })
    }

    /// Appends the text without a NUL, as the stock server formats it
    /// (decimal numbers, `mode` as `%04o`).
    pub fn write_text(&self, buf: &mut BytesMut) {
        let mut w = buf.writer();
        // writing into a BytesMut cannot fail
        let _ = write!(
            w,
            "{} {} {} {}",
            self.id, self.size, self.flags.0, self.mtime
        );
        if let Some(x) = &self.extended {
            let _ = write!(w, " {} {} {:04o} ", x.ctime, x.atime, x.mode);
            let buf = w.into_inner();
            buf.put_slice(&x.owner);
            buf.put_u8(b' ');
            buf.put_slice(&x.group);
        }
    }

    /// Appends the `kXR_stat` body: the text and its NUL.
    pub fn encode(&self, buf: &mut BytesMut) {
        self.write_text(buf);
        buf.put_u8(0);
    }
}

/// The `kXR_stat` answer with `kXR_vfs`: six integers (XrdOssSys::StatVS
/// `"%d %lld %d %d %lld %d"`), NUL-terminated. Free space is in MiB,
/// utilisation in percent.
#[doc(alias = "kXR_vfs")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatVfs {
    /// Read/write nodes (0 or 1 from a single server).
    pub nodes_rw: i64,
    /// Free read/write space, MiB.
    pub free_rw: i64,
    /// Read/write space utilisation, percent.
    pub util_rw: i64,
    /// Staging nodes.
    pub nodes_stage: i64,
    /// Free staging space, MiB.
    pub free_stage: i64,
    /// Staging space utilisation, percent.
    pub util_stage: i64,
}

impl StatVfs {
    /// Parses the six integers (one trailing NUL stripped).
    /// Errors: [`DecodeError::Malformed`] for another field count or a
    /// field that is not a number.
    pub fn decode(text: Bytes) -> Result<Self, DecodeError> {
        let text = strip_nul(&text);
        let f: Vec<&[u8]> = fields(&text).take(7).collect();
        let [a, b, c, d, e, g] = f[..] else {
            return Err(DecodeError::malformed(
                "kXR_vfs stat text",
                format!("{} fields, expected 6", f.len()),
            ));
        };
        let n = |x| parse_int(x, "kXR_vfs stat field");
        Ok(StatVfs {
            nodes_rw: n(a)?,
            free_rw: n(b)?,
            util_rw: n(c)?,
            nodes_stage: n(d)?,
            free_stage: n(e)?,
            util_stage: n(g)?,
        })
    }

    /// Appends the text and its NUL.
    pub fn encode(&self, buf: &mut BytesMut) {
        let mut w = buf.writer();
        let _ = write!(
            w,
            "{} {} {} {} {} {}\0",
            self.nodes_rw,
            self.free_rw,
            self.util_rw,
            self.nodes_stage,
            self.free_stage,
            self.util_stage
        );
    }
}

/// The `kXR_statx` answer: one flag byte per path, in request order
/// (`kXR_file` 0, `kXR_isDir` 2, `kXR_offline` 8). PROTOCOL.md §7.2.
#[doc(alias = "kXR_statx")]
pub fn decode_statx(body: &[u8]) -> impl ExactSizeIterator<Item = StatFlags> + '_ {
    body.iter().map(|&b| StatFlags(b as u32))
}

/// Appends the `kXR_statx` answer: the low byte of each flag set.
pub fn encode_statx(flags: &[StatFlags], buf: &mut BytesMut) {
    buf.extend(flags.iter().map(|f| f.0 as u8));
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::response::tests::{arb_word, body_of, ok_roundtrip};
    use proptest::prelude::*;

    fn parse(s: &str) -> Result<StatInfo, DecodeError> {
        StatInfo::decode(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn stock_text() {
        let s =
            parse("64769 1048576 48 1700000000 1700000001 1700000002 0644 alice users\0").unwrap();
        assert_eq!(s.id, 64769);
        assert_eq!(s.size, 1 << 20);
        assert_eq!(s.flags, StatFlags::READABLE | StatFlags::WRITABLE);
        assert_eq!(s.mtime, 1_700_000_000);
        let x = s.extended.as_ref().unwrap();
        assert_eq!(
            (x.ctime, x.atime, x.mode),
            (1_700_000_001, 1_700_000_002, 0o644)
        );
        assert_eq!((&x.owner[..], &x.group[..]), (&b"alice"[..], &b"users"[..]));
        assert!(!s.is_dir());
        assert_eq!(
            &body_of(|b| s.encode(b))[..],
            b"64769 1048576 48 1700000000 1700000001 1700000002 0644 alice users\0"
        );

        let basic = parse("0 0 0 0").unwrap();
        assert_eq!(basic.extended, None);
        assert_eq!(&body_of(|b| basic.encode(b))[..], b"0 0 0 0\0");
        let dir = parse("-1 4096 0x13 010").unwrap();
        assert_eq!((dir.id, dir.flags.0, dir.mtime), (-1, 0x13, 8));
        assert!(dir.is_dir());
        assert_eq!(
            parse("1 2 3 4 5 6 4755 u g")
                .unwrap()
                .extended
                .unwrap()
                .mode,
            0o4755
        );
    }

    #[test]
    fn garbage() {
        for bad in [
            "",
            "1 2 3",
            "1 2 3 4 5",
            "1 2 3 4 5 6 0644 u g extra",
            "1 -2 3 4",
            "1 2 -3 4",
            "1 2 3 4x",
            "1 2 99999999999 4",
            "1 2 3 4 5 6 0648 u g",
            "1 2 3 4\0junk",
            "1 2\n3 4",
        ] {
            assert!(
                matches!(parse(bad), Err(DecodeError::Malformed { .. })),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn vfs_and_statx() {
        let v = StatVfs::decode(Bytes::from_static(b"1 2048 40 0 0 0\0")).unwrap();
        assert_eq!((v.nodes_rw, v.free_rw, v.util_rw), (1, 2048, 40));
        assert_eq!(&body_of(|b| v.encode(b))[..], b"1 2048 40 0 0 0\0");
        assert!(StatVfs::decode(Bytes::from_static(b"1 2 3 4 5")).is_err());
        assert!(StatVfs::decode(Bytes::from_static(b"1 2 3 4 5 x")).is_err());
        let flags = [StatFlags::FILE, StatFlags::IS_DIR, StatFlags::OFFLINE];
        let body = body_of(|b| encode_statx(&flags, b));
        assert_eq!(&body[..], &[0, 2, 8]);
        assert_eq!(decode_statx(&body).collect::<Vec<_>>(), flags);
        assert_eq!(
            format!("{:?}", StatFlags::IS_DIR | StatFlags(0x4000)),
            "StatFlags(kXR_isDir | 0x4000)"
        );
    }

    pub(crate) fn arb_stat() -> impl Strategy<Value = StatInfo> {
        let ext = (
            any::<i64>(),
            any::<i64>(),
            0u32..0o10000,
            arb_word(12),
            arb_word(12),
        )
            .prop_map(|(ctime, atime, mode, owner, group)| StatExtended {
                ctime,
                atime,
                mode,
                owner,
                group,
            });
        (
            any::<i64>(),
            0..=i64::MAX as u64,
            any::<u32>(),
            any::<i64>(),
            proptest::option::of(ext),
        )
            .prop_map(|(id, size, flags, mtime, extended)| StatInfo {
                id,
                size,
                flags: StatFlags(flags),
                mtime,
                extended,
            })
    }

    proptest! {
        #[test]
        fn roundtrip(s in arb_stat()) {
            let body = body_of(|b| s.encode(b));
            let back = StatInfo::decode(ok_roundtrip(body.clone())).unwrap();
            prop_assert_eq!(&back, &s);
            prop_assert_eq!(body_of(|b| back.encode(b)), body);
        }

        #[test]
        fn vfs_roundtrip(v in any::<[i64; 6]>()) {
            let v = StatVfs { nodes_rw: v[0], free_rw: v[1], util_rw: v[2], nodes_stage: v[3], free_stage: v[4], util_stage: v[5] };
            let body = body_of(|b| v.encode(b));
            prop_assert_eq!(StatVfs::decode(ok_roundtrip(body)).unwrap(), v);
        }

        #[test]
        fn statx_roundtrip(b in proptest::collection::vec(any::<u8>(), 0..20)) {
            let flags: Vec<StatFlags> = decode_statx(&b).collect();
            prop_assert_eq!(&body_of(|buf| encode_statx(&flags, buf))[..], &b[..]);
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = StatInfo::decode(Bytes::from(b.clone()));
            let _ = StatVfs::decode(Bytes::from(b));
        }
    }
}
