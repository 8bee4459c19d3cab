//! Typed responses: every status and the request-specific bodies (PROTOCOL.md §6–8).
//!
//! A [`crate::frame::ResponseDecoder`] yields [`ResponseFrame`]s; [`Response::decode`]
//! turns one into a typed [`Response`] by its status. The body of a `kXR_ok`
//! (or of the `kXR_oksofar` chunks before it) is request-specific and is
//! parsed by the type for that request; every body type also encodes, so a
//! server builds its replies from the same code:
//!
//! | request | answer |
//! |---|---|
//! | `kXR_open` | [`OpenResponse`] |
//! | `kXR_stat`, `kXR_statx` | [`StatInfo`], [`StatVfs`], [`decode_statx`] |
//! | `kXR_dirlist` | [`DirList`] (over the joined chunks) |
//! | `kXR_readv` | [`ReadvIter`], [`ReadvEncoder`] |
//! | `kXR_pgread`, `kXR_pgreadv` | [`PgReadFrame`], [`PgReadEncoder`] (`kXR_status` frames) |
//! | `kXR_pgwrite` | [`PgWriteResponse`] (a `kXR_status` frame) |
//! | `kXR_query` | [`QconfigAnswer`], [`ChecksumAnswer`], [`SpaceInfo`] |
//! | `kXR_locate` | [`LocateResponse`] |
//! | `kXR_protocol`, `kXR_login`, `kXR_bind` | [`ProtocolResponse`], [`LoginResponse`], [`BindResponse`] |
//! | `kXR_fattr` | [`FattrReply`], [`FattrList`] |
//!
//! Decoded payloads are [`Bytes`] slices of the frame (no copy); text fields
//! are checked and parsed strictly, and anything that does not fit the
//! protocol's shape is a [`DecodeError`], never a panic.
//!
//! [`ResponseFrame`]: crate::frame::ResponseFrame
//! [`Bytes`]: bytes::Bytes
//! [`DecodeError`]: crate::error::DecodeError

mod attn;
mod bind;
mod dirlist;
mod error;
mod fattr;
mod framing;
mod locate;
mod login;
mod open;
mod pgread;
mod pgwrite;
mod protocol;
mod query;
mod readv;
mod redirect;
mod redirect_target;
mod stat;
mod status;
mod text;
mod typed;
mod wait;

#[cfg(test)]
mod tests;

pub use attn::Attn;
pub use bind::BindResponse;
pub use dirlist::{DirList, DirStatEntry, DirlistChecksum};
pub use error::ServerError;
pub use fattr::{FattrItem, FattrList, FattrReply};
pub use locate::{LocateAccess, LocateEntry, LocateNode, LocateResponse};
pub use login::{LoginResponse, SecProtocol};
pub use open::{OpenCompression, OpenResponse};
pub use pgread::{PgReadEncoder, PgReadExtent, PgReadFrame};
pub use pgwrite::{PgWriteCse, PgWriteResponse};
pub use protocol::{ProtocolFlags, ProtocolResponse, SecurityRequirements};
pub use query::{ChecksumAnswer, QconfigAnswer, SpaceInfo};
pub use readv::{readv_crc32c_matches, ReadvEncoder, ReadvIter};
pub use redirect::{Redirect, RedirectFlags, RedirectMode};
pub use redirect_target::RedirectError;
pub use stat::{decode_statx, encode_statx, StatExtended, StatFlags, StatInfo, StatVfs};
pub use status::StatusResponse;
pub use typed::Response;
pub use wait::{Wait, WaitResp};

// defined with the response header: the framing reads a `kXR_status`
// frame's length with it
#[doc(inline)]
pub use crate::header::STATUS_BODY_LEN;
