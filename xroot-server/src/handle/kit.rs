//! The handler kit: what every request's handler is given ([`Ctx`]: the
//! server, the session, the link, the files the request names as
//! admitted, its budgets and statistics), where a streaming answer goes
//! ([`Out`]), how a handler stops ([`Fail`]), and the small answers and
//! conversions all handlers share (`ok`, `err`, `offset`, [`fs_response`]).
//! It sits below the handlers, which sit below the dispatch table.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use xroot_proto::request::{Mode, OpenOptions};
use xroot_proto::response::{Redirect, Response, ServerError, Wait};
use xroot_proto::{ErrorCode, FHandle, RequestId, Status, StreamId};

use crate::admit::budget::{Budget, Share};
use crate::admit::files::{not_open, OpenFile};
use crate::admit::limit::{Limit, Slot};
use crate::admit::order::Ticket;
use crate::auth::Caller;
use crate::config::Config;
use crate::fs::{FileRegion, FileSystem, FsError, OpenMode};
use crate::net::writer::{Closed, LinkWriter};
use crate::observe::stats::{InFlight, Scope};
use crate::observe::{Outcome, RequestRecord};
use crate::session::Session;
use crate::shared::Shared;

/// Everything a request's handler may reach.
pub(crate) struct Ctx<F: FileSystem> {
    pub(crate) shared: Arc<Shared<F>>,
    pub(crate) session: Arc<Session<F>>,
    /// The link the request came on.
    pub(crate) link: LinkWriter,
    pub(crate) sid: StreamId,
    /// This server's address as the client reached it.
    pub(crate) local: SocketAddr,
    /// The link's vector-read limit.
    pub(crate) readv_limit: Limit,
    /// The link's statistics.
    pub(crate) stats: Arc<Scope>,
    /// The link's and the server's memory budget.
    pub(crate) budget: Budget,
    /// The files the request names, as admitted (`None`: not open).
    pub(crate) files: Vec<Admitted<F::File>>,
    /// The request's turn on each of them.
    pub(crate) tickets: Vec<Ticket>,
    /// The budget the request's payload holds.
    pub(crate) payload: Share,
    /// What the request's record for the observer counts.
    pub(crate) tally: Tally,
}

/// What a request's [`RequestRecord`] counts while it runs: when it was
/// decoded, the bytes of its payload, the bytes of file data sent.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    pub(crate) start: Instant,
    pub(crate) bytes_in: u64,
    /// `None` when the server has no observer: nothing is counted.
    pub(crate) bytes_out: Option<Arc<AtomicU64>>,
}

impl Tally {
    /// A tally from `start`; it counts the bytes sent only when `observed`
    /// (no allocation per request otherwise).
    pub(crate) fn new(start: Instant, bytes_in: usize, observed: bool) -> Tally {
        Tally {
            start,
            bytes_in: bytes_in as u64,
            bytes_out: observed.then(|| Arc::new(AtomicU64::new(0))),
        }
    }

    fn sent(&self, bytes: usize) {
        if let Some(n) = &self.bytes_out {
            n.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    }
}

/// A file handle a request names, and the open file it named when the
/// request was admitted (`None`: not open, or closing).
pub(crate) type Admitted<T> = (FHandle, Option<Arc<OpenFile<T>>>);

/// Why a handler stopped: a backend or request error to answer, or a link
/// that is gone.
#[derive(Debug)]
pub(crate) enum Fail {
    Fs(FsError),
    Gone,
}

impl From<FsError> for Fail {
    fn from(e: FsError) -> Fail {
        Fail::Fs(e)
    }
}

impl From<Closed> for Fail {
    fn from(_: Closed) -> Fail {
        Fail::Gone
    }
}

/// A `kXR_error` with `code` and `message`.
pub(crate) fn err(code: ErrorCode, message: impl Into<String>) -> FsError {
    FsError::new(code, message)
}

/// A `kXR_ok` whose body `encode` writes.
pub(crate) fn ok_with(encode: impl FnOnce(&mut BytesMut)) -> Response {
    let mut b = BytesMut::new();
    encode(&mut b);
    Response::Ok(b.freeze())
}

/// An empty `kXR_ok`.
pub(crate) fn ok() -> Response {
    Response::Ok(Bytes::new())
}

/// A file offset from the wire. Errors: `kXR_ArgInvalid` when negative.
pub(crate) fn offset(value: i64, what: &str) -> Result<u64, FsError> {
    u64::try_from(value)
        .map_err(|_| err(ErrorCode::ARG_INVALID, format!("{what} offset is negative")))
}

/// The answer to a backend error.
pub(crate) fn fs_response(e: FsError) -> Response {
    match e {
        FsError::Error { code, message } => Response::Error(ServerError::new(code, message)),
        FsError::Redirect { host, port, opaque } => {
            let r = Redirect::to_host(host, port);
            Response::Redirect(match opaque {
                Some(o) => r.with_opaque(o),
                None => r,
            })
        }
        FsError::Wait { seconds, message } => Response::Wait(Wait {
            seconds: seconds.min(i32::MAX as u32) as i32,
            message: message.into(),
        }),
    }
}

impl<F: FileSystem> Ctx<F> {
    pub(crate) fn fs(&self) -> &F {
        &self.shared.fs
    }

    /// Who the request is for, as the backend sees it.
    pub(crate) fn caller(&self) -> &Caller {
        self.session.caller()
    }

    pub(crate) fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The open file `fh`, as admitted for this request. Errors:
    /// `kXR_FileNotOpen` "`what` does not refer to an open file".
    pub(crate) fn file(&self, fh: FHandle, what: &str) -> Result<Arc<OpenFile<F::File>>, FsError> {
        self.files
            .iter()
            .find(|(h, _)| *h == fh)
            .and_then(|(_, f)| f.clone())
            .ok_or_else(|| not_open(what))
    }

    /// Where to answer a request naming `pathid`: this link for 0, else the
    /// bound substream. Errors: `kXR_ArgInvalid` "invalid path ID".
    pub(crate) fn out(&self, pathid: u8) -> Result<Out, FsError> {
        let link = match pathid {
            0 => self.link.clone(),
            p => self
                .session
                .stream(p)
                .ok_or_else(|| err(ErrorCode::ARG_INVALID, "invalid path ID"))?,
        };
        Ok(Out {
            link,
            sid: self.sid,
            budget: self.budget.clone(),
            sendfile_max: self.config().sendfile_max,
            tally: self.tally.clone(),
        })
    }

    /// Counts a request of `kind` in flight on this link and the server
    /// until the guard is dropped.
    pub(crate) fn in_flight(&self, kind: RequestId) -> InFlight {
        InFlight::enter(kind, &self.stats, &self.shared.monitor.stats)
    }

    /// Waits for room under the link's and the server's vector-read
    /// limits ([`crate::admit::limit`]).
    pub(crate) async fn vector_turn(&self) -> Slot {
        self.readv_limit.take().await
    }

    /// Counts the request's answer in the server's statistics and tells
    /// the server's observer, if any, that this request of `kind` on
    /// `path` ended with `outcome`.
    pub(crate) fn record(&self, kind: RequestId, path: Option<&str>, outcome: Outcome) {
        self.shared.monitor.answered(&outcome);
        let Some(observer) = &self.config().observer else {
            return;
        };
        let path = path.or_else(|| {
            self.files
                .iter()
                .find_map(|(_, f)| f.as_ref().map(|f| f.path.as_str()))
        });
        observer.finished(&RequestRecord {
            peer: self.caller().peer,
            user: &self.caller().identity.name,
            kind,
            path,
            outcome,
            duration: self.tally.start.elapsed(),
            bytes_in: self.tally.bytes_in,
            bytes_out: self
                .tally
                .bytes_out
                .as_ref()
                .map_or(0, |n| n.load(Ordering::Relaxed)),
        });
    }
}

/// The link a streaming answer goes to, with the request's streamid and
/// the budget its data is read within.
pub(crate) struct Out {
    link: LinkWriter,
    pub(crate) sid: StreamId,
    pub(crate) budget: Budget,
    sendfile_max: usize,
    tally: Tally,
}

impl Out {
    pub(crate) async fn send(&self, response: &Response) -> Result<(), Closed> {
        self.link.send(self.sid, response).await
    }

    /// A `kXR_ok` or `kXR_oksofar` with `data`, not copied; `share` is the
    /// budget `data` holds until written.
    pub(crate) async fn data(
        &self,
        status: Status,
        data: Bytes,
        share: Share,
    ) -> Result<(), Closed> {
        let len = data.len();
        self.link
            .send_data(self.sid, status, data, Some(share))
            .await?;
        self.tally.sent(len);
        Ok(())
    }

    /// Whether the link writes on a plain socket (not TLS).
    pub(crate) fn is_plain(&self) -> bool {
        self.link.is_plain()
    }

    /// Whether a read of `len` bytes answered here goes out with
    /// `sendfile(2)` (the link is plain, and `len` is within the server's
    /// [`crate::Config::sendfile_max`]).
    pub(crate) fn zero_copy(&self, len: usize) -> bool {
        len <= self.sendfile_max && self.is_plain()
    }

    /// A `kXR_ok` or `kXR_oksofar` with the bytes of `region`, sent
    /// straight from the file.
    pub(crate) async fn region(&self, status: Status, region: FileRegion) -> Result<(), Closed> {
        let len = region.len;
        self.link.send_region(self.sid, status, region).await?;
        self.tally.sent(len);
        Ok(())
    }

    /// The whole answer to a read of `want` bytes from `region`, if the
    /// link's queue has room now ([`LinkWriter::try_send_read`]).
    pub(crate) fn try_read(&self, region: FileRegion, want: usize) -> bool {
        let len = region.len;
        let sent = self.link.try_send_read(self.sid, region, want);
        if sent {
            self.tally.sent(len);
        }
        sent
    }

    /// Frames in parts, written one after the other, holding `share`;
    /// `data`: the bytes of file data in them, counted for the request's
    /// record once they are queued.
    pub(crate) async fn parts(
        &self,
        parts: Vec<Bytes>,
        data: usize,
        share: Option<Share>,
    ) -> Result<(), Closed> {
        self.link.send_parts(parts, share).await?;
        self.tally.sent(data);
        Ok(())
    }

    /// Frames already encoded for this streamid, holding `share`.
    pub(crate) async fn raw(&self, frames: BytesMut, share: Share) -> Result<(), Closed> {
        self.link
            .send_parts(vec![frames.freeze()], Some(share))
            .await
    }

    /// Sends the error of a failed `result` on this link.
    pub(crate) async fn finish(&self, result: Result<(), Fail>) -> Result<(), Fail> {
        match result {
            Err(Fail::Fs(e)) => Ok(self.send(&fs_response(e)).await?),
            other => other,
        }
    }
}

/// What a `kXR_open` asks of the backend, from its options and mode bits:
/// one derivation for the open itself and for the scope check
/// ([`crate::handle::scope_check`]). As do_Open: `kXR_open_read` makes it a read even
/// with update flags; `kXR_delete` without `kXR_new` truncates.
pub(crate) fn open_mode(opts: OpenOptions, mode: u16) -> OpenMode {
    let create_new = opts.contains(OpenOptions::NEW);
    let truncate = !create_new && opts.contains(OpenOptions::DELETE);
    let write = !opts.contains(OpenOptions::READ)
        && (opts.contains(OpenOptions::UPDATE)
            || opts.contains(OpenOptions::WRITE_ONLY)
            || create_new
            || truncate);
    OpenMode {
        write,
        create_new,
        truncate,
        // the reference's quirk: kXR_async also allows making the path
        make_path: (create_new || truncate)
            && (opts.contains(OpenOptions::MKPATH) || opts.contains(OpenOptions::ASYNC)),
        append: opts.contains(OpenOptions::APPEND),
        // as do_Open: mapMode (no write for others) plus owner read-write
        mode: posix_mode(Mode(mode)) | 0o600,
    }
}

/// The POSIX permission bits of a request's mode (`kXR_open`, `kXR_mkdir`,
/// `kXR_chmod`), as XrdXrootdProtocol's `mapMode` makes them: each bit of
/// `XOpenRequestMode` becomes its `S_I*` bit, except `kXR_ow`, which the
/// stock server drops (it never makes a file or directory writable by
/// others); bits outside `0o777` are dropped too.
pub(crate) fn posix_mode(mode: Mode) -> u32 {
    u32::from(mode.without(Mode::OW).0) & 0o777
}
