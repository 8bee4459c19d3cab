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

/// The cache's `file_close` record, one line of a g-stream of provider
/// [`provider::CACHE`]: written by the stock XCache (`XrdPfc.cc`,
/// `Cache::dec_ref_cnt`) when the last user of a file detaches, as one
/// JSON object with these keys in this order (PROTOCOL.md §17.5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheFileClose {
    /// The file's path (`lfn`).
    pub lfn: String,
    /// Its size, bytes (`size`).
    pub size: u64,
    /// The cache's block size, bytes (`blk_size`).
    pub blk_size: u64,
    /// Blocks of the file (`n_blks`).
    pub n_blks: u64,
    /// Blocks cached (`n_blks_done`).
    pub n_blks_done: u64,
    /// Accesses of the file (`access_cnt`).
    pub access_cnt: u64,
    /// Unix seconds of the first open of this access (`attach_t`).
    pub attach_t: i64,
    /// Unix seconds of the last close (`detach_t`).
    pub detach_t: i64,
    /// The origins read from, `host:port` each (`remotes`).
    pub remotes: Vec<String>,
    /// Bytes served from the cache (`b_hit`).
    pub b_hit: u64,
    /// Bytes fetched from an origin and cached (`b_miss`).
    pub b_miss: u64,
    /// Bytes fetched from an origin and not cached (`b_bypass`).
    pub b_bypass: u64,
    /// Pages that failed their checksum (`n_cks_errs`).
    pub n_cks_errs: u64,
}

/// The longest record [`CacheFileClose::decode`] reads (the stock writes
/// them into 4,096 bytes).
pub const CACHE_RECORD_MAX: usize = 4096;

impl CacheFileClose {
    /// The record as the stock writes it: `{"event":"file_close","lfn":...}`
    /// without spaces, in its key order. A `"` or `\` in a path or remote
    /// is escaped (the stock writes them as they are, which no JSON reader
    /// takes), as is a control character.
    pub fn encode(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(256 + self.lfn.len());
        out.push_str("{\"event\":\"file_close\",\"lfn\":");
        json_string(&mut out, &self.lfn);
        let _ = write!(
            out,
            ",\"size\":{},\"blk_size\":{},\"n_blks\":{},\"n_blks_done\":{},\
             \"access_cnt\":{},\"attach_t\":{},\"detach_t\":{},\"remotes\":[",
            self.size,
            self.blk_size,
            self.n_blks,
            self.n_blks_done,
            self.access_cnt,
            self.attach_t,
            self.detach_t
        );
        for (i, r) in self.remotes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_string(&mut out, r);
        }
        let _ = write!(
            out,
            "],\"b_hit\":{},\"b_miss\":{},\"b_bypass\":{},\"n_cks_errs\":{}}}",
            self.b_hit, self.b_miss, self.b_bypass, self.n_cks_errs
        );
        out
    }

    /// Reads a record: a flat JSON object whose `event` is `file_close`;
    /// keys in any order, unknown keys skipped, missing ones 0 or empty.
    /// Errors: [`DecodeError::Malformed`] for text that is not such an
    /// object, longer than [`CACHE_RECORD_MAX`], or whose event differs.
    pub fn decode(record: &[u8]) -> Result<CacheFileClose, DecodeError> {
        let bad = |detail: &str| DecodeError::Malformed {
            what: "cache file_close record",
            detail: detail.into(),
        };
        if record.len() > CACHE_RECORD_MAX {
            return Err(bad("longer than 4096 bytes"));
        }
        let text = std::str::from_utf8(record).map_err(|_| bad("not UTF-8"))?;
        let mut p = Json {
            s: text.as_bytes(),
            at: 0,
        };
        let mut r = CacheFileClose::default();
        let mut event = false;
        p.expect(b'{').ok_or_else(|| bad("no '{'"))?;
        loop {
            let key = p.string().ok_or_else(|| bad("a key"))?;
            p.expect(b':').ok_or_else(|| bad("no ':'"))?;
            match key.as_str() {
                "event" => event = p.string().ok_or_else(|| bad("event"))? == "file_close",
                "lfn" => r.lfn = p.string().ok_or_else(|| bad("lfn"))?,
                "remotes" => {
                    p.expect(b'[').ok_or_else(|| bad("remotes"))?;
                    if !p.eat(b']') {
                        loop {
                            r.remotes.push(p.string().ok_or_else(|| bad("a remote"))?);
                            if p.eat(b']') {
                                break;
                            }
                            p.expect(b',').ok_or_else(|| bad("remotes"))?;
                        }
                    }
                }
                _ => {
                    let n = p.number().ok_or_else(|| bad("a number"))?;
                    let u = u64::try_from(n).unwrap_or(0);
                    match key.as_str() {
                        "size" => r.size = u,
                        "blk_size" => r.blk_size = u,
                        "n_blks" => r.n_blks = u,
                        "n_blks_done" => r.n_blks_done = u,
                        "access_cnt" => r.access_cnt = u,
                        "attach_t" => r.attach_t = n,
                        "detach_t" => r.detach_t = n,
                        "b_hit" => r.b_hit = u,
                        "b_miss" => r.b_miss = u,
                        "b_bypass" => r.b_bypass = u,
                        "n_cks_errs" => r.n_cks_errs = u,
                        _ => {}
                    }
                }
            }
            if p.eat(b'}') {
                break;
            }
            p.expect(b',').ok_or_else(|| bad("no ','"))?;
        }
        if !event {
            return Err(bad("not a file_close event"));
        }
        Ok(r)
    }
}

/// Appends `s` as a JSON string.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A reader of the flat JSON of cache records.
struct Json<'a> {
    s: &'a [u8],
    at: usize,
}

impl Json<'_> {
    fn skip_space(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_space();
        let hit = self.s.get(self.at) == Some(&c);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        self.eat(c).then_some(())
    }

    /// A string: escapes `\"`, `\\`, `\/`, `\n`, `\t`, `\uXXXX` (BMP).
    fn string(&mut self) -> Option<String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = *self.s.get(self.at)?;
            self.at += 1;
            match c {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let e = *self.s.get(self.at)?;
                    self.at += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'u' => {
                            let hex =
                                std::str::from_utf8(self.s.get(self.at..self.at + 4)?).ok()?;
                            self.at += 4;
                            let ch = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return None,
                    }
                }
                c => out.push(c),
            }
        }
    }

    /// An integer (an optional `-` and digits).
    fn number(&mut self) -> Option<i64> {
        self.skip_space();
        let start = self.at;
        if self.s.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        std::str::from_utf8(&self.s[start..self.at])
            .ok()?
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record the stock 5.5.3 XCache sent on loopback (64 KiB blocks, a
    /// first download by `xrdcp`: every byte from the origin, its client's
    /// overlapping reads counted as hits too).
    const STOCK: &str = r#"{"event":"file_close","lfn":"/a.bin","size":1000000,"blk_size":65536,"n_blks":16,"n_blks_done":16,"access_cnt":1,"attach_t":1796643396,"detach_t":1796643396,"remotes":["127.0.0.1:39245"],"b_hit":672320,"b_miss":1000000,"b_bypass":0,"n_cks_errs":0}"#;

    #[test]
    fn the_stock_record_reads_and_writes_back() {
        let r = CacheFileClose::decode(STOCK.as_bytes()).unwrap();
        assert_eq!(
            (r.lfn.as_str(), r.size, r.n_blks, r.b_miss),
            ("/a.bin", 1_000_000, 16, 1_000_000)
        );
        assert_eq!(r.remotes, ["127.0.0.1:39245"]);
        assert_eq!(r.encode(), STOCK);
    }

    #[test]
    fn odd_records_are_errors_or_escaped() {
        for bad in [
            &b""[..],
            b"{",
            b"{\"event\":\"open\"}",
            b"{\"event\":\"file_close\",\"size\":x}",
            b"{\"event\":\"file_close\",\"remotes\":[\"a\"",
            b"{\"lfn\":\"\\q\"}",
        ] {
            assert!(CacheFileClose::decode(bad).is_err(), "{bad:?}");
        }
        assert!(CacheFileClose::decode(&vec![b' '; 5000]).is_err());
        let r = CacheFileClose {
            lfn: "/a\"b\\c\n".into(),
            remotes: vec![],
            ..Default::default()
        };
        assert_eq!(CacheFileClose::decode(r.encode().as_bytes()).unwrap(), r);
    }
}
