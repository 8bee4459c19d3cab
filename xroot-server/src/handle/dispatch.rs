//! Running one request: its task, its handler and its answer.
//!
//! Every request that reaches here runs in a task of its own, so requests
//! on one link are processed concurrently (the link's and the server's
//! limits are taken before the task starts). A request that names open
//! files was admitted on them in arrival order before its task started
//! ([`crate::admit::order`]); the task first waits for its turn on each. Each frame
//! is queued whole on the link's writer; file data is read in pieces, each
//! within the memory budget ([`crate::admit::budget`]) until it is written.
//!
//! - Requests answered with one frame: if the handler has not finished
//!   after [`Config::waitresp_after`], the client gets `kXR_waitresp` and,
//!   when the handler finishes, the answer in a `kXR_attn` `kXR_asynresp`
//!   (PROTOCOL.md §8.4).
//! - read, readv, pgread, pgreadv and dirlist stream their frames
//!   (`kXR_oksofar` chunks or `kXR_status` frames) on the link their
//!   `pathid` names; a failure after some frames went out is a `kXR_error`
//!   on the same link, as in the reference.
//!
//! A backend's [`FsError`] becomes `kXR_error`, `kXR_redirect` or `kXR_wait`.
//!
//! [`Config::waitresp_after`]: crate::Config::waitresp_after

use std::ops::Range;

use bytes::Bytes;
use xroot_proto::request::Request;
use xroot_proto::response::{Attn, Response, WaitResp};
use xroot_proto::{DecodeError, ErrorCode, FHandle, RequestHeader, RequestId, StreamId};

use super::kit::{err, fs_response, ok, Ctx, Fail};
use super::{fattr, file_requests as io, namespace, query, readv, scope_check as guard, tpc};
use crate::admit::order::{Access, Ticket};
use crate::fs::{FileSystem, FsError};
use crate::net::writer::Closed;
use crate::observe::monitor::RedirectRecord;
use crate::observe::Outcome;

/// Runs one request to its last frame, once it has its turn on every file
/// it names; tells the server's observer how it ended.
pub(crate) async fn run<F: FileSystem>(mut ctx: Ctx<F>, request: Request) {
    let kind = request.id();
    // the path is made once, for the observer and for a redirect's record
    let op = match ctx.config().monitor {
        Some(_) => Watch::op(&request),
        None => None,
    };
    let path = if ctx.config().observer.is_some() || op.is_some() {
        path_of(&request)
    } else {
        None
    };
    let watch = op.zip(path.as_deref()).map(|(op, path)| Watch { op, path });
    let outcome = run_request(&mut ctx, request, watch.as_ref()).await;
    ctx.record(kind, path.as_deref(), outcome);
}

/// What the monitor is told when a request is redirected: the redirect
/// stream's operation and the path the request named (without its CGI).
struct Watch<'a> {
    op: u8,
    path: &'a str,
}

impl Watch<'_> {
    /// The operation of a request a redirector may redirect, as the stock
    /// names it (`XROOTD_MON_*`; an open with `kXR_new` creates, one with
    /// `kXR_delete` alone writes, as the stock 5.5.3's records say); `None`
    /// for the others.
    fn op(request: &Request) -> Option<u8> {
        use xroot_proto::monitor::redir::op;
        let op = match request {
            Request::Open(r) => {
                let mode = super::kit::open_mode(r.options, r.mode.0);
                if mode.create_new {
                    op::OPENC
                } else if mode.write || mode.append || mode.truncate {
                    op::OPENW
                } else {
                    op::OPENR
                }
            }
            Request::Stat(_) => op::STAT,
            Request::Dirlist(_) => op::OPENDIR,
            Request::Mkdir(_) => op::MKDIR,
            Request::Rm(_) => op::RM,
            Request::Rmdir(_) => op::RMDIR,
            Request::Mv(_) => op::MV,
            Request::Chmod(_) => op::CHMOD,
            Request::Truncate(_) => op::TRUNC,
            Request::Locate(_) => op::LOCATE,
            _ => return None,
        };
        Some(op)
    }
}

/// The answer to a backend error; a redirect of a watched request is told
/// to the server's monitor first ([`MonitorObserver::redirect`]).
///
/// [`MonitorObserver::redirect`]: crate::observe::monitor::MonitorObserver::redirect
fn error_answer<F: FileSystem>(ctx: &Ctx<F>, watch: Option<&Watch<'_>>, e: FsError) -> Response {
    if let (Some(w), FsError::Redirect { host, port, .. }, Some(m)) =
        (watch, &e, &ctx.config().monitor)
    {
        m.redirect(&RedirectRecord {
            user_id: ctx.session.monitor().map_or(0, |s| s.user_id),
            op: w.op,
            host,
            port: *port,
            path: w.path,
        });
    }
    fs_response(e)
}

async fn run_request<F: FileSystem>(
    ctx: &mut Ctx<F>,
    request: Request,
    watch: Option<&Watch<'_>>,
) -> Outcome {
    if !ctx.tickets.iter().all(Ticket::is_ready) {
        ctx.payload.release_server();
    }
    for t in &mut ctx.tickets {
        t.ready().await;
    }
    let ctx = &*ctx;
    if let Err(e) = guard::check(ctx, &request).await {
        return send_final(ctx, &fs_response(e)).await;
    }
    let streamed = match request {
        Request::Read(r) => io::read(ctx, r).await,
        Request::Pgread(r) => io::pgread(ctx, r).await,
        Request::Readv(r) => readv::readv(ctx, r).await,
        Request::PgReadv(r) => readv::pgreadv(ctx, r).await,
        Request::Dirlist(r) => namespace::dirlist(ctx, r).await,
        other => return single(ctx, other, watch).await,
    };
    match streamed {
        Ok(()) => Outcome::Ok,
        Err(Fail::Fs(e)) => send_final(ctx, &error_answer(ctx, watch, e)).await,
        Err(Fail::Gone) => Outcome::Gone,
    }
}

/// Sends a request's final frame; its outcome.
async fn send_final<F: FileSystem>(ctx: &Ctx<F>, response: &Response) -> Outcome {
    match ctx.link.send(ctx.sid, response).await {
        Ok(()) => Outcome::of(response),
        Err(Closed) => Outcome::Gone,
    }
}

/// The path a request names (without its CGI), for its record.
pub(crate) fn path_of(request: &Request) -> Option<String> {
    let mv;
    let path: &[u8] = match request {
        Request::Open(r) => &r.path,
        Request::Stat(r) => &r.path,
        Request::Mkdir(r) => &r.path,
        Request::Rm(r) => &r.path,
        Request::Rmdir(r) => &r.path,
        Request::Mv(r) => {
            mv = r.paths().ok()?.0;
            &mv
        }
        Request::Chmod(r) => &r.path,
        Request::Locate(r) => &r.path,
        Request::Truncate(r) => &r.path,
        Request::Dirlist(r) => &r.path,
        Request::Fattr(r) => &r.path,
        _ => return None,
    };
    let path = String::from_utf8_lossy(path);
    let path = path.split_once('?').map_or(&*path, |(p, _)| p);
    (!path.is_empty()).then(|| path.to_owned())
}

/// Runs a request answered with one frame, deferring the answer with
/// `kXR_waitresp` when the handler is slow; its outcome.
async fn single<F: FileSystem>(
    ctx: &Ctx<F>,
    request: Request,
    watch: Option<&Watch<'_>>,
) -> Outcome {
    let after = match &request {
        Request::Sync(r)
            if ctx
                .file(r.fhandle, "sync")
                .is_ok_and(|f| tpc::sync_waits(&f)) =>
        {
            std::time::Duration::ZERO
        }
        _ => ctx.config().waitresp_after,
    };
    let answer = answer(ctx, request);
    tokio::pin!(answer);
    let now = tokio::time::timeout(after, &mut answer).await;
    let to_frame = |r: Result<Response, FsError>| r.unwrap_or_else(|e| error_answer(ctx, watch, e));
    match now {
        Ok(r) => send_final(ctx, &to_frame(r)).await,
        Err(_) => {
            let wait = WaitResp {
                seconds: ctx.config().waitresp_seconds.min(i32::MAX as u32) as i32,
                message: Bytes::new(),
            };
            if ctx
                .link
                .send(ctx.sid, &Response::WaitResp(wait))
                .await
                .is_err()
            {
                return Outcome::Gone;
            }
            let response = to_frame(answer.await);
            let outcome = Outcome::of(&response);
            let attn = Attn::AsynResp {
                streamid: ctx.sid,
                response: Box::new(response),
            };
            match ctx.link.send(StreamId::ZERO, &Response::Attn(attn)).await {
                Ok(()) => outcome,
                Err(Closed) => Outcome::Gone,
            }
        }
    }
}

/// The handler of each request answered with one frame.
async fn answer<F: FileSystem>(ctx: &Ctx<F>, request: Request) -> Result<Response, FsError> {
    let unsupported = |what: &str| err(ErrorCode::UNSUPPORTED, format!("{what} is not supported"));
    match request {
        Request::Open(r) => io::open(ctx, r).await,
        Request::Close(r) => io::close(ctx, r).await,
        Request::Write(r) => io::write(ctx, r).await,
        Request::Pgwrite(r) => io::pgwrite(ctx, r).await,
        Request::Writev(r) => io::writev(ctx, r).await,
        Request::Sync(r) => io::sync(ctx, r).await,
        Request::Truncate(r) => io::truncate(ctx, r).await,
        Request::Stat(r) => namespace::stat(ctx, r).await,
        Request::Statx(r) => namespace::statx(ctx, r).await,
        Request::Mkdir(r) => namespace::mkdir(ctx, r).await,
        Request::Rm(r) => namespace::rm(ctx, r).await,
        Request::Rmdir(r) => namespace::rmdir(ctx, r).await,
        Request::Mv(r) => namespace::mv(ctx, r).await,
        Request::Chmod(r) => namespace::chmod(ctx, r).await,
        Request::Locate(r) => namespace::locate(ctx, r).await,
        Request::Prepare(_) => Ok(ok()),
        Request::Set(r) => namespace::set(r),
        Request::Query(r) => query::query(ctx, r).await,
        Request::Fattr(r) => fattr::fattr(ctx, r).await,
        Request::Gpfile(_) => Err(unsupported("gpfile request")),
        Request::Chkpoint(_) => Err(unsupported("chkpoint request")),
        Request::Clone(_) => Err(unsupported("clone request")),
        _ => Err(err(ErrorCode::INVALID_REQUEST, "Invalid request code")),
    }
}

/// Checks the reference makes on the header before reading a request:
/// `(code, message, close the link)`.
pub(crate) fn precheck(h: &RequestHeader) -> Option<(ErrorCode, &'static str, bool)> {
    (h.requestid == RequestId::PGWRITE && h.dlen <= 4).then_some((
        ErrorCode::ARG_INVALID,
        "pgwrite length is invalid",
        true,
    ))
}

/// The reference's answer to a request whose payload does not decode:
/// `(code, message, close the link)`.
pub(crate) fn decode_error(id: RequestId, e: &DecodeError) -> (ErrorCode, String, bool) {
    use DecodeError as D;
    let (code, message, close) = match (id, e) {
        (RequestId::READV | RequestId::PGREADV, D::TooManyElements { .. }) => {
            (ErrorCode::ARG_TOO_LONG, "Read vector is too long", false)
        }
        (RequestId::READV | RequestId::PGREADV, D::NegativeLength { .. }) => {
            (ErrorCode::ARG_INVALID, "Readv length is negative", false)
        }
        (RequestId::READV, D::ReadvElementTooLarge { .. }) => (
            ErrorCode::NO_MEMORY,
            "Single readv transfer is too large",
            false,
        ),
        (RequestId::READV, D::ReadvTotalTooLarge { .. }) => (
            ErrorCode::NO_MEMORY,
            "Total readv transfer is too large",
            false,
        ),
        (RequestId::READV | RequestId::PGREADV, _) => {
            (ErrorCode::ARG_INVALID, "Read vector is invalid", false)
        }
        (RequestId::READ, _) => (
            ErrorCode::ARG_INVALID,
            "Invalid length for read ahead list",
            false,
        ),
        (RequestId::PGWRITE, _) => (ErrorCode::ARG_INVALID, "pgwrite length is invalid", true),
        (RequestId::WRITEV, _) => (ErrorCode::ARG_INVALID, "Write vector is invalid", true),
        (RequestId::MV, D::Malformed { .. }) => {
            (ErrorCode::ARG_MISSING, "new path specified for mv", false)
        }
        (RequestId::MV, _) => (ErrorCode::ARG_INVALID, "invalid path specification", false),
        (RequestId::FATTR, D::TooManyElements { .. }) => {
            (ErrorCode::ARG_INVALID, "fattr numattr is invalid", false)
        }
        (RequestId::FATTR, D::LengthTooLarge { .. }) => {
            (ErrorCode::ARG_TOO_LONG, "fattr argument is too long", false)
        }
        (RequestId::FATTR, D::TrailingBytes { .. }) => (
            ErrorCode::BAD_PAYLOAD,
            "fattr request has extra data",
            false,
        ),
        _ => return (ErrorCode::ARG_INVALID, e.to_string(), false),
    };
    (code, message.to_string(), close)
}

/// The open files `request` names and what it does to each, for its
/// admission in arrival order ([`crate::admit::order`]). A vector request counts
/// as one access per file, over the span of its elements on that file.
pub(crate) fn accesses(request: &Request) -> Vec<(FHandle, Access)> {
    fn span(offset: i64, len: u64) -> Range<u64> {
        match u64::try_from(offset) {
            Ok(at) => at..at.saturating_add(len),
            Err(_) => 0..u64::MAX,
        }
    }
    fn spans(
        items: impl Iterator<Item = (FHandle, i64, u64)>,
        access: fn(Range<u64>) -> Access,
    ) -> Vec<(FHandle, Access)> {
        let mut out: Vec<(FHandle, Range<u64>)> = Vec::new();
        for (fh, offset, len) in items {
            let r = span(offset, len);
            match out.iter_mut().find(|(h, _)| *h == fh) {
                Some((_, s)) => *s = s.start.min(r.start)..s.end.max(r.end),
                None => out.push((fh, r)),
            }
        }
        out.into_iter().map(|(fh, r)| (fh, access(r))).collect()
    }
    let len = |n: i32| n.max(0) as u64;
    match request {
        Request::Read(r) => {
            let mut out = vec![(r.fhandle, Access::Read(span(r.offset, len(r.rlen))))];
            for e in r.args.iter().flat_map(|a| &a.preread) {
                if !out.iter().any(|(h, _)| *h == e.fhandle) {
                    out.push((e.fhandle, Access::Lookup));
                }
            }
            out
        }
        Request::Pgread(r) => vec![(r.fhandle, Access::Read(span(r.offset, len(r.rlen))))],
        Request::Readv(r) => spans(
            r.list.iter().map(|e| (e.fhandle, e.offset, len(e.rlen))),
            Access::Read,
        ),
        Request::PgReadv(r) => spans(
            r.list.iter().map(|e| (e.fhandle, e.offset, len(e.rlen))),
            Access::Read,
        ),
        Request::Write(r) => vec![(
            r.fhandle,
            Access::Write(span(r.offset, r.data.len() as u64)),
        )],
        // the payload's length bounds the data's (it adds the crcs)
        Request::Pgwrite(r) => vec![(
            r.fhandle,
            Access::Write(span(r.offset, r.payload.len() as u64)),
        )],
        Request::Writev(r) => spans(
            r.segments
                .iter()
                .map(|s| (s.fhandle, s.offset, s.data.len() as u64)),
            Access::Write,
        ),
        Request::Sync(r) => vec![(r.fhandle, Access::Flush)],
        Request::Close(r) => vec![(r.fhandle, Access::Close)],
        Request::Truncate(r) if r.path.is_empty() => vec![(r.fhandle, Access::Barrier)],
        Request::Stat(r) if r.path.is_empty() => vec![(r.fhandle, Access::Flush)],
        Request::Query(r) if r.args.is_empty() => vec![(r.fhandle, Access::Lookup)],
        Request::Fattr(r) if r.path.is_empty() => vec![(r.fhandle, Access::Lookup)],
        Request::Chkpoint(r) => vec![(r.fhandle, Access::Barrier)],
        _ => Vec::new(),
    }
}
