//! Typed responses: every status and the request-specific bodies (PROTOCOL.md §6–8).

/// `kXR_statusBodyLen`: bytes of the `kXR_status` body before its info.
pub const STATUS_BODY_LEN: usize = 16;
