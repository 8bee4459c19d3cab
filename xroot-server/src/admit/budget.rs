//! The memory budget: what bounds the bytes a link, and the server as a
//! whole, hold for requests, whatever those requests ask.
//!
//! A request's payload counts against its link's budget for payloads and
//! the server's from when its header is read (before the payload itself,
//! so that a frame that never completes holds no more than it was granted)
//! until its task ends; while the request waits for earlier requests on
//! its file ([`crate::admit::order`]) it counts against its link's alone, since
//! only its own client can end that wait (by reading its answers) and
//! clients that never do must not hold the server's budget from the others. Answer data counts
//! against the link's budget for answers and the server's from before it
//! is read from the backend until the link's writer has written it to the
//! socket. Taking a share waits while the budget is spent, so a client that
//! does not read its answers, or asks for more than the budget at once,
//! meets back-pressure instead of growing the server: its requests wait,
//! and its link is not read further.
//!
//! Not counted: a `kXR_pgwrite`'s good pages are joined into one buffer to
//! be written, so while it runs it holds up to twice its payload.
//!
//! Payloads and answers have budgets of their own because a request may
//! wait for an earlier one on the same file ([`crate::admit::order`]): a write
//! whose payload held the link's only budget while it waited for an
//! earlier read of the same bytes would starve that read of the budget its
//! answer needs, and neither would ever finish.
//!
//! The server's budget cannot be monopolized: when it is spent, a link
//! still takes one share of answer data at a time from a small floor of
//! its own ([`FLOOR`], one piece of an answer), so that clients that
//! stopped reading slow the others down but never stop them. What the
//! server holds is therefore at most its budget plus one piece per link
//! that waits on it (a link's floor for payloads, [`PAYLOAD_FLOOR`], holds
//! small payloads up to its size). One piece, not up to [`FLOOR`] bytes of
//! them: 1,000 sessions keeping 8 reads of 64 KiB each in flight on a file
//! not in the page cache held 200-240 MB through their floors (8 × 64 KiB
//! each) beside the server's 16 MiB; with one piece each, 64 MiB at most.
//!
//! Shares are taken link first, then server, always in that order, and
//! freed by the writer, which never waits for a share: budgets cannot
//! deadlock.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What a link may hold of request payloads when the server's budget for
/// them is spent: requests with a path or a small list always pass.
pub(crate) const PAYLOAD_FLOOR: usize = 64 << 10;

/// What a link may hold of answer data when the server's budget is spent:
/// one piece of an answer (a 2 MiB read chunk, a pgread piece of 2 MiB
/// with its crc32c values and frame heads, a readv batch of 2 MiB with its
/// element headers).
pub(crate) const FLOOR: usize = (2 << 20) + (64 << 10);

/// One budget: a byte count shared by whoever draws on it.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    bytes: Arc<Semaphore>,
    max: u32,
}

impl Pool {
    /// A budget of `max` bytes (at least 64 KiB, at most 4 GiB - 1).
    pub(crate) fn new(max: usize) -> Pool {
        let max = max.clamp(64 << 10, u32::MAX as usize) as u32;
        Pool {
            bytes: Arc::new(Semaphore::new(max as usize)),
            max,
        }
    }

    /// The budget, in bytes.
    pub(crate) fn max(&self) -> usize {
        self.max as usize
    }

    async fn take(&self, n: u32) -> OwnedSemaphorePermit {
        let n = n.min(self.max);
        let permit = self.bytes.clone().acquire_many_owned(n).await;
        permit.expect("budget never closed")
    }
}

/// `n` bytes of `server`, or of `floor` while `server` has not got them.
/// With `whole` (answers), a share of the floor takes all of it, so a
/// link holds one piece of the floor at a time, whatever its size; else
/// (payloads) it takes `n`, and an ask larger than the floor waits for
/// `server` (what is held stays within what was granted).
async fn server_or_floor(server: &Pool, floor: &Pool, n: u32, whole: bool) -> OwnedSemaphorePermit {
    let n = n.min(server.max);
    if let Ok(p) = server.bytes.clone().try_acquire_many_owned(n) {
        return p;
    }
    if n > floor.max && !whole {
        return server.take(n).await;
    }
    let from_floor = match whole {
        true => floor.max,
        false => n,
    };
    tokio::select! {
        p = server.take(n) => p,
        p = floor.take(from_floor) => p,
    }
}

/// A link's budgets for payloads and answers, their floors, and the
/// server's.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    payloads: Pool,
    payload_floor: Pool,
    server_payloads: Pool,
    link: Pool,
    floor: Pool,
    server: Pool,
}

/// A share of the budget, returned when dropped.
#[derive(Debug)]
pub(crate) struct Share {
    _link: OwnedSemaphorePermit,
    server: Option<OwnedSemaphorePermit>,
}

impl Share {
    /// Gives the server's part back, keeping the link's: for a request
    /// whose payload waits for earlier requests on its file, which only
    /// its own client can unblock (by reading its answers), so that no
    /// group of such clients can hold the server's budget for payloads.
    pub(crate) fn release_server(&mut self) {
        self.server = None;
    }
}

impl Budget {
    /// A link's budgets of `link` bytes for payloads, within the server's
    /// `server_payloads`, and for answers, within the server's `server`.
    pub(crate) fn new(link: usize, server_payloads: Pool, server: Pool) -> Budget {
        Budget {
            payloads: Pool::new(link),
            payload_floor: Pool::new(PAYLOAD_FLOOR.min(link)),
            server_payloads,
            floor: Pool::new(FLOOR.min(link)),
            link: Pool::new(link),
            server,
        }
    }

    /// The most one share may be: the link's budget.
    pub(crate) fn largest(&self) -> usize {
        self.link.max()
    }

    /// Takes `bytes` for a request's payload (at most [`Budget::largest`]:
    /// a larger ask takes the whole budget) from the link's budget for
    /// payloads and the server's, or the link's floor for payloads while
    /// the server's is spent (only a payload within the floor passes then);
    /// waits while they are.
    pub(crate) async fn take_payload(&self, bytes: usize) -> Share {
        let n = bytes.min(self.largest()) as u32;
        Share {
            _link: self.payloads.take(n).await,
            server: Some(
                server_or_floor(&self.server_payloads, &self.payload_floor, n, false).await,
            ),
        }
    }

    /// Takes `bytes` of answer data (at most [`Budget::largest`]) from the
    /// link's budget and the server's, or the link's floor while the
    /// server's is spent; waits while they are.
    pub(crate) async fn take(&self, bytes: usize) -> Share {
        let n = bytes.min(self.largest()) as u32;
        Share {
            _link: self.link.take(n).await,
            server: Some(server_or_floor(&self.server, &self.floor, n, true).await),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    /// Whether `take` completes without waiting.
    fn now(b: &Budget, bytes: usize) -> Option<Share> {
        let mut f = pin!(b.take(bytes));
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(s) => Some(s),
            Poll::Pending => None,
        }
    }

    #[test]
    fn a_spent_budget_waits_until_a_share_returns() {
        let server = Pool::new(1 << 20);
        let a = Budget::new(768 << 10, Pool::new(1 << 30), server.clone());
        let b = Budget::new(768 << 10, Pool::new(1 << 30), server);
        let first = now(&a, 600 << 10).unwrap();
        assert!(now(&a, 200 << 10).is_none(), "the link has 168 KiB left");
        let second = now(&b, 400 << 10).unwrap();
        // the server has 24 KiB left: b's floor (its whole 768 KiB) serves
        let third = now(&b, 300 << 10).unwrap();
        assert!(now(&b, 100 << 10).is_none(), "b's link has 68 KiB left");
        drop((first, second, third));
        assert!(now(&a, 5 << 20).is_some(), "clamped to the link's 768 KiB");
    }

    #[test]
    fn a_link_that_holds_the_server_budget_does_not_stop_the_others() {
        let server = Pool::new(16 << 20);
        let payloads = Pool::new(64 << 20);
        let greedy = Budget::new(64 << 20, payloads.clone(), server.clone());
        let other = Budget::new(64 << 20, payloads, server);
        let held: Vec<Share> = (0..4).map(|_| now(&greedy, 4 << 20).unwrap()).collect();
        // the server's 16 MiB are spent; greedy's floor still takes a piece
        let floor = now(&greedy, FLOOR).unwrap();
        assert!(now(&greedy, 1).is_none(), "greedy's floor is spent too");
        // one piece at a time, however small: a second 64 KiB waits
        drop(floor);
        let floor = now(&greedy, 64 << 10).unwrap();
        assert!(now(&greedy, 64 << 10).is_none(), "one piece of the floor");
        let piece = now(&other, 2 << 20).unwrap();
        let payload = now_payload(&other, 1 << 20).unwrap();
        drop((held, floor, piece, payload));
    }

    #[test]
    fn payloads_and_answers_do_not_take_from_each_other() {
        let link = Budget::new(4 << 20, Pool::new(64 << 20), Pool::new(64 << 20));
        let payload = now_payload(&link, 4 << 20).unwrap();
        let answer = now(&link, 4 << 20).unwrap();
        assert!(now_payload(&link, 1).is_none() && now(&link, 1).is_none());
        drop((payload, answer));
    }

    fn now_payload(b: &Budget, bytes: usize) -> Option<Share> {
        let mut f = pin!(b.take_payload(bytes));
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(s) => Some(s),
            Poll::Pending => None,
        }
    }
}
