//! Our server and cache as members of a stock cluster, against the stock
//! data server; one run (`cargo bench --bench cluster_open`; about a
//! minute).
//!
//! 1. **Open through the manager.** A stock manager (`xrootd` + `cmsd`
//!    5.5.3) with a stock data server and ours, each holding its own file.
//!    A fresh client (ours, so connections are not reused) opens and closes
//!    the file of one node through the manager, [`OPENS`] times per node,
//!    interleaved after a warm-up: connect to the manager, log in, the
//!    manager's `kXR_redirect`, connect to the data server, log in, open.
//!    The median and p90 per node, and stock ÷ ours. Our server runs in
//!    this process on its own two-worker runtime, the clients on another.
//! 2. **Two caches vs one.** A stock origin with [`FILES`] files of 1 MiB, a
//!    stock manager, and one or two of our caches (the `xcache` example's
//!    `start`, in this process) as its data servers. [`CLIENTS`] clients
//!    each read every file through the manager (open, read it whole, close),
//!    all at once, from cold caches, after a stat of every file through
//!    the manager (so the manager knows where each file is; the caches
//!    answer a stat from their origin and read no data). The wall time
//!    with one cache and with two, and how the opens were spread.
//!
//! The figures for `benches/report.sh`: `cluster_open.stock_ms`,
//! `cluster_open.ours_ms` (median open through the manager, ms),
//! `cluster_open.ratio` (stock ÷ ours), `cluster_open.one_cache_s`,
//! `cluster_open.two_caches_s` (wall, s) and `cluster_open.speedup` (one ÷
//! two).
//!
//! Prints "skipped" when the stock xrootd is not installed.

use std::time::{Duration, Instant};

use clap::Parser;
use xroot::client::{Client, OpenFlags};
use xroot::server::{ClusterConfig, Config, LocalFs, Server};
use xroot_testkit::cluster::Cluster;
use xroot_testkit::stock::StockServer;
use xroot_testkit::{bench, stock};
use xroot_tools::xcache as ours;

/// Opens timed per node.
const OPENS: usize = 100;
/// Files read through the caches.
const FILES: usize = 100;
/// Clients reading them at once.
const CLIENTS: usize = 8;
/// Each file's size.
const FILE_SIZE: u64 = 1 << 20;

fn main() {
    if !stock::xrootd_available() {
        println!("cluster_open: skipped (the stock xrootd is not installed)");
        return;
    }
    // our servers on their own threads, as a separate process would be
    let servers = runtime();
    let clients = runtime();
    let (stock_ms, ours_ms) = opens(&servers, &clients);
    let one = caches(&servers, &clients, 1);
    let two = caches(&servers, &clients, 2);
    println!(
        "\nload average at the end (2 cores shared): {}\n",
        bench::load_average()
    );
    bench::summary("cluster_open.stock_ms", stock_ms);
    bench::summary("cluster_open.ours_ms", ours_ms);
    bench::summary("cluster_open.ratio", stock_ms / ours_ms);
    bench::summary("cluster_open.one_cache_s", one);
    bench::summary("cluster_open.two_caches_s", two);
    bench::summary("cluster_open.speedup", one / two);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Part 1: the median open through the manager to the stock data server
/// and to ours, ms.
fn opens(rt: &tokio::runtime::Runtime, clients: &tokio::runtime::Runtime) -> (f64, f64) {
    let cluster = Cluster::start(1, |_, dir| {
        bench::write_file(&dir.join("stock.dat"), 4096);
    })
    .expect("xrootd");
    let ours = tempfile::tempdir().unwrap();
    bench::write_file(&ours.path().join("ours.dat"), 4096);
    let config = Config {
        cluster: Some(ClusterConfig::data_server([format!(
            "127.0.0.1:{}",
            cluster.cms_port
        )])),
        ..Config::default()
    };
    let server = rt
        .block_on(Server::bind(
            "127.0.0.1:0",
            LocalFs::new(ours.path()).unwrap(),
            config,
        ))
        .unwrap();
    let handle = server.handle();
    rt.spawn(server.serve());
    cluster.wait_logins(2);

    let urls = [cluster.url("/stock.dat"), cluster.url("/ours.dat")];
    let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    clients.block_on(async {
        for url in &urls {
            open_once(url).await;
        }
        for _ in 0..OPENS {
            for (url, t) in urls.iter().zip(times.iter_mut()) {
                t.push(open_once(url).await);
            }
        }
    });
    handle.shutdown();
    println!("open through a stock manager, fresh client each time, {OPENS} opens per node");
    println!("{:<26} {:>10} {:>10}", "data server", "median ms", "p90 ms");
    let mut medians = [0.0; 2];
    for ((name, t), m) in ["stock xrootd 5.5.3", "ours"]
        .iter()
        .zip(times.iter_mut())
        .zip(medians.iter_mut())
    {
        t.sort();
        *m = t[t.len() / 2].as_secs_f64() * 1e3;
        let p90 = t[t.len() * 9 / 10].as_secs_f64() * 1e3;
        println!("{name:<26} {m:>10.2} {p90:>10.2}");
    }
    println!("stock ÷ ours: {:.2}x", medians[0] / medians[1]);
    (medians[0], medians[1])
}

/// One open and close of `url` by a fresh client; the time to the open's
/// answer.
async fn open_once(url: &str) -> Duration {
    let client = Client::new();
    let t = Instant::now();
    let f = client
        .open(url, OpenFlags::READ)
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"));
    let took = t.elapsed();
    f.close().await.unwrap();
    took
}

/// Part 2: the wall time of [`CLIENTS`] clients each reading every file
/// through a manager with `n` of our caches as its data servers, s.
fn caches(rt: &tokio::runtime::Runtime, clients: &tokio::runtime::Runtime, n: usize) -> f64 {
    let origin_dir = tempfile::tempdir().unwrap();
    for i in 0..FILES {
        bench::write_pattern(
            &origin_dir.path().join(format!("f{i}.dat")),
            FILE_SIZE,
            i as u64,
        );
    }
    let origin = StockServer::start(origin_dir.path(), &[]).expect("xrootd");
    let cluster = Cluster::start(0, |_, _| {}).expect("xrootd");
    let manager = format!("127.0.0.1:{}", cluster.cms_port);
    let dirs: Vec<_> = (0..n).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut handles = Vec::new();
    for d in &dirs {
        let origin = format!("root://127.0.0.1:{}", origin.port);
        let argv = [
            "xcache",
            "--origin",
            &origin,
            "--cache-dir",
            d.path().to_str().unwrap(),
            "--port",
            "0",
            "--role",
            "server",
            "--manager",
            &manager,
        ];
        let cli = ours::Cli::try_parse_from(argv).unwrap();
        let server = rt.block_on(ours::start(&cli)).unwrap();
        handles.push((server.handle(), server.fs().clone()));
        rt.spawn(server.serve());
    }
    cluster.wait_logins(n);
    let url = |i: usize| cluster.url(&format!("/f{i}.dat"));
    // the manager learns where every file is first: a stat through it is
    // redirected to a node, which answers from its origin (no data read)
    clients.block_on(async {
        let fs = Client::new().fs(&cluster.url("")).unwrap();
        for i in 0..FILES {
            fs.stat(&format!("/f{i}.dat")).await.unwrap();
        }
    });
    let t = Instant::now();
    clients.block_on(async {
        let mut readers = tokio::task::JoinSet::new();
        for c in 0..CLIENTS {
            let urls: Vec<String> = (0..FILES).map(|i| url((i + c * 13) % FILES)).collect();
            readers.spawn(async move {
                let client = Client::new();
                for u in urls {
                    let f = client.open(&u, OpenFlags::READ).await.unwrap();
                    let data = f.read_at(0, FILE_SIZE as usize).await.unwrap();
                    assert_eq!(data.len() as u64, FILE_SIZE);
                    f.close().await.unwrap();
                }
            });
        }
        while let Some(r) = readers.join_next().await {
            r.unwrap();
        }
    });
    let wall = t.elapsed().as_secs_f64();
    let opens: Vec<u64> = handles
        .iter()
        .map(|(h, _)| {
            h.stats()
                .in_flight
                .kind(xroot::proto::RequestId::OPEN)
                .total
        })
        .collect();
    for (h, _) in &handles {
        h.shutdown();
    }
    println!(
        "\n{CLIENTS} clients × {FILES} files of 1 MiB through the manager, {n} of our caches \
         (cold): {wall:.2} s, opens per cache {opens:?}"
    );
    wall
}
