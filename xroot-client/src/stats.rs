//! Per-channel statistics: requests in flight (time-weighted mean and
//! peak), completed requests, bytes each way and latency.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A snapshot of one channel's counters since it was created.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelStats {
    /// Requests waiting for their final response now.
    pub in_flight: u64,
    /// Most requests that were ever in flight at once.
    pub in_flight_peak: u64,
    /// Requests in flight averaged over time, from the first request to now.
    pub in_flight_mean: f64,
    /// Requests that got their final response (or failed).
    pub completed: u64,
    /// Bytes written to the server (frames, headers included).
    pub bytes_sent: u64,
    /// Bytes read from the server (frames, headers included).
    pub bytes_received: u64,
    /// Mean time from send to final response.
    pub latency_mean: Duration,
    /// Longest time from send to final response.
    pub latency_max: Duration,
}

#[derive(Debug, Default)]
struct Counters {
    snapshot: ChannelStats,
    /// Integral of in_flight over time, in request·seconds.
    area: f64,
    first: Option<Instant>,
    last_change: Option<Instant>,
    latency_total: Duration,
}

impl Counters {
    fn advance(&mut self, now: Instant) {
        if let Some(last) = self.last_change {
            self.area += self.snapshot.in_flight as f64 * (now - last).as_secs_f64();
        }
        self.first.get_or_insert(now);
        self.last_change = Some(now);
    }
}

/// The counters of one connection (shared by its tasks and requests).
#[derive(Debug, Default)]
pub(crate) struct LinkStats {
    c: Mutex<Counters>,
}

impl LinkStats {
    pub(crate) fn request_started(&self) {
        let mut c = self.c.lock().unwrap();
        c.advance(Instant::now());
        c.snapshot.in_flight += 1;
        c.snapshot.in_flight_peak = c.snapshot.in_flight_peak.max(c.snapshot.in_flight);
    }

    pub(crate) fn request_finished(&self, latency: Duration) {
        let mut c = self.c.lock().unwrap();
        c.advance(Instant::now());
        c.snapshot.in_flight = c.snapshot.in_flight.saturating_sub(1);
        c.snapshot.completed += 1;
        c.latency_total += latency;
        c.snapshot.latency_max = c.snapshot.latency_max.max(latency);
    }

    pub(crate) fn bytes_sent(&self, n: usize) {
        self.c.lock().unwrap().snapshot.bytes_sent += n as u64;
    }

    pub(crate) fn bytes_received(&self, n: usize) {
        self.c.lock().unwrap().snapshot.bytes_received += n as u64;
    }

    pub(crate) fn snapshot(&self) -> ChannelStats {
        let mut c = self.c.lock().unwrap();
        let now = Instant::now();
        c.advance(now);
        let mut s = c.snapshot.clone();
        let span = c.first.map(|f| (now - f).as_secs_f64()).unwrap_or(0.0);
        s.in_flight_mean = if span > 0.0 { c.area / span } else { 0.0 };
        if s.completed > 0 {
            s.latency_mean = c.latency_total / s.completed as u32;
        }
        s
    }
}

impl ChannelStats {
    /// Adds the counters of another connection of the same channel.
    pub(crate) fn merge(&mut self, o: &ChannelStats) {
        self.in_flight += o.in_flight;
        self.in_flight_peak = self.in_flight_peak.max(o.in_flight_peak);
        self.in_flight_mean += o.in_flight_mean;
        let total = self.completed + o.completed;
        if total > 0 {
            self.latency_mean = (self.latency_mean * self.completed as u32
                + o.latency_mean * o.completed as u32)
                / total as u32;
        }
        self.completed = total;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.latency_max = self.latency_max.max(o.latency_max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_and_counts() {
        let s = LinkStats::default();
        s.request_started();
        s.request_started();
        s.request_finished(Duration::from_millis(10));
        s.request_finished(Duration::from_millis(30));
        s.bytes_sent(24);
        let snap = s.snapshot();
        assert_eq!(snap.in_flight, 0);
        assert_eq!(snap.in_flight_peak, 2);
        assert_eq!(snap.completed, 2);
        assert_eq!(snap.latency_mean, Duration::from_millis(20));
        assert_eq!(snap.latency_max, Duration::from_millis(30));
        assert_eq!(snap.bytes_sent, 24);
    }
}
