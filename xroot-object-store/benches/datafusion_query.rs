//! A DataFusion query over Parquet files read through `root://`, from our
//! server and from the stock xrootd, each on loopback and 50 ms away,
//! against the same files on local disk: `cargo bench -p
//! xroot-object-store --bench datafusion_query` (about a minute; its
//! release build with DataFusion takes half an hour on a loaded 2-core
//! machine).
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
//! - root:// 50 ms: the same behind a relay adding 25 ms each way;
//! - stock root:// and stock 50 ms: the same two against the stock xrootd
//!   on the same directory (skipped when it is not installed).
//!
//! Every run's answer must equal the local one. Round trips per query, by
//! the clock: (median at 50 ms − median on loopback) ÷ 50 ms; and counted
//! by the relay (waves of requests each sent after an answer came, the
//! highest over the runs; see the test kit's `delay_proxy`). Figures
//! (`summary:` lines): `datafusion_query.local_s`,
//! `datafusion_query.root_s`, `datafusion_query.wan_s`,
//! `datafusion_query.stock_root_s`, `datafusion_query.stock_wan_s`
//! (median wall, s), `datafusion_query.round_trips` and
//! `datafusion_query.stock_round_trips` (by the clock),
//! `datafusion_query.counted_round_trips` and
//! `datafusion_query.stock_counted_round_trips` (by the relay).

mod support;

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
    let relay = rt.block_on(delay_proxy::DelayProxy::start(port, ONE_WAY));
    let stock = stock::StockServer::start(data.path(), &[]);
    let stock_relay = stock
        .as_ref()
        .map(|s| rt.block_on(delay_proxy::DelayProxy::start(s.port, ONE_WAY)));

    let local = format!("{}/", dir.display());
    let (expected, _) = query(&rt, &local);
    let url = |port: u16| format!("root://127.0.0.1:{port}//events/");
    let mut runs: Vec<(&str, String, Option<&delay_proxy::DelayProxy>)> = vec![
        ("local disk", local, None),
        ("root://", url(port), None),
        ("root:// 50 ms", url(relay.port), Some(&relay)),
    ];
    if let (Some(s), Some(r)) = (&stock, &stock_relay) {
        runs.push(("stock root://", url(s.port), None));
        runs.push(("stock 50 ms", url(r.port), Some(r)));
    } else {
        println!("the stock xrootd is not installed: its runs are skipped");
    }
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
            m / medians[0],
            all.join(" ")
        );
    }
    let rtt = 2.0 * ONE_WAY.as_secs_f64();
    let by_clock = |direct: usize, wan: usize| (medians[wan] - medians[direct]) / rtt;
    println!(
        "\nround trips per query: ours {:.1} by the clock, {} counted",
        by_clock(1, 2),
        counted[2]
    );
    println!(
        "ours, the requests of each round trip (the run with the most):\n{}",
        waves[2]
    );
    if runs.len() == 5 {
        println!(
            "stock xrootd: {:.1} by the clock, {} counted; wall ours ÷ stock: {:.2}x loopback, {:.2}x at 50 ms",
            by_clock(3, 4),
            counted[4],
            medians[1] / medians[3],
            medians[2] / medians[4]
        );
        println!("stock, the requests of each round trip:\n{}", waves[4]);
    }
    println!("load average at the end: {}", bench::load_average());
    bench::summary("datafusion_query.local_s", medians[0]);
    bench::summary("datafusion_query.root_s", medians[1]);
    bench::summary("datafusion_query.wan_s", medians[2]);
    bench::summary("datafusion_query.round_trips", by_clock(1, 2));
    bench::summary("datafusion_query.counted_round_trips", counted[2] as f64);
    if runs.len() == 5 {
        bench::summary("datafusion_query.stock_root_s", medians[3]);
        bench::summary("datafusion_query.stock_wan_s", medians[4]);
        bench::summary("datafusion_query.stock_round_trips", by_clock(3, 4));
        bench::summary(
            "datafusion_query.stock_counted_round_trips",
            counted[4] as f64,
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
    rt.block_on(async {
        let t = Instant::now();
        let ctx = SessionContext::new();
        if url.starts_with("root://") {
            let (key, store) = xroot_object_store::server_store(Client::new(), url).unwrap();
            ctx.register_object_store(&key, store);
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
