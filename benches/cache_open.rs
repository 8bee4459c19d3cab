//! Warm opens through a cache: [`FILES`] files of 4 MiB, each cached whole
//! by a cold pass, then read again by a new client that opens, reads and
//! closes each file in turn, timed **including the opens**. The origin is a
//! stock xrootd 5.5.3 behind a relay adding 25 ms each way
//! (xroot-testkit/src/delay_proxy.rs), which counts what the origin is asked.
//! One run: `cargo bench --bench cache_open` (about a minute).
//!
//! The caches, each on a fresh cache directory:
//! - the stock XCache (`libXrdPss` + `libXrdPfc`, `pfc.blocksize 4k`, no
//!   prefetch, xroot-testkit/src/xcache.rs);
//! - ours (`examples/xcache.rs`) at its defaults: every open asks the
//!   origin for the file and its stat (one round trip) to validate the
//!   cached copy;
//! - ours with `--trust-window 3600`: a file the origin confirmed within
//!   the hour opens from the cache alone.
//!
//! Our cache is restarted on its directory between the cold pass and the
//! warm ones (nothing kept in memory; the stock cache keeps running).
//! [`REPS`] warm passes each; the table shows the median wall time, every
//! wall time, and the origin's `kXR_open` and read requests during the
//! warm passes. Every byte read is checked.
//!
//! Figures for `benches/report.sh`: `cache_open.RUN.warm_s` (median, s)
//! and `cache_open.RUN.origin_opens` (per warm pass) for RUN `stock`,
//! `ours` and `ours_trust`, and `cache_open.stock_over_ours_trust`.
//!
//! Prints "skipped" when the stock xrootd is not installed.

use std::path::Path;
use std::time::{Duration, Instant};

use clap::Parser;
use tokio::runtime::Runtime;
use xroot::client::{Client, OpenFlags};
use xroot::proto::RequestId;
use xroot_testkit::delay_proxy::DelayProxy;
use xroot_testkit::stock::StockServer;
use xroot_testkit::xcache::StockCache;
use xroot_testkit::{bench, stock};
use xroot_tools::xcache as ours;

/// Files read in each pass.
const FILES: u64 = 9;
/// Bytes of each file.
const SIZE: u64 = 4 << 20;
/// Bytes of each read.
const CHUNK: usize = 1 << 20;
/// The relay's delay each way: a 50 ms round trip to the origin.
const ONE_WAY: Duration = Duration::from_millis(25);
/// Warm passes of each cache.
const REPS: usize = 5;

/// The warm passes of one cache.
struct Warm {
    name: &'static str,
    key: &'static str,
    walls: Vec<f64>,
    /// The origin's `kXR_open` requests, per warm pass.
    opens: f64,
    /// The origin's read requests, per warm pass.
    reads: f64,
}

fn main() {
    if !stock::xrootd_available() {
        println!("cache_open: skipped (the stock xrootd is not installed)");
        return;
    }
    let data = tempfile::tempdir().expect("temp dir");
    for f in 0..FILES {
        bench::write_pattern(&data.path().join(name(f)), SIZE, f);
    }
    let origin = StockServer::start(data.path(), &[]).expect("stock xrootd");
    let rt = runtime();
    let relay = rt.block_on(DelayProxy::start(origin.port, ONE_WAY));

    let stock = {
        let cache = StockCache::start(relay.port, "4k").expect("stock XCache");
        pass(&rt, cache.port());
        warm(&rt, &relay, ("stock XCache 4k", "stock"), || cache.port())
    };
    let cache_rt = runtime();
    let ours: Vec<Warm> = [
        (("ours 4k", "ours"), "0"),
        (("ours 4k, --trust-window 3600", "ours_trust"), "3600"),
    ]
    .into_iter()
    .map(|(names, window)| {
        let dir = tempfile::tempdir().expect("cache dir");
        let cache = OurCache::start(&cache_rt, relay.port, dir.path(), window);
        pass(&rt, cache.port);
        drop(cache);
        let cache = OurCache::start(&cache_rt, relay.port, dir.path(), window);
        warm(&rt, &relay, names, || cache.port)
    })
    .collect();

    println!(
        "\n{FILES} files of {} MiB, each cached whole, then opened, read and closed in turn by a \
         new client; origin (stock xrootd) 50 ms away\n",
        SIZE >> 20
    );
    println!(
        "{:<30} {:>9} {:>13} {:>13}  every warm pass (s)",
        "cache", "median s", "origin opens", "origin reads"
    );
    let runs: Vec<&Warm> = std::iter::once(&stock).chain(&ours).collect();
    for w in &runs {
        let all: Vec<String> = w.walls.iter().map(|s| format!("{s:.3}")).collect();
        println!(
            "{:<30} {:>9.3} {:>13.1} {:>13.1}  {}",
            w.name,
            median(&w.walls),
            w.opens,
            w.reads,
            all.join(" ")
        );
    }
    let trust = &ours[1];
    let ratio = median(&stock.walls) / median(&trust.walls);
    println!("\nstock XCache warm ÷ ours with the trust window: {ratio:.2}×");
    println!("load average at the end: {}", bench::load_average());
    for w in &runs {
        bench::summary(&format!("cache_open.{}.warm_s", w.key), median(&w.walls));
        bench::summary(&format!("cache_open.{}.origin_opens", w.key), w.opens);
    }
    bench::summary("cache_open.stock_over_ours_trust", ratio);
}

fn name(f: u64) -> String {
    format!("f{f}.bin")
}

/// [`REPS`] timed warm passes against the cache at `port()`, with what the
/// origin saw meanwhile.
fn warm(
    rt: &Runtime,
    relay: &DelayProxy,
    (name, key): (&'static str, &'static str),
    port: impl Fn() -> u16,
) -> Warm {
    let before = relay.traffic();
    let walls: Vec<f64> = (0..REPS).map(|_| pass(rt, port())).collect();
    let seen = relay.traffic().since(&before);
    Warm {
        name,
        key,
        walls,
        opens: seen.count(RequestId::OPEN) as f64 / REPS as f64,
        reads: seen.reads() as f64 / REPS as f64,
    }
}

/// One pass: a new client opens, reads whole and closes each file in turn
/// at the cache at `port`. Wall seconds, the client's login included.
fn pass(rt: &Runtime, port: u16) -> f64 {
    rt.block_on(async {
        let t = Instant::now();
        let client = Client::new();
        for f in 0..FILES {
            let url = format!("root://127.0.0.1:{port}//{}", name(f));
            let file = client.open(&url, OpenFlags::READ).await.expect("open");
            let mut offset = 0;
            while offset < SIZE {
                let data = file.read_at(offset, CHUNK).await.expect("read");
                assert!(!data.is_empty(), "{url}: ended at {offset}");
                assert!(
                    bench::is_pattern(f, offset, &data),
                    "{url}: wrong bytes at {offset}"
                );
                offset += data.len() as u64;
            }
            file.close().await.expect("close");
        }
        t.elapsed().as_secs_f64()
    })
}

/// Our cache serving on a runtime of its own; stopped when dropped, its
/// block indexes written.
struct OurCache<'a> {
    rt: &'a Runtime,
    port: u16,
    handle: xroot::server::ServerHandle,
    fs: xroot::cache::CacheFs<xroot::cache::RemoteOrigin>,
}

impl<'a> OurCache<'a> {
    fn start(rt: &'a Runtime, origin: u16, dir: &Path, window: &str) -> OurCache<'a> {
        let origin = format!("root://127.0.0.1:{origin}");
        let dir = dir.to_str().expect("UTF-8 temp dir");
        let args = [
            "xcache",
            "--origin",
            &origin,
            "--cache-dir",
            dir,
            "--port",
            "0",
            "--trust-window",
            window,
        ];
        let cli = ours::Cli::try_parse_from(args).expect("xcache arguments");
        let server = rt.block_on(ours::start(&cli)).expect("our cache");
        let (port, fs, handle) = (
            server.local_addr().port(),
            server.fs().clone(),
            server.handle(),
        );
        rt.spawn(server.serve());
        OurCache {
            rt,
            port,
            handle,
            fs,
        }
    }
}

impl Drop for OurCache<'_> {
    fn drop(&mut self) {
        self.handle.shutdown();
        self.rt
            .block_on(self.fs.flush_all())
            .expect("writing the block indexes");
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn median(walls: &[f64]) -> f64 {
    let mut sorted = walls.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}
