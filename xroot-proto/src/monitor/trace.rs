//! The trace stream (`t`): one 16-byte entry per event of a user's
//! session, between window marks.
//!
//! Layout (`XrdXrootdMonBuff` and `XrdXrootdMonTrace` in
//! `XrdXrootdMonData.hh`; filled by `XrdXrootdMonitor.cc` and the inline
//! `Add_*` of `XrdXrootdMonitor.hh`): the 8-byte [`MonHeader`] (code `t`),
//! then entries of 16 bytes: `arg0` (8 bytes), `arg1` (4), `arg2` (4),
//! big-endian. The first byte of `arg0` says what the entry is: below
//! `0x80` it is the top byte of a read's or write's offset; otherwise one
//! of the [`kind`] codes. A packet starts and ends with a window mark.
//! PROTOCOL.md §17.4.

use crate::error::DecodeError;

use super::fstat::expect_code;
use super::header::{code, patch_plen, until_nul, Cursor, MonHeader};

/// Entry codes: the first byte of `arg0` (`XROOTD_MON_*` in
/// `XrdXrootdMonData.hh`).
pub mod kind {
    /// Application id text.
    pub const APPID: u8 = 0xa0;
    /// A file closed.
    pub const CLOSE: u8 = 0xc0;
    /// The user disconnected.
    pub const DISC: u8 = 0xd0;
    /// A file opened.
    pub const OPEN: u8 = 0x80;
    /// A vector read (elements not listed).
    pub const READV: u8 = 0x90;
    /// A vector read whose elements follow as read entries.
    pub const READU: u8 = 0x91;
    /// A window mark.
    pub const WINDOW: u8 = 0xe0;
}

/// Bytes of one trace entry.
pub const ENTRY_LEN: usize = 16;

/// One trace entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceEntry {
    /// A time window: the end of the previous one and the start of this
    /// one, Unix seconds; `sid` is the server id's low 48 bits.
    Window {
        /// The server id.
        sid: u64,
        /// The previous window's end.
        end: u32,
        /// This window's start.
        start: u32,
    },
    /// A `kXR_read` or `kXR_pgread`: its offset and the length it asked.
    Read {
        /// The file's dictionary id.
        file: u32,
        /// Offset, bytes (below 2^63).
        offset: u64,
        /// Length asked, bytes.
        len: u32,
    },
    /// A write: offset and length (sent as the negated length).
    Write {
        /// The file's dictionary id.
        file: u32,
        /// Offset, bytes (below 2^63).
        offset: u64,
        /// Length, bytes.
        len: u32,
    },
    /// A vector read on one file: its sequence number (per session,
    /// wrapping), its element count and total bytes.
    Readv {
        /// The file's dictionary id.
        file: u32,
        /// [`kind::READU`] when its elements follow as [`TraceEntry::Read`].
        unwound: bool,
        /// The session's vector-read sequence number.
        seq: u8,
        /// Elements.
        count: u16,
        /// Bytes.
        len: u32,
    },
    /// A file opened, with its size (56 bits kept).
    Open {
        /// The file's dictionary id.
        file: u32,
        /// The file's size, bytes, below 2^56.
        size: u64,
    },
    /// A file closed: bytes read (`read + readv`) and written, each sent
    /// as a 32-bit value and a right shift.
    Close {
        /// The file's dictionary id.
        file: u32,
        /// Bytes read = `read_val << read_shift`.
        read_shift: u8,
        /// See `read_shift`.
        read_val: u32,
        /// Bytes written = `write_val << write_shift`.
        write_shift: u8,
        /// See `write_shift`.
        write_val: u32,
    },
    /// The user disconnected after `secs` seconds.
    Disc {
        /// The user's dictionary id.
        user: u32,
        /// Flags: `0x01` forced, `0x02` a bound path.
        flags: u8,
        /// Seconds connected.
        secs: u32,
    },
    /// Application id text, up to 12 bytes.
    AppId {
        /// The text.
        text: [u8; 12],
    },
    /// An entry of a code this crate does not know, kept whole.
    Other {
        /// The entry's bytes.
        bytes: [u8; 16],
    },
}

/// A 64-bit byte count as the close entry sends it: shifted right until
/// it fits 31 bits (`XrdXrootdMonitor::do_Shift`); returns (shift, value).
pub fn shift_total(total: u64) -> (u8, u32) {
    let mut t = total & 0x7fff_ffff_ffff_ffff;
    let mut shift = 0u8;
    while t & 0x7fff_ffff_0000_0000 != 0 {
        t >>= 1;
        shift += 1;
    }
    (shift, t as u32)
}

impl TraceEntry {
    /// Decodes one 16-byte entry.
    pub fn decode(bytes: &[u8; ENTRY_LEN]) -> TraceEntry {
        let a0 = u64::from_be_bytes(bytes[0..8].try_into().unwrap_or_default());
        let a1 = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        let a2 = u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
        match bytes[0] {
            b if b < 0x80 => {
                let len = a1 as i32;
                if len < 0 {
                    TraceEntry::Write {
                        file: a2,
                        offset: a0,
                        len: len.unsigned_abs(),
                    }
                } else {
                    TraceEntry::Read {
                        file: a2,
                        offset: a0,
                        len: a1,
                    }
                }
            }
            kind::WINDOW => TraceEntry::Window {
                sid: a0 & 0x0000_ffff_ffff_ffff,
                end: a1,
                start: a2,
            },
            kind::OPEN => TraceEntry::Open {
                file: a2,
                size: a0 & 0x00ff_ffff_ffff_ffff,
            },
            kind::CLOSE => TraceEntry::Close {
                file: a2,
                read_shift: bytes[1],
                read_val: u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
                write_shift: bytes[2],
                write_val: a1,
            },
            kind::DISC => TraceEntry::Disc {
                user: a2,
                flags: bytes[1],
                secs: a1,
            },
            k @ (kind::READV | kind::READU) => TraceEntry::Readv {
                file: a2,
                unwound: k == kind::READU,
                seq: bytes[1],
                count: u16::from_be_bytes([bytes[2], bytes[3]]),
                len: a1,
            },
            kind::APPID => {
                let mut text = [0u8; 12];
                text.copy_from_slice(&bytes[4..16]);
                TraceEntry::AppId { text }
            }
            _ => TraceEntry::Other { bytes: *bytes },
        }
    }

    /// The entry's 16 bytes.
    pub fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut b = [0u8; ENTRY_LEN];
        let mut put = |a0: u64, a1: u32, a2: u32| {
            b[0..8].copy_from_slice(&a0.to_be_bytes());
            b[8..12].copy_from_slice(&a1.to_be_bytes());
            b[12..16].copy_from_slice(&a2.to_be_bytes());
        };
        match *self {
            TraceEntry::Window { sid, end, start } => put(sid & 0x0000_ffff_ffff_ffff, end, start),
            TraceEntry::Read { file, offset, len } => {
                put(offset & 0x7fff_ffff_ffff_ffff, len, file)
            }
            TraceEntry::Write { file, offset, len } => put(
                offset & 0x7fff_ffff_ffff_ffff,
                (len as i32).wrapping_neg() as u32,
                file,
            ),
            TraceEntry::Open { file, size } => put(size & 0x00ff_ffff_ffff_ffff, 0, file),
            TraceEntry::Close {
                file,
                read_shift,
                read_val,
                write_shift,
                write_val,
            } => {
                put(u64::from(read_val), write_val, file);
                b[1] = read_shift;
                b[2] = write_shift;
            }
            TraceEntry::Disc { user, flags, secs } => {
                put(0, secs, user);
                b[1] = flags;
            }
            TraceEntry::Readv {
                file,
                unwound: _,
                seq,
                count,
                len,
            } => {
                put(0, len, file);
                b[1] = seq;
                b[2..4].copy_from_slice(&count.to_be_bytes());
            }
            TraceEntry::AppId { text } => b[4..16].copy_from_slice(&text),
            TraceEntry::Other { bytes } => b = bytes,
        }
        b[0] = match *self {
            TraceEntry::Window { .. } => kind::WINDOW,
            TraceEntry::Open { .. } => kind::OPEN,
            TraceEntry::Close { .. } => kind::CLOSE,
            TraceEntry::Disc { .. } => kind::DISC,
            TraceEntry::Readv { unwound: false, .. } => kind::READV,
            TraceEntry::Readv { unwound: true, .. } => kind::READU,
            TraceEntry::AppId { .. } => kind::APPID,
            _ => b[0],
        };
        b
    }

    /// The text of an [`TraceEntry::AppId`] up to its first NUL.
    pub fn app_id(&self) -> Option<&[u8]> {
        match self {
            TraceEntry::AppId { text } => Some(until_nul(text)),
            _ => None,
        }
    }
}

/// A whole `t` packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracePacket {
    /// The header (code `t`).
    pub header: MonHeader,
    /// The entries.
    pub entries: Vec<TraceEntry>,
}

impl TracePacket {
    /// Decodes a whole `t` packet. Errors: a bad header or code; a body
    /// that is not whole 16-byte entries ([`DecodeError::Misaligned`]).
    /// Memory: one entry per 16 bytes.
    pub fn decode(packet: &[u8]) -> Result<TracePacket, DecodeError> {
        let header = MonHeader::decode(packet)?;
        expect_code(header.code, code::TRACE, "t-stream packet code")?;
        let body = &packet[MonHeader::LEN..];
        if body.len() % ENTRY_LEN != 0 {
            return Err(DecodeError::Misaligned {
                what: "t-stream body",
                len: body.len() as u64,
                unit: ENTRY_LEN as u64,
            });
        }
        let mut c = Cursor::new(body, "t-stream entry");
        let mut entries = Vec::with_capacity(body.len() / ENTRY_LEN);
        while !c.is_empty() {
            entries.push(TraceEntry::decode(&c.array()?));
        }
        Ok(TracePacket { header, entries })
    }

    /// Appends the packet (its `plen` computed). Errors: over 65,535 bytes.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let start = out.len();
        self.header.encode(out);
        for e in &self.entries {
            out.extend_from_slice(&e.encode());
        }
        patch_plen(out, start)
    }
}
