//! One logged-in connection and its two tasks.
//!
//! The **writer** task owns the socket's write half and writes whole frames
//! taken from an unbounded queue, so a frame is never interleaved with
//! another. The **reader** task owns the read half, decodes frames and
//! routes each by streamid to the request waiting for it (a `kXR_attn`
//! asynresp to the request it names). No lock is held across an await: the
//! stream table is locked only to register a request or deliver a frame.
//! Bound substreams (`kXR_bind`) get a reader task each, routing into the
//! same table: XrdCl sends every request on the main stream and only the
//! answers to reads come back on a substream (PROTOCOL.md §9).
//!
//! With requests outstanding, a connection silent for the stream timeout
//! (counted from the last byte read or the last request written, as
//! XrdCl's `lastActivity`) is dead, declared so at that instant: each
//! reader's timer is set to when the silence would reach the timeout
//! ([`Silence`]). Times are tokio's clock. A dead link fails every waiting request
//! with a typed error, stops its tasks and closes its sockets, so the
//! server sees the session end.
//!
//! A frame is refused as soon as its length is known if it is longer than
//! its request can get ([`Link::admit`]): the link is dead then, with an
//! [`Error::Protocol`], rather than waiting for, or reading, a body that
//! would be refused anyway and that holds back every answer behind it.
//! Likewise a request whose deadline passes while a reader is stuck
//! inside a frame nobody within a deadline waits for ([`Link::expire`]):
//! no later answer could be read from that stream.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};
// tokio's clock, which a test can pause and advance
use tokio::time::Instant;
use xroot_proto::codes::{AttnAction, ResponseType};
use xroot_proto::frame::ResponseDecoder;
use xroot_proto::header::ResponseHeader;
use xroot_proto::pool::{BufferPool, PooledBuf};
use xroot_proto::request::{Ping, Request};
use xroot_proto::{DecodeError, RequestId, ResponseFrame, Status, StreamId};

use super::login::{ServerInfo, Setup};
use super::server_config::ConfigCell;
use super::streams::{Delivery, Streams};
use super::transport::{ReadHalf, WriteHalf};
use crate::error::{Error, Result};
use crate::stats::LinkStats;

/// A logged-in connection (the main stream plus any bound substreams).
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) endpoint: String,
    pub(crate) info: ServerInfo,
    out: mpsc::UnboundedSender<Bytes>,
    streams: Mutex<Streams>,
    /// `true` once the connection has failed; its tasks watch it to stop.
    dead: watch::Sender<bool>,
    /// The last byte read or request written, as nanoseconds since `epoch`.
    activity: AtomicU64,
    /// Stream inactivity is not held against the link before this instant
    /// (`kXR_wait` / `kXR_waitresp` barrier), as nanoseconds since `epoch`.
    barrier: AtomicU64,
    epoch: Instant,
    /// Bound substreams' pathids, in binding order.
    pub(crate) pathids: Mutex<Vec<u8>>,
    /// Whether each bound substream runs TLS, in binding order.
    pub(crate) path_tls: Mutex<Vec<bool>>,
    pub(crate) stats: LinkStats,
    /// Buffers of large bodies, back once the caller drops the data.
    bodies: BufferPool,
    /// Where each reader is in its stream (a packed [`Position`]), the
    /// main stream's first.
    positions: Mutex<Vec<Arc<AtomicU32>>>,
    /// The server's readv limits and extensions, once asked: one
    /// `kXR_Qconfig` per connection ([`crate::qconfig::server_config`]).
    pub(crate) server_config: ConfigCell,
}

impl Link {
    /// Starts the reader and writer tasks on a connection set up by
    /// [`super::login::establish`].
    pub(crate) fn start(setup: Setup, info: ServerInfo, stream_timeout: Duration) -> Arc<Link> {
        let endpoint = setup_endpoint(&setup);
        let (tx, rx) = mpsc::unbounded_channel();
        let link = Arc::new(Link {
            endpoint,
            info,
            out: tx,
            streams: Mutex::new(Streams::default()),
            dead: watch::channel(false).0,
            activity: AtomicU64::new(0),
            barrier: AtomicU64::new(0),
            epoch: Instant::now(),
            pathids: Mutex::new(Vec::new()),
            path_tls: Mutex::new(Vec::new()),
            stats: LinkStats::default(),
            bodies: BufferPool::new(IDLE_BODY_BUFFERS),
            positions: Mutex::new(Vec::new()),
            server_config: ConfigCell::new(),
        });
        let (read, write) = setup.sock.into_split();
        tokio::spawn(writer(
            Arc::downgrade(&link),
            write,
            rx,
            link.dead.subscribe(),
        ));
        tokio::spawn(reader(
            Arc::clone(&link),
            (read, None),
            setup.buf,
            setup.dec,
            stream_timeout,
        ));
        link
    }

    /// Adds a bound substream's socket: its frames are routed like the main
    /// stream's.
    pub(crate) fn add_substream(
        self: &Arc<Self>,
        setup: Setup,
        pathid: u8,
        stream_timeout: Duration,
    ) {
        self.pathids.lock().unwrap().push(pathid);
        self.path_tls.lock().unwrap().push(setup.sock.is_tls());
        let (read, write) = setup.sock.into_split();
        // nothing is written on a substream, but dropping the write half
        // would send a FIN and the server would end the substream: the
        // reader keeps it
        tokio::spawn(reader(
            Arc::clone(self),
            (read, Some(write)),
            setup.buf,
            setup.dec,
            stream_timeout,
        ));
    }

    /// Whether the connection has failed; a new one is needed.
    pub(crate) fn is_dead(&self) -> bool {
        *self.dead.borrow()
    }

    /// Requests waiting for an answer on this connection.
    pub(crate) fn in_flight(&self) -> usize {
        self.streams.lock().unwrap().in_flight()
    }

    /// Sends `req`, whose answer holds at most `bound` bytes of data, on a
    /// new streamid. Errors: [`Error::ConnectionLost`] if the connection is
    /// gone, [`Error::StreamIdsExhausted`].
    pub(crate) fn send(self: &Arc<Self>, req: &Request, bound: u64) -> Result<InFlight> {
        let (tx, rx) = mpsc::unbounded_channel();
        let sid = {
            let mut streams = self.streams.lock().unwrap();
            if self.is_dead() {
                return Err(self.lost());
            }
            streams
                .register(tx, bound)
                .ok_or_else(|| Error::StreamIdsExhausted {
                    endpoint: self.endpoint.clone(),
                })?
        };
        let flight = InFlight {
            link: Arc::clone(self),
            sid,
            rx,
            started: Instant::now(),
        };
        flight.resend(req)?;
        self.stats.request_started();
        Ok(flight)
    }

    /// What a request's deadline passing before its final response means
    /// for the link (the request is `sid`'s): if a reader is stuck inside
    /// a frame that no request within its deadline waits for — this
    /// request's answer, an answer whose caller gave up or that no request
    /// holds, a frame whose header has not all arrived — no later answer on
    /// that stream can be read until the frame ends, which may be never.
    /// The link is killed then: every request waiting on it fails with
    /// [`Error::ConnectionLost`], and the next request connects anew. A
    /// stream at a frame boundary, or inside a frame another request still
    /// waits for (its own deadline decides), is left as it is.
    pub(crate) fn expire(&self, sid: StreamId) {
        let sid = sid.to_u16();
        let stuck = {
            let positions = self.positions.lock().unwrap();
            let streams = self.streams.lock().unwrap();
            positions
                .iter()
                .map(|p| Position::unpack(p.load(Ordering::Acquire)))
                .find(|p| p.blocks_after(sid, |id| streams.awaited(id)))
        };
        if let Some(at) = stuck {
            self.kill(End::Stalled(at));
        }
    }

    fn lost(&self) -> Error {
        Error::ConnectionLost {
            endpoint: self.endpoint.clone(),
        }
    }

    /// Marks the connection dead, fails every request waiting on it with
    /// the error `end` calls for and makes its tasks stop (which closes the
    /// sockets).
    fn kill(&self, end: End) {
        if !self.dead.send_replace(true) {
            tracing::debug!(endpoint = %self.endpoint, why = %end, "connection closed");
        }
        self.streams.lock().unwrap().close(|| match &end {
            End::Lost(_) | End::Stalled(_) => self.lost(),
            End::Silent(after) => Error::Timeout {
                what: "stream",
                after: *after,
            },
            End::Undecodable(source) => Error::Protocol {
                endpoint: self.endpoint.clone(),
                source: source.clone(),
            },
        });
    }

    /// Nanoseconds from `epoch` to now.
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Notes traffic on the connection (restarts the stream timeout).
    fn touch(&self) {
        self.activity.fetch_max(self.now(), Ordering::AcqRel);
    }

    /// The last traffic on the connection.
    fn last_activity(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.activity.load(Ordering::Acquire))
    }

    fn hold_off_timeout(&self, seconds: i32) {
        let until = self.now() + Duration::from_secs(seconds.max(0) as u64 + 5).as_nanos() as u64;
        self.barrier.fetch_max(until, Ordering::AcqRel);
    }

    /// The end of the `kXR_wait` / `kXR_waitresp` barrier (in the past
    /// when none holds).
    fn held_off_until(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.barrier.load(Ordering::Acquire))
    }

    /// Checks a frame's body length (for `kXR_status`, status body and
    /// data) against what its request can get, as soon as the header says
    /// it: the request's bound on data ([`Streams::frame_data_bound`]) plus
    /// [`FRAME_SLACK`]. A frame longer than that is never part of a
    /// well-formed answer, and its body may never come: the stream can no
    /// longer be trusted to be at a frame boundary. Errors:
    /// [`DecodeError::LengthTooLarge`].
    fn admit(&self, header: &ResponseHeader, body: usize) -> Result<(), DecodeError> {
        let id = header.streamid.to_u16();
        let data = self.streams.lock().unwrap().frame_data_bound(id);
        let max = data.saturating_add(FRAME_SLACK);
        if body as u64 > max {
            return Err(DecodeError::LengthTooLarge {
                what: "response body (more than its request can get)",
                value: body as u64,
                max,
            });
        }
        Ok(())
    }

    /// Routes one frame from the wire.
    fn route(&self, frame: ResponseFrame) {
        let frame = match frame.header.status {
            Status::ATTN => match asynresp(&frame) {
                Some(inner) => inner,
                None => {
                    tracing::debug!(endpoint = %self.endpoint, "unsolicited kXR_attn ignored");
                    return;
                }
            },
            _ => frame,
        };
        let status = frame.header.status;
        if status == Status::WAIT || status == Status::WAITRESP {
            if let Some(secs) = frame.body.get(..4) {
                self.hold_off_timeout(i32::from_be_bytes(secs.try_into().unwrap()));
            }
        }
        let is_final = match status {
            Status::OKSOFAR | Status::WAIT | Status::WAITRESP | Status::ATTN => false,
            // bdy.resptype is byte 7 of the status body
            Status::STATUS => frame.body.get(7) == Some(&ResponseType::FINAL.0),
            _ => true,
        };
        self.stats.bytes_received(frame.wire_len());
        self.streams.lock().unwrap().deliver(frame, is_final);
    }
}

fn setup_endpoint(s: &Setup) -> String {
    s.sock
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// The response embedded in a `kXR_attn` asynresp (actnum 5008, 4 reserved
/// bytes, then a whole response: PROTOCOL.md §8.4), as a slice of the frame.
fn asynresp(frame: &ResponseFrame) -> Option<ResponseFrame> {
    let b = &frame.body;
    if b.len() < 16 || i32::from_be_bytes(b[..4].try_into().unwrap()) != AttnAction::ASYNRESP.0 {
        return None;
    }
    let header = ResponseHeader::decode(&b[8..16]).ok()?;
    Some(ResponseFrame {
        header,
        body: b.slice(16..),
    })
}

/// A request on the wire: receives its frames until the final one.
#[derive(Debug)]
pub(crate) struct InFlight {
    pub(crate) link: Arc<Link>,
    pub(crate) sid: StreamId,
    rx: mpsc::UnboundedReceiver<Delivery>,
    started: Instant,
}

impl InFlight {
    /// (Re)writes `req` with this request's streamid (the resend after
    /// `kXR_wait` keeps it, PROTOCOL.md §8.4).
    pub(crate) fn resend(&self, req: &Request) -> Result<()> {
        let mut buf = BytesMut::new();
        req.encode(self.sid, &mut buf);
        self.link.stats.bytes_sent(buf.len());
        self.link.touch();
        self.link
            .out
            .send(buf.freeze())
            .map_err(|_| self.link.lost())
    }

    /// This request's deadline passed before its final response: see
    /// [`Link::expire`].
    pub(crate) fn expire(&self) {
        self.link.expire(self.sid);
    }

    /// The next frame for this request. Errors: [`Error::ConnectionLost`]
    /// when the connection drops first.
    pub(crate) async fn next(&mut self) -> Result<ResponseFrame> {
        match self.rx.recv().await {
            Some(d) => d,
            None => Err(self.link.lost()),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.link.stats.request_finished(self.started.elapsed());
    }
}

async fn writer(
    link: std::sync::Weak<Link>,
    mut sock: WriteHalf,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    mut dead: watch::Receiver<bool>,
) {
    // Small frames queued together go out in one write; large ones as they are.
    const COALESCE: usize = 64 * 1024;
    let mut batch = BytesMut::new();
    loop {
        let first = tokio::select! {
            first = rx.recv() => first,
            // the link failed: dropping `sock` closes our side
            _ = dead.wait_for(|d| *d) => return,
        };
        let Some(first) = first else { break };
        let mut result = Ok(());
        let mut pending = Some(first);
        while let Some(frame) = pending.take() {
            if frame.len() >= COALESCE {
                if !batch.is_empty() {
                    result = sock.write_all(&batch.split()).await;
                }
                if result.is_ok() {
                    result = sock.write_all(&frame).await;
                }
            } else {
                batch.extend_from_slice(&frame);
            }
            if result.is_err() {
                break;
            }
            if batch.len() < COALESCE {
                pending = rx.try_recv().ok();
            }
        }
        if result.is_ok() && !batch.is_empty() {
            result = sock.write_all(&batch.split()).await;
        }
        // TLS keeps the last record buffered until flushed (a no-op on TCP)
        if result.is_ok() {
            result = sock.flush().await;
        }
        if let Err(e) = result {
            if let Some(link) = link.upgrade() {
                link.kill(End::Lost(format!("write failed: {e}")));
            }
            return;
        }
    }
    // every sender is gone: the link was dropped
    let _ = sock.shutdown().await;
}

/// What a stream's reader knows when its silence timer fires: with
/// requests outstanding, a connection is dead once it has been silent for
/// the stream timeout since its last activity (a byte read or a request
/// written, XrdCl's `lastActivity`) and no `kXR_wait` barrier holds
/// (PROTOCOL.md §9).
#[derive(Debug, Clone, Copy)]
struct Silence {
    last_activity: Instant,
    held_off_until: Instant,
    outstanding: bool,
    timeout: Duration,
}

/// What the reader does at a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Silent too long with requests outstanding.
    Dead,
    /// Check again at this instant.
    Again(Instant),
}

impl Silence {
    /// The verdict at `now`, and otherwise the next check: the instant the
    /// connection would be silent too long (the stream timeout after the
    /// last activity, or the end of the barrier if later), so that it is
    /// declared dead then and not a whole timeout after some check; when
    /// that has passed with nothing outstanding, a timeout from now.
    fn check(&self, now: Instant) -> Check {
        let due = (self.last_activity + self.timeout).max(self.held_off_until);
        if self.outstanding && now >= due {
            return Check::Dead;
        }
        match due > now {
            true => Check::Again(due),
            false => Check::Again(now + self.timeout),
        }
    }
}

/// Why a connection ended, which decides what its waiting requests get.
enum End {
    /// Closed, failed, or no longer used: [`Error::ConnectionLost`].
    Lost(String),
    /// Silent this long with requests outstanding: [`Error::Timeout`].
    Silent(Duration),
    /// A frame that does not decode: [`Error::Protocol`].
    Undecodable(DecodeError),
    /// A request's deadline passed with a reader stuck here ([`Link::expire`]):
    /// [`Error::ConnectionLost`].
    Stalled(Position),
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Lost(why) => f.write_str(why),
            End::Silent(after) => write!(f, "no data for {after:?} with requests outstanding"),
            End::Undecodable(e) => write!(f, "undecodable frame: {e}"),
            End::Stalled(Position::InFrame(id)) => write!(
                f,
                "a request deadline passed inside a frame for streamid {id} that cannot end"
            ),
            End::Stalled(_) => f.write_str("a request deadline passed inside a frame header"),
        }
    }
}

/// Where a reader is in its stream, as [`Link::expire`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// At a frame boundary: nothing of the next frame has arrived.
    Between,
    /// Inside a frame whose header has not all arrived.
    InHeader,
    /// Inside a frame on this streamid (0: a `kXR_attn`).
    InFrame(u16),
}

impl Position {
    /// Where a reader is with `buf` left after decoding (less than a
    /// frame) and `body` being collected.
    fn of(buf: &[u8], body: Option<&Body>) -> Position {
        match body {
            Some(b) => Position::InFrame(b.header.streamid.to_u16()),
            None if buf.len() >= ResponseHeader::LEN => {
                Position::InFrame(StreamId([buf[0], buf[1]]).to_u16())
            }
            None if !buf.is_empty() => Position::InHeader,
            None => Position::Between,
        }
    }

    /// Whether a reader here blocks its stream for good once the request
    /// on `expired` has passed its deadline: inside a frame header, or
    /// inside a frame for that request or for one nobody `awaited` (a
    /// caller that gave up, no request at all, a `kXR_attn`). Inside the
    /// frame of a request still waiting, that request's deadline decides.
    fn blocks_after(self, expired: u16, awaited: impl Fn(u16) -> bool) -> bool {
        match self {
            Position::Between => false,
            Position::InHeader => true,
            Position::InFrame(id) => id == expired || !awaited(id),
        }
    }

    fn pack(self) -> u32 {
        match self {
            Position::Between => 0,
            Position::InHeader => 1,
            Position::InFrame(id) => 1 << 16 | id as u32,
        }
    }

    fn unpack(v: u32) -> Position {
        match v {
            0 => Position::Between,
            1 => Position::InHeader,
            v => Position::InFrame(v as u16),
        }
    }
}

/// What a frame may carry beyond the data its request can get: a
/// `kXR_status` body, an error or wait message, a redirect's URL with its
/// CGI (tokens included), the `kXR_attn` wrapper of an asynresp.
pub(crate) const FRAME_SLACK: u64 = 64 << 10;

/// A body of at least this many bytes (and at most 16 MiB) is read into a
/// buffer of its own (from the link's pool), straight from the socket.
const LARGE_BODY: usize = 128 << 10;

/// Idle body buffers a link keeps for reuse: 16 MiB (eight of the 2 MiB
/// chunks the stock server answers reads with over TLS).
const IDLE_BODY_BUFFERS: usize = 16 << 20;

/// A large body being read into its buffer.
struct Body {
    header: ResponseHeader,
    buf: PooledBuf,
    filled: usize,
}

/// Reads the frames of one stream (main or bound) until the link dies.
/// `sock` is the read half and, for a substream, its write half, held
/// (unused) until the reader ends so that the socket stays open.
///
/// A large body (`LARGE_BODY`) goes into a buffer of the link's pool
/// instead of the frame buffer: a buffer reused once its data is dropped
/// costs no page faults, where fresh memory of that size does (see
/// [`xroot_proto::pool`]).
async fn reader(
    link: Arc<Link>,
    (mut sock, _write): (ReadHalf, Option<WriteHalf>),
    mut buf: BytesMut,
    mut dec: ResponseDecoder,
    stream_timeout: Duration,
) {
    let mut dead = link.dead.subscribe();
    let position = Arc::new(AtomicU32::new(Position::Between.pack()));
    link.positions.lock().unwrap().push(Arc::clone(&position));
    let mut check_at = link.last_activity() + stream_timeout;
    let mut body: Option<Body> = None;
    // whether the frame being read has passed `Link::admit`
    let mut admitted = false;
    let end = loop {
        match body.take() {
            Some(b) if b.filled == b.buf.len() => {
                let len = b.filled;
                link.route(ResponseFrame {
                    header: b.header,
                    body: b.buf.freeze(len),
                });
                admitted = false;
                continue;
            }
            Some(b) => body = Some(b),
            None => match dec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    if !admitted {
                        if let Err(e) = link.admit(&frame.header, frame.body.len()) {
                            break End::Undecodable(e);
                        }
                    }
                    admitted = false;
                    link.route(frame);
                    continue;
                }
                Ok(None) => {
                    // the frame's length is known: checked before its body is awaited
                    if let (Some(total), false) = (dec.pending_len(), admitted) {
                        let checked = ResponseHeader::decode(&buf)
                            .and_then(|h| link.admit(&h, total - ResponseHeader::LEN));
                        if let Err(e) = checked {
                            break End::Undecodable(e);
                        }
                        admitted = true;
                    }
                    let large = match dec.pending_len() {
                        // larger bodies grow in `buf` as they arrive
                        Some(total) if total <= 16 << 20 => {
                            dec.take_large_body(&mut buf, LARGE_BODY)
                        }
                        _ => None,
                    };
                    if let Some(large) = large {
                        let mut into = link.bodies.take(large.len);
                        into.as_mut_slice()[..large.head.len()].copy_from_slice(&large.head);
                        body = Some(Body {
                            header: large.header,
                            buf: into,
                            filled: large.head.len(),
                        });
                        continue;
                    }
                }
                Err(e) => break End::Undecodable(e),
            },
        }
        if body.is_none() {
            // room for the rest of the frame in one step, at most 16 MiB
            // ahead of what has arrived
            let want = dec
                .pending_len()
                .map_or(64 * 1024, |total| total.saturating_sub(buf.len()))
                .clamp(16 * 1024, 16 << 20);
            if buf.capacity() - buf.len() < want {
                buf.reserve(want);
            }
        }
        position.store(Position::of(&buf, body.as_ref()).pack(), Ordering::Release);
        tokio::select! {
            read = read_some(&mut sock, &mut buf, body.as_mut()) => match read {
                Ok(0) => break End::Lost("closed by the server".to_string()),
                Ok(_) => link.touch(),
                Err(e) => break End::Lost(format!("read failed: {e}")),
            },
            _ = tokio::time::sleep_until(check_at) => {
                let silence = Silence {
                    last_activity: link.last_activity(),
                    held_off_until: link.held_off_until(),
                    outstanding: link.in_flight() > 0,
                    timeout: stream_timeout,
                };
                match silence.check(Instant::now()) {
                    Check::Dead => break End::Silent(stream_timeout),
                    Check::Again(at) => check_at = at,
                }
                // a dropped link (no requests, no owner but its readers)
                // ends its readers
                if Arc::strong_count(&link) <= 1 + link.pathids.lock().unwrap().len() {
                    break End::Lost("no longer used".to_string());
                }
            }
            _ = dead.wait_for(|d| *d) => break End::Lost("failed elsewhere".to_string()),
        }
    };
    // a substream failing fails the link too: answers routed to it would never come
    link.kill(end);
}

/// One read from `sock`: into the large body being collected, else onto
/// the end of `buf`. Bytes read; 0 at end of stream. Cancel-safe.
async fn read_some(
    sock: &mut ReadHalf,
    buf: &mut BytesMut,
    body: Option<&mut Body>,
) -> std::io::Result<usize> {
    match body {
        Some(b) => {
            let n = sock.read(&mut b.buf.as_mut_slice()[b.filled..]).await?;
            b.filled += n;
            Ok(n)
        }
        None => sock.read_buf(buf).await,
    }
}

/// Substream selection for reads (PROTOCOL.md §5.4, §9): XrdCl sends every
/// request on the main stream and gives reads the pathid of the
/// least-loaded bound substream, on which the server answers.
impl Link {
    /// Takes the bound substream with the fewest reads in flight (equals
    /// in turn) for one read: the read counts against it
    /// until the returned lease is dropped. `None` when no substream is
    /// bound: the read goes with pathid 0, the main stream.
    pub(crate) fn read_path(self: &Arc<Self>) -> Option<PathLease> {
        let bound = self.pathids.lock().unwrap();
        let pathid = self.stats.take_path(&bound)?;
        Some(PathLease {
            link: Arc::clone(self),
            pathid,
        })
    }

    /// Gives a `kXR_read` (in its `read_args`), `kXR_pgread` (in its args)
    /// or `kXR_readv` (header byte 19; the stock server ignores it and
    /// answers on the main stream) the pathid of [`Link::read_path`], and
    /// returns it with the lease to hold until the final response. Other
    /// requests, and every request on a link without substreams, come back
    /// unchanged with no lease.
    pub(crate) fn route_read(self: &Arc<Self>, mut req: Request) -> (Request, Option<PathLease>) {
        if !matches!(
            req,
            Request::Read(_) | Request::Pgread(_) | Request::Readv(_)
        ) {
            return (req, None);
        }
        let Some(lease) = self.read_path() else {
            return (req, None);
        };
        match &mut req {
            Request::Read(r) => r.args.get_or_insert_with(Default::default).pathid = lease.pathid,
            Request::Pgread(r) => r.args.get_or_insert_with(Default::default).pathid = lease.pathid,
            Request::Readv(r) => r.pathid = lease.pathid,
            _ => {}
        }
        (req, Some(lease))
    }

    /// One `kXR_ping` round trip. xrootd handles a link's requests one at
    /// a time, so the answer also means the login before it is complete: it
    /// sends the login reply before it marks the session logged in, and a
    /// `kXR_bind` in between is refused ("session not logged in").
    /// Errors: [`Error::ConnectionLost`], [`Error::UnexpectedResponse`] for
    /// an answer other than `kXR_ok`.
    pub(crate) async fn ping(self: &Arc<Self>) -> Result<()> {
        let frame = self.send(&Ping {}.into(), 0)?.next().await?;
        match frame.header.status {
            Status::OK => Ok(()),
            other => Err(Error::unexpected(RequestId::PING, other.to_string())),
        }
    }
}

/// One read counted against a bound substream (see [`Link::read_path`]);
/// dropping it, at the read's final response, releases the count.
#[derive(Debug)]
pub(crate) struct PathLease {
    link: Arc<Link>,
    /// The substream's pathid (1..15 for xrootd).
    pathid: u8,
}

impl Drop for PathLease {
    fn drop(&mut self) {
        self.link.stats.path_released(self.pathid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_drops_the_link_only_inside_a_frame_nobody_else_awaits() {
        let positions = [
            Position::Between,
            Position::InHeader,
            Position::InFrame(0),
            Position::InFrame(7),
            Position::InFrame(u16::MAX),
        ];
        for p in positions {
            assert_eq!(Position::unpack(p.pack()), p);
        }
        // request 7 expires; 8 still waits; 9 was given up
        let awaited = |id| id == 7 || id == 8;
        let blocks = |p: Position| p.blocks_after(7, awaited);
        assert!(!blocks(Position::Between));
        assert!(blocks(Position::InHeader));
        assert!(blocks(Position::InFrame(7)), "its own answer");
        assert!(!blocks(Position::InFrame(8)), "8's deadline decides");
        assert!(blocks(Position::InFrame(9)), "given up");
        assert!(blocks(Position::InFrame(0)), "kXR_attn");

        let header = [0, 7, 0, 0, 0, 0, 1, 0];
        assert_eq!(Position::of(&[], None), Position::Between);
        assert_eq!(Position::of(&header[..5], None), Position::InHeader);
        assert_eq!(Position::of(&header, None), Position::InFrame(7));
    }

    #[test]
    fn silence_is_counted_from_the_last_activity_not_from_a_check() {
        let t0 = Instant::now();
        let s = |secs: f64| t0 + Duration::from_secs_f64(secs);
        let silence = |last, outstanding| Silence {
            last_activity: s(last),
            held_off_until: t0,
            outstanding,
            timeout: Duration::from_secs(60),
        };
        // idle: nothing to time out; look again a timeout later
        assert_eq!(silence(0.0, false).check(s(60.0)), Check::Again(s(120.0)));
        // a request written just after that check: dead a timeout after
        // it, not a timeout after the next check
        assert_eq!(silence(60.5, true).check(s(120.0)), Check::Again(s(120.5)));
        assert_eq!(silence(60.5, true).check(s(120.5)), Check::Dead);
        // traffic keeps it alive
        assert_eq!(silence(50.0, true).check(s(60.0)), Check::Again(s(110.0)));
        // a kXR_wait barrier holds it off until it ends
        let waiting = Silence {
            held_off_until: s(100.0),
            ..silence(0.0, true)
        };
        assert_eq!(waiting.check(s(60.0)), Check::Again(s(100.0)));
        assert_eq!(waiting.check(s(100.0)), Check::Dead);
    }
}
