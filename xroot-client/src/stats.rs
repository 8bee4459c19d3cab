//! Per-channel statistics: requests in flight (time-weighted mean and
//! peak), completed requests, bytes each way, latency, and the reads sent
//! to each bound substream.
//!
//! Units: request counts are requests; bytes are whole frames as they
//! crossed the socket (8-byte response / 24-byte request headers
//! included); times are wall-clock [`Duration`]s, and the in-flight
//! integral is in request·seconds. A request is one exchange on one
//! connection: from its first send to its final response (or its
//! failure), resends after `kXR_wait` included; a request redirected to
//! another channel counts once on each channel it visited.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use xroot_proto::gauge::{time_weighted_mean, Gauge};

/// A snapshot of one channel's counters, over all its connections so far
/// (see the module docs for units).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelStats {
    /// Requests waiting for their final response now.
    pub in_flight: u64,
    /// Most requests that were ever in flight at once on one connection.
    pub in_flight_peak: u64,
    /// Requests in flight averaged over [`ChannelStats::observed`]:
    /// `in_flight_seconds / observed` (0 before the first request).
    pub in_flight_mean: f64,
    /// The integral of requests in flight over time, in request·seconds.
    pub in_flight_seconds: f64,
    /// The time the counters cover: on each connection, from its first
    /// request to now (or to when the connection was replaced), summed.
    pub observed: Duration,
    /// Requests that got their final response (or failed).
    pub completed: u64,
    /// Bytes written to the server (request frames, headers included).
    pub bytes_sent: u64,
    /// Bytes read from the server (response frames, headers included).
    pub bytes_received: u64,
    /// Mean time from first send to final response over `completed`
    /// requests (waits included).
    pub latency_mean: Duration,
    /// Longest time from first send to final response.
    pub latency_max: Duration,
    /// Reads sent with the pathid of a bound substream (`kXR_bind`), by
    /// pathid in ascending order; empty without substreams.
    pub paths: Vec<PathStats>,
}

/// Reads (`kXR_read`, `kXR_pgread`, `kXR_readv`) sent with one substream's
/// pathid (PROTOCOL.md §5.4, §9).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStats {
    /// The pathid the server assigned at `kXR_bind` (1..15 for xrootd).
    pub pathid: u8,
    /// Reads sent with it that have not finished.
    pub in_flight: u64,
    /// Reads sent with it that finished.
    pub completed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    /// `completed`, the bytes and `latency_max` (the gauge's fields are
    /// filled in from `in_flight` at a snapshot).
    snapshot: ChannelStats,
    /// Requests in flight, from the first request (or snapshot) on.
    in_flight: Gauge,
    /// Sum of the latencies of `completed` requests, in nanoseconds.
    latency_nanos: u128,
    paths: BTreeMap<u8, PathStats>,
    /// Where the next [`LinkStats::take_path`] scan starts.
    path_cursor: usize,
}

/// The counters of one connection (shared by its tasks and requests).
#[derive(Debug, Default)]
pub(crate) struct LinkStats {
    c: Mutex<Counters>,
}

impl LinkStats {
    pub(crate) fn request_started(&self) {
        self.started_at(Instant::now());
    }

    fn started_at(&self, now: Instant) {
        self.c.lock().unwrap().in_flight.enter(now);
    }

    pub(crate) fn request_finished(&self, latency: Duration) {
        self.finished_at(Instant::now(), latency);
    }

    fn finished_at(&self, now: Instant, latency: Duration) {
        let mut c = self.c.lock().unwrap();
        c.in_flight.leave(now);
        c.latency_nanos += latency.as_nanos();
        let s = &mut c.snapshot;
        s.completed += 1;
        s.latency_max = s.latency_max.max(latency);
    }

    pub(crate) fn bytes_sent(&self, n: usize) {
        self.c.lock().unwrap().snapshot.bytes_sent += n as u64;
    }

    pub(crate) fn bytes_received(&self, n: usize) {
        self.c.lock().unwrap().snapshot.bytes_received += n as u64;
    }

    /// Takes the pathid among `bound` with the fewest reads in flight and
    /// counts a new read against it. Ties go round-robin: the scan starts
    /// after the pathid taken last, so reads one at a time also use every
    /// substream.
    pub(crate) fn take_path(&self, bound: &[u8]) -> Option<u8> {
        let mut c = self.c.lock().unwrap();
        let n = bound.len();
        let start = c.path_cursor % n.max(1);
        let (i, best) = (start..start + n)
            .map(|k| (k % n, bound[k % n]))
            .min_by_key(|(_, p)| c.paths.get(p).map_or(0, |s| s.in_flight))?;
        c.path_cursor = i + 1;
        c.paths
            .entry(best)
            .or_insert(PathStats {
                pathid: best,
                ..PathStats::default()
            })
            .in_flight += 1;
        Some(best)
    }

    /// A read taken with [`LinkStats::take_path`] finished.
    pub(crate) fn path_released(&self, pathid: u8) {
        if let Some(p) = self.c.lock().unwrap().paths.get_mut(&pathid) {
            p.in_flight = p.in_flight.saturating_sub(1);
            p.completed += 1;
        }
    }

    pub(crate) fn snapshot(&self) -> ChannelStats {
        self.snapshot_at(Instant::now())
    }

    fn snapshot_at(&self, now: Instant) -> ChannelStats {
        let mut c = self.c.lock().unwrap();
        // the first snapshot starts the clock, as a first request does
        c.in_flight.advance(now);
        let g = &c.in_flight;
        let mut s = c.snapshot.clone();
        s.in_flight = g.current();
        s.in_flight_peak = g.peak();
        s.in_flight_seconds = g.area(now);
        s.observed = g.observed(now);
        s.in_flight_mean = g.mean(now);
        s.latency_mean = nanos_over(c.latency_nanos, s.completed);
        s.paths = c.paths.values().copied().collect();
        s
    }
}

fn nanos_over(total: u128, count: u64) -> Duration {
    match total.checked_div(count as u128) {
        Some(n) => Duration::from_nanos(n.min(u64::MAX as u128) as u64),
        None => Duration::ZERO,
    }
}

impl ChannelStats {
    /// Adds the counters of another connection of the same channel (the
    /// connections of a channel follow one another, so peaks take the max).
    pub(crate) fn merge(&mut self, o: &ChannelStats) {
        let latency_nanos = self.latency_mean.as_nanos() * self.completed as u128
            + o.latency_mean.as_nanos() * o.completed as u128;
        self.in_flight += o.in_flight;
        self.in_flight_peak = self.in_flight_peak.max(o.in_flight_peak);
        self.in_flight_seconds += o.in_flight_seconds;
        self.observed += o.observed;
        self.in_flight_mean = time_weighted_mean(self.in_flight_seconds, self.observed);
        self.completed += o.completed;
        self.latency_mean = nanos_over(latency_nanos, self.completed);
        self.latency_max = self.latency_max.max(o.latency_max);
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        for p in &o.paths {
            match self.paths.iter_mut().find(|q| q.pathid == p.pathid) {
                Some(q) => {
                    q.in_flight += p.in_flight;
                    q.completed += p.completed;
                }
                None => self.paths.push(*p),
            }
        }
        self.paths.sort_by_key(|p| p.pathid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn peak_counts_and_latency() {
        let s = LinkStats::default();
        s.request_started();
        s.request_started();
        s.request_finished(10 * MS);
        s.request_finished(30 * MS);
        s.bytes_sent(24);
        s.bytes_received(8);
        let snap = s.snapshot();
        assert_eq!(snap.in_flight, 0);
        assert_eq!(snap.in_flight_peak, 2);
        assert_eq!(snap.completed, 2);
        assert_eq!(snap.latency_mean, 20 * MS);
        assert_eq!(snap.latency_max, 30 * MS);
        assert_eq!((snap.bytes_sent, snap.bytes_received), (24, 8));
    }

    #[test]
    fn the_mean_is_weighted_by_time() {
        let s = LinkStats::default();
        let t0 = Instant::now();
        // 2 in flight for 1 s, then 1 for 2 s, then none for 1 s
        s.started_at(t0);
        s.started_at(t0);
        s.finished_at(t0 + 1000 * MS, 1000 * MS);
        s.finished_at(t0 + 3000 * MS, 3000 * MS);
        let snap = s.snapshot_at(t0 + 4000 * MS);
        assert_eq!(snap.observed, 4000 * MS);
        assert!((snap.in_flight_seconds - 4.0).abs() < 1e-9, "{snap:?}");
        assert!((snap.in_flight_mean - 1.0).abs() < 1e-9, "{snap:?}");
        assert_eq!(snap.latency_mean, 2000 * MS);
        // a snapshot does not disturb the integral
        let later = s.snapshot_at(t0 + 8000 * MS);
        assert!((later.in_flight_mean - 0.5).abs() < 1e-9, "{later:?}");
    }

    #[test]
    fn merging_connections_keeps_the_time_weighting() {
        let (a, b) = (LinkStats::default(), LinkStats::default());
        let t0 = Instant::now();
        a.started_at(t0);
        a.finished_at(t0 + 1000 * MS, 1000 * MS); // 1 req·s over 1 s
        b.started_at(t0);
        b.started_at(t0);
        b.started_at(t0);
        b.finished_at(t0 + 1000 * MS, 3000 * MS); // 3 req·s over 1 s, then 2 in flight
        let mut m = a.snapshot_at(t0 + 1000 * MS);
        m.merge(&b.snapshot_at(t0 + 1000 * MS));
        assert_eq!(m.observed, 2000 * MS);
        assert!((m.in_flight_mean - 2.0).abs() < 1e-9, "{m:?}");
        assert_eq!((m.in_flight, m.in_flight_peak, m.completed), (2, 3, 2));
        assert_eq!((m.latency_mean, m.latency_max), (2000 * MS, 3000 * MS));
    }

    #[test]
    fn reads_go_to_the_least_loaded_path_until_released() {
        let s = LinkStats::default();
        assert_eq!(s.take_path(&[]), None);
        let bound = [1, 2, 3];
        let taken: Vec<_> = (0..4).map(|_| s.take_path(&bound).unwrap()).collect();
        assert_eq!(taken, [1, 2, 3, 1], "the least loaded, ties in turn");
        s.path_released(1);
        s.path_released(1);
        assert_eq!(s.take_path(&bound), Some(1), "1 is idle again");
        s.path_released(1);
        let paths = s.snapshot().paths;
        assert_eq!(
            paths,
            [
                PathStats {
                    pathid: 1,
                    in_flight: 0,
                    completed: 3
                },
                PathStats {
                    pathid: 2,
                    in_flight: 1,
                    completed: 0
                },
                PathStats {
                    pathid: 3,
                    in_flight: 1,
                    completed: 0
                },
            ]
        );
        let mut twice = s.snapshot();
        twice.merge(&s.snapshot());
        assert_eq!(twice.paths[0].completed, 6);
    }

    #[test]
    fn reads_one_at_a_time_use_every_path() {
        let s = LinkStats::default();
        let taken: Vec<_> = (0..7)
            .map(|_| {
                let p = s.take_path(&[4, 9, 2]).unwrap();
                s.path_released(p);
                p
            })
            .collect();
        assert_eq!(taken, [4, 9, 2, 4, 9, 2, 4]);
    }
}
