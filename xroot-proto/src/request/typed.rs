//! [`Request`]: any request, typed by its request id.

use bytes::BytesMut;

use super::body::RequestBody;
use super::fattr::Fattr;
use super::file::{Chkpoint, CloneRanges, Close, Open, Sync, Truncate};
use super::namespace::{
    Chmod, Dirlist, Gpfile, Locate, Mkdir, Mv, Prepare, Rm, Rmdir, Stat, Statx,
};
use super::params;
use super::query::Query;
use super::read::{PgReadv, Pgread, Read, Readv};
use super::session::{Auth, Bind, Endsess, Login, Ping, Protocol, Set, Sigver};
use super::write::{Pgwrite, Write, Writev};
use crate::codes::RequestId;
use crate::error::DecodeError;
use crate::frame::RequestFrame;
use crate::header::StreamId;

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
