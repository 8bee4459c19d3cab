//! Whole-file copies through caches, against the origin 50 ms away; one
//! run, one table (`cargo bench --bench cache_copy`; about two minutes on
//! two cores).
//!
//! A 256 MiB file (byte `i` = `(i * 7) % 251`, written and synced first)
//! on a stock xrootd 5.5.3, the origin, behind a relay adding 25 ms each
//! way (xroot-testkit/src/delay_proxy.rs). Each copy is the stock `xrdcp`
//! to /dev/null with its defaults (`kXR_pgread`, 8 MiB chunks, 4 in
//! flight); each takes its own connection, so a warm copy's open is a new
//! client's. The copies:
//!
//! - direct: from the origin through the relay;
//! - ours: through our `xcache` (the example, its own process, default
//!   settings) whose origin is the relay, cold (an empty cache directory)
//!   then warm (the same cache, a new `xrdcp`);
//! - the stock XCache (`libXrdPss` + `libXrdPfc`, xroot-testkit/src/xcache.rs)
//!   with the stock's defaults `pfc.blocksize 128k` and `pfc.prefetch 10`,
//!   cold then warm, likewise;
//! - serve: our `serve` (the example) sending the same file from its local
//!   disk (in the page cache), the floor a warm cache is held to;
//! - ours warm and serve again with plain reads (`XRD_CPUSEPGWRTRD=0`),
//!   which both answer with `sendfile(2)` (ours from its store file).
//!
//! [`ROUNDS`] rounds, each with every copy (a cold copy on a new, empty
//! cache), the best time of each kind counts. The load average is printed
//! before and after.
//!
//! Last, the figures for `benches/report.sh`, one `summary: KEY VALUE` line
//! each: `cache_copy.KIND.s` (best wall time, seconds) for KIND in
//! `direct`, `ours_cold`, `ours_warm`, `stock_cold`, `stock_warm`, `serve`,
//! `ours_warm_plain`, `serve_plain`; `cache_copy.KIND.ratio` (÷ direct)
//! for all but `direct`; `cache_copy.ours_warm.over_serve` (ours warm ÷
//! serve) and `cache_copy.ours_warm_plain.over_serve` (the same with plain
//! reads).
//! Targets: ours cold ≤ 1.0× direct, ours warm ≤ 0.15× direct and within
//! 1.5× of serve.
//!
//! With `CACHE_COPY_SWEEP` set to `xcache` flag sets separated by `;`
//! (`--prefetch 0;--prefetch 8192`), the bench measures our cold copy
//! under each instead: each round copies direct, then cold through our
//! `xcache` with each flag set (a new, empty cache each), and prints each
//! set's best time ÷ the best direct and every round's, and the reads and
//! requests the origin was sent for each copy (no summary lines).
//!
//! With `CACHE_COPY_TIMELINE` set (to `xcache` flags, maybe none), the
//! bench copies once direct and once cold through our `xcache` with those
//! flags, and prints each copy's timeline: every request the origin was
//! sent (and for ours also what the `xrdcp` sent the cache, through a relay
//! of no delay), when it left and when its answer was back, in ms from the
//! copy's start, the reads summed up (the first, the last, the time no read
//! was in flight, the bytes in flight), and where the copy's time went by
//! phase. No summary lines.
//!
//! Prints "skipped" when the stock xrootd is not installed.

use std::collections::BTreeMap;
use std::time::Duration;

use xroot_proto::RequestId;
use xroot_testkit::delay_proxy::{DelayProxy, Exchange};
use xroot_testkit::our_cache::CacheProcess;
use xroot_testkit::ours::ServeProcess;
use xroot_testkit::stock::StockServer;
use xroot_testkit::xcache::StockCache;
use xroot_testkit::{bench, stock};

/// The copied file's size: 256 MiB.
const SIZE: u64 = 256 << 20;
/// Rounds of every copy; the best of each kind counts.
const ROUNDS: usize = 2;
/// The relay's delay each way: a 50 ms round trip to the origin.
const ONE_WAY: Duration = Duration::from_millis(25);
/// The file's name.
const NAME: &str = "big.bin";

/// The kinds of copy, in table order.
const KINDS: [&str; 8] = [
    "direct",
    "ours_cold",
    "ours_warm",
    "stock_cold",
    "stock_warm",
    "serve",
    "ours_warm_plain",
    "serve_plain",
];

fn main() {
    if !stock::xrootd_available() {
        println!("cache_copy: skipped (the stock xrootd is not installed)");
        return;
    }
    let data = tempfile::tempdir().expect("temp dir");
    bench::write_file(&data.path().join(NAME), SIZE);
    let origin = StockServer::start(data.path(), &[]).expect("stock xrootd");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let relay = rt.block_on(DelayProxy::start(origin.port, ONE_WAY));
    let origin_url = format!("root://127.0.0.1:{}", relay.port);
    let serve = ServeProcess::start(data.path());
    let load_before = bench::load_average();

    let copy = |url: String| bench::stock_xrdcp(&format!("{url}//{NAME}"), true);
    let plain = |url: String| bench::stock_xrdcp(&format!("{url}//{NAME}"), false);
    if let Ok(flags) = std::env::var("CACHE_COPY_TIMELINE") {
        timelines(&rt, &relay, &flags, &load_before);
        return;
    }
    if let Ok(sets) = std::env::var("CACHE_COPY_SWEEP") {
        let sets: Vec<&str> = sets.split(';').map(str::trim).collect();
        sweep(&relay, &sets, &load_before);
        return;
    }
    let mut times: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut note = |kind: &'static str, took: Duration| {
        println!("  {kind:<11} {:>7.3} s", took.as_secs_f64());
        times.entry(kind).or_default().push(took);
    };
    // warm up the page cache and the origin's connection-less state
    copy(format!("root://{}", serve.addr));
    for round in 1..=ROUNDS {
        println!("round {round} (load average {})", bench::load_average());
        note("direct", copy(origin_url.clone()));

        let dir = tempfile::tempdir().expect("temp dir");
        let ours = CacheProcess::start(&origin_url, dir.path(), &[]);
        note("ours_cold", copy(ours.url()));
        note("ours_warm", copy(ours.url()));
        note("ours_warm_plain", plain(ours.url()));
        drop(ours);

        let stock_cache =
            StockCache::start_with(relay.port, "128k", &["pfc.prefetch 10"]).expect("stock XCache");
        let url = format!("root://127.0.0.1:{}", stock_cache.port());
        note("stock_cold", copy(url.clone()));
        note("stock_warm", copy(url));
        drop(stock_cache);

        note("serve", copy(format!("root://{}", serve.addr)));
        note("serve_plain", plain(format!("root://{}", serve.addr)));
    }
    print_table(&times, &load_before);
}

/// Cold copies through our `xcache` with each of the flag `sets`, against
/// direct, [`ROUNDS`] rounds; the best of each ÷ the best direct, and every
/// round's.
fn sweep(relay: &DelayProxy, sets: &[&str], load_before: &str) {
    let origin_url = &format!("root://127.0.0.1:{}", relay.port);
    let copy = |url: String| bench::stock_xrdcp(&format!("{url}//{NAME}"), true);
    let mut direct = Vec::new();
    let mut cold: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    for round in 1..=ROUNDS {
        println!("round {round} (load average {})", bench::load_average());
        let before = relay.traffic();
        direct.push(copy(origin_url.to_string()));
        let direct_reads = relay.traffic().since(&before).reads();
        println!(
            "  {:<30} {:>7.3} s, {direct_reads} origin reads",
            "direct",
            direct[round - 1].as_secs_f64()
        );
        for &set in sets {
            let dir = tempfile::tempdir().expect("temp dir");
            let flags: Vec<&str> = set.split_whitespace().collect();
            let ours = CacheProcess::start(origin_url, dir.path(), &flags);
            let before = relay.traffic();
            let took = copy(ours.url());
            let asked = relay.traffic().since(&before);
            println!(
                "  {set:<30} {:>7.3} s, {} origin reads, {} requests",
                took.as_secs_f64(),
                asked.reads(),
                asked.requests.values().sum::<u64>()
            );
            cold.entry(set).or_default().push(took);
        }
    }
    let best = |t: &[Duration]| t.iter().min().expect("a round ran").as_secs_f64();
    let d = best(&direct);
    println!(
        "\ncold stock xrdcp of {} MiB through ours, origin 50 ms away, best of {ROUNDS}",
        SIZE >> 20
    );
    println!("direct {d:.3} s");
    for &set in sets {
        let times: Vec<String> = cold[set]
            .iter()
            .map(|t| format!("{:.2}", t.as_secs_f64() / d))
            .collect();
        let b = best(&cold[set]);
        println!(
            "{set:<30} best {b:.3} s {:.2}× direct (each: {})",
            b / d,
            times.join(", ")
        );
    }
    println!(
        "load average before: {load_before}; after: {}",
        bench::load_average()
    );
}

/// One copy direct and one cold through our `xcache` with `flags`, each
/// with its timeline (see the module's docs).
fn timelines(rt: &tokio::runtime::Runtime, relay: &DelayProxy, flags: &str, load_before: &str) {
    let origin_url = format!("root://127.0.0.1:{}", relay.port);
    let copy = |url: String| bench::stock_xrdcp(&format!("{url}//{NAME}"), true);
    // warm the origin's page cache and connection-less state
    copy(origin_url.clone());
    println!("load average {}", bench::load_average());
    let from = relay.now();
    let took = copy(origin_url.clone());
    let direct = relay.timeline().since(from);
    print_timeline(
        &format!("direct, {:.3} s", took.as_secs_f64()),
        &direct,
        from,
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let flags: Vec<&str> = flags.split_whitespace().collect();
    let ours = CacheProcess::start(&origin_url, dir.path(), &flags);
    let front = rt.block_on(DelayProxy::start(ours.addr.port(), Duration::ZERO));
    let (from, front_from) = (relay.now(), front.now());
    let took = copy(format!("root://127.0.0.1:{}", front.port));
    print_timeline(
        &format!(
            "ours cold {flags:?}, {:.3} s: the origin's requests",
            took.as_secs_f64()
        ),
        &relay.timeline().since(from),
        from,
    );
    print_timeline(
        "ours cold: what xrdcp sent the cache",
        &front.timeline().since(front_from),
        front_from,
    );
    println!(
        "load average before: {load_before}; after: {}",
        bench::load_average()
    );
}

/// Prints `exchanges` (times in ms from `from`): every request but reads
/// one per line, then the reads summed up.
fn print_timeline(label: &str, exchanges: &[Exchange], from: Duration) {
    let ms = |d: Duration| d.saturating_sub(from).as_secs_f64() * 1e3;
    let done = |e: &Exchange| {
        e.answered
            .map_or("-".to_string(), |a| format!("{:.1}", ms(a)))
    };
    println!("\n{label}");
    let is_read = |e: &Exchange| {
        e.request.is_some_and(|id| {
            [
                RequestId::READ,
                RequestId::PGREAD,
                RequestId::READV,
                RequestId::PGREADV,
            ]
            .contains(&id)
        })
    };
    let mut reads: Vec<&Exchange> = Vec::new();
    for e in exchanges {
        if is_read(e) {
            reads.push(e);
            continue;
        }
        let what = e
            .request
            .map_or("handshake".to_string(), |id| id.to_string());
        println!(
            "  {:>8.1} → {:>8}  conn {} {what}",
            ms(e.sent),
            done(e),
            e.conn
        );
    }
    let (Some(first), Some(last)) = (reads.first(), reads.last()) else {
        return;
    };
    let bytes: u64 = reads.iter().map(|e| e.len).sum();
    let end = reads
        .iter()
        .filter_map(|e| e.answered)
        .max()
        .unwrap_or(last.sent);
    // the times no read was in flight between the first sent and the
    // last answered, and the mean bytes in flight
    let mut events: Vec<(Duration, i64, i64)> = Vec::new();
    for e in &reads {
        let back = e.answered.unwrap_or(end);
        events.push((e.sent, 1, e.len as i64));
        events.push((back, -1, -(e.len as i64)));
    }
    events.sort_by_key(|&(t, d, _)| (t, d));
    let (mut n, mut inflight, mut at) = (0i64, 0i64, first.sent);
    let (mut idle, mut gaps, mut byte_time) = (Duration::ZERO, 0, 0f64);
    for (t, d, b) in events {
        byte_time += inflight as f64 * t.saturating_sub(at).as_secs_f64();
        if n == 0 && t > at {
            idle += t - at;
            gaps += 1;
        }
        n += d;
        inflight += b;
        at = t;
    }
    let span = end.saturating_sub(first.sent).as_secs_f64();
    println!(
        "  reads: {} of {} MiB in all, first sent {:.1} (answered {}), last sent {:.1}, \
         last answered {:.1}; none in flight {:.1} ms in {gaps} gaps; {:.1} MiB in flight on average",
        reads.len(),
        bytes >> 20,
        ms(first.sent),
        done(first),
        ms(last.sent),
        ms(end),
        idle.as_secs_f64() * 1e3,
        byte_time / span.max(1e-9) / (1 << 20) as f64
    );
    let show = |e: &Exchange| {
        println!(
            "    {:>8.1} → {:>8}  conn {} sid {:?} {} {} MiB at {} MiB",
            ms(e.sent),
            done(e),
            e.conn,
            e.streamid,
            e.request.map_or(String::new(), |id| id.to_string()),
            e.len as f64 / (1 << 20) as f64,
            e.offset as f64 / (1 << 20) as f64
        )
    };
    let n = reads.len();
    for (i, e) in reads.iter().enumerate() {
        if i < 12 || i + 6 >= n {
            show(e);
        } else if i == 12 {
            println!("    ...");
        }
    }
}

/// The best time of each kind, its ratio to direct, and the summary lines.
fn print_table(times: &BTreeMap<&str, Vec<Duration>>, load_before: &str) {
    let best = |kind: &str| {
        times[kind]
            .iter()
            .min()
            .expect("every kind ran")
            .as_secs_f64()
    };
    let direct = best("direct");
    println!(
        "\nstock xrdcp of {} MiB, origin 50 ms away, best of {ROUNDS}",
        SIZE >> 20
    );
    println!(
        "{:<11} {:>9} {:>9} {:>9}",
        "copy", "best s", "÷ direct", "MB/s"
    );
    for kind in KINDS {
        let s = best(kind);
        println!(
            "{kind:<11} {s:>9.3} {:>8.2}× {:>9.0}",
            s / direct,
            SIZE as f64 / s / 1e6
        );
    }
    println!(
        "ours warm ÷ serve from disk: {:.2}× (pgread), {:.2}× (plain reads)",
        best("ours_warm") / best("serve"),
        best("ours_warm_plain") / best("serve_plain")
    );
    println!(
        "load average before: {load_before}; after: {}",
        bench::load_average()
    );
    for kind in KINDS {
        let s = best(kind);
        bench::summary(&format!("cache_copy.{kind}.s"), s);
        if kind != "direct" {
            bench::summary(&format!("cache_copy.{kind}.ratio"), s / direct);
        }
    }
    bench::summary(
        "cache_copy.ours_warm.over_serve",
        best("ours_warm") / best("serve"),
    );
    bench::summary(
        "cache_copy.ours_warm_plain.over_serve",
        best("ours_warm_plain") / best("serve_plain"),
    );
}
