//! The file stream (`f`): what happened to each file, in records of
//! their own length after a time record.
//!
//! Layout (`XrdXrootdMonFileHdr`, `XrdXrootdMonFileTOD`,
//! `XrdXrootdMonFileOPN`, `XrdXrootdMonFileCLS`, `XrdXrootdMonFileXFR`,
//! `XrdXrootdMonFileDSC` in `XrdXrootdMonData.hh`; filled by
//! `XrdXrootdMonFile.cc`): the 8-byte [`MonHeader`] (code `f`), one
//! [`FileTod`] (24 bytes), then records, each starting with an 8-byte
//! record header: type (`0` close, `1` open, `2` time, `3` transfer, `4`
//! disconnect), flags, its own size (big-endian `u16`, header included)
//! and the file's (or, for a disconnect, the user's) dictionary id.
//! PROTOCOL.md §17.3.

use crate::error::DecodeError;

use super::header::{code, patch_plen, until_nul, Cursor, MonHeader};

/// Record types (`XrdXrootdMonFileHdr::recTval`).
pub mod rec {
    /// A file closed.
    pub const CLOSE: u8 = 0;
    /// A file opened.
    pub const OPEN: u8 = 1;
    /// The packet's time window.
    pub const TIME: u8 = 2;
    /// Bytes moved so far on a file still open.
    pub const XFR: u8 = 3;
    /// A user disconnected.
    pub const DISC: u8 = 4;
}

/// Record flags (`XrdXrootdMonFileHdr::recFval`).
pub mod flag {
    /// Close: the file was closed because its session ended.
    pub const FORCED: u8 = 0x01;
    /// Close: the [`FileOps`](super::FileOps) block follows the bytes.
    pub const HAS_OPS: u8 = 0x02;
    /// Close: the [`FileSsq`](super::FileSsq) block follows the ops.
    pub const HAS_SSQ: u8 = 0x04;
    /// Open: the user's dictionary id and the path follow.
    pub const HAS_LFN: u8 = 0x01;
    /// Open: opened for reading and writing.
    pub const HAS_RW: u8 = 0x02;
    /// Time: the server id is present (always, since 4.x).
    pub const HAS_SID: u8 = 0x01;
}

/// The time record that opens every `f` packet: 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileTod {
    /// Transfer records in the packet.
    pub xfr_records: u16,
    /// Records in the packet (not counting this one).
    pub total_records: u16,
    /// Unix seconds of the first record.
    pub t_begin: u32,
    /// Unix seconds when the packet was sent.
    pub t_end: u32,
    /// The server's id (48 bits).
    pub sid: u64,
}

/// Bytes moved on a file (`XrdXrootdMonStatXFR`): 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileXfr {
    /// Bytes read by `kXR_read` and `kXR_pgread` (a pgread counts the
    /// length it asked for; see PROTOCOL.md §17.3).
    pub read: u64,
    /// Bytes read by `kXR_readv`.
    pub readv: u64,
    /// Bytes written (a pgwrite counts its payload, crc32c included).
    pub write: u64,
}

/// Operation counts of a closed file (`XrdXrootdMonStatOPS`): 48 bytes.
/// Minimums of a kind with no operation are 0; the stock server leaves
/// `rd_min` at `0x7fffffff` and `rd_max` at 0 when only pgreads were done
/// (and so `wr_min`/`wr_max` for pgwrites): they are not measured there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileOps {
    /// Reads (`kXR_read` and `kXR_pgread`).
    pub read: u32,
    /// Vector reads.
    pub readv: u32,
    /// Writes (`kXR_write` and `kXR_pgwrite`).
    pub write: u32,
    /// Fewest elements of a vector read.
    pub rs_min: u16,
    /// Most elements of a vector read.
    pub rs_max: u16,
    /// Elements of all vector reads.
    pub rsegs: u64,
    /// Smallest read, bytes.
    pub rd_min: u32,
    /// Largest read, bytes.
    pub rd_max: u32,
    /// Smallest vector read, bytes.
    pub rv_min: u32,
    /// Largest vector read, bytes.
    pub rv_max: u32,
    /// Smallest write, bytes.
    pub wr_min: u32,
    /// Largest write, bytes.
    pub wr_max: u32,
}

/// Sums of squares of a closed file (`XrdXrootdMonStatSSQ`, IEEE 754
/// doubles): 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FileSsq {
    /// Sum of the squared read sizes.
    pub read: f64,
    /// Sum of the squared vector-read sizes.
    pub readv: f64,
    /// Sum of the squared vector-read element counts.
    pub rsegs: f64,
    /// Sum of the squared write sizes.
    pub write: f64,
}

/// A file-stream record.
#[derive(Debug, Clone, PartialEq)]
pub enum FileRecord<'a> {
    /// A file opened: 16 bytes, or 20 plus the path padded with NULs to a
    /// multiple of 4 (at least one NUL) with [`flag::HAS_LFN`].
    Open {
        /// The file's dictionary id.
        file: u32,
        /// The file's size when opened, bytes.
        size: u64,
        /// Opened for reading and writing.
        rw: bool,
        /// The user's dictionary id and the path, when sent.
        lfn: Option<(u32, &'a [u8])>,
    },
    /// A file closed: 32, 80 or 112 bytes.
    Close {
        /// The file's dictionary id.
        file: u32,
        /// Closed because the session ended.
        forced: bool,
        /// Bytes moved.
        xfr: FileXfr,
        /// Operation counts, when sent.
        ops: Option<FileOps>,
        /// Sums of squares, when sent.
        ssq: Option<FileSsq>,
    },
    /// Bytes moved so far on an open file: 32 bytes.
    Xfr {
        /// The file's dictionary id.
        file: u32,
        /// Bytes moved.
        xfr: FileXfr,
    },
    /// A user disconnected: 8 bytes.
    Disc {
        /// The user's dictionary id.
        user: u32,
    },
    /// A record of a type this crate does not know, kept whole.
    Other {
        /// Its type.
        rec_type: u8,
        /// Its bytes, header included.
        bytes: &'a [u8],
    },
}

/// A whole `f` packet.
#[derive(Debug, Clone, PartialEq)]
pub struct FstatPacket<'a> {
    /// The header (code `f`).
    pub header: MonHeader,
    /// The time record.
    pub tod: FileTod,
    /// The records after it.
    pub records: Vec<FileRecord<'a>>,
}

const TOD_LEN: usize = 24;
const XFR_LEN: usize = 24;
const OPS_LEN: usize = 48;
const SSQ_LEN: usize = 32;

impl<'a> FstatPacket<'a> {
    /// Decodes a whole `f` packet. Errors: a bad header or code; a first
    /// record that is not a 24-byte time record; a record whose size is
    /// below 8 or below its type's fixed part, or that runs past the
    /// packet's end ([`DecodeError::Truncated`],
    /// [`DecodeError::InvalidValue`]). Memory: one entry per record, at
    /// most `plen / 8`.
    pub fn decode(packet: &'a [u8]) -> Result<FstatPacket<'a>, DecodeError> {
        let header = MonHeader::decode(packet)?;
        expect_code(header.code, code::FSTAT, "f-stream packet code")?;
        let mut c = Cursor::new(&packet[MonHeader::LEN..], "f-stream time record");
        let (rtype, _flags, size) = (c.u8()?, c.u8()?, c.u16()?);
        if rtype != rec::TIME || usize::from(size) != TOD_LEN {
            return Err(DecodeError::InvalidValue {
                what: "f-stream first record",
                expected: "a 24-byte time record",
                got: i64::from(rtype),
            });
        }
        let tod = FileTod {
            xfr_records: c.u16()?,
            total_records: c.u16()?,
            t_begin: c.u32()?,
            t_end: c.u32()?,
            sid: c.u64()?,
        };
        let mut records = Vec::new();
        let mut rest = c.rest();
        while !rest.is_empty() {
            let mut h = Cursor::new(rest, "f-stream record header");
            let (rtype, flags, size) = (h.u8()?, h.u8()?, usize::from(h.u16()?));
            if size < 8 {
                return Err(DecodeError::InvalidValue {
                    what: "f-stream record size",
                    expected: "at least 8",
                    got: size as i64,
                });
            }
            DecodeError::check_len("f-stream record", size, rest.len())?;
            let (bytes, tail) = rest.split_at(size);
            records.push(FileRecord::decode_one(rtype, flags, bytes)?);
            rest = tail;
        }
        Ok(FstatPacket {
            header,
            tod,
            records,
        })
    }

    /// Appends the packet: the header (its `plen` computed), the time
    /// record as given, the records. Errors: a path too long for its
    /// record or a packet over 65,535 bytes
    /// ([`DecodeError::LengthTooLarge`]).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let start = out.len();
        self.header.encode(out);
        self.tod.encode(out);
        for r in &self.records {
            r.encode(out)?;
        }
        patch_plen(out, start)
    }
}

impl FileTod {
    /// Appends the 24-byte time record.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[rec::TIME, flag::HAS_SID]);
        out.extend_from_slice(&(TOD_LEN as u16).to_be_bytes());
        out.extend_from_slice(&self.xfr_records.to_be_bytes());
        out.extend_from_slice(&self.total_records.to_be_bytes());
        out.extend_from_slice(&self.t_begin.to_be_bytes());
        out.extend_from_slice(&self.t_end.to_be_bytes());
        out.extend_from_slice(&self.sid.to_be_bytes());
    }

    /// Bytes of the record.
    pub const LEN: usize = TOD_LEN;
}

impl FileXfr {
    fn decode(c: &mut Cursor<'_>) -> Result<FileXfr, DecodeError> {
        Ok(FileXfr {
            read: c.u64()?,
            readv: c.u64()?,
            write: c.u64()?,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for v in [self.read, self.readv, self.write] {
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
}

impl FileOps {
    fn decode(c: &mut Cursor<'_>) -> Result<FileOps, DecodeError> {
        Ok(FileOps {
            read: c.u32()?,
            readv: c.u32()?,
            write: c.u32()?,
            rs_min: c.u16()?,
            rs_max: c.u16()?,
            rsegs: c.u64()?,
            rd_min: c.u32()?,
            rd_max: c.u32()?,
            rv_min: c.u32()?,
            rv_max: c.u32()?,
            wr_min: c.u32()?,
            wr_max: c.u32()?,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for v in [self.read, self.readv, self.write] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out.extend_from_slice(&self.rs_min.to_be_bytes());
        out.extend_from_slice(&self.rs_max.to_be_bytes());
        out.extend_from_slice(&self.rsegs.to_be_bytes());
        for v in [
            self.rd_min,
            self.rd_max,
            self.rv_min,
            self.rv_max,
            self.wr_min,
            self.wr_max,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
}

impl FileSsq {
    fn decode(c: &mut Cursor<'_>) -> Result<FileSsq, DecodeError> {
        Ok(FileSsq {
            read: f64::from_bits(c.u64()?),
            readv: f64::from_bits(c.u64()?),
            rsegs: f64::from_bits(c.u64()?),
            write: f64::from_bits(c.u64()?),
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for v in [self.read, self.readv, self.rsegs, self.write] {
            out.extend_from_slice(&v.to_bits().to_be_bytes());
        }
    }
}

/// The record size of an open record for a path of `path_len` bytes with
/// the path sent: `16 + 4 + path_len` rounded as the stock server rounds
/// (`(n + 8) & !3`: 5 to 8 NULs follow the path). Source:
/// `XrdXrootdMonFile::Open`.
pub fn open_record_len(path_len: usize) -> usize {
    (16 + 4 + path_len + 8) & !3
}

impl<'a> FileRecord<'a> {
    fn decode_one(rtype: u8, flags: u8, bytes: &'a [u8]) -> Result<FileRecord<'a>, DecodeError> {
        let mut c = Cursor::new(&bytes[4..], "f-stream record");
        let id = c.u32()?;
        Ok(match rtype {
            rec::OPEN => {
                let size = c.u64()?;
                let lfn = if flags & flag::HAS_LFN != 0 {
                    let user = c.u32()?;
                    Some((user, until_nul(c.rest())))
                } else {
                    None
                };
                FileRecord::Open {
                    file: id,
                    size,
                    rw: flags & flag::HAS_RW != 0,
                    lfn,
                }
            }
            rec::CLOSE => {
                let xfr = FileXfr::decode(&mut c)?;
                let ops = if flags & (flag::HAS_OPS | flag::HAS_SSQ) != 0 {
                    Some(FileOps::decode(&mut c)?)
                } else {
                    None
                };
                let ssq = if flags & flag::HAS_SSQ != 0 {
                    Some(FileSsq::decode(&mut c)?)
                } else {
                    None
                };
                FileRecord::Close {
                    file: id,
                    forced: flags & flag::FORCED != 0,
                    xfr,
                    ops,
                    ssq,
                }
            }
            rec::XFR => FileRecord::Xfr {
                file: id,
                xfr: FileXfr::decode(&mut c)?,
            },
            rec::DISC => FileRecord::Disc { user: id },
            _ => FileRecord::Other {
                rec_type: rtype,
                bytes,
            },
        })
    }

    /// The record's size on the wire, bytes.
    pub fn wire_len(&self) -> usize {
        match self {
            FileRecord::Open { lfn: None, .. } => 16,
            FileRecord::Open {
                lfn: Some((_, path)),
                ..
            } => open_record_len(path.len()),
            FileRecord::Close { ops, ssq, .. } => {
                8 + XFR_LEN
                    + if ops.is_some() || ssq.is_some() {
                        OPS_LEN
                    } else {
                        0
                    }
                    + if ssq.is_some() { SSQ_LEN } else { 0 }
            }
            FileRecord::Xfr { .. } => 8 + XFR_LEN,
            FileRecord::Disc { .. } => 8,
            FileRecord::Other { bytes, .. } => bytes.len(),
        }
    }

    /// Appends the record. Errors: a record over 32,767 bytes (a path
    /// too long: [`DecodeError::LengthTooLarge`]).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let len = self.wire_len();
        if len > i16::MAX as usize {
            return Err(DecodeError::LengthTooLarge {
                what: "f-stream record",
                value: len as u64,
                max: i16::MAX as u64,
            });
        }
        let head = |out: &mut Vec<u8>, t: u8, f: u8, id: u32| {
            out.extend_from_slice(&[t, f]);
            out.extend_from_slice(&(len as u16).to_be_bytes());
            out.extend_from_slice(&id.to_be_bytes());
        };
        match self {
            FileRecord::Open {
                file,
                size,
                rw,
                lfn,
            } => {
                let mut f = if *rw { flag::HAS_RW } else { 0 };
                if lfn.is_some() {
                    f |= flag::HAS_LFN;
                }
                head(out, rec::OPEN, f, *file);
                out.extend_from_slice(&size.to_be_bytes());
                if let Some((user, path)) = lfn {
                    out.extend_from_slice(&user.to_be_bytes());
                    out.extend_from_slice(path);
                    out.resize(out.len() + (len - 20 - path.len()), 0);
                }
            }
            FileRecord::Close {
                file,
                forced,
                xfr,
                ops,
                ssq,
            } => {
                let mut f = if *forced { flag::FORCED } else { 0 };
                if ops.is_some() || ssq.is_some() {
                    f |= flag::HAS_OPS;
                }
                if ssq.is_some() {
                    f |= flag::HAS_SSQ;
                }
                head(out, rec::CLOSE, f, *file);
                xfr.encode(out);
                if ops.is_some() || ssq.is_some() {
                    ops.unwrap_or_default().encode(out);
                }
                if let Some(s) = ssq {
                    s.encode(out);
                }
            }
            FileRecord::Xfr { file, xfr } => {
                head(out, rec::XFR, 0, *file);
                xfr.encode(out);
            }
            FileRecord::Disc { user } => head(out, rec::DISC, 0, *user),
            FileRecord::Other { bytes, .. } => {
                if bytes.len() < 8 {
                    return Err(DecodeError::truncated("f-stream record", 8, bytes.len()));
                }
                out.extend_from_slice(bytes);
                let at = out.len() - bytes.len() + 2;
                out[at..at + 2].copy_from_slice(&(len as u16).to_be_bytes());
            }
        }
        Ok(())
    }
}

/// `Ok` when `got` is `want`, else [`DecodeError::InvalidValue`].
pub(crate) fn expect_code(got: u8, want: u8, what: &'static str) -> Result<(), DecodeError> {
    if got != want {
        return Err(DecodeError::InvalidValue {
            what,
            expected: "the stream's code",
            got: i64::from(got),
        });
    }
    Ok(())
}
