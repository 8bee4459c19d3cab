//! One TCP link: the read loop, the handshake and the gating of every
//! request exactly as the reference orders it (XrdXrootdProtocol
//! `Process`/`Process2`, PROTOCOL.md §2, §4, §5):
//!
//! 1. a frame the decoder refuses: `dlen < 0` → `kXR_ArgInvalid` and close;
//!    a `dlen` over the limit → `kXR_ArgTooLong` and close; a readv list
//!    over 1024 elements or not a multiple of 16 → `kXR_ArgTooLong` /
//!    `kXR_ArgInvalid`, the frame skipped and the link kept; writev list
//!    errors → answer and close; a bad handshake → close without a word;
//! 2. `kXR_sigver`: no answer (the signature is accepted and ignored);
//! 3. before login only `kXR_protocol`, `kXR_login` and `kXR_bind`; anything
//!    else → `kXR_InvalidRequest` "Invalid request; user not logged in" and
//!    close;
//! 4. after login, the file-handle requests (read, readv, pgread, pgreadv,
//!    write, writev, pgwrite, sync, close, chkpoint, clone, and stat,
//!    truncate and query without a path), then protocol and ping;
//! 5. while authentication is pending only `kXR_auth`; anything else →
//!    `kXR_InvalidRequest` "Invalid request; user not authenticated" and
//!    close;
//! 6. `kXR_endsess`;
//! 7. every other request needs a payload: `dlen == 0` →
//!    `kXR_ArgMissing` "Required argument not present";
//! 8. the path requests; anything else (a second `kXR_login`, `kXR_auth`
//!    without a security layer, `kXR_bind` on a logged-in link, an unknown
//!    request id) → `kXR_InvalidRequest` "Invalid request code". The stock
//!    server answers a second login so too: its "duplicate login" check is
//!    never reached.
//!
//! A link switches to TLS on the same connection where [`crate::net::tls`]
//! says, once the answer announcing it is flushed: the write half is taken
//! back from the link's writer task, the rustls handshake runs, and reading
//! and writing go on over TLS. A client that sent bytes past the request
//! that starts TLS (pipelined behind it) breaks the protocol: the link is
//! closed. A failed handshake closes the link.
//!
//! A link bound to a session with `kXR_bind` is a data path: it carries
//! answers, and a request sent on it is refused.
//!
//! Before login a link is cheap: its requests may carry at most
//! [`Config::max_login_dlen`] bytes, and a link that has not logged in
//! (and authenticated) within [`Config::login_timeout`] is closed. A frame
//! that does not arrive whole within [`Config::frame_timeout`] of its first
//! byte closes the link. Every request that names open files is admitted on
//! them here, in arrival order ([`crate::admit::order`]), and its payload counts
//! against the memory budget ([`crate::admit::budget`]) until its task ends.
//!
//! A `kXR_write` whose handle names no open file of the session when its
//! header arrives is refused whatever its data: its payload is read and
//! dropped as it comes, never held, and the `kXR_FileNotOpen` its handler
//! would give is sent once the last byte is in (the reference's
//! `do_WriteNone`). A client cannot know a handle before its open is
//! answered, so only a guess can name one whose open is still running.
//!
//! A session ends when its main link closes or is ended by `kXR_endsess`:
//! no new request is read, the requests in flight run to their end (their
//! answers are dropped when the link was ended), then its files are closed —
//! a file opened with `kXR_posc` and not closed by the client is removed —
//! and their locks released. Only then is the session gone; until then a
//! `kXR_endsess` naming it is answered `kXR_wait`.
//!
//! [`Config::max_login_dlen`]: crate::Config::max_login_dlen
//! [`Config::login_timeout`]: crate::Config::login_timeout
//! [`Config::frame_timeout`]: crate::Config::frame_timeout

use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use xroot_proto::request::Request;
use xroot_proto::response::{Response, ServerError};
use xroot_proto::{
    ClientMessage, DecodeError, ErrorCode, FHandle, RequestDecoder, RequestFrame, RequestHeader,
    RequestId, ServerHandshake, StreamId,
};

use crate::admit::budget::{Budget, Share};
use crate::admit::limit::{Limit, READV_FLOOR, REQUEST_FLOOR};
use crate::fs::FileSystem;
use crate::handle::dispatch;
use crate::handle::kit::{Ctx, Tally};
use crate::net::transport::{self, LinkRead, LinkStream};
use crate::net::writer::LinkWriter;
use crate::observe::stats::{InFlight, Scope};
use crate::observe::{Outcome, RequestRecord};
use crate::session::{killed, Kill, Session};
use crate::shared::Shared;

use super::buffer::{fit, IDLE_BUFFER};
use super::gate::{frame_error, handle_based, path_based, NOT_LOGGED_IN};

/// The protocol version this server speaks: 5.1.1, as the stock 5.5.3 server
/// that the stock clients were built against (PROTOCOL.md Appendix item 1).
pub(crate) const PROTOCOL_VERSION: u32 = xroot_proto::codes::version::STOCK_5_5;

/// Where a link stands.
pub(crate) enum Phase<F: FileSystem> {
    /// Handshake done or pending; not logged in.
    New,
    /// The main link of a session.
    LoggedIn {
        session: Arc<Session<F>>,
        /// `kXR_login` asked for authentication that has not succeeded yet.
        auth_pending: bool,
    },
    /// A substream of a session, with its path id.
    Bound {
        session: Arc<Session<F>>,
        pathid: u8,
    },
}

/// One TCP link being served.
pub(crate) struct Conn<F: FileSystem> {
    pub(crate) shared: Arc<Shared<F>>,
    pub(crate) link: LinkWriter,
    pub(crate) peer: SocketAddr,
    pub(crate) local: SocketAddr,
    pub(crate) phase: Phase<F>,
    /// The link runs TLS.
    pub(crate) tls: bool,
    /// The client said `kXR_ableTLS` (or `kXR_wantTLS`) in `kXR_protocol`.
    pub(crate) able_tls: bool,
    /// Switch to TLS once the answer just queued is flushed; nothing else
    /// is read before.
    pub(crate) start_tls: bool,
    /// Set to close the link at once.
    pub(crate) kill: Kill,
    /// The client handshake arrived.
    greeted: bool,
    /// Frames handled so far.
    frames: u64,
    pub(crate) tasks: JoinSet<()>,
    limit: Limit,
    readv_limit: Limit,
    budget: Budget,
    /// The budget taken for the request frame being received, from its
    /// header on; its request's payload share once it is whole.
    reserved: Option<Share>,
    /// The request refused at its header whose payload is being skipped
    /// ([`Conn::refuse_early`]).
    refused: Option<Refused>,
    stats: Arc<Scope>,
    /// The authenticator's state between the rounds of a login.
    pub(crate) auth_state: crate::auth::AuthState,
}

/// A request refused from its header on: answered once its payload has
/// been read and dropped, counted in flight until then.
struct Refused {
    header: RequestHeader,
    code: ErrorCode,
    message: &'static str,
    start: std::time::Instant,
    _in_flight: InFlight,
}

/// Serves one accepted connection to its end.
pub(crate) async fn run<F: FileSystem>(
    shared: Arc<Shared<F>>,
    stream: TcpStream,
    peer: SocketAddr,
) {
    let local = stream.local_addr().unwrap_or(shared.monitor.local_addr);
    let _ = stream.set_nodelay(true);
    run_link(shared, LinkStream::Plain(stream), peer, local).await
}

/// Serves one link, from `peer` to `local`, to its end.
pub(crate) async fn run_link<F: FileSystem>(
    shared: Arc<Shared<F>>,
    stream: LinkStream,
    peer: SocketAddr,
    local: SocketAddr,
) {
    let (mut rd, wr) = stream.into_split();
    let (link, writer) = LinkWriter::spawn(wr, shared.monitor.bytes_out.clone());
    let (link_id, stats) = shared.monitor.open_link(peer);
    let cfg = &shared.config;
    let mut decoder = RequestDecoder::new()
        .with_max_dlen(cfg.max_login_dlen)
        .with_max_argument_dlen(cfg.max_argument_dlen);
    let mut conn = Conn {
        limit: Limit::new(
            cfg.max_requests_per_link,
            REQUEST_FLOOR,
            shared.limit.clone(),
        ),
        readv_limit: Limit::new(
            cfg.max_readv_per_link,
            READV_FLOOR,
            shared.readv_limit.clone(),
        ),
        budget: Budget::new(
            cfg.link_budget,
            shared.payload_budget.clone(),
            shared.budget.clone(),
        ),
        reserved: None,
        refused: None,
        auth_state: None,
        shared: shared.clone(),
        link,
        peer,
        local,
        phase: Phase::New,
        tls: false,
        able_tls: false,
        start_tls: false,
        kill: Arc::new(watch::Sender::new(false)),
        greeted: false,
        frames: 0,
        tasks: JoinSet::new(),
        stats,
    };
    let mut buf = BytesMut::with_capacity(IDLE_BUFFER);
    let mut skip = 0usize;
    let mut shutdown = shared.monitor.shutdown_signal();
    let hail = tokio::time::sleep(cfg.handshake_timeout);
    let login = tokio::time::sleep(cfg.login_timeout);
    // armed while a frame is partly read; re-armed whenever a frame completes
    let stall = tokio::time::sleep(cfg.frame_timeout);
    let mut stalling = false;
    tokio::pin!(hail, login, stall);
    let kill = conn.kill.clone();
    let killed = loop {
        if std::mem::take(&mut conn.start_tls) {
            if !buf.is_empty() || skip > 0 || decoder.pending_len().is_some() {
                tracing::debug!(%peer, "closing: bytes sent past the switch to TLS");
                break false;
            }
            rd = tokio::select! {
                switched = conn.switch_to_tls(rd) => match switched {
                    Ok(rd) => rd,
                    Err(e) => {
                        tracing::debug!(%peer, "closing: TLS: {e}");
                        break false;
                    }
                },
                _ = killed(&kill) => break true,
                _ = async { let _ = shutdown.wait_for(|s| *s).await; } => break false,
            };
        }
        tokio::select! {
            _ = async { let _ = shutdown.wait_for(|s| *s).await; } => break false,
            _ = killed(&kill) => break true,
            _ = &mut hail, if !conn.greeted => {
                tracing::debug!(%peer, "no handshake in time");
                break false;
            }
            _ = &mut login, if !conn.logged_in() => {
                tracing::debug!(%peer, "no login in time");
                break false;
            }
            _ = &mut stall, if stalling => {
                tracing::debug!(%peer, "a request frame stalled midway");
                break false;
            }
            Some(_) = conn.tasks.join_next(), if !conn.tasks.is_empty() => {}
            read = rd.read_buf(&mut buf) => {
                let Ok(n @ 1..) = read else {
                    break false;
                };
                shared.monitor.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
                let before = conn.frames;
                if conn.process(&mut decoder, &mut buf, &mut skip).await.is_break() {
                    break false;
                }
                // part of the handshake: the rest comes soon or never
                if !conn.greeted && !buf.is_empty() {
                    let rest = Instant::now() + cfg.handshake_rest_timeout;
                    if rest < hail.deadline() {
                        hail.as_mut().reset(rest);
                    }
                }
                // a frame refused whatever its payload: dropped as it comes
                if let (Some(len), None) = (decoder.pending_len(), &conn.reserved) {
                    if conn.refuse_early(&buf) {
                        decoder.skip_pending();
                        skip = len - buf.len();
                        buf.clear();
                    }
                }
                // a frame being received: its payload's budget before its payload
                if let (Some(len), None) = (decoder.pending_len(), &conn.reserved) {
                    let share = conn.budget.take_payload(len - RequestHeader::LEN);
                    tokio::select! {
                        share = share => conn.reserved = Some(share),
                        _ = killed(&kill) => break true,
                        _ = async { let _ = shutdown.wait_for(|s| *s).await; } => break false,
                    }
                    // the time waited for the budget is not the client's
                    stall.as_mut().reset(Instant::now() + cfg.frame_timeout);
                }
                fit(&mut buf, decoder.pending_len(), skip > 0);
                let partial = !buf.is_empty() || skip > 0;
                if partial && (!stalling || conn.frames != before) {
                    stall.as_mut().reset(Instant::now() + cfg.frame_timeout);
                }
                stalling = partial;
            }
        }
    };
    drop(buf);
    if killed {
        // ended from elsewhere: answers still queued or to come are dropped
        writer.abort();
    }
    while conn.tasks.join_next().await.is_some() {}
    conn.finish().await;
    drop(conn);
    let _ = writer.await;
    shared.monitor.close_link(link_id);
}

impl<F: FileSystem> Conn<F> {
    /// Handles every whole message in `buf`; `Break` closes the link.
    async fn process(
        &mut self,
        decoder: &mut RequestDecoder,
        buf: &mut BytesMut,
        skip: &mut usize,
    ) -> ControlFlow<()> {
        loop {
            if *skip > 0 {
                let n = (*skip).min(buf.len());
                buf.advance(n);
                *skip -= n;
                if *skip > 0 {
                    return ControlFlow::Continue(());
                }
                if let Some(refused) = self.refused.take() {
                    self.frames += 1;
                    self.answer_refused(refused).await?;
                }
            }
            match decoder.decode(buf) {
                Ok(None) => return ControlFlow::Continue(()),
                Ok(Some(ClientMessage::Handshake(_))) => {
                    let mut reply = BytesMut::new();
                    ServerHandshake {
                        protover: PROTOCOL_VERSION,
                        server_type: crate::link::login::server_type::<F>(),
                    }
                    .encode(&mut reply);
                    self.greeted = true;
                    self.send_raw(reply).await?;
                }
                Ok(Some(ClientMessage::Request(frame))) => {
                    self.frames += 1;
                    let reserved = self.reserved.take();
                    self.on_request(frame, reserved).await?;
                    if self.start_tls {
                        // what follows must come over TLS
                        return ControlFlow::Continue(());
                    }
                    if self.logged_in() && decoder.max_dlen() != self.shared.config.max_request_dlen
                    {
                        let max = self.shared.config.max_request_dlen;
                        *decoder = decoder.clone().with_max_dlen(max);
                    }
                }
                Err(e) => {
                    self.reserved = None;
                    *skip = self.on_frame_error(buf, &e).await?
                }
            }
        }
    }

    /// Whether the request frame whose header starts `buf`, its payload
    /// still to come, is refused whatever that payload: a `kXR_write`
    /// naming no open file of the logged-in session (see the module docs).
    /// If so, the refusal waits in [`Conn::refused`] for the payload to be
    /// skipped.
    fn refuse_early(&mut self, buf: &[u8]) -> bool {
        let Phase::LoggedIn {
            session,
            auth_pending: false,
        } = &self.phase
        else {
            return false;
        };
        let Ok(header) = RequestHeader::decode(buf) else {
            return false;
        };
        let fhandle = FHandle(header.params[..4].try_into().expect("4 bytes"));
        if header.requestid != RequestId::WRITE || session.files.holds(fhandle) {
            return false;
        }
        self.refused = Some(Refused {
            header,
            code: ErrorCode::FILE_NOT_OPEN,
            message: "write does not refer to an open file",
            start: std::time::Instant::now(),
            _in_flight: InFlight::enter(header.requestid, &self.stats, &self.shared.monitor.stats),
        });
        true
    }

    /// Answers a request refused at its header, its payload now skipped,
    /// and tells the observer as of any refused request.
    async fn answer_refused(&mut self, r: Refused) -> ControlFlow<()> {
        if let (Some(observer), Phase::LoggedIn { session, .. }) =
            (&self.shared.config.observer, &self.phase)
        {
            observer.finished(&RequestRecord {
                peer: session.caller().peer,
                user: &session.caller().identity.name,
                kind: r.header.requestid,
                path: None,
                outcome: Outcome::Error(r.code),
                duration: r.start.elapsed(),
                bytes_in: r.header.dlen as u64,
                bytes_out: 0,
            });
        }
        self.error(r.header.streamid, r.code, r.message).await
    }

    /// Answers a frame the decoder refused, as the reference does. Returns
    /// how many bytes to skip to the next frame, or `Break` to close.
    async fn on_frame_error(&mut self, buf: &[u8], e: &DecodeError) -> ControlFlow<(), usize> {
        let header = match e {
            DecodeError::BadHandshake { .. } => None,
            _ => RequestHeader::decode(buf).ok(),
        };
        let Some(header) = header else {
            tracing::debug!(peer = %self.peer, "closing: {e}");
            return ControlFlow::Break(());
        };
        let (code, message, keep) = frame_error(&header, e);
        let (code, message, keep) = match self.phase {
            Phase::New if keep => (ErrorCode::INVALID_REQUEST, NOT_LOGGED_IN, false),
            _ => (code, message, keep),
        };
        tracing::debug!(peer = %self.peer, "refused frame: {e}");
        self.error(header.streamid, code, message).await?;
        match keep {
            true => ControlFlow::Continue(RequestHeader::LEN + header.dlen as usize),
            false => ControlFlow::Break(()),
        }
    }

    /// Gates one request and handles it, inline or in a task of its own.
    /// `reserved` is the budget taken for the frame while it arrived, if
    /// it did not arrive whole at once.
    async fn on_request(
        &mut self,
        frame: RequestFrame,
        reserved: Option<Share>,
    ) -> ControlFlow<()> {
        let h = frame.header;
        let id = h.requestid;
        // a vector read counts from its turn on (see `readv`)
        let in_flight = (!matches!(id, RequestId::READV | RequestId::PGREADV))
            .then(|| InFlight::enter(id, &self.stats, &self.shared.monitor.stats));
        let auth_pending = match &self.phase {
            _ if id == RequestId::SIGVER => return self.sigver(&h).await,
            Phase::New => {
                return match id {
                    RequestId::PROTOCOL => self.protocol(frame).await,
                    RequestId::LOGIN => self.login(frame).await,
                    RequestId::BIND => self.bind(frame).await,
                    _ => {
                        let _ = self
                            .error(h.streamid, ErrorCode::INVALID_REQUEST, NOT_LOGGED_IN)
                            .await;
                        ControlFlow::Break(())
                    }
                };
            }
            Phase::Bound { .. } => {
                return self
                    .error(
                        h.streamid,
                        ErrorCode::INVALID_REQUEST,
                        "Invalid request on a bound data path",
                    )
                    .await;
            }
            Phase::LoggedIn { auth_pending, .. } => *auth_pending,
        };
        if handle_based(&h) {
            return self.spawn(frame, in_flight, reserved).await;
        }
        match id {
            RequestId::PROTOCOL => return self.protocol(frame).await,
            RequestId::PING => {
                return self
                    .reply(h.streamid, Response::Ok(Default::default()))
                    .await
            }
            _ => {}
        }
        if auth_pending {
            if id == RequestId::AUTH {
                return self.auth(frame).await;
            }
            let _ = self
                .error(
                    h.streamid,
                    ErrorCode::INVALID_REQUEST,
                    "Invalid request; user not authenticated",
                )
                .await;
            return ControlFlow::Break(());
        }
        match id {
            RequestId::ENDSESS => return self.endsess(frame).await,
            _ if h.dlen == 0 => {
                return self
                    .error(
                        h.streamid,
                        ErrorCode::ARG_MISSING,
                        "Required argument not present",
                    )
                    .await
            }
            _ if path_based(id) => self.spawn(frame, in_flight, reserved).await,
            _ => {
                self.error(
                    h.streamid,
                    ErrorCode::INVALID_REQUEST,
                    "Invalid request code",
                )
                .await
            }
        }
    }

    /// `kXR_sigver`: checked for length, then ignored (no answer). Signed
    /// requests are not verified.
    async fn sigver(&mut self, h: &RequestHeader) -> ControlFlow<()> {
        if h.dlen <= 0 || h.dlen as usize > xroot_proto::limits::MAX_SIGNATURE {
            let _ = self
                .error(
                    h.streamid,
                    ErrorCode::ARG_INVALID,
                    "Invalid signature data length",
                )
                .await;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// Decodes a request and runs it in a task of its own, within the link's
    /// and the server's limits and budgets (waiting for room stops the
    /// reading), admitted in arrival order on the files it names.
    async fn spawn(
        &mut self,
        frame: RequestFrame,
        in_flight: Option<InFlight>,
        reserved: Option<Share>,
    ) -> ControlFlow<()> {
        let (Phase::LoggedIn { session, .. } | Phase::Bound { session, .. }) = &self.phase else {
            return ControlFlow::Break(());
        };
        let session = session.clone();
        let sid = frame.header.streamid;
        let id = frame.header.requestid;
        let payload = frame.payload.len() + frame.data.len();
        let observed = self.shared.config.observer.is_some();
        let tally = Tally::new(std::time::Instant::now(), payload, observed);
        let refused = match dispatch::precheck(&frame.header) {
            Some((code, message, close)) => Err((code, message.to_string(), close)),
            None => Request::decode(frame).map_err(|e| dispatch::decode_error(id, &e)),
        };
        let request = match refused {
            Ok(r) => r,
            Err((code, message, close)) => {
                if let Some(observer) = &self.shared.config.observer {
                    observer.finished(&RequestRecord {
                        peer: session.caller().peer,
                        user: &session.caller().identity.name,
                        kind: id,
                        path: None,
                        outcome: Outcome::Error(code),
                        duration: tally.start.elapsed(),
                        bytes_in: tally.bytes_in,
                        bytes_out: 0,
                    });
                }
                self.error(sid, code, &message).await?;
                return match close {
                    true => ControlFlow::Break(()),
                    false => ControlFlow::Continue(()),
                };
            }
        };
        let room = async {
            let slot = self.limit.take().await;
            let share = match reserved {
                Some(share) => share,
                None => self.budget.take_payload(payload).await,
            };
            (slot, share)
        };
        let (slot, share) = tokio::select! {
            room = room => room,
            _ = killed(&self.kill) => return ControlFlow::Break(()),
        };
        let mut files = Vec::new();
        let mut tickets = Vec::new();
        for (fh, access) in dispatch::accesses(&request) {
            match session.files.admit(fh, access) {
                Some((f, t)) => {
                    files.push((fh, Some(f)));
                    tickets.push(t);
                }
                None => files.push((fh, None)),
            }
        }
        let ctx = Ctx {
            shared: self.shared.clone(),
            session,
            link: self.link.clone(),
            sid,
            local: self.local,
            readv_limit: self.readv_limit.clone(),
            stats: self.stats.clone(),
            budget: self.budget.clone(),
            files,
            tickets,
            payload: share,
            tally,
        };
        if let Request::Read(r) = &request {
            if crate::handle::file_requests::read_now(&ctx, r) {
                ctx.record(id, None, Outcome::Ok);
                return ControlFlow::Continue(());
            }
        }
        self.tasks.spawn(async move {
            let _held = (slot, in_flight);
            dispatch::run(ctx, request).await;
        });
        ControlFlow::Continue(())
    }

    /// Takes the write half back from the writer task (once everything
    /// queued is flushed), runs the TLS handshake on the reunited socket
    /// and hands the writer its TLS half; returns the TLS read half.
    ///
    /// Errors: the link is gone, the server has no TLS, or the handshake
    /// failed or timed out (see [`transport::accept`]).
    async fn switch_to_tls(&mut self, rd: LinkRead) -> std::io::Result<LinkRead> {
        let gone = || std::io::Error::new(std::io::ErrorKind::BrokenPipe, "link closed");
        let config = match &self.shared.config.tls {
            Some(t) => t.server.config(),
            None => return Err(std::io::Error::other("no TLS configured")),
        };
        let (wr, back) = self.link.take_half().await.map_err(|_| gone())?;
        let timeout = self.shared.config.handshake_timeout;
        let (rd, wr) = transport::accept(rd, wr, config, timeout).await?;
        back.send(wr).map_err(|_| gone())?;
        self.tls = true;
        tracing::debug!(peer = %self.peer, "link runs TLS");
        Ok(rd)
    }

    /// Logged in, and authenticated when that is required; a bound
    /// substream counts as logged in.
    fn logged_in(&self) -> bool {
        match &self.phase {
            Phase::New => false,
            Phase::LoggedIn { auth_pending, .. } => !auth_pending,
            Phase::Bound { .. } => true,
        }
    }

    /// Queues encoded frames; `Break` when the link is gone.
    pub(crate) async fn send_raw(&self, frames: BytesMut) -> ControlFlow<()> {
        flow(self.link.send_raw(frames).await)
    }

    /// Queues `response` to `sid`; `Break` when the link is gone.
    pub(crate) async fn reply(&self, sid: StreamId, response: Response) -> ControlFlow<()> {
        flow(self.link.send(sid, &response).await)
    }

    /// Queues a `kXR_error`; `Break` when the link is gone.
    pub(crate) async fn error(
        &self,
        sid: StreamId,
        code: ErrorCode,
        message: &str,
    ) -> ControlFlow<()> {
        let e = ServerError::new(code, message.to_string());
        self.reply(sid, Response::Error(e)).await
    }

    /// Registers the session of a successful login on this link.
    pub(crate) fn start_session(
        &mut self,
        user: String,
        login: (i32, String),
        auth_pending: bool,
    ) -> Arc<Session<F>> {
        let sessid = self.shared.new_sessid();
        self.shared.monitor.logins.fetch_add(1, Ordering::Relaxed);
        let session = Arc::new(Session::new(
            sessid,
            self.peer,
            user,
            login,
            self.link.clone(),
            self.kill.clone(),
        ));
        session
            .authenticated
            .store(!auth_pending, Ordering::Release);
        self.shared
            .sessions
            .lock()
            .unwrap()
            .insert(sessid, Arc::downgrade(&session));
        self.phase = Phase::LoggedIn {
            session: session.clone(),
            auth_pending,
        };
        session
    }

    /// Makes this link substream `pathid` of `session`, or `None` when the
    /// session has no free slot.
    pub(crate) fn bind_to(&mut self, session: Arc<Session<F>>) -> Option<u8> {
        let pathid = session.bind(self.link.clone(), self.kill.clone())?;
        self.phase = Phase::Bound { session, pathid };
        Some(pathid)
    }

    /// Unregisters what this link registered; a session ends here, once
    /// its requests are done (see the module docs).
    async fn finish(&mut self) {
        match std::mem::replace(&mut self.phase, Phase::New) {
            Phase::New => {}
            Phase::LoggedIn { session, .. } => {
                session.end(&self.shared.fs).await;
                self.shared.sessions.lock().unwrap().remove(&session.sessid);
                session.set_ended();
            }
            Phase::Bound { session, pathid } => session.unbind(pathid),
        }
    }
}

/// `Break` once the link is gone.
fn flow<E>(sent: Result<(), E>) -> ControlFlow<()> {
    match sent {
        Ok(()) => ControlFlow::Continue(()),
        Err(_) => ControlFlow::Break(()),
    }
}
