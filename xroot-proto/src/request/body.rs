//! [`RequestBody`]: what every typed request is, to decode it from a frame
//! and encode it whole.

use bytes::BytesMut;

use crate::codes::RequestId;
use crate::error::DecodeError;
use crate::frame::RequestFrame;
use crate::header::StreamId;

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
