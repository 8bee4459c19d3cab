//! Incremental frame decoders, one per direction.
//!
//! They take bytes as they arrive in a [`BytesMut`] and return whole frames,
//! split off that buffer without copying. Neither does I/O: a caller reads
//! from its socket into the buffer and calls `decode` until it returns
//! `Ok(None)` ("need more bytes"). A length is checked before anything waits
//! for it, so a hostile `dlen` costs nothing beyond the bytes that actually
//! arrive, and those are bounded by `max_dlen`.
//!
//! - [`RequestDecoder`] (server side) expects the 20-byte client handshake
//!   first, then 24-byte-header requests; `kXR_writev` frames include the data
//!   that follows the write_list outside `dlen` (PROTOCOL.md §6.8).
//! - [`ResponseDecoder`] (client side) reads 8-byte-header responses; a
//!   `kXR_status` frame includes its `bdy.dlen` data bytes (PROTOCOL.md §8.1).
//!   The 16-byte handshake reply decodes as an ordinary frame with an 8-byte
//!   body ([`crate::header::ServerHandshake::from_body`]).

use bytes::{Buf, Bytes, BytesMut};

use crate::codes::{RequestId, Status};
use crate::error::DecodeError;
use crate::header::{ClientHandshake, RequestHeader, ResponseHeader, StreamId, STATUS_BODY_LEN};
use crate::limits::{
    MAX_READV_ELEMENTS, MAX_READV_LIST_BYTES, MAX_WRITEV_ELEMENT, MAX_WRITEV_ELEMENTS,
    READ_LIST_LEN,
};

/// Default largest request payload a [`RequestDecoder`] accepts: 16 MiB
/// (xrdcp writes 8 MiB chunks; pgwrite adds 4 bytes per page).
pub const DEFAULT_MAX_REQUEST_DLEN: usize = 16 << 20;
/// Default largest response body a [`ResponseDecoder`] accepts: 64 MiB. A
/// stock server answers a plain read of N bytes with one frame of N bytes, so
/// a client that reads larger blocks must raise it.
pub const DEFAULT_MAX_RESPONSE_DLEN: usize = 64 << 20;

/// A whole request: header, the `dlen` payload bytes and, for `kXR_writev`
/// only, the data that follows the write_list uncounted by `dlen`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFrame {
    /// The 24-byte header.
    pub header: RequestHeader,
    /// The `dlen` bytes after the header (a slice of the input, not a copy).
    pub payload: Bytes,
    /// `kXR_writev` data, all elements concatenated in list order; empty for
    /// every other request.
    pub data: Bytes,
}

impl RequestFrame {
    /// Bytes this frame occupies on the wire.
    pub fn wire_len(&self) -> usize {
        RequestHeader::LEN + self.payload.len() + self.data.len()
    }
}

/// What a client sends: the handshake once, then requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMessage {
    /// The 20-byte initial handshake.
    Handshake(ClientHandshake),
    /// A request frame.
    Request(RequestFrame),
}

/// A whole response: the 8-byte header and everything after it. For
/// `kXR_status` the body is the 16-byte status body, the info and the
/// `bdy.dlen` data bytes; for every other status it is `dlen` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseFrame {
    /// The 8-byte header.
    pub header: ResponseHeader,
    /// The body (a slice of the input, not a copy).
    pub body: Bytes,
}

impl ResponseFrame {
    /// A frame with `header.dlen` set from `body`. For `kXR_status` frames use
    /// [`crate::response::StatusResponse`], whose `dlen` excludes the data.
    pub fn new(streamid: StreamId, status: Status, body: Bytes) -> Self {
        ResponseFrame {
            header: ResponseHeader {
                streamid,
                status,
                dlen: body.len() as i32,
            },
            body,
        }
    }

    /// Appends header and body to `buf`.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.reserve(ResponseHeader::LEN + self.body.len());
        self.header.encode(buf);
        buf.extend_from_slice(&self.body);
    }

    /// Bytes this frame occupies on the wire.
    pub fn wire_len(&self) -> usize {
        ResponseHeader::LEN + self.body.len()
    }
}

fn check_dlen(what: &'static str, dlen: i64, max: usize) -> Result<usize, DecodeError> {
    if dlen < 0 {
        return Err(DecodeError::NegativeLength { what, value: dlen });
    }
    if dlen as u64 > max as u64 {
        return Err(DecodeError::LengthTooLarge {
            what,
            value: dlen as u64,
            max: max as u64,
        });
    }
    Ok(dlen as usize)
}

/// The server side's decoder: the client handshake, then request frames.
#[derive(Debug, Clone)]
pub struct RequestDecoder {
    expect_handshake: bool,
    max_dlen: usize,
    /// The largest payload of a request other than a write.
    max_argument_dlen: usize,
    /// Total frame length once known (saves re-walking a writev list).
    pending: Option<usize>,
}

impl Default for RequestDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestDecoder {
    /// A decoder for a new connection: the 20-byte handshake comes first.
    pub fn new() -> Self {
        RequestDecoder {
            expect_handshake: true,
            max_dlen: DEFAULT_MAX_REQUEST_DLEN,
            max_argument_dlen: usize::MAX,
            pending: None,
        }
    }

    /// A decoder that starts directly with request frames (tests, replays).
    pub fn without_handshake() -> Self {
        RequestDecoder {
            expect_handshake: false,
            ..Self::new()
        }
    }

    /// Sets the largest payload accepted, in bytes; for `kXR_writev` it bounds
    /// the list plus its data.
    pub fn with_max_dlen(mut self, max_dlen: usize) -> Self {
        self.max_dlen = max_dlen;
        self
    }

    /// The largest payload accepted, in bytes.
    pub fn max_dlen(&self) -> usize {
        self.max_dlen
    }

    /// Sets the largest payload accepted of a request other than a write
    /// (`kXR_write`, `kXR_pgwrite`, `kXR_writev`), in bytes: its argument,
    /// a path, a list, a query (no other limit than
    /// [`RequestDecoder::with_max_dlen`]'s by default). The stock server
    /// takes at most 2 MiB - 1 (its argument buffer of 2 MiB and a
    /// terminating null); only a write's data is larger.
    pub fn with_max_argument_dlen(mut self, max_argument_dlen: usize) -> Self {
        self.max_argument_dlen = max_argument_dlen;
        self
    }

    /// Forgets the request frame being received (the one
    /// [`RequestDecoder::pending_len`] measures), for a caller that drops
    /// its bytes itself: the next byte after them starts a new frame.
    /// Returns its length, `None` when no frame was pending.
    pub fn skip_pending(&mut self) -> Option<usize> {
        self.pending.take()
    }

    /// Takes one message off the front of `buf`, or returns `Ok(None)` when
    /// `buf` does not hold a whole one yet.
    ///
    /// Errors (the connection should be closed after any of them; the bytes
    /// are left in `buf`):
    /// [`DecodeError::BadHandshake`];
    /// [`DecodeError::NegativeLength`] for `dlen < 0` or a negative writev `wlen`;
    /// [`DecodeError::LengthTooLarge`] for `dlen` (or writev list + data) over
    /// `max_dlen`, the `dlen` of a request other than a write over
    /// `max_argument_dlen`, or a writev element over 2 MiB;
    /// [`DecodeError::TooManyElements`] for a readv/pgreadv/writev list of more
    /// than 1024 elements; [`DecodeError::Misaligned`] for a list that is not
    /// a multiple of 16 bytes.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<ClientMessage>, DecodeError> {
        if self.expect_handshake {
            if buf.len() < ClientHandshake::LEN {
                return Ok(None);
            }
            let hs = ClientHandshake::decode(&buf[..ClientHandshake::LEN])?;
            let _ = buf.split_to(ClientHandshake::LEN);
            self.expect_handshake = false;
            return Ok(Some(ClientMessage::Handshake(hs)));
        }
        if buf.len() < RequestHeader::LEN {
            return Ok(None);
        }
        let header = RequestHeader::decode(&buf[..RequestHeader::LEN])?;
        let total = match self.pending {
            Some(t) => t,
            None => {
                let Some(t) = self.frame_len(&header, buf)? else {
                    return Ok(None);
                };
                self.pending = Some(t);
                t
            }
        };
        if buf.len() < total {
            return Ok(None);
        }
        self.pending = None;
        let frame = buf.split_to(total).freeze();
        let dlen = header.dlen as usize;
        let payload = frame.slice(RequestHeader::LEN..RequestHeader::LEN + dlen);
        let data = frame.slice(RequestHeader::LEN + dlen..);
        Ok(Some(ClientMessage::Request(RequestFrame {
            header,
            payload,
            data,
        })))
    }

    /// The whole wire length, in bytes, of the request frame being
    /// received: known once [`RequestDecoder::decode`] has seen its header
    /// (and, for `kXR_writev`, its list) and returned `Ok(None)` for want of
    /// the rest; `None` between frames. A server can reserve memory for the
    /// frame before reading its payload.
    pub fn pending_len(&self) -> Option<usize> {
        self.pending
    }

    /// Total wire length of the frame at the front of `buf`, `None` if more
    /// bytes are needed to know it (a writev list not yet complete).
    fn frame_len(
        &self,
        header: &RequestHeader,
        buf: &BytesMut,
    ) -> Result<Option<usize>, DecodeError> {
        let dlen = check_dlen("request dlen", header.dlen as i64, self.max_dlen)?;
        let id = header.requestid;
        if id == RequestId::READV || id == RequestId::PGREADV || id == RequestId::WRITEV {
            let (what, max) = if id == RequestId::WRITEV {
                ("kXR_writev write_list", MAX_WRITEV_ELEMENTS)
            } else {
                ("read_list", MAX_READV_ELEMENTS)
            };
            if dlen > MAX_READV_LIST_BYTES {
                return Err(DecodeError::TooManyElements {
                    what,
                    count: dlen.div_ceil(READ_LIST_LEN) as u64,
                    max: max as u64,
                });
            }
            if dlen % READ_LIST_LEN != 0 {
                return Err(DecodeError::Misaligned {
                    what,
                    len: dlen as u64,
                    unit: READ_LIST_LEN as u64,
                });
            }
        }
        if id != RequestId::WRITE && id != RequestId::PGWRITE && id != RequestId::WRITEV {
            check_dlen("request argument", dlen as i64, self.max_argument_dlen)?;
        }
        if id != RequestId::WRITEV {
            return Ok(Some(RequestHeader::LEN + dlen));
        }
        if buf.len() < RequestHeader::LEN + dlen {
            return Ok(None);
        }
        let list = &buf[RequestHeader::LEN..RequestHeader::LEN + dlen];
        let mut data = 0u64;
        for e in list.chunks_exact(READ_LIST_LEN) {
            let wlen = i32::from_be_bytes(e[4..8].try_into().unwrap());
            if wlen < 0 {
                return Err(DecodeError::NegativeLength {
                    what: "kXR_writev wlen",
                    value: wlen as i64,
                });
            }
            if wlen as u32 > MAX_WRITEV_ELEMENT {
                return Err(DecodeError::LengthTooLarge {
                    what: "kXR_writev element",
                    value: wlen as u64,
                    max: MAX_WRITEV_ELEMENT as u64,
                });
            }
            data += wlen as u64;
        }
        if data + dlen as u64 > self.max_dlen as u64 {
            return Err(DecodeError::LengthTooLarge {
                what: "kXR_writev list and data",
                value: data + dlen as u64,
                max: self.max_dlen as u64,
            });
        }
        Ok(Some(RequestHeader::LEN + dlen + data as usize))
    }

    /// Like [`RequestDecoder::decode`], for when the peer has closed: a
    /// partial message left in `buf` is [`DecodeError::Truncated`].
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<ClientMessage>, DecodeError> {
        match self.decode(buf)? {
            Some(m) => Ok(Some(m)),
            None if buf.is_empty() => Ok(None),
            None => {
                let (what, expected) = if self.expect_handshake {
                    ("client handshake", ClientHandshake::LEN)
                } else if let Some(t) = self.pending {
                    ("request frame", t)
                } else if buf.len() < RequestHeader::LEN {
                    ("request header", RequestHeader::LEN)
                } else {
                    // a writev whose list is incomplete
                    let h = RequestHeader::decode(buf)?;
                    ("request frame", RequestHeader::LEN + h.dlen as usize)
                };
                Err(DecodeError::truncated(what, expected, buf.len()))
            }
        }
    }
}

/// A frame whose body its reader collects itself
/// ([`ResponseDecoder::take_large_body`]).
#[derive(Debug, Clone)]
pub struct LargeBody {
    /// The frame's header.
    pub header: ResponseHeader,
    /// Bytes of the whole body (for `kXR_status`: status body, info and
    /// data).
    pub len: usize,
    /// The start of the body that had arrived, fewer than `len` bytes.
    pub head: Bytes,
}

/// The client side's decoder: response frames (the handshake reply included).
#[derive(Debug, Clone)]
pub struct ResponseDecoder {
    max_dlen: usize,
    pending: Option<usize>,
}

impl Default for ResponseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseDecoder {
    /// A decoder with [`DEFAULT_MAX_RESPONSE_DLEN`].
    pub fn new() -> Self {
        ResponseDecoder {
            max_dlen: DEFAULT_MAX_RESPONSE_DLEN,
            pending: None,
        }
    }

    /// Sets the largest body accepted, in bytes (for `kXR_status`, status
    /// body + info + data).
    pub fn with_max_dlen(mut self, max_dlen: usize) -> Self {
        self.max_dlen = max_dlen;
        self
    }

    /// The largest body accepted, in bytes.
    pub fn max_dlen(&self) -> usize {
        self.max_dlen
    }

    /// Takes one frame off the front of `buf`, or `Ok(None)` if it is not
    /// whole yet.
    ///
    /// Errors: [`DecodeError::NegativeLength`] for a negative `dlen` or
    /// `bdy.dlen`; [`DecodeError::LengthTooLarge`] for a body over `max_dlen`;
    /// [`DecodeError::Truncated`] for a `kXR_status` whose `dlen` is under the
    /// 16-byte status body.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<ResponseFrame>, DecodeError> {
        if buf.len() < ResponseHeader::LEN {
            return Ok(None);
        }
        let header = ResponseHeader::decode(&buf[..ResponseHeader::LEN])?;
        let total = match self.pending {
            Some(t) => t,
            None => {
                let dlen = check_dlen("response dlen", header.dlen as i64, self.max_dlen)?;
                if header.status != Status::STATUS {
                    ResponseHeader::LEN + dlen
                } else {
                    DecodeError::check_len("kXR_status body", STATUS_BODY_LEN, dlen)?;
                    // bdy.dlen is the last field of the 16-byte status body
                    if buf.len() < ResponseHeader::LEN + STATUS_BODY_LEN {
                        return Ok(None);
                    }
                    let at = ResponseHeader::LEN + 12;
                    let bdy = i32::from_be_bytes(buf[at..at + 4].try_into().unwrap());
                    if bdy < 0 {
                        return Err(DecodeError::NegativeLength {
                            what: "kXR_status bdy.dlen",
                            value: bdy as i64,
                        });
                    }
                    let body = dlen as u64 + bdy as u64;
                    if body > self.max_dlen as u64 {
                        return Err(DecodeError::LengthTooLarge {
                            what: "kXR_status body and data",
                            value: body,
                            max: self.max_dlen as u64,
                        });
                    }
                    ResponseHeader::LEN + body as usize
                }
            }
        };
        self.pending = Some(total);
        if buf.len() < total {
            return Ok(None);
        }
        self.pending = None;
        let frame = buf.split_to(total).freeze();
        Ok(Some(ResponseFrame {
            header,
            body: frame.slice(ResponseHeader::LEN..),
        }))
    }

    /// The wire length of the frame being assembled, once its header (and
    /// for `kXR_status` its status body) has been checked; `None` before.
    /// Never more than `8 + max_dlen`. A reader can reserve the rest of the
    /// frame at once instead of growing its buffer piecemeal.
    pub fn pending_len(&self) -> Option<usize> {
        self.pending
    }

    /// For a reader that collects a large body itself, straight from the
    /// socket into a buffer of its own: once the frame being assembled has
    /// its header checked ([`ResponseDecoder::pending_len`] is `Some`) and a
    /// body of at least `min_body` bytes still to come, takes its header
    /// and the part of the body `buf` holds off `buf`, and readies the
    /// decoder for the next frame. `None`, with nothing taken, otherwise.
    pub fn take_large_body(&mut self, buf: &mut BytesMut, min_body: usize) -> Option<LargeBody> {
        let total = self.pending?;
        let len = total - ResponseHeader::LEN;
        if len < min_body || buf.len() >= total {
            return None;
        }
        // checked when `pending` was set
        let header = ResponseHeader::decode(&buf[..ResponseHeader::LEN]).ok()?;
        self.pending = None;
        let mut head = buf.split().freeze();
        head.advance(ResponseHeader::LEN);
        Some(LargeBody { header, len, head })
    }

    /// Like [`ResponseDecoder::decode`], for when the peer has closed: a
    /// partial frame left in `buf` is [`DecodeError::Truncated`].
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<ResponseFrame>, DecodeError> {
        match self.decode(buf)? {
            Some(f) => Ok(Some(f)),
            None if buf.is_empty() => Ok(None),
            None => {
                let expected = self.pending.unwrap_or(ResponseHeader::LEN);
                Err(DecodeError::truncated(
                    "response frame",
                    expected,
                    buf.len(),
                ))
            }
        }
    }
}
