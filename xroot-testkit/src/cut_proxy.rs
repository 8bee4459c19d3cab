//! A relay on 127.0.0.1 that loses the answer to one request: on the first
//! connection that carries a request of a given kind, it closes the client's
//! side as that request goes to the server, and keeps the server's side
//! open (reading and dropping what the server sends). The server sees no
//! disconnection: the session, its open files and their locks live on until
//! something ends them (`kXR_endsess`, PROTOCOL.md §5.5). Every other
//! connection is relayed untouched.
//!
//! Requests toward the server are decoded with xroot-proto and re-encoded
//! unchanged; the proxy records them per connection ([`CutProxy::requests`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use xroot_proto::request::Request;
use xroot_proto::{ClientMessage, RequestDecoder, RequestId};

#[derive(Default)]
struct Shared {
    /// Whether the cut is still to come.
    armed: AtomicBool,
    cuts: AtomicUsize,
    /// The requests relayed (or cut after), with their connection's index.
    requests: Mutex<Vec<(usize, Request)>>,
    /// Server-side write halves of cut connections, held open.
    kept: Mutex<Vec<OwnedWriteHalf>>,
}

/// A running relay; stopped when dropped.
pub struct CutProxy {
    /// The port on 127.0.0.1 to connect to instead of the server.
    pub port: u16,
    shared: Arc<Shared>,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl CutProxy {
    /// Listens on an ephemeral port of 127.0.0.1 and relays every
    /// connection to `127.0.0.1:upstream`, cutting the client off as the
    /// first request with id `after` goes through.
    pub async fn start(upstream: u16, after: RequestId) -> CutProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        shared.armed.store(true, Ordering::SeqCst);
        let tasks = Arc::new(Mutex::new(Vec::new()));
        let (s, t) = (Arc::clone(&shared), Arc::clone(&tasks));
        let accept = tokio::spawn(async move {
            let mut conn = 0;
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                let (cut_tx, cut_rx) = watch::channel(false);
                let up = tokio::spawn(to_server(cr, sw, conn, after, cut_tx, Arc::clone(&s)));
                let down = tokio::spawn(to_client(sr, cw, cut_rx));
                t.lock()
                    .unwrap()
                    .extend([up.abort_handle(), down.abort_handle()]);
                conn += 1;
            }
        });
        tasks.lock().unwrap().push(accept.abort_handle());
        CutProxy {
            port,
            shared,
            tasks,
        }
    }

    /// Connections cut so far (0 or 1).
    pub fn cuts(&self) -> usize {
        self.shared.cuts.load(Ordering::SeqCst)
    }

    /// The requests relayed on connection `conn` (0 is the first), in order.
    pub fn requests(&self, conn: usize) -> Vec<Request> {
        let seen = self.shared.requests.lock().unwrap();
        seen.iter()
            .filter(|(c, _)| *c == conn)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
        self.shared.kept.lock().unwrap().clear();
    }
}

/// Relays whole requests to the server; when the cut comes, signals it
/// before the request goes (so that its answer is dropped), then stops
/// reading the client and keeps the server's write half open.
async fn to_server(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    conn: usize,
    after: RequestId,
    cut: watch::Sender<bool>,
    shared: Arc<Shared>,
) {
    let mut dec = RequestDecoder::new().with_max_dlen(1 << 30);
    let mut buf = BytesMut::with_capacity(1 << 20);
    loop {
        match from.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let mut out = BytesMut::new();
        let mut cut_now = false;
        loop {
            match dec.decode(&mut buf) {
                Ok(Some(ClientMessage::Handshake(h))) => h.encode(&mut out),
                Ok(Some(ClientMessage::Request(frame))) => {
                    frame.header.encode(&mut out);
                    out.extend_from_slice(&frame.payload);
                    out.extend_from_slice(&frame.data);
                    let id = frame.header.requestid;
                    if let Ok(r) = Request::decode(frame) {
                        shared.requests.lock().unwrap().push((conn, r));
                    }
                    if id == after && shared.armed.swap(false, Ordering::SeqCst) {
                        cut_now = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    eprintln!("cut_proxy: {e}");
                    return;
                }
            }
        }
        if cut_now {
            shared.cuts.fetch_add(1, Ordering::SeqCst);
            let _ = cut.send(true);
            let _ = to.write_all(&out).await;
            // `from` is dropped on return: with the client write half gone
            // too, the client's socket closes; the server's stays open
            shared.kept.lock().unwrap().push(to);
            return;
        }
        if to.write_all(&out).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// Relays the server's bytes to the client until the cut, then drops the
/// client's write half and reads (and drops) whatever the server sends.
async fn to_client(mut from: OwnedReadHalf, to: OwnedWriteHalf, mut cut: watch::Receiver<bool>) {
    let mut to = Some(to);
    let mut buf = BytesMut::with_capacity(1 << 20);
    loop {
        tokio::select! {
            read = from.read_buf(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            _ = cut.wait_for(|c| *c), if to.is_some() => {
                to = None; // closes the client's side
                continue;
            }
        }
        let bytes = buf.split();
        if *cut.borrow() {
            to = None;
            continue;
        }
        if let Some(w) = to.as_mut() {
            if w.write_all(&bytes).await.is_err() {
                break;
            }
        }
    }
    if let Some(mut w) = to {
        let _ = w.shutdown().await;
    }
}
