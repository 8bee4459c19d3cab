//! What `serve` and `xcache` tell operators about the requests they answer:
//! `-v` logs each one through `tracing`, `--metrics ADDR` serves the
//! figures in the Prometheus (OpenMetrics) text format over HTTP.
//!
//! Both hang off the server's [`RequestObserver`]: [`Observer`] logs and
//! counts each [`RequestRecord`]. At each scrape, the figures the server and
//! the cache keep themselves (requests and vector reads in flight, links,
//! connections; for the cache, bytes asked and fetched, origin requests,
//! disk use) are read and written out beside the counters.
//!
//! Metrics (every name starts with `xroot_`):
//!
//! | name | type | labels | what |
//! |---|---|---|---|
//! | `requests_total` | counter | `kind`, `status` | requests answered: the request's XProtocol.hh name without `kXR_` (`read`, `readv`, `open`, ...) and how it ended (`ok`, `redirect`, `wait`, `gone` or the error's name, e.g. `NotFound`) |
//! | `request_duration_seconds` | histogram | `kind` | from decoding a request to queueing its last frame, 100 µs to 13 s in factors of 2 |
//! | `read_bytes_total` | counter | | bytes of file data sent by reads, pgreads and vector reads (headers and page crc32c not counted) |
//! | `written_bytes_total` | counter | | payload bytes of `kXR_write`, `kXR_pgwrite` and `kXR_writev` requests |
//! | `requests_in_flight` | gauge | `kind` | requests being served now, by kind |
//! | `vector_reads_in_flight` | gauge | | `kXR_readv` and `kXR_pgreadv` being served now |
//! | `links` | gauge | | TCP links open now (sessions and their substreams) |
//! | `connections_total` | counter | | TCP connections accepted |
//! | `cache_asked_bytes_total` | counter | | bytes clients asked the cache for |
//! | `cache_fetched_bytes_total` | counter | | bytes the cache fetched from its origin |
//! | `cache_disk_bytes_total` | counter | | bytes served from blocks already on disk |
//! | `cache_client_requests_total` | counter | | client reads and vector reads served |
//! | `cache_origin_requests_total` | counter | | requests sent to the origin |
//! | `cache_origin_requests_per_client_request` | gauge | | the ratio of the two, since the start |
//! | `cache_hit_ratio` | gauge | | bytes from disk / bytes asked, since the start |
//! | `cache_disk_used_bytes`, `cache_disk_size_bytes` | gauge | | the cache directory's file system |
//! | `monitor_packets_total` | counter | `stream`, `outcome` | monitoring datagrams (`--monitor`: stream `detailed`, `--report`: `summary`): `sent` (one per collector), `dropped` (the send queue was full), `failed` (the send failed: a collector down, an ICMP error, no route) |
//! | `monitor_sent_bytes_total` | counter | `stream` | bytes of monitoring datagrams sent |

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Metric, Registry};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use xroot_cache::purge::disk_space;
use xroot_cache::CacheStatsSnapshot;
use xroot_proto::RequestId;
use xroot_server::observe::udp::MonitorCounts;
use xroot_server::{RequestObserver, RequestRecord, ServerHandle};

type Labels = Vec<(&'static str, String)>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// The cache's own figures, read at each scrape.
pub type CacheFigures = Box<dyn Fn() -> CacheStatsSnapshot + Send + Sync>;

/// The monitoring streams' counts (`--report`, `--monitor`), read at each
/// scrape: each stream's name and counts.
pub type MonitorFigures = Box<dyn Fn() -> Vec<(&'static str, MonitorCounts)> + Send + Sync>;

/// Logs (with `-v`) and counts (with `--metrics`) each request answered.
pub struct Observer {
    log: bool,
    metrics: Option<Arc<Metrics>>,
}

impl Observer {
    /// An observer that logs each request when `log`, and counts it into
    /// `metrics`.
    pub fn new(log: bool, metrics: Option<Arc<Metrics>>) -> Option<Arc<Observer>> {
        (log || metrics.is_some()).then(|| Arc::new(Observer { log, metrics }))
    }
}

impl RequestObserver for Observer {
    fn finished(&self, r: &RequestRecord<'_>) {
        if self.log {
            tracing::info!(
                target: "xroot::request",
                client = %r.peer,
                user = r.user,
                request = kind(r.kind),
                path = r.path.unwrap_or("-"),
                status = r.outcome.label(),
                duration_us = r.duration.as_micros() as u64,
                bytes_in = r.bytes_in,
                bytes_out = r.bytes_out,
            );
        }
        if let Some(m) = &self.metrics {
            m.count(r);
        }
    }
}

/// A request kind's label: its XProtocol.hh name without `kXR_`.
fn kind(id: RequestId) -> &'static str {
    id.protocol_name()
        .map(|n| n.strip_prefix("kXR_").unwrap_or(n))
        .unwrap_or("unknown")
}

/// The registry and every metric in it.
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    durations: Family<Labels, Histogram>,
    read_bytes: Counter,
    written_bytes: Counter,
    in_flight: Family<Labels, Gauge>,
    vector_reads: Gauge,
    links: Gauge,
    connections: Counter,
    cache: Option<CacheMetrics>,
    monitor_packets: Family<Labels, Counter>,
    monitor_bytes: Family<Labels, Counter>,
    monitoring: Mutex<Option<MonitorFigures>>,
    /// One scrape at a time: each sets the scrape-time figures, then
    /// encodes.
    scrape: Mutex<()>,
}

struct CacheMetrics {
    figures: CacheFigures,
    dir: PathBuf,
    asked: Counter,
    fetched: Counter,
    from_disk: Counter,
    client_requests: Counter,
    origin_requests: Counter,
    per_client_request: FloatGauge,
    hit_ratio: FloatGauge,
    disk_used: Gauge,
    disk_size: Gauge,
}

/// Makes `counter` read `total` (a total some other part keeps).
fn set_total(counter: &Counter, total: u64) {
    counter.inc_by(total.saturating_sub(counter.get()));
}

/// Registers `metric` under `name` (after the `xroot_` prefix) with `help`;
/// returns it.
fn register<M: Metric + Clone>(r: &mut Registry, name: &str, help: &str, metric: M) -> M {
    r.register(name, help, metric.clone());
    metric
}

/// [`register`] with the metric at zero.
fn add<M: Metric + Clone + Default>(r: &mut Registry, name: &str, help: &str) -> M {
    register(r, name, help, M::default())
}

impl Metrics {
    /// Every metric at zero; `cache`: the cache's figures and its directory,
    /// for `xcache`. The metrics are registered (and written out) in the
    /// order below.
    pub fn new(cache: Option<(CacheFigures, PathBuf)>) -> Arc<Metrics> {
        let mut registry = Registry::with_prefix("xroot");
        let r = &mut registry;
        let durations = Family::<Labels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0001, 2.0, 18))
        });
        #[rustfmt::skip]
        let metrics = Metrics {
            requests:      add(r, "requests", "Requests answered"),
            durations:     register(r, "request_duration_seconds", "From decoding a request to queueing its last frame", durations),
            read_bytes:    add(r, "read_bytes", "Bytes of file data sent to clients"),
            written_bytes: add(r, "written_bytes", "Payload bytes of write requests"),
            in_flight:     add(r, "requests_in_flight", "Requests being served now"),
            vector_reads:  add(r, "vector_reads_in_flight", "Vector reads (kXR_readv, kXR_pgreadv) being served now"),
            links:         add(r, "links", "TCP links open now"),
            connections:   add(r, "connections", "TCP connections accepted"),
            cache: cache.map(|(figures, dir)| CacheMetrics {
                figures,
                dir,
                asked:              add(r, "cache_asked_bytes", "Bytes clients asked the cache for"),
                fetched:            add(r, "cache_fetched_bytes", "Bytes fetched from the origin"),
                from_disk:          add(r, "cache_disk_bytes", "Bytes served from blocks already on disk"),
                client_requests:    add(r, "cache_client_requests", "Client reads and vector reads served"),
                origin_requests:    add(r, "cache_origin_requests", "Requests sent to the origin"),
                per_client_request: add(r, "cache_origin_requests_per_client_request", "Origin requests per client request, since the start"),
                hit_ratio:          add(r, "cache_hit_ratio", "Bytes served from disk / bytes asked, since the start"),
                disk_used:          add(r, "cache_disk_used_bytes", "Bytes used on the cache directory's file system"),
                disk_size:          add(r, "cache_disk_size_bytes", "Size of the cache directory's file system, in bytes"),
            }),
            monitor_packets: add(r, "monitor_packets", "Monitoring packets (--report, --monitor) by stream and outcome: sent, dropped (the queue was full) or failed (the send failed: a collector down, an ICMP error)"),
            monitor_bytes: add(r, "monitor_sent_bytes", "Bytes of monitoring packets sent, by stream"),
            monitoring: Mutex::new(None),
            scrape: Mutex::new(()),
            registry,
        };
        Arc::new(metrics)
    }

    /// Counts the monitoring streams' packets from now on (read at each
    /// scrape).
    pub fn set_monitoring(&self, figures: MonitorFigures) {
        *self
            .monitoring
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(figures);
    }

    fn count(&self, r: &RequestRecord<'_>) {
        let kind = kind(r.kind);
        self.requests
            .get_or_create(&vec![
                ("kind", kind.to_string()),
                ("status", r.outcome.label().to_string()),
            ])
            .inc();
        self.durations
            .get_or_create(&vec![("kind", kind.to_string())])
            .observe(r.duration.as_secs_f64());
        self.read_bytes.inc_by(r.bytes_out);
        if matches!(
            r.kind,
            RequestId::WRITE | RequestId::PGWRITE | RequestId::WRITEV
        ) {
            self.written_bytes.inc_by(r.bytes_in);
        }
    }

    /// The text of one scrape: the counters, and the figures of `server`
    /// and of the cache read now.
    pub fn render(&self, server: &ServerHandle) -> String {
        let _one = self.scrape.lock().unwrap_or_else(PoisonError::into_inner);
        let s = server.stats();
        for (id, g) in &s.in_flight.by_kind {
            self.in_flight
                .get_or_create(&vec![("kind", kind(*id).to_string())])
                .set(g.current as i64);
        }
        let vector = s.in_flight.kind(RequestId::READV).current
            + s.in_flight.kind(RequestId::PGREADV).current;
        self.vector_reads.set(vector as i64);
        self.links.set(s.links.len() as i64);
        set_total(&self.connections, s.connections);
        if let Some(c) = &self.cache {
            let f = (c.figures)();
            set_total(&c.asked, f.bytes_asked);
            set_total(&c.fetched, f.bytes_fetched);
            set_total(&c.from_disk, f.bytes_from_disk);
            set_total(&c.client_requests, f.client_requests);
            set_total(&c.origin_requests, f.origin_request_count);
            let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
            c.per_client_request
                .set(ratio(f.origin_request_count, f.client_requests));
            c.hit_ratio.set(ratio(f.bytes_from_disk, f.bytes_asked));
            if let Ok(disk) = disk_space(&c.dir) {
                c.disk_size.set(disk.total as i64);
                c.disk_used.set(disk.used as i64);
            }
        }
        let monitoring = self
            .monitoring
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (stream, c) in monitoring.as_ref().map(|f| f()).unwrap_or_default() {
            for (outcome, n) in [
                ("sent", c.sent),
                ("dropped", c.dropped),
                ("failed", c.errors),
            ] {
                let labels = vec![
                    ("stream", stream.to_string()),
                    ("outcome", outcome.to_string()),
                ];
                set_total(&self.monitor_packets.get_or_create(&labels), n);
            }
            set_total(
                &self
                    .monitor_bytes
                    .get_or_create(&vec![("stream", stream.to_string())]),
                c.bytes,
            );
        }
        drop(monitoring);
        let mut text = String::new();
        // writing into a String cannot fail
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// The most of an HTTP request head read, in bytes: a longer request line
/// or header is answered 431 and the connection closed, the rest unread.
const MAX_HEAD: usize = 8 << 10;
/// How long a scraper may take to send its request head; a silent one is
/// then closed (each scraper has a task of its own: it never holds up
/// another).
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long writing an answer may take (a scraper that does not read).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Scrapers served at once; a connection beyond them is closed at once.
const MAX_SCRAPERS: usize = 512;

/// Binds `addr` for `GET /metrics` and serves scrapes of `metrics` about
/// `server` on a task of its own; the address bound.
///
/// Errors: those of binding `addr`.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    server: ServerHandle,
) -> std::io::Result<SocketAddr> {
    serve_text(addr, move || metrics.render(&server)).await
}

/// As [`serve`], the text of each scrape being what `render` returns then
/// (the demo's endpoints render whichever server runs now).
///
/// Errors: those of binding `addr`.
pub async fn serve_text(
    addr: SocketAddr,
    render: impl Fn() -> String + Send + Sync + 'static,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let render = Arc::new(render);
    let room = Arc::new(Semaphore::new(MAX_SCRAPERS));
    tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                // out of descriptors, say: wait instead of spinning
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let Ok(one) = room.clone().try_acquire_owned() else {
                continue; // dropping `stream` closes it
            };
            let render = render.clone();
            tokio::spawn(async move {
                let _one = one;
                let _ = scrape(stream, &*render).await;
            });
        }
    });
    Ok(bound)
}

/// A request head as read: the request line, or why there is none.
enum Head {
    Line(Vec<u8>),
    /// Longer than [`MAX_HEAD`].
    TooLarge,
    /// Closed, or silent for [`HEAD_TIMEOUT`], before its end.
    Gone,
}

/// Reads a request head (up to its blank line) into at most [`MAX_HEAD`]
/// bytes.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Head> {
    let mut head = vec![0u8; MAX_HEAD];
    let mut len = 0;
    loop {
        if len == MAX_HEAD {
            return Ok(Head::TooLarge);
        }
        let n = stream.read(&mut head[len..]).await?;
        if n == 0 {
            return Ok(Head::Gone);
        }
        // the blank line may straddle the previous read
        let from = len.saturating_sub(3);
        len += n;
        if let Some(end) = head[from..len].windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(from + end);
            let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
            return Ok(Head::Line(line.to_vec()));
        }
    }
}

/// Answers one HTTP/1.x request on `stream`, then closes it: `GET
/// /metrics` (or `/`) gets the text; another path 404, another method
/// 405, a line that is not `METHOD TARGET HTTP/x` 400, a head longer than
/// [`MAX_HEAD`] 431.
async fn scrape(
    mut stream: TcpStream,
    render: &(dyn Fn() -> String + Sync),
) -> std::io::Result<()> {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(head) => head?,
        Err(_) => Head::Gone,
    };
    let line = match head {
        Head::Line(line) => line,
        Head::TooLarge => Vec::new(),
        Head::Gone => return Ok(()),
    };
    let words: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let (status, kind, body) = match words[..] {
        _ if line.is_empty() => (
            "431 Request Header Fields Too Large",
            "text/plain",
            "request head too large\n".into(),
        ),
        [method, target, version] if version.starts_with(b"HTTP/1.") => match (method, target) {
            (b"GET", b"/metrics" | b"/") => (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                render(),
            ),
            (b"GET", _) => ("404 Not Found", "text/plain", "not found\n".into()),
            _ => ("405 Method Not Allowed", "text/plain", "only GET\n".into()),
        },
        _ => (
            "400 Bad Request",
            "text/plain",
            "not an HTTP/1 request\n".into(),
        ),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(reply.as_bytes()).await?;
        stream.shutdown().await
    };
    tokio::time::timeout(WRITE_TIMEOUT, write)
        .await
        .unwrap_or(Ok(()))
}
