//! A DataFusion query over Parquet files read through `root://`, against
//! the same files on local disk: `cargo bench -p xroot-object-store
//! --bench datafusion_query` (about 30 s).
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
//! - root:// 50 ms: the same behind a relay adding 25 ms each way.
//!
//! Every run's answer must equal the local one. Figures for
//! `benches/report.sh`: `datafusion_query.local_s`,
//! `datafusion_query.root_s`, `datafusion_query.wan_s` (median wall, s).

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
use xroot_testkit::{bench, delay_proxy};

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

    let local = format!("{}/", dir.display());
    let direct = format!("root://127.0.0.1:{port}//events/");
    let wan = format!("root://127.0.0.1:{}//events/", relay.port);
    let (expected, _) = query(&rt, &local);
    let runs = [
        ("local disk", local),
        ("root://", direct),
        ("root:// 50 ms", wan),
    ];
    let mut walls = vec![Vec::new(); runs.len()];
    for _ in 0..REPS {
        for (i, (name, url)) in runs.iter().enumerate() {
            let (answer, wall) = query(&rt, url);
            assert_eq!(answer, expected, "{name}: another answer");
            walls[i].push(wall);
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
    for ((name, _), (w, m)) in runs.iter().zip(walls.iter().zip(&medians)) {
        let all: Vec<String> = w.iter().map(|x| format!("{x:.3}")).collect();
        println!(
            "{name:<16} {m:>9.3} {:>9.2}x  {}",
            m / medians[0],
            all.join(" ")
        );
    }
    println!("load average at the end: {}", bench::load_average());
    bench::summary("datafusion_query.local_s", medians[0]);
    bench::summary("datafusion_query.root_s", medians[1]);
    bench::summary("datafusion_query.wan_s", medians[2]);
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
