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

/// A running delay proxy; its listener and every relayed connection stop
/// on drop.
pub struct DelayProxy {
    /// Port on 127.0.0.1 to connect to.
    pub port: u16,
    connections: Arc<AtomicUsize>,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl DelayProxy {
    /// Relays connections on a free port of 127.0.0.1 to
    /// `127.0.0.1:upstream`, adding `one_way` to each direction.
    pub async fn start(upstream: u16, one_way: Duration) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let tasks: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (n, t) = (Arc::clone(&connections), Arc::clone(&tasks));
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
                t.extend(relay(cr, sw, one_way));
                t.extend(relay(sr, cw, one_way));
            }
        });
        tasks.lock().unwrap().push(accept.abort_handle());
        DelayProxy {
            port,
            connections,
            tasks,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

/// One direction: a reader stamping chunks, a writer releasing them at
/// their time. An empty chunk stands for end of stream (or a read error).
fn relay(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) -> [AbortHandle; 2] {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Bytes)>();
    let reader = tokio::spawn(async move {
        loop {
            let mut buf = BytesMut::with_capacity(256 * 1024);
            let n = from.read_buf(&mut buf).await.unwrap_or(0);
            if tx.send((Instant::now() + delay, buf.freeze())).is_err() || n == 0 {
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
