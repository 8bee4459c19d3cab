//! The NanoAOD trace replayed as an analysis job reads it, directly and
//! through caches, against an origin 50 ms away, **opens and closes
//! included**; one run, one table (`cargo bench --bench cache_trace`; about
//! a minute on two cores, most of it the stock XCache cold). Each kind of
//! replay runs [`REPS`] times (`CACHE_TRACE_REPS` overrides), every cache
//! cold on an empty cache and then warm [`WARM_PASSES`] times; the tables
//! show the median by wall time and list all the wall times.
//!
//! The trace is `benches/trace/nanoaod.trace`: the 50 vector reads (101
//! elements, ~635 kB each; 31.8 MB in all) uproot issues reading 101 of the
//! 1001 branches of a 118 MB NanoAOD-like file, one per cluster of 2000
//! events (how it was made: benches/trace/README.md).
//!
//! The job: its 50 clusters lie in [`FILES`] files, copies of the trace's
//! file (each of its size, file `k` holding the byte pattern of seed `k`,
//! xroot-testkit/src/bench.rs, so that a byte of the wrong file or offset is
//! caught): file `k` holds the clusters `50k/9 .. 50(k+1)/9` (5 or 6
//! consecutive clusters, read at their offsets in the trace). [`STREAMS`]
//! streams (the job's worker threads, sharing one client as the threads of
//! one process share XrdCl's connection) take the files from a queue in
//! order; each opens its file, reads its clusters one after the other (a
//! vector read per cluster, the next sent when the last is answered, as
//! ROOT's TTreeCache and uproot's iterate read), closes it and takes the
//! next. Eight files start at once; the ninth goes to the stream that
//! finishes first, as the last file of a job does. The timing runs from
//! the client's creation (its login included) to the last close: what the
//! job waits for. Not replayed: the three plain reads of the TTree's
//! metadata uproot makes after an open (not in the trace).
//!
//! The origin is a stock xrootd 5.5.3 behind a relay adding 25 ms each way
//! (xroot-testkit/src/delay_proxy.rs), which counts what the origin was
//! asked for and sent and the round trips of its longest chain of
//! dependent requests. The runs, each with a new client:
//!
//! (a) direct: the job reads from the origin through the relay, logging in
//!     over it (two round trips) as a new job does;
//! (b) the stock XCache (`libXrdPss` + `libXrdPfc`, `pfc.blocksize 4k`, no
//!     prefetch, xroot-testkit/src/xcache.rs) whose origin is the relay,
//!     cold (an empty cache) and then warm (the same cache, new clients);
//! (c) ours (`examples/xcache.rs` at its defaults: 4 kB blocks, 1 MiB
//!     io_size, no gap merging, no prefetch, a trust window of 10 minutes)
//!     in front of the relay like the XCache in (b), on a tokio runtime of
//!     its own, cold then warm; its own statistics are printed after the
//!     tables.
//!
//! Each cache is a running site cache: before its cold run, a client opens
//! and reads a small file of the origin that is not one of the job's
//! (outside the timing), so the cache's connection to the origin is up,
//! as it is at a cache that serves other jobs; none of the job's files is
//! cached.
//!
//! The figures of each run:
//! - wall time;
//! - bytes asked: the sum of the trace's lengths;
//! - fetched: the bytes the origin was asked for by reads (`kXR_read`,
//!   `kXR_pgread` lengths and `kXR_readv` element lengths) and the bytes it
//!   sent (whole frames, headers included), as the relay saw them;
//! - origin reads (`kXR_read` + `kXR_pgread` + `kXR_readv` requests) and
//!   their number per vector read of the trace; origin opens;
//! - origin round trips: the longest chain of origin requests each sent
//!   after an answer came ([`Traffic::round_trips`]).
//!
//! Last, the figures for `benches/report.sh`, one `summary: KEY VALUE` line
//! each, RUN being `direct`, `stock_cold`, `stock_warm`, `ours_cold` and
//! `ours_warm`: `cache_trace.RUN.wall_s` (seconds),
//! `cache_trace.RUN.wall_ratio` (÷ the direct run's),
//! `cache_trace.RUN.fetched_over_asked` (bytes the origin was asked for ÷
//! bytes the trace asks), `cache_trace.RUN.origin_reads_per_read` and
//! `cache_trace.RUN.origin_round_trips`; and
//! `cache_trace.ours_warm.over_stock_warm` (our warm wall time ÷ the stock
//! XCache's).
//!
//! Prints "skipped" when the stock xrootd is not installed.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use tokio::runtime::Runtime;
use xroot::client::{Client, OpenFlags};
use xroot::proto::RequestId;
use xroot_testkit::delay_proxy::{DelayProxy, Traffic};
use xroot_testkit::stock::StockServer;
use xroot_testkit::trace::Trace;
use xroot_testkit::xcache::StockCache;
use xroot_testkit::{bench, stock, trace};
use xroot_tools::xcache as ours;

/// The job's concurrent streams.
const STREAMS: usize = 8;
/// The files the trace's clusters lie in.
const FILES: usize = 9;
/// The relay's delay each way: a 50 ms round trip to the origin.
const ONE_WAY: Duration = Duration::from_millis(25);
/// Replays of each kind (direct, each cache cold and warm) by default; the
/// tables show the median by wall time.
const REPS: usize = 3;
/// Warm replays after each cold one (each with a new client; they take
/// tens of milliseconds, so a median of many is cheap and steadier).
const WARM_PASSES: usize = 5;
/// The small origin file a cache is primed with (not one of the job's).
const PRIME: &str = "prime.bin";

/// The figures of one replay.
struct Run {
    name: String,
    /// The RUN of its summary keys.
    key: String,
    wall: Duration,
    /// The wall times of every repetition, in run order.
    walls: Vec<Duration>,
    /// What the origin saw during the replay.
    origin: Traffic,
}

/// The job: which clusters (trace reads) each file holds.
struct Job {
    trace: Trace,
    /// File `k`'s clusters: a range of `trace.reads`.
    files: Vec<Range<usize>>,
}

impl Job {
    fn new(trace: Trace) -> Job {
        let n = trace.reads.len();
        let files = (0..FILES)
            .map(|k| n * k / FILES..n * (k + 1) / FILES)
            .collect();
        Job { trace, files }
    }
}

/// File `k`'s name in the origin's directory.
fn name(k: usize) -> String {
    format!("nanoaod{k}.bin")
}

fn main() {
    if !stock::xrootd_available() {
        println!("cache_trace: skipped (the stock xrootd is not installed)");
        return;
    }
    let reps = std::env::var("CACHE_TRACE_REPS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(REPS);
    let job = Arc::new(Job::new(trace::nanoaod()));
    let data = tempfile::tempdir().expect("temp dir");
    for k in 0..FILES {
        bench::write_pattern(&data.path().join(name(k)), job.trace.size, k as u64);
    }
    bench::write_file(&data.path().join(PRIME), 4096);
    let rt = runtime();
    let origin = StockServer::start(data.path(), &[]).expect("xrootd");
    let relay = rt.block_on(DelayProxy::start(origin.port, ONE_WAY));

    // (a) direct
    let direct =
        median((0..reps).map(|_| replay(&rt, "direct", "direct", relay.port, &relay, &job)));

    // (b) the stock XCache at 4 kB blocks, a new one (empty) for each repetition
    let stock: Vec<(Run, Vec<Run>)> = (0..reps)
        .map(|_| {
            let stock = StockCache::start(relay.port, "4k").expect("xcache");
            let names = ("stock XCache 4k", "stock");
            cache_runs(&rt, names, stock.port(), &relay, &job)
        })
        .collect();

    // (c) ours at its defaults, on a runtime of its own (as the stock cache
    // has its own process), a new one on an empty directory each time
    let cache_rt = runtime();
    let mut own_stats = String::new();
    let ours: Vec<(Run, Vec<Run>)> = (0..reps)
        .map(|_| {
            let cache_dir = tempfile::tempdir().expect("temp dir");
            let server = cache_rt
                .block_on(ours::start(&our_cli(relay.port, cache_dir.path())))
                .expect("our cache");
            let (port, fs, handle) = (
                server.local_addr().port(),
                server.fs().clone(),
                server.handle(),
            );
            cache_rt.spawn(server.serve());
            let runs = cache_runs(&rt, ("ours", "ours"), port, &relay, &job);
            handle.shutdown();
            own_stats = fs.stats().to_string();
            runs
        })
        .collect();
    println!("\nour cache's own figures after its last cold and warm runs:\n{own_stats}");

    let [stock_cold, stock_warm] = medians(stock);
    let [ours_cold, ours_warm] = medians(ours);
    let runs = [direct, stock_cold, stock_warm, ours_cold, ours_warm];
    print_tables(&job, &runs);
    println!("\nload average at the end: {}\n", bench::load_average());
    print_summary(&job.trace, &runs);
}

/// `xcache` at its defaults in front of the origin at `origin` (the relay's
/// port), caching in `dir`, on a free port.
fn our_cli(origin: u16, dir: &Path) -> ours::Cli {
    ours::Cli::try_parse_from([
        "xcache",
        "--origin",
        &format!("root://127.0.0.1:{origin}"),
        "--cache-dir",
        dir.to_str().expect("UTF-8 temp dir"),
        "--port",
        "0",
    ])
    .expect("xcache arguments")
}

/// The run of median wall time among `runs`, carrying every run's wall time.
fn median(runs: impl IntoIterator<Item = Run>) -> Run {
    let mut runs: Vec<Run> = runs.into_iter().collect();
    let walls: Vec<Duration> = runs.iter().map(|r| r.wall).collect();
    runs.sort_by_key(|r| r.wall);
    let mut mid = runs.swap_remove(runs.len() / 2);
    mid.walls = walls;
    mid
}

/// The median of the cold runs and that of all the warm runs of `reps`.
fn medians(reps: Vec<(Run, Vec<Run>)>) -> [Run; 2] {
    let (cold, warm): (Vec<Run>, Vec<Vec<Run>>) = reps.into_iter().unzip();
    [median(cold), median(warm.into_iter().flatten())]
}

/// A tokio runtime with two worker threads (the machine has two cores).
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A cache at `cache_port` (whose origin is behind `relay`) primed (see
/// the module docs), then replayed cold, then [`WARM_PASSES`] times warm,
/// each with a new client;
/// `(name, key)` name the runs in the tables and the summary keys.
fn cache_runs(
    rt: &Runtime,
    (name, key): (&str, &str),
    cache_port: u16,
    relay: &DelayProxy,
    job: &Arc<Job>,
) -> (Run, Vec<Run>) {
    prime(rt, cache_port);
    let run = |state: &str| {
        let (name, key) = (format!("{name} {state}"), format!("{key}_{state}"));
        replay(rt, &name, &key, cache_port, relay, job)
    };
    let cold = run("cold");
    (cold, (0..WARM_PASSES).map(|_| run("warm")).collect())
}

/// Opens, reads and closes [`PRIME`] at the cache at `port`, so that its
/// connection to the origin is up.
fn prime(rt: &Runtime, port: u16) {
    rt.block_on(async {
        let client = Client::new();
        let url = format!("root://127.0.0.1:{port}//{PRIME}");
        let file = client.open(&url, OpenFlags::READ).await.expect("open");
        let data = file.read_at(0, 4096).await.expect("read");
        assert!(bench::is_pattern(0, 0, &data), "{url}: wrong bytes");
        file.close().await.expect("close");
    });
}

/// One replay of the job by a new client against `127.0.0.1:port`; the
/// origin's traffic is what `relay` counted meanwhile. Panics when an
/// open, a read or a close fails or a read returns a wrong byte.
fn replay(
    rt: &Runtime,
    name: &str,
    key: &str,
    port: u16,
    relay: &DelayProxy,
    job: &Arc<Job>,
) -> Run {
    rt.block_on(async {
        let origin_before = relay.traffic();
        let t = Instant::now();
        let client = Client::new();
        let next = Arc::new(AtomicUsize::new(0));
        let streams: Vec<_> = (0..STREAMS)
            .map(|_| {
                tokio::spawn(stream(
                    client.clone(),
                    port,
                    Arc::clone(job),
                    Arc::clone(&next),
                ))
            })
            .collect();
        for s in streams {
            s.await.expect("stream");
        }
        let wall = t.elapsed();
        // the closes the client was answered for are sent on by a cache
        // after it answers them: wait for them before the next run
        tokio::time::sleep(4 * ONE_WAY).await;
        let origin = relay.traffic().since(&origin_before);
        Run {
            name: name.to_string(),
            key: key.to_string(),
            wall,
            walls: vec![wall],
            origin,
        }
    })
}

/// One of the job's streams: takes the next file until none is left, opens
/// it, reads its clusters in order, checking every byte, and closes it.
async fn stream(client: Client, port: u16, job: Arc<Job>, next: Arc<AtomicUsize>) {
    loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(clusters) = job.files.get(k) else {
            return;
        };
        let url = format!("root://127.0.0.1:{port}//{}", name(k));
        let file = client
            .open(&url, OpenFlags::READ)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
        for i in clusters.clone() {
            let ranges = &job.trace.reads[i];
            let data = file
                .readv(ranges)
                .await
                .unwrap_or_else(|e| panic!("{url}: vector read {i}: {e}"));
            check(k as u64, ranges, &data);
        }
        file.close()
            .await
            .unwrap_or_else(|e| panic!("close {url}: {e}"));
    }
}

/// Checks that `data` holds the bytes of `ranges` of the generated file of
/// seed `seed`.
fn check(seed: u64, ranges: &[(u64, usize)], data: &[bytes::Bytes]) {
    assert_eq!(ranges.len(), data.len(), "elements returned");
    for (&(offset, len), got) in ranges.iter().zip(data) {
        assert_eq!(got.len(), len, "length at offset {offset}");
        assert!(
            bench::is_pattern(seed, offset, got),
            "wrong bytes in the element at offset {offset} of file {seed}"
        );
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// The figures of every run, then the ratios to the direct run.
fn print_tables(job: &Job, runs: &[Run]) {
    let trace = &job.trace;
    let asked = trace.asked();
    let elements = trace.elements();
    println!(
        "\nNanoAOD trace: files of {:.1} MB, {} vector reads, {:.1} elements per read, {:.1} MB \
         asked; the clusters in {FILES} files, {STREAMS} streams on one client taking the files \
         from a queue, opens and closes timed; origin 50 ms away",
        mb(trace.size),
        trace.reads.len(),
        elements as f64 / trace.reads.len() as f64,
        mb(asked),
    );
    println!(
        "\n{:<20} {:>8} {:>9} {:>10} {:>9} {:>8} {:>9} {:>7} {:>7} {:>9}",
        "run",
        "wall s",
        "asked MB",
        "fetched MB",
        "fetch/ask",
        "o.reads",
        "o.r/read",
        "o.opens",
        "o.RTs",
        "o.sent MB"
    );
    for r in runs {
        println!(
            "{:<20} {:>8.3} {:>9.1} {:>10.1} {:>9.2} {:>8} {:>9.2} {:>7} {:>7} {:>9.1}",
            r.name,
            r.wall.as_secs_f64(),
            mb(asked),
            mb(r.origin.read_bytes_asked),
            r.origin.read_bytes_asked as f64 / asked as f64,
            r.origin.reads(),
            r.origin.reads() as f64 / trace.reads.len() as f64,
            r.origin.count(RequestId::OPEN),
            r.origin.round_trips,
            mb(r.origin.bytes_to_client),
        );
    }
    println!("\nwall times of every repetition (the table shows the median)");
    for r in runs {
        let walls: Vec<String> = r
            .walls
            .iter()
            .map(|w| format!("{:.3} s", w.as_secs_f64()))
            .collect();
        println!("{:<20} {}", r.name, walls.join(", "));
    }
    println!("\norigin requests during each replay, by kind");
    for r in runs {
        let kinds: Vec<String> = r
            .origin
            .requests
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(id, n)| format!("{id} {n}"))
            .collect();
        let kinds = if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(", ")
        };
        println!("{:<20} {kinds}", r.name);
    }
    println!("\norigin requests by round trip (wave) of the median runs");
    for r in runs {
        println!("{}:\n{}", r.name, r.origin.waves_text());
    }
    let direct = &runs[0];
    println!(
        "{:<20} {:>12} {:>16} {:>16}",
        "vs direct", "wall ratio", "speed-up", "fetched ratio"
    );
    for r in runs {
        println!(
            "{:<20} {:>12.2} {:>16.2} {:>16.2}",
            r.name,
            r.wall.as_secs_f64() / direct.wall.as_secs_f64(),
            direct.wall.as_secs_f64() / r.wall.as_secs_f64(),
            r.origin.read_bytes_asked as f64 / direct.origin.read_bytes_asked.max(1) as f64,
        );
    }
    println!(
        "\ntargets for ours (issue 31): cold wall ratio <= 0.5, warm wall <= the stock XCache's \
         warm wall"
    );
}

/// The summary lines of every run (keys in the module docs).
fn print_summary(trace: &Trace, runs: &[Run]) {
    let asked = trace.asked() as f64;
    let direct = runs[0].wall.as_secs_f64();
    for r in runs {
        let wall = r.wall.as_secs_f64();
        let reads = r.origin.reads() as f64 / trace.reads.len() as f64;
        for (figure, value) in [
            ("wall_s", wall),
            ("wall_ratio", wall / direct),
            (
                "fetched_over_asked",
                r.origin.read_bytes_asked as f64 / asked,
            ),
            ("origin_reads_per_read", reads),
            ("origin_round_trips", r.origin.round_trips as f64),
        ] {
            bench::summary(&format!("cache_trace.{}.{figure}", r.key), value);
        }
    }
    let key = |k: &str| {
        runs.iter()
            .find(|r| r.key == k)
            .map(|r| r.wall.as_secs_f64())
    };
    if let (Some(ours), Some(stock)) = (key("ours_warm"), key("stock_warm")) {
        bench::summary("cache_trace.ours_warm.over_stock_warm", ours / stock);
    }
}
