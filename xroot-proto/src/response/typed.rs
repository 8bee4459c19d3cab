//! [`Response`]: one server response, typed by its status.

use bytes::{BufMut, Bytes, BytesMut};

use super::attn::Attn;
use super::error::ServerError;
use super::framing::encode_frame;
use super::redirect::Redirect;
use super::status::StatusResponse;
use super::wait::{Wait, WaitResp};
use crate::codes::{ResponseType, Status};
use crate::error::DecodeError;
use crate::frame::ResponseFrame;
use crate::header::{ResponseHeader, StreamId};

/// One server response, typed by its status (PROTOCOL.md §8.1).
///
/// Bodies are slices of the decoded frame. The variants that end a request
/// (and free its streamid) are the ones [`Response::is_final`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// `kXR_ok`: the final (or only) body; its layout depends on the request.
    #[doc(alias = "kXR_ok")]
    Ok(Bytes),
    /// `kXR_oksofar`: a partial body; more frames follow for the same streamid.
    #[doc(alias = "kXR_oksofar")]
    OkSoFar(Bytes),
    /// `kXR_attn`: an unsolicited message or a deferred response.
    #[doc(alias = "kXR_attn")]
    Attn(Attn),
    /// `kXR_authmore`: opaque security-protocol data; answer with another
    /// `kXR_auth` (PROTOCOL.md §8.5).
    #[doc(alias = "kXR_authmore")]
    AuthMore(Bytes),
    /// `kXR_error`: an error code and message.
    #[doc(alias = "kXR_error")]
    Error(ServerError),
    /// `kXR_redirect`: go elsewhere.
    #[doc(alias = "kXR_redirect")]
    Redirect(Redirect),
    /// `kXR_wait`: resend the same request after a delay.
    #[doc(alias = "kXR_wait")]
    Wait(Wait),
    /// `kXR_waitresp`: the answer will come later in a `kXR_attn` asynresp.
    #[doc(alias = "kXR_waitresp")]
    WaitResp(WaitResp),
    /// `kXR_status`: a checksummed status body with info and data
    /// (pgread, pgwrite).
    #[doc(alias = "kXR_status")]
    Status(StatusResponse),
    /// A status this crate does not know, kept whole so it can be logged or
    /// passed on.
    Unknown(ResponseFrame),
}

impl Response {
    /// Types a frame by its status.
    ///
    /// Errors: those of the body decoders ([`ServerError::decode`],
    /// [`Redirect::decode`], [`Wait::decode`], [`WaitResp::decode`],
    /// [`Attn::decode`], [`StatusResponse::decode`]), e.g.
    /// [`DecodeError::Truncated`] for an error body under 4 bytes or
    /// [`DecodeError::StatusCrc`] for a corrupted `kXR_status`.
    pub fn decode(frame: ResponseFrame) -> Result<Response, DecodeError> {
        Ok(match frame.header.status {
            Status::OK => Response::Ok(frame.body),
            Status::OKSOFAR => Response::OkSoFar(frame.body),
            Status::ATTN => Response::Attn(Attn::decode(frame.body)?),
            Status::AUTHMORE => Response::AuthMore(frame.body),
            Status::ERROR => Response::Error(ServerError::decode(frame.body)?),
            Status::REDIRECT => Response::Redirect(Redirect::decode(frame.body)?),
            Status::WAIT => Response::Wait(Wait::decode(frame.body)?),
            Status::WAITRESP => Response::WaitResp(WaitResp::decode(frame.body)?),
            Status::STATUS => Response::Status(StatusResponse::decode(&frame.header, frame.body)?),
            _ => Response::Unknown(frame),
        })
    }

    /// Appends the whole frame (header included) answering `streamid` to
    /// `buf`. An [`Response::Unknown`] frame is written with `streamid` in
    /// place of its own.
    pub fn encode(&self, streamid: StreamId, buf: &mut BytesMut) {
        match self {
            Response::Ok(b) | Response::OkSoFar(b) | Response::AuthMore(b) => {
                encode_frame(streamid, self.status(), buf, |buf| buf.put_slice(b))
            }
            Response::Attn(a) => encode_frame(streamid, Status::ATTN, buf, |buf| a.encode(buf)),
            Response::Error(e) => encode_frame(streamid, Status::ERROR, buf, |buf| e.encode(buf)),
            Response::Redirect(r) => {
                encode_frame(streamid, Status::REDIRECT, buf, |buf| r.encode(buf))
            }
            Response::Wait(w) => encode_frame(streamid, Status::WAIT, buf, |buf| w.encode(buf)),
            Response::WaitResp(w) => {
                encode_frame(streamid, Status::WAITRESP, buf, |buf| w.encode(buf))
            }
            Response::Status(s) => s.encode(streamid, buf),
            Response::Unknown(f) => {
                ResponseHeader {
                    streamid,
                    ..f.header
                }
                .encode(buf);
                buf.put_slice(&f.body);
            }
        }
    }

    /// The wire status of this response.
    pub fn status(&self) -> Status {
        match self {
            Response::Ok(_) => Status::OK,
            Response::OkSoFar(_) => Status::OKSOFAR,
            Response::Attn(_) => Status::ATTN,
            Response::AuthMore(_) => Status::AUTHMORE,
            Response::Error(_) => Status::ERROR,
            Response::Redirect(_) => Status::REDIRECT,
            Response::Wait(_) => Status::WAIT,
            Response::WaitResp(_) => Status::WAITRESP,
            Response::Status(_) => Status::STATUS,
            Response::Unknown(f) => f.header.status,
        }
    }

    /// Whether this response ends its request, so that the streamid may be
    /// reused (PROTOCOL.md §9): `kXR_ok`, `kXR_error`, `kXR_redirect`,
    /// `kXR_authmore` (the client continues with a new `kXR_auth`) and a
    /// `kXR_status` whose `resptype` is `kXR_FinalResult`. Not `kXR_oksofar`,
    /// `kXR_wait`, `kXR_waitresp` or a partial/progress status. A `kXR_attn`
    /// answers no request of its own: judge the response embedded in an
    /// asynresp instead. An unknown status is never taken as final.
    pub fn is_final(&self) -> bool {
        match self {
            Response::Ok(_)
            | Response::Error(_)
            | Response::Redirect(_)
            | Response::AuthMore(_) => true,
            Response::Status(s) => s.resptype == ResponseType::FINAL,
            Response::OkSoFar(_)
            | Response::Attn(_)
            | Response::Wait(_)
            | Response::WaitResp(_)
            | Response::Unknown(_) => false,
        }
    }
}
