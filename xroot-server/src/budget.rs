//! The memory budget: what bounds the bytes a link, and the server as a
//! whole, hold for requests, whatever those requests ask.
//!
//! A request's payload counts from when it is read off the link until its
//! task ends; answer data counts from before it is read from the backend
//! until the link's writer has written it to the socket. Taking a share
//! waits while the link's or the server's budget is spent, so a client that
//! does not read its answers, or asks for more than the budget at once,
//! meets back-pressure instead of growing the server: its requests wait,
//! and its link is not read further. Shares are taken link first, then
//! server, always in that order, and freed by the writer, which never
//! waits for a share: budgets cannot deadlock.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
}

/// A link's budget and the server's.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    pub(crate) link: Pool,
    pub(crate) server: Pool,
}

/// A share of the budget, returned when dropped.
#[derive(Debug)]
pub(crate) struct Share {
    _link: OwnedSemaphorePermit,
    _server: OwnedSemaphorePermit,
}

impl Budget {
    /// The most one share may be: the smaller budget.
    pub(crate) fn largest(&self) -> usize {
        self.link.max().min(self.server.max())
    }

    /// Takes `bytes` (at most [`Budget::largest`]: a larger ask takes the
    /// whole budget), waiting while it is spent.
    pub(crate) async fn take(&self, bytes: usize) -> Share {
        let n = bytes.min(self.largest()) as u32;
        let link = self.link.bytes.clone().acquire_many_owned(n).await;
        let server = self.server.bytes.clone().acquire_many_owned(n).await;
        Share {
            _link: link.expect("budget never closed"),
            _server: server.expect("budget never closed"),
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
        let a = Budget {
            link: Pool::new(768 << 10),
            server: server.clone(),
        };
        let b = Budget {
            link: Pool::new(768 << 10),
            server,
        };
        let first = now(&a, 600 << 10).unwrap();
        assert!(now(&a, 200 << 10).is_none(), "the link has 168 KiB left");
        assert!(now(&b, 500 << 10).is_none(), "the server has 424 KiB left");
        let second = now(&b, 400 << 10).unwrap();
        drop(first);
        assert!(
            now(&a, 5 << 20).is_none(),
            "clamped to 768 KiB, 624 KiB free"
        );
        drop(second);
        assert!(now(&a, 5 << 20).is_some());
    }
}
