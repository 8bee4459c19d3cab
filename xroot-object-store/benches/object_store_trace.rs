//! The cost of reading through object_store: the NanoAOD trace
//! (`benches/trace/nanoaod.trace`: the 50 vector reads, 101 elements each,
//! uproot makes reading 101 of 1001 branches of a 118 MB file) replayed by
//! 8 concurrent readers through [`XrootStore::get_ranges`] and through one
//! [`xroot_client::File`] with [`File::readv`](xroot_client::File::readv),
//! the origin (our server, `LocalFs`, in this process on its own runtime)
//! behind a relay adding 25 ms each way. One run: `cargo bench -p
//! xroot-object-store --bench object_store_trace` (about 15 s).
//!
//! Each replay starts from a new client and includes the open (not the
//! close: the store closes its handle later, off the clock), [`REPS`]
//! replays of each kind alternating;
//! the table shows the median and every wall time, the overhead is
//! median(object_store) ÷ median(direct) − 1 (target ≤ 5%). Every byte is
//! checked against the file's generated pattern.
//!
//! Then the same through a store with a cache directory below the client
//! ([`XrootStore::with_cache`]): cold (a new, empty directory each replay;
//! the sidecars are written after the clock stops), warm with the trust
//! window off (every open asks the server) and warm within the window
//! ([`CacheConfig::below_client`]: no request to the server at all), each
//! warm replay on a new store over the directory of a cold one.
//!
//! Figures for `benches/report.sh`: `object_store_trace.direct_s`,
//! `object_store_trace.store_s` (median wall, s),
//! `object_store_trace.overhead_pct`, and `object_store_trace.RUN_s` and
//! `object_store_trace.RUN_ratio` (÷ direct) for RUN `cache_cold`,
//! `cache_warm` and `cache_trusted`.

mod support;

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::path::Path;
use object_store::ObjectStore;
use tokio::runtime::Runtime;
use xroot_cache::CacheConfig;
use xroot_client::{Client, OpenFlags};
use xroot_object_store::XrootStore;
use xroot_testkit::{bench, delay_proxy, trace};

/// Concurrent readers.
const READERS: usize = 8;
/// The relay's delay each way.
const ONE_WAY: Duration = Duration::from_millis(25);
/// Replays of each kind.
const REPS: usize = 7;
const NAME: &str = "nanoaod.bin";

fn main() {
    let trace = Arc::new(trace::nanoaod());
    let data = tempfile::tempdir().expect("temp dir");
    bench::write_file(&data.path().join(NAME), trace.size);
    let (_server_rt, port) = support::serve(data.path());
    let rt = support::clients();
    let relay = rt.block_on(delay_proxy::DelayProxy::start(port, ONE_WAY));
    let url = format!("root://127.0.0.1:{}", relay.port);

    // a warm-up of each, not counted
    direct(&rt, &url, &trace);
    through_store(&rt, &url, &trace, None);
    let (mut direct_walls, mut store_walls) = (Vec::new(), Vec::new());
    let (mut cold, mut warm, mut trusted) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..REPS {
        direct_walls.push(direct(&rt, &url, &trace));
        store_walls.push(through_store(&rt, &url, &trace, None));
        let dir = tempfile::tempdir().expect("cache dir");
        let untrusting = CacheConfig::default();
        cold.push(through_store(
            &rt,
            &url,
            &trace,
            Some((dir.path(), untrusting.clone())),
        ));
        warm.push(through_store(
            &rt,
            &url,
            &trace,
            Some((dir.path(), untrusting)),
        ));
        let trusting = CacheConfig::below_client();
        trusted.push(through_store(
            &rt,
            &url,
            &trace,
            Some((dir.path(), trusting)),
        ));
    }
    let (d, s) = (median(&direct_walls), median(&store_walls));
    let overhead = (s / d - 1.0) * 100.0;
    println!(
        "\nNanoAOD trace: {} vector reads, {} elements, {:.1} MB asked; {READERS} readers, \
         origin (our server) 50 ms away\n",
        trace.reads.len(),
        trace.elements(),
        trace.asked() as f64 / 1e6
    );
    println!(
        "{:<46} {:>9} {:>8}  every replay (s)",
        "run", "median s", "÷ direct"
    );
    let runs = [
        ("xroot_client::File::readv", &direct_walls, ""),
        ("XrootStore::get_ranges", &store_walls, ""),
        ("  with a cache directory, cold", &cold, "cache_cold"),
        (
            "  with a cache directory, warm (no trust)",
            &warm,
            "cache_warm",
        ),
        (
            "  with a cache directory, warm (trust window)",
            &trusted,
            "cache_trusted",
        ),
    ];
    for (name, walls, _) in &runs {
        let m = median(walls);
        let all: Vec<String> = walls.iter().map(|w| format!("{w:.3}")).collect();
        println!("{name:<46} {m:>9.3} {:>8.3}  {}", m / d, all.join(" "));
    }
    println!("\nobject_store overhead: {overhead:+.1}% (target <= 5%)");
    println!("load average at the end: {}", bench::load_average());
    for (_, walls, key) in runs.iter().filter(|r| !r.2.is_empty()) {
        let m = median(walls);
        bench::summary(&format!("object_store_trace.{key}_s"), m);
        bench::summary(&format!("object_store_trace.{key}_ratio"), m / d);
    }
    bench::summary("object_store_trace.direct_s", d);
    bench::summary("object_store_trace.store_s", s);
    bench::summary("object_store_trace.overhead_pct", overhead);
}

/// One replay on one `File` of a new client: open, the trace's reads from
/// [`READERS`] tasks, close. Wall seconds.
fn direct(rt: &Runtime, url: &str, trace: &Arc<trace::Trace>) -> f64 {
    rt.block_on(async {
        let t = Instant::now();
        let client = Client::new();
        let file = Arc::new(
            client
                .open(&format!("{url}//{NAME}"), OpenFlags::READ)
                .await
                .expect("open"),
        );
        let next = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..READERS)
            .map(|_| {
                let (file, trace, next) = (file.clone(), trace.clone(), next.clone());
                tokio::spawn(async move {
                    while let Some(read) = trace.reads.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let got = file.readv(read).await.expect("readv");
                        check(read, &got);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        // the store closes its handle after the replay, off the clock:
        // the close is left out here too
        let wall = t.elapsed().as_secs_f64();
        file.close().await.expect("close");
        wall
    })
}

/// The same through a new [`XrootStore`] on a new client, with a cache in
/// the directory given, with its config. Wall seconds; the cache's sidecars
/// are written after the clock stops.
fn through_store(
    rt: &Runtime,
    url: &str,
    trace: &Arc<trace::Trace>,
    cache: Option<(&std::path::Path, CacheConfig)>,
) -> f64 {
    rt.block_on(async {
        let t = Instant::now();
        let store = Arc::new(match cache {
            None => XrootStore::new(url).expect("store"),
            Some((dir, config)) => {
                XrootStore::with_cache(Client::new(), url, dir, config).expect("store")
            }
        });
        let path = Path::from(NAME);
        let next = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..READERS)
            .map(|_| {
                let (store, trace, next, path) =
                    (store.clone(), trace.clone(), next.clone(), path.clone());
                tokio::spawn(async move {
                    while let Some(read) = trace.reads.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let ranges: Vec<Range<u64>> =
                            read.iter().map(|&(o, n)| o..o + n as u64).collect();
                        let got = store.get_ranges(&path, &ranges).await.expect("get_ranges");
                        check(read, &got);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let wall = t.elapsed().as_secs_f64();
        store.flush_cache().await.expect("flush the cache");
        wall
    })
}

fn check(read: &[(u64, usize)], got: &[bytes::Bytes]) {
    assert_eq!(read.len(), got.len());
    for (&(offset, len), data) in read.iter().zip(got) {
        assert_eq!(data.len(), len);
        assert!(
            bench::is_pattern(0, offset, data),
            "wrong bytes at {offset}"
        );
    }
}

fn median(walls: &[f64]) -> f64 {
    let mut sorted = walls.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}
