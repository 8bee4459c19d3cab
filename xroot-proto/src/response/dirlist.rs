//! The `kXR_dirlist` answer (PROTOCOL.md §7.3; XrdXrootdProtocol
//! `do_Dirlist`, `do_DirStat`).
//!
//! - **Plain**: names separated by `\n`, in `kXR_oksofar` chunks of up to
//!   4096 bytes that end in `\n`; the final `kXR_ok` chunk has its last `\n`
//!   replaced by a NUL. An empty directory is one empty `kXR_ok`.
//! - **dstat** (`kXR_dstat`): the first chunk starts with the sentinel
//!   `".\n0 0 0 0\n"`, then a pair `name\n<stat text>\n` per entry; chunks of
//!   up to 8192 bytes break only between pairs and leave room for a stat
//!   line (160 bytes, 312 with checksums) after a name.
//! - **dcksm** (`kXR_dcksm`): each stat line ends in ` [ <alg>:<hex> ]`
//!   (`none` when the value is not available).
//!
//! The client concatenates the chunk bodies and parses the whole with
//! [`DirList::decode`].

use bytes::{BufMut, Bytes, BytesMut};

use super::stat::StatInfo;
use super::text::{forbid, split_checksum};
use super::typed::Response;
use crate::error::DecodeError;
use crate::wire::strip_nul;

/// The lead-in of a dstat listing; its last byte is the NUL of an empty
/// final chunk.
const SENTINEL: &[u8] = b".\n0 0 0 0\n";
/// Chunk size of a plain listing (the reference's `ebuff[4096]`).
const PLAIN_CHUNK: usize = 4096;
/// Chunk size of a dstat listing (`XB.ebuff[8192]`).
const STAT_CHUNK: usize = 8192;
/// Room a dstat chunk keeps for a stat line after a name (`statSz`).
const STAT_RESERVE: usize = 160;
/// `statSz` with checksums: 160 + `XrdCksData::NameSize` (16) +
/// 2 × `ValuSize` (64) + 8.
const CKSM_RESERVE: usize = 312;

/// The checksum a dcksm listing appends to a stat line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirlistChecksum {
    /// Algorithm name (`adler32`, …).
    pub alg: Bytes,
    /// Lowercase hex value, or `none` when the server has none.
    pub value: Bytes,
}

/// One entry of a dstat (or dcksm) listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirStatEntry {
    /// The entry's name (a slice of the listing).
    pub name: Bytes,
    /// Its stat.
    pub stat: StatInfo,
    /// Its checksum, in a dcksm listing.
    pub checksum: Option<DirlistChecksum>,
}

/// A whole directory listing.
#[doc(alias = "kXR_dirlist")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirList {
    /// Names only.
    Plain(Vec<Bytes>),
    /// Names with stat (and perhaps checksums).
    Stat(Vec<DirStatEntry>),
}

impl DirList {
    /// Parses a listing: the concatenated bodies of its `kXR_oksofar`
    /// chunks and final `kXR_ok`. A trailing NUL (or, when the last entry
    /// vanished before the final chunk, a trailing `\n`) ends it. A listing
    /// that starts with the dstat sentinel is parsed as [`DirList::Stat`].
    ///
    /// Errors: [`DecodeError::Malformed`] for an empty name, a NUL inside
    /// the text, a dstat name without its stat line, a malformed checksum
    /// suffix, and the errors of [`StatInfo::decode`].
    pub fn decode(body: Bytes) -> Result<Self, DecodeError> {
        let stat_mode = body.starts_with(&SENTINEL[..SENTINEL.len() - 1]);
        let text = if stat_mode {
            body.slice((SENTINEL.len()).min(body.len())..)
        } else {
            body
        };
        let text = strip_nul(&text);
        let text = match text.last() {
            Some(b'\n') => text.slice(..text.len() - 1),
            _ => text,
        };
        forbid(&text, 0, "dirlist")?;
        let mut lines = text.split(|&b| b == b'\n').filter(|_| !text.is_empty());
        if !stat_mode {
            let names = lines
                .map(|l| nonempty(&text, l))
                .collect::<Result<_, _>>()?;
            return Ok(DirList::Plain(names));
        }
        let mut entries = Vec::new();
        while let Some(name) = lines.next() {
            let name = nonempty(&text, name)?;
            let line = lines
                .next()
                .ok_or_else(|| DecodeError::malformed("dstat dirlist", "name without stat line"))?;
            entries.push(stat_entry(name, text.slice_ref(line))?);
        }
        Ok(DirList::Stat(entries))
    }

    /// Parses a listing from its chunk bodies, joined first (one chunk is
    /// parsed in place, without a copy). Errors: as [`DirList::decode`].
    pub fn decode_chunks(chunks: &[Bytes]) -> Result<Self, DecodeError> {
        match chunks {
            [one] => Self::decode(one.clone()),
            _ => Self::decode(chunks.concat().into()),
        }
    }

    /// The responses a server sends for this listing, chunked as the stock
    /// server chunks it: `kXR_oksofar` chunks, then one `kXR_ok`. An entry
    /// that alone exceeds a chunk gets a chunk of its own.
    pub fn responses(&self) -> Vec<Response> {
        let mut out = Vec::new();
        let mut chunk = BytesMut::new();
        match self {
            DirList::Plain(names) => {
                for name in names {
                    fit(&mut chunk, name.len() + 1, PLAIN_CHUNK, &mut out);
                    chunk.put_slice(name);
                    chunk.put_u8(b'\n');
                }
            }
            DirList::Stat(entries) => {
                let reserve = match entries.iter().any(|e| e.checksum.is_some()) {
                    true => CKSM_RESERVE,
                    false => STAT_RESERVE,
                };
                chunk.put_slice(SENTINEL);
                for e in entries {
                    fit(&mut chunk, e.name.len() + 1 + reserve, STAT_CHUNK, &mut out);
                    chunk.put_slice(&e.name);
                    chunk.put_u8(b'\n');
                    e.stat.write_text(&mut chunk);
                    if let Some(c) = &e.checksum {
                        chunk.put_slice(b" [ ");
                        chunk.put_slice(&c.alg);
                        chunk.put_u8(b':');
                        chunk.put_slice(&c.value);
                        chunk.put_slice(b" ]");
                    }
                    chunk.put_u8(b'\n');
                }
            }
        }
        if let Some(last) = chunk.last_mut() {
            *last = 0;
        }
        out.push(Response::Ok(chunk.freeze()));
        out
    }
}

/// Sends `chunk` as a `kXR_oksofar` first if `need` more bytes would take
/// it past `cap` (a chunk is never left empty).
fn fit(chunk: &mut BytesMut, need: usize, cap: usize, out: &mut Vec<Response>) {
    if !chunk.is_empty() && chunk.len() + need > cap {
        out.push(Response::OkSoFar(chunk.split().freeze()));
    }
}

fn nonempty(text: &Bytes, name: &[u8]) -> Result<Bytes, DecodeError> {
    if name.is_empty() {
        return Err(DecodeError::malformed("dirlist", "empty name"));
    }
    Ok(text.slice_ref(name))
}

/// A dstat entry from its name and stat line (with an optional
/// ` [ alg:value ]` suffix).
fn stat_entry(name: Bytes, line: Bytes) -> Result<DirStatEntry, DecodeError> {
    const WHAT: &str = "dcksm checksum";
    // ` [ ` must end before the closing ` ]` starts (`"x [ ]"` overlaps them)
    let split = line
        .ends_with(b" ]")
        .then(|| line[..line.len() - 2].windows(3).rposition(|w| w == b" [ "))
        .flatten();
    let (stat, checksum) = match split {
        None => (line, None),
        Some(at) => {
            let inner = line.slice(at + 3..line.len() - 2);
            let (alg, value) = split_checksum(&inner, b':', WHAT, "expected ` [ <alg>:<value> ]`")?;
            (line.slice(..at), Some(DirlistChecksum { alg, value }))
        }
    };
    Ok(DirStatEntry {
        name,
        stat: StatInfo::decode(stat)?,
        checksum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::StreamId;
    use crate::response::stat::tests::arb_stat;
    use crate::response::tests::{decode_one, encode_response};
    use proptest::prelude::*;

    fn bodies(list: &DirList) -> Vec<Bytes> {
        list.responses()
            .iter()
            .map(|r| match decode_one(encode_response(r, StreamId([0, 1]))) {
                Response::Ok(b) | Response::OkSoFar(b) => b,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn names(n: usize, len: usize) -> Vec<Bytes> {
        (0..n).map(|i| Bytes::from(format!("{i:0len$}"))).collect()
    }

    #[test]
    fn overlapping_checksum_brackets_are_not_a_checksum() {
        // found by the dirlist_stat fuzz target: " [ " and " ]" overlap
        let body = Bytes::from_static(b".\n0 0 0 0\nf\n1 2 0 4 [ ]\0");
        assert!(DirList::decode(body).is_err());
    }

    #[test]
    fn plain_chunks_like_the_reference() {
        assert_eq!(bodies(&DirList::Plain(vec![])), vec![Bytes::new()]);
        let one = bodies(&DirList::Plain(names(2, 3)));
        assert_eq!(one, vec![Bytes::from_static(b"000\n001\0")]);
        // 100-byte names: 40 fit in 4096 (40 × 101 = 4040), the 41st does not
        let list = DirList::Plain(names(100, 100));
        let chunks = bodies(&list);
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks[0].len(), 4040);
        assert!(chunks[0].ends_with(b"\n") && chunks[1].ends_with(b"\n"));
        assert_eq!(chunks[2].last(), Some(&0));
        assert_eq!(DirList::decode_chunks(&chunks).unwrap(), list);
        let responses = list.responses();
        assert!(matches!(responses[0], Response::OkSoFar(_)));
        assert!(matches!(responses[2], Response::Ok(_)));
    }

    #[test]
    fn dstat_sentinel_and_checksums() {
        let empty = DirList::Stat(vec![]);
        assert_eq!(bodies(&empty), vec![Bytes::from_static(b".\n0 0 0 0\0")]);
        assert_eq!(
            DirList::decode(Bytes::from_static(b".\n0 0 0 0\0")).unwrap(),
            empty
        );
        let body = Bytes::from_static(
            b".\n0 0 0 0\nf1\n12 100 48 5 6 7 0644 u g [ adler32:091e01de ]\nd\n13 4096 50 5 6 7 0755 u g [ adler32:none ]\0",
        );
        let DirList::Stat(e) = DirList::decode(body.clone()).unwrap() else {
            panic!()
        };
        assert_eq!(e.len(), 2);
        assert_eq!(&e[0].name[..], b"f1");
        assert_eq!(e[0].stat.size, 100);
        assert_eq!(&e[0].checksum.as_ref().unwrap().value[..], b"091e01de");
        assert!(e[1].stat.is_dir());
        assert_eq!(&e[1].checksum.as_ref().unwrap().value[..], b"none");
        assert_eq!(bodies(&DirList::Stat(e)), vec![body]);
    }

    #[test]
    fn dstat_chunk_boundaries() {
        let stat = StatInfo::decode(Bytes::from_static(b"1 2 16 3")).unwrap();
        let list = DirList::Stat(
            names(200, 40)
                .into_iter()
                .map(|name| DirStatEntry {
                    name,
                    stat: stat.clone(),
                    checksum: None,
                })
                .collect(),
        );
        let chunks = bodies(&list);
        assert!(chunks.len() > 1);
        assert!(chunks[0].starts_with(SENTINEL));
        for c in &chunks[..chunks.len() - 1] {
            assert!(c.len() <= STAT_CHUNK - STAT_RESERVE && c.ends_with(b"\n"));
        }
        // each entry is 41 + 9 bytes; a chunk ends where 41 + 160 more would not fit
        assert_eq!(chunks[0].len(), 10 + 50 * 160);
        assert!(!chunks[1].starts_with(b"."));
        assert_eq!(DirList::decode_chunks(&chunks).unwrap(), list);
    }

    #[test]
    fn garbage() {
        for bad in [
            &b"a\n\nb\0"[..],
            b"a\0b\0",
            b".\n0 0 0 0\nname\0",
            b".\n0 0 0 0\nname\n1 2 3\0",
            b".\n0 0 0 0\nname\n1 2 3 4 [ adler32 ]\0",
            b".\n0 0 0 0\nname\n1 2 3 4 [ :x ]\0",
        ] {
            assert!(
                matches!(
                    DirList::decode(Bytes::from_static(bad)),
                    Err(DecodeError::Malformed { .. })
                ),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // the last entry vanished: the final chunk is empty, no NUL
        assert_eq!(
            DirList::decode(Bytes::from_static(b"a\nb\n")).unwrap(),
            DirList::Plain(vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")])
        );
    }

    fn arb_name() -> impl Strategy<Value = Bytes> {
        proptest::collection::vec(
            any::<u8>().prop_filter("name byte", |b| *b != b'\n' && *b != 0),
            1..60,
        )
        .prop_filter("not a dot entry", |n| n != b"." && n != b"..")
        .prop_map(Bytes::from)
    }

    fn arb_token() -> impl Strategy<Value = Bytes> {
        proptest::collection::vec(
            any::<u8>().prop_filter("token byte", |b| !b" \n\0:[]".contains(b)),
            1..20,
        )
        .prop_map(Bytes::from)
    }

    fn arb_list() -> impl Strategy<Value = DirList> {
        let stat = arb_stat().prop_filter("no brackets in owner/group", |s| {
            s.extended
                .as_ref()
                .is_none_or(|x| !x.owner.contains(&b'[') && !x.group.contains(&b']'))
        });
        let entry = (
            arb_name(),
            stat,
            proptest::option::of((arb_token(), arb_token())),
        );
        prop_oneof![
            proptest::collection::vec(arb_name(), 0..150).prop_map(DirList::Plain),
            (proptest::collection::vec(entry, 0..120), any::<bool>()).prop_map(|(v, cksm)| {
                DirList::Stat(
                    v.into_iter()
                        .map(|(name, stat, c)| DirStatEntry {
                            name,
                            stat,
                            checksum: c
                                .filter(|_| cksm)
                                .map(|(alg, value)| DirlistChecksum { alg, value }),
                        })
                        .collect(),
                )
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn roundtrip(list in arb_list()) {
            let chunks = bodies(&list);
            let (last, partial) = chunks.split_last().unwrap();
            for c in partial {
                prop_assert_eq!(c.last(), Some(&b'\n'));
            }
            prop_assert!(last.is_empty() || last.last() == Some(&0));
            let back = DirList::decode_chunks(&chunks).unwrap();
            prop_assert_eq!(&back, &list);
            prop_assert_eq!(bodies(&back), chunks);
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..120), dstat in any::<bool>()) {
            let mut body = if dstat { SENTINEL.to_vec() } else { Vec::new() };
            body.extend(b);
            let _ = DirList::decode(Bytes::from(body));
        }
    }
}
