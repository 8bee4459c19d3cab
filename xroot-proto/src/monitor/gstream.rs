//! The g-stream (`g`): records of plug-ins (the cache's file closes, TCP
//! connection statistics, third-party copies), as text (JSON), one per
//! line.
//!
//! Layout (`XrdXrootdMonGS` in `XrdXrootdMonData.hh`; filled by
//! `XrdXrootdGSReal.cc`): the 8-byte [`MonHeader`] (code `g`), the Unix
//! seconds of the first and the last record (`i32` each), the server id
//! (`i64`: its low 48 bits, the provider's code in the top byte: `C` for
//! the cache's monitoring, [`provider`]), then the records, each ended by
//! `\n` except the packet's last byte, a NUL. PROTOCOL.md §17.5.

use crate::error::DecodeError;

use super::fstat::expect_code;
use super::header::{code, patch_plen, Cursor, MonHeader};

/// Provider codes: the top byte of the g-stream server id
/// (`XROOTD_MON_GS*` in `XrdXrootdMonData.hh`).
pub mod provider {
    /// `M`: the cache's context management.
    pub const CACHE_CONTEXT: u8 = b'M';
    /// `C`: the cache's (`pfc`) monitoring: a `file_close` per file.
    pub const CACHE: u8 = b'C';
    /// `T`: TCP connection statistics.
    pub const TCP: u8 = b'T';
    /// `P`: third-party copies.
    pub const TPC: u8 = b'P';
}

/// Bytes of the g-stream header, the 8-byte packet header included.
pub const GSTREAM_HEADER_LEN: usize = 24;

/// A whole `g` packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GStreamPacket<'a> {
    /// The header (code `g`).
    pub header: MonHeader,
    /// Unix seconds of the first record.
    pub t_begin: u32,
    /// Unix seconds of the last record.
    pub t_end: u32,
    /// The provider's code ([`provider`]).
    pub provider: u8,
    /// The server id (48 bits).
    pub sid: u64,
    /// The records, without their line ends.
    pub records: Vec<&'a [u8]>,
}

impl<'a> GStreamPacket<'a> {
    /// Decodes a whole `g` packet. Errors: a bad header or code, fewer
    /// than 24 bytes. Memory: one slice per record.
    pub fn decode(packet: &'a [u8]) -> Result<GStreamPacket<'a>, DecodeError> {
        let header = MonHeader::decode(packet)?;
        expect_code(header.code, code::GSTREAM, "g-stream packet code")?;
        let mut c = Cursor::new(&packet[MonHeader::LEN..], "g-stream header");
        let t_begin = c.u32()?;
        let t_end = c.u32()?;
        let sid = c.u64()?;
        let mut body = c.rest();
        if let Some((&0, head)) = body.split_last() {
            body = head;
        }
        let records = if body.is_empty() {
            Vec::new()
        } else {
            body.split(|&b| b == b'\n').collect()
        };
        Ok(GStreamPacket {
            header,
            t_begin,
            t_end,
            provider: (sid >> 56) as u8,
            sid: sid & 0x0000_ffff_ffff_ffff,
            records,
        })
    }

    /// Appends the packet (its `plen` computed): records joined by `\n`,
    /// the last followed by a NUL. Errors: over 65,535 bytes.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let start = out.len();
        self.header.encode(out);
        out.extend_from_slice(&self.t_begin.to_be_bytes());
        out.extend_from_slice(&self.t_end.to_be_bytes());
        let sid = (u64::from(self.provider) << 56) | (self.sid & 0x0000_ffff_ffff_ffff);
        out.extend_from_slice(&sid.to_be_bytes());
        for (i, r) in self.records.iter().enumerate() {
            if i > 0 {
                out.push(b'\n');
            }
            out.extend_from_slice(r);
        }
        if !self.records.is_empty() {
            out.push(0);
        }
        patch_plen(out, start)
    }
}
