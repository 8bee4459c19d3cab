//! Copies over TLS, ours against the stock xrootd 5.5.3, in one run
//! (`cargo bench --bench tls_copy`; about a minute and a half).
//!
//! A throw-away CA signs a `localhost` certificate (`xroot-testkit/src/pki.rs`,
//! with `openssl`); both servers present it and both clients trust the CA
//! through `X509_CERT_DIR`, as on the grid. A 1 GiB file (byte `i` =
//! `(i * 7) % 251`, in the page cache) is exported by the stock xrootd
//! (`xrd.tls`, `xrootd.tls capable all`) and by our `serve` example
//! (`--tls-cert`, `--tls-key`, default level `capable`), each its own
//! process, from the same directory. Every copy goes to `/dev/null` over
//! `roots://` with plain `kXR_read` (`XRD_CPUSEPGWRTRD=0`); best of
//! [`RUNS`] wall times, runs interleaved after one untimed warm-up.
//!
//! - **client**: our `xrdcp` example vs the stock `xrdcp`, from the stock
//!   server; ratio = stock time / our time (target ≥ 1.0).
//! - **server**: the stock `xrdcp` from our server vs from the stock one;
//!   ratio = stock-server time / our-server time (target ≥ 1.0).
//! - **time to first byte**: connect, TLS, login, open and the first byte
//!   of a read, in a fresh client each time (no channel reuse), from the
//!   stock server: our client library in this process vs the stock Python
//!   bindings (`XRootD.client`), a new Python process each run, timed
//!   inside it; best and median of [`TTFB_RUNS`].
//!
//! Last, one `summary: KEY VALUE` line each: `tls_copy.client.stock_s`,
//! `tls_copy.client.ours_s`, `tls_copy.client.ratio`,
//! `tls_copy.server.stock_s`, `tls_copy.server.ours_s`,
//! `tls_copy.server.ratio` (seconds, and stock / ours) and
//! `tls_copy.ttfb.stock_ms`, `tls_copy.ttfb.ours_ms` (best, milliseconds).
//!
//! Prints "skipped" when the stock xrootd is not installed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xroot::client::{Client, OpenFlags};
use xroot_testkit::stock::StockServer;
use xroot_testkit::{bench, example, ours, pki, stock};

/// Size of the copied file: 1 GiB.
const SIZE: u64 = 1 << 30;
/// Timed runs of each copy; the best counts.
const RUNS: usize = 3;
/// Timed connections for the time to first byte.
const TTFB_RUNS: usize = 10;

fn main() {
    if !stock::xrootd_available() {
        println!("tls_copy: skipped (the stock xrootd is not installed)");
        return;
    }
    let pki = pki::TestPki::new();
    // both clients (the stock ones and ours) trust the test CA this way
    std::env::set_var("X509_CERT_DIR", &pki.ca_dir);
    let data = tempfile::tempdir().expect("temp dir");
    bench::write_file(&data.path().join("big.bin"), SIZE);
    let cert = pki.host_cert.to_str().unwrap();
    let key = pki.host_key.to_str().unwrap();
    let stock_key = pki::TestPki::stock_server_key(&pki.host_key);
    let ca_dir = pki.ca_dir.to_str().unwrap();
    let stock = StockServer::start(
        data.path(),
        &[
            &format!("xrd.tls {cert} {}", stock_key.display()),
            &format!("xrd.tlsca certdir {ca_dir}"),
            "xrootd.tls capable all",
        ],
    )
    .expect("stock xrootd with TLS");
    let ours = ours::ServeProcess::start_with(data.path(), &["--tls-cert", cert, "--tls-key", key]);
    let our_xrdcp = example::example_bin("xrdcp");
    let stock_url = format!("roots://localhost:{}//big.bin", stock.port);
    let our_url = format!("roots://localhost:{}//big.bin", ours.addr.port());

    let stock_tool = Path::new("xrdcp");
    let runs = [
        ("stock xrdcp <- stock server", stock_tool, &stock_url),
        (
            "our xrdcp   <- stock server",
            our_xrdcp.as_path(),
            &stock_url,
        ),
        ("stock xrdcp <- our server  ", stock_tool, &our_url),
    ];
    let mut best = [Duration::MAX; 3];
    for round in 0..=RUNS {
        for (i, (_, tool, url)) in runs.iter().enumerate() {
            let took = copy(tool, url);
            if round > 0 {
                best[i] = best[i].min(took);
            }
        }
    }
    println!("\n1 GiB over roots:// to /dev/null, plain reads, best of {RUNS}:");
    for (i, (name, _, _)) in runs.iter().enumerate() {
        let s = best[i].as_secs_f64();
        println!("  {name}  {s:6.2} s  {:7.0} MB/s", SIZE as f64 / s / 1e6);
    }
    let client_ratio = best[0].as_secs_f64() / best[1].as_secs_f64();
    let server_ratio = best[0].as_secs_f64() / best[2].as_secs_f64();
    println!("  client: our xrdcp is {client_ratio:.2}x the stock one (target >= 1.0)");
    println!("  server: our server is {server_ratio:.2}x the stock one (target >= 1.0)");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let small = format!("roots://localhost:{}//big.bin", stock.port);
    let mut ours_ms = rt.block_on(ttfb(&small));
    ours_ms.sort_by(f64::total_cmp);
    let stock_ms = stock_ttfb(&small);
    println!("\ntime to first byte over roots:// from the stock server, ms (best / median of {TTFB_RUNS}):");
    println!(
        "  ours  {:6.1} / {:6.1}",
        ours_ms[0],
        ours_ms[TTFB_RUNS / 2]
    );
    match &stock_ms {
        Some(s) => println!(
            "  stock {:6.1} / {:6.1}  (Python bindings)",
            s[0],
            s[TTFB_RUNS / 2]
        ),
        None => println!("  stock: n/a (python3-xrootd is not installed)"),
    }
    println!("\nload average at the end: {}\n", bench::load_average());
    bench::summary("tls_copy.client.stock_s", best[0].as_secs_f64());
    bench::summary("tls_copy.client.ours_s", best[1].as_secs_f64());
    bench::summary("tls_copy.client.ratio", client_ratio);
    bench::summary("tls_copy.server.stock_s", best[0].as_secs_f64());
    bench::summary("tls_copy.server.ours_s", best[2].as_secs_f64());
    bench::summary("tls_copy.server.ratio", server_ratio);
    bench::summary("tls_copy.ttfb.ours_ms", ours_ms[0]);
    if let Some(s) = stock_ms {
        bench::summary("tls_copy.ttfb.stock_ms", s[0]);
    }
}

/// Wall time of one copy of `url` to /dev/null by `tool`. Panics if it fails.
fn copy(tool: &Path, url: &str) -> Duration {
    let t = Instant::now();
    // the stock xrdcp needs -f for /dev/null; --nopbar is its alone
    let stock = tool == Path::new("xrdcp");
    let out = Command::new(tool)
        .arg("-f")
        .args(stock.then_some("--nopbar"))
        .args([url, "/dev/null"])
        .env("XRD_CPUSEPGWRTRD", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()));
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "{} {url}: {:?}\n{}",
        tool.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// Our client: a fresh [`Client`] per run, open and read one byte; ms.
async fn ttfb(url: &str) -> Vec<f64> {
    let mut times = Vec::new();
    for _ in 0..TTFB_RUNS {
        let t = Instant::now();
        let client = Client::new();
        let f = client.open(url, OpenFlags::READ).await.expect("open");
        let byte = f.read_at(0, 1).await.expect("read");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(byte.len(), 1);
        f.close().await.expect("close");
    }
    times
}

/// The stock Python bindings, as [`ttfb`], sorted; `None` without them.
/// Each run is a new Python process (timed inside, after the import):
/// XrdCl keeps a channel open for its process's later files.
fn stock_ttfb(url: &str) -> Option<Vec<f64>> {
    const SCRIPT: &str = r#"
import sys, time
from XRootD import client
t = time.perf_counter()
f = client.File()
st, _ = f.open(sys.argv[1])
assert st.ok, st.message
st, data = f.read(0, 1)
assert st.ok and len(data) == 1, st.message
print((time.perf_counter() - t) * 1e3)
f.close()
"#;
    let mut times = Vec::new();
    for _ in 0..TTFB_RUNS {
        let out = Command::new("/usr/bin/python3")
            .args(["-c", SCRIPT, url])
            .stdin(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!("stock ttfb: {}", String::from_utf8_lossy(&out.stderr));
            return None;
        }
        times.push(String::from_utf8_lossy(&out.stdout).trim().parse().ok()?);
    }
    times.sort_by(f64::total_cmp);
    Some(times)
}
