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
//!
//! [`RequestFrame`]: crate::frame::RequestFrame
//! [`BytesMut`]: bytes::BytesMut
//! [`DecodeError::Malformed`]: crate::error::DecodeError::Malformed

mod flags;
#[macro_use]
pub(crate) mod params;

mod body;
mod fattr;
mod file;
mod namespace;
mod query;
mod read;
mod session;
mod typed;
mod write;

#[cfg(test)]
mod tests;

pub use body::RequestBody;
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
pub use typed::Request;
pub use write::{Pgwrite, Write, WriteSegment, Writev, WritevOptions};
