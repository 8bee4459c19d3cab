//! Whole response frames, below the typed bodies: writing one around a body
//! (`dlen` filled in after), and reading one embedded in a body.

use bytes::{Bytes, BytesMut};

use crate::codes::Status;
use crate::error::DecodeError;
use crate::frame::ResponseFrame;
use crate::header::{ResponseHeader, StreamId, STATUS_BODY_LEN};

/// Appends a non-`kXR_status` frame: the header, then whatever `body`
/// writes, with `dlen` patched in afterwards.
pub(crate) fn encode_frame(
    streamid: StreamId,
    status: Status,
    buf: &mut BytesMut,
    body: impl FnOnce(&mut BytesMut),
) {
    let start = buf.len();
    ResponseHeader {
        streamid,
        status,
        dlen: 0,
    }
    .encode(buf);
    body(buf);
    let dlen = (buf.len() - start - ResponseHeader::LEN) as i32;
    buf[start + 4..start + ResponseHeader::LEN].copy_from_slice(&dlen.to_be_bytes());
}

/// Reads one complete frame that fills `b` exactly (a frame embedded in a
/// `kXR_attn` asynresp). For `kXR_status` the `bdy.dlen` data bytes count
/// as part of the frame, as on the wire.
pub(crate) fn frame_from_exact(b: Bytes, what: &'static str) -> Result<ResponseFrame, DecodeError> {
    let header = ResponseHeader::decode(&b)?;
    if header.dlen < 0 {
        return Err(DecodeError::NegativeLength {
            what,
            value: header.dlen as i64,
        });
    }
    let body = b.slice(ResponseHeader::LEN..);
    let mut expected = header.dlen as u64;
    if header.status == Status::STATUS && body.len() >= STATUS_BODY_LEN {
        let bdy = i32::from_be_bytes([body[12], body[13], body[14], body[15]]);
        if bdy < 0 {
            return Err(DecodeError::NegativeLength {
                what: "kXR_status bdy.dlen",
                value: bdy as i64,
            });
        }
        expected += bdy as u64;
    }
    let got = body.len() as u64;
    if got < expected {
        return Err(DecodeError::Truncated {
            what,
            expected,
            got,
        });
    }
    if got > expected {
        return Err(DecodeError::TrailingBytes {
            what,
            extra: got - expected,
        });
    }
    Ok(ResponseFrame { header, body })
}
