//! The fixed-size parts of every exchange: the 20-byte client handshake, the
//! 16-byte server handshake reply, the 24-byte request header and the 8-byte
//! response header (PROTOCOL.md §1–2; `ClientInitHandShake`,
//! `ClientRequestHdr`, `ServerResponseHeader` in XProtocol.hh), and the
//! 16 bytes a `kXR_status` body starts with.

use bytes::{BufMut, BytesMut};
use core::fmt;

use crate::codes::{RequestId, ServerType, Status};
use crate::error::DecodeError;

/// The two opaque bytes that tie a response to its request. The client picks
/// them, the server echoes them verbatim; they are never byte-swapped.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[doc(alias = "streamid")]
pub struct StreamId(pub [u8; 2]);

impl StreamId {
    /// The stream id used for the handshake, `kXR_protocol`, `kXR_login`,
    /// `kXR_bind` and unsolicited `kXR_attn` frames.
    pub const ZERO: StreamId = StreamId([0, 0]);

    /// A stream id holding `n` in network order. (XrdCl stores a host-order
    /// integer; the server does not care, the bytes are opaque.)
    pub const fn from_u16(n: u16) -> StreamId {
        StreamId(n.to_be_bytes())
    }

    /// The bytes read as a big-endian integer.
    pub const fn to_u16(self) -> u16 {
        u16::from_be_bytes(self.0)
    }
}

impl fmt::Debug for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StreamId({:02x}{:02x})", self.0[0], self.0[1])
    }
}

/// A 4-byte opaque file handle (`fhandle[4]`) as returned by `kXR_open`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[doc(alias = "fhandle")]
pub struct FHandle(pub [u8; 4]);

impl fmt::Debug for FHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FHandle({:02x?})", self.0)
    }
}

/// The 20-byte handshake a client sends first on every connection: five
/// big-endian `i32`s, `0, 0, 0, 4, 2012` (`ClientInitHandShake`, PROTOCOL.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientHandshake;

impl ClientHandshake {
    /// Length on the wire, in bytes.
    pub const LEN: usize = 20;
    /// The five values, as the server checks them.
    pub const FIELDS: [i32; 5] = [0, 0, 0, 4, 2012];

    /// Appends the 20 bytes to `buf`.
    pub fn encode(&self, buf: &mut BytesMut) {
        for v in Self::FIELDS {
            buf.put_i32(v);
        }
    }

    /// Checks 20 bytes. Errors: [`DecodeError::Truncated`] if fewer than 20,
    /// [`DecodeError::BadHandshake`] if the values differ.
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        DecodeError::check_len("client handshake", Self::LEN, b.len())?;
        let mut got = [0i32; 5];
        for (i, g) in got.iter_mut().enumerate() {
            *g = i32::from_be_bytes(b[i * 4..i * 4 + 4].try_into().unwrap());
        }
        if got == Self::FIELDS {
            Ok(ClientHandshake)
        } else {
            Err(DecodeError::BadHandshake { got })
        }
    }
}

/// The server's 16-byte reply to the handshake: a response header
/// (`streamid 0,0`, `kXR_ok`, `dlen 8`) followed by `protover` and `msgval`
/// (PROTOCOL.md §2). It decodes through [`crate::frame::ResponseDecoder`] as an
/// ordinary 8-byte-body frame; [`ServerHandshake::from_body`] reads the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerHandshake {
    /// The server's protocol version (`0x520` current, `0x511` for xrootd 5.5).
    pub protover: u32,
    /// Data server or load balancer (manager/redirector).
    pub server_type: ServerType,
}

impl ServerHandshake {
    /// Length on the wire, header included, in bytes.
    pub const LEN: usize = 16;

    /// Appends the 16 bytes to `buf`.
    pub fn encode(&self, buf: &mut BytesMut) {
        ResponseHeader {
            streamid: StreamId::ZERO,
            status: Status::OK,
            dlen: 8,
        }
        .encode(buf);
        buf.put_u32(self.protover);
        buf.put_i32(self.server_type.0);
    }

    /// Reads the 8-byte body. Errors: [`DecodeError::Truncated`] when shorter,
    /// [`DecodeError::TrailingBytes`] when longer.
    pub fn from_body(body: &[u8]) -> Result<Self, DecodeError> {
        DecodeError::check_len("server handshake body", 8, body.len())?;
        if body.len() > 8 {
            return Err(DecodeError::TrailingBytes {
                what: "server handshake body",
                extra: (body.len() - 8) as u64,
            });
        }
        Ok(ServerHandshake {
            protover: u32::from_be_bytes(body[0..4].try_into().unwrap()),
            server_type: ServerType(i32::from_be_bytes(body[4..8].try_into().unwrap())),
        })
    }
}

/// The 24-byte header every request starts with (`ClientRequestHdr`):
/// `streamid[2] requestid:u16 params[16] dlen:i32` (PROTOCOL.md §1, §4).
/// `params` is the request-specific area, bytes 4–19 of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// Echoed by the server in every response to this request.
    pub streamid: StreamId,
    /// Which request this is.
    pub requestid: RequestId,
    /// Bytes 4–19, laid out per request id (PROTOCOL.md §4 table).
    pub params: [u8; 16],
    /// Payload length in bytes (for `kXR_writev`, the list only).
    pub dlen: i32,
}

impl RequestHeader {
    /// Length on the wire, in bytes.
    pub const LEN: usize = 24;

    /// Reads the header from the first 24 bytes of `b`.
    /// Errors: [`DecodeError::Truncated`] if `b` is shorter.
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        DecodeError::check_len("request header", Self::LEN, b.len())?;
        Ok(RequestHeader {
            streamid: StreamId([b[0], b[1]]),
            requestid: RequestId(u16::from_be_bytes([b[2], b[3]])),
            params: b[4..20].try_into().unwrap(),
            dlen: i32::from_be_bytes(b[20..24].try_into().unwrap()),
        })
    }

    /// Appends the 24 bytes to `buf`.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.streamid.0);
        buf.put_u16(self.requestid.0);
        buf.put_slice(&self.params);
        buf.put_i32(self.dlen);
    }
}

/// The 8-byte header every response starts with (`ServerResponseHeader`):
/// `streamid[2] status:u16 dlen:i32` (PROTOCOL.md §1, §8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The stream id of the request answered (zero for unsolicited `kXR_attn`).
    pub streamid: StreamId,
    /// Response status.
    pub status: Status,
    /// Body length in bytes (for `kXR_status`, the status body and info only).
    pub dlen: i32,
}

impl ResponseHeader {
    /// Length on the wire, in bytes.
    pub const LEN: usize = 8;

    /// Reads the header from the first 8 bytes of `b`.
    /// Errors: [`DecodeError::Truncated`] if `b` is shorter.
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        DecodeError::check_len("response header", Self::LEN, b.len())?;
        Ok(ResponseHeader {
            streamid: StreamId([b[0], b[1]]),
            status: Status(u16::from_be_bytes([b[2], b[3]])),
            dlen: i32::from_be_bytes(b[4..8].try_into().unwrap()),
        })
    }

    /// Appends the 8 bytes to `buf`.
    pub fn encode(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.streamid.0);
        buf.put_u16(self.status.0);
        buf.put_i32(self.dlen);
    }
}

/// `kXR_statusBodyLen`: bytes of the `kXR_status` body before its info.
pub const STATUS_BODY_LEN: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_bytes() {
        let mut b = BytesMut::new();
        ClientHandshake.encode(&mut b);
        assert_eq!(
            &b[..],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 7, 220]
        );
        assert!(ClientHandshake::decode(&b).is_ok());
        b[15] = 5;
        assert!(matches!(
            ClientHandshake::decode(&b),
            Err(DecodeError::BadHandshake {
                got: [0, 0, 0, 5, 2012]
            })
        ));
    }

    #[test]
    fn server_handshake_is_16_bytes() {
        let mut b = BytesMut::new();
        let hs = ServerHandshake {
            protover: 0x511,
            server_type: ServerType::DATA_SERVER,
        };
        hs.encode(&mut b);
        assert_eq!(b.len(), ServerHandshake::LEN);
        let h = ResponseHeader::decode(&b).unwrap();
        assert_eq!(h.dlen, 8);
        assert_eq!(ServerHandshake::from_body(&b[8..]).unwrap(), hs);
    }
}
