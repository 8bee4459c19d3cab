//! A relay on 127.0.0.1 between a client and a server that spoils page
//! data on its way, to prove that pgread and pgwrite find and repair bad
//! pages.
//!
//! Every frame is decoded with xroot-proto (`RequestDecoder` toward the
//! server, `ResponseDecoder` toward the client) and re-encoded unchanged,
//! except that, per [`Spoil`], one byte of the first page's data in a
//! `kXR_status` pgread frame (server to client) or a `kXR_pgwrite` request
//! (client to server) is flipped. The crc32c sent with the page stays, so
//! the receiver sees a page whose checksum does not match; the status-body
//! crc does not cover the data and still matches. The proxy counts the
//! requests it forwards, by request id, and the `kXR_pgRetry` ones. What
//! it spoils can be changed while it runs ([`CorruptProxy::set_spoil`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use xroot_proto::request::{PgReqFlags, Request};
use xroot_proto::{ClientMessage, RequestDecoder, RequestId, ResponseDecoder, Status};

/// Which page data the proxy spoils.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spoil {
    /// Nothing: a plain relay that counts requests.
    Nothing,
    /// The first pgread frame with data (since the proxy started or
    /// [`CorruptProxy::set_spoil`]), then nothing.
    FirstPgread,
    /// Every pgread frame with data (its first page), retries included.
    EveryPgread,
    /// The first pgwrite request (since the proxy started or
    /// [`CorruptProxy::set_spoil`]), then nothing.
    FirstPgwrite,
    /// Every pgwrite request (its first page), retries included.
    EveryPgwrite,
}

/// What the proxy spoils and what it saw.
#[derive(Debug)]
struct Counters {
    /// The current [`Spoil`] and whether its one frame (for the `First`
    /// kinds) is still to be spoiled.
    spoil: Mutex<(Spoil, bool)>,
    pgread_retries: AtomicUsize,
    pgwrite_retries: AtomicUsize,
    spoiled: AtomicUsize,
    requests: Mutex<HashMap<RequestId, usize>>,
}

/// A running relay; stopped when dropped.
pub struct CorruptProxy {
    /// The port on 127.0.0.1 to connect to instead of the server.
    pub port: u16,
    counters: Arc<Counters>,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl CorruptProxy {
    /// Listens on an ephemeral port of 127.0.0.1 and relays every
    /// connection to `127.0.0.1:upstream`.
    pub async fn start(upstream: u16, spoil: Spoil) -> CorruptProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let counters = Arc::new(Counters {
            spoil: Mutex::new((spoil, true)),
            pgread_retries: AtomicUsize::new(0),
            pgwrite_retries: AtomicUsize::new(0),
            spoiled: AtomicUsize::new(0),
            requests: Mutex::default(),
        });
        let tasks = Arc::new(Mutex::new(Vec::new()));
        let (c, t) = (Arc::clone(&counters), Arc::clone(&tasks));
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                let up = tokio::spawn(to_server(cr, sw, Arc::clone(&c)));
                let down = tokio::spawn(to_client(sr, cw, Arc::clone(&c)));
                t.lock()
                    .unwrap()
                    .extend([up.abort_handle(), down.abort_handle()]);
            }
        });
        tasks.lock().unwrap().push(accept.abort_handle());
        CorruptProxy {
            port,
            counters,
            tasks,
        }
    }

    /// What it spoils now.
    pub fn spoil(&self) -> Spoil {
        self.counters.spoil.lock().unwrap().0
    }

    /// Spoils per `spoil` from now on, on every connection (open or new);
    /// a `First` kind spoils the next such frame.
    pub fn set_spoil(&self, spoil: Spoil) {
        *self.counters.spoil.lock().unwrap() = (spoil, true);
    }

    /// `kXR_pgread` requests with `kXR_pgRetry` forwarded so far.
    pub fn pgread_retries(&self) -> usize {
        self.counters.pgread_retries.load(Ordering::SeqCst)
    }

    /// `kXR_pgwrite` requests with `kXR_pgRetry` forwarded so far.
    pub fn pgwrite_retries(&self) -> usize {
        self.counters.pgwrite_retries.load(Ordering::SeqCst)
    }

    /// Requests with id `id` forwarded so far.
    pub fn requests(&self, id: RequestId) -> usize {
        let seen = self.counters.requests.lock().unwrap();
        seen.get(&id).copied().unwrap_or(0)
    }

    /// Frames spoiled so far.
    pub fn spoiled(&self) -> usize {
        self.counters.spoiled.load(Ordering::SeqCst)
    }
}

impl Drop for CorruptProxy {
    fn drop(&mut self) {
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

/// Whether the frame at hand, a pgread answer (`pgread`) or a pgwrite
/// request, is to be spoiled under the current [`Spoil`]; counts the
/// frames spoiled.
fn take_turn(pgread: bool, counters: &Counters) -> bool {
    let (first, every) = match pgread {
        true => (Spoil::FirstPgread, Spoil::EveryPgread),
        false => (Spoil::FirstPgwrite, Spoil::EveryPgwrite),
    };
    let mut spoil = counters.spoil.lock().unwrap();
    let hit = match *spoil {
        (s, _) if s == every => true,
        (s, ref mut armed) if s == first => std::mem::replace(armed, false),
        _ => false,
    };
    if hit {
        counters.spoiled.fetch_add(1, Ordering::SeqCst);
    }
    hit
}

/// Reads from `from` and writes to `to` what `frames` makes of the bytes
/// read so far (whole frames, re-encoded), until either side closes or the
/// bytes stop decoding.
async fn relay(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut frames: impl FnMut(&mut BytesMut, &mut BytesMut) -> Result<(), String>,
) {
    let mut buf = BytesMut::with_capacity(1 << 20);
    let mut out = BytesMut::new();
    loop {
        match from.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Err(e) = frames(&mut buf, &mut out) {
            eprintln!("corrupt_proxy: {e}");
            break;
        }
        if !out.is_empty() && to.write_all(&out.split()).await.is_err() {
            break;
        }
        buf.reserve(1 << 20);
    }
    let _ = to.shutdown().await;
}

async fn to_server(from: OwnedReadHalf, to: OwnedWriteHalf, c: Arc<Counters>) {
    let mut dec = RequestDecoder::new();
    relay(from, to, move |buf, out| {
        while let Some(msg) = dec.decode(buf).map_err(|e| e.to_string())? {
            let frame = match msg {
                ClientMessage::Handshake(h) => {
                    h.encode(out);
                    continue;
                }
                ClientMessage::Request(f) => f,
            };
            let id = frame.header.requestid;
            *c.requests.lock().unwrap().entry(id).or_default() += 1;
            let mut payload = BytesMut::from(&frame.payload[..]);
            if id == RequestId::PGREAD || id == RequestId::PGWRITE {
                let retry = match Request::decode(frame.clone()).map_err(|e| e.to_string())? {
                    Request::Pgread(r) => r.reqflags().contains(PgReqFlags::RETRY),
                    Request::Pgwrite(r) => r.reqflags.contains(PgReqFlags::RETRY),
                    _ => false,
                };
                let counter = match id == RequestId::PGREAD {
                    true => &c.pgread_retries,
                    false => &c.pgwrite_retries,
                };
                if retry {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
                // [crc][page...]: flip the first page's first data byte
                if id == RequestId::PGWRITE && payload.len() > 4 && take_turn(false, &c) {
                    payload[4] ^= 0xff;
                }
            }
            frame.header.encode(out);
            out.extend_from_slice(&payload);
            out.extend_from_slice(&frame.data);
        }
        Ok(())
    })
    .await
}

async fn to_client(from: OwnedReadHalf, to: OwnedWriteHalf, c: Arc<Counters>) {
    let mut dec = ResponseDecoder::new().with_max_dlen(1 << 30);
    relay(from, to, move |buf, out| {
        while let Some(frame) = dec.decode(buf).map_err(|e| e.to_string())? {
            let start = out.len();
            frame.encode(out);
            // kXR_status: 8-byte header, 16-byte status body (requestid
            // byte at 6), info, then the data from 8 + hdr.dlen on
            let is_pgread = frame.header.status == Status::STATUS
                && frame.body.get(6) == Some(&((RequestId::PGREAD.0 - 3000) as u8));
            let data_at = start + 8 + frame.header.dlen as usize;
            if is_pgread && out.len() > data_at + 4 && take_turn(true, &c) {
                out[data_at + 4] ^= 0xff;
            }
        }
        Ok(())
    })
    .await
}
