//! Zero-copy, sans-IO codecs for the XRootD wire protocol.
//!
//! This crate turns bytes into typed frames and back. It does no I/O and
//! knows nothing of sockets or runtimes: a caller feeds received bytes to a
//! [`frame::RequestDecoder`] (server side) or [`frame::ResponseDecoder`]
//! (client side) and encodes what it sends into a [`bytes::BytesMut`].
//!
//! - [`header`]: the 20-byte client handshake, the 16-byte server handshake
//!   reply, the 24-byte request header and the 8-byte response header.
//! - [`codes`]: request ids, response status, error numbers, attn actions,
//!   as newtypes that keep unknown values.
//! - [`frame`]: incremental decoders for both directions with a configurable
//!   maximum `dlen`.
//! - [`request`]: a typed struct for every request id 3000–3032 and the
//!   `kXR_pgreadv` extension (3033).
//! - [`response`]: every response status and the request-specific bodies.
//! - [`exchange`]: pairs responses with their requests by streamid, per
//!   connection, and decodes each whole answer (multi-frame ones included)
//!   into a typed body; for tools that read captured streams.
//! - [`page`]: 4 kB page geometry and crc32c for pgread/pgwrite.
//! - [`ext`]: this project's two protocol extensions and how they are negotiated.
//! - [`gauge`]: a count in flight integrated over time (not a wire fact: the
//!   arithmetic the server's and the client's statistics share).
//! - [`limits`]: the protocol's limits.
//! - [`list`]: the 16-byte `read_list` element and the readv limit checks.
//! - [`url`]: `root://` URL parsing (pure, shared by client and server).
//!
//! Decoded payloads are [`bytes::Bytes`] slices of the frame they came from:
//! no payload byte is copied on decode. Every length that comes off the wire
//! is checked before it is used; a malformed input yields a
//! [`DecodeError`] naming what was expected and what came.
//!
//! # Example
//!
//! A client encodes a `kXR_read`; the server side decodes it from the bytes
//! as they arrive, then answers, and the client decodes the answer:
//!
//! ```
//! use bytes::BytesMut;
//! use xroot_proto::frame::{ClientMessage, RequestDecoder, ResponseDecoder};
//! use xroot_proto::request::{Read, Request};
//! use xroot_proto::response::Response;
//! use xroot_proto::{FHandle, StreamId};
//!
//! // client: 24-byte header, no payload
//! let mut wire = BytesMut::new();
//! let read = Read { fhandle: FHandle([0, 0, 0, 1]), offset: 4096, rlen: 5, args: None };
//! Request::from(read.clone()).encode(StreamId::from_u16(1), &mut wire);
//! assert_eq!(wire.len(), 24);
//!
//! // server: a whole frame comes off the buffer, typed by its request id
//! let mut dec = RequestDecoder::without_handshake();
//! let Some(ClientMessage::Request(frame)) = dec.decode(&mut wire)? else { unreachable!() };
//! let sid = frame.header.streamid;
//! assert_eq!(Request::decode(frame)?, Request::Read(read));
//!
//! // server answers with the data; the client decodes it
//! let mut reply = BytesMut::new();
//! Response::Ok(bytes::Bytes::from_static(b"hello")).encode(sid, &mut reply);
//! let frame = ResponseDecoder::new().decode(&mut reply)?.expect("whole frame");
//! assert_eq!(frame.header.streamid, StreamId::from_u16(1));
//! assert!(matches!(Response::decode(frame)?, Response::Ok(data) if &data[..] == b"hello"));
//! # Ok::<(), xroot_proto::DecodeError>(())
//! ```
//!
//! # Sources
//!
//! The wire facts come from `src/XProtocol/XProtocol.hh` of xrootd
//! (<https://github.com/xrootd/xrootd>) and the XRootD protocol
//! specification ("The XRootD Protocol", version 5.1.1), as summarised in
//! this project's protocol notes, which ship with this crate as
//! `xroot-proto/PROTOCOL.md` and are rendered as [`notes`]. Where the
//! installed xrootd 5.5.3 differs, its bytes win (the notes' Appendix).
//! Throughout the xroot crates, `PROTOCOL.md §N.M` and `PROTOCOL.md Appendix
//! item K` cite those notes, and `SECURITY.md "…"` cites the security notes
//! that ship with xroot-sec (`xroot-sec/SECURITY.md`, rendered as
//! `xroot_sec::notes`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[macro_use]
mod macros;

pub mod cms;
pub mod codes;
pub mod error;
pub mod exchange;
pub mod ext;
pub mod frame;
pub mod gauge;
pub mod header;
pub mod limits;
pub mod list;
pub mod monitor;
pub mod page;
pub mod pool;
pub mod request;
pub mod response;
pub mod tpc;
pub mod url;
mod wire;

/// The project's notes on the XRootD protocol (`xroot-proto/PROTOCOL.md`),
/// cited across the crates as `PROTOCOL.md §N.M`.
#[doc = ""]
#[doc = include_str!("../PROTOCOL.md")]
pub mod notes {}

pub use codes::{AttnAction, ErrorCode, RequestId, ResponseType, ServerType, Status};
pub use error::DecodeError;
pub use frame::{
    ClientMessage, LargeBody, RequestDecoder, RequestFrame, ResponseDecoder, ResponseFrame,
};
pub use header::{
    ClientHandshake, FHandle, RequestHeader, ResponseHeader, ServerHandshake, StreamId,
};
pub use list::ReadListEntry;

/// The README's samples, compiled and run as doctests (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
