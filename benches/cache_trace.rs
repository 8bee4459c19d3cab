//! The NanoAOD trace replayed through caches, against the origin 50 ms
//! away; one run, one table (`cargo bench --bench cache_trace`; about a
//! minute on two cores, most of it the stock XCache cold). Each kind of
//! replay runs [`REPS`] times, every cache cold on an empty cache; the
//! tables show the median by wall time and list all the wall times.
//!
//! The workload is `benches/trace/nanoaod.trace`: the 50 vector reads
//! (101 elements, ~635 kB each; 31.8 MB in all) uproot issues reading 101
//! of the 1001 branches of a 118 MB NanoAOD-like file, one per cluster of
//! 2000 events (how it was made: benches/trace/README.md). Every run
//! replays the whole trace, uncapped. The file served is not the ROOT file
//! but one of the same size whose byte `i` is `(i * 7) % 251`
//! (benches/common.rs), so every byte read is checked.
//!
//! Every run replays the trace with our client: one [`Client`], one
//! [`File`], [`READERS`] concurrent readers each taking the next vector read
//! of the trace from a shared queue and sending it with [`File::readv`]. The
//! origin is a stock xrootd 5.5.3 behind a relay adding 25 ms each way
//! (xroot-testkit/src/delay_proxy.rs), which counts what the origin was asked
//! for and sent. The runs:
//!
//! (a) direct: the client reads from the origin through the relay;
//! (b) the stock XCache (`libXrdPss` + `libXrdPfc`, `pfc.blocksize 4k`, no
//!     prefetch, xroot-testkit/src/xcache.rs) whose origin is the relay, cold
//!     (an empty cache) and then warm (the same cache, a new client);
//! (c) ours (`examples/xcache.rs` at its defaults: 4 kB blocks, 1 MiB
//!     io_size, no gap merging, no prefetch) in front of the relay like the
//!     XCache in (b), on a tokio runtime of its own, cold then warm; its own
//!     statistics (origin requests in flight, per client request, bytes
//!     from disk) are printed after the tables.
//!
//! Before each timed replay the client opens the file and reads one byte of
//! a 4 kB block the trace never touches (this asks the server's readv limits
//! outside the timing); the figures cover the replay alone:
//! - wall time;
//! - the client's requests in flight, time-weighted mean over the replay
//!   and peak (`ChannelStats` of its one channel);
//! - bytes asked: the sum of the trace's lengths;
//! - fetched: the bytes the origin was asked for by reads (`kXR_read`,
//!   `kXR_pgread` lengths and `kXR_readv` element lengths) and the bytes it
//!   sent (whole frames, headers included), as the relay saw them;
//! - origin reads (`kXR_read` + `kXR_pgread` + `kXR_readv` requests) and
//!   their number per vector read of the trace.
//!
//! Last, the figures for `benches/report.sh`, one `summary: KEY VALUE` line
//! each, RUN being `direct`, `stock_cold`, `stock_warm`, `ours_cold` and
//! `ours_warm`: `cache_trace.RUN.wall_s` (seconds),
//! `cache_trace.RUN.wall_ratio` (÷ the direct run's),
//! `cache_trace.RUN.fetched_over_asked` (bytes the origin was asked for ÷
//! bytes the trace asks) and `cache_trace.RUN.origin_reads_per_read`.
//!
//! Prints "skipped" when the stock xrootd is not installed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use tokio::runtime::Runtime;
use xroot::client::{Client, File, OpenFlags};
use xroot_testkit::delay_proxy::{DelayProxy, Traffic};
use xroot_testkit::stock::StockServer;
use xroot_testkit::trace::Trace;
use xroot_testkit::xcache::StockCache;
use xroot_testkit::{bench, stock, trace};
use xroot_tools::xcache as ours;

/// Concurrent readers sharing the client's one file.
const READERS: usize = 8;
/// The relay's delay each way: a 50 ms round trip to the origin.
const ONE_WAY: Duration = Duration::from_millis(25);
/// Replays of each kind (direct, each cache cold and warm); the tables
/// show the median by wall time.
const REPS: usize = 3;
/// The served file's name in the origin's directory.
const NAME: &str = "nanoaod.bin";

/// The figures of one replay.
struct Run {
    name: String,
    /// The RUN of its summary keys.
    key: String,
    wall: Duration,
    /// The wall times of every repetition, in run order.
    walls: Vec<Duration>,
    in_flight_mean: f64,
    in_flight_peak: u64,
    /// What the origin saw during the replay.
    origin: Traffic,
}

fn main() {
    if !stock::xrootd_available() {
        println!("cache_trace: skipped (the stock xrootd is not installed)");
        return;
    }
    let trace = Arc::new(trace::nanoaod());
    let data = tempfile::tempdir().expect("temp dir");
    bench::write_file(&data.path().join(NAME), trace.size);
    let rt = runtime();
    let origin = StockServer::start(data.path(), &[]).expect("xrootd");
    let relay = rt.block_on(DelayProxy::start(origin.port, ONE_WAY));

    // (a) direct
    let direct =
        median((0..REPS).map(|_| replay(&rt, "direct", "direct", relay.port, &relay, &trace)));

    // (b) the stock XCache at 4 kB blocks, a new one (empty) for each repetition
    let stock: Vec<[Run; 2]> = (0..REPS)
        .map(|_| {
            let stock = StockCache::start(relay.port, "4k").expect("xcache");
            let names = ("stock XCache 4k", "stock");
            cache_runs(&rt, names, stock.port(), &relay, &trace)
        })
        .collect();

    // (c) ours at 4 kB blocks, on a runtime of its own (as the stock cache
    // has its own process), a new one on an empty directory each time
    let cache_rt = runtime();
    let mut own_stats = String::new();
    let ours: Vec<[Run; 2]> = (0..REPS)
        .map(|_| {
            let cache_dir = tempfile::tempdir().expect("temp dir");
            let cli = ours::Cli::try_parse_from([
                "xcache",
                "--origin",
                &format!("root://127.0.0.1:{}", relay.port),
                "--cache-dir",
                cache_dir.path().to_str().expect("UTF-8 temp dir"),
                "--port",
                "0",
            ])
            .expect("xcache arguments");
            let server = cache_rt.block_on(ours::start(&cli)).expect("our cache");
            let (port, fs, handle) = (
                server.local_addr().port(),
                server.fs().clone(),
                server.handle(),
            );
            cache_rt.spawn(server.serve());
            let runs = cache_runs(&rt, ("ours 4k", "ours"), port, &relay, &trace);
            handle.shutdown();
            own_stats = fs.stats().to_string();
            runs
        })
        .collect();
    println!("\nour cache's own figures after its last cold and warm runs:\n{own_stats}");

    let [stock_cold, stock_warm] = medians(stock);
    let [ours_cold, ours_warm] = medians(ours);
    let runs = [direct, stock_cold, stock_warm, ours_cold, ours_warm];
    print_tables(&trace, &runs);
    println!("\nload average at the end: {}\n", bench::load_average());
    print_summary(&trace, &runs);
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

/// The medians of the cold runs and of the warm runs of `pairs`.
fn medians(pairs: Vec<[Run; 2]>) -> [Run; 2] {
    let (cold, warm): (Vec<Run>, Vec<Run>) = pairs.into_iter().map(|[c, w]| (c, w)).unzip();
    [median(cold), median(warm)]
}

/// A tokio runtime with two worker threads (the machine has two cores).
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A cache at `cache_port` (whose origin is behind `relay`) replayed cold,
/// then warm with a new client; `(name, key)` name the runs in the tables
/// and the summary keys.
fn cache_runs(
    rt: &Runtime,
    (name, key): (&str, &str),
    cache_port: u16,
    relay: &DelayProxy,
    trace: &Arc<Trace>,
) -> [Run; 2] {
    [("cold", "_cold"), ("warm", "_warm")].map(|(state, suffix)| {
        let (name, key) = (format!("{name} {state}"), format!("{key}{suffix}"));
        replay(rt, &name, &key, cache_port, relay, trace)
    })
}

/// One replay of the trace by a new client against `127.0.0.1:port`; the
/// origin's traffic is what `relay` counted meanwhile. Panics when a read
/// fails or returns a wrong byte.
fn replay(
    rt: &Runtime,
    name: &str,
    key: &str,
    port: u16,
    relay: &DelayProxy,
    trace: &Arc<Trace>,
) -> Run {
    rt.block_on(async {
        let client = Client::new();
        let url = format!("root://127.0.0.1:{port}//{NAME}");
        let file = Arc::new(client.open(&url, OpenFlags::READ).await.expect("open"));
        let prime = [(trace.untouched_block().expect("an untouched block"), 1)];
        check(&prime, &file.readv(&prime).await.expect("readv"));
        let channel = &client.channels()[0];
        let (before, origin_before) = (channel.stats(), relay.traffic());

        let t = Instant::now();
        let next = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                tokio::spawn(reader(
                    Arc::clone(&file),
                    Arc::clone(trace),
                    Arc::clone(&next),
                ))
            })
            .collect();
        for r in readers {
            r.await.expect("reader");
        }
        let wall = t.elapsed();

        let after = channel.stats();
        let origin = relay.traffic().since(&origin_before);
        file.close().await.expect("close");
        Run {
            name: name.to_string(),
            key: key.to_string(),
            wall,
            walls: vec![wall],
            in_flight_mean: (after.in_flight_seconds - before.in_flight_seconds)
                / wall.as_secs_f64(),
            in_flight_peak: after.in_flight_peak,
            origin,
        }
    })
}

/// One of the concurrent readers: takes the trace's next vector read until
/// none is left, reads it and checks it.
async fn reader(file: Arc<File>, trace: Arc<Trace>, next: Arc<AtomicUsize>) {
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(ranges) = trace.reads.get(i) else {
            return;
        };
        let data = file
            .readv(ranges)
            .await
            .unwrap_or_else(|e| panic!("vector read {i}: {e}"));
        check(ranges, &data);
    }
}

/// Checks that `data` holds the bytes of `ranges` of the generated file.
fn check(ranges: &[(u64, usize)], data: &[bytes::Bytes]) {
    assert_eq!(ranges.len(), data.len(), "elements returned");
    for (&(offset, len), got) in ranges.iter().zip(data) {
        assert_eq!(got.len(), len, "length at offset {offset}");
        assert!(
            bench::is_pattern(0, offset, got),
            "wrong bytes in the element at offset {offset}"
        );
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// The figures of every run, then the ratios to the direct run.
fn print_tables(trace: &Trace, runs: &[Run]) {
    let asked = trace.asked();
    let elements = trace.elements();
    println!(
        "\nNanoAOD trace: file {:.1} MB, {} vector reads, {:.1} elements per read, {:.1} MB asked; \
         {READERS} readers on one client session, origin 50 ms away",
        mb(trace.size),
        trace.reads.len(),
        elements as f64 / trace.reads.len() as f64,
        mb(asked),
    );
    println!(
        "\n{:<24} {:>8} {:>8} {:>5} {:>9} {:>10} {:>9} {:>8} {:>9} {:>9}",
        "run",
        "wall s",
        "fl.mean",
        "peak",
        "asked MB",
        "fetched MB",
        "fetch/ask",
        "o.reads",
        "o.r/read",
        "o.sent MB"
    );
    for r in runs {
        println!(
            "{:<24} {:>8.2} {:>8.2} {:>5} {:>9.1} {:>10.1} {:>9.2} {:>8} {:>9.2} {:>9.1}",
            r.name,
            r.wall.as_secs_f64(),
            r.in_flight_mean,
            r.in_flight_peak,
            mb(asked),
            mb(r.origin.read_bytes_asked),
            r.origin.read_bytes_asked as f64 / asked as f64,
            r.origin.reads(),
            r.origin.reads() as f64 / trace.reads.len() as f64,
            mb(r.origin.bytes_to_client),
        );
    }
    println!("\nwall times of the {REPS} repetitions (the table shows the median)");
    for r in runs {
        let walls: Vec<String> = r
            .walls
            .iter()
            .map(|w| format!("{:.3} s", w.as_secs_f64()))
            .collect();
        println!("{:<24} {}", r.name, walls.join(", "));
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
        println!("{:<24} {kinds}", r.name);
    }
    let direct = &runs[0];
    println!(
        "\n{:<24} {:>12} {:>16} {:>16}",
        "vs direct", "wall ratio", "speed-up", "fetched ratio"
    );
    for r in runs {
        println!(
            "{:<24} {:>12.2} {:>16.2} {:>16.2}",
            r.name,
            r.wall.as_secs_f64() / direct.wall.as_secs_f64(),
            direct.wall.as_secs_f64() / r.wall.as_secs_f64(),
            r.origin.read_bytes_asked as f64 / direct.origin.read_bytes_asked.max(1) as f64,
        );
    }
    println!(
        "\ntargets for ours (issue 5): cold wall ratio <= 1.0, warm speed-up >= 2.5, \
         fetch/ask <= 1.25, origin reads per vector read ~1"
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
        ] {
            bench::summary(&format!("cache_trace.{}.{figure}", r.key), value);
        }
    }
}
