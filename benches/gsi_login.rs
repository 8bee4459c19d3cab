//! gsi login time, ours against the stock xrootd 5.5.3: a fresh
//! connection that logs in with an X509 proxy (from the stock
//! `xrdgsiproxy`, throw-away CA made by `openssl`) and does one `kXR_stat`,
//! [`REPS`] times in a row per pairing, the median and every time printed:
//!
//! - `ours`: our client to our server (`GsiAuth`);
//! - `stock`: the stock client (the Python bindings, one process, a new
//!   URL user each time so that XrdCl opens a new channel) to the stock
//!   server (`sec.protocol gsi` as the test kit's `GsiPki` configures it);
//! - `ours->stock` and `stock->ours`: the mixed pairings, for what each
//!   side costs.
//!
//! One run: `cargo bench --bench gsi_login` (under a minute once built).
//! Figures for `benches/report.sh`: `gsi_login.RUN.median_ms` and
//! `gsi_login.ours_over_stock` (target: at most 1.5).
//!
//! Prints "skipped" when the stock xrootd, `xrdgsiproxy` or the Python
//! bindings are not installed.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use xroot::client::{Client, Config as ClientConfig};
use xroot::sec::gsi::Credentials;
use xroot::server::{Config, GsiAuth, LocalFs, Server};
use xroot_testkit::pki::GsiPki;
use xroot_testkit::{bench, stock};

/// Logins timed per pairing.
const REPS: usize = 20;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Our client: a new client (so a new connection) per login, then a stat.
async fn ours_to(port: u16, pki: &GsiPki, proxy: &Path) -> Vec<Duration> {
    let creds = Arc::new(Credentials::load_proxy(proxy).unwrap());
    let mut times = Vec::new();
    for _ in 0..REPS {
        let client = Client::with_config(ClientConfig {
            x509_credentials: Some(creds.clone()),
            x509_cert_dir: Some(pki.pki.ca_dir.clone()),
            sec_protocols: Some(vec!["gsi".into()]),
            ..ClientConfig::default()
        });
        let start = Instant::now();
        client
            .fs(&format!("root://localhost:{port}"))
            .unwrap()
            .stat("/")
            .await
            .unwrap();
        times.push(start.elapsed());
    }
    times
}

/// The stock client (Python bindings): a new URL user per login.
fn stock_to(port: u16, pki: &GsiPki, proxy: &Path) -> Option<Vec<Duration>> {
    let script = format!(
        "import time\nfrom XRootD import client\nfor i in range({REPS}):\n    t = time.perf_counter()\n    st, _ = client.FileSystem('root://u%d@localhost:{port}' % i).stat('/')\n    assert st.ok, st\n    print(time.perf_counter() - t)\n"
    );
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .env("X509_USER_PROXY", proxy)
        .env("X509_CERT_DIR", &pki.pki.ca_dir)
        .env("XrdSecPROTOCOL", "gsi")
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "stock client failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse::<f64>().ok())
            .map(Duration::from_secs_f64)
            .collect(),
    )
}

#[tokio::main]
async fn main() {
    if !stock::xrootd_available()
        || !stock::stock_python_available()
        || !stock::program_available("xrdgsiproxy", &["-h"], "xrdgsiproxy is not installed")
    {
        println!("skipped: needs the stock xrootd, xrdgsiproxy and the Python bindings");
        return;
    }
    let pki = GsiPki::new();
    let proxy = pki.xrdgsiproxy("proxy.pem", "1:00");
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"x").unwrap();
    let auth = GsiAuth::load(
        &pki.pki.host_cert,
        &pki.pki.host_key,
        &pki.pki.ca_dir,
        Some(&pki.gridmap),
        true,
    )
    .unwrap();
    let config = Config {
        authenticator: Some(Arc::new(auth)),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", LocalFs::new(data.path()).unwrap(), config)
        .await
        .unwrap();
    let ours_port = server.local_addr().port();
    tokio::spawn(server.serve());
    let lines = pki.stock_server_lines();
    let stock_server = stock::StockServer::start(
        data.path(),
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .expect("stock xrootd");
    let runs: Vec<(&str, Vec<Duration>)> = vec![
        ("ours", ours_to(ours_port, &pki, &proxy).await),
        (
            "stock",
            stock_to(stock_server.port, &pki, &proxy).expect("stock client"),
        ),
        (
            "ours->stock",
            ours_to(stock_server.port, &pki, &proxy).await,
        ),
        (
            "stock->ours",
            stock_to(ours_port, &pki, &proxy).expect("stock client"),
        ),
    ];
    println!("gsi login and one stat, a new connection each, {REPS} times (ms)");
    println!("{:<12} {:>8}  all", "pairing", "median");
    for (name, times) in &runs {
        let all: Vec<String> = times.iter().map(|t| format!("{:.1}", ms(*t))).collect();
        println!(
            "{name:<12} {:>8.2}  {}",
            ms(median(times.clone())),
            all.join(" ")
        );
        bench::summary(
            &format!("gsi_login.{name}.median_ms"),
            ms(median(times.clone())),
        );
    }
    let ratio = ms(median(runs[0].1.clone())) / ms(median(runs[1].1.clone()));
    println!("ours / stock: {ratio:.2} (target at most 1.5)");
    bench::summary("gsi_login.ours_over_stock", ratio);
}
