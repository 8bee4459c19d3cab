//! Requests in flight, per link and per server, by request kind: the current
//! count, the peak and the time-weighted mean since the link (or server)
//! started.
//!
//! A request is in flight while it is being served: from the moment its
//! frame is decoded until its last response frame is queued for the socket.
//! A vector read (`kXR_readv`, `kXR_pgreadv`) counts from the moment it has
//! its turn under the server's, the link's and its files' limits, so a
//! file whose backend says [`ReadvConcurrency::Serial`] never shows more
//! than one. [`Server::stats`] takes a [`ServerStats`] snapshot.
//!
//! [`ReadvConcurrency::Serial`]: crate::ReadvConcurrency::Serial
//!
//! [`Server::stats`]: crate::Server::stats

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use xroot_proto::RequestId;

/// One gauge: how many requests are in flight now, at most and on average.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GaugeStats {
    /// In flight now.
    pub current: u64,
    /// The most ever in flight at once.
    pub peak: u64,
    /// The count averaged over time (the integral of the count over the
    /// observed interval divided by its length).
    pub mean: f64,
    /// Requests counted since the start.
    pub total: u64,
}

/// Gauges for all requests and for each request kind seen.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InFlightStats {
    /// Every request kind together.
    pub all: GaugeStats,
    /// One gauge per request id that occurred.
    pub by_kind: BTreeMap<RequestId, GaugeStats>,
}

impl InFlightStats {
    /// The gauge of `kind`, zero if it never occurred.
    pub fn kind(&self, kind: RequestId) -> GaugeStats {
        self.by_kind.get(&kind).copied().unwrap_or_default()
    }
}

/// The gauges of one TCP link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkStats {
    /// The client's address.
    pub peer: SocketAddr,
    /// The requests this link received, wherever they were answered.
    pub in_flight: InFlightStats,
}

/// A snapshot of a server's activity.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStats {
    /// Every request of every link.
    pub in_flight: InFlightStats,
    /// The links open now, in the order they connected.
    pub links: Vec<LinkStats>,
    /// Connections accepted since the server started.
    pub connections: u64,
}

impl ServerStats {
    /// The highest peak of `kind` on any open link: the most requests of
    /// that kind one link had in flight at once.
    pub fn link_peak(&self, kind: RequestId) -> u64 {
        self.links
            .iter()
            .map(|l| l.in_flight.kind(kind).peak)
            .max()
            .unwrap_or(0)
    }
}

/// A count integrated over time.
#[derive(Debug, Clone, Copy)]
struct Gauge {
    current: u64,
    peak: u64,
    total: u64,
    /// Sum of `current × seconds` up to `last`.
    area: f64,
    last: Instant,
}

impl Gauge {
    fn new(now: Instant) -> Gauge {
        Gauge {
            current: 0,
            peak: 0,
            total: 0,
            area: 0.0,
            last: now,
        }
    }

    fn advance(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.area += self.current as f64 * dt;
        self.last = self.last.max(now);
    }

    fn add(&mut self, now: Instant, up: bool) {
        self.advance(now);
        if up {
            self.current += 1;
            self.total += 1;
            self.peak = self.peak.max(self.current);
        } else {
            self.current = self.current.saturating_sub(1);
        }
    }

    fn snapshot(&self, start: Instant, now: Instant) -> GaugeStats {
        let mut g = *self;
        g.advance(now);
        let span = now
            .saturating_duration_since(start)
            .max(Duration::from_micros(1));
        GaugeStats {
            current: g.current,
            peak: g.peak,
            mean: g.area / span.as_secs_f64(),
            total: g.total,
        }
    }
}

/// The gauges of one scope (a link, or the whole server).
#[derive(Debug)]
pub(crate) struct Scope {
    start: Instant,
    gauges: Mutex<(Gauge, BTreeMap<RequestId, Gauge>)>,
}

impl Scope {
    pub(crate) fn new() -> Arc<Scope> {
        let now = Instant::now();
        Arc::new(Scope {
            start: now,
            gauges: Mutex::new((Gauge::new(now), BTreeMap::new())),
        })
    }

    fn add(&self, kind: RequestId, up: bool) {
        let now = Instant::now();
        let mut g = self.gauges.lock().unwrap();
        g.0.add(now, up);
        let start = self.start;
        g.1.entry(kind)
            .or_insert_with(|| Gauge::new(start))
            .add(now, up);
    }

    pub(crate) fn snapshot(&self) -> InFlightStats {
        let now = Instant::now();
        let g = self.gauges.lock().unwrap();
        InFlightStats {
            all: g.0.snapshot(self.start, now),
            by_kind: g
                .1
                .iter()
                .map(|(k, v)| (*k, v.snapshot(self.start, now)))
                .collect(),
        }
    }
}

/// Counts one request in flight on a link and on the server until dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    kind: RequestId,
    scopes: [Arc<Scope>; 2],
}

impl InFlight {
    /// Starts counting a request of `kind` on `link` and `server`.
    pub(crate) fn enter(kind: RequestId, link: &Arc<Scope>, server: &Arc<Scope>) -> InFlight {
        let scopes = [link.clone(), server.clone()];
        for s in &scopes {
            s.add(kind, true);
        }
        InFlight { kind, scopes }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        for s in &self.scopes {
            s.add(self.kind, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_and_mean() {
        let server = Scope::new();
        let link = Scope::new();
        let a = InFlight::enter(RequestId::READV, &link, &server);
        let b = InFlight::enter(RequestId::READV, &link, &server);
        let c = InFlight::enter(RequestId::STAT, &link, &server);
        drop(a);
        let s = link.snapshot();
        assert_eq!(s.all.current, 2);
        assert_eq!(s.all.peak, 3);
        assert_eq!(s.kind(RequestId::READV).peak, 2);
        assert_eq!(s.kind(RequestId::READV).current, 1);
        assert_eq!(s.kind(RequestId::READV).total, 2);
        assert_eq!(s.kind(RequestId::OPEN), GaugeStats::default());
        drop((b, c));
        let s = server.snapshot();
        assert_eq!((s.all.current, s.all.peak, s.all.total), (0, 3, 3));
        assert!(s.all.mean >= 0.0 && s.all.mean <= 3.0);
    }

    #[test]
    fn mean_is_time_weighted() {
        let t0 = Instant::now();
        let mut g = Gauge::new(t0);
        g.add(t0, true);
        g.add(t0 + Duration::from_secs(1), true);
        g.add(t0 + Duration::from_secs(2), false);
        g.add(t0 + Duration::from_secs(3), false);
        // 1 for 1 s, 2 for 1 s, 1 for 1 s, 0 for 1 s → mean 1.0 over 4 s
        let s = g.snapshot(t0, t0 + Duration::from_secs(4));
        assert!((s.mean - 1.0).abs() < 1e-9, "{}", s.mean);
        assert_eq!((s.peak, s.current, s.total), (2, 0, 2));
    }
}
