//! The cmsd protocol: how a data server, a manager and a redirector of an
//! XRootD cluster talk to each other (sans-IO, like the rest of this crate).
//!
//! A cluster is run by a *manager*: a stock `cmsd` that data servers log into
//! and a redirector (`xrootd`) asks where a file is. This module encodes and
//! decodes every message of that protocol; it does no I/O. Its wire facts come
//! from `src/XProtocol/YProtocol.hh` of xrootd (a protocol definition under a
//! licence that allows reimplementation) and the project's protocol notes;
//! where the installed xrootd 5.5.3 differs, its bytes win.
//!
//! - [`frame`]: the 8-byte header `{u32 streamid, u8 rrCode, u8 modifier,
//!   u16 datalen}` (big-endian) and an incremental frame decoder.
//! - [`pup`]: the tagged field encoding ("Pup") of the payloads.
//! - [`codes`]: request and response codes, login modes, select options,
//!   error codes, modifiers.
//! - [`message`]: a typed value for every request ([`CmsRequest`]) and every
//!   answer to a redirector ([`CmsResponse`]).
//!
//! # Example
//!
//! A data server answers a manager's `state` query for a file it holds:
//!
//! ```
//! use bytes::BytesMut;
//! use xroot_proto::cms::{CmsDecoder, CmsRequest, Have, State};
//!
//! // the manager asks (the streamid is its hash of the path)
//! let mut wire = BytesMut::new();
//! CmsRequest::State(State::new("/data/f.root")).encode(0x1234, &mut wire)?;
//!
//! // the data server decodes it and answers `have` with the same streamid
//! let frame = CmsDecoder::new().decode(&mut wire)?.expect("whole frame");
//! let CmsRequest::State(state) = CmsRequest::decode(&frame)? else { unreachable!() };
//! assert_eq!(&state.path[..], b"/data/f.root");
//! let mut reply = BytesMut::new();
//! CmsRequest::Have(Have::online(state.path)).encode(frame.header.streamid, &mut reply)?;
//! assert_eq!(&reply[..8], &[0, 0, 0x12, 0x34, 15, 0x21, 0, 13]);
//! # Ok::<(), xroot_proto::DecodeError>(())
//! ```

pub mod codes;
pub mod frame;
pub mod message;
pub mod pup;

pub use codes::{LoginMode, RespCode, RrCode, SelectOpts, YError, RAW, VERSION};
pub use frame::{CmsDecoder, CmsFrame, CmsHeader, HEADER_LEN, MAX_REQUEST_DLEN};
pub use message::{
    Avail, CmsRequest, CmsResponse, Forward, Have, Load, Login, PrepAdd, PrepDel, Select, State,
    Status, Try,
};
