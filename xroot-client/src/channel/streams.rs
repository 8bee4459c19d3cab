//! Stream ids of one connection and the requests waiting on them.
//!
//! A request holds its streamid from send until its **final** response
//! (`kXR_ok`, `kXR_error`, `kXR_redirect`, `kXR_authmore` or a Final
//! `kXR_status`); `kXR_oksofar`, `kXR_wait`, `kXR_waitresp` and Partial
//! status frames keep it (PROTOCOL.md §9). Freed ids are reused in FIFO
//! order, so a late reply is unlikely to meet a new owner; a request whose
//! caller gave up keeps its id (quarantined) until the server's final
//! response arrives or the connection drops.
//!
//! Each id also keeps the most data its request's answer may hold, so that
//! the reader can refuse a frame longer than that as soon as its header
//! has arrived ([`Streams::frame_data_bound`]).

use std::collections::{HashMap, VecDeque};

use tokio::sync::mpsc;
use xroot_proto::{ResponseFrame, StreamId};

use crate::error::Error;

/// What the reader task hands a waiting request: a frame, or the reason no
/// more frames will come.
pub(crate) type Delivery = Result<ResponseFrame, Error>;

/// A request holding a streamid.
#[derive(Debug)]
struct Waiter {
    /// Where its frames go; closed once its caller has given up.
    tx: mpsc::UnboundedSender<Delivery>,
    /// The most bytes of data its answer may hold.
    bound: u64,
}

/// The in-flight table: streamid → where its frames go.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    waiting: HashMap<u16, Waiter>,
    free: VecDeque<u16>,
    /// The next never-used id (ids start at 1; 0 is the login streamid).
    fresh: u32,
    /// Set once the connection is gone: no new registrations.
    closed: bool,
}

impl Streams {
    /// Takes a free streamid for a request whose frames go to `tx` and
    /// whose answer holds at most `bound` bytes of data. `None` when all
    /// 65,535 are in use or the connection is closed.
    pub(crate) fn register(
        &mut self,
        tx: mpsc::UnboundedSender<Delivery>,
        bound: u64,
    ) -> Option<StreamId> {
        if self.closed {
            return None;
        }
        let id = match self.free.pop_front() {
            Some(id) => id,
            None if self.fresh < u16::MAX as u32 => {
                self.fresh += 1;
                self.fresh as u16
            }
            None => return None,
        };
        self.waiting.insert(id, Waiter { tx, bound });
        Some(StreamId::from_u16(id))
    }

    /// Routes `frame` to its request. `is_final` frees the id. A frame for an
    /// id nobody holds (a reply after its caller gave up) is dropped.
    pub(crate) fn deliver(&mut self, frame: ResponseFrame, is_final: bool) {
        let id = frame.header.streamid.to_u16();
        let Some(w) = self.waiting.get(&id) else {
            tracing::debug!(streamid = id, "response for an unknown streamid dropped");
            return;
        };
        let _ = w.tx.send(Ok(frame));
        if is_final {
            self.waiting.remove(&id);
            self.free.push_back(id);
        }
    }

    /// Ends the connection: every waiting request gets `err()`, and no new
    /// request may register.
    pub(crate) fn close(&mut self, err: impl Fn() -> Error) {
        self.closed = true;
        for (_, w) in self.waiting.drain() {
            let _ = w.tx.send(Err(err()));
        }
    }

    /// The most bytes of data a frame on streamid `id` may carry: the
    /// bound of the request holding `id` (quarantined or not); for id 0,
    /// which `kXR_attn` uses to carry an answer to any request, the largest
    /// bound held; 0 for an id nobody holds. What is not data (a status
    /// body, an error message, a redirect's URL) comes on top.
    pub(crate) fn frame_data_bound(&self, id: u16) -> u64 {
        match self.waiting.get(&id) {
            Some(w) => w.bound,
            None if id == 0 => self.waiting.values().map(|w| w.bound).max().unwrap_or(0),
            None => 0,
        }
    }

    /// Whether a request still waits for frames on `id`: held, and its
    /// caller has not given up.
    pub(crate) fn awaited(&self, id: u16) -> bool {
        self.waiting.get(&id).is_some_and(|w| !w.tx.is_closed())
    }

    /// Requests waiting for a response.
    pub(crate) fn in_flight(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use xroot_proto::Status;

    fn frame(id: StreamId, status: Status) -> ResponseFrame {
        ResponseFrame::new(id, status, Bytes::new())
    }

    #[test]
    fn ids_are_held_until_the_final_frame_and_reused_fifo() {
        let mut s = Streams::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let a = s.register(tx.clone(), 0).unwrap();
        let b = s.register(tx.clone(), 0).unwrap();
        assert_eq!((a.to_u16(), b.to_u16()), (1, 2));
        s.deliver(frame(a, Status::OKSOFAR), false);
        assert_eq!(s.in_flight(), 2);
        s.deliver(frame(a, Status::OK), true);
        s.deliver(frame(b, Status::OK), true);
        assert_eq!(s.in_flight(), 0);
        assert_eq!(s.register(tx.clone(), 0).unwrap(), a, "oldest freed first");
        assert_eq!(s.register(tx.clone(), 0).unwrap(), b);
        assert_eq!(s.register(tx, 0).unwrap().to_u16(), 3);
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn a_dropped_caller_keeps_its_id_quarantined() {
        let mut s = Streams::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let a = s.register(tx, 0).unwrap();
        drop(rx);
        let (tx2, _rx2) = mpsc::unbounded_channel();
        assert_ne!(s.register(tx2.clone(), 0).unwrap(), a);
        s.deliver(frame(a, Status::OK), true);
        // freed only now; the next fresh allocation would be 3, the free list gives `a`
        assert_eq!(s.register(tx2, 0).unwrap(), a);
    }

    #[test]
    fn a_frame_may_carry_what_its_request_can_get() {
        let mut s = Streams::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let a = s.register(tx.clone(), 100).unwrap();
        let b = s.register(tx.clone(), 5000).unwrap();
        assert_eq!(s.frame_data_bound(a.to_u16()), 100);
        assert_eq!(s.frame_data_bound(b.to_u16()), 5000);
        // kXR_attn carries an answer to any of them
        assert_eq!(s.frame_data_bound(0), 5000);
        // an id nobody holds gets no data
        assert_eq!(s.frame_data_bound(999), 0);
        assert!(s.awaited(a.to_u16()) && !s.awaited(999) && !s.awaited(0));
        // a caller that gave up keeps its id and its bound, but nothing
        // awaits its frames
        drop((tx, rx));
        assert_eq!(s.frame_data_bound(a.to_u16()), 100);
        assert!(!s.awaited(a.to_u16()));
        s.deliver(frame(b, Status::OK), true);
        assert_eq!(s.frame_data_bound(b.to_u16()), 0, "freed");
    }

    #[test]
    fn close_fails_everyone_and_refuses_new_requests() {
        let mut s = Streams::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        s.register(tx.clone(), 0).unwrap();
        s.close(|| Error::ConnectionLost {
            endpoint: "h:1".into(),
        });
        assert!(matches!(
            rx.try_recv(),
            Ok(Err(Error::ConnectionLost { .. }))
        ));
        assert!(s.register(tx, 0).is_none());
    }
}
