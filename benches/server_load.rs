//! Many sessions on one server, ours against the stock xrootd 5.5.3, in
//! one run (`cargo bench --bench server_load`; about a minute and a half).
//!
//! A 1 GiB file (in the page cache) is exported by the stock xrootd and by
//! our `serve` example, each a fresh process of its own. The
//! `xrdload` example then runs against each, the same way:
//!
//! - **busy**: [`SESSIONS`] sessions, each its own connection, keeping
//!   [`DEPTH`] reads of 64 KiB outstanding at random offsets for
//!   [`SECONDS`] s: throughput, the server's CPU per GB served, its peak
//!   RSS, threads and descriptors, latency p50 / p99 and errors, and
//!   what else shares the cores: `xrdload`'s own CPU per GB ("load
//!   s/GB") and the machine's idle share of the window;
//! - **idle**: [`IDLE_SESSIONS`] sessions logged in with the file open,
//!   on a fresh server: its RSS per session.
//!
//! The load generator runs on the same two cores as the server, so the
//! throughput is what both leave each other; it is the same for both
//! servers. It runs its `--raw` engine: through the client library it
//! took 1.1-1.4 s of CPU per GB read, more than either server (0.3-0.6),
//! and so set the throughput of both; raw, 0.17-0.29 s (issue 31).
//!
//! Last, one `summary: server_load.SERVER.KEY VALUE` line each, SERVER
//! `stock` or `ours`, KEY `mb_s`, `cpu_s_per_gb`, `load_cpu_s_per_gb`,
//! `idle` (a fraction), `peak_rss_mib`,
//! `threads`, `fds`, `p50_ms`, `p99_ms`, `errors`, `idle_kb_per_session`.
//!
//! Prints "skipped" when the stock xrootd is not installed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use xroot_testkit::stock::StockServer;
use xroot_testkit::{bench, example, ours, stock};

/// Size of the file read: 1 GiB.
const SIZE: u64 = 1 << 30;
/// Sessions of the busy run.
const SESSIONS: usize = 1000;
/// Reads each busy session keeps outstanding.
const DEPTH: usize = 8;
/// Seconds of the busy run.
const SECONDS: u32 = 20;
/// Sessions of the idle run.
const IDLE_SESSIONS: usize = 3000;

fn main() {
    if !stock::xrootd_available() {
        println!("server_load: skipped (the stock xrootd is not installed)");
        return;
    }
    let data = tempfile::tempdir().expect("temp dir");
    bench::write_file(&data.path().join("big.bin"), SIZE);
    let xrdload = example::example_bin("xrdload");
    let mut rows = Vec::new();
    for name in ["stock", "ours"] {
        let busy = with_server(name, data.path(), |addr, pid| {
            load(&xrdload, addr, pid, SESSIONS, DEPTH, SECONDS)
        });
        let idle = with_server(name, data.path(), |addr, pid| {
            load(&xrdload, addr, pid, IDLE_SESSIONS, 0, 2)
        });
        rows.push((name, busy, idle));
    }
    println!(
        "\n{SESSIONS} sessions x {DEPTH} reads of 64 KiB outstanding, {SECONDS} s, 1 GiB file in the page cache:"
    );
    println!(
        "  {:6} {:>8} {:>11} {:>11} {:>6} {:>13} {:>8} {:>6} {:>8} {:>8} {:>7} {:>13}",
        "",
        "MB/s",
        "CPU s/GB",
        "load s/GB",
        "idle",
        "peak RSS MiB",
        "threads",
        "fds",
        "p50 ms",
        "p99 ms",
        "errors",
        "idle kB/sess"
    );
    for (name, busy, idle) in &rows {
        let f = |k: &str| busy.get(k).copied().unwrap_or(f64::NAN);
        let idle_kb = idle
            .get("server_kb_per_session")
            .copied()
            .unwrap_or(f64::NAN);
        println!(
            "  {name:6} {:8.0} {:11.2} {:11.2} {:5.0}% {:13.1} {:8.0} {:6.0} {:8.1} {:8.1} {:7.0} {:13.1}",
            f("mb_s"),
            f("server_cpu_s_per_gb"),
            f("client_cpu_s_per_gb"),
            f("machine_idle") * 100.0,
            f("server_peak_rss_mib"),
            f("server_threads"),
            f("server_fds"),
            f("p50_ms"),
            f("p99_ms"),
            f("errors"),
            idle_kb
        );
    }
    println!("\nload average at the end: {}\n", bench::load_average());
    for (name, busy, idle) in &rows {
        for (key, field) in [
            ("mb_s", "mb_s"),
            ("cpu_s_per_gb", "server_cpu_s_per_gb"),
            ("load_cpu_s_per_gb", "client_cpu_s_per_gb"),
            ("idle", "machine_idle"),
            ("peak_rss_mib", "server_peak_rss_mib"),
            ("threads", "server_threads"),
            ("fds", "server_fds"),
            ("p50_ms", "p50_ms"),
            ("p99_ms", "p99_ms"),
            ("errors", "errors"),
        ] {
            if let Some(v) = busy.get(field) {
                bench::summary(&format!("server_load.{name}.{key}"), *v);
            }
        }
        if let Some(v) = idle.get("server_kb_per_session") {
            bench::summary(&format!("server_load.{name}.idle_kb_per_session"), *v);
        }
    }
}

/// Runs `f` with a fresh server `name` (`stock` or `ours`) exporting
/// `dir`: its address and process id.
fn with_server<T>(name: &str, dir: &Path, f: impl FnOnce(SocketAddr, u32) -> T) -> T {
    if name == "stock" {
        let s = StockServer::start(dir, &[]).expect("stock xrootd");
        let pid = s.server_pid().expect("stock xrootd pid");
        f(SocketAddr::from(([127, 0, 0, 1], s.port)), pid)
    } else {
        let s = ours::ServeProcess::start_with(dir, &[]);
        f(s.addr, s.pid())
    }
}

/// `xrdload` against `addr`, the server being `pid`: its `summary: load.*`
/// figures by key.
fn load(
    xrdload: &Path,
    addr: SocketAddr,
    pid: u32,
    sessions: usize,
    depth: usize,
    seconds: u32,
) -> HashMap<String, f64> {
    let out = Command::new(xrdload)
        .arg("--raw")
        .args(["--sessions", &sessions.to_string()])
        .args(["--depth", &depth.to_string()])
        .args(["--duration", &seconds.to_string()])
        .args(["--server-pid", &pid.to_string()])
        .arg(format!("root://{addr}//big.bin"))
        .output()
        .expect("run xrdload");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "xrdload: {:?}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.strip_prefix("summary: load."))
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}
