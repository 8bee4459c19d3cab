//! The record of each answered request and the observer that receives it
//! (see the module above).

use std::net::SocketAddr;
use std::time::Duration;

use xroot_proto::response::Response;
use xroot_proto::{ErrorCode, RequestId};

/// How a request was answered: the status of its final response frame
/// (XProtocol.hh `XResponseType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// `kXR_ok` (after any `kXR_oksofar` frames), or the last `kXR_status`
    /// of a `kXR_pgread`/`kXR_pgreadv`.
    #[doc(alias = "kXR_ok")]
    Ok,
    /// `kXR_error` with this code.
    #[doc(alias = "kXR_error")]
    Error(ErrorCode),
    /// `kXR_redirect`: the client was sent elsewhere.
    #[doc(alias = "kXR_redirect")]
    Redirect,
    /// `kXR_wait`: the client was told to ask again later.
    #[doc(alias = "kXR_wait")]
    Wait,
    /// The link closed before the answer was queued.
    Gone,
}

impl Outcome {
    /// The outcome a final response frame reports.
    pub(crate) fn of(response: &Response) -> Outcome {
        match response {
            Response::Error(e) => Outcome::Error(e.code),
            Response::Redirect(_) => Outcome::Redirect,
            Response::Wait(_) => Outcome::Wait,
            _ => Outcome::Ok,
        }
    }

    /// A short name for logs and metric labels: `ok`, `redirect`, `wait`,
    /// `gone`, or the error code's XProtocol.hh name without its `kXR_`
    /// prefix (`NotFound`, `IOError`, ...; `error` for a code this crate
    /// does not name).
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Redirect => "redirect",
            Outcome::Wait => "wait",
            Outcome::Gone => "gone",
            Outcome::Error(code) => code
                .protocol_name()
                .map(|n| n.strip_prefix("kXR_").unwrap_or(n))
                .unwrap_or("error"),
        }
    }
}

/// One request the server answered.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord<'a> {
    /// The client's address (its main link's).
    pub peer: SocketAddr,
    /// The session's user: the authenticated name, else the `kXR_login`
    /// user.
    pub user: &'a str,
    /// The request kind.
    pub kind: RequestId,
    /// The path the request names, or the path the file it names was
    /// opened with; `None` for requests without one (a `kXR_query` of
    /// statistics, say) or when the file handle named no open file.
    pub path: Option<&'a str>,
    /// How it was answered.
    pub outcome: Outcome,
    /// From the moment the request was decoded on the link to the moment
    /// its last frame was queued for the socket.
    pub duration: Duration,
    /// Bytes of the request's payload (the data of a write, the path of an
    /// open, ...), in bytes.
    pub bytes_in: u64,
    /// Bytes of file data the answer carried (reads, pgreads and vector
    /// reads; without frame headers, element headers or page crc32c); 0
    /// for answers without file data. Counted as each frame is queued: a
    /// request whose link closed first ([`Outcome::Gone`]) counts the
    /// frames queued before, not the one that found the link gone.
    pub bytes_out: u64,
}

/// Told about each request the server answered (see the module docs).
pub trait RequestObserver: Send + Sync + 'static {
    /// One request answered. Must not block.
    fn finished(&self, record: &RequestRecord<'_>);
}
