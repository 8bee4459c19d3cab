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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;
use xroot_proto::request::Request;
use xroot_proto::{ClientMessage, RequestDecoder, RequestFrame, RequestId};

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
        }
    }

    /// Counts one request frame toward the server (a read whose body does
    /// not decode counts with no bytes asked).
    fn request(&mut self, frame: RequestFrame) {
        *self.requests.entry(frame.header.requestid).or_default() += 1;
        let asked: i64 = match Request::decode(frame) {
            Ok(Request::Read(r)) => r.rlen.into(),
            Ok(Request::Pgread(r)) => r.rlen.into(),
            Ok(Request::Readv(r)) => r.list.iter().map(|e| i64::from(e.rlen)).sum(),
            Ok(Request::PgReadv(r)) => r.list.iter().map(|e| i64::from(e.rlen)).sum(),
            _ => 0,
        };
        self.read_bytes_asked += asked.max(0) as u64;
    }
}

/// A running delay proxy; its listener and every relayed connection stop
/// on drop.
pub struct DelayProxy {
    /// Port on 127.0.0.1 to connect to.
    pub port: u16,
    connections: Arc<AtomicUsize>,
    traffic: Arc<Mutex<Traffic>>,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl DelayProxy {
    /// Relays connections on a free port of 127.0.0.1 to
    /// `127.0.0.1:upstream`, adding `one_way` to each direction.
    pub async fn start(upstream: u16, one_way: Duration) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let traffic: Arc<Mutex<Traffic>> = Arc::default();
        let tasks: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (n, t) = (Arc::clone(&connections), Arc::clone(&tasks));
        let seen = Arc::clone(&traffic);
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                n.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue; // dropping `client` refuses it
                };
                for s in [&client, &server] {
                    let _ = s.set_nodelay(true);
                }
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                let mut t = t.lock().unwrap();
                t.extend(relay(cr, sw, one_way, count_requests(Arc::clone(&seen))));
                let down = Arc::clone(&seen);
                t.extend(relay(sr, cw, one_way, move |chunk: &Bytes| {
                    down.lock().unwrap().bytes_to_client += chunk.len() as u64;
                }));
            }
        });
        tasks.lock().unwrap().push(accept.abort_handle());
        DelayProxy {
            port,
            connections,
            traffic,
            tasks,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// What it relayed so far.
    pub fn traffic(&self) -> Traffic {
        self.traffic.lock().unwrap().clone()
    }
}

/// An observer of the client-to-server bytes that decodes them into
/// requests and counts them in `traffic`; it goes quiet at the first bytes
/// that do not decode.
fn count_requests(traffic: Arc<Mutex<Traffic>>) -> impl FnMut(&Bytes) + Send + 'static {
    let mut decoder = Some(RequestDecoder::new().with_max_dlen(1 << 30));
    let mut pending = BytesMut::new();
    move |chunk: &Bytes| {
        let Some(dec) = decoder.as_mut() else {
            return;
        };
        pending.extend_from_slice(chunk);
        loop {
            match dec.decode(&mut pending) {
                Ok(Some(ClientMessage::Request(frame))) => traffic.lock().unwrap().request(frame),
                Ok(Some(ClientMessage::Handshake(_))) => {}
                Ok(None) => return,
                Err(_) => {
                    decoder = None;
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
/// `observe`), a writer releasing them at their time. An empty chunk stands
/// for end of stream (or a read error).
fn relay(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    delay: Duration,
    mut observe: impl FnMut(&Bytes) + Send + 'static,
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
        }
    });
    [reader.abort_handle(), writer.abort_handle()]
}
