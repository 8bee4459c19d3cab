//! Read requests: read, readv, pgread and the `kXR_pgreadv` extension
//! (PROTOCOL.md §6.3–6.5, §16).

use bytes::{BufMut, Bytes, BytesMut};

use crate::codes::RequestId;
use crate::error::DecodeError;
use crate::frame::RequestFrame;
use crate::header::{FHandle, StreamId};
use crate::limits::MAX_READV_ELEMENTS;
use crate::list::{validate_readv, ReadListEntry};

use super::body::RequestBody;
use super::params::{put_header, Params};

/// Implements [`RequestBody`] for a request laid out like `kXR_readv`: a
/// flags byte `$flags` at header byte 18, `pathid` at byte 19 and a
/// read_list payload, checked on decode with `$validate`.
macro_rules! list_request {
    ($name:ident = $id:ident, $flags:ident, $what:literal, $validate:path) => {
        impl RequestBody for $name {
            const ID: RequestId = RequestId::$id;

            fn decode(frame: &RequestFrame) -> Result<Self, DecodeError> {
                let p = Params::of(frame, Self::ID)?;
                let list = ReadListEntry::decode_list(&frame.payload, $what)?;
                $validate(&list)?;
                Ok($name {
                    $flags: p.get(18),
                    pathid: p.get(19),
                    list,
                })
            }

            fn encode(&self, streamid: StreamId, buf: &mut BytesMut) {
                let p = Params::default().set(18, self.$flags).set(19, self.pathid);
                let dlen = self.list.len() * ReadListEntry::LEN;
                put_header(buf, streamid, Self::ID, p, dlen);
                for e in &self.list {
                    e.encode(buf);
                }
            }
        }
    };
}

/// Implements [`RequestBody`] for a request laid out like `kXR_read`:
/// `fhandle`, `offset` and `rlen` at header bytes 4, 8 and 16, and an
/// optional `args` payload that `$args` decodes, measures and encodes.
macro_rules! extent_request {
    ($name:ident = $id:ident, $args:ident) => {
        impl RequestBody for $name {
            const ID: RequestId = RequestId::$id;

            fn decode(frame: &RequestFrame) -> Result<Self, DecodeError> {
                let p = Params::of(frame, Self::ID)?;
                Ok($name {
                    fhandle: p.get(4),
                    offset: p.get(8),
                    rlen: p.get(16),
                    args: $args::decode(&frame.payload)?,
                })
            }

            fn encode(&self, streamid: StreamId, buf: &mut BytesMut) {
                let p = Params::default()
                    .set(4, self.fhandle)
                    .set(8, self.offset)
                    .set(16, self.rlen);
                let dlen = self.args.as_ref().map_or(0, $args::wire_len);
                put_header(buf, streamid, Self::ID, p, dlen);
                if let Some(args) = &self.args {
                    args.encode(buf);
                }
            }
        }
    };
}

/// The optional `read_args` payload of `kXR_read` (PROTOCOL.md §6.3): 8
/// bytes (`pathid`, 7 reserved) and then a pre-read list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[doc(alias = "read_args")]
pub struct ReadArgs {
    /// The bound substream to answer on (0 = this link).
    pub pathid: u8,
    /// `readahead_list` entries the server reads ahead (advisory; no data
    /// comes back for them). Usually empty.
    pub preread: Vec<ReadListEntry>,
}

impl ReadArgs {
    /// Bytes of the fixed part.
    pub const LEN: usize = 8;

    /// `None` for an empty payload. Errors: [`DecodeError::Truncated`] for
    /// 1–7 bytes, [`DecodeError::Misaligned`] for a pre-read list that is not
    /// a multiple of 16 bytes.
    fn decode(b: &Bytes) -> Result<Option<Self>, DecodeError> {
        if b.is_empty() {
            return Ok(None);
        }
        DecodeError::check_len("kXR_read read_args", Self::LEN, b.len())?;
        let preread = b.slice(Self::LEN..);
        Ok(Some(ReadArgs {
            pathid: b[0],
            preread: ReadListEntry::decode_list(&preread, "kXR_read readahead_list")?,
        }))
    }

    /// Bytes on the wire.
    fn wire_len(&self) -> usize {
        Self::LEN + self.preread.len() * ReadListEntry::LEN
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_u8(self.pathid);
        buf.put_bytes(0, Self::LEN - 1);
        for e in &self.preread {
            e.encode(buf);
        }
    }
}

/// `kXR_read` (3013): `rlen` bytes at `offset` of an open file
/// (`ClientReadRequest`, PROTOCOL.md §6.3). XrdCl always sends 8 bytes of
/// `read_args` (PROTOCOL.md Appendix item 5); the server refuses `rlen < 0`.
///
/// Decoding fails with [`DecodeError::Truncated`] for a payload of 1–7
/// bytes and [`DecodeError::Misaligned`] for a pre-read list that is not a
/// multiple of 16 bytes.
#[doc(alias = "kXR_read")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Read {
    /// Bytes 4-7.
    pub fhandle: FHandle,
    /// Bytes 8-15: file offset in bytes.
    pub offset: i64,
    /// Bytes 16-19: length in bytes.
    pub rlen: i32,
    /// The payload; `None` sends `dlen` 0.
    pub args: Option<ReadArgs>,
}

impl Read {
    /// The substream to answer on: `args.pathid`, or 0 without args.
    pub fn pathid(&self) -> u8 {
        self.args.as_ref().map_or(0, |a| a.pathid)
    }
}

extent_request! { Read = READ, ReadArgs }

wire_newtype! {
    /// Byte 18 of a `kXR_readv` header, reserved in stock xrootd: this
    /// project's extension flags ([`crate::ext`]). Send a bit only after the
    /// server has advertised it.
    flags ReadvFlags(u8);
    /// **Extension**: answer with each element's crc32c in the 4-byte
    /// `fhandle` slot of its response header (equals
    /// [`crate::ext::READV_FLAG_CRC32C`]).
    CRC32C = 0x01 => "READV_FLAG_CRC32C";
}

/// `kXR_readv` (3025): a vector read (`ClientReadVRequest`, PROTOCOL.md §6.4).
///
/// Decoding checks the list with [`validate_readv`], so each limit has its
/// own error: [`DecodeError::TooManyElements`] over 1024 elements,
/// [`DecodeError::NegativeLength`] for `rlen < 0`,
/// [`DecodeError::ReadvElementTooLarge`] for an element over 2,097,136
/// bytes, [`DecodeError::ReadvTotalTooLarge`] when the lengths plus 16 bytes
/// per element exceed 2 GiB ([`crate::limits::MAX_READV_TOTAL_ACCEPTED`]);
/// [`DecodeError::Misaligned`] for a
/// payload that is not a multiple of 16. An **empty list decodes**; the
/// reference answers it with `kXR_ArgInvalid`, see [`Readv::check_not_empty`].
#[doc(alias = "kXR_readv")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Readv {
    /// Byte 18: extension flags (zero for stock peers).
    pub flags: ReadvFlags,
    /// Byte 19: set by XrdCl, **ignored** by the stock server.
    pub pathid: u8,
    /// The elements, in request (and response) order.
    pub list: Vec<ReadListEntry>,
}

impl Readv {
    /// The reference's `n == 0` check: [`DecodeError::InvalidValue`] for an
    /// empty list (the server answers `kXR_ArgInvalid`).
    pub fn check_not_empty(&self) -> Result<(), DecodeError> {
        if self.list.is_empty() {
            return Err(DecodeError::InvalidValue {
                what: "kXR_readv read_list",
                expected: "at least one element",
                got: 0,
            });
        }
        Ok(())
    }
}

list_request! { Readv = READV, flags, "kXR_readv read_list", validate_readv }

wire_newtype! {
    /// `reqflags` of `kXR_pgread` (payload byte 1), `kXR_pgwrite` (byte 17)
    /// and `kXR_pgreadv` (byte 18) (PROTOCOL.md §6.5).
    flags PgReqFlags(u8);
    /// A retry of one page whose checksum was bad (disables AIO on pgread;
    /// a pgwrite retry must cover at most one page).
    RETRY = 0x01 => "kXR_pgRetry";
}

/// The optional payload of `kXR_pgread` (`ClientPgReadReqArgs`): `pathid`
/// alone (`dlen` 1) or `pathid` and `reqflags` (`dlen` 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[doc(alias = "ClientPgReadReqArgs")]
pub struct PgReadArgs {
    /// The substream to answer on; the server rejects `kXR_AnyPath` (0xff).
    pub pathid: u8,
    /// Sent only when `Some`.
    pub reqflags: Option<PgReqFlags>,
}

impl PgReadArgs {
    /// `None` for an empty payload. Errors: [`DecodeError::TrailingBytes`]
    /// over 2 bytes.
    fn decode(b: &Bytes) -> Result<Option<Self>, DecodeError> {
        if b.len() > 2 {
            return Err(DecodeError::TrailingBytes {
                what: "kXR_pgread args",
                extra: b.len() as u64 - 2,
            });
        }
        Ok(b.first().map(|&pathid| PgReadArgs {
            pathid,
            reqflags: b.get(1).map(|&f| PgReqFlags(f)),
        }))
    }

    /// Bytes on the wire: 1, or 2 with `reqflags`.
    fn wire_len(&self) -> usize {
        1 + usize::from(self.reqflags.is_some())
    }

    fn encode(&self, buf: &mut BytesMut) {
        buf.put_u8(self.pathid);
        if let Some(f) = self.reqflags {
            buf.put_u8(f.0);
        }
    }
}

/// `kXR_pgread` (3030): `rlen` bytes at `offset`, answered as `kXR_status`
/// frames of `[crc32c][page]` units aligned to absolute file offsets
/// (`ClientPgReadRequest`, PROTOCOL.md §6.5). The server refuses `rlen <= 0`.
///
/// Decoding fails with [`DecodeError::TrailingBytes`] for a payload over 2 bytes.
#[doc(alias = "kXR_pgread")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pgread {
    /// Bytes 4-7.
    pub fhandle: FHandle,
    /// Bytes 8-15: file offset in bytes.
    pub offset: i64,
    /// Bytes 16-19: length in bytes.
    pub rlen: i32,
    /// The 0-, 1- or 2-byte payload.
    pub args: Option<PgReadArgs>,
}

impl Pgread {
    /// The substream to answer on (0 without args).
    pub fn pathid(&self) -> u8 {
        self.args.map_or(0, |a| a.pathid)
    }

    /// The request flags (empty unless sent).
    pub fn reqflags(&self) -> PgReqFlags {
        self.args.and_then(|a| a.reqflags).unwrap_or_default()
    }
}

extent_request! { Pgread = PGREAD, PgReadArgs }

/// Checks a `kXR_pgreadv` list: [`DecodeError::TooManyElements`] over 1024
/// elements (`maxRvecsz`), [`DecodeError::NegativeLength`] for `rlen < 0`.
/// Unlike readv, an element's length is not capped: each extent is streamed
/// as its own run of pgread frames (PROTOCOL.md §16).
pub fn validate_pgreadv(list: &[ReadListEntry]) -> Result<(), DecodeError> {
    DecodeError::check_count("kXR_pgreadv read_list", list.len(), MAX_READV_ELEMENTS)?;
    match list.iter().find(|e| e.rlen < 0) {
        Some(e) => Err(DecodeError::NegativeLength {
            what: "kXR_pgreadv rlen",
            value: e.rlen.into(),
        }),
        None => Ok(()),
    }
}

/// **Extension** `kXR_pgreadv` (3033, not in stock xrootd): a vector of
/// extents like `kXR_readv`, answered like `kXR_pgread`: a stream of
/// `kXR_status` frames whose offsets jump between the extents, one Final
/// frame for the whole request (`ClientPgReadVRequest`, PROTOCOL.md §16;
/// negotiation in [`crate::ext`]). Send it only to a server that
/// answered [`crate::ext::PGREADV_CONFIG_KEY`] with `1`.
///
/// The 24-byte header is laid out like `kXR_readv`: `reqflags` at byte 18,
/// `pathid` at byte 19; the payload is a read_list. Decoding fails as
/// [`validate_pgreadv`] says, or with [`DecodeError::Misaligned`] for a
/// payload that is not a multiple of 16. The reference implementation
/// answers a non-zero `pathid` with `kXR_ArgInvalid`.
#[doc(alias = "kXR_pgreadv")]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PgReadv {
    /// Byte 18.
    pub reqflags: PgReqFlags,
    /// Byte 19; must be 0 for the reference implementation.
    pub pathid: u8,
    /// The extents, in order.
    pub list: Vec<ReadListEntry>,
}

list_request! { PgReadv = PGREADV, reqflags, "kXR_pgreadv read_list", validate_pgreadv }
