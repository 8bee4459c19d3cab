//! Limits on requests and vector reads in progress, per link and per
//! server, that no group of links can monopolize.
//!
//! A request takes a slot of its link's limit first, then one of the
//! server's; while the server's are all taken, a link may still use a few
//! slots of its own (its floor). So links whose clients stopped reading
//! their answers, each holding as many slots as its own limit allows, slow
//! the others down but never stop them: a new client is always served.
//! The memory budget has floors of the same kind ([`crate::admit::budget`]).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Slots a link may use of its own while the server's are all taken, for
/// requests ([`REQUEST_FLOOR`]) and vector reads ([`READV_FLOOR`]).
pub(crate) const REQUEST_FLOOR: usize = 4;
/// See [`REQUEST_FLOOR`].
pub(crate) const READV_FLOOR: usize = 1;

/// Takes `n` permits of `server`, or of `floor` while `server` has not
/// got them.
async fn server_or_floor(
    server: &Arc<Semaphore>,
    floor: &Arc<Semaphore>,
    n: u32,
) -> OwnedSemaphorePermit {
    let permit = match server.clone().try_acquire_many_owned(n) {
        Ok(p) => Ok(p),
        Err(_) => tokio::select! {
            p = server.clone().acquire_many_owned(n) => p,
            p = floor.clone().acquire_many_owned(n) => p,
        },
    };
    permit.expect("limits are never closed")
}

/// One link's limit within the server's.
#[derive(Debug, Clone)]
pub(crate) struct Limit {
    link: Arc<Semaphore>,
    floor: Arc<Semaphore>,
    server: Arc<Semaphore>,
}

/// A slot of a [`Limit`], returned when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    _link: OwnedSemaphorePermit,
    _server: OwnedSemaphorePermit,
}

impl Limit {
    /// At most `per_link` at once on the link, within `server`, with a
    /// floor of `floor` (at most `per_link`).
    pub(crate) fn new(per_link: usize, floor: usize, server: Arc<Semaphore>) -> Limit {
        let per_link = per_link.max(1);
        Limit {
            link: Arc::new(Semaphore::new(per_link)),
            floor: Arc::new(Semaphore::new(floor.clamp(1, per_link))),
            server,
        }
    }

    /// Waits for a slot.
    pub(crate) async fn take(&self) -> Slot {
        let link = self.link.clone().acquire_owned().await;
        let server = server_or_floor(&self.server, &self.floor, 1).await;
        Slot {
            _link: link.expect("limits are never closed"),
            _server: server,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn now(l: &Limit) -> Option<Slot> {
        let mut f = pin!(l.take());
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(s) => Some(s),
            Poll::Pending => None,
        }
    }

    #[test]
    fn links_that_hold_every_server_slot_leave_the_others_their_floor() {
        let server = Arc::new(Semaphore::new(8));
        let greedy: Vec<Limit> = (0..2).map(|_| Limit::new(4, 2, server.clone())).collect();
        let held: Vec<Slot> = greedy
            .iter()
            .flat_map(|l| (0..4).map(|_| now(l).unwrap()))
            .collect();
        assert!(now(&greedy[0]).is_none(), "a link's own limit");
        let fresh = Limit::new(4, 2, server);
        let a = now(&fresh).unwrap();
        let b = now(&fresh).unwrap();
        assert!(now(&fresh).is_none(), "the floor is 2");
        drop((held, a, b));
    }
}
