//! The 8-byte header every binary monitoring packet starts with, the codes
//! that name each packet kind, and the bounds-checked cursor the decoders
//! share.
//!
//! Source: `XrdXrootdMonData.hh` (`XrdXrootdMonHeader`, the
//! `XROOTD_MON_MAP*` codes); PROTOCOL.md §17.1.

use crate::error::DecodeError;

/// Packet codes: the first byte of every binary packet
/// (`XROOTD_MON_MAP*` in `XrdXrootdMonData.hh`).
pub mod code {
    /// `=`: the server's identification (a map whose info is the server).
    pub const IDENT: u8 = b'=';
    /// `d`: a path map: a user and the path a file was opened with.
    pub const PATH: u8 = b'd';
    /// `f`: the file stream (`fstat`).
    pub const FSTAT: u8 = b'f';
    /// `g`: a g-stream packet (cache, TCP and third-party-copy plug-ins).
    pub const GSTREAM: u8 = b'g';
    /// `i`: an info map (application information set by the client).
    pub const INFO: u8 = b'i';
    /// `p`: a purge map.
    pub const PURGE: u8 = b'p';
    /// `r`: the redirect stream.
    pub const REDIRECT: u8 = b'r';
    /// `t`: the trace (I/O) stream.
    pub const TRACE: u8 = b't';
    /// `T`: a token map.
    pub const TOKEN: u8 = b'T';
    /// `u`: a user login map.
    pub const USER: u8 = b'u';
    /// `U`: a user's experiment and activity codes.
    pub const USER_EA: u8 = b'U';
    /// `x`: a transfer map.
    pub const XFER: u8 = b'x';
}

/// The header of every binary monitoring packet: 8 bytes, big-endian
/// (`XrdXrootdMonHeader`).
///
/// | bytes | field | meaning |
/// |---|---|---|
/// | 0 | `code` | the packet kind ([`code`]) |
/// | 1 | `pseq` | sequence number, per destination, wrapping at 256 |
/// | 2..4 | `plen` | the whole packet's length in bytes, header included |
/// | 4..8 | `stod` | the server's start time, Unix seconds |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MonHeader {
    /// The packet kind ([`code`]).
    pub code: u8,
    /// The sequence number.
    pub pseq: u8,
    /// The packet's length in bytes, header included.
    pub plen: u16,
    /// The server's start time, Unix seconds.
    pub stod: u32,
}

impl MonHeader {
    /// Bytes of the header.
    pub const LEN: usize = 8;

    /// The header at the start of `packet`. Errors: fewer than 8 bytes
    /// ([`DecodeError::Truncated`]); a `plen` below 8 or other than the
    /// packet's length ([`DecodeError::InvalidValue`]).
    pub fn decode(packet: &[u8]) -> Result<MonHeader, DecodeError> {
        let mut c = Cursor::new(packet, "monitoring packet header");
        let h = MonHeader {
            code: c.u8()?,
            pseq: c.u8()?,
            plen: c.u16()?,
            stod: c.u32()?,
        };
        if usize::from(h.plen) != packet.len() {
            return Err(DecodeError::InvalidValue {
                what: "monitoring packet plen",
                expected: "the datagram's length",
                got: i64::from(h.plen),
            });
        }
        Ok(h)
    }

    /// Appends the 8 bytes of the header.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.code);
        out.push(self.pseq);
        out.extend_from_slice(&self.plen.to_be_bytes());
        out.extend_from_slice(&self.stod.to_be_bytes());
    }
}

/// Sets the `plen` of the packet that starts at `out[start]` to the bytes
/// from there to the end of `out`. Errors: more than 65,535 bytes
/// ([`DecodeError::LengthTooLarge`]).
pub(crate) fn patch_plen(out: &mut [u8], start: usize) -> Result<(), DecodeError> {
    let len = out.len() - start;
    let plen = u16::try_from(len).map_err(|_| DecodeError::LengthTooLarge {
        what: "monitoring packet",
        value: len as u64,
        max: u64::from(u16::MAX),
    })?;
    out[start + 2..start + 4].copy_from_slice(&plen.to_be_bytes());
    Ok(())
}

/// A bounds-checked cursor over a borrowed packet.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    what: &'static str,
}

macro_rules! cursor_int {
    ($($t:ident),*) => {$(
        pub(crate) fn $t(&mut self) -> Result<$t, DecodeError> {
            Ok($t::from_be_bytes(self.array()?))
        }
    )*};
}

impl<'a> Cursor<'a> {
    cursor_int!(u8, u16, u32, u64);

    pub(crate) fn new(buf: &'a [u8], what: &'static str) -> Cursor<'a> {
        Cursor { buf, what }
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        DecodeError::check_len(self.what, n, self.buf.len())?;
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.buf)
    }
}

/// `bytes` up to its first NUL (all of it without one).
pub(crate) fn until_nul(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(i) => &bytes[..i],
        None => bytes,
    }
}
