//! The one response driver every request goes through (PROTOCOL.md §8, §9,
//! §12.2): it sends the request, collects `kXR_oksofar` chunks or
//! `kXR_status` frames until the final response, resends after `kXR_wait`,
//! waits out `kXR_waitresp` for its `kXR_attn` asynresp, follows
//! `kXR_redirect` (to another channel whenever the channel key differs) up
//! to the hop limit, retries at the load balancer with `tried=` and
//! `triedrc=` after the errors the reference retries, and turns `kXR_error` into
//! [`Error::Server`]. The whole exchange runs under the request deadline
//! ([`Deadline`]); when it passes while an answer is awaited, the link
//! hears of it ([`InFlight::expire`]), and drops itself if a frame it can
//! no longer finish blocks its stream.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
// tokio's clock, as the links' timers
use tokio::time::Instant;
use xroot_proto::limits::READ_LIST_LEN;
use xroot_proto::request::{OpenOptions, QueryCode, Request};
use xroot_proto::response::{Redirect, RedirectError, Response, StatusResponse};
use xroot_proto::url::Url;
use xroot_proto::{page, DecodeError, ErrorCode, RequestId};

use crate::channel::{InFlight, Link};
use crate::config::Config;
use crate::dialer::Dialer;
use crate::error::{Error, Result};
use crate::key::ChannelKey;

/// The final answer to a request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// The bodies of the `kXR_oksofar` frames and the final `kXR_ok`, in order.
    Data(Vec<Bytes>),
    /// The `kXR_status` frames, the Final one last.
    Status(Vec<StatusResponse>),
}

impl Reply {
    /// The data as one buffer (no copy when it came in one frame).
    /// Errors: [`Error::UnexpectedResponse`] for a status reply.
    pub(crate) fn into_bytes(self, id: RequestId) -> Result<Bytes> {
        match self {
            Reply::Data(mut chunks) if chunks.len() == 1 => Ok(chunks.pop().unwrap()),
            Reply::Data(chunks) => Ok(chunks.concat().into()),
            Reply::Status(_) => Err(Error::unexpected(id, "a kXR_status reply")),
        }
    }

    /// The data as the frames brought it, not joined.
    /// Errors: [`Error::UnexpectedResponse`] for a status reply.
    pub(crate) fn into_parts(self, id: RequestId) -> Result<Vec<Bytes>> {
        match self {
            Reply::Data(chunks) => Ok(chunks),
            Reply::Status(_) => Err(Error::unexpected(id, "a kXR_status reply")),
        }
    }

    /// The status frames. Errors: [`Error::UnexpectedResponse`] for a data reply.
    pub(crate) fn into_status(self, id: RequestId) -> Result<Vec<StatusResponse>> {
        match self {
            Reply::Status(s) => Ok(s),
            Reply::Data(_) => Err(Error::unexpected(
                id,
                "a kXR_ok reply where kXR_status was due",
            )),
        }
    }
}

/// Where a request was finally answered.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) reply: Reply,
    /// The connection that answered (where a file's handle lives).
    pub(crate) link: Arc<Link>,
    /// The URL of the server that answered, after redirects.
    pub(crate) url: Url,
    /// The load balancer met on the way (the first `kXR_isManager` server),
    /// as the request was sent to it.
    pub(crate) load_balancer: Option<Url>,
}

/// A request's deadline ([`Config::request_timeout`] from its start),
/// covering its redirects, waits and connections.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    at: Instant,
    /// The timeout it ends, for the error.
    after: Duration,
}

impl Deadline {
    /// `timeout` from now (a timeout too long for the clock never passes).
    fn after(timeout: Duration) -> Deadline {
        let now = Instant::now();
        let at = now
            .checked_add(timeout)
            .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
        Deadline { at, after: timeout }
    }

    /// The error of a request past its deadline: [`Error::Timeout`] of
    /// `"request"`.
    fn passed(&self) -> Error {
        Error::Timeout {
            what: "request",
            after: self.after,
        }
    }

    /// `f`'s outcome if it ends before the deadline. Errors: `f`'s;
    /// [`Error::Timeout`] once the deadline passes (`f` is dropped).
    async fn bound<T>(&self, f: impl Future<Output = Result<T>>) -> Result<T> {
        tokio::time::timeout_at(self.at, f)
            .await
            .map_err(|_| self.passed())?
    }
}

/// What one exchange on one link ended in.
enum Step {
    Done(Reply),
    Redirect(Url),
    Failed(Error),
}

/// Most empty partial frames (a `kXR_oksofar` without a body, a partial
/// `kXR_status` without data) one answer may have. Servers send none; a
/// few are let pass.
pub(crate) const MAX_EMPTY_FRAMES: u64 = 16;

/// What one answer may hold, over all its frames: the request's bound on
/// data, and on frames that carry data or end the answer (empty partial
/// frames are bounded by [`MAX_EMPTY_FRAMES`] besides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AnswerLimit {
    /// Bytes: the bodies of `kXR_oksofar` and `kXR_ok`, the data (`bdy.dlen`)
    /// of `kXR_status` frames.
    pub(crate) bytes: u64,
    /// Non-empty partial frames plus the final one.
    pub(crate) frames: u64,
}

impl AnswerLimit {
    /// The most a well-formed answer to `req` can hold (PROTOCOL.md §6):
    /// - `kXR_read`: `rlen` bytes; `kXR_readv`: each element's 16-byte
    ///   header and `rlen` bytes, at least one element a frame;
    /// - `kXR_pgread`: `rlen` bytes and a crc32c per page, at least one page
    ///   a frame; `kXR_pgreadv` the same summed over its extents;
    /// - `kXR_pgwrite`: one CSE block naming each page at most once;
    /// - anything else (listings, queries, stat, open...), whose answer the
    ///   request does not size: `cfg.max_answer_len` bytes in
    ///   `cfg.max_answer_frames` frames.
    pub(crate) fn of(req: &Request, cfg: &Config) -> AnswerLimit {
        let len = |n: i32| u64::try_from(n).unwrap_or(0);
        let at = |o: i64| u64::try_from(o).unwrap_or(0);
        let paged = |list: &[xroot_proto::ReadListEntry]| {
            list.iter().fold((0, 0), |(bytes, pages), e| {
                let (o, l) = (at(e.offset), len(e.rlen));
                (bytes + page::wire_len(o, l), pages + page::page_count(o, l))
            })
        };
        let (bytes, frames) = match req {
            Request::Read(r) => (len(r.rlen), len(r.rlen)),
            Request::Readv(r) => (
                r.list
                    .iter()
                    .map(|e| READ_LIST_LEN as u64 + len(e.rlen))
                    .sum(),
                r.list.len() as u64,
            ),
            Request::Pgread(r) => (
                page::wire_len(at(r.offset), len(r.rlen)),
                page::page_count(at(r.offset), len(r.rlen)),
            ),
            Request::PgReadv(r) => paged(&r.list),
            Request::Pgwrite(w) => {
                let pages = (w.payload.len() / page::PAGE_UNIT) as u64 + 2;
                (8 + 8 * pages, pages)
            }
            _ => {
                return AnswerLimit {
                    bytes: cfg.max_answer_len as u64,
                    frames: cfg.max_answer_frames as u64,
                }
            }
        };
        AnswerLimit {
            bytes,
            frames: frames + 1,
        }
    }
}

/// Data frames shorter than this are joined once an answer has
/// [`MANY_CHUNKS`] of them: many tiny frames cost a copy each, not a
/// buffer each.
const SMALL_CHUNK: usize = 4096;
const MANY_CHUNKS: usize = 64;

/// An answer as it arrives, checked against its [`AnswerLimit`] frame by
/// frame.
struct Answer {
    id: RequestId,
    limit: AnswerLimit,
    bytes: u64,
    frames: u64,
    empty: u64,
    chunks: Vec<Bytes>,
    /// Small chunks joined (see [`SMALL_CHUNK`]), after `chunks`.
    tail: BytesMut,
    statuses: Vec<StatusResponse>,
}

impl Answer {
    fn new(id: RequestId, limit: AnswerLimit) -> Answer {
        Answer {
            id,
            limit,
            bytes: 0,
            frames: 0,
            empty: 0,
            chunks: Vec::new(),
            tail: BytesMut::new(),
            statuses: Vec::new(),
        }
    }

    /// Counts a frame of `len` bytes. Errors: [`Error::UnexpectedResponse`]
    /// when the answer passes its limit with it.
    fn count(&mut self, len: usize, last: bool) -> Result<()> {
        self.bytes += len as u64;
        let over = if self.bytes > self.limit.bytes {
            format!("more than the {} bytes it can hold", self.limit.bytes)
        } else if len == 0 && !last {
            self.empty += 1;
            match self.empty > MAX_EMPTY_FRAMES {
                true => format!("more than {MAX_EMPTY_FRAMES} empty partial frames"),
                false => return Ok(()),
            }
        } else {
            self.frames += 1;
            match self.frames > self.limit.frames {
                true => format!("more than the {} frames it can have", self.limit.frames),
                false => return Ok(()),
            }
        };
        Err(Error::unexpected(self.id, format!("an answer of {over}")))
    }

    /// A `kXR_oksofar` (`last` false) or `kXR_ok` body.
    fn data(&mut self, b: Bytes, last: bool) -> Result<()> {
        self.count(b.len(), last)?;
        if b.is_empty() {
        } else if b.len() < SMALL_CHUNK && self.chunks.len() >= MANY_CHUNKS {
            self.tail.extend_from_slice(&b);
        } else {
            if !self.tail.is_empty() {
                self.chunks.push(self.tail.split().freeze());
            }
            self.chunks.push(b);
        }
        Ok(())
    }

    fn status(&mut self, s: StatusResponse) -> Result<()> {
        self.count(s.data.len(), s.is_final())?;
        self.statuses.push(s);
        Ok(())
    }

    fn into_data(mut self) -> Reply {
        if !self.tail.is_empty() {
            self.chunks.push(self.tail.freeze());
        }
        Reply::Data(self.chunks)
    }
}

/// Runs one request on one link until its final response, or until
/// `deadline`; `kXR_wait` is handled here (same link, same streamid). The
/// answer is refused as soon as it passes `limit`. At the deadline the
/// link hears that the request expired ([`InFlight::expire`]): a frame
/// left unfinished on it makes it drop itself. Errors:
/// [`Error::Timeout`] of `"request"` at the deadline; the link's;
/// [`Error::Protocol`] for a frame that does not decode as a response;
/// [`Error::UnexpectedResponse`] for one that does not fit the request
/// or an answer past `limit`.
async fn exchange(
    link: &Arc<Link>,
    req: &Request,
    from: &Url,
    limit: AnswerLimit,
    deadline: Deadline,
) -> Result<Step> {
    let mut flight: InFlight = link.send(req, limit.bytes)?;
    let mut answer = Answer::new(req.id(), limit);
    // one timer for the whole exchange, not one per frame
    let expiry = tokio::time::sleep_until(deadline.at);
    tokio::pin!(expiry);
    loop {
        let frame = tokio::select! {
            // a frame that is there is taken, even at the deadline
            biased;
            frame = flight.next() => frame?,
            _ = &mut expiry => {
                flight.expire();
                return Err(deadline.passed());
            }
        };
        let resp = Response::decode(frame).map_err(|source| Error::Protocol {
            endpoint: link.endpoint.clone(),
            source,
        })?;
        match resp {
            Response::OkSoFar(b) => answer.data(b, false)?,
            Response::Ok(b) => {
                answer.data(b, true)?;
                return Ok(Step::Done(answer.into_data()));
            }
            Response::Status(s) => {
                let last = s.is_final();
                answer.status(s)?;
                if last {
                    return Ok(Step::Done(Reply::Status(answer.statuses)));
                }
            }
            Response::Error(e) => return Ok(Step::Failed(crate::channel::login::server_error(e))),
            Response::Wait(w) => {
                let wait = Duration::from_secs(w.seconds.max(0) as u64);
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = &mut expiry => {
                        flight.expire();
                        return Err(deadline.passed());
                    }
                }
                flight.resend(req)?;
                // the whole answer comes again
                answer = Answer::new(req.id(), limit);
            }
            Response::WaitResp(_) => {}
            Response::Redirect(r) => {
                return redirect_target(&r, from, &link.endpoint).map(Step::Redirect)
            }
            other => {
                return Err(Error::unexpected(req.id(), format!("{other:?}")));
            }
        }
    }
}

/// The URL a redirect sent by `endpoint` points at, for a request sent
/// to `from` ([`Redirect::target`], which reads every form of the host
/// field and keeps `from`'s user, path and `xrdcl.*` CGI: PROTOCOL.md
/// §8.3). Errors: [`Error::Protocol`] (naming `endpoint`) for a host field
/// of none of the forms; [`Error::ForeignRedirect`] for a URL of another
/// scheme.
fn redirect_target(r: &Redirect, from: &Url, endpoint: &str) -> Result<Url> {
    r.target(from).map_err(|e| match e {
        RedirectError::Foreign { url } => Error::ForeignRedirect(url),
        e => Error::Protocol {
            endpoint: endpoint.to_string(),
            source: DecodeError::malformed("kXR_redirect host", e.to_string()),
        },
    })
}

/// The path field of a request that names a path, for rewriting on redirect.
fn path_of(req: &mut Request) -> Option<&mut Bytes> {
    Some(match req {
        Request::Open(r) => &mut r.path,
        Request::Stat(r) if !r.path.is_empty() => &mut r.path,
        Request::Dirlist(r) => &mut r.path,
        Request::Mkdir(r) => &mut r.path,
        Request::Rm(r) => &mut r.path,
        Request::Rmdir(r) => &mut r.path,
        Request::Chmod(r) => &mut r.path,
        Request::Locate(r) => &mut r.path,
        Request::Truncate(r) if !r.path.is_empty() => &mut r.path,
        Request::Query(r) if names_a_path(r.infotype) => &mut r.args,
        _ => return None,
    })
}

/// Whether a `kXR_query` of this kind carries a path in its args (not
/// `kXR_Qconfig` keys, a prepare request id or statistics letters).
fn names_a_path(infotype: QueryCode) -> bool {
    matches!(
        infotype,
        QueryCode::CKSUM
            | QueryCode::XATTR
            | QueryCode::SPACE
            | QueryCode::CKSCAN
            | QueryCode::FSINFO
            | QueryCode::OPAQUF
    )
}

/// Sets the request's path to `url`'s path with its server-visible CGI.
fn retarget(req: &mut Request, url: &Url) {
    if let Some(path) = path_of(req) {
        *path = Bytes::from(url.path_with_cgi());
    }
}

/// Errors after which the reference retries at the load balancer (PROTOCOL.md §12.2).
pub(crate) fn retry_at_load_balancer(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::FS_ERROR
            | ErrorCode::IO_ERROR
            | ErrorCode::SERVER_ERROR
            | ErrorCode::NOT_FOUND
            | ErrorCode::OVERLOADED
            | ErrorCode::NO_MEMORY
    )
}

/// The reason a retry at the load balancer reports in `triedrc=`, as
/// XrdCl's `UpdateTriedCGI` names it (the values a cmsd manager reads,
/// `kYR_tryMISS`... in `YProtocol.hh`); `None` for the errors it gives no
/// reason for (`kXR_Overloaded`, `kXR_NoMemory`).
pub(crate) fn tried_reason(code: ErrorCode) -> Option<&'static str> {
    match code {
        ErrorCode::NOT_FOUND => Some("enoent"),
        ErrorCode::IO_ERROR => Some("ioerr"),
        ErrorCode::FS_ERROR => Some("fserr"),
        ErrorCode::SERVER_ERROR => Some("srverr"),
        _ => None,
    }
}

/// Runs a path-based request at `url`: redirects, waits and load-balancer
/// retries included, under the request deadline, on the channels of
/// `dialer` (a redirect to another channel key takes that channel).
/// Errors: as [`run`].
pub(crate) async fn execute(dialer: &Dialer, url: &Url, req: Request) -> Result<Answered> {
    let deadline = Deadline::after(dialer.config().request_timeout);
    run(dialer, url.clone(), req, deadline).await
}

/// [`execute`]'s work: each connection and exchange under `deadline`.
/// Errors: [`Error::Timeout`] of `"request"` at the deadline; those of
/// connecting a channel and of [`exchange`]; [`Error::RedirectLimit`];
/// the server's last error after the load-balancer retries.
async fn run(
    dialer: &Dialer,
    mut url: Url,
    mut req: Request,
    deadline: Deadline,
) -> Result<Answered> {
    let limit = dialer.config().redirect_limit;
    let bound = AnswerLimit::of(&req, dialer.config());
    let mut hops = 0u32;
    let mut load_balancer: Option<Url> = None;
    // the hosts tried and why, comma-separated in the CGI as XrdCl merges
    // them (`tried=h1,h2&triedrc=enoent,ioerr`)
    let mut tried: Vec<String> = Vec::new();
    let mut reasons: Vec<&str> = Vec::new();
    loop {
        let channel = dialer.channel(&ChannelKey::of(&url));
        let link = deadline.bound(channel.link()).await?;
        if link
            .info
            .flags
            .contains(xroot_proto::response::ProtocolFlags::IS_MANAGER)
            && load_balancer.is_none()
        {
            load_balancer = Some(url.clone());
        }
        match exchange(&link, &req, &url, bound, deadline).await? {
            Step::Done(reply) => {
                return Ok(Answered {
                    reply,
                    link,
                    url,
                    load_balancer,
                })
            }
            Step::Redirect(next) => {
                hops += 1;
                if hops > limit {
                    return Err(Error::RedirectLimit {
                        limit,
                        last: next.to_string(),
                    });
                }
                tracing::debug!(from = %url.host_port(), to = %next, "redirect");
                retarget(&mut req, &next);
                url = next;
            }
            Step::Failed(err) => {
                let code = err.server_code();
                let lb = match (&load_balancer, code) {
                    (Some(lb), Some(code))
                        if retry_at_load_balancer(code) && lb.host_port() != url.host_port() =>
                    {
                        lb.clone()
                    }
                    _ => return Err(err),
                };
                hops += 1;
                if hops > limit {
                    return Err(err);
                }
                tried.push(url.host.clone());
                reasons.extend(code.and_then(tried_reason));
                let mut next = lb;
                next.path = url.path.clone();
                next.cgi = url
                    .cgi
                    .iter()
                    .filter(|(k, _)| k != "tried" && k != "triedrc")
                    .cloned()
                    .collect();
                next.cgi.push(("tried".into(), tried.join(",")));
                if !reasons.is_empty() {
                    next.cgi.push(("triedrc".into(), reasons.join(",")));
                }
                if code == Some(ErrorCode::NOT_FOUND) || code == Some(ErrorCode::OVERLOADED) {
                    if let Request::Open(o) = &mut req {
                        o.options |= OpenOptions::REFRESH;
                    }
                }
                tracing::debug!(error = %err, retry_at = %next, "retrying at the load balancer");
                retarget(&mut req, &next);
                url = next;
            }
        }
    }
}

/// Runs a handle-based request on the link that holds the handle: waits are
/// followed, redirects are not (the reference does not redirect stateful
/// requests).
pub(crate) async fn execute_on(
    dialer: &Dialer,
    link: &Arc<Link>,
    url: &Url,
    req: &Request,
) -> Result<Reply> {
    let deadline = Deadline::after(dialer.config().request_timeout);
    let bound = AnswerLimit::of(req, dialer.config());
    match exchange(link, req, url, bound, deadline).await? {
        Step::Done(reply) => Ok(reply),
        Step::Failed(e) => Err(e),
        Step::Redirect(to) => Err(Error::unexpected(
            req.id(),
            format!("redirect of a file-handle request to {to}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from() -> Url {
        Url::parse("root://alice@mgr:1094//store/f.root?xrdcl.intent=a&x=1").unwrap()
    }

    #[test]
    fn redirect_forms() {
        let r = Redirect::to_host("ds1", 2094).with_opaque("cms.tried=x");
        let u = redirect_target(&r, &from(), "mgr:1094").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("ds1", 2094));
        assert_eq!(u.user.as_deref(), Some("alice"));
        assert_eq!(u.path, "/store/f.root");
        assert_eq!(u.cgi_value("xrdcl.intent"), Some("a"));
        assert_eq!(u.cgi_value("cms.tried"), Some("x"));

        let r = Redirect::to_url("root://bob@ds2:3000//other", Default::default());
        let u = redirect_target(&r, &from(), "mgr:1094").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.user.as_deref()),
            ("ds2", 3000, Some("bob"))
        );
        assert_eq!(u.path, "/other");

        // a key the URL has already is replaced, not repeated
        let r = Redirect::to_host("ds1", 2094)
            .with_opaque("x=2&org=b")
            .with_token("authz=t");
        let u = redirect_target(&r, &from(), "mgr:1094").unwrap();
        assert_eq!(u.path_with_cgi(), "/store/f.root?x=2&org=b&authz=t");
        let r = Redirect::to_host("ds2", 2094).with_opaque("org=c");
        let u = redirect_target(&r, &u, "mgr:1094").unwrap();
        assert_eq!(u.path_with_cgi(), "/store/f.root?x=2&org=c&authz=t");

        let r = Redirect::to_url("http://web/x", Default::default());
        assert!(matches!(
            redirect_target(&r, &from(), "mgr:1094"),
            Err(Error::ForeignRedirect(_))
        ));
    }

    /// `(host, port)` of the redirect with port field `port` and host
    /// field `field`, or the error.
    fn target(port: i32, field: &str) -> Result<(String, u16)> {
        let r = Redirect::decode(Bytes::from(
            [&port.to_be_bytes()[..], field.as_bytes()].concat(),
        ))
        .unwrap();
        redirect_target(&r, &from(), "mgr:1094").map(|u| (u.host, u.port))
    }

    #[test]
    fn every_host_form_of_a_redirect() {
        let ok = |host: &str, port| Ok::<_, ()>((host.to_string(), port));
        for (port, field, want) in [
            // a port in the port field: the field is a host
            (2094, "ds1", ok("ds1", 2094)),
            (2094, "[::1]", ok("::1", 2094)),
            (2094, "::1", ok("::1", 2094)),
            (2094, "fe80::1:2", ok("fe80::1:2", 2094)),
            (2094, "[::127.0.0.1]", ok("127.0.0.1", 2094)),
            (2094, "[::ffff:127.0.0.1]", ok("::ffff:127.0.0.1", 2094)),
            // port 0: the field as it is, the default port when it has none
            (0, "ds1", ok("ds1", 1094)),
            (0, "ds1:2000", ok("ds1", 2000)),
            (0, "[::1]", ok("::1", 1094)),
            (0, "[::1]:2000", ok("::1", 2000)),
            (0, "::1", ok("::1", 1094)),
            (0, "2001:db8::7", ok("2001:db8::7", 1094)),
            (0, "[::127.0.0.1]:2000", ok("127.0.0.1", 2000)),
            // -1: a URL
            (-1, "root://[::1]:2000//x", ok("::1", 2000)),
            (-1, "root://ds1//x", ok("ds1", 1094)),
        ] {
            assert_eq!(
                target(port, field).map_err(|_| ()),
                want,
                "port {port}, host field {field:?}"
            );
        }
        for (port, field) in [
            (2094, "ds1:2000"),   // two ports
            (2094, "[::1]:2000"), // two ports
            (0, "ds1:0"),
            (0, "ds1:99999"),
            (0, "ds1:x"),
            (0, "[::1"),
            (0, "[::1]x"),
            (0, "[]:2000"),
            (0, ":2000"),
            (0, "a:b:c"), // neither an IPv6 address nor host:port
            (70_000, "ds1"),
            (0, "d s"),
            (-1, "root://[::1//x"),
        ] {
            assert!(
                matches!(target(port, field), Err(Error::Protocol { .. })),
                "port {port}, host field {field:?}: {:?}",
                target(port, field)
            );
        }
    }

    #[test]
    fn answers_are_bounded_by_what_the_request_can_get() {
        use xroot_proto::request::{Dirlist, Pgread, Read, Readv};
        use xroot_proto::{FHandle, ReadListEntry};
        let cfg = Config {
            max_answer_len: 5000,
            max_answer_frames: 7,
            ..Config::default()
        };
        let limit = |req: Request| {
            let l = AnswerLimit::of(&req, &cfg);
            (l.bytes, l.frames)
        };
        let read = Read {
            fhandle: FHandle::default(),
            offset: 10,
            rlen: 100,
            args: None,
        };
        assert_eq!(limit(read.into()), (100, 101));
        let entry = |offset, rlen| ReadListEntry {
            fhandle: FHandle::default(),
            rlen,
            offset,
        };
        let readv = Readv {
            list: vec![entry(0, 10), entry(100, 5)],
            ..Default::default()
        };
        assert_eq!(limit(readv.into()), (16 + 10 + 16 + 5, 3));
        // PROTOCOL.md §6.5: 3 pages of 3096, 4096 and 2808 bytes
        let pgread = Pgread {
            fhandle: FHandle::default(),
            offset: 1000,
            rlen: 10_000,
            args: None,
        };
        assert_eq!(limit(pgread.into()), (10_012, 4));
        // the same extent twice, and one page
        let pgreadv = xroot_proto::request::PgReadv {
            list: vec![entry(1000, 10_000), entry(1000, 10_000), entry(8192, 4096)],
            ..Default::default()
        };
        assert_eq!(limit(pgreadv.into()), (2 * 10_012 + 4100, 3 + 3 + 1 + 1));
        assert_eq!(limit(Dirlist::default().into()), (5000, 7));
    }

    #[test]
    fn an_answer_is_refused_at_the_frame_that_passes_its_limit() {
        let limit = AnswerLimit {
            bytes: 10_000,
            frames: 1001,
        };
        let mut a = Answer::new(RequestId::READ, limit);
        for _ in 0..999 {
            a.data(Bytes::from_static(&[7; 10]), false).unwrap();
        }
        // tiny frames are joined, not kept one by one
        assert!(a.chunks.len() <= MANY_CHUNKS, "{}", a.chunks.len());
        a.data(Bytes::from_static(&[7; 10]), true).unwrap();
        let Reply::Data(chunks) = a.into_data() else {
            unreachable!()
        };
        assert_eq!(chunks.concat(), [7; 10_000]);

        let mut a = Answer::new(RequestId::READ, limit);
        a.data(Bytes::from(vec![1; 9_999]), false).unwrap();
        assert!(a.data(Bytes::from_static(&[1, 2]), false).is_err(), "bytes");

        let mut a = Answer::new(RequestId::READ, limit);
        for _ in 0..MAX_EMPTY_FRAMES {
            a.data(Bytes::new(), false).unwrap();
        }
        assert!(a.data(Bytes::new(), false).is_err(), "empty frames");

        let mut a = Answer::new(
            RequestId::READ,
            AnswerLimit {
                bytes: 100,
                frames: 3,
            },
        );
        for _ in 0..3 {
            a.data(Bytes::from_static(b"x"), false).unwrap();
        }
        assert!(a.data(Bytes::from_static(b"x"), true).is_err(), "frames");
    }

    #[test]
    fn tried_reasons_as_xrdcl_names_them() {
        let named: Vec<_> = [
            ErrorCode::NOT_FOUND,
            ErrorCode::IO_ERROR,
            ErrorCode::FS_ERROR,
            ErrorCode::SERVER_ERROR,
            ErrorCode::OVERLOADED,
            ErrorCode::NO_MEMORY,
        ]
        .into_iter()
        .map(tried_reason)
        .collect();
        assert_eq!(
            named,
            [
                Some("enoent"),
                Some("ioerr"),
                Some("fserr"),
                Some("srverr"),
                None,
                None
            ]
        );
    }

    #[test]
    fn retarget_rewrites_the_path_with_cgi() {
        let mut req = Request::Open(xroot_proto::request::Open {
            path: Bytes::from_static(b"/store/f.root"),
            ..Default::default()
        });
        let url = Url::parse("root://ds//store/f.root?xrdcl.intent=a&cms.tried=x").unwrap();
        retarget(&mut req, &url);
        let Request::Open(o) = req else {
            unreachable!()
        };
        assert_eq!(&o.path[..], b"/store/f.root?cms.tried=x");

        // a checksum query names a path; a config query's args are keys
        for (infotype, args, after) in [
            (
                QueryCode::CKSUM,
                "/store/f.root\0",
                "/store/f.root?cms.tried=x",
            ),
            (QueryCode::CONFIG, "readv_iov_max\0", "readv_iov_max\0"),
        ] {
            let mut req = Request::Query(xroot_proto::request::Query {
                infotype,
                args: Bytes::from(args),
                ..Default::default()
            });
            retarget(&mut req, &url);
            let Request::Query(q) = req else {
                unreachable!()
            };
            assert_eq!(&q.args[..], after.as_bytes(), "{infotype:?}");
        }
    }
}
