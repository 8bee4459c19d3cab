//! The reference's gating of requests on a link, as pure rules
//! (XrdXrootdProtocol `Process2`; the order they are applied in is in
//! `conn.rs`): which requests name an open file and are served before the
//! authentication check, which take a path, what a refused frame is
//! answered with and whether the link survives it.

use xroot_proto::{DecodeError, ErrorCode, RequestHeader, RequestId};

/// The message of the pre-login refusal.
pub(super) const NOT_LOGGED_IN: &str = "Invalid request; user not logged in";

/// Requests served before the authentication check because they name an
/// open file (Process2's first switch), plus `kXR_pgreadv`.
pub(super) fn handle_based(h: &RequestHeader) -> bool {
    matches!(
        h.requestid,
        RequestId::READ
            | RequestId::READV
            | RequestId::PGREADV
            | RequestId::WRITE
            | RequestId::WRITEV
            | RequestId::PGREAD
            | RequestId::PGWRITE
            | RequestId::SYNC
            | RequestId::CLOSE
            | RequestId::CHKPOINT
            | RequestId::CLONE
    ) || (h.dlen == 0
        && matches!(
            h.requestid,
            RequestId::STAT | RequestId::TRUNCATE | RequestId::QUERY
        ))
}

/// Requests that take a path or text argument (Process2's last switches).
pub(super) fn path_based(id: RequestId) -> bool {
    matches!(
        id,
        RequestId::OPEN
            | RequestId::GPFILE
            | RequestId::CHMOD
            | RequestId::DIRLIST
            | RequestId::FATTR
            | RequestId::LOCATE
            | RequestId::MKDIR
            | RequestId::MV
            | RequestId::QUERY
            | RequestId::PREPARE
            | RequestId::RM
            | RequestId::RMDIR
            | RequestId::SET
            | RequestId::STAT
            | RequestId::STATX
            | RequestId::TRUNCATE
    )
}

/// The reference's answer to a frame the decoder refused: code, message and
/// whether the link survives (the frame is then skipped).
pub(super) fn frame_error(h: &RequestHeader, e: &DecodeError) -> (ErrorCode, &'static str, bool) {
    let vector = matches!(h.requestid, RequestId::READV | RequestId::PGREADV);
    match e {
        DecodeError::NegativeLength { .. } if h.dlen >= 0 => {
            (ErrorCode::ARG_INVALID, "Writev length is negative", false)
        }
        DecodeError::NegativeLength { .. } => {
            (ErrorCode::ARG_INVALID, "Invalid request data length", false)
        }
        DecodeError::LengthTooLarge {
            what: "kXR_writev element",
            ..
        } => (
            ErrorCode::NO_MEMORY,
            "Single writev transfer is too large",
            false,
        ),
        DecodeError::LengthTooLarge { .. } => (
            ErrorCode::ARG_TOO_LONG,
            "Request argument is too long",
            false,
        ),
        DecodeError::TooManyElements { .. } if vector => {
            (ErrorCode::ARG_TOO_LONG, "Read vector is too long", true)
        }
        DecodeError::TooManyElements { .. } => {
            (ErrorCode::ARG_TOO_LONG, "Write vector is too long", false)
        }
        DecodeError::Misaligned { .. } if vector => {
            (ErrorCode::ARG_INVALID, "Read vector is invalid", true)
        }
        _ => (ErrorCode::ARG_INVALID, "Write vector is invalid", false),
    }
}
