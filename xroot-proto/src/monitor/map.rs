//! Map packets: a dictionary id and the text it stands for: the server's
//! identification (`=`), a user's login (`u`), a path opened (`d`),
//! application information (`i`), and the other single-record kinds.
//!
//! Layout (`XrdXrootdMonMap` in `XrdXrootdMonData.hh`, filled by
//! `XrdXrootdMonitor::Map` and `XrdXrootdMonitor::Init` in
//! `XrdXrootdMonitor.cc`): the 8-byte [`MonHeader`], a 4-byte dictionary id,
//! then text with no terminating NUL (the packet's `plen` ends it):
//!
//! ```text
//! PROT/USER.PID:SID@HOST            the user line ("=" for the server)
//! \n INFO                            optional: a path, "&R=...&x=..." or the
//!                                    server's "&site=&port=&inst=&pgm=&ver="
//! ```
//!
//! PROTOCOL.md §17.2.

use crate::error::DecodeError;

use super::header::{patch_plen, Cursor, MonHeader};

/// The most text a map carries: 1,280 bytes (`char info[1024+256]`).
pub const MAX_MAP_INFO: usize = 1024 + 256;

/// A map packet (any code but `f`, `g`, `r` and `t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapPacket<'a> {
    /// The header; its `code` says what is mapped.
    pub header: MonHeader,
    /// The dictionary id the other streams name this by (0 for the
    /// server's identification), in host order.
    pub dictid: u32,
    /// The text: the user line, then `\n` and the mapped information.
    pub info: &'a [u8],
}

impl<'a> MapPacket<'a> {
    /// Decodes a whole map packet. Errors: a bad header; fewer than 12
    /// bytes; more than [`MAX_MAP_INFO`] bytes of text
    /// ([`DecodeError::LengthTooLarge`]).
    pub fn decode(packet: &'a [u8]) -> Result<MapPacket<'a>, DecodeError> {
        let header = MonHeader::decode(packet)?;
        let mut c = Cursor::new(&packet[MonHeader::LEN..], "monitoring map");
        let dictid = c.u32()?;
        let info = c.rest();
        if info.len() > MAX_MAP_INFO {
            return Err(DecodeError::LengthTooLarge {
                what: "monitoring map info",
                value: info.len() as u64,
                max: MAX_MAP_INFO as u64,
            });
        }
        Ok(MapPacket {
            header,
            dictid,
            info,
        })
    }

    /// Appends the packet; its `plen` is computed, the header's ignored.
    /// Errors: more than [`MAX_MAP_INFO`] bytes of text.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        encode_map(self.header, self.dictid, &[self.info], out)
    }

    /// The user line: the text before the first `\n`.
    pub fn user_line(&self) -> &'a [u8] {
        self.split().0
    }

    /// What follows the first `\n` (empty without one).
    pub fn detail(&self) -> &'a [u8] {
        self.split().1
    }

    fn split(&self) -> (&'a [u8], &'a [u8]) {
        match self.info.iter().position(|&b| b == b'\n') {
            Some(i) => (&self.info[..i], &self.info[i + 1..]),
            None => (self.info, &[]),
        }
    }

    /// The user line's parts, when it has the `PROT/USER.PID:SID@HOST`
    /// shape (`None` otherwise).
    pub fn user(&self) -> Option<UserLine<'a>> {
        UserLine::parse(self.user_line())
    }
}

/// Appends a map packet whose text is `parts` joined (no separator added):
/// the header with `plen` computed, the dictionary id, the text. Errors:
/// more than [`MAX_MAP_INFO`] bytes of text ([`DecodeError::LengthTooLarge`]).
pub fn encode_map(
    header: MonHeader,
    dictid: u32,
    parts: &[&[u8]],
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len > MAX_MAP_INFO {
        return Err(DecodeError::LengthTooLarge {
            what: "monitoring map info",
            value: len as u64,
            max: MAX_MAP_INFO as u64,
        });
    }
    let start = out.len();
    header.encode(out);
    out.extend_from_slice(&dictid.to_be_bytes());
    for p in parts {
        out.extend_from_slice(p);
    }
    patch_plen(out, start)
}

/// The user line of a map, `PROT/USER.PID:SID@HOST`: the protocol
/// (`xroot`, or `=` for the server itself), the login user name, the client
/// process id, the server's id (`SID`: the 48-bit fingerprint in decimal,
/// where the link's descriptor stood in its trace id), and the client's
/// host as the server names it (`XrdXrootdMonitor::User::Register`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserLine<'a> {
    /// The protocol: `xroot` for a client, `=` for the server.
    pub prot: &'a [u8],
    /// The login user name.
    pub user: &'a [u8],
    /// The process id the client sent at login.
    pub pid: &'a [u8],
    /// The server's id, in decimal.
    pub sid: &'a [u8],
    /// The client's host.
    pub host: &'a [u8],
}

impl<'a> UserLine<'a> {
    /// Splits a user line; `None` when a separator is missing. The user
    /// name may itself hold dots: the pid follows the last one before `:`.
    pub fn parse(line: &'a [u8]) -> Option<UserLine<'a>> {
        let slash = line.iter().position(|&b| b == b'/')?;
        let (prot, rest) = (&line[..slash], &line[slash + 1..]);
        let colon = rest.iter().position(|&b| b == b':')?;
        let (userpid, rest) = (&rest[..colon], &rest[colon + 1..]);
        let at = rest.iter().position(|&b| b == b'@')?;
        let (sid, host) = (&rest[..at], &rest[at + 1..]);
        let dot = userpid.iter().rposition(|&b| b == b'.')?;
        Some(UserLine {
            prot,
            user: &userpid[..dot],
            pid: &userpid[dot + 1..],
            sid,
            host,
        })
    }

    /// Appends `PROT/USER.PID:SID@HOST`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        for (part, sep) in [
            (self.prot, b'/'),
            (self.user, b'.'),
            (self.pid, b':'),
            (self.sid, b'@'),
        ] {
            out.extend_from_slice(part);
            out.push(sep);
        }
        out.extend_from_slice(self.host);
    }
}

/// The `&KEY=VALUE` pairs of a map's detail (`&R=v5.5.3&x=xrdcp&y=&I=4`,
/// `&site=&port=1094&inst=anon&pgm=xrootd&ver=v5.5.3`, the `auth` form
/// `&p=sss&n=NAME&h=...`), in order; text between pairs without `=` is
/// skipped.
pub fn cgi_pairs(detail: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    detail.split(|&b| b == b'&').filter_map(|kv| {
        let eq = kv.iter().position(|&b| b == b'=')?;
        Some((&kv[..eq], &kv[eq + 1..]))
    })
}
