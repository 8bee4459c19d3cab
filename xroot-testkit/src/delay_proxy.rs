//! A TCP relay on 127.0.0.1 that adds a fixed one-way delay to every chunk
//! in both directions, so that the round trip through it is twice the
//! delay (`one_way = 25 ms` gives a 50 ms RTT).
//!
//! It is never the bottleneck: each direction has a reader that stamps a
//! chunk with `arrival + delay` the moment it arrives and queues it, and a
//! writer that sends each chunk when its time comes, together with every
//! later chunk already due. Chunks are never delayed one after another, no
//! bandwidth is capped, and the order of bytes is kept. End of stream is
//! passed on after the delay too.
//!
//! It also counts what it relays ([`Traffic`]): bytes toward the client,
//! and the requests toward the server, decoded with xroot-proto on a copy
//! of the stream (the relayed bytes are untouched; if they stop decoding,
//! counting stops and relaying goes on).
//!
//! And it counts round trips by causality, not by the clock
//! ([`Traffic::round_trips`]): a request (or handshake) belongs to wave
//! `n + 1` when the highest wave of the answers the relay had delivered to
//! the client, on any of its connections, was `n` when the request
//! arrived; an answer is of its request's wave (matched by connection and
//! streamid, in order). Requests sent together, before any of them is
//! answered, share a wave; a request sent after an answer came may depend
//! on it, so it starts a new one. The count is the length of the longest
//! chain: an upper bound of the round trips a client waited for, which
//! is exact when the client's requests wait only on their own answers.
//!
//! And it keeps a timeline ([`DelayProxy::timeline`]): each request (and
//! handshake) with its connection, streamid, offset and length, when it
//! reached the relay and when its last answer frame was delivered to the
//! client, the first [`TIMELINE_CAP`] of them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::time::Instant as StdInstant;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;
use xroot_proto::request::Request;
use xroot_proto::{
    ClientMessage, RequestDecoder, RequestFrame, RequestId, ResponseDecoder, ResponseHeader,
    Status, StreamId,
};

/// What a [`DelayProxy`] relayed, over all its connections; units are
/// bytes and requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes relayed from the server to the client (whole frames).
    pub bytes_to_client: u64,
    /// Requests relayed to the server, by request id.
    pub requests: BTreeMap<RequestId, u64>,
    /// Bytes the relayed reads asked for: `rlen` of each `kXR_read` and
    /// `kXR_pgread`, the sum of the elements' `rlen` of each `kXR_readv`
    /// and `kXR_pgreadv`.
    pub read_bytes_asked: u64,
    /// The highest wave so far (see the module's docs): round trips on
    /// the longest chain of requests each sent after an answer came.
    pub round_trips: u64,
    /// Requests by wave, by request id (a handshake is not a request and
    /// is not listed, though it has a wave).
    pub waves: BTreeMap<u64, BTreeMap<RequestId, u64>>,
}

impl Traffic {
    /// Requests of kind `id` relayed.
    pub fn count(&self, id: RequestId) -> u64 {
        self.requests.get(&id).copied().unwrap_or(0)
    }

    /// Read requests relayed: `kXR_read`, `kXR_pgread`, `kXR_readv` and
    /// `kXR_pgreadv`.
    pub fn reads(&self) -> u64 {
        [
            RequestId::READ,
            RequestId::PGREAD,
            RequestId::READV,
            RequestId::PGREADV,
        ]
        .into_iter()
        .map(|id| self.count(id))
        .sum()
    }

    /// What was relayed after `earlier`, a snapshot of the same proxy.
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            bytes_to_client: self.bytes_to_client - earlier.bytes_to_client,
            requests: self
                .requests
                .iter()
                .map(|(&id, &n)| (id, n - earlier.count(id)))
                .collect(),
            read_bytes_asked: self.read_bytes_asked - earlier.read_bytes_asked,
            round_trips: self.round_trips - earlier.round_trips,
            waves: self
                .waves
                .range(earlier.round_trips + 1..)
                .map(|(&w, ids)| (w - earlier.round_trips, ids.clone()))
                .collect(),
        }
    }

    /// The requests of each wave, one line per wave:
    /// `1: kXR_protocol 1, kXR_login 1`.
    pub fn waves_text(&self) -> String {
        self.waves
            .iter()
            .map(|(w, ids)| {
                let ids: Vec<String> = ids.iter().map(|(id, n)| format!("{id} {n}")).collect();
                format!("{w}: {}\n", ids.join(", "))
            })
            .collect()
    }

    /// Counts one request frame toward the server, of wave `wave` (a read
    /// whose body does not decode counts with no bytes asked); a read's
    /// offset (its first element's) and bytes asked, `(0, 0)` for others.
    fn request(&mut self, frame: RequestFrame, wave: u64) -> (u64, u64) {
        *self.requests.entry(frame.header.requestid).or_default() += 1;
        *self
            .waves
            .entry(wave)
            .or_default()
            .entry(frame.header.requestid)
            .or_default() += 1;
        let (offset, asked): (i64, i64) = match Request::decode(frame) {
            Ok(Request::Read(r)) => (r.offset, r.rlen.into()),
            Ok(Request::Pgread(r)) => (r.offset, r.rlen.into()),
            Ok(Request::Readv(r)) => (
                r.list.first().map_or(0, |e| e.offset),
                r.list.iter().map(|e| i64::from(e.rlen)).sum(),
            ),
            Ok(Request::PgReadv(r)) => (
                r.list.first().map_or(0, |e| e.offset),
                r.list.iter().map(|e| i64::from(e.rlen)).sum(),
            ),
            _ => (0, 0),
        };
        let asked = asked.max(0) as u64;
        self.read_bytes_asked += asked;
        (offset.max(0) as u64, asked)
    }
}

/// Most [`Exchange`]s a proxy keeps (about 64 bytes each); later ones are
/// counted in [`Timeline::left_out`] only.
pub const TIMELINE_CAP: usize = 1 << 16;

/// One request (or handshake) relayed toward the server, and when it was
/// answered; times from the proxy's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    /// The relayed connection (numbered from 0 in accept order).
    pub conn: usize,
    /// The request's streamid ([`StreamId::ZERO`] for the handshake).
    pub streamid: StreamId,
    /// The request id; `None` for the handshake.
    pub request: Option<RequestId>,
    /// A read's offset in bytes (the first element's for a vector read);
    /// 0 for others.
    pub offset: u64,
    /// The bytes a read asked (see [`Traffic::read_bytes_asked`]); 0 for
    /// others.
    pub len: u64,
    /// When the request reached the relay (the client sent it then).
    pub sent: Duration,
    /// When the relay delivered its final answer frame to the client (not
    /// `kXR_oksofar`, `kXR_wait`, `kXR_waitresp`); `None` while not.
    pub answered: Option<Duration>,
}

/// The [`Exchange`]s a proxy relayed, in the order requests arrived.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The first [`TIMELINE_CAP`] exchanges.
    pub exchanges: Vec<Exchange>,
    /// Exchanges past the cap, not kept.
    pub left_out: u64,
}

impl Timeline {
    /// The exchanges sent at or after `from` (a time from the proxy's
    /// start, [`DelayProxy::now`]).
    pub fn since(&self, from: Duration) -> Vec<Exchange> {
        self.exchanges
            .iter()
            .filter(|e| e.sent >= from)
            .copied()
            .collect()
    }
}

/// What the proxy's observers share: the counts, and what the round trip
/// count needs (the highest wave delivered, the waves of the requests
/// awaiting answers), and the timeline.
#[derive(Debug)]
struct Counted {
    traffic: Traffic,
    /// The highest wave of the answers delivered to the client so far.
    delivered: u64,
    /// By connection and streamid: the waves of the requests sent and not
    /// yet answered, oldest first, each with its exchange's index in
    /// `timeline` (`None` past the cap).
    pending: HashMap<(usize, StreamId), VecDeque<Pending>>,
    /// The proxy's start: the timeline's zero.
    start: StdInstant,
    timeline: Timeline,
}

/// A request awaiting its answer: its wave, and its exchange's index in
/// the timeline (`None` past [`TIMELINE_CAP`]).
type Pending = (u64, Option<usize>);

impl Default for Counted {
    fn default() -> Counted {
        Counted {
            traffic: Traffic::default(),
            delivered: 0,
            pending: HashMap::new(),
            start: StdInstant::now(),
            timeline: Timeline::default(),
        }
    }
}

impl Counted {
    /// A request (or the handshake, `frame` `None`) on connection `conn`
    /// arrived at the relay.
    fn sent(&mut self, conn: usize, streamid: StreamId, frame: Option<RequestFrame>) {
        let wave = self.delivered + 1;
        self.traffic.round_trips = self.traffic.round_trips.max(wave);
        let request = frame.as_ref().map(|f| f.header.requestid);
        let (offset, len) = match frame {
            Some(frame) => self.traffic.request(frame, wave),
            None => (0, 0),
        };
        let index = if self.timeline.exchanges.len() < TIMELINE_CAP {
            self.timeline.exchanges.push(Exchange {
                conn,
                streamid,
                request,
                offset,
                len,
                sent: self.start.elapsed(),
                answered: None,
            });
            Some(self.timeline.exchanges.len() - 1)
        } else {
            self.timeline.left_out += 1;
            None
        };
        self.pending
            .entry((conn, streamid))
            .or_default()
            .push_back((wave, index));
    }

    /// An answer on connection `conn` was delivered to the client.
    fn answered(&mut self, conn: usize, header: &ResponseHeader) {
        let Some(waves) = self.pending.get_mut(&(conn, header.streamid)) else {
            return; // unsolicited
        };
        let partial = [Status::OKSOFAR, Status::WAIT, Status::WAITRESP];
        let (wave, done) = if partial.contains(&header.status) {
            (waves.front().copied(), None)
        } else {
            let w = waves.pop_front();
            (w, w.and_then(|(_, index)| index))
        };
        if let Some((w, _)) = wave {
            self.delivered = self.delivered.max(w);
        }
        if let Some(e) = done.and_then(|i| self.timeline.exchanges.get_mut(i)) {
            e.answered = Some(self.start.elapsed());
        }
    }
}

/// A running delay proxy; its listener and every relayed connection stop
/// on drop.
pub struct DelayProxy {
    /// Port on 127.0.0.1 to connect to.
    pub port: u16,
    connections: Arc<AtomicUsize>,
    counted: Arc<Mutex<Counted>>,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl DelayProxy {
    /// Relays connections on a free port of 127.0.0.1 to
    /// `127.0.0.1:upstream`, adding `one_way` to each direction.
    pub async fn start(upstream: u16, one_way: Duration) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted: Arc<Mutex<Counted>> = Arc::default();
        let tasks: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (n, t) = (Arc::clone(&connections), Arc::clone(&tasks));
        let seen = Arc::clone(&counted);
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let conn = n.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue; // dropping `client` refuses it
                };
                for s in [&client, &server] {
                    let _ = s.set_nodelay(true);
                }
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                let mut t = t.lock().unwrap();
                let up = count_requests(Arc::clone(&seen), conn);
                t.extend(relay(cr, sw, one_way, up, |_: &Bytes| {}));
                let down = Arc::clone(&seen);
                let delivered = count_answers(Arc::clone(&seen), conn);
                let arrived = move |chunk: &Bytes| {
                    down.lock().unwrap().traffic.bytes_to_client += chunk.len() as u64;
                };
                t.extend(relay(sr, cw, one_way, arrived, delivered));
            }
        });
        tasks.lock().unwrap().push(accept.abort_handle());
        DelayProxy {
            port,
            connections,
            counted,
            tasks,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// What it relayed so far.
    pub fn traffic(&self) -> Traffic {
        self.counted.lock().unwrap().traffic.clone()
    }

    /// The time since the proxy started, the timeline's clock.
    pub fn now(&self) -> Duration {
        self.counted.lock().unwrap().start.elapsed()
    }

    /// The requests relayed so far and their answers, in arrival order.
    pub fn timeline(&self) -> Timeline {
        self.counted.lock().unwrap().timeline.clone()
    }
}

/// An observer of the client-to-server bytes of connection `conn` that
/// decodes them into requests and counts them.
fn count_requests(
    counted: Arc<Mutex<Counted>>,
    conn: usize,
) -> impl FnMut(&Bytes) + Send + 'static {
    let mut decoder = RequestDecoder::new().with_max_dlen(1 << 30);
    decoding(
        move |buf| decoder.decode(buf).map_err(drop),
        move |message| match message {
            ClientMessage::Request(frame) => {
                let streamid = frame.header.streamid;
                counted.lock().unwrap().sent(conn, streamid, Some(frame));
            }
            ClientMessage::Handshake(_) => {
                counted.lock().unwrap().sent(conn, StreamId::ZERO, None);
            }
        },
    )
}

/// An observer of the server-to-client bytes of connection `conn` as they
/// are delivered: decodes them into answers (the handshake's first) and
/// marks their waves delivered.
fn count_answers(counted: Arc<Mutex<Counted>>, conn: usize) -> impl FnMut(&Bytes) + Send + 'static {
    let mut decoder = ResponseDecoder::new().with_max_dlen(1 << 30);
    decoding(
        move |buf| decoder.decode(buf).map_err(drop),
        move |frame| counted.lock().unwrap().answered(conn, &frame.header),
    )
}

/// An observer of a byte stream: `decode` takes whole messages off the
/// bytes gathered so far, each handed to `each`; it goes quiet at the
/// first bytes that do not decode (relaying goes on).
fn decoding<T>(
    mut decode: impl FnMut(&mut BytesMut) -> Result<Option<T>, ()> + Send + 'static,
    mut each: impl FnMut(T) + Send + 'static,
) -> impl FnMut(&Bytes) + Send + 'static {
    let mut pending = BytesMut::new();
    let mut quiet = false;
    move |chunk: &Bytes| {
        if quiet {
            return;
        }
        pending.extend_from_slice(chunk);
        loop {
            match decode(&mut pending) {
                Ok(Some(message)) => each(message),
                Ok(None) => return,
                Err(()) => {
                    quiet = true;
                    return;
                }
            }
        }
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

/// One direction: a reader stamping chunks (and showing each to
/// `observe` as it arrives), a writer releasing them at their time (and
/// showing each batch to `delivered` once written). An empty chunk stands
/// for end of stream (or a read error).
fn relay(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    delay: Duration,
    mut observe: impl FnMut(&Bytes) + Send + 'static,
    mut delivered: impl FnMut(&Bytes) + Send + 'static,
) -> [AbortHandle; 2] {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Bytes)>();
    let reader = tokio::spawn(async move {
        loop {
            let mut buf = BytesMut::with_capacity(256 * 1024);
            let n = from.read_buf(&mut buf).await.unwrap_or(0);
            let due = Instant::now() + delay;
            let buf = buf.freeze();
            observe(&buf);
            if tx.send((due, buf)).is_err() || n == 0 {
                return;
            }
        }
    });
    let writer = tokio::spawn(async move {
        let mut next = None;
        loop {
            let queued = match next.take() {
                Some(chunk) => Some(chunk),
                None => rx.recv().await,
            };
            let Some((due, chunk)) = queued else {
                return;
            };
            tokio::time::sleep_until(due).await;
            let mut eof = chunk.is_empty();
            let mut batch = BytesMut::from(&chunk[..]);
            // everything else already due goes in the same write
            while !eof {
                match rx.try_recv() {
                    Ok((d, c)) if d <= Instant::now() => {
                        eof = c.is_empty();
                        batch.extend_from_slice(&c);
                    }
                    Ok(later) => {
                        next = Some(later);
                        break;
                    }
                    Err(_) => break,
                }
            }
            if to.write_all(&batch).await.is_err() || eof {
                let _ = to.shutdown().await;
                return;
            }
            delivered(&batch.freeze());
        }
    });
    [reader.abort_handle(), writer.abort_handle()]
}
