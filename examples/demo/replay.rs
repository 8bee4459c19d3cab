//! One run of the demo: a new client replays the workload with concurrent
//! readers, checks every byte, and reads the counters on both sides (and
//! scrapes the servers' `/metrics`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use md5::{Digest, Md5};
use xroot::cache::CacheStatsSnapshot;
use xroot::client::{ChannelStats, Client, File, OpenFlags, Url};
use xroot::server::GaugeStats;
use xroot_testkit::bench;
use xroot_testkit::delay_proxy::Traffic;
use xroot_testkit::trace::Trace;

use crate::scrape::{scrape, Cached, Scrape, Served};
use crate::{Cache, Result, Wan};

/// The files as the runs read them.
pub struct Workload {
    /// Each file's name (relative to the origin's directory) and the trace
    /// mapped onto it.
    pub files: Vec<(String, Trace)>,
    /// `(file, read)`: every vector read of every file, file after file.
    pub jobs: Vec<(usize, usize)>,
    /// Whether the files hold the generated pattern (else every run is
    /// compared with the direct one).
    pub pattern: bool,
}

impl Workload {
    pub fn new(files: Vec<(String, Trace)>, pattern: bool) -> Workload {
        let jobs = (files.iter().enumerate())
            .flat_map(|(f, (_, t))| (0..t.reads.len()).map(move |r| (f, r)))
            .collect();
        Workload {
            files,
            jobs,
            pattern,
        }
    }

    pub fn asked(&self) -> u64 {
        self.files.iter().map(|(_, t)| t.asked()).sum()
    }

    pub fn elements(&self) -> usize {
        self.files.iter().map(|(_, t)| t.elements()).sum()
    }

    /// Checks the lengths of `data`, read for `ranges` of file `f`, and its
    /// bytes against the pattern; returns their MD5 otherwise.
    fn check(&self, f: usize, ranges: &[(u64, usize)], data: &[Bytes]) -> Result<Option<[u8; 16]>> {
        let name = &self.files[f].0;
        if data.len() != ranges.len() || ranges.iter().zip(data).any(|(r, d)| r.1 != d.len()) {
            return Err(format!("{name}: a vector read returned the wrong lengths").into());
        }
        if !self.pattern {
            let mut md5 = Md5::new();
            data.iter().for_each(|d| md5.update(d));
            return Ok(Some(md5.finalize().into()));
        }
        for (&(offset, _), got) in ranges.iter().zip(data) {
            if !bench::is_pattern(f as u64, offset, got) {
                return Err(format!("{name}: wrong bytes at offset {offset}").into());
            }
        }
        Ok(None)
    }
}

/// The origin-side counters a run can read.
pub struct Probe<'a> {
    pub wan: Option<&'a Wan>,
    pub cache: Option<&'a Cache>,
    /// The origin's `/metrics` (our origin server, local mode).
    pub origin_metrics: Option<SocketAddr>,
    /// The cache's `/metrics`.
    pub cache_metrics: Option<SocketAddr>,
}

/// Every counter at one instant.
struct Snapshot {
    at: Instant,
    client: ChannelStats,
    origin: Option<GaugeStats>,
    relay: Option<Traffic>,
    cache: Option<CacheStatsSnapshot>,
}

impl Probe<'_> {
    fn snapshot(&self, client: &Client) -> Snapshot {
        Snapshot {
            client: client.channels()[0].stats(),
            origin: self.wan.map(|w| w.server.stats().in_flight.all),
            relay: self.wan.map(|w| w.relay.traffic()),
            cache: self.cache.map(|c| c.fs.stats()),
            at: Instant::now(),
        }
    }

    /// Both `/metrics` (those there are), over HTTP.
    async fn scrape(&self) -> Result<[Option<Scrape>; 2]> {
        let mut out = [None, None];
        for (at, into) in [self.origin_metrics, self.cache_metrics]
            .iter()
            .zip(&mut out)
        {
            if let Some(addr) = at {
                *into = Some(scrape(*addr).await?);
            }
        }
        Ok(out)
    }
}

/// Requests in flight over a replay.
#[derive(Debug, Clone, Copy)]
pub struct InFlight {
    /// Time-weighted mean.
    pub mean: f64,
    pub peak: u64,
}

/// `gauge` over `[a, b]`, from its snapshots at both ends and the instant
/// it started: the area under the count between the two, over the time.
/// The peak is since the start; the setup before the replay sends one
/// request at a time, so that is the replay's peak whenever it sent any.
fn window(started: Instant, a: (&GaugeStats, Instant), b: (&GaugeStats, Instant)) -> InFlight {
    let area = |(g, at): (&GaugeStats, Instant)| g.mean * (at - started).as_secs_f64();
    let idle = b.0.total == a.0.total && a.0.current == 0;
    InFlight {
        mean: (area(b) - area(a)).max(0.0) / (b.1 - a.1).as_secs_f64(),
        peak: if idle { 0 } else { b.0.peak },
    }
}

/// The figures of one run.
pub struct Figures {
    pub name: &'static str,
    /// Seconds.
    pub wall: f64,
    pub client: InFlight,
    /// At our origin server (local mode).
    pub origin: Option<InFlight>,
    /// From the cache to its origin.
    pub cache: Option<InFlight>,
    pub asked: u64,
    /// Bytes the origin was asked for.
    pub fetched: u64,
    /// Read requests the origin got.
    pub origin_requests: u64,
    pub vector_reads: u64,
    /// What the origin's `/metrics` counted over the replay.
    pub scraped_origin: Option<Served>,
    /// What the cache's `/metrics` counted over the replay.
    pub scraped_cache: Option<Cached>,
}

/// One run: a new client opens the files at `target`, then `readers`
/// tasks replay the workload. Returns the figures and, for a remote
/// origin, the MD5 of every vector read (by job).
pub async fn replay(
    name: &'static str,
    target: &Url,
    work: &Arc<Workload>,
    readers: usize,
    probe: &Probe<'_>,
) -> Result<(Figures, Vec<[u8; 16]>)> {
    let client = Client::new();
    let mut files = Vec::new();
    for (file, trace) in &work.files {
        let mut url = target.clone();
        url.path = format!("{}/{file}", url.path.trim_end_matches('/'));
        let f = client.open(&url.to_string(), OpenFlags::READ).await?;
        if let Some(block) = trace.untouched_block() {
            f.readv(&[(block, 1)]).await?;
        }
        files.push(f);
    }
    let files = Arc::new(files);
    let before = probe.snapshot(&client);
    let [origin_before, cache_before_scrape] = probe.scrape().await?;
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..readers)
        .map(|_| tokio::spawn(reader(files.clone(), work.clone(), next.clone())))
        .collect();
    let mut digests = vec![[0; 16]; work.jobs.len()];
    for task in tasks {
        for (job, digest) in task.await?? {
            digests[job] = digest;
        }
    }
    let after = probe.snapshot(&client);
    let [origin_after, cache_after_scrape] = probe.scrape().await?;
    for f in files.iter() {
        f.close().await?;
    }

    let wall = (after.at - before.at).as_secs_f64();
    let origin = (probe
        .wan
        .zip(before.origin.as_ref())
        .zip(after.origin.as_ref()))
    .map(|((w, a), b)| window(w.started, (a, before.at), (b, after.at)));
    let (cache_before, cache_after) = (before.cache.as_ref(), after.cache.as_ref());
    let cache = (probe.cache.zip(cache_before).zip(cache_after)).map(|((c, a), b)| {
        window(
            c.started,
            (&a.origin_requests, before.at),
            (&b.origin_requests, after.at),
        )
    });
    let asked = work.asked();
    let (fetched, origin_requests) =
        match (&before.relay, &after.relay, cache_before.zip(cache_after)) {
            (Some(a), Some(b), _) => {
                let t = b.since(a);
                (t.read_bytes_asked, t.reads())
            }
            (_, _, Some((a, b))) => (
                b.bytes_fetched - a.bytes_fetched,
                b.origin_request_count - a.origin_request_count,
            ),
            // remote and direct: the origin got what the client sent
            _ => (asked, after.client.completed - before.client.completed),
        };
    let figures = Figures {
        name,
        wall,
        client: InFlight {
            mean: (after.client.in_flight_seconds - before.client.in_flight_seconds) / wall,
            peak: after.client.in_flight_peak,
        },
        origin,
        cache,
        asked,
        fetched,
        origin_requests,
        vector_reads: work.jobs.len() as u64,
        scraped_origin: (origin_before.zip(origin_after)).map(|(a, b)| Served::between(&a, &b)),
        scraped_cache: (cache_before_scrape.zip(cache_after_scrape))
            .map(|(a, b)| Cached::between(&a, &b)),
    };
    Ok((figures, digests))
}

/// One of the concurrent readers: takes the next vector read of the queue
/// until none is left, reads and checks it. Returns the MD5s it computed.
async fn reader(
    files: Arc<Vec<File>>,
    work: Arc<Workload>,
    next: Arc<AtomicUsize>,
) -> Result<Vec<(usize, [u8; 16])>> {
    let mut digests = Vec::new();
    loop {
        let job = next.fetch_add(1, Ordering::Relaxed);
        let Some(&(f, r)) = work.jobs.get(job) else {
            return Ok(digests);
        };
        let ranges = &work.files[f].1.reads[r];
        let data = (files[f].readv(ranges).await)
            .map_err(|e| format!("{}: vector read {r}: {e}", work.files[f].0))?;
        if let Some(digest) = work.check(f, ranges, &data)? {
            digests.push((job, digest));
        }
    }
}

/// Checks that run `name` read the same bytes as the direct run.
pub fn compare(name: &str, direct: &[[u8; 16]], got: &[[u8; 16]], work: &Workload) -> Result<()> {
    match direct.iter().zip(got).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(job) => {
            let (f, r) = work.jobs[job];
            let file = &work.files[f].0;
            Err(format!("{name}: {file}: vector read {r} differs from the direct read").into())
        }
    }
}
