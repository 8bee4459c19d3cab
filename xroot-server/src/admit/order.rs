//! Per-handle order: the rule that makes pipelined requests on one file
//! handle behave as if they ran one after the other in arrival order,
//! while requests that cannot disturb each other still run concurrently.
//!
//! Every request that names an open file is *admitted* on the link's read
//! loop, in the order it arrived, before its task starts (see `link/conn.rs`).
//! Admission records what the request does to the file ([`Access`]) and
//! gives it a [`Ticket`]: the earlier requests on the same file it must wait
//! for. The task waits for them ([`Ticket::ready`]) before it touches the
//! file, and the ticket marks the request done when it is dropped.
//!
//! | a request … | waits for the earlier … |
//! |---|---|
//! | read, pgread, readv, pgreadv | writes that reach past its start, truncates |
//! | write, pgwrite, writev | reads it reaches past the start of, writes it overlaps, syncs and stats, truncates |
//! | sync, stat by handle | writes, truncates |
//! | truncate by handle | everything |
//! | close | everything; a request after it gets `kXR_FileNotOpen` |
//!
//! A write "reaches past" a read's start when it ends after it: it may
//! change the read's bytes, or move the end of file into or past the read
//! (a write beyond the end leaves zeros between), so a read near the end of
//! file sees exactly the writes sent before it. Append-mode files serialize
//! every write. Since a request only ever
//! waits for requests admitted before it, no two can wait for each other.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

/// What a request does to an open file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Access {
    /// Only names the file (a pre-read entry, a query or fattr by handle).
    Lookup,
    /// Reads these bytes.
    Read(Range<u64>),
    /// Writes these bytes.
    Write(Range<u64>),
    /// Needs every earlier write applied: sync, stat by handle.
    Flush,
    /// Changes the whole file: truncate by handle.
    Barrier,
    /// Ends the handle.
    Close,
}

impl Access {
    /// Whether `self`, arriving later, must wait for `earlier`.
    fn waits_for(&self, earlier: &Access, append: bool) -> bool {
        use Access::*;
        match (self, earlier) {
            (Lookup, _) | (_, Lookup) => false,
            (Close | Barrier, _) | (_, Barrier | Close) => true,
            (Read(read), Write(write)) | (Write(write), Read(read)) => write.end > read.start,
            (Write(a), Write(b)) => append || overlap(a, b),
            (Flush, Write(_)) | (Write(_), Flush) => true,
            (Read(_), Read(_)) | (Read(_) | Flush, Flush) | (Flush, Read(_)) => false,
        }
    }
}

fn overlap(a: &Range<u64>, b: &Range<u64>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Becomes done once; any number of tasks can wait for it.
#[derive(Debug)]
struct Done(Semaphore);

impl Done {
    fn new() -> Arc<Done> {
        Arc::new(Done(Semaphore::new(0)))
    }

    async fn wait(&self) {
        // no permit is ever added: acquire returns only once closed
        let _ = self.0.acquire().await;
    }

    fn set(&self) {
        self.0.close();
    }
}

#[derive(Debug)]
struct Entry {
    seq: u64,
    access: Access,
    done: Arc<Done>,
}

#[derive(Debug, Default)]
struct State {
    next: u64,
    active: Vec<Entry>,
    closing: bool,
}

/// The requests admitted on one open file and not yet done.
#[derive(Debug, Default)]
pub(crate) struct Order {
    state: Arc<Mutex<State>>,
    /// Every write waits for every earlier write (`O_APPEND`).
    append: bool,
}

/// The handle is being closed: nothing more is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closing;

impl Order {
    pub(crate) fn new(append: bool) -> Order {
        Order {
            state: Arc::default(),
            append,
        }
    }

    /// Admits a request that will do `access`. Errors: [`Closing`] once a
    /// close was admitted.
    pub(crate) fn admit(&self, access: Access) -> Result<Ticket, Closing> {
        let mut st = self.state.lock().unwrap();
        if st.closing {
            return Err(Closing);
        }
        st.closing = access == Access::Close;
        let waits = st
            .active
            .iter()
            .filter(|e| access.waits_for(&e.access, self.append))
            .map(|e| e.done.clone())
            .collect();
        let seq = st.next;
        st.next += 1;
        let done = Done::new();
        st.active.push(Entry {
            seq,
            access,
            done: done.clone(),
        });
        Ok(Ticket {
            waits,
            seq,
            done,
            state: self.state.clone(),
        })
    }
}

/// One admitted request's place in its file's order. Dropping it marks the
/// request done.
#[derive(Debug)]
pub(crate) struct Ticket {
    waits: Vec<Arc<Done>>,
    seq: u64,
    done: Arc<Done>,
    state: Arc<Mutex<State>>,
}

impl Ticket {
    /// Whether every earlier request this one depends on is done already.
    pub(crate) fn is_ready(&self) -> bool {
        self.waits.iter().all(|w| w.0.is_closed())
    }

    /// Waits until every earlier request this one depends on is done.
    /// Cancel-safe: what it has waited for is not waited for again.
    pub(crate) async fn ready(&mut self) {
        while let Some(w) = self.waits.last() {
            w.wait().await;
            self.waits.pop();
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self.state.lock().unwrap();
        if let Some(i) = st.active.iter().position(|e| e.seq == self.seq) {
            st.active.swap_remove(i);
        }
        drop(st);
        self.done.set();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn is_ready(t: &mut Ticket) -> bool {
        let mut f = pin!(t.ready());
        matches!(
            f.as_mut().poll(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(())
        )
    }

    #[test]
    fn reads_run_together_and_a_close_waits_for_all() {
        let o = Order::new(false);
        let mut r1 = o.admit(Access::Read(0..10)).unwrap();
        let mut r2 = o.admit(Access::Read(5..20)).unwrap();
        let mut close = o.admit(Access::Close).unwrap();
        assert!(is_ready(&mut r1) && is_ready(&mut r2));
        assert!(!is_ready(&mut close));
        assert_eq!(o.admit(Access::Read(0..1)).unwrap_err(), Closing);
        drop(r1);
        assert!(!is_ready(&mut close));
        drop(r2);
        assert!(is_ready(&mut close));
    }

    #[test]
    fn overlapping_writes_keep_arrival_order() {
        let o = Order::new(false);
        let w1 = o.admit(Access::Write(0..100)).unwrap();
        let mut w2 = o.admit(Access::Write(100..200)).unwrap();
        let mut w3 = o.admit(Access::Write(50..150)).unwrap();
        let mut r = o.admit(Access::Read(120..130)).unwrap();
        let mut sync = o.admit(Access::Flush).unwrap();
        assert!(is_ready(&mut w2), "disjoint writes run together");
        assert!(!is_ready(&mut w3) && !is_ready(&mut r) && !is_ready(&mut sync));
        drop(w1);
        assert!(!is_ready(&mut w3), "w3 still waits for w2");
        assert!(
            !is_ready(&mut r),
            "the read waits for the writes past its start"
        );
        drop(w2);
        assert!(is_ready(&mut w3));
        assert!(!is_ready(&mut r) && !is_ready(&mut sync));
        drop(w3);
        assert!(is_ready(&mut r), "once the writes past its start are done");
        assert!(is_ready(&mut sync));
    }

    #[test]
    fn reads_see_the_writes_that_move_the_end_of_file_past_them() {
        let o = Order::new(false);
        // a write that ends before a read cannot change it
        let before = o.admit(Access::Write(0..10)).unwrap();
        let mut unaffected = o.admit(Access::Read(10..20)).unwrap();
        assert!(is_ready(&mut unaffected));
        drop((before, unaffected));
        // a write far beyond a read may make the read longer (zeros between)
        let w = o.admit(Access::Write(2 << 20..3 << 20)).unwrap();
        let mut r = o.admit(Access::Read(1 << 20..(1 << 20) + 10)).unwrap();
        let mut after = o.admit(Access::Read(3 << 20..4 << 20)).unwrap();
        assert!(!is_ready(&mut r) && is_ready(&mut after));
        drop(w);
        assert!(is_ready(&mut r));
        // and a later write beyond a read must not make it longer
        let mut w2 = o.admit(Access::Write(4 << 20..5 << 20)).unwrap();
        assert!(!is_ready(&mut w2), "waits for the read it reaches past");
        drop(r);
        assert!(
            !is_ready(&mut w2),
            "and for the read beyond the first write"
        );
        drop(after);
        assert!(is_ready(&mut w2));
        // a stat sees no later write
        let mut stat = o.admit(Access::Flush).unwrap();
        let mut w3 = o.admit(Access::Write(0..1)).unwrap();
        assert!(!is_ready(&mut stat));
        drop(w2);
        assert!(is_ready(&mut stat) && !is_ready(&mut w3));
        drop(stat);
        assert!(is_ready(&mut w3));
    }

    #[test]
    fn a_truncate_is_a_barrier_both_ways_and_append_serializes_writes() {
        let o = Order::new(true);
        let r = o.admit(Access::Read(0..10)).unwrap();
        let mut t = o.admit(Access::Barrier).unwrap();
        let mut w = o.admit(Access::Write(1000..1001)).unwrap();
        let mut look = o.admit(Access::Lookup).unwrap();
        assert!(is_ready(&mut look));
        assert!(!is_ready(&mut t));
        drop(r);
        assert!(is_ready(&mut t));
        assert!(!is_ready(&mut w));
        drop(t);
        assert!(is_ready(&mut w));
        let mut w2 = o.admit(Access::Write(0..1)).unwrap();
        assert!(!is_ready(&mut w2), "append: writes never overlap in time");
        drop(w);
        assert!(is_ready(&mut w2));
    }
}
