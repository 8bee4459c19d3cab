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
//! Each gauge is a [`TimeGauge`], which other crates use for their own
//! counts in flight (the cache counts client reads and origin requests).
//!
//! [`ReadvConcurrency::Serial`]: crate::ReadvConcurrency::Serial
//!
//! [`Server::stats`]: crate::Server::stats

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use xroot_proto::gauge::Gauge;
use xroot_proto::RequestId;

/// One gauge: how many requests are in flight now, at most and on average
/// (the reading of a [`xroot_proto::gauge::Gauge`], whose arithmetic the
/// client's statistics share).
pub use xroot_proto::gauge::GaugeStats;

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
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerStats {
    /// Every request of every link.
    pub in_flight: InFlightStats,
    /// The links open now, in the order they connected (empty in the
    /// snapshot a summary document is made from, which needs their count
    /// only: [`ServerStats::open_links`]).
    pub links: Vec<LinkStats>,
    /// How many links are open now.
    pub open_links: u64,
    /// Connections accepted since the server started.
    pub connections: u64,
    /// Sessions logged in since the server started.
    pub logins: u64,
    /// Logins that then authenticated.
    pub authenticated: u64,
    /// Credentials refused (`kXR_auth` answered `kXR_AuthFailed`).
    pub auth_failures: u64,
    /// Logins the server asked no authentication of.
    pub unauthenticated: u64,
    /// Requests answered with `kXR_error`.
    pub errors: u64,
    /// Requests answered with `kXR_redirect`.
    pub redirects: u64,
    /// Requests answered with `kXR_wait`.
    pub waits: u64,
    /// Bytes read from all links, TLS records included, since the start.
    pub bytes_in: u64,
    /// Bytes written to all links, as [`ServerStats::bytes_in`].
    pub bytes_out: u64,
    /// The most links open at once.
    pub peak_links: u64,
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

/// A count of things in flight, integrated over time: how many now, the
/// peak and the time-weighted mean since the gauge was made. Each
/// [`enter`](TimeGauge::enter) counts one until its [`GaugeGuard`] drops.
///
/// ```
/// use xroot_server::TimeGauge;
/// let gauge = TimeGauge::new();
/// let one = gauge.enter();
/// let two = gauge.enter();
/// drop(one);
/// let s = gauge.snapshot();
/// assert_eq!((s.current, s.peak, s.total), (1, 2, 2));
/// drop(two);
/// ```
#[derive(Debug)]
pub struct TimeGauge {
    start: Instant,
    gauge: Arc<Mutex<Gauge>>,
}

impl Default for TimeGauge {
    fn default() -> TimeGauge {
        TimeGauge::new()
    }
}

impl TimeGauge {
    /// A gauge at zero whose mean is measured from now.
    pub fn new() -> TimeGauge {
        TimeGauge::since(Instant::now())
    }

    /// A gauge at zero whose mean is measured from `start`.
    pub(crate) fn since(start: Instant) -> TimeGauge {
        TimeGauge {
            start,
            gauge: Arc::new(Mutex::new(Gauge::since(start))),
        }
    }

    /// Counts one more in flight until the returned guard is dropped. The
    /// guard owns a handle on the gauge, so it may move to another task.
    pub fn enter(&self) -> GaugeGuard {
        add(&self.gauge, true);
        GaugeGuard {
            gauge: self.gauge.clone(),
        }
    }

    /// The count now, its peak, its time-weighted mean since the start and
    /// how many were ever counted.
    pub fn snapshot(&self) -> GaugeStats {
        lock(&self.gauge).stats(Instant::now())
    }
}

/// One thing counted in flight by a [`TimeGauge`] until dropped.
#[derive(Debug)]
#[must_use = "the count drops with the guard"]
pub struct GaugeGuard {
    gauge: Arc<Mutex<Gauge>>,
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        add(&self.gauge, false);
    }
}

/// The gauge, even if a thread panicked while holding it: its updates
/// cannot leave it half done.
fn lock(gauge: &Mutex<Gauge>) -> MutexGuard<'_, Gauge> {
    gauge.lock().unwrap_or_else(PoisonError::into_inner)
}

fn add(gauge: &Mutex<Gauge>, up: bool) {
    let mut gauge = lock(gauge);
    let now = Instant::now();
    match up {
        true => gauge.enter(now),
        false => gauge.leave(now),
    }
}

/// The gauges of one scope (a link, or the whole server): all requests
/// together and one per request kind, all measured from the scope's start.
#[derive(Debug)]
pub(crate) struct Scope {
    all: TimeGauge,
    by_kind: Mutex<BTreeMap<RequestId, TimeGauge>>,
}

impl Scope {
    pub(crate) fn new() -> Arc<Scope> {
        Arc::new(Scope {
            all: TimeGauge::new(),
            by_kind: Mutex::new(BTreeMap::new()),
        })
    }

    /// The gauge of `kind`, made at its first request.
    fn kind(&self, kind: RequestId) -> Arc<Mutex<Gauge>> {
        self.by_kind
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(kind)
            .or_insert_with(|| TimeGauge::since(self.all.start))
            .gauge
            .clone()
    }

    pub(crate) fn snapshot(&self) -> InFlightStats {
        InFlightStats {
            all: self.all.snapshot(),
            by_kind: self
                .by_kind
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(k, g)| (*k, g.snapshot()))
                .collect(),
        }
    }
}

/// Counts one request in flight on a link and on the server until dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    /// The link's and the server's gauges, each for all requests and for
    /// the request's kind.
    gauges: [Arc<Mutex<Gauge>>; 4],
}

impl InFlight {
    /// Starts counting a request of `kind` on `link` and `server` (one
    /// clock reading for the four gauges).
    pub(crate) fn enter(kind: RequestId, link: &Scope, server: &Scope) -> InFlight {
        let gauges = [
            link.all.gauge.clone(),
            link.kind(kind),
            server.all.gauge.clone(),
            server.kind(kind),
        ];
        let now = Instant::now();
        for g in &gauges {
            lock(g).enter(now);
        }
        InFlight { gauges }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let now = Instant::now();
        for g in &self.gauges {
            lock(g).leave(now);
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
        use std::time::Duration;
        let t0 = Instant::now();
        let mut g = Gauge::since(t0);
        g.enter(t0);
        g.enter(t0 + Duration::from_secs(1));
        g.leave(t0 + Duration::from_secs(2));
        g.leave(t0 + Duration::from_secs(3));
        // 1 for 1 s, 2 for 1 s, 1 for 1 s, 0 for 1 s → mean 1.0 over 4 s
        let s = g.stats(t0 + Duration::from_secs(4));
        assert!((s.mean - 1.0).abs() < 1e-9, "{}", s.mean);
        assert_eq!((s.peak, s.current, s.total), (2, 0, 2));
    }
}
