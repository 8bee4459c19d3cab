//! gsi login time, ours against the stock xrootd 5.5.3: a fresh
//! connection that logs in with an X509 proxy (from the stock
//! `xrdgsiproxy`, throw-away CA made by `openssl`) and does one `kXR_stat`,
//! [`REPS`] times in a row per pairing, the median and every time printed:
//!
//! - `ours`: our client to our server (`GsiAuth`);
//! - `stock`: the stock client (the Python bindings, one process, a new
//!   URL user each time so that XrdCl opens a new channel) to the stock
//!   server (`sec.protocol gsi`, the recipe of tests/gsi_stock.rs);
//! - `ours->stock` and `stock->ours`: the mixed pairings, for what each
//!   side costs.
//!
//! One run: `cargo bench --bench gsi_login` (under a minute once built).
//! Figures for `benches/report.sh`: `gsi_login.RUN.median_ms` and
//! `gsi_login.ours_over_stock` (target: at most 1.5).
//!
//! Prints "skipped" when the stock xrootd or its Python bindings are not
//! installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use xroot::client::{Client, Config as ClientConfig};
use xroot::sec::gsi::Credentials;
use xroot::server::{Config, GsiAuth, LocalFs, Server};
use xroot_testkit::{bench, stock};

/// Logins timed per pairing.
const REPS: usize = 20;

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh").arg("-c").arg(script).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
}

/// CA, host certificate, user certificate, proxy, gridmap; the server's
/// files in `srv/`, handed to the user the stock server runs as.
fn pki(dir: &Path) {
    sh(dir, "set -e; mkdir certs srv; \
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj '/C=CH/O=xroot-test/CN=Test CA' -addext basicConstraints=critical,CA:TRUE 2>/dev/null; \
        cp ca.pem certs/; openssl rehash certs; \
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > host.ext; \
        printf 'basicConstraints=CA:FALSE\\n' > user.ext; \
        openssl req -newkey rsa:2048 -nodes -keyout host.key -out host.csr -subj '/C=CH/O=xroot-test/CN=localhost' 2>/dev/null; \
        openssl x509 -req -in host.csr -CA ca.pem -CAkey ca.key -set_serial 2 -out host.pem -days 30 -extfile host.ext 2>/dev/null; \
        openssl req -newkey rsa:2048 -nodes -keyout user.key -out user.csr -subj '/C=CH/O=xroot-test/CN=Alice User' 2>/dev/null; \
        openssl x509 -req -in user.csr -CA ca.pem -CAkey ca.key -set_serial 3 -out user.pem -days 30 -extfile user.ext 2>/dev/null; \
        chmod 400 user.key; \
        xrdgsiproxy init -cert user.pem -key user.key -certdir certs -out proxy.pem -valid 1:00 >/dev/null 2>&1; \
        printf '\"/C=CH/O=xroot-test/CN=Alice User\" alice\\n' > gridmap; \
        cp -r certs host.pem host.key gridmap srv/; chmod a+rx . srv srv/certs; chmod a+r srv/certs/* srv/host.pem srv/gridmap; chmod 400 srv/host.key; \
        if [ $(id -u) = 0 ]; then if id xrootd >/dev/null 2>&1; then chown -R xrootd srv; else chown -R nobody srv; fi; fi");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Our client: a new client (so a new connection) per login, then a stat.
async fn ours_to(port: u16, dir: &Path) -> Vec<Duration> {
    let creds = Arc::new(Credentials::load_proxy(&dir.join("proxy.pem")).unwrap());
    let mut times = Vec::new();
    for _ in 0..REPS {
        let client = Client::with_config(ClientConfig {
            x509_credentials: Some(creds.clone()),
            x509_cert_dir: Some(dir.join("certs")),
            sec_protocols: Some(vec!["gsi".into()]),
            ..ClientConfig::default()
        });
        let start = Instant::now();
        client.fs(&format!("root://localhost:{port}")).unwrap().stat("/").await.unwrap();
        times.push(start.elapsed());
    }
    times
}

/// The stock client (Python bindings): a new URL user per login.
fn stock_to(port: u16, dir: &Path) -> Option<Vec<Duration>> {
    let script = format!(
        "import time\nfrom XRootD import client\nfor i in range({REPS}):\n    t = time.perf_counter()\n    st, _ = client.FileSystem('root://u%d@localhost:{port}' % i).stat('/')\n    assert st.ok, st\n    print(time.perf_counter() - t)\n"
    );
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .env("X509_USER_PROXY", dir.join("proxy.pem"))
        .env("X509_CERT_DIR", dir.join("certs"))
        .env("XrdSecPROTOCOL", "gsi")
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("stock client failed: {}", String::from_utf8_lossy(&out.stderr));
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
    if !stock::xrootd_available() || !stock::stock_python_available() {
        println!("skipped: needs the stock xrootd and its Python bindings");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().to_path_buf();
    pki(&dir);
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("f"), b"x").unwrap();
    let auth = GsiAuth::load(
        &dir.join("host.pem"),
        &dir.join("host.key"),
        &dir.join("certs"),
        Some(&dir.join("gridmap")),
        true,
    )
    .unwrap();
    let config = Config {
        authenticator: Some(Arc::new(auth)),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", LocalFs::new(data.path()).unwrap(), config).await.unwrap();
    let ours_port = server.local_addr().port();
    tokio::spawn(server.serve());
    let srv: PathBuf = dir.join("srv");
    let line = format!(
        "sec.protocol gsi -certdir:{0}/certs -cert:{0}/host.pem -key:{0}/host.key -gridmap:{0}/gridmap -gmapopt:2 -crl:0 -dlgpxy:0",
        srv.display()
    );
    let stock_server = stock::StockServer::start(data.path(), &["xrootd.seclib libXrdSec.so", &line, "sec.protbind * only gsi"])
        .expect("stock xrootd");
    let runs: Vec<(&str, Vec<Duration>)> = vec![
        ("ours", ours_to(ours_port, &dir).await),
        ("stock", stock_to(stock_server.port, &dir).expect("stock client")),
        ("ours->stock", ours_to(stock_server.port, &dir).await),
        ("stock->ours", stock_to(ours_port, &dir).expect("stock client")),
    ];
    println!("gsi login and one stat, a new connection each, {REPS} times (ms)");
    println!("{:<12} {:>8}  all", "pairing", "median");
    for (name, times) in &runs {
        let all: Vec<String> = times.iter().map(|t| format!("{:.1}", ms(*t))).collect();
        println!("{name:<12} {:>8.2}  {}", ms(median(times.clone())), all.join(" "));
        bench::summary(&format!("gsi_login.{name}.median_ms"), ms(median(times.clone())));
    }
    let ratio = ms(median(runs[0].1.clone())) / ms(median(runs[1].1.clone()));
    println!("ours / stock: {ratio:.2} (target at most 1.5)");
    bench::summary("gsi_login.ours_over_stock", ratio);
}
