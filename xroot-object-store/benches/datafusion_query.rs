//! A DataFusion query over Parquet files read through `root://`, from our
//! server and from the stock xrootd, each on loopback, through a relay
//! with no delay and 50 ms away, against the same files on local disk:
//! `cargo bench -p xroot-object-store --bench datafusion_query` (about a
//! minute to run; the build: below).
//!
//! The files: [`FILES`] Parquet files of [`ROWS`] rows each (row groups of
//! 128 Ki rows; columns `run` and `nMuon` int32, `MET_pt` and `eta`
//! float64, snappy), written by the parquet crate DataFusion ships. The
//! query filters on two columns and aggregates by group:
//! [`QUERY`]. Each run makes a new `SessionContext` (so no Parquet
//! metadata is cached across runs), registers the directory as a table and
//! collects the query, [`REPS`] times, alternating:
//! - local: the directory on local disk (object_store's `LocalFileSystem`);
//! - root://: our server (`LocalFs`, in this process on its own runtime)
//!   on the same directory, through [`XrootStore`];
//! - root:// relay 0: the same through the test kit's delay relay with no
//!   delay (`delay_proxy`, a user-space relay on the clients' runtime
//!   that copies and decodes every byte it relays: about 28 MB a query);
//! - root:// 50 ms: the same through the same relay adding 25 ms each
//!   way;
//! - stock root://, stock relay 0 and stock 50 ms: the same three against
//!   the stock xrootd on the same directory (skipped when it is not
//!   installed).
//!
//! Every run's answer must equal the local one. Round trips per query, by
//! the clock: (median at 50 ms − median through the relay with no delay)
//! ÷ 50 ms, so that the relay's own cost (its copies of the 28 MB, on the
//! clients' two cores) is not counted as round trips; the figure against
//! the run without a relay is printed beside it. And counted by the relay
//! (waves of requests each sent after an answer came, the highest over
//! the runs; see the test kit's `delay_proxy`). Then one more query at
//! 50 ms each, ours and the stock's, prints every call DataFusion made to
//! the store with when it began and ended (`timeline/`): which call waited
//! for which. Figures (`summary:` lines): `datafusion_query.local_s`,
//! `datafusion_query.root_s`, `datafusion_query.relay0_s`,
//! `datafusion_query.wan_s`, `datafusion_query.stock_root_s`,
//! `datafusion_query.stock_relay0_s`, `datafusion_query.stock_wan_s`
//! (median wall, s), `datafusion_query.round_trips` and
//! `datafusion_query.stock_round_trips` (by the clock, against the relay
//! with no delay), `datafusion_query.round_trips_no_relay` and
//! `datafusion_query.stock_round_trips_no_relay` (by the clock, against
//! the run without a relay, as this bench gave them before),
//! `datafusion_query.counted_round_trips` and
//! `datafusion_query.stock_counted_round_trips` (by the relay).
//!
//! # Building it
//!
//! A plain `cargo bench` builds DataFusion, arrow and parquet at
//! opt-level 3: 95 minutes on the 2-core development machine under load
//! (2026-12-07). What this bench is for does not need that: the round
//! trips per query subtract two medians of the same query on the same
//! engine (its CPU time is in both and cancels, to first order), and ours
//! ÷ stock compares two servers under the same client and engine. So the
//! engine may be built with fewer optimisations:
//!
//! ```sh
//! cargo bench -p xroot-object-store --bench datafusion_query \
//!     --config xroot-object-store/benches/datafusion_query.toml
//! ```
//!
//! builds the crates that file lists (DataFusion's, arrow's, parquet and
//! sqlparser) at opt-level 1, and everything else (our crates: client,
//! server, store; tokio; the relay) as any release build does. The
//! absolute walls (`local_s`, `root_s`, ...) are then longer than a full
//! release build's, since the engine's own work is slower: compare them
//! only with walls of the same build. Measured once (2026-12-07, from a
//! target holding the workspace's other release artifacts, load average
//! 6–13 from four other builds): 81 min 41 s wall, 2074 s of CPU; so on a
//! loaded machine the saving is small, and the load, not the optimisation
//! level, is what makes it long. It is not in `benches/report.sh`: its
//! build does not fit the report's time.

mod support;
mod timeline;

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Float64Array, Int32Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use tokio::runtime::Runtime;
use xroot_client::Client;
use xroot_testkit::{bench, delay_proxy, stock};

const FILES: usize = 4;
const ROWS: usize = 1 << 20;
const REPS: usize = 5;
const ONE_WAY: Duration = Duration::from_millis(25);
const QUERY: &str = r#"SELECT "nMuon", count(*) AS n, avg("MET_pt") AS met, max(eta) AS eta
    FROM events WHERE "MET_pt" > 40 AND run % 3 = 0 GROUP BY "nMuon" ORDER BY "nMuon""#;

fn main() {
    let data = tempfile::tempdir().expect("temp dir");
    let dir = data.path().join("events");
    std::fs::create_dir(&dir).unwrap();
    let bytes = write_files(&dir);
    let (_server_rt, port) = support::serve(data.path());
    let rt = support::clients();
    let relays = |port: u16| {
        let start = |one_way| rt.block_on(delay_proxy::DelayProxy::start(port, one_way));
        (start(Duration::ZERO), start(ONE_WAY))
    };
    let (relay0, relay) = relays(port);
    let stock = stock::StockServer::start(data.path(), &[]);
    let stock_relays = stock.as_ref().map(|s| relays(s.port));

    let local = format!("{}/", dir.display());
    let (expected, _) = query(&rt, &local);
    let url = |port: u16| format!("root://127.0.0.1:{port}//events/");
    let mut runs: Vec<(&str, String, Option<&delay_proxy::DelayProxy>)> = vec![
        ("local disk", local, None),
        ("root://", url(port), None),
        ("root:// relay 0", url(relay0.port), Some(&relay0)),
        ("root:// 50 ms", url(relay.port), Some(&relay)),
    ];
    if let (Some(s), Some((r0, r))) = (&stock, &stock_relays) {
        runs.push(("stock root://", url(s.port), None));
        runs.push(("stock relay 0", url(r0.port), Some(r0)));
        runs.push(("stock 50 ms", url(r.port), Some(r)));
    } else {
        println!("the stock xrootd is not installed: its runs are skipped");
    }
    const LOCAL: usize = 0;
    const ROOT: usize = 1;
    const RELAY0: usize = 2;
    const WAN: usize = 3;
    const STOCK_ROOT: usize = 4;
    const STOCK_RELAY0: usize = 5;
    const STOCK_WAN: usize = 6;
    let with_stock = runs.len() == 7;
    let mut walls = vec![Vec::new(); runs.len()];
    let mut counted = vec![0u64; runs.len()];
    let mut waves = vec![String::new(); runs.len()];
    for _ in 0..REPS {
        for (i, (name, url, relay)) in runs.iter().enumerate() {
            let before = relay.map(|r| r.traffic());
            let (answer, wall) = query(&rt, url);
            assert_eq!(answer, expected, "{name}: another answer");
            walls[i].push(wall);
            if let (Some(r), Some(before)) = (relay, before) {
                let t = r.traffic().since(&before);
                if t.round_trips >= counted[i] {
                    counted[i] = t.round_trips;
                    waves[i] = t.waves_text();
                }
            }
        }
    }
    println!(
        "\n{FILES} Parquet files, {} rows, {:.1} MB; query: {QUERY}\n",
        FILES * ROWS,
        bytes as f64 / 1e6
    );
    println!("{expected}\n");
    println!(
        "{:<16} {:>9} {:>10}  every run (s)",
        "table", "median s", "vs local"
    );
    let medians: Vec<f64> = walls.iter().map(|w| median(w)).collect();
    for ((name, _, _), (w, m)) in runs.iter().zip(walls.iter().zip(&medians)) {
        let all: Vec<String> = w.iter().map(|x| format!("{x:.3}")).collect();
        println!(
            "{name:<16} {m:>9.3} {:>9.2}x  {}",
            m / medians[LOCAL],
            all.join(" ")
        );
    }
    let rtt = 2.0 * ONE_WAY.as_secs_f64();
    let by_clock = |base: usize, wan: usize| (medians[wan] - medians[base]) / rtt;
    println!(
        "\nround trips per query: ours {:.2} by the clock (50 ms − relay 0), {:.2} (50 ms − \
         no relay), {} counted",
        by_clock(RELAY0, WAN),
        by_clock(ROOT, WAN),
        counted[WAN]
    );
    println!(
        "the relay's own cost at 0 ms: ours {:+.1} ms",
        (medians[RELAY0] - medians[ROOT]) * 1e3
    );
    println!(
        "ours, the requests of each round trip (the run with the most):\n{}",
        waves[WAN]
    );
    if with_stock {
        println!(
            "stock xrootd: {:.2} by the clock (50 ms − relay 0), {:.2} (50 ms − no relay), {} \
             counted; relay's cost at 0 ms {:+.1} ms; wall ours ÷ stock: {:.2}x loopback, \
             {:.2}x at 50 ms",
            by_clock(STOCK_RELAY0, STOCK_WAN),
            by_clock(STOCK_ROOT, STOCK_WAN),
            counted[STOCK_WAN],
            (medians[STOCK_RELAY0] - medians[STOCK_ROOT]) * 1e3,
            medians[ROOT] / medians[STOCK_ROOT],
            medians[WAN] / medians[STOCK_WAN]
        );
        println!(
            "stock, the requests of each round trip:\n{}",
            waves[STOCK_WAN]
        );
    }
    // one more query at 50 ms each, its calls to the store timed: which
    // waits for which (not part of the figures)
    let timeline = Arc::new(timeline::Timeline::default());
    let rtt_ms = rtt * 1e3;
    let mut timed = vec![("ours", WAN)];
    if with_stock {
        timed.push(("stock", STOCK_WAN));
    }
    for (who, run) in timed {
        let (answer, wall) = query_with(&rt, &runs[run].1, Some(&timeline));
        assert_eq!(answer, expected, "{who}, timed: another answer");
        println!(
            "{who} at 50 ms, the store's calls ({:.1} ms, {:.2} RTT):\n{}",
            wall * 1e3,
            wall * 1e3 / rtt_ms,
            timeline.text(rtt_ms)
        );
    }
    println!("load average at the end: {}", bench::load_average());
    bench::summary("datafusion_query.local_s", medians[LOCAL]);
    bench::summary("datafusion_query.root_s", medians[ROOT]);
    bench::summary("datafusion_query.relay0_s", medians[RELAY0]);
    bench::summary("datafusion_query.wan_s", medians[WAN]);
    bench::summary("datafusion_query.round_trips", by_clock(RELAY0, WAN));
    bench::summary("datafusion_query.round_trips_no_relay", by_clock(ROOT, WAN));
    bench::summary("datafusion_query.counted_round_trips", counted[WAN] as f64);
    if with_stock {
        bench::summary("datafusion_query.stock_root_s", medians[STOCK_ROOT]);
        bench::summary("datafusion_query.stock_relay0_s", medians[STOCK_RELAY0]);
        bench::summary("datafusion_query.stock_wan_s", medians[STOCK_WAN]);
        bench::summary(
            "datafusion_query.stock_round_trips",
            by_clock(STOCK_RELAY0, STOCK_WAN),
        );
        bench::summary(
            "datafusion_query.stock_round_trips_no_relay",
            by_clock(STOCK_ROOT, STOCK_WAN),
        );
        bench::summary(
            "datafusion_query.stock_counted_round_trips",
            counted[STOCK_WAN] as f64,
        );
    }
}

/// Writes the files; their bytes in all.
fn write_files(dir: &std::path::Path) -> u64 {
    let schema = Arc::new(Schema::new(vec![
        Field::new("run", DataType::Int32, false),
        Field::new("nMuon", DataType::Int32, false),
        Field::new("MET_pt", DataType::Float64, false),
        Field::new("eta", DataType::Float64, false),
    ]));
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(128 << 10))
        .build();
    let mut total = 0;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift: the same files on every run
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for part in 0..FILES {
        let path = dir.join(format!("part-{part}.parquet"));
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props.clone())).unwrap();
        for _ in 0..ROWS / (64 << 10) {
            let n = 64 << 10;
            let run: Int32Array = (0..n).map(|_| (next() % 100) as i32).collect();
            let muons: Int32Array = (0..n).map(|_| (next() % 6) as i32).collect();
            // multiples of 0.25: sums are exact in any order, so every run
            // gives the same average
            let met: Float64Array = (0..n).map(|_| (next() % 800) as f64 / 4.0).collect();
            let eta: Float64Array = (0..n)
                .map(|_| (next() % 50_000) as f64 / 10_000.0 - 2.5)
                .collect();
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(run), Arc::new(muons), Arc::new(met), Arc::new(eta)],
            )
            .unwrap();
            writer.write(&batch).unwrap();
        }
        writer.close().unwrap();
        total += std::fs::metadata(&path).unwrap().len();
    }
    total
}

/// The query over the table at `url` in a new context: its answer (the
/// printed table) and wall seconds, registration included.
fn query(rt: &Runtime, url: &str) -> (String, f64) {
    query_with(rt, url, None)
}

/// [`query`], with every call DataFusion makes to the store recorded in
/// `timeline` when given.
fn query_with(
    rt: &Runtime,
    url: &str,
    timeline: Option<&Arc<timeline::Timeline>>,
) -> (String, f64) {
    rt.block_on(async {
        let t = Instant::now();
        let ctx = SessionContext::new();
        if url.starts_with("root://") {
            let (key, store) = xroot_object_store::server_store(Client::new(), url).unwrap();
            match timeline {
                Some(timeline) => {
                    timeline.restart(t);
                    let timed = timeline::Timed::new(store, timeline.clone());
                    ctx.register_object_store(&key, Arc::new(timed));
                }
                None => {
                    ctx.register_object_store(&key, store);
                }
            }
        }
        let table = if url.starts_with("root://") {
            xroot_object_store::object_url(url).unwrap().to_string()
        } else {
            url.to_string()
        };
        ctx.register_parquet("events", &table, ParquetReadOptions::default())
            .await
            .unwrap();
        let batches = ctx.sql(QUERY).await.unwrap().collect().await.unwrap();
        let wall = t.elapsed().as_secs_f64();
        let answer = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        (answer, wall)
    })
}

fn median(walls: &[f64]) -> f64 {
    let mut sorted = walls.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}
