//! The origin's and the cache's `/metrics`, as `serve --metrics` and
//! `xcache --metrics` serve them (`xroot_tools::metrics`): an
//! endpoint per role that renders the server of the run under way, a
//! scrape over HTTP, and the check that what it says agrees with the
//! demo's own figures.
//!
//! Agreeing means equal, byte for byte and request for request, over the
//! replay (the difference between the scrapes before and after it): the
//! bytes of file data the origin sent equal the bytes the relay saw it
//! asked for (its read lengths; neither counts frame headers, so framing
//! explains nothing here), its read requests (read, pgread, readv, pgreadv,
//! every one answered `ok`) equal those the relay saw; the cache's bytes
//! asked equal the workload's and the data it sent the client, its vector
//! reads answered the workload's, its bytes fetched and origin requests
//! those of the table; nothing is in flight after the replay.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xroot::server::{RequestObserver, ServerHandle};
use xroot_tools::metrics::{serve_text, Metrics, Observer};

use crate::replay::Figures;
use crate::Result;

/// The metrics of the server running now.
type Current = Arc<Mutex<Option<(Arc<Metrics>, ServerHandle)>>>;

/// An endpoint serving `GET /metrics` for one role, bound for the whole
/// demo: each run's new server (new counters) takes it over.
pub struct Endpoint {
    pub addr: SocketAddr,
    current: Current,
}

impl Endpoint {
    /// Binds `addr` (on the runtime the caller runs on).
    pub async fn bind(addr: SocketAddr) -> std::io::Result<Endpoint> {
        let current: Current = Arc::default();
        let now = current.clone();
        let addr = serve_text(addr, move || {
            match &*now.lock().unwrap_or_else(PoisonError::into_inner) {
                Some((metrics, server)) => metrics.render(server),
                None => "# EOF\n".into(),
            }
        })
        .await?;
        Ok(Endpoint { addr, current })
    }

    /// An observer counting into `metrics`, for a server's [`Config`].
    ///
    /// [`Config`]: xroot::server::Config
    pub fn observer(metrics: &Arc<Metrics>) -> Option<Arc<dyn RequestObserver>> {
        Observer::new(false, Some(metrics.clone())).map(|o| o as Arc<dyn RequestObserver>)
    }

    /// Serves `metrics` about `server` from now on.
    pub fn show(&self, metrics: Arc<Metrics>, server: ServerHandle) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some((metrics, server));
    }
}

/// One scrape: `series → value` (`name{labels}` as written).
#[derive(Debug, Clone, Default)]
pub struct Scrape(BTreeMap<String, f64>);

impl Scrape {
    /// The sum of the series of `name` whose labels contain each of
    /// `labels`; 0 when there is none.
    fn sum(&self, name: &str, labels: &[&str]) -> f64 {
        (self.0.iter())
            .filter(|(series, _)| {
                let (n, rest) = series.split_once('{').unwrap_or((series, ""));
                n == name && labels.iter().all(|l| rest.contains(l))
            })
            .map(|(_, v)| v)
            .sum()
    }

    fn get(&self, name: &str) -> u64 {
        self.sum(name, &[]) as u64
    }

    /// Read requests answered (read, pgread, readv, pgreadv), and those of
    /// them not answered `ok`.
    fn reads(&self) -> (u64, u64) {
        let mut all = 0.0;
        let mut ok = 0.0;
        for kind in ["read", "pgread", "readv", "pgreadv"] {
            let kind = format!("kind=\"{kind}\"");
            all += self.sum("xroot_requests_total", &[&kind]);
            ok += self.sum("xroot_requests_total", &[&kind, "status=\"ok\""]);
        }
        (all as u64, (all - ok) as u64)
    }
}

/// `GET http://addr/metrics`, parsed.
///
/// Errors: no connection, not a 200 answer, or a body that is not whole.
pub async fn scrape(addr: SocketAddr) -> Result<Scrape> {
    let fail = |e: String| format!("scraping http://{addr}/metrics: {e}");
    let mut s = TcpStream::connect(addr)
        .await
        .map_err(|e| fail(e.to_string()))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| fail(e.to_string()))?;
    let mut answer = String::new();
    (s.read_to_string(&mut answer).await).map_err(|e| fail(e.to_string()))?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    if !head.starts_with("HTTP/1.1 200 ") || !body.ends_with("# EOF\n") {
        return Err(fail(format!("answered {:?}", head.lines().next())).into());
    }
    let mut series = BTreeMap::new();
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let parsed = (line.rsplit_once(' ')).and_then(|(s, v)| Some((s, v.parse().ok()?)));
        let (name, value) = parsed.ok_or_else(|| fail(format!("a line {line:?}")))?;
        series.insert(name.to_string(), value);
    }
    Ok(Scrape(series))
}

/// What a server's `/metrics` counted over a replay.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// Bytes of file data sent (`xroot_read_bytes_total`).
    pub data_bytes: u64,
    /// Read requests answered.
    pub reads: u64,
    /// Of them, not answered `ok`.
    pub reads_failed: u64,
    /// Vector reads answered.
    pub readv: u64,
    /// Requests and vector reads in flight at the end.
    pub in_flight: u64,
}

impl Served {
    pub fn between(a: &Scrape, b: &Scrape) -> Served {
        let ((ra, fa), (rb, fb)) = (a.reads(), b.reads());
        let readv = |s: &Scrape| s.sum("xroot_requests_total", &["kind=\"readv\""]) as u64;
        Served {
            data_bytes: b.get("xroot_read_bytes_total") - a.get("xroot_read_bytes_total"),
            reads: rb - ra,
            reads_failed: fb - fa,
            readv: readv(b) - readv(a),
            in_flight: b.get("xroot_requests_in_flight") + b.get("xroot_vector_reads_in_flight"),
        }
    }
}

/// What the cache's `/metrics` counted over a replay.
#[derive(Debug, Clone, Copy)]
pub struct Cached {
    /// Its server's side (toward the client).
    pub served: Served,
    pub asked: u64,
    pub fetched: u64,
    pub origin_requests: u64,
}

impl Cached {
    pub fn between(a: &Scrape, b: &Scrape) -> Cached {
        let d = |name: &str| b.get(name) - a.get(name);
        Cached {
            served: Served::between(a, b),
            asked: d("xroot_cache_asked_bytes_total"),
            fetched: d("xroot_cache_fetched_bytes_total"),
            origin_requests: d("xroot_cache_origin_requests_total"),
        }
    }
}

/// Where `/metrics` and the table differ, one line each (empty: they
/// agree, as the module docs say).
pub fn disagreements(run: &Figures) -> Vec<String> {
    let mut checks: Vec<(&str, u64, u64)> = Vec::new();
    if let Some(o) = &run.scraped_origin {
        checks.extend([
            (
                "origin /metrics: data bytes sent vs bytes fetched from the origin",
                o.data_bytes,
                run.fetched,
            ),
            (
                "origin /metrics: read requests vs origin requests",
                o.reads,
                run.origin_requests,
            ),
            ("origin /metrics: read requests not ok", o.reads_failed, 0),
            (
                "origin /metrics: requests in flight after the replay",
                o.in_flight,
                0,
            ),
        ]);
    }
    if let Some(c) = &run.scraped_cache {
        checks.extend([
            (
                "cache /metrics: bytes asked vs bytes asked by the client",
                c.asked,
                run.asked,
            ),
            (
                "cache /metrics: data bytes sent vs bytes asked by the client",
                c.served.data_bytes,
                run.asked,
            ),
            (
                "cache /metrics: vector reads answered vs vector reads",
                c.served.readv,
                run.vector_reads,
            ),
            (
                "cache /metrics: read requests not ok",
                c.served.reads_failed,
                0,
            ),
            (
                "cache /metrics: bytes fetched vs bytes fetched from the origin",
                c.fetched,
                run.fetched,
            ),
            (
                "cache /metrics: origin requests vs origin requests",
                c.origin_requests,
                run.origin_requests,
            ),
            (
                "cache /metrics: requests in flight after the replay",
                c.served.in_flight,
                0,
            ),
        ]);
    }
    (checks.into_iter())
        .filter(|(_, scraped, ours)| scraped != ours)
        .map(|(what, scraped, ours)| format!("{}: {what}: {scraped}, not {ours}", run.name))
        .collect()
}
