//! The redirect stream (`r`): what a redirector sent its clients where.
//!
//! Layout (`XrdXrootdMonBurr` and `XrdXrootdMonRedir` in
//! `XrdXrootdMonData.hh`; filled by `XrdXrootdMonitor::Redirect` and
//! `Flush`): the 8-byte [`MonHeader`] (code `r`), the server id (`i64`,
//! top byte `0xf0`), then 8-byte slots. A time mark is one slot: type
//! byte `0x00`, the window's length in seconds in the low 24 bits of the
//! first word, the Unix time in the second. A redirect is one slot (type
//! `0x80 | op`, or `0x90 | op` when handled locally; the count of text
//! slots that follow; the target port; the user's dictionary id) and then
//! that many slots of `HOST:PATH` text padded with NULs. PROTOCOL.md §17.6.

use crate::error::DecodeError;

use super::fstat::expect_code;
use super::header::{code, patch_plen, until_nul, Cursor, MonHeader};

/// Redirect operations: the low 4 bits of a redirect's type
/// (`XROOTD_MON_CHMOD` ... `XROOTD_MON_TRUNC`).
pub mod op {
    /// `kXR_chmod`.
    pub const CHMOD: u8 = 0x01;
    /// `kXR_locate`.
    pub const LOCATE: u8 = 0x02;
    /// `kXR_dirlist`.
    pub const OPENDIR: u8 = 0x03;
    /// An open that creates.
    pub const OPENC: u8 = 0x04;
    /// An open for reading.
    pub const OPENR: u8 = 0x05;
    /// An open for writing.
    pub const OPENW: u8 = 0x06;
    /// `kXR_mkdir`.
    pub const MKDIR: u8 = 0x07;
    /// `kXR_mv`.
    pub const MV: u8 = 0x08;
    /// `kXR_prepare`.
    pub const PREP: u8 = 0x09;
    /// `kXR_query`.
    pub const QUERY: u8 = 0x0a;
    /// `kXR_rm`.
    pub const RM: u8 = 0x0b;
    /// `kXR_rmdir`.
    pub const RMDIR: u8 = 0x0c;
    /// `kXR_stat`.
    pub const STAT: u8 = 0x0d;
    /// `kXR_truncate`.
    pub const TRUNC: u8 = 0x0e;
}

/// The most text slots one redirect may have: a 256-byte host, `:`, a
/// 1,024-byte path and a NUL, in 8-byte slots.
pub const MAX_REDIRECT_SLOTS: usize = (256usize + 1 + 1024 + 1).div_ceil(8);

/// One entry of the redirect stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirEntry<'a> {
    /// A time mark.
    Time {
        /// The window's length, seconds (24 bits).
        window: u32,
        /// Unix seconds.
        time: u32,
    },
    /// A redirect.
    Redirect {
        /// The operation ([`op`]).
        op: u8,
        /// Handled locally (`0x90`) rather than redirected (`0x80`).
        local: bool,
        /// The port the client was sent to.
        port: u16,
        /// The user's dictionary id.
        user: u32,
        /// The host the client was sent to (empty when only a path).
        host: &'a [u8],
        /// The path.
        path: &'a [u8],
    },
}

/// A whole `r` packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirPacket<'a> {
    /// The header (code `r`).
    pub header: MonHeader,
    /// The server id (48 bits).
    pub sid: u64,
    /// The entries.
    pub entries: Vec<RedirEntry<'a>>,
}

impl<'a> RedirPacket<'a> {
    /// Decodes a whole `r` packet. Errors: a bad header or code; a body
    /// that is not whole 8-byte slots ([`DecodeError::Misaligned`]); a
    /// redirect whose text slots run past the end. Memory: one entry per
    /// slot at most.
    pub fn decode(packet: &'a [u8]) -> Result<RedirPacket<'a>, DecodeError> {
        let header = MonHeader::decode(packet)?;
        expect_code(header.code, code::REDIRECT, "r-stream packet code")?;
        let mut c = Cursor::new(&packet[MonHeader::LEN..], "r-stream packet");
        let sid = c.u64()? & 0x0000_ffff_ffff_ffff;
        if c.len() % 8 != 0 {
            return Err(DecodeError::Misaligned {
                what: "r-stream body",
                len: c.len() as u64,
                unit: 8,
            });
        }
        let mut entries = Vec::new();
        while !c.is_empty() {
            let w0 = c.u32()?;
            let w1 = c.u32()?;
            let t = (w0 >> 24) as u8;
            if t & 0x80 == 0 {
                entries.push(RedirEntry::Time {
                    window: w0 & 0x00ff_ffff,
                    time: w1,
                });
                continue;
            }
            let slots = ((w0 >> 16) & 0xff) as usize;
            let text = until_nul(c.bytes(slots * 8)?);
            let (host, path) = match text.iter().position(|&b| b == b':') {
                Some(i) => (&text[..i], &text[i + 1..]),
                None => (&text[..0], text),
            };
            entries.push(RedirEntry::Redirect {
                op: t & 0x0f,
                local: t & 0xf0 == 0x90,
                port: w0 as u16,
                user: w1,
                host,
                path,
            });
        }
        Ok(RedirPacket {
            header,
            sid,
            entries,
        })
    }

    /// Appends the packet (its `plen` computed). Errors: a host over 256
    /// bytes or a path over 1,024 ([`DecodeError::LengthTooLarge`]); over
    /// 65,535 bytes.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let start = out.len();
        self.header.encode(out);
        out.extend_from_slice(&((0xf0u64 << 56) | self.sid).to_be_bytes());
        for e in &self.entries {
            e.encode(out)?;
        }
        patch_plen(out, start)
    }
}

impl RedirEntry<'_> {
    /// Appends the entry: one slot, or a redirect's slot and its text.
    /// Errors: a host over 256 bytes or a path over 1,024.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        match self {
            RedirEntry::Time { window, time } => {
                out.extend_from_slice(&(window & 0x00ff_ffff).to_be_bytes());
                out.extend_from_slice(&time.to_be_bytes());
            }
            RedirEntry::Redirect {
                op,
                local,
                port,
                user,
                host,
                path,
            } => {
                for (what, len, max) in [
                    ("r-stream host", host.len(), 256),
                    ("r-stream path", path.len(), 1024),
                ] {
                    if len > max {
                        return Err(DecodeError::LengthTooLarge {
                            what,
                            value: len as u64,
                            max: max as u64,
                        });
                    }
                }
                let n = host.len() + 1 + path.len() + 1;
                let slots = n.div_ceil(8);
                let t = if *local { 0x90 } else { 0x80 } | (op & 0x0f);
                out.extend_from_slice(&[t, slots as u8]);
                out.extend_from_slice(&port.to_be_bytes());
                out.extend_from_slice(&user.to_be_bytes());
                out.extend_from_slice(host);
                out.push(b':');
                out.extend_from_slice(path);
                out.resize(out.len() + slots * 8 - (n - 1), 0);
            }
        }
        Ok(())
    }
}
