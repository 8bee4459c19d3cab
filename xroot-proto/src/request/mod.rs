//! Typed requests: one struct per request id 3000–3032 and the `kXR_pgreadv`
//! extension 3033 (PROTOCOL.md §4–7, `Client*Request` in XProtocol.hh).
//!
//! Every type implements [`RequestBody`]: `decode` reads a
//! [`RequestFrame`] from [`crate::frame::RequestDecoder`], `encode` appends
//! the whole request (24-byte header with its `dlen`, then the payload) to a
//! [`BytesMut`]. [`Request`] is the sum of them all, with
//! [`Request::Unknown`] for an id this crate does not know.
//!
//! - session: [`Protocol`], [`Login`], [`Auth`], [`Bind`], [`Endsess`],
//!   [`Ping`], [`Set`], [`Sigver`];
//! - files: [`Open`], [`Close`], [`Sync`], [`Truncate`], [`Chkpoint`],
//!   [`CloneRanges`];
//! - reads: [`Read`], [`Readv`], [`Pgread`], [`PgReadv`] (extension);
//! - writes: [`Write`], [`Pgwrite`], [`Writev`];
//! - namespace: [`Chmod`], [`Dirlist`], [`Mkdir`], [`Mv`], [`Rm`], [`Rmdir`],
//!   [`Stat`], [`Statx`], [`Locate`], [`Prepare`], [`Gpfile`];
//! - [`Query`] and [`Fattr`].
//!
//! **Payloads are not copied.** Paths, text, credentials and data are
//! [`Bytes`](bytes::Bytes) slices of the frame; they are sent without a
//! trailing NUL (the server adds its own, PROTOCOL.md §1), except `kXR_query`
//! arguments, which the stock clients NUL-terminate ([`Query::args`]). Text accessors
//! (`path_str` and the like) check UTF-8 and return
//! [`DecodeError::Malformed`] if it is not.
//!
//! **What decoding checks.** The request id, every length and count the
//! payload carries (list sizes, the readv limits, the fattr limits, writev
//! data, page geometry) and that a structured payload has no trailing bytes.
//! It does not check what the reference server checks against its own state
//! or policy (`dlen == 0` where a path is needed, `rlen <= 0`, an empty
//! readv); where a check is cheap and purely structural, a method offers it
//! (e.g. [`Readv::check_not_empty`]). Reserved bytes are ignored on decode
//! and written as zero. A payload sent with a request that takes none (ping,
//! close, bind…) is ignored, as the reference server ignores it.

use bytes::BytesMut;

use crate::codes::RequestId;
use crate::error::DecodeError;
use crate::frame::RequestFrame;
use crate::header::StreamId;

mod flags;
#[macro_use]
pub(crate) mod params;

mod fattr;
mod file;
mod namespace;
mod query;
mod read;
mod session;
mod write;

#[cfg(test)]
mod tests;

pub use fattr::{Fattr, FattrOptions, FattrSubcode};
pub use file::{
    Chkpoint, ChkpointOp, CloneEntry, CloneRanges, Close, Open, OpenOptionT, OpenOptions, Sync,
    Truncate,
};
pub use flags::Mode;
pub use namespace::{
    Chmod, Dirlist, DirlistOptions, Gpfile, Locate, LocateOptions, Mkdir, MkdirOptions, Mv,
    Prepare, PrepareOptions, PrepareOptionsX, Rm, Rmdir, Stat, StatOptions, StatWants, Statx,
};
pub use query::{Query, QueryCode};
pub use read::{
    validate_pgreadv, PgReadArgs, PgReadv, PgReqFlags, Pgread, Read, ReadArgs, Readv, ReadvFlags,
};
pub use session::{
    Auth, Bind, Capver, Endsess, Expect, Login, LoginAbility, LoginAbility2, Ping, Protocol,
    ProtocolFlags, Set, Sigver, SigverCrypto, SigverFlags,
};
pub use write::{Pgwrite, Write, WriteSegment, Writev, WritevOptions};

/// A typed request body: the fields of one request id's parameter area and
/// payload.
pub trait RequestBody: Sized {
    /// The request id this type encodes and decodes.
    const ID: RequestId;

    /// Decodes from a whole frame (as returned by
    /// [`crate::frame::RequestDecoder`]); payload fields are slices of
    /// `frame.payload` (or `frame.data` for `kXR_writev`), not copies.
    ///
    /// Errors: [`DecodeError::WrongKind`] if `frame.header.requestid` is not
    /// [`Self::ID`]; otherwise the errors each type documents.
    fn decode(frame: &RequestFrame) -> Result<Self, DecodeError>;

    /// Appends the whole request to `buf`: the 24-byte header (with `dlen`
    /// set from the payload), the payload and, for `kXR_writev`, the data
    /// after the list.
    ///
    /// # Panics
    /// If the payload exceeds `i32::MAX` bytes (it cannot be framed).
    fn encode(&self, streamid: StreamId, buf: &mut BytesMut);
}

/// Defines [`Request`] and its conversions from the variant list.
macro_rules! requests {
    ($( $(#[$vmeta:meta])* $variant:ident($ty:ty) = $id:ident, )*) => {
        /// Any request: one variant per request id, or the raw frame for an id
        /// this crate does not know.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Request {
            $( $(#[$vmeta])* #[doc = concat!("[`RequestId::", stringify!($id), "`].")] $variant($ty), )*
            /// A request id outside this list, kept whole; it re-encodes
            /// byte-identically (with the same stream id).
            Unknown(RequestFrame),
        }

        impl Request {
            /// The request id.
            pub fn id(&self) -> RequestId {
                match self {
                    $( Request::$variant(_) => RequestId::$id, )*
                    Request::Unknown(f) => f.header.requestid,
                }
            }

            /// Decodes a frame by its request id; an unknown id gives
            /// [`Request::Unknown`]. Errors: those of the matching type's
            /// [`RequestBody::decode`].
            pub fn decode(frame: RequestFrame) -> Result<Request, DecodeError> {
                Ok(match frame.header.requestid {
                    $( RequestId::$id => Request::$variant(<$ty>::decode(&frame)?), )*
                    _ => Request::Unknown(frame),
                })
            }

            /// Appends the whole request to `buf` (see [`RequestBody::encode`]).
            /// An unknown request is written as received, with `streamid`
            /// and a `dlen` of its payload.
            pub fn encode(&self, streamid: StreamId, buf: &mut BytesMut) {
                match self {
                    $( Request::$variant(r) => r.encode(streamid, buf), )*
                    Request::Unknown(f) => {
                        params::put_header(
                            buf,
                            streamid,
                            f.header.requestid,
                            params::Params::from_raw(f.header.params),
                            f.payload.len(),
                        );
                        buf.extend_from_slice(&f.payload);
                        buf.extend_from_slice(&f.data);
                    }
                }
            }
        }

        $(
            impl From<$ty> for Request {
                fn from(r: $ty) -> Request {
                    Request::$variant(r)
                }
            }
        )*
    };
}

requests! {
    Auth(Auth) = AUTH,
    Query(Query) = QUERY,
    Chmod(Chmod) = CHMOD,
    Close(Close) = CLOSE,
    Dirlist(Dirlist) = DIRLIST,
    Gpfile(Gpfile) = GPFILE,
    Protocol(Protocol) = PROTOCOL,
    Login(Login) = LOGIN,
    Mkdir(Mkdir) = MKDIR,
    Mv(Mv) = MV,
    Open(Open) = OPEN,
    Ping(Ping) = PING,
    Chkpoint(Chkpoint) = CHKPOINT,
    Read(Read) = READ,
    Rm(Rm) = RM,
    Rmdir(Rmdir) = RMDIR,
    Sync(Sync) = SYNC,
    Stat(Stat) = STAT,
    Set(Set) = SET,
    Write(Write) = WRITE,
    Fattr(Fattr) = FATTR,
    Prepare(Prepare) = PREPARE,
    Statx(Statx) = STATX,
    Endsess(Endsess) = ENDSESS,
    Bind(Bind) = BIND,
    Readv(Readv) = READV,
    Pgwrite(Pgwrite) = PGWRITE,
    Locate(Locate) = LOCATE,
    Truncate(Truncate) = TRUNCATE,
    Sigver(Sigver) = SIGVER,
    Pgread(Pgread) = PGREAD,
    Writev(Writev) = WRITEV,
    Clone(CloneRanges) = CLONE,
    /// **Extension** (not in stock xrootd), see [`crate::ext`].
    PgReadv(PgReadv) = PGREADV,
}
